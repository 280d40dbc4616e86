/* AVX-512 SwiGLU; exp is SLEEF's Sleef_expf16_u10avx512f. The
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

void hrmt_act_fill_avx512(hrmt_rowops *t, int hw) {
    t->swiglu[HRMT_F32] = f32_swiglu__avx512_u16;
    t->swiglu[HRMT_BF16] = hw ? bf16_swiglu__avx512bf16_u16 : bf16_swiglu__avx512_u16;
}
