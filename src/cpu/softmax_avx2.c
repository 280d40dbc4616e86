/* AVX2 softmax in the scalar reference's order (softmax_scalar.c): one 8-lane
 * accumulator is exactly that order, and the inline exp (cpu/expf_avx2.h)
 * has SLEEF's and hrmt_expf_fma's bits, so the output equals the reference
 * bit for bit. */
#include <math.h>

#include "cpu/expf_avx2.h"
#include "cpu/simd_avx2.h"
#include "cpu/softmax_order.h"

HRMT_AI __m256 sm_exp(const void *x, size_t j, size_t n, int bf, __m256 sc, __m256 mx) {
    return hrmt_expf8_fma(_mm256_sub_ps(_mm256_mul_ps(sc, hrmt8_ld(x, j, bf, n)), mx));
}

HRMT_AI void softmax_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                          void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    const __m256 sc = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY),
                 zero = _mm256_setzero_ps();
    for (size_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + r * ldx * es;
        char *o = (char *)out + r * ldo * es;
        /* the max is exact in any order; a NaN reaches every output through
         * the sum below, as in the reference */
        __m256 m0 = ninf, m1 = ninf;
        size_t j = 0;
        for (; j + 16 <= cols; j += 16) {
            m0 = _mm256_max_ps(m0, _mm256_mul_ps(sc, hrmt8_ld(xr, j, bf, 8)));
            m1 = _mm256_max_ps(m1, _mm256_mul_ps(sc, hrmt8_ld(xr, j + 8, bf, 8)));
        }
        for (; j < cols; j += 8) {
            const size_t n = cols - j >= 8 ? 8 : cols - j;
            m0 = _mm256_max_ps(m0, hrmt8_keep(_mm256_mul_ps(sc, hrmt8_ld(xr, j, bf, n)), n, ninf));
        }
        const __m256 mx = _mm256_set1_ps(hrmt8_hmax(_mm256_max_ps(m0, m1)));
        __m256 acc = zero;
        for (j = 0; j + 8 <= cols; j += 8) {
            const __m256 e = sm_exp(xr, j, 8, bf, sc, mx);
            acc = _mm256_add_ps(acc, e);
            if (!bf) _mm256_storeu_ps((float *)o + j, e);
        }
        if (j < cols) {
            /* the tail adds into the first lanes; +0 leaves the others */
            const size_t n = cols - j;
            const __m256 e = hrmt8_keep(sm_exp(xr, j, n, bf, sc, mx), n, zero);
            acc = _mm256_add_ps(acc, e);
            if (!bf) hrmt8_st(o, j, e, 0, n);
        }
        float lanes[8];
        _mm256_storeu_ps(lanes, acc);
        const __m256 inv = _mm256_set1_ps(1.0f / hrmt_softmax_fold8(lanes, cols));
        if (bf)
            HRMT_AVX2_STORE_ROW(cols, o, 1, 0, _mm256_mul_ps(sm_exp(xr, j_, n_, 1, sc, mx), inv));
        else
            HRMT_AVX2_STORE_ROW(cols, o, 0, 0, _mm256_mul_ps(hrmt8_ld(o, j_, 0, n_), inv));
    }
}

static void f32_softmax__avx2_u8(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                 void *out, size_t ldo) {
    softmax_rows(0, rows, cols, x, ldx, scale, out, ldo);
}
static void bf16_softmax__avx2_u8(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                  void *out, size_t ldo) {
    softmax_rows(1, rows, cols, x, ldx, scale, out, ldo);
}

void hrmt_softmax_fill_avx2(hrmt_rowops *t) {
    t->softmax[HRMT_F32] = f32_softmax__avx2_u8;
    t->softmax[HRMT_BF16] = bf16_softmax__avx2_u8;
}
