/* Scalar reference: SwiGLU and softmax. exp is SLEEF's scalar Sleef_expf_u10
 * (1-ulp, the same on every libc), not libm's expf. */
#include <sleef.h>

#include "cpu/rowops_scalar.h"

/* silu(g) = g / (1 + exp(-g)), the form PyTorch's CPU kernel evaluates. */
static inline float silu(float g) { return g / (1.0f + Sleef_expf_u10(-g)); }

/* BF16 silu as the reference's PyTorch (1.13) evaluates it on bf16 vectors:
 * every op rounds to bf16, so exp(-g), 1 + e and the quotient each round. */
static inline float silu_bf16(float g) {
    const float e = hrmt_round_bf16(Sleef_expf_u10(-g));
    return hrmt_round_bf16(g / hrmt_round_bf16(1.0f + e));
}

static inline void swiglu_rows(int bf, size_t rows, size_t inter, const void *gu, size_t ldg,
                               void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *g = hrmt_row_c(gu, r, ldg, es);
        const void *u = (const char *)g + inter * es;
        void *o = hrmt_row(out, r, ldo, es);
        for (size_t j = 0; j < inter; j++) {
            const float s = bf ? silu_bf16(hrmt_ld(g, j, 1)) : silu(hrmt_ld(g, j, 0));
            hrmt_st(o, j, s * hrmt_ld(u, j, bf), bf);
        }
    }
}

static void f32_swiglu__scalar_u1(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                                  size_t ldo, int nt) {
    (void)nt;
    swiglu_rows(0, rows, inter, gu, ldg, out, ldo);
}
static void bf16_swiglu__scalar_u1(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                                   size_t ldo, int nt) {
    (void)nt;
    swiglu_rows(1, rows, inter, gu, ldg, out, ldo);
}

/* The max is NaN-propagating so a NaN anywhere in the row yields a NaN row
 * (it would through the sum anyway; this keeps SIMD orders irrelevant). */
static inline void softmax_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                                float scale, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *xr = hrmt_row_c(x, r, ldx, es);
        void *o = hrmt_row(out, r, ldo, es);
        float m = -INFINITY;
        for (size_t j = 0; j < cols; j++) {
            const float v = scale * hrmt_ld(xr, j, bf);
            if (v > m || v != v) m = v;
            if (m != m) break;
        }
        float sum = 0.0f;
        if (bf) {
            /* bf16 cannot park the unrounded exponentials: recompute them. */
            for (size_t j = 0; j < cols; j++) sum += Sleef_expf_u10(scale * hrmt_ld(xr, j, 1) - m);
            const float inv = 1.0f / sum;
            for (size_t j = 0; j < cols; j++)
                hrmt_st(o, j, Sleef_expf_u10(scale * hrmt_ld(xr, j, 1) - m) * inv, 1);
        } else {
            float *of = o;
            for (size_t j = 0; j < cols; j++) {
                of[j] = Sleef_expf_u10(scale * ((const float *)xr)[j] - m);
                sum += of[j];
            }
            const float inv = 1.0f / sum;
            for (size_t j = 0; j < cols; j++) of[j] *= inv;
        }
    }
}

static void f32_softmax__scalar_u1(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                   void *out, size_t ldo) {
    softmax_rows(0, rows, cols, x, ldx, scale, out, ldo);
}
static void bf16_softmax__scalar_u1(size_t rows, size_t cols, const void *x, size_t ldx,
                                    float scale, void *out, size_t ldo) {
    softmax_rows(1, rows, cols, x, ldx, scale, out, ldo);
}

void hrmt_act_fill_scalar(hrmt_rowops *t) {
    t->swiglu[HRMT_F32] = f32_swiglu__scalar_u1;
    t->swiglu[HRMT_BF16] = bf16_swiglu__scalar_u1;
    t->softmax[HRMT_F32] = f32_softmax__scalar_u1;
    t->softmax[HRMT_BF16] = bf16_softmax__scalar_u1;
}
