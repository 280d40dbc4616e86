/* Chooses and builds the CPU kernel tables, once per process. */
#include <pthread.h>
#include <string.h>

#include "core/backend.h"
#include "core/cpu_features.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

static hrmt_backend g_tables[HRMT_ISA_COUNT]; /* filled once, read-only afterwards */
static int g_table_ok[HRMT_ISA_COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    const hrmt_cpu_features *f = hrmt_cpu_features_get();
    hrmt_backend *b;

    b = &g_tables[HRMT_ISA_SCALAR];
    b->name = "cpu-scalar";
    b->kind = HRMT_BACKEND_CPU;
    b->isa = HRMT_ISA_SCALAR;
    hrmt_rowops_fill_scalar(&b->rowops);
    hrmt_gemm_fill_scalar(&b->gemm);
    g_table_ok[HRMT_ISA_SCALAR] = 1;
#if defined(HRMT_HAVE_AVX2)
    if (f->avx2_fma) {
        b = &g_tables[HRMT_ISA_AVX2];
        b->name = "cpu-avx2";
        b->kind = HRMT_BACKEND_CPU;
        b->isa = HRMT_ISA_AVX2;
        hrmt_rowops_fill_avx2(&b->rowops);
        hrmt_gemm_fill_avx2(&b->gemm);
        g_table_ok[HRMT_ISA_AVX2] = 1;
    }
#endif
#if defined(HRMT_HAVE_AVX512)
    if (f->avx512 && f->avx2_fma) {
        b = &g_tables[HRMT_ISA_AVX512];
        b->name = "cpu-avx512";
        b->kind = HRMT_BACKEND_CPU;
        b->isa = HRMT_ISA_AVX512;
        hrmt_rowops_fill_avx512(&b->rowops);
        hrmt_gemm_fill_avx512(&b->gemm);
        g_table_ok[HRMT_ISA_AVX512] = 1;
    }
#endif
#if defined(HRMT_HAVE_AMX)
    /* amx: the avx512 table plus the AMX tile kernel for BF16 x BF16 GEMM
     * and the model's BF16 attention. */
    if (f->amx_bf16 && f->avx512_bf16 && f->avx512 && f->avx2_fma) {
        b = &g_tables[HRMT_ISA_AMX];
        b->name = "cpu-amx";
        b->kind = HRMT_BACKEND_CPU;
        b->isa = HRMT_ISA_AMX;
        hrmt_rowops_fill_avx512(&b->rowops);
        hrmt_gemm_fill_avx512(&b->gemm);
        hrmt_gemm_fill_amx(&b->gemm);
        hrmt_attention_fill_amx(&b->gemm);
        g_table_ok[HRMT_ISA_AMX] = 1;
    }
#endif
#if defined(HRMT_HAVE_NEON)
    if (f->neon) {
        b = &g_tables[HRMT_ISA_NEON];
        b->name = "cpu-neon";
        b->kind = HRMT_BACKEND_CPU;
        b->isa = HRMT_ISA_NEON;
        hrmt_rowops_fill_neon(&b->rowops);
        hrmt_gemm_fill_neon(&b->gemm);
        g_table_ok[HRMT_ISA_NEON] = 1;
    }
#endif
    (void)f;
}

const hrmt_backend *hrmt_backend_cpu(hrmt_isa isa) {
    if ((unsigned)isa >= HRMT_ISA_COUNT) return NULL;
    pthread_once(&g_once, build_tables);
    return g_table_ok[isa] ? &g_tables[isa] : NULL;
}

#if defined(HRMT_HAVE_CUDA)
static hrmt_backend g_cuda_table; /* filled once, read-only afterwards */
static pthread_once_t g_cuda_once = PTHREAD_ONCE_INIT;

static void build_cuda_table(void) {
    g_cuda_table.name = "cuda";
    g_cuda_table.kind = HRMT_BACKEND_CUDA;
    g_cuda_table.isa = HRMT_ISA_SCALAR; /* no CPU ISA; the context keeps its own */
    hrmt_rowops_fill_cuda(&g_cuda_table.rowops);
    /* gemm stays zeroed: CUDA GEMM is hrmt_cuda_gemm (cuBLASLt), not micro-kernels */
}

const hrmt_backend *hrmt_backend_cuda(void) {
    pthread_once(&g_cuda_once, build_cuda_table);
    return &g_cuda_table;
}
#else
const hrmt_backend *hrmt_backend_cuda(void) { return NULL; }
#endif

unsigned hrmt_isas_available(void) {
    unsigned mask = 0;
    for (int i = 0; i < HRMT_ISA_COUNT; i++)
        if (hrmt_backend_cpu((hrmt_isa)i)) mask |= 1u << i;
    return mask;
}

hrmt_isa hrmt_backend_best_isa(void) {
    static const hrmt_isa order[] = {HRMT_ISA_AMX, HRMT_ISA_AVX512, HRMT_ISA_AVX2, HRMT_ISA_NEON};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (hrmt_backend_cpu(order[i])) return order[i];
    return HRMT_ISA_SCALAR;
}

int hrmt_backend_supports(const hrmt_backend *be, hrmt_op op, hrmt_dtype dtype) {
    if (!be || (unsigned)op >= HRMT_OP_COUNT || (unsigned)dtype >= HRMT_DTYPE_COUNT) return 0;
    if (op == HRMT_OP_GEMM) {
        /* CUDA: cuBLASLt serves F32 and BF16 (explicit, not via micro-kernels) */
        if (be->kind == HRMT_BACKEND_CUDA) return dtype == HRMT_F32 || dtype == HRMT_BF16;
        return hrmt_gemm_supports(&be->gemm, op, dtype);
    }
    return hrmt_rowops_supports(&be->rowops, op, dtype);
}

static const char *const g_isa_names[HRMT_ISA_COUNT] = {"scalar", "avx2", "avx512", "neon", "amx"};

const char *hrmt_isa_name(hrmt_isa isa) {
    return (unsigned)isa < HRMT_ISA_COUNT ? g_isa_names[isa] : "?";
}

hrmt_status hrmt_isa_parse(const char *name, hrmt_isa *out) {
    if (!name || !out) return HRMT_ERR_INVALID_ARG;
    for (int i = 0; i < HRMT_ISA_COUNT; i++) {
        if (strcmp(name, g_isa_names[i]) == 0) {
            *out = (hrmt_isa)i;
            return HRMT_OK;
        }
    }
    return HRMT_ERR_ISA;
}
