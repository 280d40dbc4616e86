#include "core/cpu_features.h"

#include <pthread.h>

static hrmt_cpu_features g_features; /* written once under pthread_once, then read-only */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void detect(void) {
#if defined(__x86_64__) || defined(__i386__)
    /* libgcc/compiler-rt check both cpuid and XCR0 (OS state saving). */
    __builtin_cpu_init();
    g_features.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    g_features.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    g_features.avx512_bf16 = g_features.avx512 && __builtin_cpu_supports("avx512bf16");
#elif defined(__aarch64__)
    g_features.neon = 1; /* Advanced SIMD is mandatory on AArch64 */
#endif
}

const hrmt_cpu_features *hrmt_cpu_features_get(void) {
    pthread_once(&g_once, detect);
    return &g_features;
}
