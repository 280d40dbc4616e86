/* AVX2 SwiGLU with exactly the scalar reference's bits (cpu/act_scalar.c):
 * exp is SLEEF's Sleef_expf8_u10avx2, inlined (cpu/expf_avx2.h), and the
 * element-wise arithmetic has the reference's order (no FMA). BF16 looks
 * silu up in a 65536-entry table filled once by hrmt_act_fill_avx2 with the
 * vector silu below, for the reasons given in act_avx512.c, whose comment
 * also explains why the inner bf16 roundings need no NaN branch. */
#include <math.h>

#include "cpu/expf_avx2.h"
#include "cpu/prefetch_x86.h"
#include "cpu/simd_avx2.h"

HRMT_AI __m256 neg8(__m256 v) { return _mm256_xor_ps(v, _mm256_set1_ps(-0.0f)); }

HRMT_AI __m256 silu8(__m256 g) {
    return _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), hrmt_expf8_fma(neg8(g))));
}

/* BF16 silu: exp(-g), 1 + e and the quotient each rounded to bf16, as the
 * scalar reference (the reference PyTorch's bf16 vector ops). */
HRMT_AI __m256 silu8_bf16(__m256 g) {
    const __m256 e = hrmt8_round_bf16_nonan(hrmt_expf8_fma(neg8(g)));
    const __m256 d = hrmt8_round_bf16_nonan(_mm256_add_ps(_mm256_set1_ps(1.0f), e));
    return hrmt8_round_bf16_nonan(_mm256_div_ps(g, d));
}

/* silu(g) of every bf16 bit pattern g, as bf16, plus a pad entry: the
 * lookup gathers 32 bits at entry g and keeps the low 16. */
static uint16_t g_silu_bf16[65536 + 2];

/* L2 prefetch HRMT_PF_AHEAD bytes past the vector at element j, once per
 * 64-byte line: only for the vector that starts in the line's first part. */
HRMT_AI void prefetch_line(const void *p, size_t j, int bf) {
    const char *a = (const char *)p + j * (bf ? 2 : 4);
    if (((uintptr_t)a & 63) < (size_t)8 * (bf ? 2 : 4)) hrmt_prefetch_l2(a, HRMT_PF_AHEAD);
}

HRMT_AI __m256 swiglu8(const void *g, const void *u, size_t j, size_t n, int bf) {
    prefetch_line(g, j, bf);
    prefetch_line(u, j, bf);
    if (bf) {
        /* lanes past n read gate 0, a valid index */
        const __m256i idx = _mm256_srli_epi32(_mm256_castps_si256(hrmt8_ld(g, j, 1, n)), 16);
        const __m256i sv = _mm256_i32gather_epi32((const int *)(const void *)g_silu_bf16, idx, 2);
        const __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(sv, 16));
        return _mm256_mul_ps(s, hrmt8_ld(u, j, 1, n));
    }
    return _mm256_mul_ps(silu8(hrmt8_ld(g, j, 0, n)), hrmt8_ld(u, j, 0, n));
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
static void bf16_swiglu__avx2_lut_u8(size_t rows, size_t inter, const void *gu, size_t ldg,
                                     void *out, size_t ldo, int nt) {
    swiglu_rows(1, rows, inter, gu, ldg, out, ldo, nt);
}

void hrmt_act_fill_avx2(hrmt_rowops *t) {
    for (uint32_t i = 0; i < 65536; i += 8) {
        const __m256i bits =
            _mm256_add_epi32(_mm256_set1_epi32((int)i), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256 s = silu8_bf16(_mm256_castsi256_ps(_mm256_slli_epi32(bits, 16)));
        _mm_storeu_si128((__m128i *)(g_silu_bf16 + i), hrmt8_pack_bf16(s));
    }
    t->swiglu[HRMT_F32] = f32_swiglu__avx2_u8;
    t->swiglu[HRMT_BF16] = bf16_swiglu__avx2_lut_u8;
}
