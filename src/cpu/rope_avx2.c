/* AVX2 half-split RoPE: the reference's products and sums (no FMA), so the
 * results equal the scalar table's bit for bit. */
#include "cpu/simd_avx2.h"

HRMT_AI void rope_rows(int bf, size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                       size_t ld_head, const float *cos_t, const float *sin_t, size_t ld_cs) {
    const size_t es = bf ? 2 : 4, half = hd / 2;
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (size_t t = 0; t < tokens; t++) {
        const float *c = cos_t + t * ld_cs, *s = sin_t + t * ld_cs;
        for (size_t h = 0; h < heads; h++) {
            char *v = (char *)x + (t * ld_tok + h * ld_head) * es;
            char *v2 = v + half * es;
            for (size_t i = 0; i < half; i += 8) {
                const size_t n = half - i >= 8 ? 8 : half - i;
                const __m256 x1 = hrmt8_ld(v, i, bf, n), x2 = hrmt8_ld(v2, i, bf, n);
                const __m256 c1 = hrmt8_ldf(c + i, n), s1 = hrmt8_ldf(s + i, n);
                const __m256 c2 = hrmt8_ldf(c + half + i, n), s2 = hrmt8_ldf(s + half + i, n);
                const __m256 y1 = _mm256_add_ps(_mm256_mul_ps(x1, c1),
                                                _mm256_mul_ps(_mm256_xor_ps(x2, sign), s1));
                const __m256 y2 = _mm256_add_ps(_mm256_mul_ps(x2, c2), _mm256_mul_ps(x1, s2));
                hrmt8_st(v, i, y1, bf, n);
                hrmt8_st(v2, i, y2, bf, n);
            }
        }
    }
}

static void f32_rope__avx2_u8(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                              size_t ld_head, const float *c, const float *s, size_t ld_cs) {
    rope_rows(0, tokens, heads, hd, x, ld_tok, ld_head, c, s, ld_cs);
}
static void bf16_rope__avx2_u8(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                               size_t ld_head, const float *c, const float *s, size_t ld_cs) {
    rope_rows(1, tokens, heads, hd, x, ld_tok, ld_head, c, s, ld_cs);
}

void hrmt_rope_fill_avx2(hrmt_rowops *t) {
    t->rope[HRMT_F32] = f32_rope__avx2_u8;
    t->rope[HRMT_BF16] = bf16_rope__avx2_u8;
}
