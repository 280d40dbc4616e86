/* GEMM micro-kernel, AVX2 + FMA table: 6 x 16 F32 register tile (12 ymm
 * accumulators, 2 for the W row, 1 broadcast). BF16 operands are widened to
 * F32 while packing. */
#include <immintrin.h>

#include "core/backend.h"
#include "cpu/gemm_common.h"

#define MR 6
#define NR 16

static void f32_gemm_ukr__avx2_6x16(size_t kc, const void *a_, const void *b_,
                                    const hrmt_gemm_ukr_out *o) {
    const float *a = a_, *b = b_;
    __m256 c0[MR], c1[MR];
    if (o->load) {
        const float *p = o->partial;
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            c0[i] = _mm256_loadu_ps(p + (size_t)i * o->ld_partial);
            c1[i] = _mm256_loadu_ps(p + (size_t)i * o->ld_partial + 8);
        }
    } else {
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm256_setzero_ps();
    }
    for (size_t k = 0; k < kc; k++) {
        _mm_prefetch((const char *)(a + (size_t)16 * MR), _MM_HINT_T0); /* A streams from L2 */
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            const __m256 ai = _mm256_broadcast_ss(a + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
        a += MR;
        b += NR;
    }
    float *dst = o->partial;
    size_t ld = o->ld_partial;
    float tile[MR * NR];
    int direct = o->final && o->c_dt == HRMT_F32 && !o->accumulate && o->m == MR && o->n == NR;
    if (o->final && !direct) {
        dst = tile;
        ld = NR;
    } else if (direct) {
        dst = o->c;
        ld = o->ldc;
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        _mm256_storeu_ps(dst + (size_t)i * ld, c0[i]);
        _mm256_storeu_ps(dst + (size_t)i * ld + 8, c1[i]);
    }
    if (o->final && !direct) hrmt_gemm_store_tile_generic(tile, NR, o);
}

static void f32_gemm_pack_a__avx2_6(size_t m, size_t kc, const void *a, hrmt_dtype a_dt, size_t lda,
                                    void *dst) {
    hrmt_gemm_pack_a_f32_generic(MR, m, kc, a, a_dt, lda, dst);
}

void hrmt_gemm_fill_avx2(hrmt_gemm_kernels *t) {
    *t = (hrmt_gemm_kernels){
        .mr = MR,
        .nr = NR,
        .f32 = {"f32_gemm__avx2_6x16", MR, NR, 1, f32_gemm_ukr__avx2_6x16, f32_gemm_pack_a__avx2_6},
        .bf16 = {"none", MR, NR, 2, NULL, NULL},
    };
}
