#if defined(__linux__)
#define _GNU_SOURCE /* syscall() */
#endif
#include "core/cpu_features.h"

#include <pthread.h>
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static hrmt_cpu_features g_features; /* written once under pthread_once, then read-only */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
typedef struct cpuid_regs {
    unsigned eax, ebx, ecx, edx;
} cpuid_regs;

static cpuid_regs cpuid(unsigned leaf, unsigned sub) {
    cpuid_regs r;
    __asm__ volatile("cpuid"
                     : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
                     : "a"(leaf), "c"(sub));
    return r;
}

/* XCR0 through xgetbv in asm: the intrinsic needs -mxsave, and this file is
 * built without ISA flags. Only called when CPUID.1:ECX.OSXSAVE is set. */
static unsigned long long xcr0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* AMX needs, besides cpuid, the OS: XCR0 bits 17 (XTILECFG) and 18
 * (XTILEDATA), and Linux >= 5.16 hands the 8 KiB tile state to a process only
 * on request (otherwise the first tile instruction is SIGILL). */
static int amx_bf16_usable(void) {
    if (cpuid(0, 0).eax < 7) return 0;
    if (!(cpuid(1, 0).ecx & (1u << 27))) return 0; /* OSXSAVE */
    const unsigned edx7 = cpuid(7, 0).edx;
    const unsigned tile = (edx7 >> 24) & 1u, bf16 = (edx7 >> 22) & 1u;
    if (!tile || !bf16) return 0;
    const unsigned long long tile_state = (1ull << 17) | (1ull << 18);
    if ((xcr0() & tile_state) != tile_state) return 0;
#if defined(__linux__)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return 0;
    return 1;
#else
    return 0; /* no known way to ask this OS for the tile state */
#endif
}
#endif

static void detect(void) {
#if defined(__x86_64__) || defined(__i386__)
    /* libgcc/compiler-rt check both cpuid and XCR0 (OS state saving). */
    __builtin_cpu_init();
    g_features.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    g_features.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    g_features.avx512_bf16 = g_features.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
#if defined(__x86_64__)
    g_features.amx_bf16 = g_features.avx512_bf16 && amx_bf16_usable();
#elif defined(__aarch64__)
    g_features.neon = 1; /* Advanced SIMD is mandatory on AArch64 */
#endif
}

const hrmt_cpu_features *hrmt_cpu_features_get(void) {
    pthread_once(&g_once, detect);
    return &g_features;
}
