/* AVX-512 building blocks for the *_avx512.c kernels (only those files may
 * include this: it needs -mavx512f/bw/vl/bf16). `bf` selects BF16 storage,
 * `hw` the AVX512-BF16 conversion instruction; both are compile-time
 * constants at every call site (always_inline), so the branches fold. */
#ifndef HRMT_CPU_SIMD_AVX512_H
#define HRMT_CPU_SIMD_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rowops.h"

#define HRMT_AI static inline __attribute__((always_inline))

/* Lanes j..j+n-1 for n < 16. */
HRMT_AI __mmask16 hrmt_m16(size_t n) { return (__mmask16)((1u << n) - 1u); }

/* 16 bf16 -> 16 f32 (exact). */
HRMT_AI __m512 hrmt_widen_bf16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

HRMT_AI __m512 hrmt_ld16(const void *p, size_t j, int bf) {
    if (bf) return hrmt_widen_bf16(_mm256_loadu_si256((const __m256i *)((const uint16_t *)p + j)));
    return _mm512_loadu_ps((const float *)p + j);
}

/* Masked load; masked-off lanes read as 0 and touch no memory. */
HRMT_AI __m512 hrmt_ld16m(const void *p, size_t j, int bf, __mmask16 m) {
    if (bf) return hrmt_widen_bf16(_mm256_maskz_loadu_epi16(m, (const uint16_t *)p + j));
    return _mm512_maskz_loadu_ps(m, (const float *)p + j);
}

/* u + 0x7fff + (bit 16 of u): round to nearest even in the upper 16 bits,
 * right for every value but a NaN whose low half is not zero. */
HRMT_AI __m512i hrmt_rne_bias(__m512i u) {
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    return _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb);
}

/* Round to nearest even on the integers, NaN -> quiet NaN (core/bf16.h),
 * result in the upper 16 bits of each lane. */
HRMT_AI __m512i hrmt_rne_hi16(__m512 v) {
    const __m512i u = _mm512_castps_si512(v);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_mov_epi32(hrmt_rne_bias(u), nan,
                                 _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
}

/* v rounded to bf16 precision (f32 lanes), for values whose NaNs have zero
 * low halves: results of adds, multiplies and divisions of bf16 values (x86
 * quiets an operand NaN, keeping its bits, and Inf - Inf or 0 * Inf give the
 * default NaN). The bias then never carries out of a NaN's low half and its
 * quiet bit is already set, so hrmt_rne_hi16's NaN test is not needed. */
HRMT_AI __m512 hrmt_round_bf16_ps_nonan(__m512 v) {
    return _mm512_castsi512_ps(_mm512_and_si512(hrmt_rne_bias(_mm512_castps_si512(v)),
                                                _mm512_set1_epi32((int)0xffff0000u)));
}

/* 16 f32 lanes -> 16 bf16 (RNE). vcvtneps2bf16 matches the reference for
 * normal numbers, zero, Inf and NaN (quiet bit set, payload kept) but treats
 * f32 denormal inputs as zero, so those lanes (rare) take the integer path. */
HRMT_AI __m256i hrmt_cvt_bf16(__m512 v, int hw) {
    if (hw) {
        __m256i r = (__m256i)_mm512_cvtneps_pbh(v);
        const __mmask16 den = _mm512_fpclass_ps_mask(v, 0x20); /* class 0x20: denormal */
        if (den)
            r = _mm256_mask_mov_epi16(
                r, den, _mm512_cvtepi32_epi16(_mm512_srli_epi32(hrmt_rne_hi16(v), 16)));
        return r;
    }
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(hrmt_rne_hi16(v), 16));
}

/* A value already rounded to bf16 precision: truncate. */
HRMT_AI __m256i hrmt_pack_bf16(__m512 v) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
}

HRMT_AI void hrmt_st16(void *p, size_t j, __m512 v, int bf, int hw) {
    if (bf)
        _mm256_storeu_si256((__m256i *)((uint16_t *)p + j), hrmt_cvt_bf16(v, hw));
    else
        _mm512_storeu_ps((float *)p + j, v);
}

HRMT_AI void hrmt_st16m(void *p, size_t j, __m512 v, int bf, int hw, __mmask16 m) {
    if (bf)
        _mm256_mask_storeu_epi16((uint16_t *)p + j, m, hrmt_cvt_bf16(v, hw));
    else
        _mm512_mask_storeu_ps((float *)p + j, m, v);
}

/* Streaming stores write whole 64-byte lines, issued back to back: a line
 * left half written in the write-combining buffer would be flushed as a
 * partial write, which costs a read-modify-write in DRAM. `p + j` must be
 * 64-byte aligned. F32: one vector is a line; BF16: two vectors. */
HRMT_AI void hrmt_line_nt_f32(void *p, size_t j, __m512 v) { _mm512_stream_ps((float *)p + j, v); }
HRMT_AI void hrmt_line_nt_bf16(void *p, size_t j, __m512 v0, __m512 v1, int hw) {
    const __m512i line =
        _mm512_inserti64x4(_mm512_castsi256_si512(hrmt_cvt_bf16(v0, hw)), hrmt_cvt_bf16(v1, hw), 1);
    _mm512_stream_si512((void *)((uint16_t *)p + j), line);
}

/* Elements before p reaches a 64-byte line, or 32+ when it never will. */
HRMT_AI size_t hrmt_nt_head(const void *p, int bf) {
    const size_t es = bf ? 2 : 4;
    const uintptr_t a = (uintptr_t)p;
    if (a % es) return 32;
    return ((64 - a % 64) % 64) / es;
}

HRMT_AI float hrmt_hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

/* Stores `cols` results of VEXPR (an __m512 expression of j_ and m_, the
 * element index and the lane mask) into `out`. With `nt`: masked stores up
 * to the first 64-byte line, then whole lines with streaming stores; then
 * full vectors and a masked tail. Every element gets the same arithmetic
 * whichever store path it takes, so `nt` never changes bits. */
#define HRMT_AVX512_STORE_ROW(cols, out, bf, hw, nt, VEXPR)       \
    do {                                                          \
        size_t j_ = 0;                                            \
        const size_t c_ = (cols), line_ = (bf) ? 32 : 16;         \
        int nt_ = (nt);                                           \
        size_t head_ = nt_ ? hrmt_nt_head((out), (bf)) : 0;       \
        if (head_ >= line_) nt_ = 0, head_ = 0;                   \
        if (head_ > c_) head_ = c_;                               \
        while (j_ < head_) {                                      \
            const size_t k_ = head_ - j_ < 16 ? head_ - j_ : 16;  \
            const __mmask16 m_ = hrmt_m16(k_);                    \
            hrmt_st16m((out), j_, (VEXPR), (bf), (hw), m_);       \
            j_ += k_;                                             \
        }                                                         \
        if (nt_) {                                                \
            const __mmask16 m_ = (__mmask16)0xffff;               \
            for (; j_ + line_ <= c_; j_ += line_) {               \
                if (bf) {                                         \
                    const __m512 v0_ = (VEXPR);                   \
                    j_ += 16;                                     \
                    const __m512 v1_ = (VEXPR);                   \
                    j_ -= 16;                                     \
                    hrmt_line_nt_bf16((out), j_, v0_, v1_, (hw)); \
                } else {                                          \
                    hrmt_line_nt_f32((out), j_, (VEXPR));         \
                }                                                 \
            }                                                     \
        }                                                         \
        for (; j_ + 16 <= c_; j_ += 16) {                         \
            const __mmask16 m_ = (__mmask16)0xffff;               \
            hrmt_st16((out), j_, (VEXPR), (bf), (hw));            \
        }                                                         \
        if (j_ < c_) {                                            \
            const __mmask16 m_ = hrmt_m16(c_ - j_);               \
            hrmt_st16m((out), j_, (VEXPR), (bf), (hw), m_);       \
        }                                                         \
    } while (0)

/* Per-file fill functions of the AVX-512 table; hw = AVX512-BF16 present. */
void hrmt_norm_fill_avx512(hrmt_rowops *t, int hw);
void hrmt_act_fill_avx512(hrmt_rowops *t, int hw);
void hrmt_softmax_fill_avx512(hrmt_rowops *t, int hw);
void hrmt_rope_fill_avx512(hrmt_rowops *t, int hw);
void hrmt_engram_fill_avx512(hrmt_rowops *t, int hw);

#endif
