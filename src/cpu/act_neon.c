/* NEON SwiGLU. exp is SLEEF's 4-lane Sleef_expf4_u10 (1 ulp, like
 * the reference's scalar Sleef_expf_u10; the two may differ in the last bit).
 * Row tails shorter than a vector go through the same vector exp on a padded
 * copy, so every element of a row uses one exp whatever its column. */
#include <math.h>
#include <sleef.h>

#include "core/bf16.h"
#include "cpu/rowops_neon.h"

/* Loads n < 4 elements (F32 or BF16 storage) into a vector padded with `pad`. */
static inline float32x4_t ld_tail(const void *p, size_t n, int bf, float pad) {
    float t[4] = {pad, pad, pad, pad};
    for (size_t i = 0; i < n; i++)
        t[i] = bf ? hrmt_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
    return vld1q_f32(t);
}

static inline void st_tail(void *p, size_t n, float32x4_t v, int bf) {
    float t[4];
    vst1q_f32(t, v);
    for (size_t i = 0; i < n; i++) {
        if (bf)
            ((uint16_t *)p)[i] = hrmt_f32_to_bf16(t[i]);
        else
            ((float *)p)[i] = t[i];
    }
}

static inline const void *at(const void *p, size_t j, int bf) {
    return (const char *)p + j * (bf ? 2u : 4u);
}
static inline void *at_w(void *p, size_t j, int bf) { return (char *)p + j * (bf ? 2u : 4u); }

/* silu(g) * u with silu(g) = g / (1 + exp(-g)) (the reference's form); BF16
 * rounds exp(-g), 1 + e and the quotient each to bf16, as the scalar
 * reference (the reference PyTorch's bf16 vector ops). */
static inline float32x4_t swiglu4(float32x4_t g, float32x4_t u, int bf) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    float32x4_t e = Sleef_expf4_u10(vnegq_f32(g)), s;
    if (bf) {
        e = hrmt_neon_round_bf16(e);
        s = hrmt_neon_round_bf16(vdivq_f32(g, hrmt_neon_round_bf16(vaddq_f32(one, e))));
    } else {
        s = vdivq_f32(g, vaddq_f32(one, e));
    }
    return vmulq_f32(s, u);
}

static inline void swiglu_rows(int bf, size_t rows, size_t inter, const void *gu, size_t ldg,
                               void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *g = (const char *)gu + r * ldg * es;
        const void *u = (const char *)g + inter * es;
        void *o = (char *)out + r * ldo * es;
        size_t j = 0;
        for (; j + 8 <= inter; j += 8) {
            const float32x4_t s0 = swiglu4(hrmt_neon_ld4(g, j, bf), hrmt_neon_ld4(u, j, bf), bf);
            const float32x4_t s1 =
                swiglu4(hrmt_neon_ld4(g, j + 4, bf), hrmt_neon_ld4(u, j + 4, bf), bf);
            hrmt_neon_st4(o, j, s0, bf);
            hrmt_neon_st4(o, j + 4, s1, bf);
        }
        for (; j + 4 <= inter; j += 4)
            hrmt_neon_st4(o, j, swiglu4(hrmt_neon_ld4(g, j, bf), hrmt_neon_ld4(u, j, bf), bf), bf);
        if (j < inter) {
            const size_t n = inter - j;
            st_tail(
                at_w(o, j, bf), n,
                swiglu4(ld_tail(at(g, j, bf), n, bf, 0.0f), ld_tail(at(u, j, bf), n, bf, 0.0f), bf),
                bf);
        }
    }
}

static void f32_swiglu__neon_u8(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                                size_t ldo, int nt) {
    (void)nt;
    swiglu_rows(0, rows, inter, gu, ldg, out, ldo);
}
static void bf16_swiglu__neon_u8(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                                 size_t ldo, int nt) {
    (void)nt;
    swiglu_rows(1, rows, inter, gu, ldg, out, ldo);
}

void hrmt_act_fill_neon(hrmt_rowops *t) {
    t->swiglu[HRMT_F32] = f32_swiglu__neon_u8;
    t->swiglu[HRMT_BF16] = bf16_swiglu__neon_u8;
}
