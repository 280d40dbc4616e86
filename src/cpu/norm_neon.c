/* NEON rmsnorm and fused residual + rmsnorm (SRAM and DRAM forms).
 *
 * The sum of squares runs in the scalar reference's order (cpu/sumsq_order.h)
 * and the scale pass is the same multiply, so the results are the
 * reference's bits; both residual forms run the same reduction on the same h. */
#include "core/bf16.h"
#include "cpu/rowops_neon.h"
#include "cpu/sumsq_order.h"

static inline float32x4_t ld4(const void *p, size_t j, int bf) { return hrmt_neon_ld4(p, j, bf); }

static inline float ld1(const void *p, size_t j, int bf) {
    return bf ? hrmt_bf16_to_f32(((const uint16_t *)p)[j]) : ((const float *)p)[j];
}

static inline void st1(void *p, size_t j, float v, int bf) {
    if (bf)
        ((uint16_t *)p)[j] = hrmt_f32_to_bf16(v);
    else
        ((float *)p)[j] = v;
}

/* h = x + r, rounded to the storage dtype (exact for F32); r may be NULL (h = x). */
static inline float32x4_t h4(const void *x, const void *r, size_t j, int bf) {
    if (!r) return ld4(x, j, bf);
    const float32x4_t h = vaddq_f32(ld4(x, j, bf), ld4(r, j, bf));
    return bf ? hrmt_neon_round_bf16(h) : h;
}
static inline float h1(const void *x, const void *r, size_t j, int bf) {
    if (!r) return ld1(x, j, bf);
    const float h = ld1(x, j, bf) + ld1(r, j, bf);
    return bf ? hrmt_round_bf16(h) : h;
}

/* Sum of h*h over a row in the reference order (cpu/sumsq_order.h): the
 * squares of each 32-element group (rounded, no FMA) go through the shared
 * accumulator code; when `park` is set, h is also stored to `park` (the SRAM
 * form keeps the row in cache there). */
static inline float sumsq_row(const void *x, const void *r, size_t cols, int bf, void *park) {
    hrmt_sumsq s;
    hrmt_sumsq_init(&s, cols);
    float sq[HRMT_SUMSQ_GROUP];
    /* level 0 of the accumulators stays in registers between cascades */
    float32x4_t a[HRMT_SUMSQ_GROUP / 4];
    for (size_t v = 0; v < HRMT_SUMSQ_GROUP / 4; v++) a[v] = vdupq_n_f32(0.0f);
    size_t j = 0;
    for (; j + HRMT_SUMSQ_GROUP <= cols; j += HRMT_SUMSQ_GROUP) {
        for (size_t v = 0; v < HRMT_SUMSQ_GROUP; v += 4) {
            const float32x4_t h = h4(x, r, j + v, bf);
            a[v / 4] = vaddq_f32(a[v / 4], vmulq_f32(h, h));
            if (park) hrmt_neon_st4(park, j + v, h, bf);
        }
        if (hrmt_sumsq_tick(&s)) {
            for (size_t v = 0; v < HRMT_SUMSQ_GROUP / 4; v++) {
                vst1q_f32(s.acc[0] + 4 * v, a[v]);
                a[v] = vdupq_n_f32(0.0f);
            }
            hrmt_sumsq_cascade(&s);
        }
    }
    for (size_t v = 0; v < HRMT_SUMSQ_GROUP / 4; v++) vst1q_f32(s.acc[0] + 4 * v, a[v]);
    const size_t rest = cols - j;
    size_t v = 0;
    for (; v + 4 <= rest; v += 4) {
        const float32x4_t h = h4(x, r, j + v, bf);
        vst1q_f32(sq + v, vmulq_f32(h, h));
        if (park) hrmt_neon_st4(park, j + v, h, bf);
    }
    for (; v < rest; v++) {
        const float h = h1(x, r, j + v, bf);
        sq[v] = h * h;
        if (park) st1(park, j + v, h, bf);
    }
    return hrmt_sumsq_finish(&s, sq, rest);
}

/* o = h * inv [* w], h recomputed from x (+ r). */
static inline void scale_row(const void *x, const void *r, size_t cols, int bf, float inv,
                             const float *w, void *o) {
    const float32x4_t vi = vdupq_n_f32(inv);
    size_t j = 0;
    if (w) {
        for (; j + 8 <= cols; j += 8) {
            hrmt_neon_st4(o, j, vmulq_f32(vmulq_f32(h4(x, r, j, bf), vi), vld1q_f32(w + j)), bf);
            hrmt_neon_st4(o, j + 4,
                          vmulq_f32(vmulq_f32(h4(x, r, j + 4, bf), vi), vld1q_f32(w + j + 4)), bf);
        }
        for (; j + 4 <= cols; j += 4)
            hrmt_neon_st4(o, j, vmulq_f32(vmulq_f32(h4(x, r, j, bf), vi), vld1q_f32(w + j)), bf);
        for (; j < cols; j++) st1(o, j, h1(x, r, j, bf) * inv * w[j], bf);
    } else {
        for (; j + 8 <= cols; j += 8) {
            hrmt_neon_st4(o, j, vmulq_f32(h4(x, r, j, bf), vi), bf);
            hrmt_neon_st4(o, j + 4, vmulq_f32(h4(x, r, j + 4, bf), vi), bf);
        }
        for (; j + 4 <= cols; j += 4) hrmt_neon_st4(o, j, vmulq_f32(h4(x, r, j, bf), vi), bf);
        for (; j < cols; j++) st1(o, j, h1(x, r, j, bf) * inv, bf);
    }
}

static inline const void *row_c(const void *p, size_t r, size_t ld, int bf) {
    return (const char *)p + r * ld * (bf ? 2u : 4u);
}
static inline void *row(void *p, size_t r, size_t ld, int bf) {
    return (char *)p + r * ld * (bf ? 2u : 4u);
}

static inline void rmsnorm_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                const float *w, float eps, void *out, size_t ldo) {
    for (size_t r = 0; r < rows; r++) {
        const void *xr = row_c(x, r, ldx, bf);
        void *o = row(out, r, ldo, bf);
        const float inv = hrmt_rms_inv(sumsq_row(xr, NULL, cols, bf, NULL), cols, eps);
        scale_row(xr, NULL, cols, bf, inv, w, o);
    }
}

/* SRAM form: h is parked in `out` during the reduction, then scaled in place
 * while the row is still in L1/L2 (one pass over x and r). */
static inline void resid_sram_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                   const void *res, size_t ldr, float eps, void *out, size_t ldo) {
    for (size_t r = 0; r < rows; r++) {
        const void *xr = row_c(x, r, ldx, bf), *rr = row_c(res, r, ldr, bf);
        void *o = row(out, r, ldo, bf);
        const float inv = hrmt_rms_inv(sumsq_row(xr, rr, cols, bf, o), cols, eps);
        scale_row(o, NULL, cols, bf, inv, NULL, o);
    }
}

/* DRAM form: the reduction only reads; the scale pass recomputes h, so the
 * output is written once. AArch64 has no non-temporal store intrinsic in
 * ACLE (STNP is only a hint), so `nt` gives plain stores here. */
static inline void resid_dram_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                   const void *res, size_t ldr, float eps, void *out, size_t ldo) {
    for (size_t r = 0; r < rows; r++) {
        const void *xr = row_c(x, r, ldx, bf), *rr = row_c(res, r, ldr, bf);
        void *o = row(out, r, ldo, bf);
        const float inv = hrmt_rms_inv(sumsq_row(xr, rr, cols, bf, NULL), cols, eps);
        scale_row(xr, rr, cols, bf, inv, NULL, o);
    }
}

static void f32_rmsnorm__neon_u16(size_t rows, size_t cols, const void *x, size_t ldx,
                                  const float *w, float eps, void *out, size_t ldo) {
    rmsnorm_rows(0, rows, cols, x, ldx, w, eps, out, ldo);
}
static void bf16_rmsnorm__neon_u16(size_t rows, size_t cols, const void *x, size_t ldx,
                                   const float *w, float eps, void *out, size_t ldo) {
    rmsnorm_rows(1, rows, cols, x, ldx, w, eps, out, ldo);
}
static void f32_residual_rmsnorm_sram__neon_u16(size_t rows, size_t cols, const void *x, size_t ldx,
                                                const void *r, size_t ldr, float eps, void *out,
                                                size_t ldo) {
    resid_sram_rows(0, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}
static void bf16_residual_rmsnorm_sram__neon_u16(size_t rows, size_t cols, const void *x,
                                                 size_t ldx, const void *r, size_t ldr, float eps,
                                                 void *out, size_t ldo) {
    resid_sram_rows(1, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}
static void f32_residual_rmsnorm_dram__neon_u16(size_t rows, size_t cols, const void *x, size_t ldx,
                                                const void *r, size_t ldr, float eps, void *out,
                                                size_t ldo, int nt) {
    (void)nt;
    resid_dram_rows(0, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}
static void bf16_residual_rmsnorm_dram__neon_u16(size_t rows, size_t cols, const void *x,
                                                 size_t ldx, const void *r, size_t ldr, float eps,
                                                 void *out, size_t ldo, int nt) {
    (void)nt;
    resid_dram_rows(1, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}

void hrmt_norm_fill_neon(hrmt_rowops *t) {
    t->rmsnorm[HRMT_F32] = f32_rmsnorm__neon_u16;
    t->rmsnorm[HRMT_BF16] = bf16_rmsnorm__neon_u16;
    t->residual_rmsnorm_sram[HRMT_F32] = f32_residual_rmsnorm_sram__neon_u16;
    t->residual_rmsnorm_sram[HRMT_BF16] = bf16_residual_rmsnorm_sram__neon_u16;
    t->residual_rmsnorm_dram[HRMT_F32] = f32_residual_rmsnorm_dram__neon_u16;
    t->residual_rmsnorm_dram[HRMT_BF16] = bf16_residual_rmsnorm_dram__neon_u16;
}
