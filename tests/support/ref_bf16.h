/* Independent bf16 helpers for the tests: an integer-arithmetic round to
 * nearest even written separately from the library's (src/core/bf16.h), and
 * ulp distances on the bf16 and f32 number lines. */
#ifndef HRMT_TEST_REF_BF16_H
#define HRMT_TEST_REF_BF16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t ref_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float ref_float(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Keep the upper half; round up when the dropped half is above 0x8000, or
 * exactly 0x8000 with an odd kept half. NaN: keep sign/payload, set quiet bit. */
static inline uint16_t ref_f32_to_bf16(float f) {
    const uint32_t u = ref_bits(f);
    const uint32_t exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xffu && man != 0) return (uint16_t)((u >> 16) | 0x40u);
    uint32_t upper = u >> 16;
    const uint32_t lower = u & 0xffffu;
    if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u))) upper++;
    return (uint16_t)upper;
}
static inline float ref_bf16_to_f32(uint16_t h) { return ref_float((uint32_t)h << 16); }
static inline float ref_round_bf16(float f) { return ref_bf16_to_f32(ref_f32_to_bf16(f)); }

/* Position on a monotonic integer line (so +0 and -0 are both 0). */
static inline int64_t ref_ord_bf16(uint16_t h) {
    return (h & 0x8000u) ? -(int64_t)(h & 0x7fffu) : (int64_t)h;
}
static inline int64_t ref_ord_f32(float f) {
    const uint32_t u = ref_bits(f);
    return (u & 0x80000000u) ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}
static inline int ref_isnan_bf16(uint16_t h) { return (h & 0x7fffu) > 0x7f80u; }

#endif
