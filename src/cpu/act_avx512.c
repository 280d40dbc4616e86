/* AVX-512 SwiGLU with exactly the scalar reference's bits (cpu/act_scalar.c):
 * exp is SLEEF's Sleef_expf16_u10avx512f, inlined (cpu/expf_avx512.h), and
 * the element-wise arithmetic has the reference's order (no FMA).
 *
 * BF16 silu is a function of the gate's 16 bits alone, and computing it
 * (exp, three bf16 roundings, a division: ~29 cycles per 16 lanes on Zen 4)
 * costs far more than the memory traffic of a streaming swiglu, so the BF16
 * kernels look it up in a 65536-entry table that hrmt_act_fill_avx512 fills
 * once (under the backend tables' pthread_once, read-only afterwards) with
 * the vector silu below; only s * u is computed per element, 32 at a time
 * split into even and odd elements (swiglu32_bf16: +8% over widening 16 at a
 * time, one thread, L2-resident rows, bench/hrmt-bench-ops --set L2).
 * tests/test_ops_parity.c (swiglu_every_gate) checks every gate value bit
 * for bit against the scalar reference.
 *
 * The vector silu rounds with integer RNE and no NaN branch: every NaN that
 * reaches a rounding there has its low 16 bits zero (it is a bf16 input,
 * quieted, or the default NaN of -Inf / Inf), so adding 0x7fff + lsb never
 * carries out of the low half and the reference's NaN rule (keep the upper
 * bits, set the quiet bit, already set) gives the same bits. Denormals round
 * like any value, as in the reference. */
#include <math.h>

#include "cpu/expf_avx512.h"
#include "cpu/prefetch_x86.h"
#include "cpu/simd_avx512.h"

HRMT_AI __m512 neg16(__m512 v) { return _mm512_xor_ps(v, _mm512_set1_ps(-0.0f)); }

/* silu(g) = g / (1 + exp(-g)), as the scalar reference and PyTorch. */
HRMT_AI __m512 silu16(__m512 g) {
    return _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), hrmt_expf16_fma(neg16(g))));
}

/* BF16 silu: exp(-g), 1 + e and the quotient each rounded to bf16, as the
 * scalar reference (the reference PyTorch's bf16 vector ops). */
HRMT_AI __m512 silu16_bf16(__m512 g) {
    const __m512 e = hrmt_round_bf16_ps_nonan(hrmt_expf16_fma(neg16(g)));
    const __m512 d = hrmt_round_bf16_ps_nonan(_mm512_add_ps(_mm512_set1_ps(1.0f), e));
    return hrmt_round_bf16_ps_nonan(_mm512_div_ps(g, d));
}

/* silu(g) of every bf16 bit pattern g, as bf16, plus a pad entry: the
 * lookup gathers 32 bits at entry g and keeps the low 16. */
static uint16_t g_silu_bf16[65536 + 2];

/* L2 prefetch HRMT_PF_AHEAD bytes past the vector at element j, once per
 * 64-byte line: only for the vector that starts in the line's first part. */
HRMT_AI void prefetch_line(const void *p, size_t j, int bf) {
    const char *a = (const char *)p + j * (bf ? 2 : 4);
    if (((uintptr_t)a & 63) < (size_t)16 * (bf ? 2 : 4)) hrmt_prefetch_l2(a, HRMT_PF_AHEAD);
}

HRMT_AI __m512 swiglu16(const void *g, const void *u, size_t j, __mmask16 m, int bf) {
    prefetch_line(g, j, bf);
    prefetch_line(u, j, bf);
    if (bf) {
        /* masked-off lanes read gate 0, a valid index */
        const __m512i idx =
            _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)g + j));
        const __m512i sv = _mm512_i32gather_epi32(idx, (const void *)g_silu_bf16, 2);
        const __m512 s = _mm512_castsi512_ps(_mm512_slli_epi32(sv, 16));
        return _mm512_mul_ps(s,
                             m == (__mmask16)0xffff ? hrmt_ld16(u, j, 1) : hrmt_ld16m(u, j, 1, m));
    }
    if (m == (__mmask16)0xffff)
        return _mm512_mul_ps(silu16(hrmt_ld16(g, j, 0)), hrmt_ld16(u, j, 0));
    return _mm512_mul_ps(silu16(hrmt_ld16m(g, j, 0, m)), hrmt_ld16m(u, j, 0, m));
}

/* 32 BF16 outputs from 32 gates and 32 ups (bits, one zmm each), split into
 * even elements (low halves of the 32-bit lanes) and odd (high halves) so
 * that no widening shuffle is needed: table gathers (8 lanes each: ~6%
 * faster than 16-lane gathers on Zen 4, 4-lane ones are slower), two multiplies,
 * integer RNE (products of bf16 values: NaNs have zero low halves, see
 * hrmt_round_bf16_ps_nonan), and the halves merged back. */
HRMT_AI __m512i swiglu32_bf16(__m512i gv, __m512i uv) {
    const __m512i lo16 = _mm512_set1_epi32(0xffff), hi16 = _mm512_set1_epi32((int)0xffff0000u);
    const void *tbl = (const void *)g_silu_bf16;
    const __m512i ie = _mm512_and_si512(gv, lo16), io = _mm512_srli_epi32(gv, 16);
    const __m512i se = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_i32gather_epi32(tbl, _mm512_castsi512_si256(ie), 2)),
        _mm256_i32gather_epi32(tbl, _mm512_extracti64x4_epi64(ie, 1), 2), 1);
    const __m512i so = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_i32gather_epi32(tbl, _mm512_castsi512_si256(io), 2)),
        _mm256_i32gather_epi32(tbl, _mm512_extracti64x4_epi64(io, 1), 2), 1);
    const __m512 pe = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(se, 16)),
                                    _mm512_castsi512_ps(_mm512_slli_epi32(uv, 16)));
    const __m512 po = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(so, 16)),
                                    _mm512_castsi512_ps(_mm512_and_si512(uv, hi16)));
    return _mm512_or_si512(_mm512_srli_epi32(_mm512_castps_si512(hrmt_round_bf16_ps_nonan(pe)), 16),
                           _mm512_castps_si512(hrmt_round_bf16_ps_nonan(po)));
}

/* Columns [j0, j1) of a BF16 row, 16 at a time (row heads and tails). */
HRMT_AI void swiglu_part_bf16(const void *g, const void *u, void *o, size_t j0, size_t j1, int hw) {
    for (size_t j = j0; j < j1; j += 16) {
        const __mmask16 m = hrmt_m16(j1 - j < 16 ? j1 - j : 16);
        hrmt_st16m(o, j, swiglu16(g, u, j, m, 1), 1, hw, m);
    }
}

/* A BF16 row: 32 outputs (one 64-byte line) per step, streamed when `nt`
 * once the output is line-aligned. */
HRMT_AI void swiglu_row_bf16(const uint16_t *g, const uint16_t *u, uint16_t *o, size_t inter,
                             int hw, int nt) {
    size_t head = nt ? hrmt_nt_head(o, 1) : 0;
    if (head >= 32) nt = 0, head = 0;
    if (head > inter) head = inter;
    swiglu_part_bf16(g, u, o, 0, head, hw);
    size_t j = head;
    for (; j + 32 <= inter; j += 32) {
        hrmt_prefetch_l2(g + j, HRMT_PF_AHEAD);
        hrmt_prefetch_l2(u + j, HRMT_PF_AHEAD);
        const __m512i r = swiglu32_bf16(_mm512_loadu_si512(g + j), _mm512_loadu_si512(u + j));
        if (nt)
            _mm512_stream_si512((__m512i *)(void *)(o + j), r);
        else
            _mm512_storeu_si512(o + j, r);
    }
    swiglu_part_bf16(g, u, o, j, inter, hw);
}

HRMT_AI void swiglu_rows(int bf, int hw, size_t rows, size_t inter, const void *gu, size_t ldg,
                         void *out, size_t ldo, int nt) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const char *g = (const char *)gu + r * ldg * es, *u = g + inter * es;
        char *o = (char *)out + r * ldo * es;
        if (bf)
            swiglu_row_bf16((const uint16_t *)g, (const uint16_t *)u, (uint16_t *)o, inter, hw, nt);
        else
            HRMT_AVX512_STORE_ROW(inter, o, 0, 0, nt, swiglu16(g, u, j_, m_, 0));
    }
    if (nt) _mm_sfence();
}

#define SWIGLU(name, bf, hw)                                                                       \
    static void name(size_t rows, size_t inter, const void *gu, size_t ldg, void *out, size_t ldo, \
                     int nt) {                                                                     \
        swiglu_rows(bf, hw, rows, inter, gu, ldg, out, ldo, nt);                                   \
    }
SWIGLU(f32_swiglu__avx512_u16, 0, 0)
SWIGLU(bf16_swiglu__avx512_lut_u16, 1, 0)
SWIGLU(bf16_swiglu__avx512bf16_lut_u16, 1, 1)

void hrmt_act_fill_avx512(hrmt_rowops *t, int hw) {
    for (uint32_t i = 0; i < 65536; i += 16) {
        const __m512i bits = _mm512_add_epi32(
            _mm512_set1_epi32((int)i),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        const __m512 s = silu16_bf16(_mm512_castsi512_ps(_mm512_slli_epi32(bits, 16)));
        _mm256_storeu_si256((__m256i *)(g_silu_bf16 + i), hrmt_pack_bf16(s));
    }
    t->swiglu[HRMT_F32] = f32_swiglu__avx512_u16;
    t->swiglu[HRMT_BF16] = hw ? bf16_swiglu__avx512bf16_lut_u16 : bf16_swiglu__avx512_lut_u16;
}
