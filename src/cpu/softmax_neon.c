/* NEON softmax in the scalar reference's order (softmax_scalar.c): the 8 sum
 * lanes live in two 4-lane accumulators (lanes 0-3 and 4-7), which is exactly
 * that order; SLEEF's Sleef_expf4_u10 (AArch64: fused multiply-adds) gives
 * hrmt_expf_fma's bits. The row tail goes through the same vector exp on a
 * zero-padded copy. */
#include <math.h>
#include <sleef.h>

#include "core/bf16.h"
#include "cpu/rowops_neon.h"
#include "cpu/softmax_order.h"

/* Elements [j, j + n) of a row, n <= 8, as F32 in t[0..7], zero past n. */
static inline void ld_tail8(const void *p, size_t j, size_t n, int bf, float t[8]) {
    for (size_t i = 0; i < 8; i++)
        t[i] = i >= n ? 0.0f
               : bf   ? hrmt_bf16_to_f32(((const uint16_t *)p)[j + i])
                      : ((const float *)p)[j + i];
}

static inline float32x4_t sm_exp(float32x4_t x, float32x4_t vs, float32x4_t vm) {
    return Sleef_expf4_u10(vsubq_f32(vmulq_f32(vs, x), vm));
}

static inline float row_max(const void *x, size_t cols, float scale, int bf) {
    float m = -INFINITY;
    for (size_t j = 0; j < cols; j++) {
        const float v =
            scale * (bf ? hrmt_bf16_to_f32(((const uint16_t *)x)[j]) : ((const float *)x)[j]);
        if (v > m || v != v) m = v;
    }
    return m;
}

/* The exponentials of the tail [j, cols) in t[0..7] (zero past the row). */
static inline void tail_exp(const void *x, size_t j, size_t cols, int bf, float32x4_t vs,
                            float32x4_t vm, float t[8]) {
    const size_t n = cols - j;
    ld_tail8(x, j, n, bf, t);
    vst1q_f32(t, sm_exp(vld1q_f32(t), vs, vm));
    vst1q_f32(t + 4, sm_exp(vld1q_f32(t + 4), vs, vm));
    for (size_t i = n; i < 8; i++) t[i] = 0.0f;
}

/* Sum of the exponentials in the reference order; F32 parks them in `park`. */
static inline float exp_sum(const void *x, size_t cols, float32x4_t vs, float32x4_t vm, int bf,
                            float *park) {
    float32x4_t lo = vdupq_n_f32(0.0f), hi = lo;
    size_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        const float32x4_t e0 = sm_exp(hrmt_neon_ld4(x, j, bf), vs, vm);
        const float32x4_t e1 = sm_exp(hrmt_neon_ld4(x, j + 4, bf), vs, vm);
        lo = vaddq_f32(lo, e0);
        hi = vaddq_f32(hi, e1);
        if (park) {
            vst1q_f32(park + j, e0);
            vst1q_f32(park + j + 4, e1);
        }
    }
    if (j < cols) {
        float t[8];
        tail_exp(x, j, cols, bf, vs, vm, t);
        lo = vaddq_f32(lo, vld1q_f32(t));
        hi = vaddq_f32(hi, vld1q_f32(t + 4));
        if (park)
            for (size_t i = 0; j + i < cols; i++) park[j + i] = t[i];
    }
    float lanes[8];
    vst1q_f32(lanes, lo);
    vst1q_f32(lanes + 4, hi);
    return hrmt_softmax_fold8(lanes, cols);
}

static inline void softmax_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                float scale, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *xr = (const char *)x + r * ldx * es;
        void *o = (char *)out + r * ldo * es;
        const float32x4_t vs = vdupq_n_f32(scale), vm = vdupq_n_f32(row_max(xr, cols, scale, bf));
        if (!bf) {
            float *of = o;
            const float inv = 1.0f / exp_sum(xr, cols, vs, vm, 0, of);
            const float32x4_t vi = vdupq_n_f32(inv);
            size_t j = 0;
            for (; j + 4 <= cols; j += 4) vst1q_f32(of + j, vmulq_f32(vld1q_f32(of + j), vi));
            for (; j < cols; j++) of[j] *= inv;
            continue;
        }
        /* bf16 cannot park the unrounded exponentials: recompute them. */
        const float inv = 1.0f / exp_sum(xr, cols, vs, vm, 1, NULL);
        const float32x4_t vi = vdupq_n_f32(inv);
        size_t j = 0;
        for (; j + 4 <= cols; j += 4)
            hrmt_neon_st4(o, j, vmulq_f32(sm_exp(hrmt_neon_ld4(xr, j, 1), vs, vm), vi), 1);
        if (j < cols) {
            float t[8];
            tail_exp(xr, j, cols, 1, vs, vm, t);
            for (size_t i = 0; j + i < cols; i++)
                ((uint16_t *)o)[j + i] = hrmt_f32_to_bf16(t[i] * inv);
        }
    }
}

static void f32_softmax__neon_u8(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                 void *out, size_t ldo) {
    softmax_rows(0, rows, cols, x, ldx, scale, out, ldo);
}
static void bf16_softmax__neon_u8(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                  void *out, size_t ldo) {
    softmax_rows(1, rows, cols, x, ldx, scale, out, ldo);
}

void hrmt_softmax_fill_neon(hrmt_rowops *t) {
    t->softmax[HRMT_F32] = f32_softmax__neon_u8;
    t->softmax[HRMT_BF16] = bf16_softmax__neon_u8;
}
