/* NEON half-split RoPE: y1 = x1*c1 + (-x2)*s1, y2 = x2*c2 + x1*s2 with every
 * product and sum rounded separately (no fused multiply-add), so the result
 * is bit-identical to the scalar reference. */
#include "core/bf16.h"
#include "cpu/rowops_neon.h"

static inline void rope_vec(void *v, size_t i, size_t half, const float *c, const float *s,
                            int bf) {
    const float32x4_t x1 = hrmt_neon_ld4(v, i, bf), x2 = hrmt_neon_ld4(v, i + half, bf);
    const float32x4_t a = vmulq_f32(x1, vld1q_f32(c + i));
    const float32x4_t b = vmulq_f32(vnegq_f32(x2), vld1q_f32(s + i));
    const float32x4_t p = vmulq_f32(x2, vld1q_f32(c + i + half));
    const float32x4_t q = vmulq_f32(x1, vld1q_f32(s + i + half));
    hrmt_neon_st4(v, i, vaddq_f32(a, b), bf);
    hrmt_neon_st4(v, i + half, vaddq_f32(p, q), bf);
}

static inline float ld1(const void *p, size_t i, int bf) {
    return bf ? hrmt_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static inline void st1(void *p, size_t i, float x, int bf) {
    if (bf)
        ((uint16_t *)p)[i] = hrmt_f32_to_bf16(x);
    else
        ((float *)p)[i] = x;
}

static inline void rope_rows(int bf, size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                             size_t ld_head, const float *cos_t, const float *sin_t, size_t ld_cs) {
    const size_t es = bf ? 2 : 4, half = hd / 2;
    for (size_t t = 0; t < tokens; t++) {
        const float *c = cos_t + t * ld_cs, *s = sin_t + t * ld_cs;
        for (size_t h = 0; h < heads; h++) {
            void *v = (char *)x + (t * ld_tok + h * ld_head) * es;
            size_t i = 0;
            for (; i + 8 <= half; i += 8) {
                rope_vec(v, i, half, c, s, bf);
                rope_vec(v, i + 4, half, c, s, bf);
            }
            for (; i + 4 <= half; i += 4) rope_vec(v, i, half, c, s, bf);
            for (; i < half; i++) {
                const float x1 = ld1(v, i, bf), x2 = ld1(v, i + half, bf);
                const float a = x1 * c[i], b = -x2 * s[i];
                const float p = x2 * c[i + half], q = x1 * s[i + half];
                st1(v, i, a + b, bf);
                st1(v, i + half, p + q, bf);
            }
        }
    }
}

static void f32_rope__neon_u8(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                              size_t ld_head, const float *c, const float *s, size_t ld_cs) {
    rope_rows(0, tokens, heads, hd, x, ld_tok, ld_head, c, s, ld_cs);
}
static void bf16_rope__neon_u8(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                               size_t ld_head, const float *c, const float *s, size_t ld_cs) {
    rope_rows(1, tokens, heads, hd, x, ld_tok, ld_head, c, s, ld_cs);
}

void hrmt_rope_fill_neon(hrmt_rowops *t) {
    t->rope[HRMT_F32] = f32_rope__neon_u8;
    t->rope[HRMT_BF16] = bf16_rope__neon_u8;
}
