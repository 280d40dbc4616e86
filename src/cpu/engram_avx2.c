/* AVX2 Engram gate forward and backward (maths in cpu/engram_common.h);
 * element-wise parts in the scalar reference's order (no FMA), row sums with
 * two 8-lane accumulator sets. */
#include "cpu/engram_common.h"
#include "cpu/simd_avx2.h"

static void bf16_engram_fwd__avx2_u16(size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                                      const uint16_t *kv, const float *wf, float eps, float clamp,
                                      uint16_t *out, float *dot, float *gate, float *rstd_x,
                                      float *rstd_k, int nt) {
    const float scale = hrmt_engram_scale(hidden);
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h = 0; h < hc; h++) {
            const size_t th = t * hc + h;
            const uint16_t *xr = x + th * hidden, *kr = kv + (t * (hc + 1) + h) * hidden;
            const float *w = wf + h * hidden;
            __m256 sx0 = _mm256_setzero_ps(), sx1 = sx0, sk0 = sx0, sk1 = sx0, d0 = sx0, d1 = sx0;
            size_t j = 0;
            for (; j + 16 <= hidden; j += 16) {
                const __m256 xa = hrmt8_ld(xr, j, 1, 8), xb = hrmt8_ld(xr, j + 8, 1, 8);
                const __m256 ka = hrmt8_ld(kr, j, 1, 8), kb = hrmt8_ld(kr, j + 8, 1, 8);
                sx0 = _mm256_fmadd_ps(xa, xa, sx0);
                sx1 = _mm256_fmadd_ps(xb, xb, sx1);
                sk0 = _mm256_fmadd_ps(ka, ka, sk0);
                sk1 = _mm256_fmadd_ps(kb, kb, sk1);
                d0 = _mm256_fmadd_ps(_mm256_mul_ps(xa, _mm256_loadu_ps(w + j)), ka, d0);
                d1 = _mm256_fmadd_ps(_mm256_mul_ps(xb, _mm256_loadu_ps(w + j + 8)), kb, d1);
            }
            for (; j < hidden; j += 8) {
                const size_t n = hidden - j >= 8 ? 8 : hidden - j;
                const __m256 xa = hrmt8_ld(xr, j, 1, n), ka = hrmt8_ld(kr, j, 1, n);
                sx0 = _mm256_fmadd_ps(xa, xa, sx0);
                sk0 = _mm256_fmadd_ps(ka, ka, sk0);
                d0 = _mm256_fmadd_ps(_mm256_mul_ps(xa, hrmt8_ld(w, j, 0, n)), ka, d0);
            }
            const float rx = hrmt_rms_inv(hrmt8_hsum(_mm256_add_ps(sx0, sx1)), hidden, eps);
            const float rk = hrmt_rms_inv(hrmt8_hsum(_mm256_add_ps(sk0, sk1)), hidden, eps);
            const float raw = hrmt8_hsum(_mm256_add_ps(d0, d1));
            const float g = hrmt_engram_gate(hrmt_engram_d(raw, rx, rk, scale), clamp);
            const __m256 gv = _mm256_set1_ps(g);
            uint16_t *o = out + th * hidden;
            HRMT_AVX2_STORE_ROW(
                hidden, o, 1, nt,
                _mm256_add_ps(hrmt8_ld(xr, j_, 1, n_), _mm256_mul_ps(gv, hrmt8_ld(v, j_, 1, n_))));
            if (dot) dot[th] = raw;
            if (gate) gate[th] = g;
            if (rstd_x) rstd_x[th] = rx;
            if (rstd_k) rstd_k[th] = rk;
        }
    }
    if (nt) _mm_sfence();
}

static void bf16_engram_bwd__avx2_u8(size_t tokens, size_t hc, size_t hidden,
                                     const uint16_t *grad_out, const uint16_t *x,
                                     const uint16_t *kv, const float *wf, const float *dot,
                                     const float *gate, const float *rstd_x, const float *rstd_k,
                                     float clamp, uint16_t *grad_x, uint16_t *grad_kv, float *gw) {
    const float scale = hrmt_engram_scale(hidden), fh = (float)hidden;
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h = 0; h < hc; h++) {
            const size_t th = t * hc + h;
            const uint16_t *go = grad_out + th * hidden, *xr = x + th * hidden;
            const uint16_t *kr = kv + (t * (hc + 1) + h) * hidden;
            const float *w = wf + h * hidden;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0;
            size_t j = 0;
            for (; j + 16 <= hidden; j += 16) {
                a0 = _mm256_fmadd_ps(hrmt8_ld(go, j, 1, 8), hrmt8_ld(v, j, 1, 8), a0);
                a1 = _mm256_fmadd_ps(hrmt8_ld(go, j + 8, 1, 8), hrmt8_ld(v, j + 8, 1, 8), a1);
            }
            for (; j < hidden; j += 8) {
                const size_t n = hidden - j >= 8 ? 8 : hidden - j;
                a0 = _mm256_fmadd_ps(hrmt8_ld(go, j, 1, n), hrmt8_ld(v, j, 1, n), a0);
            }
            const float dg = hrmt8_hsum(_mm256_add_ps(a0, a1));
            const float rx = rstd_x[th], rk = rstd_k[th], raw = dot[th];
            const float coef = hrmt_engram_coef(dg, gate[th], raw, rx, rk, scale, clamp);
            const __m256 cf = _mm256_set1_ps(coef);
            const __m256 cx = _mm256_set1_ps(raw * rx * rx / fh),
                         ck = _mm256_set1_ps(raw * rk * rk / fh);
            uint16_t *gx = grad_x + th * hidden, *gk = grad_kv + (t * (hc + 1) + h) * hidden;
            float *gwr = gw + h * hidden;
            for (j = 0; j < hidden; j += 8) {
                const size_t n = hidden - j >= 8 ? 8 : hidden - j;
                const __m256 xv = hrmt8_ld(xr, j, 1, n), kvv = hrmt8_ld(kr, j, 1, n);
                const __m256 wv = hrmt8_ld(w, j, 0, n), gov = hrmt8_ld(go, j, 1, n);
                const __m256 dx = _mm256_sub_ps(_mm256_mul_ps(wv, kvv), _mm256_mul_ps(cx, xv));
                const __m256 dk = _mm256_sub_ps(_mm256_mul_ps(wv, xv), _mm256_mul_ps(ck, kvv));
                hrmt8_st(gx, j, _mm256_add_ps(gov, _mm256_mul_ps(cf, dx)), 1, n);
                hrmt8_st(gk, j, _mm256_mul_ps(cf, dk), 1, n);
                const __m256 gwv = hrmt8_ld(gwr, j, 0, n);
                hrmt8_st(gwr, j, _mm256_add_ps(gwv, _mm256_mul_ps(_mm256_mul_ps(cf, xv), kvv)), 0,
                         n);
            }
        }
        uint16_t *gv = grad_kv + (t * (hc + 1) + hc) * hidden;
        for (size_t j = 0; j < hidden; j += 8) {
            const size_t n = hidden - j >= 8 ? 8 : hidden - j;
            __m256 acc = _mm256_setzero_ps();
            for (size_t h = 0; h < hc; h++)
                acc = _mm256_add_ps(
                    acc, _mm256_mul_ps(hrmt8_ld(grad_out + (t * hc + h) * hidden, j, 1, n),
                                       _mm256_set1_ps(gate[t * hc + h])));
            hrmt8_st(gv, j, acc, 1, n);
        }
    }
}

void hrmt_engram_fill_avx2(hrmt_rowops *t) {
    t->engram_fwd = bf16_engram_fwd__avx2_u16;
    t->engram_bwd = bf16_engram_bwd__avx2_u8;
}
