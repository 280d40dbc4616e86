/* Scalar reference: SwiGLU. exp has the bits of SLEEF's FMA expf, which the
 * SIMD tables and the reference PyTorch use (cpu/expf_fma.h). */
#include "cpu/expf_fma.h"
#include "cpu/rowops_scalar.h"

/* silu(g) = g / (1 + exp(-g)), the form PyTorch's CPU kernel evaluates. */
static inline float silu(float g) { return g / (1.0f + hrmt_expf_fma(-g)); }

/* BF16 silu as the reference's PyTorch (1.13) evaluates it on bf16 vectors:
 * every op rounds to bf16, so exp(-g), 1 + e and the quotient each round. */
static inline float silu_bf16(float g) {
    const float e = hrmt_round_bf16(hrmt_expf_fma(-g));
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

void hrmt_act_fill_scalar(hrmt_rowops *t) {
    t->swiglu[HRMT_F32] = f32_swiglu__scalar_u1;
    t->swiglu[HRMT_BF16] = bf16_swiglu__scalar_u1;
}
