/* AVX-512 Engram gate forward and backward (maths in cpu/engram_common.h).
 * Row sums use two 16-lane accumulator sets; the element-wise parts keep the
 * scalar reference's operation order (no FMA), so out, grad_x, grad_k,
 * grad_v and the weight-gradient partials differ from it only through the
 * row sums (rstd, raw dot, dL/dg). */
#include "cpu/engram_common.h"
#include "cpu/simd_avx512.h"

HRMT_AI void engram_fwd(int hw, size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                        const uint16_t *kv, const float *wf, float eps, float clamp, uint16_t *out,
                        float *dot, float *gate, float *rstd_x, float *rstd_k, int nt) {
    const float scale = hrmt_engram_scale(hidden);
    const __mmask16 all = (__mmask16)0xffff;
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h = 0; h < hc; h++) {
            const size_t th = t * hc + h;
            const uint16_t *xr = x + th * hidden, *kr = kv + (t * (hc + 1) + h) * hidden;
            const float *w = wf + h * hidden;
            __m512 sx0 = _mm512_setzero_ps(), sx1 = sx0, sk0 = sx0, sk1 = sx0, d0 = sx0, d1 = sx0;
            size_t j = 0;
            for (; j + 32 <= hidden; j += 32) {
                const __m512 xa = hrmt_ld16(xr, j, 1), xb = hrmt_ld16(xr, j + 16, 1);
                const __m512 ka = hrmt_ld16(kr, j, 1), kb = hrmt_ld16(kr, j + 16, 1);
                sx0 = _mm512_fmadd_ps(xa, xa, sx0);
                sx1 = _mm512_fmadd_ps(xb, xb, sx1);
                sk0 = _mm512_fmadd_ps(ka, ka, sk0);
                sk1 = _mm512_fmadd_ps(kb, kb, sk1);
                d0 = _mm512_fmadd_ps(_mm512_mul_ps(xa, _mm512_loadu_ps(w + j)), ka, d0);
                d1 = _mm512_fmadd_ps(_mm512_mul_ps(xb, _mm512_loadu_ps(w + j + 16)), kb, d1);
            }
            for (; j < hidden; j += 16) {
                const __mmask16 m = hidden - j >= 16 ? all : hrmt_m16(hidden - j);
                const __m512 xa = hrmt_ld16m(xr, j, 1, m), ka = hrmt_ld16m(kr, j, 1, m);
                sx0 = _mm512_fmadd_ps(xa, xa, sx0);
                sk0 = _mm512_fmadd_ps(ka, ka, sk0);
                d0 = _mm512_fmadd_ps(_mm512_mul_ps(xa, _mm512_maskz_loadu_ps(m, w + j)), ka, d0);
            }
            const float rx = hrmt_rms_inv(hrmt_hsum(_mm512_add_ps(sx0, sx1)), hidden, eps);
            const float rk = hrmt_rms_inv(hrmt_hsum(_mm512_add_ps(sk0, sk1)), hidden, eps);
            const float raw = hrmt_hsum(_mm512_add_ps(d0, d1));
            const float g = hrmt_engram_gate(hrmt_engram_d(raw, rx, rk, scale), clamp);
            const __m512 gv = _mm512_set1_ps(g);
            uint16_t *o = out + th * hidden;
            HRMT_AVX512_STORE_ROW(hidden, o, 1, hw, nt,
                                  _mm512_add_ps(hrmt_ld16m(xr, j_, 1, m_),
                                                _mm512_mul_ps(gv, hrmt_ld16m(v, j_, 1, m_))));
            if (dot) dot[th] = raw;
            if (gate) gate[th] = g;
            if (rstd_x) rstd_x[th] = rx;
            if (rstd_k) rstd_k[th] = rk;
        }
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
