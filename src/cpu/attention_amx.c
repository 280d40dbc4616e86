/* BF16 attention of one (sample, head) on AMX tiles, for the amx table:
 *     S = Q K^T on the tiles (AMX's K order, F32 scores);
 *     P = softmax(S * scale) in the F32 softmax row op's order and bits;
 *     O = P_hi V + P_mid V + P_lo V, P split into three BF16 parts that sum
 *         to P exactly: one F32 chain per output through the P_hi blocks,
 *         on through P_mid's and P_lo's (AMX's order over
 *         [P_hi | P_mid | P_lo] x [V; V; V]), rounded once.
 * With two parts (~16 bits of P, as the GPU's attend_tc) 5 of 16384 outputs
 * of a golden block differed from PyTorch's exact attention by an ulp and the
 * model drifted past the 1.5x bound on q_continue; the third part costs one
 * more pass of the small P V product. Everything depends on this (sample,
 * head)'s rows only, so tiered == baseline stays bitwise; tests/
 * test_attention_amx.c checks it against a scalar AMX-order reference bit
 * for bit.
 *
 * Per 32 query rows: Q's sliver, its 32 x Tp scores (tile stores straight
 * into a padded score block), the softmax of those rows written as P's three
 * parts straight into the A slivers, then O's 32-column tiles, each one run
 * over all 3 x Tp/32 K blocks with the tiles' sums kept in the C tiles.
 * Against the first version (table kernel calls: 27 a job, the three P V
 * parts through a stored partial tile, P stored and packed again, the row
 * op's softmax one latency-bound row at a time, K packed with gathers) a job
 * of 82 x 64 took about a third of the time (docs/AMX.md). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/backend.h"
#include "cpu/amx_tile.h"
#include "cpu/expf_avx512.h"
#include "cpu/gemm_avx512_common.h"
#include "cpu/softmax_order.h"

#define TB ((size_t)32)             /* tile rows = columns = K block */
#define BLOCK ((size_t)TB * TB * 2) /* bytes of a sliver's or a panel's K block */
#define AI static inline __attribute__((always_inline))

static size_t up32(size_t x) { return (x + TB - 1) / TB * TB; }

static __mmask16 mask16(size_t n) { return (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u); }

/* K [T, d] as W panels: panel j = keys 32j..32j+31, per k pair p the 32 keys'
 * words (K[key][2p] low, K[key][2p+1] high): K's rows read as 32-bit words,
 * transposed 16 x 16 at a time. Keys past T and pairs past d/2 are zero. */
static void pack_k(size_t T, size_t d, const uint16_t *k, size_t ld, uint32_t *panels) {
    const size_t pairs = up32(d) / 2, words = d / 2;
    for (size_t key0 = 0; key0 < up32(T); key0 += 16) {
        uint32_t *pj = panels + key0 / TB * pairs * TB + key0 % TB;
        for (size_t w0 = 0; w0 < pairs; w0 += 16) {
            const __mmask16 mw = mask16(words > w0 ? words - w0 : 0);
            __m512i r[16];
            for (size_t i = 0; i < 16; i++)
                r[i] = key0 + i < T ? _mm512_maskz_loadu_epi32(mw, k + (key0 + i) * ld + 2 * w0)
                                    : _mm512_setzero_si512();
            hrmt_gemm_transpose16__avx512(r);
            for (size_t c = 0; c < 16; c++) _mm512_storeu_si512(pj + (w0 + c) * TB, r[c]);
        }
    }
}

/* T rows of d elements of x (stride ld) rotated by RoPE into dst (stride
 * d): the rope row op's products and sums on the same lanes (rope_avx512.c,
 * BF16 with the hardware rounding: the same bits as the model's in-place
 * pass, which the tile attention replaces; the copy stays in L1 for the
 * packing). cos_t, sin_t: [T, d]. */
static void rope_copy(size_t T, size_t d, const uint16_t *x, size_t ld, const float *cos_t,
                      const float *sin_t, uint16_t *dst) {
    const size_t half = d / 2;
    for (size_t t = 0; t < T; t++) {
        const float *c = cos_t + t * d, *s = sin_t + t * d;
        const uint16_t *v = x + t * ld, *v2 = v + half;
        uint16_t *o = dst + t * d, *o2 = o + half;
        for (size_t i = 0; i < half; i += 16) {
            const __mmask16 m = mask16(half - i);
            const __m512 x1 = hrmt_ld16m(v, i, 1, m), x2 = hrmt_ld16m(v2, i, 1, m);
            const __m512 c1 = _mm512_maskz_loadu_ps(m, c + i), s1 = _mm512_maskz_loadu_ps(m, s + i);
            const __m512 c2 = _mm512_maskz_loadu_ps(m, c + half + i);
            const __m512 s2 = _mm512_maskz_loadu_ps(m, s + half + i);
            const __m512 nx2 = _mm512_xor_ps(x2, _mm512_set1_ps(-0.0f));
            const __m512 y1 = _mm512_add_ps(_mm512_mul_ps(x1, c1), _mm512_mul_ps(nx2, s1));
            const __m512 y2 = _mm512_add_ps(_mm512_mul_ps(x2, c2), _mm512_mul_ps(x1, s2));
            hrmt_st16m(o, i, y1, 1, 1, m);
            hrmt_st16m(o2, i, y2, 1, 1, m);
        }
    }
}

/* V^T as W panels (N = d, K = keys): panel c = columns 32c.., per key pair p
 * 32 words (V[2p][col] low, V[2p+1][col] high): rows 2p and 2p + 1
 * interleaved. Keys past T and columns past d are zero. */
static void pack_v(size_t T, size_t d, const uint16_t *v, size_t ld, uint16_t *panels) {
    /* Words n = 0..15 of the first (second) 16 columns: (a[n], b[n]) ((a[n + 16], b[n + 16]));
     * permutex2var indexes a as 0..31 and b as 32..63. */
    static const uint16_t lo_i[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    static const uint16_t hi_i[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                      53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                      27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
    const size_t kp = up32(T) / 2;
    const __m512i lo = _mm512_loadu_si512(lo_i), hi = _mm512_loadu_si512(hi_i);
    for (size_t c = 0; c * TB < d; c++) {
        const size_t nc = d - c * TB < TB ? d - c * TB : TB;
        const __mmask32 mc = nc == TB ? 0xffffffffu : (1u << nc) - 1u;
        uint16_t *pc = panels + c * kp * 2 * TB;
        for (size_t p = 0; p < kp; p++) {
            const size_t r0 = 2 * p, r1 = r0 + 1;
            const __m512i a = r0 < T ? _mm512_maskz_loadu_epi16(mc, v + r0 * ld + c * TB)
                                     : _mm512_setzero_si512();
            const __m512i b = r1 < T ? _mm512_maskz_loadu_epi16(mc, v + r1 * ld + c * TB)
                                     : _mm512_setzero_si512();
            _mm512_storeu_si512(pc + p * 2 * TB, _mm512_permutex2var_epi16(a, lo, b));
            _mm512_storeu_si512(pc + p * 2 * TB + TB, _mm512_permutex2var_epi16(a, hi, b));
        }
    }
}

/* C tiles 0..3 (C00, C01, C10, C11) = the sum over nblk K blocks of A
 * sliver block kb times W panel block kb % wrap, from zero, each tile adding
 * its blocks in increasing kb: AMX's order over A's whole K. A in tiles 4, 5,
 * B in 6, 7, in the order of gemm_amx.c's blocks_2x2 (tile registers are not
 * renamed: each load goes right after the last product that reads its tile,
 * and consecutive blocks run their products in orders that keep the TMUL
 * busy meanwhile). */
static void product_2x2(size_t nblk, const char *a, const char *b, size_t wrap) {
    const size_t a1 = BLOCK / 2;
    const char *const b_end = b + wrap * BLOCK;
    const char *bn = b;
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    TILE_LOAD(4, a, 64);
    TILE_LOAD(6, bn, 128);
    TILE_LOAD(7, bn + 64, 128);
    TILE_LOAD(5, a + a1, 64);
    size_t kb = 0;
    for (; kb + 2 <= nblk; kb += 2) {
        a += BLOCK; /* block kb + 1 */
        if ((bn += BLOCK) == b_end) bn = b;
        TILE_DP(0, 4, 6);
        TILE_DP(1, 4, 7);
        TILE_LOAD(4, a, 64);
        TILE_DP(3, 5, 7);
        TILE_LOAD(7, bn + 64, 128);
        TILE_DP(2, 5, 6);
        TILE_LOAD(5, a + a1, 64);
        TILE_LOAD(6, bn, 128);
        a += BLOCK; /* block kb + 2 */
        if ((bn += BLOCK) == b_end) bn = b;
        const int more = kb + 2 < nblk;
        TILE_DP(1, 4, 7);
        TILE_DP(0, 4, 6);
        if (more) TILE_LOAD(4, a, 64);
        TILE_DP(2, 5, 6);
        if (more) TILE_LOAD(6, bn, 128);
        TILE_DP(3, 5, 7);
        if (more) {
            TILE_LOAD(5, a + a1, 64);
            TILE_LOAD(7, bn + 64, 128);
        }
    }
    if (kb < nblk) { /* an odd last block, already loaded */
        TILE_DP(0, 4, 6);
        TILE_DP(1, 4, 7);
        TILE_DP(3, 5, 7);
        TILE_DP(2, 5, 6);
    }
}

AI __m256 add_halves(__m256 acc, __m512 e) {
    acc = _mm256_add_ps(acc, _mm512_castps512_ps256(e));
    return _mm256_add_ps(acc, _mm512_extractf32x8_ps(e, 1));
}

/* The F32 values of BF16 words w[0..15] of h (one vpermw into the upper
 * halves, the lower halves zeroed). */
AI __m512 widen(__m512i h, __m512i w) {
    return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xaaaaaaaau, w, h));
}

/* Softmax(scale * row) of R rows of S (stride lds, T scores each) in the
 * order and bits of the avx512 F32 softmax row op (softmax_avx512.c: max,
 * e = exp(scale * x - max) summed 16 at a time through one 8-lane
 * accumulator, low half then high, folded by hrmt_softmax_fold8, then
 * e * (1 / sum)), R independent rows interleaved so that their latency
 * chains overlap (one row alone is bound by them). e goes back into S; P is
 * written as its three BF16 parts (hi = bf16(P), mid = bf16(P - hi),
 * lo = bf16(P - hi - mid), the differences exact, hardware rounding to
 * nearest even, denormals flushed) to rows i.. of the slivers `a` (part q at
 * a + q * TB * Tp, per K block 32 rows of 32 BF16); keys past T are zero. */
AI void softmax_split(const int R, size_t T, size_t Tp, float *S, size_t lds, float scale,
                      uint16_t *a, size_t i) {
    const __m512 sc = _mm512_set1_ps(scale);
    /* word 2n + 1 <- word n (lo_w) or n + 16 (hi_w) */
    const __m512i lo_w = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7,
                                          0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    const __m512i hi_w = _mm512_add_epi16(lo_w, _mm512_set1_epi16(16));
    __m512 m0[4], m1[4], mx[4], inv[4];
    __m256 acc[4];
    for (int r = 0; r < R; r++) m0[r] = m1[r] = _mm512_set1_ps(-INFINITY);
    size_t j = 0;
    for (; j + 32 <= T; j += 32)
        for (int r = 0; r < R; r++) {
            const float *x = S + r * lds + j;
            m0[r] = _mm512_max_ps(m0[r], _mm512_mul_ps(sc, _mm512_loadu_ps(x)));
            m1[r] = _mm512_max_ps(m1[r], _mm512_mul_ps(sc, _mm512_loadu_ps(x + 16)));
        }
    for (; j < T; j += 16) {
        const __mmask16 m = mask16(T - j);
        for (int r = 0; r < R; r++)
            m0[r] = _mm512_mask_max_ps(
                m0[r], m, m0[r], _mm512_mul_ps(sc, _mm512_maskz_loadu_ps(m, S + r * lds + j)));
    }
    for (int r = 0; r < R; r++) {
        mx[r] = _mm512_set1_ps(_mm512_reduce_max_ps(_mm512_max_ps(m0[r], m1[r])));
        acc[r] = _mm256_setzero_ps();
    }
    /* scale * x - max <= 0 (or NaN) on every key: the overflow test of the
     * exp cannot fire. The upper half of e is added from its store (no
     * extract: the vector ports are this loop's bound). */
    for (j = 0; j + 16 <= T; j += 16)
        for (int r = 0; r < R; r++) {
            float *x = S + r * lds + j;
            const __m512 e =
                hrmt_expf16_fma_le100(_mm512_sub_ps(_mm512_mul_ps(sc, _mm512_loadu_ps(x)), mx[r]));
            _mm512_storeu_ps(x, e);
            acc[r] = _mm256_add_ps(acc[r], _mm512_castps512_ps256(e));
            acc[r] = _mm256_add_ps(acc[r], _mm256_loadu_ps(x + 8));
        }
    if (j < T) {
        const __mmask16 m = mask16(T - j);
        for (int r = 0; r < R; r++) {
            float *x = S + r * lds + j;
            const __m512 s = _mm512_mul_ps(sc, _mm512_maskz_loadu_ps(m, x));
            const __m512 e = _mm512_maskz_mov_ps(m, hrmt_expf16_fma_le100(_mm512_sub_ps(s, mx[r])));
            acc[r] = add_halves(acc[r], e);
            _mm512_storeu_ps(x, e); /* S has Tp >= j + 16 columns */
        }
    }
    for (int r = 0; r < R; r++) {
        float lanes[8];
        _mm256_storeu_ps(lanes, acc[r]);
        inv[r] = _mm512_set1_ps(1.0f / hrmt_softmax_fold8(lanes, T));
    }
    for (size_t k0 = 0; k0 < T; k0 += TB) {
        const size_t nk = T - k0;
        const __mmask16 k0m = mask16(nk), k1m = mask16(nk > 16 ? nk - 16 : 0);
        uint16_t *blk = a + k0 * TB + i * TB; /* block k0 / 32, row i */
        for (int r = 0; r < R; r++) {
            const float *x = S + r * lds + k0;
            __m512 x0 = _mm512_maskz_mul_ps(k0m, _mm512_loadu_ps(x), inv[r]);
            __m512 x1 = _mm512_maskz_mul_ps(k1m, _mm512_loadu_ps(x + 16), inv[r]);
            for (size_t q = 0; q < 3; q++) {
                const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0); /* x0 low, x1 high */
                _mm512_storeu_si512(blk + q * TB * Tp + r * TB, h);
                x0 = _mm512_sub_ps(x0, widen(h, lo_w));
                x1 = _mm512_sub_ps(x1, widen(h, hi_w));
            }
        }
    }
}

/* Rows [0, m) of the scores block S (stride Tp) as P's three parts in the
 * slivers `a`; rows m..31 of the slivers zero. */
static void softmax_rows(size_t m, size_t T, size_t Tp, float *S, float scale, uint16_t *a) {
    size_t i = 0;
    for (; i + 4 <= m; i += 4) softmax_split(4, T, Tp, S + i * Tp, Tp, scale, a, i);
    for (; i < m; i++) softmax_split(1, T, Tp, S + i * Tp, Tp, scale, a, i);
    for (size_t q = 0; q < 3; q++)
        for (size_t kb = 0; kb < Tp / TB; kb++)
            memset(a + q * TB * Tp + kb * TB * TB + m * TB, 0, (TB - m) * TB * 2);
}

/* Rows [0, m) and columns [0, n) of C tiles 0..3 to out (BF16, rounded once). */
static void put_out(size_t m, size_t n, uint16_t *out, size_t ldo) {
    float buf[4][256] __attribute__((aligned(64)));
    TILE_STORE(0, buf[0], 64);
    TILE_STORE(1, buf[1], 64);
    TILE_STORE(2, buf[2], 64);
    TILE_STORE(3, buf[3], 64);
    for (size_t r = 0; r < m; r++) {
        const float *s = buf[r / 16 * 2] + r % 16 * 16;
        const __m512 v0 = _mm512_load_ps(s), v1 = _mm512_load_ps(s + 256);
        uint16_t *o = out + r * ldo;
        if (n == TB) {
            hrmt_gemm_store_row32__avx512(v0, v1, o, HRMT_BF16, 0, 1);
        } else {
            hrmt_gemm_store16__avx512(v0, n, o, HRMT_BF16, 0);
            if (n > 16) hrmt_gemm_store16__avx512(v1, n - 16, o + 16, HRMT_BF16, 0);
        }
    }
}

static void bf16_attention__amx(const hrmt_gemm_kernels *t, size_t T, size_t d, const uint16_t *q,
                                const uint16_t *k, const uint16_t *v, size_t ld, float scale,
                                const float *rope_cos, const float *rope_sin, uint16_t *out,
                                size_t ldo, void *scratch) {
    const size_t Tp = up32(T), dp = up32(d), tb = Tp / TB;
    char *base = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *S = (float *)base;                              /* [32, Tp] scores of one row block */
    uint32_t *KP = (uint32_t *)(base + TB * Tp * 4);       /* Tp / 32 panels of dp / 2 pairs */
    uint16_t *VP = (uint16_t *)((char *)KP + Tp * dp * 2); /* dp / 32 panels of Tp / 2 pairs */
    uint16_t *A = (uint16_t *)((char *)VP + dp * Tp * 2);  /* Q's sliver, then [hi | mid | lo] */
    size_t ldqk = ld;                                      /* Q's and K's row stride */
    if (rope_cos) {
        uint16_t *qr = A + TB * (3 * Tp > dp ? 3 * Tp : dp), *kr = qr + T * d; /* rotated Q, K */
        rope_copy(T, d, q, ld, rope_cos, rope_sin, qr);
        rope_copy(T, d, k, ld, rope_cos, rope_sin, kr);
        q = qr;
        k = kr;
        ldqk = d;
    }
    pack_k(T, d, k, ldqk, KP);
    pack_v(T, d, v, ld, VP);
    t->tile_begin();
    for (size_t r0 = 0; r0 < T; r0 += TB) {
        const size_t mi = T - r0 < TB ? T - r0 : TB;
        t->bf16_tile.pack_a(mi, d, q + r0 * ldqk, HRMT_BF16, ldqk, A);
        for (size_t j = 0; j < tb; j++) {
            product_2x2(dp / TB, (const char *)A, (const char *)KP + j * (dp / TB) * BLOCK,
                        dp / TB);
            float *s = S + j * TB;
            TILE_STORE(0, s, Tp * 4);
            TILE_STORE(1, s + 16, Tp * 4);
            TILE_STORE(2, s + 16 * Tp, Tp * 4);
            TILE_STORE(3, s + 16 * Tp + 16, Tp * 4);
        }
        /* Vector code only: the tile configuration stays loaded. */
        softmax_rows(mi, T, Tp, S, scale, A);
        for (size_t c0 = 0; c0 < d; c0 += TB) {
            product_2x2(3 * tb, (const char *)A, (const char *)VP + c0 / TB * tb * BLOCK, tb);
            put_out(mi, d - c0 < TB ? d - c0 : TB, out + r0 * ldo + c0, ldo);
        }
    }
    t->tile_end(NULL);
}

void hrmt_attention_fill_amx(hrmt_gemm_kernels *t) { t->attend_bf16 = bf16_attention__amx; }
