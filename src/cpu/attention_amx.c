/* BF16 attention of one (sample, head) on AMX tiles, for the amx table:
 *     S = Q K^T on the bf16_tile kernel (AMX's K order, F32 scores);
 *     P = softmax(S * scale), the table's F32 softmax row op;
 *     O = P_hi V + P_mid V + P_lo V, P split into three BF16 parts that sum
 *         to P exactly: one F32 chain per output through the P_hi blocks,
 *         on through P_mid's and P_lo's (AMX's order over
 *         [P_hi | P_mid | P_lo] x [V; V; V]), rounded once.
 * With two parts (~16 bits of P, as the GPU's attend_tc) 5 of 16384 outputs
 * of a golden block differed from PyTorch's exact attention by an ulp and the
 * model drifted past the 1.5x bound on q_continue; the third part costs one
 * more pass of the small P V product. The avx512 table's F32 micro-kernel attention ran at ~85
 * GFLOP/s on two threads, ~23% of a batch-8 step (docs/BENCHMARKS.md). Everything depends on this
 * (sample, head)'s rows only, so tiered == baseline stays bitwise; tests/test_model_golden.c checks
 * it against a scalar AMX-order reference bit for bit. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "core/backend.h"

#define TB ((size_t)32) /* the tile kernel's MR = NR = K block */

static size_t up32(size_t x) { return (x + TB - 1) / TB * TB; }

static __mmask16 mask16(size_t n) { return (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u); }

/* K [T, d] as the kernel's W panels: panel j = keys 32j..32j+31, per k pair p
 * the 32 keys' words (K[key][2p] low, K[key][2p+1] high), 16 keys a gather.
 * Keys past T and pairs past d/2 are zero. */
static void pack_k(size_t T, size_t d, const uint16_t *k, size_t ld, uint32_t *panels) {
    const size_t pairs = up32(d) / 2;
    const __m512i rows =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32((int)ld));
    for (size_t j = 0; j * TB < T; j++) {
        uint32_t *pj = panels + j * pairs * TB;
        for (size_t h = 0; h < 2; h++) {
            const size_t key0 = j * TB + h * 16;
            const size_t nv = key0 >= T ? 0 : T - key0;
            const __mmask16 mk = mask16(nv);
            for (size_t p = 0; p < pairs; p++) {
                __m512i w = _mm512_setzero_si512();
                if (nv && 2 * p < d)
                    w = _mm512_mask_i32gather_epi32(w, mk, rows, k + key0 * ld + 2 * p, 2);
                _mm512_storeu_si512(pj + p * TB + h * 16, w);
            }
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

/* The F32 values of 16 BF16 numbers. */
static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Rows [0, m) of P (F32, row stride ldp, T keys) as three A slivers of the
 * kernel's layout (per 32-key block, 32 rows of 32 BF16) whose sum is P:
 * hi = bf16(P), mid = bf16(P - hi), lo = bf16(P - hi - mid), each rounded to
 * nearest even by the hardware conversion (the differences are exact), so
 * the three carry P's 24-bit significand (denormals flushed). Rows past m
 * and keys past T are zero. */
static void pack_p(size_t m, size_t T, const float *P, size_t ldp, uint16_t *const sl[3]) {
    const size_t nblk = up32(T) / TB;
    for (size_t kb = 0; kb < nblk; kb++) {
        const size_t k0 = kb * TB, nk = T - k0;
        const __mmask16 m0 = mask16(nk), m1 = mask16(nk > 16 ? nk - 16 : 0);
        for (size_t i = 0; i < TB; i++) {
            __m512 x0 = _mm512_setzero_ps(), x1 = _mm512_setzero_ps();
            if (i < m) {
                x0 = _mm512_maskz_loadu_ps(m0, P + i * ldp + k0);
                x1 = _mm512_maskz_loadu_ps(m1, P + i * ldp + k0 + 16);
            }
            for (int part = 0; part < 3; part++) {
                const __m512i h = (__m512i)_mm512_cvtne2ps_pbh(x1, x0); /* x0 low, x1 high */
                _mm512_storeu_si512(sl[part] + kb * TB * TB + i * TB, h);
                x0 = _mm512_sub_ps(x0, widen(_mm512_castsi512_si256(h)));
                x1 = _mm512_sub_ps(x1, widen(_mm512_extracti64x4_epi64(h, 1)));
            }
        }
    }
}

static void bf16_attention__amx(const hrmt_gemm_kernels *t, size_t T, size_t d, const uint16_t *q,
                                const uint16_t *k, const uint16_t *v, size_t ld, float scale,
                                hrmt_attend_softmax_fn softmax, uint16_t *out, size_t ldo,
                                void *scratch) {
    const hrmt_gemm_ukernel *uk = &t->bf16_tile;
    const size_t Tp = up32(T), dp = up32(d), kmax = Tp > dp ? Tp : dp;
    char *base = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    float *S = (float *)base;
    uint32_t *KP = (uint32_t *)(base + (T * T * 4 + 63) / 64 * 64);
    uint16_t *VP = (uint16_t *)((char *)KP + Tp * dp * 2);
    uint16_t *A0 = (uint16_t *)((char *)VP + dp * Tp * 2);
    uint16_t *const sl[3] = {A0, A0 + TB * kmax, A0 + 2 * TB * kmax};
    float *part = (float *)(A0 + 3 * TB * kmax);
    pack_k(T, d, k, ld, KP);
    pack_v(T, d, v, ld, VP);
    t->tile_begin();
    for (size_t r0 = 0; r0 < T; r0 += TB) {
        const size_t mi = T - r0 < TB ? T - r0 : TB;
        uk->pack_a(mi, d, q + r0 * ld, HRMT_BF16, ld, A0);
        for (size_t j0 = 0; j0 < T; j0 += TB) {
            hrmt_gemm_ukr_out o;
            memset(&o, 0, sizeof o);
            o.partial = part;
            o.ld_partial = TB;
            o.final = 1;
            o.c = S + r0 * T + j0;
            o.ldc = T;
            o.c_dt = HRMT_F32;
            o.m = mi;
            o.n = T - j0 < TB ? T - j0 : TB;
            uk->run(dp, A0, KP + (j0 / TB) * (dp / 2) * TB, &o);
        }
    }
    /* Vector code only: the tile configuration stays loaded. */
    softmax(T, T, S, T, scale, S, T);
    for (size_t r0 = 0; r0 < T; r0 += TB) {
        const size_t mi = T - r0 < TB ? T - r0 : TB;
        pack_p(mi, T, S + r0 * T, T, sl);
        for (size_t c0 = 0; c0 < d; c0 += TB) {
            const uint16_t *w = VP + (c0 / TB) * Tp * TB;
            hrmt_gemm_ukr_out o;
            memset(&o, 0, sizeof o);
            o.partial = part;
            o.ld_partial = TB;
            o.m = mi;
            o.n = d - c0 < TB ? d - c0 : TB;
            uk->run(Tp, sl[0], w, &o); /* P_hi V into the partial tile */
            o.load = 1;
            uk->run(Tp, sl[1], w, &o); /* + P_mid V */
            o.final = 1;
            o.c = out + r0 * ldo + c0;
            o.ldc = ldo;
            o.c_dt = HRMT_BF16;
            uk->run(Tp, sl[2], w, &o); /* + P_lo V, rounded once */
        }
    }
    t->tile_end(NULL);
}

void hrmt_attention_fill_amx(hrmt_gemm_kernels *t) { t->attend_bf16 = bf16_attention__amx; }
