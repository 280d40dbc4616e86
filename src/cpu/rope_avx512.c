/* AVX-512 half-split RoPE: the reference's products and sums (no FMA), so
 * the results equal the scalar table's bit for bit. */
#include "cpu/simd_avx512.h"

HRMT_AI void rope_rows(int bf, int hw, size_t tokens, size_t heads, size_t hd, void *x,
                       size_t ld_tok, size_t ld_head, const float *cos_t, const float *sin_t,
                       size_t ld_cs) {
    const size_t es = bf ? 2 : 4, half = hd / 2;
    for (size_t t = 0; t < tokens; t++) {
        const float *c = cos_t + t * ld_cs, *s = sin_t + t * ld_cs;
        for (size_t h = 0; h < heads; h++) {
            char *v = (char *)x + (t * ld_tok + h * ld_head) * es;
            char *v2 = v + half * es;
            for (size_t i = 0; i < half; i += 16) {
                const __mmask16 m = half - i >= 16 ? (__mmask16)0xffff : hrmt_m16(half - i);
                const __m512 x1 = hrmt_ld16m(v, i, bf, m), x2 = hrmt_ld16m(v2, i, bf, m);
                const __m512 c1 = _mm512_maskz_loadu_ps(m, c + i),
                             s1 = _mm512_maskz_loadu_ps(m, s + i);
                const __m512 c2 = _mm512_maskz_loadu_ps(m, c + half + i);
                const __m512 s2 = _mm512_maskz_loadu_ps(m, s + half + i);
                const __m512 nx2 = _mm512_xor_ps(x2, _mm512_set1_ps(-0.0f));
                const __m512 y1 = _mm512_add_ps(_mm512_mul_ps(x1, c1), _mm512_mul_ps(nx2, s1));
                const __m512 y2 = _mm512_add_ps(_mm512_mul_ps(x2, c2), _mm512_mul_ps(x1, s2));
                hrmt_st16m(v, i, y1, bf, hw, m);
                hrmt_st16m(v2, i, y2, bf, hw, m);
            }
        }
    }
}

#define ROPE(name, bf, hw)                                                           \
    static void name(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok, \
                     size_t ld_head, const float *c, const float *s, size_t ld_cs) { \
        rope_rows(bf, hw, tokens, heads, hd, x, ld_tok, ld_head, c, s, ld_cs);       \
    }
ROPE(f32_rope__avx512_u16, 0, 0)
ROPE(bf16_rope__avx512_u16, 1, 0)
ROPE(bf16_rope__avx512bf16_u16, 1, 1)

void hrmt_rope_fill_avx512(hrmt_rowops *t, int hw) {
    t->rope[HRMT_F32] = f32_rope__avx512_u16;
    t->rope[HRMT_BF16] = hw ? bf16_rope__avx512bf16_u16 : bf16_rope__avx512_u16;
}
