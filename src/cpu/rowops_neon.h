/* NEON (AArch64 Advanced SIMD) row-op helpers shared by the *_neon.c files,
 * and the per-file fill functions that together build the NEON table.
 *
 * BF16 <-> F32 conversions use integer shifts (no FEAT_BF16 needed) and give
 * exactly core/bf16.h's bits: round to nearest even, NaN keeps sign and upper
 * payload with the quiet bit set. Include only from files built for NEON. */
#ifndef HRMT_CPU_ROWOPS_NEON_H
#define HRMT_CPU_ROWOPS_NEON_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rowops.h"

void hrmt_norm_fill_neon(hrmt_rowops *t);
void hrmt_act_fill_neon(hrmt_rowops *t);
void hrmt_softmax_fill_neon(hrmt_rowops *t);
void hrmt_rope_fill_neon(hrmt_rowops *t);
void hrmt_engram_fill_neon(hrmt_rowops *t);

static inline float32x4_t hrmt_neon_bf16x4_to_f32(uint16x4_t h) {
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

static inline float32x4_t hrmt_neon_ld_bf16x4(const uint16_t *p) {
    return hrmt_neon_bf16x4_to_f32(vld1_u16(p));
}

/* f32 bits -> rounded bf16 bits in the low half of each 32-bit lane. */
static inline uint32x4_t hrmt_neon_f32_to_bf16_u32(float32x4_t f) {
    const uint32x4_t u = vreinterpretq_u32_f32(f);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    const uint32x4_t rounded = vaddq_u32(vaddq_u32(u, vdupq_n_u32(0x7fffu)), lsb);
    /* vceqq(f, f) is false exactly for NaN lanes. */
    const uint32x4_t is_num = vceqq_f32(f, f);
    const uint32x4_t quiet = vorrq_u32(u, vdupq_n_u32(0x00400000u));
    return vshrq_n_u32(vbslq_u32(is_num, rounded, quiet), 16);
}

static inline uint16x4_t hrmt_neon_f32_to_bf16x4(float32x4_t f) {
    return vmovn_u32(hrmt_neon_f32_to_bf16_u32(f));
}

static inline uint16x8_t hrmt_neon_f32_to_bf16x8(float32x4_t lo, float32x4_t hi) {
    return vuzp1q_u16(vreinterpretq_u16_u32(hrmt_neon_f32_to_bf16_u32(lo)),
                      vreinterpretq_u16_u32(hrmt_neon_f32_to_bf16_u32(hi)));
}

static inline void hrmt_neon_st_bf16x4(uint16_t *p, float32x4_t f) {
    vst1_u16(p, hrmt_neon_f32_to_bf16x4(f));
}

/* Loads 4 elements of a row stored as F32 (bf = 0) or BF16 (bf = 1) as F32;
 * `bf` is a compile-time constant at every call site. */
static inline float32x4_t hrmt_neon_ld4(const void *p, size_t i, int bf) {
    return bf ? hrmt_neon_ld_bf16x4((const uint16_t *)p + i) : vld1q_f32((const float *)p + i);
}

static inline void hrmt_neon_st4(void *p, size_t i, float32x4_t v, int bf) {
    if (bf)
        hrmt_neon_st_bf16x4((uint16_t *)p + i, v);
    else
        vst1q_f32((float *)p + i, v);
}

/* Rounds each lane to the nearest bf16-representable f32 (bf16 then back). */
static inline float32x4_t hrmt_neon_round_bf16(float32x4_t f) {
    return vreinterpretq_f32_u32(vshlq_n_u32(hrmt_neon_f32_to_bf16_u32(f), 16));
}

#endif
