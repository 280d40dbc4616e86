/* Scalar bf16 <-> f32 conversion, the reference every SIMD path must match.
 *
 * f32 -> bf16 rounds to nearest, ties to even (what PyTorch's .to(bfloat16)
 * does for finite values). Inf stays Inf. A NaN keeps its sign and upper
 * payload bits and gets the quiet bit set (0x0040), so a signalling NaN whose
 * payload lives only in the low 16 bits still comes out as a NaN, never Inf.
 * This is exactly what AVX512-BF16 vcvtneps2bf16 does for NaN, which lets the
 * SIMD tables use that instruction; it differs from PyTorch only in which NaN
 * bit pattern is produced (PyTorch canonicalises to 0x7FC0). f32 denormals
 * round like any other value (vcvtneps2bf16 flushes them, so its callers fix
 * those lanes up). */
#ifndef HRMT_CORE_BF16_H
#define HRMT_CORE_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t hrmt_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float hrmt_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float hrmt_bf16_to_f32(uint16_t h) { return hrmt_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t hrmt_f32_to_bf16(float f) {
    uint32_t u = hrmt_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    /* Adding 0x7fff plus the lowest kept bit rounds half to even; a carry out
     * of the mantissa correctly bumps the exponent (up to Inf). */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Rounds an f32 to the nearest bf16-representable f32 (same rules). */
static inline float hrmt_round_bf16(float f) { return hrmt_bf16_to_f32(hrmt_f32_to_bf16(f)); }

#endif
