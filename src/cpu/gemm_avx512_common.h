/* AVX-512 helpers shared by gemm_avx512.c and gemm_bf16_avx512.c (both built
 * with the avx512 flags; only reachable through the avx512 table). */
#ifndef HRMT_CPU_GEMM_AVX512_COMMON_H
#define HRMT_CPU_GEMM_AVX512_COMMON_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/gemm_common.h"
#include "cpu/simd_avx512.h"

/* Writes n <= 16 finished sums of one tile row to C (F32 or BF16, optionally
 * added to C first), with masked loads/stores so nothing past n is touched. */
static inline void hrmt_gemm_store16__avx512(__m512 s, size_t n, void *c, hrmt_dtype c_dt,
                                             int accumulate) {
    const __mmask16 k = (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u);
    if (c_dt == HRMT_F32) {
        float *cf = c;
        if (accumulate) s = _mm512_add_ps(_mm512_maskz_loadu_ps(k, cf), s);
        _mm512_mask_storeu_ps(cf, k, s);
    } else {
        uint16_t *ch = c;
        if (accumulate) s = _mm512_add_ps(hrmt_widen_bf16(_mm256_maskz_loadu_epi16(k, ch)), s);
        _mm256_mask_storeu_epi16(ch, k, hrmt_cvt_bf16(s, 0));
    }
}

/* Writes one whole 32-column row of finished sums (s0: columns 0..15, s1:
 * 16..31) to C: F32 or BF16, optionally added to C first. hw: round to BF16
 * with the AVX512_BF16 conversion (same bits; only where the CPU has it). */
static inline void hrmt_gemm_store_row32__avx512(__m512 s0, __m512 s1, void *c, hrmt_dtype c_dt,
                                                 int accumulate, int hw) {
    if (c_dt == HRMT_F32) {
        float *cf = c;
        if (accumulate) {
            s0 = _mm512_add_ps(_mm512_loadu_ps(cf), s0);
            s1 = _mm512_add_ps(_mm512_loadu_ps(cf + 16), s1);
        }
        _mm512_storeu_ps(cf, s0);
        _mm512_storeu_ps(cf + 16, s1);
    } else {
        uint16_t *ch = c;
        if (accumulate) {
            s0 = _mm512_add_ps(hrmt_widen_bf16(_mm256_loadu_si256((const void *)ch)), s0);
            s1 = _mm512_add_ps(hrmt_widen_bf16(_mm256_loadu_si256((const void *)(ch + 16))), s1);
        }
        const __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(hrmt_cvt_bf16(s0, hw)),
                                             hrmt_cvt_bf16(s1, hw), 1);
        _mm512_storeu_si512(ch, h);
    }
}

/* Finishes a 2-vector-wide (32 column) tile held in t (row stride 32). */
static inline void hrmt_gemm_store_tile32__avx512(const float *t, const hrmt_gemm_ukr_out *o) {
    const size_t esz = o->c_dt == HRMT_F32 ? 4 : 2;
    for (size_t i = 0; i < o->m; i++) {
        char *row = (char *)o->c + i * o->ldc * esz;
        hrmt_gemm_store16__avx512(_mm512_loadu_ps(t + i * 32), o->n, row, o->c_dt, o->accumulate);
        if (o->n > 16)
            hrmt_gemm_store16__avx512(_mm512_loadu_ps(t + i * 32 + 16), o->n - 16, row + 16 * esz,
                                      o->c_dt, o->accumulate);
    }
}

/* Finishes the first R (= the tile's valid rows, at most 14) rows of a
 * 32-column micro-kernel tile held in c0 (columns 0..15) and c1 (16..31):
 * whole final rows straight from the registers, else through the partial
 * tile or a stack tile for the column-edge store. */
static inline __attribute__((always_inline)) void hrmt_gemm_finish14x32__avx512(
    const __m512 *c0, const __m512 *c1, int R, const hrmt_gemm_ukr_out *o) {
    if (o->final && o->n == 32) {
        const size_t esz = o->c_dt == HRMT_F32 ? 4 : 2;
#pragma GCC unroll 14
        for (int i = 0; i < R; i++)
            hrmt_gemm_store_row32__avx512(c0[i], c1[i], (char *)o->c + (size_t)i * o->ldc * esz,
                                          o->c_dt, o->accumulate, 0);
        return;
    }
    float tile[14 * 32];
    float *dst = o->final ? tile : o->partial;
    const size_t ld = o->final ? 32 : o->ld_partial;
#pragma GCC unroll 14
    for (int i = 0; i < R; i++) {
        _mm512_storeu_ps(dst + (size_t)i * ld, c0[i]);
        _mm512_storeu_ps(dst + (size_t)i * ld + 16, c1[i]);
    }
    if (o->final) hrmt_gemm_store_tile32__avx512(tile, o);
}

/* Transposes 16 rows of 16 32-bit lanes in r[] (r[i] lane k -> r[k] lane i). */
static inline void hrmt_gemm_transpose16__avx512(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    /* Now r[4q + j] holds, in each 128-bit lane L, elements k = 4L + j' of
     * rows 4q..4q+3 for one j. Exchange 128-bit lanes across q. */
    for (int j = 0; j < 4; j++) {
        const __m512i a0 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x88);
        const __m512i a1 = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xdd);
        const __m512i a2 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x88);
        const __m512i a3 = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xdd);
        t[j] = _mm512_shuffle_i32x4(a0, a2, 0x88);
        t[j + 4] = _mm512_shuffle_i32x4(a1, a3, 0x88);
        t[j + 8] = _mm512_shuffle_i32x4(a0, a2, 0xdd);
        t[j + 12] = _mm512_shuffle_i32x4(a1, a3, 0xdd);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* Packs a sliver of mr <= 16 rows of 32-bit words, k-major: dst[k*mr + i] =
 * word k of row i, for k < kw. LOAD_ROW(i, k0, nk) gives words k0..k0+nk-1
 * of row i (zero past nk); ROW_AT(i, k0) is the address of word k0 of row i,
 * for prefetching two lines ahead (each row is a short stream the hardware
 * prefetcher does not pick up in time). Rows >= m are zero. */
#define HRMT_GEMM_PACK_WORDS16(mr, m, kw, dst, LOAD_ROW, ROW_AT)                     \
    do {                                                                             \
        const __mmask16 row_mask_ = (__mmask16)((1u << (mr)) - 1u);                  \
        for (size_t k0_ = 0; k0_ < (kw); k0_ += 16) {                                \
            const size_t nk_ = (kw)-k0_ < 16 ? (kw)-k0_ : 16;                        \
            __m512i r_[16];                                                          \
            for (size_t i_ = 0; i_ < (m); i_++)                                      \
                _mm_prefetch((const char *)ROW_AT(i_, k0_ + 32), _MM_HINT_T0);       \
            for (size_t i_ = 0; i_ < 16; i_++)                                       \
                r_[i_] = i_ < (m) ? LOAD_ROW(i_, k0_, nk_) : _mm512_setzero_si512(); \
            hrmt_gemm_transpose16__avx512(r_);                                       \
            uint32_t *d_ = (uint32_t *)(dst) + k0_ * (mr);                           \
            for (size_t k_ = 0; k_ < nk_; k_++)                                      \
                _mm512_mask_storeu_epi32(d_ + k_ * (mr), row_mask_, r_[k_]);         \
        }                                                                            \
    } while (0)

/* Runs ROWS(n) with n = min(m, 14) as a compile-time constant, so that a
 * 14-row micro-kernel computes only the rows of an edge tile it stores. */
#define HRMT_AVX512_BY_ROWS14(m, ROWS) \
    switch ((m) < 14 ? (m) : 14) {     \
    case 1: ROWS(1); break;            \
    case 2: ROWS(2); break;            \
    case 3: ROWS(3); break;            \
    case 4: ROWS(4); break;            \
    case 5: ROWS(5); break;            \
    case 6: ROWS(6); break;            \
    case 7: ROWS(7); break;            \
    case 8: ROWS(8); break;            \
    case 9: ROWS(9); break;            \
    case 10: ROWS(10); break;          \
    case 11: ROWS(11); break;          \
    case 12: ROWS(12); break;          \
    case 13: ROWS(13); break;          \
    default: ROWS(14); break;          \
    }

#endif
