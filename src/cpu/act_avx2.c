/* AVX2 SwiGLU and softmax; exp is SLEEF's Sleef_expf8_u10avx2. The
 * element-wise arithmetic has the scalar reference's order (no FMA). */
#include <math.h>
#include <sleef.h>

#include "cpu/simd_avx2.h"

HRMT_AI __m256 neg8(__m256 v) { return _mm256_xor_ps(v, _mm256_set1_ps(-0.0f)); }

HRMT_AI __m256 silu8(__m256 g) {
    return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), Sleef_expf8_u10avx2(neg8(g))));
}

/* BF16 silu: exp(-g), 1 + e and the quotient each rounded to bf16, as the
 * scalar reference (the reference PyTorch's bf16 vector ops). */
HRMT_AI __m256 silu8_bf16(__m256 g) {
    const __m256 e = hrmt8_round_bf16(Sleef_expf8_u10avx2(neg8(g)));
    const __m256 d = hrmt8_round_bf16(_mm256_add_ps(_mm256_set1_ps(1.0f), e));
    return hrmt8_round_bf16(_mm256_div_ps(g, d));
}

HRMT_AI __m256 swiglu8(const void *g, const void *u, size_t j, size_t n, int bf) {
    const __m256 gv = hrmt8_ld(g, j, bf, n);
    const __m256 s = bf ? silu8_bf16(gv) : silu8(gv);
    return _mm256_mul_ps(s, hrmt8_ld(u, j, bf, n));
}

HRMT_AI void swiglu_rows(int bf, size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                         size_t ldo, int nt) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const char *g = (const char *)gu + r * ldg * es, *u = g + inter * es;
        char *o = (char *)out + r * ldo * es;
        HRMT_AVX2_STORE_ROW(inter, o, bf, nt, swiglu8(g, u, j_, n_, bf));
    }
    if (nt) _mm_sfence();
}

static void f32_swiglu__avx2_u8(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                                size_t ldo, int nt) {
    swiglu_rows(0, rows, inter, gu, ldg, out, ldo, nt);
}
static void bf16_swiglu__avx2_u8(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                                 size_t ldo, int nt) {
    swiglu_rows(1, rows, inter, gu, ldg, out, ldo, nt);
}

HRMT_AI __m256 sm_exp(const void *x, size_t j, size_t n, int bf, __m256 sc, __m256 mx) {
    return Sleef_expf8_u10avx2(_mm256_sub_ps(_mm256_mul_ps(sc, hrmt8_ld(x, j, bf, n)), mx));
}

HRMT_AI void softmax_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                          void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    const __m256 sc = _mm256_set1_ps(scale), ninf = _mm256_set1_ps(-INFINITY),
                 zero = _mm256_setzero_ps();
    for (size_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + r * ldx * es;
        char *o = (char *)out + r * ldo * es;
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
        __m256 s0 = zero, s1 = zero;
        for (j = 0; j + 16 <= cols; j += 16) {
            const __m256 e0 = sm_exp(xr, j, 8, bf, sc, mx), e1 = sm_exp(xr, j + 8, 8, bf, sc, mx);
            s0 = _mm256_add_ps(s0, e0);
            s1 = _mm256_add_ps(s1, e1);
            if (!bf) _mm256_storeu_ps((float *)o + j, e0), _mm256_storeu_ps((float *)o + j + 8, e1);
        }
        for (; j < cols; j += 8) {
            const size_t n = cols - j >= 8 ? 8 : cols - j;
            const __m256 e = hrmt8_keep(sm_exp(xr, j, n, bf, sc, mx), n, zero);
            s0 = _mm256_add_ps(s0, e);
            if (!bf) hrmt8_st(o, j, e, 0, n);
        }
        const __m256 inv = _mm256_set1_ps(1.0f / hrmt8_hsum(_mm256_add_ps(s0, s1)));
        if (bf)
            HRMT_AVX2_STORE_ROW(cols, o, 1, 0, _mm256_mul_ps(sm_exp(xr, j_, n_, 1, sc, mx), inv));
        else
            HRMT_AVX2_STORE_ROW(cols, o, 0, 0, _mm256_mul_ps(hrmt8_ld(o, j_, 0, n_), inv));
    }
}

static void f32_softmax__avx2_u16(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                  void *out, size_t ldo) {
    softmax_rows(0, rows, cols, x, ldx, scale, out, ldo);
}
static void bf16_softmax__avx2_u16(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                   void *out, size_t ldo) {
    softmax_rows(1, rows, cols, x, ldx, scale, out, ldo);
}

void hrmt_act_fill_avx2(hrmt_rowops *t) {
    t->swiglu[HRMT_F32] = f32_swiglu__avx2_u8;
    t->swiglu[HRMT_BF16] = bf16_swiglu__avx2_u8;
    t->softmax[HRMT_F32] = f32_softmax__avx2_u16;
    t->softmax[HRMT_BF16] = bf16_softmax__avx2_u16;
}
