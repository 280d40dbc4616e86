/* AVX2 building blocks for the *_avx2.c kernels (only those files may
 * include this: it needs -mavx2 -mfma). `bf` selects BF16 storage and is a
 * compile-time constant at every call site (always_inline). AVX2 has no
 * lane masks for 16-bit data, so partial vectors go through a small stack
 * buffer: `n` < 8 is the number of valid lanes. */
#ifndef HRMT_CPU_SIMD_AVX2_H
#define HRMT_CPU_SIMD_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/rowops.h"

#define HRMT_AI static inline __attribute__((always_inline))

HRMT_AI __m256 hrmt8_widen(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Lanes [j, j+n), n <= 8; lanes past n read as 0 and touch no memory. */
HRMT_AI __m256 hrmt8_ld(const void *p, size_t j, int bf, size_t n) {
    if (n == 8) {
        if (bf) return hrmt8_widen(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + j)));
        return _mm256_loadu_ps((const float *)p + j);
    }
    if (bf) {
        uint16_t tmp[8] = {0};
        memcpy(tmp, (const uint16_t *)p + j, n * 2);
        return hrmt8_widen(_mm_loadu_si128((const __m128i *)tmp));
    }
    float tmp[8] = {0};
    memcpy(tmp, (const float *)p + j, n * 4);
    return _mm256_loadu_ps(tmp);
}

/* F32 lanes with a lane count (cos/sin tables, weights). */
HRMT_AI __m256 hrmt8_ldf(const float *p, size_t n) { return hrmt8_ld(p, 0, 0, n); }

/* u + 0x7fff + (bit 16 of u): round to nearest even in the upper 16 bits,
 * right for every value but a NaN whose low half is not zero. */
HRMT_AI __m256i hrmt8_rne_bias(__m256i u) {
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb);
}

/* Round to nearest even on the integers, NaN -> quiet NaN (core/bf16.h). */
HRMT_AI __m256i hrmt8_rne_hi16(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    return _mm256_blendv_epi8(hrmt8_rne_bias(u), q, nan);
}

/* v rounded to bf16 precision, for values whose NaNs have zero low halves
 * (sums, products and quotients of bf16 values; see
 * hrmt_round_bf16_ps_nonan in simd_avx512.h). */
HRMT_AI __m256 hrmt8_round_bf16_nonan(__m256 v) {
    return _mm256_castsi256_ps(_mm256_and_si256(hrmt8_rne_bias(_mm256_castps_si256(v)),
                                                _mm256_set1_epi32((int)0xffff0000u)));
}

/* Upper halves of eight 32-bit lanes -> eight u16 in order. */
HRMT_AI __m128i hrmt8_narrow(__m256i hi16) {
    const __m256i s = _mm256_srli_epi32(hi16, 16);
    const __m256i p = _mm256_packus_epi32(s, s); /* per 128-bit lane */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(p, 0x08));
}

HRMT_AI __m128i hrmt8_cvt_bf16(__m256 v) { return hrmt8_narrow(hrmt8_rne_hi16(v)); }
/* A value already at bf16 precision: truncate. */
HRMT_AI __m128i hrmt8_pack_bf16(__m256 v) { return hrmt8_narrow(_mm256_castps_si256(v)); }

HRMT_AI void hrmt8_st_bits(void *p, size_t j, __m128i h, size_t n) {
    if (n == 8) {
        _mm_storeu_si128((__m128i *)((uint16_t *)p + j), h);
    } else {
        uint16_t tmp[8];
        _mm_storeu_si128((__m128i *)tmp, h);
        memcpy((uint16_t *)p + j, tmp, n * 2);
    }
}

HRMT_AI void hrmt8_st(void *p, size_t j, __m256 v, int bf, size_t n) {
    if (bf) {
        hrmt8_st_bits(p, j, hrmt8_cvt_bf16(v), n);
    } else if (n == 8) {
        _mm256_storeu_ps((float *)p + j, v);
    } else {
        float tmp[8];
        _mm256_storeu_ps(tmp, v);
        memcpy((float *)p + j, tmp, n * 4);
    }
}

/* Streaming stores write whole 64-byte lines, issued back to back (a line
 * left partly written would be flushed as a partial write, a read-modify-write
 * in DRAM). `p + j` must be 64-byte aligned; a line is 2 F32 / 4 BF16 vectors. */
HRMT_AI void hrmt8_line_nt_f32(void *p, size_t j, __m256 v0, __m256 v1) {
    _mm256_stream_ps((float *)p + j, v0);
    _mm256_stream_ps((float *)p + j + 8, v1);
}
HRMT_AI void hrmt8_line_nt_bf16(void *p, size_t j, __m256 v0, __m256 v1, __m256 v2, __m256 v3) {
    const __m256i a =
        _mm256_inserti128_si256(_mm256_castsi128_si256(hrmt8_cvt_bf16(v0)), hrmt8_cvt_bf16(v1), 1);
    const __m256i b =
        _mm256_inserti128_si256(_mm256_castsi128_si256(hrmt8_cvt_bf16(v2)), hrmt8_cvt_bf16(v3), 1);
    _mm256_stream_si256((__m256i *)((uint16_t *)p + j), a);
    _mm256_stream_si256((__m256i *)((uint16_t *)p + j + 16), b);
}

/* Elements before p reaches a 64-byte line, or 32+ when it never will. */
HRMT_AI size_t hrmt8_nt_head(const void *p, int bf) {
    const size_t es = bf ? 2 : 4;
    const uintptr_t a = (uintptr_t)p;
    if (a % es) return 32;
    return ((64 - a % 64) % 64) / es;
}

/* Lanes >= n set to `fill` (for max / masked sums of tails). */
HRMT_AI __m256 hrmt8_keep(__m256 v, size_t n, __m256 fill) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 in = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), idx));
    return _mm256_blendv_ps(fill, v, in);
}

HRMT_AI float hrmt8_hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

HRMT_AI float hrmt8_hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Stores `cols` results of VEXPR (an __m256 expression of j_ and n_, the
 * element index and lane count) into `out`. With `nt`: partial vectors up to
 * the first 64-byte line, then whole lines with streaming stores; then full
 * vectors and a partial tail. Same arithmetic on every path, so `nt` never
 * changes bits. */
#define HRMT_AVX2_STORE_ROW(cols, out, bf, nt, VEXPR)                  \
    do {                                                               \
        size_t j_ = 0;                                                 \
        const size_t c_ = (cols), line_ = (bf) ? 32 : 16;              \
        int nt_ = (nt);                                                \
        size_t head_ = nt_ ? hrmt8_nt_head((out), (bf)) : 0;           \
        if (head_ >= line_) nt_ = 0, head_ = 0;                        \
        if (head_ > c_) head_ = c_;                                    \
        while (j_ < head_) {                                           \
            const size_t n_ = head_ - j_ < 8 ? head_ - j_ : 8;         \
            hrmt8_st((out), j_, (VEXPR), (bf), n_);                    \
            j_ += n_;                                                  \
        }                                                              \
        if (nt_) {                                                     \
            const size_t n_ = 8;                                       \
            for (; j_ + line_ <= c_; j_ += line_) {                    \
                const __m256 v0_ = (VEXPR);                            \
                j_ += 8;                                               \
                const __m256 v1_ = (VEXPR);                            \
                if (bf) {                                              \
                    j_ += 8;                                           \
                    const __m256 v2_ = (VEXPR);                        \
                    j_ += 8;                                           \
                    const __m256 v3_ = (VEXPR);                        \
                    j_ -= 24;                                          \
                    hrmt8_line_nt_bf16((out), j_, v0_, v1_, v2_, v3_); \
                } else {                                               \
                    j_ -= 8;                                           \
                    hrmt8_line_nt_f32((out), j_, v0_, v1_);            \
                }                                                      \
            }                                                          \
        }                                                              \
        for (; j_ + 8 <= c_; j_ += 8) {                                \
            const size_t n_ = 8;                                       \
            hrmt8_st((out), j_, (VEXPR), (bf), n_);                    \
        }                                                              \
        if (j_ < c_) {                                                 \
            const size_t n_ = c_ - j_;                                 \
            hrmt8_st((out), j_, (VEXPR), (bf), n_);                    \
        }                                                              \
    } while (0)

void hrmt_norm_fill_avx2(hrmt_rowops *t);
void hrmt_act_fill_avx2(hrmt_rowops *t);
void hrmt_softmax_fill_avx2(hrmt_rowops *t);
void hrmt_rope_fill_avx2(hrmt_rowops *t);
void hrmt_engram_fill_avx2(hrmt_rowops *t);

#endif
