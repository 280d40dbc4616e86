/* NEON Engram gate forward and backward (maths in cpu/engram_common.h).
 * The per-(token, head) row sums (sum x^2, sum k^2, raw = sum x w k, and the
 * backward's sum go v) use four 4-lane accumulators in a fixed order; the
 * element-wise parts keep the reference's separate roundings, so given the
 * same sums they give the reference's bits. */
#include "core/bf16.h"
#include "cpu/engram_common.h"
#include "cpu/rowops_neon.h"

typedef struct {
    float sx, sk, raw;
} engram_sums;

static inline engram_sums fwd_sums(const uint16_t *x, const uint16_t *k, const float *w, size_t n) {
    float32x4_t sx = vdupq_n_f32(0.0f), sk = sx, rw = sx, sx1 = sx, sk1 = sx, rw1 = sx;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const uint16x8_t xv = vld1q_u16(x + j), kv = vld1q_u16(k + j);
        const float32x4_t x0 = hrmt_neon_bf16x4_to_f32(vget_low_u16(xv));
        const float32x4_t x1 = vreinterpretq_f32_u32(vshll_high_n_u16(xv, 16));
        const float32x4_t k0 = hrmt_neon_bf16x4_to_f32(vget_low_u16(kv));
        const float32x4_t k1 = vreinterpretq_f32_u32(vshll_high_n_u16(kv, 16));
        sx = vfmaq_f32(sx, x0, x0);
        sx1 = vfmaq_f32(sx1, x1, x1);
        sk = vfmaq_f32(sk, k0, k0);
        sk1 = vfmaq_f32(sk1, k1, k1);
        rw = vfmaq_f32(rw, vmulq_f32(x0, vld1q_f32(w + j)), k0);
        rw1 = vfmaq_f32(rw1, vmulq_f32(x1, vld1q_f32(w + j + 4)), k1);
    }
    for (; j + 4 <= n; j += 4) {
        const float32x4_t x0 = hrmt_neon_ld_bf16x4(x + j), k0 = hrmt_neon_ld_bf16x4(k + j);
        sx = vfmaq_f32(sx, x0, x0);
        sk = vfmaq_f32(sk, k0, k0);
        rw = vfmaq_f32(rw, vmulq_f32(x0, vld1q_f32(w + j)), k0);
    }
    engram_sums s = {vaddvq_f32(vaddq_f32(sx, sx1)), vaddvq_f32(vaddq_f32(sk, sk1)),
                     vaddvq_f32(vaddq_f32(rw, rw1))};
    for (; j < n; j++) {
        const float xv = hrmt_bf16_to_f32(x[j]), kvv = hrmt_bf16_to_f32(k[j]);
        s.sx += xv * xv;
        s.sk += kvv * kvv;
        s.raw += xv * w[j] * kvv;
    }
    return s;
}

static void bf16_engram_fwd__neon_u8(size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
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
            const engram_sums s = fwd_sums(xr, kr, wf + h * hidden, hidden);
            const float rx = hrmt_rms_inv(s.sx, hidden, eps), rk = hrmt_rms_inv(s.sk, hidden, eps);
            const float g = hrmt_engram_gate(hrmt_engram_d(s.raw, rx, rk, scale), clamp);
            const float32x4_t vg = vdupq_n_f32(g);
            uint16_t *o = out + th * hidden;
            size_t j = 0;
            for (; j + 8 <= hidden; j += 8) {
                const uint16x8_t xv = vld1q_u16(xr + j), vv = vld1q_u16(v + j);
                const float32x4_t lo =
                    vaddq_f32(hrmt_neon_bf16x4_to_f32(vget_low_u16(xv)),
                              vmulq_f32(vg, hrmt_neon_bf16x4_to_f32(vget_low_u16(vv))));
                const float32x4_t hi =
                    vaddq_f32(vreinterpretq_f32_u32(vshll_high_n_u16(xv, 16)),
                              vmulq_f32(vg, vreinterpretq_f32_u32(vshll_high_n_u16(vv, 16))));
                vst1q_u16(o + j, hrmt_neon_f32_to_bf16x8(lo, hi));
            }
            for (; j + 4 <= hidden; j += 4)
                hrmt_neon_st_bf16x4(o + j, vaddq_f32(hrmt_neon_ld_bf16x4(xr + j),
                                                     vmulq_f32(vg, hrmt_neon_ld_bf16x4(v + j))));
            for (; j < hidden; j++)
                o[j] = hrmt_f32_to_bf16(hrmt_bf16_to_f32(xr[j]) + g * hrmt_bf16_to_f32(v[j]));
            if (dot) dot[th] = s.raw;
            if (gate) gate[th] = g;
            if (rstd_x) rstd_x[th] = rx;
            if (rstd_k) rstd_k[th] = rk;
        }
    }
}

static inline float dot_bf16(const uint16_t *a, const uint16_t *b, size_t n) {
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const uint16x8_t av = vld1q_u16(a + j), bv = vld1q_u16(b + j);
        s0 = vfmaq_f32(s0, hrmt_neon_bf16x4_to_f32(vget_low_u16(av)),
                       hrmt_neon_bf16x4_to_f32(vget_low_u16(bv)));
        s1 = vfmaq_f32(s1, vreinterpretq_f32_u32(vshll_high_n_u16(av, 16)),
                       vreinterpretq_f32_u32(vshll_high_n_u16(bv, 16)));
    }
    for (; j + 4 <= n; j += 4)
        s0 = vfmaq_f32(s0, hrmt_neon_ld_bf16x4(a + j), hrmt_neon_ld_bf16x4(b + j));
    float s = vaddvq_f32(vaddq_f32(s0, s1));
    for (; j < n; j++) s += hrmt_bf16_to_f32(a[j]) * hrmt_bf16_to_f32(b[j]);
    return s;
}

static void bf16_engram_bwd__neon_u4(size_t tokens, size_t hc, size_t hidden,
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
            const float dg = dot_bf16(go, v, hidden);
            const float rx = rstd_x[th], rk = rstd_k[th], raw = dot[th];
            const float coef = hrmt_engram_coef(dg, gate[th], raw, rx, rk, scale, clamp);
            const float cx = raw * rx * rx / fh, ck = raw * rk * rk / fh;
            const float32x4_t vc = vdupq_n_f32(coef), vcx = vdupq_n_f32(cx), vck = vdupq_n_f32(ck);
            uint16_t *gx = grad_x + th * hidden, *gk = grad_kv + (t * (hc + 1) + h) * hidden;
            float *gwr = gw + h * hidden;
            size_t j = 0;
            for (; j + 4 <= hidden; j += 4) {
                const float32x4_t xv = hrmt_neon_ld_bf16x4(xr + j),
                                  kvv = hrmt_neon_ld_bf16x4(kr + j);
                const float32x4_t wv = vld1q_f32(w + j);
                const float32x4_t tx = vsubq_f32(vmulq_f32(wv, kvv), vmulq_f32(vcx, xv));
                const float32x4_t tk = vsubq_f32(vmulq_f32(wv, xv), vmulq_f32(vck, kvv));
                hrmt_neon_st_bf16x4(gx + j,
                                    vaddq_f32(hrmt_neon_ld_bf16x4(go + j), vmulq_f32(vc, tx)));
                hrmt_neon_st_bf16x4(gk + j, vmulq_f32(vc, tk));
                vst1q_f32(gwr + j,
                          vaddq_f32(vld1q_f32(gwr + j), vmulq_f32(vmulq_f32(vc, xv), kvv)));
            }
            for (; j < hidden; j++) {
                const float xv = hrmt_bf16_to_f32(xr[j]), kvv = hrmt_bf16_to_f32(kr[j]);
                gx[j] = hrmt_f32_to_bf16(hrmt_bf16_to_f32(go[j]) + coef * (w[j] * kvv - cx * xv));
                gk[j] = hrmt_f32_to_bf16(coef * (w[j] * xv - ck * kvv));
                gwr[j] += coef * xv * kvv;
            }
        }
        /* dL/dv: heads in ascending order per element, as the reference. */
        uint16_t *gv = grad_kv + (t * (hc + 1) + hc) * hidden;
        const uint16_t *gor = grad_out + t * hc * hidden;
        const float *gt = gate + t * hc;
        size_t j = 0;
        for (; j + 4 <= hidden; j += 4) {
            float32x4_t acc = vdupq_n_f32(0.0f);
            for (size_t h = 0; h < hc; h++)
                acc = vaddq_f32(
                    acc, vmulq_f32(hrmt_neon_ld_bf16x4(gor + h * hidden + j), vdupq_n_f32(gt[h])));
            hrmt_neon_st_bf16x4(gv + j, acc);
        }
        for (; j < hidden; j++) {
            float acc = 0.0f;
            for (size_t h = 0; h < hc; h++) acc += hrmt_bf16_to_f32(gor[h * hidden + j]) * gt[h];
            gv[j] = hrmt_f32_to_bf16(acc);
        }
    }
}

void hrmt_engram_fill_neon(hrmt_rowops *t) {
    t->engram_fwd = bf16_engram_fwd__neon_u8;
    t->engram_bwd = bf16_engram_bwd__neon_u4;
}
