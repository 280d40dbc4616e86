/* GEMM micro-kernel, AVX-512 table: 14 x 32 F32 register tile (28 zmm
 * accumulators, 2 for the W row, one broadcast of A). The BF16 pair kernel
 * lives in gemm_bf16_avx512.c and is added when the CPU has AVX512_BF16. */
#include <immintrin.h>

#include "core/backend.h"
#include "core/cpu_features.h"
#include "cpu/gemm_avx512_common.h"

#define MR 14
#define NR 32

/* Per k: two aligned loads of the W row, 14 broadcasts of A, 28 FMAs. Only
 * the first R rows are computed (R < MR on the last sliver of an M that is
 * not a multiple of 14, e.g. a sample's 82 tokens): the same chains, fewer. */
static inline __attribute__((always_inline)) void ukr_rows(size_t kc, const float *a,
                                                           const float *b,
                                                           const hrmt_gemm_ukr_out *o,
                                                           const int R) {
    __m512 c0[MR], c1[MR];
    if (o->load) {
        const float *p = o->partial;
#pragma GCC unroll 14
        for (int i = 0; i < R; i++) {
            c0[i] = _mm512_loadu_ps(p + (size_t)i * o->ld_partial);
            c1[i] = _mm512_loadu_ps(p + (size_t)i * o->ld_partial + 16);
        }
    } else {
#pragma GCC unroll 14
        for (int i = 0; i < R; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    }
    for (size_t k = 0; k < kc; k++) {
        /* The A sliver streams from L2: fetch ~8 k ahead (56 bytes per k). */
        _mm_prefetch((const char *)(a + (size_t)8 * MR), _MM_HINT_T0);
        const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 14
        for (int i = 0; i < R; i++) {
            const __m512 ai = _mm512_set1_ps(a[i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
        a += MR;
        b += NR;
    }
    hrmt_gemm_finish14x32__avx512(c0, c1, R, o);
}

static void f32_gemm_ukr__avx512_14x32(size_t kc, const void *a, const void *b,
                                       const hrmt_gemm_ukr_out *o) {
#define ROWS(n) ukr_rows(kc, a, b, o, n)
    HRMT_AVX512_BY_ROWS14(o->m, ROWS);
#undef ROWS
}

/* Rows of F32 A are 32-bit words already; BF16 A is widened to F32. */
static void f32_gemm_pack_a__avx512_14(size_t m, size_t kc, const void *a, hrmt_dtype a_dt,
                                       size_t lda, void *dst) {
    if (a_dt == HRMT_F32) {
        const float *af = a;
#define LOAD_F32_ROW(i, k0, nk)                \
    _mm512_castps_si512(_mm512_maskz_loadu_ps( \
        (__mmask16)((nk) >= 16 ? 0xffffu : (1u << (nk)) - 1u), af + (i)*lda + (k0)))
#define F32_ROW_AT(i, k) (af + (i)*lda + (k))
        HRMT_GEMM_PACK_WORDS16(MR, m, kc, dst, LOAD_F32_ROW, F32_ROW_AT);
#undef F32_ROW_AT
#undef LOAD_F32_ROW
    } else {
        const uint16_t *ah = a;
#define LOAD_BF16_ROW(i, k0, nk)                                  \
    _mm512_castps_si512(hrmt_widen_bf16(_mm256_maskz_loadu_epi16( \
        (__mmask16)((nk) >= 16 ? 0xffffu : (1u << (nk)) - 1u), ah + (i)*lda + (k0))))
#define BF16_ROW_AT(i, k) (ah + (i)*lda + (k))
        HRMT_GEMM_PACK_WORDS16(MR, m, kc, dst, LOAD_BF16_ROW, BF16_ROW_AT);
#undef BF16_ROW_AT
#undef LOAD_BF16_ROW
    }
}

#if defined(HRMT_HAVE_AVX512)
void hrmt_gemm_fill_bf16_avx512(hrmt_gemm_kernels *t);
#endif

void hrmt_gemm_fill_avx512(hrmt_gemm_kernels *t) {
    *t = (hrmt_gemm_kernels){
        .mr = MR,
        .nr = NR,
        .f32 = {"f32_gemm__avx512_14x32", MR, NR, 1, f32_gemm_ukr__avx512_14x32,
                f32_gemm_pack_a__avx512_14},
        .bf16 = {"none", MR, NR, 2, NULL, NULL},
    };
    if (hrmt_cpu_features_get()->avx512_bf16) hrmt_gemm_fill_bf16_avx512(t);
}
