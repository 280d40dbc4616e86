/* Scalar reference: rmsnorm and the fused residual + rmsnorm (SRAM and DRAM
 * forms). The sum of squares runs in the reference PyTorch's order
 * (cpu/sumsq_order.h), which every table shares. */
#include "cpu/rowops_scalar.h"
#include "cpu/sumsq_order.h"

/* h = x + r, rounded to the storage dtype (exact for F32). */
static inline float resid_h(const void *x, const void *r, size_t j, int bf) {
    const float h = hrmt_ld(x, j, bf) + hrmt_ld(r, j, bf);
    return bf ? hrmt_round_bf16(h) : h;
}

/* Sum of h*h over a row, h = x (r NULL) or x + r; with `park`, h is also
 * stored there in the storage dtype (exact). */
static inline float sumsq_row(int bf, size_t cols, const void *x, const void *r, void *park) {
    hrmt_sumsq s;
    hrmt_sumsq_init(&s, cols);
    float sq[HRMT_SUMSQ_GROUP] = {0};
    size_t j = 0;
    for (;;) {
        const size_t n = cols - j < HRMT_SUMSQ_GROUP ? cols - j : HRMT_SUMSQ_GROUP;
        for (size_t t = 0; t < n; t++) {
            const float h = r ? resid_h(x, r, j + t, bf) : hrmt_ld(x, j + t, bf);
            sq[t] = h * h;
            if (park) hrmt_st(park, j + t, h, bf);
        }
        if (n < HRMT_SUMSQ_GROUP) return hrmt_sumsq_finish(&s, sq, n);
        hrmt_sumsq_group(&s, sq);
        j += n;
    }
}

static inline void rmsnorm_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                const float *w, float eps, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *xr = hrmt_row_c(x, r, ldx, es);
        void *o = hrmt_row(out, r, ldo, es);
        const float inv = hrmt_rms_inv(sumsq_row(bf, cols, xr, NULL, NULL), cols, eps);
        if (w)
            for (size_t j = 0; j < cols; j++) hrmt_st(o, j, hrmt_ld(xr, j, bf) * inv * w[j], bf);
        else
            for (size_t j = 0; j < cols; j++) hrmt_st(o, j, hrmt_ld(xr, j, bf) * inv, bf);
    }
}

static void f32_rmsnorm__scalar_u1(size_t rows, size_t cols, const void *x, size_t ldx,
                                   const float *w, float eps, void *out, size_t ldo) {
    rmsnorm_rows(0, rows, cols, x, ldx, w, eps, out, ldo);
}
static void bf16_rmsnorm__scalar_u1(size_t rows, size_t cols, const void *x, size_t ldx,
                                    const float *w, float eps, void *out, size_t ldo) {
    rmsnorm_rows(1, rows, cols, x, ldx, w, eps, out, ldo);
}

/* SRAM form: h goes to `out` (exact: it is already in the storage dtype) and
 * is scaled there while the row is still in cache. */
static inline void resid_sram_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                   const void *res, size_t ldr, float eps, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *xr = hrmt_row_c(x, r, ldx, es), *rr = hrmt_row_c(res, r, ldr, es);
        void *o = hrmt_row(out, r, ldo, es);
        const float inv = hrmt_rms_inv(sumsq_row(bf, cols, xr, rr, o), cols, eps);
        for (size_t j = 0; j < cols; j++) hrmt_st(o, j, hrmt_ld(o, j, bf) * inv, bf);
    }
}

/* DRAM form: the reduction pass only reads; the scale pass recomputes h. */
static inline void resid_dram_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                   const void *res, size_t ldr, float eps, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *xr = hrmt_row_c(x, r, ldx, es), *rr = hrmt_row_c(res, r, ldr, es);
        void *o = hrmt_row(out, r, ldo, es);
        const float inv = hrmt_rms_inv(sumsq_row(bf, cols, xr, rr, NULL), cols, eps);
        for (size_t j = 0; j < cols; j++) hrmt_st(o, j, resid_h(xr, rr, j, bf) * inv, bf);
    }
}

static void f32_residual_rmsnorm_sram__scalar_u1(size_t rows, size_t cols, const void *x,
                                                 size_t ldx, const void *r, size_t ldr, float eps,
                                                 void *out, size_t ldo) {
    resid_sram_rows(0, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}
static void bf16_residual_rmsnorm_sram__scalar_u1(size_t rows, size_t cols, const void *x,
                                                  size_t ldx, const void *r, size_t ldr, float eps,
                                                  void *out, size_t ldo) {
    resid_sram_rows(1, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}
/* Plain C has no portable streaming store; `nt` only matters to SIMD tables. */
static void f32_residual_rmsnorm_dram__scalar_u1(size_t rows, size_t cols, const void *x,
                                                 size_t ldx, const void *r, size_t ldr, float eps,
                                                 void *out, size_t ldo, int nt) {
    (void)nt;
    resid_dram_rows(0, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}
static void bf16_residual_rmsnorm_dram__scalar_u1(size_t rows, size_t cols, const void *x,
                                                  size_t ldx, const void *r, size_t ldr, float eps,
                                                  void *out, size_t ldo, int nt) {
    (void)nt;
    resid_dram_rows(1, rows, cols, x, ldx, r, ldr, eps, out, ldo);
}

void hrmt_norm_fill_scalar(hrmt_rowops *t) {
    t->rmsnorm[HRMT_F32] = f32_rmsnorm__scalar_u1;
    t->rmsnorm[HRMT_BF16] = bf16_rmsnorm__scalar_u1;
    t->residual_rmsnorm_sram[HRMT_F32] = f32_residual_rmsnorm_sram__scalar_u1;
    t->residual_rmsnorm_sram[HRMT_BF16] = bf16_residual_rmsnorm_sram__scalar_u1;
    t->residual_rmsnorm_dram[HRMT_F32] = f32_residual_rmsnorm_dram__scalar_u1;
    t->residual_rmsnorm_dram[HRMT_BF16] = bf16_residual_rmsnorm_dram__scalar_u1;
}
