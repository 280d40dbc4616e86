/* Scalar reference: half-split RoPE, y = x*cos + rotate_half(x)*sin in F32,
 * each product and the sum rounded separately (PyTorch's eager order). */
#include "cpu/rowops_scalar.h"

static inline void rope_rows(int bf, size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                             size_t ld_head, const float *cos_t, const float *sin_t, size_t ld_cs) {
    const size_t es = bf ? 2 : 4, half = hd / 2;
    for (size_t t = 0; t < tokens; t++) {
        const float *c = cos_t + t * ld_cs, *s = sin_t + t * ld_cs;
        for (size_t h = 0; h < heads; h++) {
            void *v = (char *)x + (t * ld_tok + h * ld_head) * es;
            for (size_t i = 0; i < half; i++) {
                const float x1 = hrmt_ld(v, i, bf), x2 = hrmt_ld(v, i + half, bf);
                const float a = x1 * c[i], b = -x2 * s[i];
                const float p = x2 * c[i + half], q = x1 * s[i + half];
                hrmt_st(v, i, a + b, bf);
                hrmt_st(v, i + half, p + q, bf);
            }
        }
    }
}

static void f32_rope__scalar_u1(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                                size_t ld_head, const float *c, const float *s, size_t ld_cs) {
    rope_rows(0, tokens, heads, hd, x, ld_tok, ld_head, c, s, ld_cs);
}
static void bf16_rope__scalar_u1(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                                 size_t ld_head, const float *c, const float *s, size_t ld_cs) {
    rope_rows(1, tokens, heads, hd, x, ld_tok, ld_head, c, s, ld_cs);
}

void hrmt_rope_fill_scalar(hrmt_rowops *t) {
    t->rope[HRMT_F32] = f32_rope__scalar_u1;
    t->rope[HRMT_BF16] = bf16_rope__scalar_u1;
}
