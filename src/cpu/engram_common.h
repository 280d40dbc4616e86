/* Per-(token, head) scalar maths of the Engram gate, shared by every ISA so
 * that only the row reductions differ between tables.
 *
 * Forward (TileKernels engram_gate_ref), per token t and head h, j < H:
 *   rx = rsqrt(mean(x^2) + eps), rk = rsqrt(mean(k^2) + eps)
 *   raw = sum_j x_j w_j k_j            (w = f32(w_hidden) * f32(w_embed))
 *   d = raw * rx * rk * H^-0.5
 *   s = sign(d) * sqrt(max(|d|, clamp)),  g = sigmoid(s)
 *   out_j = bf16(x_j + g * v_j)        (v = kv[t, hc], shared by the heads)
 *
 * Backward, from go = dL/dout (derived by hand, checked against autograd's
 * golden vectors and a float64 finite difference in tests/test_engram.c):
 *   dL/dg = sum_j go_j v_j;  dL/ds = dL/dg * g (1 - g)
 *   dL/dd = dL/ds / (2 sqrt(|d|)) when |d| >= clamp and d != 0, else 0
 *           (clamp_min passes no gradient below the clamp; sign() has none)
 *   with coef = dL/dd * H^-0.5 * rx * rk and d(rx)/dx_j = -rx^3 x_j / H:
 *   dL/dx_j = go_j + coef * (w_j k_j - raw rx^2 / H * x_j)
 *   dL/dk_j =        coef * (w_j x_j - raw rk^2 / H * k_j)
 *   dL/dv_j = sum_h go[h]_j g[h]
 *   dL/dw_j = sum_t coef * x_j k_j   (then dL/dw_hidden = dL/dw * w_embed,
 *                                     dL/dw_embed = dL/dw * w_hidden) */
#ifndef HRMT_CPU_ENGRAM_COMMON_H
#define HRMT_CPU_ENGRAM_COMMON_H

#include <math.h>
#include <sleef.h>
#include <stddef.h>

/* H^-0.5 as PyTorch forms it: a double rounded once to f32. */
static inline float hrmt_engram_scale(size_t hidden) { return (float)(1.0 / sqrt((double)hidden)); }

static inline float hrmt_engram_d(float raw, float rx, float rk, float scale) {
    return raw * rx * rk * scale;
}

static inline float hrmt_engram_gate(float d, float clamp) {
    const float a = fabsf(d);
    const float c = a < clamp ? clamp : a;
    const float sg = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : d; /* 0 stays 0, NaN stays NaN */
    const float s = sqrtf(c) * sg;
    return 1.0f / (1.0f + Sleef_expf_u10(-s));
}

/* coef of the backward (see above), from dL/dg. */
static inline float hrmt_engram_coef(float dg, float g, float raw, float rx, float rk, float scale,
                                     float clamp) {
    const float ds = dg * g * (1.0f - g);
    const float d = hrmt_engram_d(raw, rx, rk, scale);
    const float a = fabsf(d);
    const float dd = (a >= clamp && d != 0.0f) ? ds * 0.5f / sqrtf(a) : 0.0f;
    return dd * scale * rx * rk;
}

#endif
