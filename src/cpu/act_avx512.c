/* AVX-512 SwiGLU and softmax; exp is SLEEF's Sleef_expf16_u10avx512f. The
 * element-wise arithmetic has the scalar reference's order (no FMA), so only
 * exp's last bit and the softmax sum order can differ from it. */
#include <sleef.h>

#include "cpu/simd_avx512.h"

HRMT_AI __m512 neg16(__m512 v) { return _mm512_xor_ps(v, _mm512_set1_ps(-0.0f)); }

/* silu(g) = g / (1 + exp(-g)), as the scalar reference and PyTorch. */
HRMT_AI __m512 silu16(__m512 g) {
    return _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), Sleef_expf16_u10avx512f(neg16(g))));
}

/* BF16 silu: exp(-g), 1 + e and the quotient each rounded to bf16, as the
 * scalar reference (the reference PyTorch's bf16 vector ops). */
HRMT_AI __m512 silu16_bf16(__m512 g) {
    const __m512 e = hrmt_round_bf16_ps(Sleef_expf16_u10avx512f(neg16(g)));
    const __m512 d = hrmt_round_bf16_ps(_mm512_add_ps(_mm512_set1_ps(1.0f), e));
    return hrmt_round_bf16_ps(_mm512_div_ps(g, d));
}

HRMT_AI __m512 swiglu16(const void *g, const void *u, size_t j, __mmask16 m, int bf) {
    const __m512 gv = hrmt_ld16m(g, j, bf, m);
    const __m512 s = bf ? silu16_bf16(gv) : silu16(gv);
    return _mm512_mul_ps(s, hrmt_ld16m(u, j, bf, m));
}

HRMT_AI void swiglu_rows(int bf, int hw, size_t rows, size_t inter, const void *gu, size_t ldg,
                         void *out, size_t ldo, int nt) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const char *g = (const char *)gu + r * ldg * es, *u = g + inter * es;
        char *o = (char *)out + r * ldo * es;
        HRMT_AVX512_STORE_ROW(inter, o, bf, hw, nt, swiglu16(g, u, j_, m_, bf));
    }
    if (nt) _mm_sfence();
}

#define SWIGLU(name, bf, hw)                                                                       \
    static void name(size_t rows, size_t inter, const void *gu, size_t ldg, void *out, size_t ldo, \
                     int nt) {                                                                     \
        swiglu_rows(bf, hw, rows, inter, gu, ldg, out, ldo, nt);                                   \
    }
SWIGLU(f32_swiglu__avx512_u16, 0, 0)
SWIGLU(bf16_swiglu__avx512_u16, 1, 0)
SWIGLU(bf16_swiglu__avx512bf16_u16, 1, 1)

/* exp(scale*x - max), multiply then subtract as in the reference. */
HRMT_AI __m512 sm_exp(const void *x, size_t j, __mmask16 m, int bf, __m512 sc, __m512 mx) {
    return Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_mul_ps(sc, hrmt_ld16m(x, j, bf, m)), mx));
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
        __m512 s0 = _mm512_setzero_ps(), s1 = s0;
        for (j = 0; j + 32 <= cols; j += 32) {
            const __m512 e0 = sm_exp(xr, j, all, bf, sc, mx),
                         e1 = sm_exp(xr, j + 16, all, bf, sc, mx);
            s0 = _mm512_add_ps(s0, e0);
            s1 = _mm512_add_ps(s1, e1);
            if (!bf)
                _mm512_storeu_ps((float *)o + j, e0), _mm512_storeu_ps((float *)o + j + 16, e1);
        }
        for (; j < cols; j += 16) {
            const __mmask16 m = cols - j >= 16 ? all : hrmt_m16(cols - j);
            const __m512 e = sm_exp(xr, j, m, bf, sc, mx);
            s0 = _mm512_mask_add_ps(s0, m, s0, e);
            if (!bf) _mm512_mask_storeu_ps((float *)o + j, m, e);
        }
        const __m512 inv = _mm512_set1_ps(1.0f / hrmt_hsum(_mm512_add_ps(s0, s1)));
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
SOFTMAX(f32_softmax__avx512_u32, 0, 0)
SOFTMAX(bf16_softmax__avx512_u32, 1, 0)
SOFTMAX(bf16_softmax__avx512bf16_u32, 1, 1)

void hrmt_act_fill_avx512(hrmt_rowops *t, int hw) {
    t->swiglu[HRMT_F32] = f32_swiglu__avx512_u16;
    t->swiglu[HRMT_BF16] = hw ? bf16_swiglu__avx512bf16_u16 : bf16_swiglu__avx512_u16;
    t->softmax[HRMT_F32] = f32_softmax__avx512_u32;
    t->softmax[HRMT_BF16] = hw ? bf16_softmax__avx512bf16_u32 : bf16_softmax__avx512_u32;
}
