/* Scalar reference: Engram gate forward and backward (maths in
 * cpu/engram_common.h). Row sums are plain left-to-right f32 sums. */
#include "cpu/engram_common.h"
#include "cpu/rowops_scalar.h"

static void bf16_engram_fwd__scalar_u1(size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                                       const uint16_t *kv, const float *wf, float eps, float clamp,
                                       uint16_t *out, float *dot, float *gate, float *rstd_x,
                                       float *rstd_k, int nt) {
    (void)nt;
    const float scale = hrmt_engram_scale(hidden);
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h = 0; h < hc; h++) {
            const size_t th = t * hc + h;
            const uint16_t *xr = x + th * hidden, *kr = kv + (t * (hc + 1) + h) * hidden;
            const float *w = wf + h * hidden;
            float sx = 0.0f, sk = 0.0f, raw = 0.0f;
            for (size_t j = 0; j < hidden; j++) {
                const float xv = hrmt_bf16_to_f32(xr[j]), kvv = hrmt_bf16_to_f32(kr[j]);
                sx += xv * xv;
                sk += kvv * kvv;
                raw += xv * w[j] * kvv;
            }
            const float rx = hrmt_rms_inv(sx, hidden, eps), rk = hrmt_rms_inv(sk, hidden, eps);
            const float g = hrmt_engram_gate(hrmt_engram_d(raw, rx, rk, scale), clamp);
            uint16_t *o = out + th * hidden;
            for (size_t j = 0; j < hidden; j++) {
                const float gv = g * hrmt_bf16_to_f32(v[j]);
                o[j] = hrmt_f32_to_bf16(hrmt_bf16_to_f32(xr[j]) + gv);
            }
            if (dot) dot[th] = raw;
            if (gate) gate[th] = g;
            if (rstd_x) rstd_x[th] = rx;
            if (rstd_k) rstd_k[th] = rk;
        }
    }
}

static void bf16_engram_bwd__scalar_u1(size_t tokens, size_t hc, size_t hidden,
                                       const uint16_t *grad_out, const uint16_t *x,
                                       const uint16_t *kv, const float *wf, const float *dot,
                                       const float *gate, const float *rstd_x, const float *rstd_k,
                                       float clamp, uint16_t *grad_x, uint16_t *grad_kv,
                                       float *gw) {
    const float scale = hrmt_engram_scale(hidden), fh = (float)hidden;
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h = 0; h < hc; h++) {
            const size_t th = t * hc + h;
            const uint16_t *go = grad_out + th * hidden, *xr = x + th * hidden;
            const uint16_t *kr = kv + (t * (hc + 1) + h) * hidden;
            const float *w = wf + h * hidden;
            float dg = 0.0f;
            for (size_t j = 0; j < hidden; j++)
                dg += hrmt_bf16_to_f32(go[j]) * hrmt_bf16_to_f32(v[j]);
            const float rx = rstd_x[th], rk = rstd_k[th], raw = dot[th];
            const float coef = hrmt_engram_coef(dg, gate[th], raw, rx, rk, scale, clamp);
            const float cx = raw * rx * rx / fh, ck = raw * rk * rk / fh;
            uint16_t *gx = grad_x + th * hidden, *gk = grad_kv + (t * (hc + 1) + h) * hidden;
            float *gwr = gw + h * hidden;
            for (size_t j = 0; j < hidden; j++) {
                const float xv = hrmt_bf16_to_f32(xr[j]), kvv = hrmt_bf16_to_f32(kr[j]);
                gx[j] = hrmt_f32_to_bf16(hrmt_bf16_to_f32(go[j]) + coef * (w[j] * kvv - cx * xv));
                gk[j] = hrmt_f32_to_bf16(coef * (w[j] * xv - ck * kvv));
                gwr[j] += coef * xv * kvv;
            }
        }
        uint16_t *gv = grad_kv + (t * (hc + 1) + hc) * hidden;
        for (size_t j = 0; j < hidden; j++) {
            float acc = 0.0f;
            for (size_t h = 0; h < hc; h++)
                acc += hrmt_bf16_to_f32(grad_out[(t * hc + h) * hidden + j]) * gate[t * hc + h];
            gv[j] = hrmt_f32_to_bf16(acc);
        }
    }
}

void hrmt_engram_fill_scalar(hrmt_rowops *t) {
    t->engram_fwd = bf16_engram_fwd__scalar_u1;
    t->engram_bwd = bf16_engram_bwd__scalar_u1;
}
