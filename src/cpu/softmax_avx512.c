/* AVX-512 softmax in the scalar reference's order (softmax_scalar.c): the
 * exponentials are computed 16 at a time but summed through one 8-lane
 * accumulator, low half then high half, which is exactly that order; the
 * inline exp (cpu/expf_avx512.h) has SLEEF's and hrmt_expf_fma's bits, so
 * the output equals the reference bit for bit. */
#include <math.h>

#include "cpu/expf_avx512.h"
#include "cpu/simd_avx512.h"
#include "cpu/softmax_order.h"

/* exp(scale*x - max), multiply then subtract as in the reference; masked-off
 * lanes are 0. */
HRMT_AI __m512 sm_exp(const void *x, size_t j, __mmask16 m, int bf, __m512 sc, __m512 mx) {
    const __m512 e = hrmt_expf16_fma(_mm512_sub_ps(_mm512_mul_ps(sc, hrmt_ld16m(x, j, bf, m)), mx));
    return _mm512_maskz_mov_ps(m, e);
}

HRMT_AI __m256 add_halves(__m256 acc, __m512 e) {
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    return _mm256_add_ps(acc, _mm512_extractf32x8_ps(e, 1));
}

HRMT_AI void softmax_rows(int bf, int hw, size_t rows, size_t cols, const void *x, size_t ldx,
                          float scale, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    const __m512 sc = _mm512_set1_ps(scale);
    const __mmask16 all = (__mmask16)0xffff;
    for (size_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + r * ldx * es;
        char *o = (char *)out + r * ldo * es;
        /* the max is exact in any order; a NaN reaches every output through
         * the sum below, as in the reference */
        __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
        size_t j = 0;
        for (; j + 32 <= cols; j += 32) {
            m0 = _mm512_max_ps(m0, _mm512_mul_ps(sc, hrmt_ld16(xr, j, bf)));
            m1 = _mm512_max_ps(m1, _mm512_mul_ps(sc, hrmt_ld16(xr, j + 16, bf)));
        }
        for (; j < cols; j += 16) {
            const __mmask16 m = cols - j >= 16 ? all : hrmt_m16(cols - j);
            m0 = _mm512_mask_max_ps(m0, m, m0, _mm512_mul_ps(sc, hrmt_ld16m(xr, j, bf, m)));
        }
        const __m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(m0, m1)));
        __m256 acc = _mm256_setzero_ps();
        for (j = 0; j < cols; j += 16) {
            const __mmask16 m = cols - j >= 16 ? all : hrmt_m16(cols - j);
            const __m512 e = sm_exp(xr, j, m, bf, sc, mx);
            acc = add_halves(acc, e);
            if (!bf) _mm512_mask_storeu_ps((float *)o + j, m, e);
        }
        float lanes[8];
        _mm256_storeu_ps(lanes, acc);
        const __m512 inv = _mm512_set1_ps(1.0f / hrmt_softmax_fold8(lanes, cols));
        if (bf)
            HRMT_AVX512_STORE_ROW(cols, o, 1, hw, 0,
                                  _mm512_mul_ps(sm_exp(xr, j_, m_, 1, sc, mx), inv));
        else
            HRMT_AVX512_STORE_ROW(cols, o, 0, 0, 0, _mm512_mul_ps(hrmt_ld16m(o, j_, 0, m_), inv));
    }
}

#define SOFTMAX(name, bf, hw)                                                                     \
    static void name(size_t rows, size_t cols, const void *x, size_t ldx, float scale, void *out, \
                     size_t ldo) {                                                                \
        softmax_rows(bf, hw, rows, cols, x, ldx, scale, out, ldo);                                \
    }
SOFTMAX(f32_softmax__avx512_u16, 0, 0)
SOFTMAX(bf16_softmax__avx512_u16, 1, 0)
SOFTMAX(bf16_softmax__avx512bf16_u16, 1, 1)

void hrmt_softmax_fill_avx512(hrmt_rowops *t, int hw) {
    t->softmax[HRMT_F32] = f32_softmax__avx512_u16;
    t->softmax[HRMT_BF16] = hw ? bf16_softmax__avx512bf16_u16 : bf16_softmax__avx512_u16;
}
