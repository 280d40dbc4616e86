/* GEMM micro-kernel for BF16 A and W, AVX512_BF16: 14 x 32 tile, K in pairs.
 * vdpbf16ps adds two exact bf16 products to each F32 accumulator, one after
 * the other, high halves first, each add rounded to nearest even. A and W
 * pairs are packed with their halves swapped (odd k low), so the adds come in
 * increasing k: the scalar table's chain, bit for bit, except that vdpbf16ps
 * treats denormal inputs and results as zero. Only installed by
 * hrmt_gemm_fill_avx512 when cpuid reports AVX512_BF16. */
#include <immintrin.h>

#include "core/backend.h"
#include "cpu/gemm_avx512_common.h"

#define MR 14
#define NR 32

/* a: per k pair, 14 32-bit words (A[i][2p+1] low, A[i][2p] high); b: per k
 * pair, 32 columns x 2 bf16 (W[j][2p+1], W[j][2p]) in two zmm. kc is even. */
static void bf16_gemm_ukr__avx512bf16_14x32(size_t kc, const void *a_, const void *b_,
                                            const hrmt_gemm_ukr_out *o) {
    const uint32_t *a = a_;
    const uint16_t *b = b_;
    __m512 c0[MR], c1[MR];
    if (o->load) {
        const float *p = o->partial;
#pragma GCC unroll 14
        for (int i = 0; i < MR; i++) {
            c0[i] = _mm512_loadu_ps(p + (size_t)i * o->ld_partial);
            c1[i] = _mm512_loadu_ps(p + (size_t)i * o->ld_partial + 16);
        }
    } else {
#pragma GCC unroll 14
        for (int i = 0; i < MR; i++) c0[i] = c1[i] = _mm512_setzero_ps();
    }
    for (size_t p = 0; p < kc / 2; p++) {
        /* The A sliver streams from L2: fetch ~8 pairs ahead (56 bytes each). */
        _mm_prefetch((const char *)(a + 8 * MR), _MM_HINT_T0);
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b),
                       b1 = (__m512bh)_mm512_loadu_si512(b + 32);
#pragma GCC unroll 14
        for (int i = 0; i < MR; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);
            c0[i] = _mm512_dpbf16_ps(c0[i], ai, b0);
            c1[i] = _mm512_dpbf16_ps(c1[i], ai, b1);
        }
        a += MR;
        b += 2 * NR;
    }
    if (o->final && o->n == NR) {
        /* Whole rows: finish straight from the registers. */
        const size_t esz = o->c_dt == HRMT_F32 ? 4 : 2;
#pragma GCC unroll 14
        for (int i = 0; i < MR; i++)
            if ((size_t)i < o->m)
                hrmt_gemm_store_row32__avx512(c0[i], c1[i],
                                              (char *)o->c + (size_t)i * o->ldc * esz, o->c_dt,
                                              o->accumulate);
        return;
    }
    float tile[MR * NR];
    float *dst = o->final ? tile : o->partial;
    const size_t ld = o->final ? NR : o->ld_partial;
#pragma GCC unroll 14
    for (int i = 0; i < MR; i++) {
        _mm512_storeu_ps(dst + (size_t)i * ld, c0[i]);
        _mm512_storeu_ps(dst + (size_t)i * ld + 16, c1[i]);
    }
    if (o->final) hrmt_gemm_store_tile32__avx512(tile, o);
}

/* BF16 A rows as 32-bit words (k pairs), halves swapped (odd k low); an odd
 * kc leaves the last word's low half zero (the masked 16-bit load stops at
 * kc). */
static void bf16_gemm_pack_a__avx512_14(size_t m, size_t kc, const void *a, hrmt_dtype a_dt,
                                        size_t lda, void *dst) {
    (void)a_dt; /* always BF16 for this kernel */
    const uint16_t *ah = a;
    const size_t kw = (kc + 1) / 2;
#define LOAD_PAIR_ROW(i, k0, nk)                                                             \
    _mm512_rol_epi32(                                                                        \
        _mm512_maskz_loadu_epi16(                                                            \
            (__mmask32)(kc - 2 * (k0) >= 32 ? 0xffffffffu : (1u << (kc - 2 * (k0))) - 1u), \
            ah + (i) * lda + 2 * (k0)),                                                      \
        16)
#define PAIR_ROW_AT(i, k) (ah + (i) * lda + 2 * (k))
    HRMT_GEMM_PACK_WORDS16(MR, m, kw, dst, LOAD_PAIR_ROW, PAIR_ROW_AT);
#undef PAIR_ROW_AT
#undef LOAD_PAIR_ROW
}

void hrmt_gemm_fill_bf16_avx512(hrmt_gemm_ukernel *u);
void hrmt_gemm_fill_bf16_avx512(hrmt_gemm_ukernel *u) {
    *u = (hrmt_gemm_ukernel){"bf16_gemm__avx512bf16_14x32", MR, NR, 2,
                             bf16_gemm_ukr__avx512bf16_14x32, bf16_gemm_pack_a__avx512_14};
}
