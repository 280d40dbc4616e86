/* Scalar reference softmax, in the order of the reference PyTorch's (1.13)
 * AVX2 CPU kernel, which HRM's recurrence needs bit for bit
 * (tests/test_torch_rowops.c compares with PyTorch's own outputs):
 *   v = scale * x;  m = max v;  e = exp(v - m) (SLEEF's FMA expf bits);
 *   the sum in 8 lane accumulators, element j into lane j % 8 in increasing
 *   j, folded ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7));
 *   out = e * (1 / sum).
 * Every SIMD table follows the same order, so all give these bits. */
#include "cpu/expf_fma.h"
#include "cpu/rowops_scalar.h"
#include "cpu/softmax_order.h"

/* The max is NaN-propagating so a NaN anywhere in the row yields a NaN row. */
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
        float lanes[8] = {0};
        for (size_t j = 0; j < cols; j++) {
            const float e = hrmt_expf_fma(scale * hrmt_ld(xr, j, bf) - m);
            lanes[j % 8] += e;
            if (!bf) ((float *)o)[j] = e;
        }
        const float inv = 1.0f / hrmt_softmax_fold8(lanes, cols);
        /* bf16 cannot park the unrounded exponentials: recompute them. */
        for (size_t j = 0; j < cols; j++) {
            const float e = bf ? hrmt_expf_fma(scale * hrmt_ld(xr, j, 1) - m) : ((float *)o)[j];
            hrmt_st(o, j, e * inv, bf);
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

void hrmt_softmax_fill_scalar(hrmt_rowops *t) {
    t->softmax[HRMT_F32] = f32_softmax__scalar_u1;
    t->softmax[HRMT_BF16] = bf16_softmax__scalar_u1;
}
