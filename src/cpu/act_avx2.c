/* AVX2 SwiGLU; exp is SLEEF's Sleef_expf8_u10avx2. The
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

void hrmt_act_fill_avx2(hrmt_rowops *t) {
    t->swiglu[HRMT_F32] = f32_swiglu__avx2_u8;
    t->swiglu[HRMT_BF16] = bf16_swiglu__avx2_u8;
}
