/* AVX-512 Engram gate forward and backward (maths in cpu/engram_common.h).
 * Row sums use two 16-lane accumulator sets (the even and the odd elements
 * in the forward); the element-wise parts keep the scalar reference's
 * operation order (no FMA), so out, grad_x, grad_k, grad_v and the
 * weight-gradient partials differ from it only through the row sums (rstd,
 * raw dot, dL/dg). */
#include "cpu/engram_common.h"
#include "cpu/prefetch_x86.h"
#include "cpu/simd_avx512.h"

/* 32 bf16 as two f32 vectors of the even and the odd elements: no lane
 * crossing, unlike widening 16 at a time. The row sums and the element-wise
 * output do not care about the order of elements within a vector. */
HRMT_AI __m512 even16(__m512i p) { return _mm512_castsi512_ps(_mm512_slli_epi32(p, 16)); }
HRMT_AI __m512 odd16(__m512i p) {
    return _mm512_castsi512_ps(_mm512_and_si512(p, _mm512_set1_epi32((int)0xffff0000u)));
}

/* 32 f32 results (even and odd elements) -> 32 bf16 in element order. */
HRMT_AI __m512i pack32_bf16(__m512 e, __m512 o, int hw) {
    if (hw) {
        const __mmask16 den = _mm512_fpclass_ps_mask(e, 0x20) | _mm512_fpclass_ps_mask(o, 0x20);
        if (!den) {
            const __m512i lo_hi = (__m512i)_mm512_cvtne2ps_pbh(o, e); /* e in words 0..15 */
            const __m512i inter =
                _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23,
                                 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
            return _mm512_permutexvar_epi16(inter, lo_hi);
        }
    }
    /* (e's bf16 in the low half) | (o's bf16 in the high half) */
    return _mm512_ternarylogic_epi32(_mm512_srli_epi32(hrmt_rne_hi16(e), 16), hrmt_rne_hi16(o),
                                     _mm512_set1_epi32((int)0xffff0000u), 0xF8);
}

/* One sweep over a row position range for two (token, head) pairs at once:
 * with `sums`, the row sums of pair i (sum x^2, sum k^2, sum x w k, written
 * to s[0..2]); with `outp`, the output row of pair i-1, whose gate is known:
 * out = bf16(x + g v) (x now in L1/L2). Reading the next pair while writing
 * the previous one keeps reads and streaming writes interleaved, as in a
 * copy, instead of alternating read-only and write-heavy phases. */
HRMT_AI void engram_sweep(int hw, int sums, int outp, size_t hidden, const uint16_t *xr,
                          const uint16_t *kr, const float *w, float *s, const uint16_t *xo,
                          const uint16_t *v, float g, uint16_t *o, int nt) {
    const __mmask16 all = (__mmask16)0xffff;
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    const __m512 gv = _mm512_set1_ps(g);
    const int stream = outp && nt && ((uintptr_t)o % 64) == 0;
    __m512 sx0 = _mm512_setzero_ps(), sx1 = sx0, sk0 = sx0, sk1 = sx0, d0 = sx0, d1 = sx0;
    size_t j = 0;
    for (; j + 32 <= hidden; j += 32) {
        if (sums) {
            hrmt_prefetch_l2(xr + j, HRMT_PF_AHEAD);
            hrmt_prefetch_l2(kr + j, HRMT_PF_AHEAD);
            const __m512i xp = _mm512_loadu_si512((const void *)(xr + j));
            const __m512i kp = _mm512_loadu_si512((const void *)(kr + j));
            const __m512 w0 = _mm512_loadu_ps(w + j), w1 = _mm512_loadu_ps(w + j + 16);
            const __m512 xa = even16(xp), xb = odd16(xp), ka = even16(kp), kb = odd16(kp);
            sx0 = _mm512_fmadd_ps(xa, xa, sx0);
            sx1 = _mm512_fmadd_ps(xb, xb, sx1);
            sk0 = _mm512_fmadd_ps(ka, ka, sk0);
            sk1 = _mm512_fmadd_ps(kb, kb, sk1);
            d0 = _mm512_fmadd_ps(_mm512_mul_ps(xa, _mm512_permutex2var_ps(w0, ie, w1)), ka, d0);
            d1 = _mm512_fmadd_ps(_mm512_mul_ps(xb, _mm512_permutex2var_ps(w0, io, w1)), kb, d1);
        }
        if (outp) {
            const __m512i xp = _mm512_loadu_si512((const void *)(xo + j));
            const __m512i vp = _mm512_loadu_si512((const void *)(v + j));
            const __m512 oe = _mm512_add_ps(even16(xp), _mm512_mul_ps(gv, even16(vp)));
            const __m512 oo = _mm512_add_ps(odd16(xp), _mm512_mul_ps(gv, odd16(vp)));
            const __m512i line = pack32_bf16(oe, oo, hw);
            if (stream)
                _mm512_stream_si512((void *)(o + j), line);
            else
                _mm512_storeu_si512((void *)(o + j), line);
        }
    }
    for (; j < hidden; j += 16) {
        const __mmask16 m = hidden - j >= 16 ? all : hrmt_m16(hidden - j);
        if (sums) {
            const __m512 xa = hrmt_ld16m(xr, j, 1, m), ka = hrmt_ld16m(kr, j, 1, m);
            sx0 = _mm512_fmadd_ps(xa, xa, sx0);
            sk0 = _mm512_fmadd_ps(ka, ka, sk0);
            d0 = _mm512_fmadd_ps(_mm512_mul_ps(xa, _mm512_maskz_loadu_ps(m, w + j)), ka, d0);
        }
        if (outp)
            hrmt_st16m(
                o, j,
                _mm512_add_ps(hrmt_ld16m(xo, j, 1, m), _mm512_mul_ps(gv, hrmt_ld16m(v, j, 1, m))),
                1, hw, m);
    }
    if (sums) {
        s[0] = hrmt_hsum(_mm512_add_ps(sx0, sx1));
        s[1] = hrmt_hsum(_mm512_add_ps(sk0, sk1));
        s[2] = hrmt_hsum(_mm512_add_ps(d0, d1));
    }
}

/* Pairs i = t * hc + h in order; sweep i computes pair i's sums and writes
 * pair i-1's output (the first only sums, a last one only writes). */
HRMT_AI void engram_fwd(int hw, size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                        const uint16_t *kv, const float *wf, float eps, float clamp, uint16_t *out,
                        float *dot, float *gate, float *rstd_x, float *rstd_k, int nt) {
    const float scale = hrmt_engram_scale(hidden);
    const size_t n = tokens * hc;
    if (n == 0) return;
    float g = 0.0f; /* gate of pair i-1 */
    for (size_t i = 0; i <= n; i++) {
        float s[3];
        if (i == 0) {
            engram_sweep(hw, 1, 0, hidden, x, kv, wf, s, NULL, NULL, 0.0f, NULL, 0);
        } else {
            const size_t p = i - 1, tp = p / hc;
            const uint16_t *xo = x + p * hidden, *v = kv + (tp * (hc + 1) + hc) * hidden;
            if (i < n) {
                const size_t t = i / hc, h = i % hc;
                engram_sweep(hw, 1, 1, hidden, x + i * hidden, kv + (t * (hc + 1) + h) * hidden,
                             wf + h * hidden, s, xo, v, g, out + p * hidden, nt);
            } else {
                engram_sweep(hw, 0, 1, hidden, NULL, NULL, NULL, NULL, xo, v, g, out + p * hidden,
                             nt);
            }
        }
        if (i == n) break;
        const float rx = hrmt_rms_inv(s[0], hidden, eps), rk = hrmt_rms_inv(s[1], hidden, eps);
        g = hrmt_engram_gate(hrmt_engram_d(s[2], rx, rk, scale), clamp);
        if (dot) dot[i] = s[2];
        if (gate) gate[i] = g;
        if (rstd_x) rstd_x[i] = rx;
        if (rstd_k) rstd_k[i] = rk;
    }
    if (nt) _mm_sfence();
}

HRMT_AI void engram_bwd(int hw, size_t tokens, size_t hc, size_t hidden, const uint16_t *grad_out,
                        const uint16_t *x, const uint16_t *kv, const float *wf, const float *dot,
                        const float *gate, const float *rstd_x, const float *rstd_k, float clamp,
                        uint16_t *grad_x, uint16_t *grad_kv, float *gw) {
    const float scale = hrmt_engram_scale(hidden), fh = (float)hidden;
    const __mmask16 all = (__mmask16)0xffff;
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h = 0; h < hc; h++) {
            const size_t th = t * hc + h;
            const uint16_t *go = grad_out + th * hidden, *xr = x + th * hidden;
            const uint16_t *kr = kv + (t * (hc + 1) + h) * hidden;
            const float *w = wf + h * hidden;
            __m512 a0 = _mm512_setzero_ps(), a1 = a0;
            size_t j = 0;
            for (; j + 32 <= hidden; j += 32) {
                a0 = _mm512_fmadd_ps(hrmt_ld16(go, j, 1), hrmt_ld16(v, j, 1), a0);
                a1 = _mm512_fmadd_ps(hrmt_ld16(go, j + 16, 1), hrmt_ld16(v, j + 16, 1), a1);
            }
            for (; j < hidden; j += 16) {
                const __mmask16 m = hidden - j >= 16 ? all : hrmt_m16(hidden - j);
                a0 = _mm512_fmadd_ps(hrmt_ld16m(go, j, 1, m), hrmt_ld16m(v, j, 1, m), a0);
            }
            const float dg = hrmt_hsum(_mm512_add_ps(a0, a1));
            const float rx = rstd_x[th], rk = rstd_k[th], raw = dot[th];
            const float coef = hrmt_engram_coef(dg, gate[th], raw, rx, rk, scale, clamp);
            const __m512 cf = _mm512_set1_ps(coef);
            const __m512 cx = _mm512_set1_ps(raw * rx * rx / fh),
                         ck = _mm512_set1_ps(raw * rk * rk / fh);
            uint16_t *gx = grad_x + th * hidden, *gk = grad_kv + (t * (hc + 1) + h) * hidden;
            float *gwr = gw + h * hidden;
            for (j = 0; j < hidden; j += 16) {
                const __mmask16 m = hidden - j >= 16 ? all : hrmt_m16(hidden - j);
                const __m512 xv = hrmt_ld16m(xr, j, 1, m), kvv = hrmt_ld16m(kr, j, 1, m);
                const __m512 wv = _mm512_maskz_loadu_ps(m, w + j), gov = hrmt_ld16m(go, j, 1, m);
                const __m512 dx = _mm512_sub_ps(_mm512_mul_ps(wv, kvv), _mm512_mul_ps(cx, xv));
                const __m512 dk = _mm512_sub_ps(_mm512_mul_ps(wv, xv), _mm512_mul_ps(ck, kvv));
                hrmt_st16m(gx, j, _mm512_add_ps(gov, _mm512_mul_ps(cf, dx)), 1, hw, m);
                hrmt_st16m(gk, j, _mm512_mul_ps(cf, dk), 1, hw, m);
                const __m512 gwv = _mm512_maskz_loadu_ps(m, gwr + j);
                _mm512_mask_storeu_ps(
                    gwr + j, m, _mm512_add_ps(gwv, _mm512_mul_ps(_mm512_mul_ps(cf, xv), kvv)));
            }
        }
        uint16_t *gv = grad_kv + (t * (hc + 1) + hc) * hidden;
        for (size_t j = 0; j < hidden; j += 16) {
            const __mmask16 m = hidden - j >= 16 ? all : hrmt_m16(hidden - j);
            __m512 acc = _mm512_setzero_ps();
            for (size_t h = 0; h < hc; h++)
                acc = _mm512_add_ps(
                    acc, _mm512_mul_ps(hrmt_ld16m(grad_out + (t * hc + h) * hidden, j, 1, m),
                                       _mm512_set1_ps(gate[t * hc + h])));
            hrmt_st16m(gv, j, acc, 1, hw, m);
        }
    }
}

static void bf16_engram_fwd__avx512_u32(size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                                        const uint16_t *kv, const float *wf, float eps, float clamp,
                                        uint16_t *out, float *dot, float *gate, float *rstd_x,
                                        float *rstd_k, int nt) {
    engram_fwd(0, tokens, hc, hidden, x, kv, wf, eps, clamp, out, dot, gate, rstd_x, rstd_k, nt);
}
static void bf16_engram_fwd__avx512bf16_u32(size_t tokens, size_t hc, size_t hidden,
                                            const uint16_t *x, const uint16_t *kv, const float *wf,
                                            float eps, float clamp, uint16_t *out, float *dot,
                                            float *gate, float *rstd_x, float *rstd_k, int nt) {
    engram_fwd(1, tokens, hc, hidden, x, kv, wf, eps, clamp, out, dot, gate, rstd_x, rstd_k, nt);
}
static void bf16_engram_bwd__avx512_u16(size_t tokens, size_t hc, size_t hidden,
                                        const uint16_t *grad_out, const uint16_t *x,
                                        const uint16_t *kv, const float *wf, const float *dot,
                                        const float *gate, const float *rstd_x, const float *rstd_k,
                                        float clamp, uint16_t *grad_x, uint16_t *grad_kv,
                                        float *gw) {
    engram_bwd(0, tokens, hc, hidden, grad_out, x, kv, wf, dot, gate, rstd_x, rstd_k, clamp, grad_x,
               grad_kv, gw);
}
static void bf16_engram_bwd__avx512bf16_u16(size_t tokens, size_t hc, size_t hidden,
                                            const uint16_t *grad_out, const uint16_t *x,
                                            const uint16_t *kv, const float *wf, const float *dot,
                                            const float *gate, const float *rstd_x,
                                            const float *rstd_k, float clamp, uint16_t *grad_x,
                                            uint16_t *grad_kv, float *gw) {
    engram_bwd(1, tokens, hc, hidden, grad_out, x, kv, wf, dot, gate, rstd_x, rstd_k, clamp, grad_x,
               grad_kv, gw);
}

void hrmt_engram_fill_avx512(hrmt_rowops *t, int hw) {
    t->engram_fwd = hw ? bf16_engram_fwd__avx512bf16_u32 : bf16_engram_fwd__avx512_u32;
    t->engram_bwd = hw ? bf16_engram_bwd__avx512bf16_u16 : bf16_engram_bwd__avx512_u16;
}
