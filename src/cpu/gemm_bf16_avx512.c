/* GEMM micro-kernel for BF16 A and W, AVX512_BF16: 14 x 32 tile, K in pairs.
 * vdpbf16ps adds the two exact bf16 products of a 32-bit pair to the F32
 * accumulator one after the other, the high halves' product first, each add
 * rounded to nearest even (Intel's definition; measured so on Zen 4 and on a
 * Sapphire Rapids Xeon), and treats denormal inputs and results as zero.
 *
 * Two A packings share the kernel. pack_a keeps each pair in memory order
 * (k = 2p low, 2p+1 high), for W panels packed the same way (the driver's
 * BF16X2 format, core/gemm_pack.c): a pair adds 2p+1, then 2p, the order the
 * F32 tables follow for BF16 W (core/gemm_kernels.h): the same bits for
 * normal numbers. The table's bf16_pack_a_ordered swaps the halves, for
 * callers whose W panels are swapped too (the model's attention): a pair then
 * adds 2p, then 2p+1, the F32 kernels' increasing order. Only installed by
 * hrmt_gemm_fill_avx512 when cpuid reports AVX512_BF16. */
#include <immintrin.h>

#include "core/backend.h"
#include "cpu/gemm_avx512_common.h"

#define MR 14
#define NR 32

/* a: per k pair, 14 32-bit words of A[i][2p], A[i][2p+1] (in either half
 * order, see above); b: per k pair, 32 columns x 2 bf16 of W[j][2p], W[j][2p+1]
 * in the same half order, in two zmm. kc is even. Only the first R rows of
 * the tile are computed (R = MR but on the last sliver of an M that is not a
 * multiple of 14, e.g. 82 = 5 * 14 + 12 tokens a sample): the same chains,
 * fewer of them. */
static inline __attribute__((always_inline)) void ukr_rows(size_t kc, const uint32_t *a,
                                                           const uint16_t *b,
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
    /* One line of the driver's next W panel per pair (see hrmt_gemm_ukr_out). */
    const char *pf = o->pf, *pf_end = pf ? pf + o->pf_bytes : pf;
    for (size_t p = 0; p < kc / 2; p++) {
        /* The A sliver streams from L2: fetch ~8 pairs ahead (56 bytes each). */
        _mm_prefetch((const char *)(a + (size_t)8 * MR), _MM_HINT_T0);
        if (pf < pf_end) {
            _mm_prefetch(pf, _MM_HINT_T1);
            pf += 64;
        }
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b),
                       b1 = (__m512bh)_mm512_loadu_si512(b + 32);
#pragma GCC unroll 14
        for (int i = 0; i < R; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);
            c0[i] = _mm512_dpbf16_ps(c0[i], ai, b0);
            c1[i] = _mm512_dpbf16_ps(c1[i], ai, b1);
        }
        a += MR;
        b += (size_t)2 * NR;
    }
    hrmt_gemm_finish14x32__avx512(c0, c1, R, o);
}

static void bf16_gemm_ukr__avx512bf16_14x32(size_t kc, const void *a, const void *b,
                                            const hrmt_gemm_ukr_out *o) {
#define ROWS(n) ukr_rows(kc, a, b, o, n)
    HRMT_AVX512_BY_ROWS14(o->m, ROWS);
#undef ROWS
}

/* BF16 A rows as 32-bit words (k pairs); ROTATE 16 swaps each pair's halves.
 * An odd kc leaves the last pair's k = kc half zero (the masked 16-bit load
 * stops at kc). */
#define PACK_PAIRS(ROTATE)                                                           \
    do {                                                                             \
        const uint16_t *ah = a;                                                      \
        const size_t kw = (kc + 1) / 2;                                              \
        HRMT_GEMM_PACK_WORDS16(MR, m, kw, dst, LOAD_PAIR_ROW_##ROTATE, PAIR_ROW_AT); \
    } while (0)
#define PAIR_ROW_AT(i, k) (ah + (i)*lda + 2 * (k))
#define LOAD_PAIRS(i, k0)                                                              \
    _mm512_maskz_loadu_epi16(                                                          \
        (__mmask32)(kc - 2 * (k0) >= 32 ? 0xffffffffu : (1u << (kc - 2 * (k0))) - 1u), \
        ah + (i)*lda + 2 * (k0))
#define LOAD_PAIR_ROW_0(i, k0, nk) LOAD_PAIRS(i, k0)
#define LOAD_PAIR_ROW_16(i, k0, nk) _mm512_rol_epi32(LOAD_PAIRS(i, k0), 16)

static void bf16_gemm_pack_a__avx512_14(size_t m, size_t kc, const void *a, hrmt_dtype a_dt,
                                        size_t lda, void *dst) {
    (void)a_dt; /* always BF16 for this kernel */
    PACK_PAIRS(0);
}

static void bf16_gemm_pack_a_ordered__avx512_14(size_t m, size_t kc, const void *a, hrmt_dtype a_dt,
                                                size_t lda, void *dst) {
    (void)a_dt;
    PACK_PAIRS(16);
}

#undef PACK_PAIRS
#undef PAIR_ROW_AT
#undef LOAD_PAIRS
#undef LOAD_PAIR_ROW_0
#undef LOAD_PAIR_ROW_16

void hrmt_gemm_fill_bf16_avx512(hrmt_gemm_kernels *t);
void hrmt_gemm_fill_bf16_avx512(hrmt_gemm_kernels *t) {
    t->bf16 = (hrmt_gemm_ukernel){
        "bf16_gemm__avx512bf16_14x32", MR, NR, 2, bf16_gemm_ukr__avx512bf16_14x32,
        bf16_gemm_pack_a__avx512_14};
    t->bf16_pack_a_ordered = bf16_gemm_pack_a_ordered__avx512_14;
}
