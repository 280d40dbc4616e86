/* Row-wise kernels, NEON table (AArch64 Advanced SIMD): copy, conversions,
 * add, embedding, memory streams, and the fill function that starts from the
 * scalar reference and replaces the entries that have NEON kernels. Every
 * kernel here is bit-identical to the scalar reference. */
#include <string.h>

#include "core/backend.h"
#include "core/bf16.h"
#include "cpu/rowops_neon.h"

static void copy__neon(void *dst, const void *src, size_t nbytes) { memcpy(dst, src, nbytes); }

static void f32_bf16_cvt__neon_u16(uint16_t *dst, const float *src, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint16x8_t lo = hrmt_neon_f32_to_bf16x8(vld1q_f32(src + i), vld1q_f32(src + i + 4));
        const uint16x8_t hi =
            hrmt_neon_f32_to_bf16x8(vld1q_f32(src + i + 8), vld1q_f32(src + i + 12));
        vst1q_u16(dst + i, lo);
        vst1q_u16(dst + i + 8, hi);
    }
    for (; i + 4 <= n; i += 4) hrmt_neon_st_bf16x4(dst + i, vld1q_f32(src + i));
    for (; i < n; i++) dst[i] = hrmt_f32_to_bf16(src[i]);
}

static void bf16_f32_cvt__neon_u16(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint16x8_t a = vld1q_u16(src + i), b = vld1q_u16(src + i + 8);
        vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(a), 16)));
        vst1q_f32(dst + i + 4, vreinterpretq_f32_u32(vshll_high_n_u16(a, 16)));
        vst1q_f32(dst + i + 8, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16)));
        vst1q_f32(dst + i + 12, vreinterpretq_f32_u32(vshll_high_n_u16(b, 16)));
    }
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, hrmt_neon_ld_bf16x4(src + i));
    for (; i < n; i++) dst[i] = hrmt_bf16_to_f32(src[i]);
}

static void f32_add__neon_u16(size_t rows, size_t cols, const void *a_, size_t lda, const void *b_,
                              size_t ldb, void *out_, size_t ldo) {
    for (size_t r = 0; r < rows; r++) {
        const float *a = (const float *)a_ + r * lda, *b = (const float *)b_ + r * ldb;
        float *o = (float *)out_ + r * ldo;
        size_t j = 0;
        for (; j + 16 <= cols; j += 16) {
            const float32x4_t s0 = vaddq_f32(vld1q_f32(a + j), vld1q_f32(b + j));
            const float32x4_t s1 = vaddq_f32(vld1q_f32(a + j + 4), vld1q_f32(b + j + 4));
            const float32x4_t s2 = vaddq_f32(vld1q_f32(a + j + 8), vld1q_f32(b + j + 8));
            const float32x4_t s3 = vaddq_f32(vld1q_f32(a + j + 12), vld1q_f32(b + j + 12));
            vst1q_f32(o + j, s0);
            vst1q_f32(o + j + 4, s1);
            vst1q_f32(o + j + 8, s2);
            vst1q_f32(o + j + 12, s3);
        }
        for (; j + 4 <= cols; j += 4)
            vst1q_f32(o + j, vaddq_f32(vld1q_f32(a + j), vld1q_f32(b + j)));
        for (; j < cols; j++) o[j] = a[j] + b[j];
    }
}

static void bf16_add__neon_u8(size_t rows, size_t cols, const void *a_, size_t lda, const void *b_,
                              size_t ldb, void *out_, size_t ldo) {
    for (size_t r = 0; r < rows; r++) {
        const uint16_t *a = (const uint16_t *)a_ + r * lda, *b = (const uint16_t *)b_ + r * ldb;
        uint16_t *o = (uint16_t *)out_ + r * ldo;
        size_t j = 0;
        for (; j + 8 <= cols; j += 8) {
            const uint16x8_t va = vld1q_u16(a + j), vb = vld1q_u16(b + j);
            const float32x4_t lo = vaddq_f32(hrmt_neon_bf16x4_to_f32(vget_low_u16(va)),
                                             hrmt_neon_bf16x4_to_f32(vget_low_u16(vb)));
            const float32x4_t hi = vaddq_f32(vreinterpretq_f32_u32(vshll_high_n_u16(va, 16)),
                                             vreinterpretq_f32_u32(vshll_high_n_u16(vb, 16)));
            vst1q_u16(o + j, hrmt_neon_f32_to_bf16x8(lo, hi));
        }
        for (; j + 4 <= cols; j += 4)
            hrmt_neon_st_bf16x4(o + j,
                                vaddq_f32(hrmt_neon_ld_bf16x4(a + j), hrmt_neon_ld_bf16x4(b + j)));
        for (; j < cols; j++)
            o[j] = hrmt_f32_to_bf16(hrmt_bf16_to_f32(a[j]) + hrmt_bf16_to_f32(b[j]));
    }
}

static void f32_f32_embedding__neon(size_t n, size_t cols, const void *table, size_t ldt,
                                    const int32_t *ids, void *out, size_t ldo) {
    for (size_t i = 0; i < n; i++)
        memcpy((float *)out + i * ldo, (const float *)table + (size_t)ids[i] * ldt,
               cols * sizeof(float));
}
static void bf16_bf16_embedding__neon(size_t n, size_t cols, const void *table, size_t ldt,
                                      const int32_t *ids, void *out, size_t ldo) {
    for (size_t i = 0; i < n; i++)
        memcpy((uint16_t *)out + i * ldo, (const uint16_t *)table + (size_t)ids[i] * ldt,
               cols * sizeof(uint16_t));
}
static void f32_bf16_embedding__neon(size_t n, size_t cols, const void *table, size_t ldt,
                                     const int32_t *ids, void *out, size_t ldo) {
    for (size_t i = 0; i < n; i++)
        f32_bf16_cvt__neon_u16((uint16_t *)out + i * ldo,
                               (const float *)table + (size_t)ids[i] * ldt, cols);
}
static void bf16_f32_embedding__neon(size_t n, size_t cols, const void *table, size_t ldt,
                                     const int32_t *ids, void *out, size_t ldo) {
    for (size_t i = 0; i < n; i++)
        bf16_f32_cvt__neon_u16((float *)out + i * ldo,
                               (const uint16_t *)table + (size_t)ids[i] * ldt, cols);
}

/* Four independent 128-bit XOR chains keep several loads in flight. */
static uint64_t stream_read__neon_u64b(const void *p, size_t nbytes) {
    const uint8_t *q = p;
    uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= nbytes; i += 64) {
        a0 = veorq_u64(a0, vreinterpretq_u64_u8(vld1q_u8(q + i)));
        a1 = veorq_u64(a1, vreinterpretq_u64_u8(vld1q_u8(q + i + 16)));
        a2 = veorq_u64(a2, vreinterpretq_u64_u8(vld1q_u8(q + i + 32)));
        a3 = veorq_u64(a3, vreinterpretq_u64_u8(vld1q_u8(q + i + 48)));
    }
    const uint64x2_t a = veorq_u64(veorq_u64(a0, a1), veorq_u64(a2, a3));
    uint64_t r = vgetq_lane_u64(a, 0) ^ vgetq_lane_u64(a, 1);
    for (; i < nbytes; i++) r ^= q[i];
    return r;
}

static void stream_write__neon_u64b(void *p, size_t nbytes, uint8_t v) {
    uint8_t *q = p;
    const uint8x16_t d = vdupq_n_u8(v);
    size_t i = 0;
    for (; i + 64 <= nbytes; i += 64) {
        vst1q_u8(q + i, d);
        vst1q_u8(q + i + 16, d);
        vst1q_u8(q + i + 32, d);
        vst1q_u8(q + i + 48, d);
    }
    for (; i < nbytes; i++) q[i] = v;
}

void hrmt_rowops_fill_neon(hrmt_rowops *t) {
    hrmt_rowops_fill_scalar(t);
    t->copy = copy__neon;
    t->cvt_f32_bf16 = f32_bf16_cvt__neon_u16;
    t->cvt_bf16_f32 = bf16_f32_cvt__neon_u16;
    t->add[HRMT_F32] = f32_add__neon_u16;
    t->add[HRMT_BF16] = bf16_add__neon_u8;
    t->embedding[HRMT_F32][HRMT_F32] = f32_f32_embedding__neon;
    t->embedding[HRMT_F32][HRMT_BF16] = f32_bf16_embedding__neon;
    t->embedding[HRMT_BF16][HRMT_F32] = bf16_f32_embedding__neon;
    t->embedding[HRMT_BF16][HRMT_BF16] = bf16_bf16_embedding__neon;
    t->stream_read = stream_read__neon_u64b;
    t->stream_write = stream_write__neon_u64b;
    hrmt_norm_fill_neon(t);
    hrmt_act_fill_neon(t);
    hrmt_softmax_fill_neon(t);
    hrmt_rope_fill_neon(t);
    hrmt_engram_fill_neon(t);
}
