/* F32 -> BF16 bits on the device: round to nearest even, a NaN stays a quiet
 * NaN (core/bf16.h's rule, so device and host round alike). */
#ifndef HRMT_CUDA_BF16_CUH
#define HRMT_CUDA_BF16_CUH

#include <stdint.h>

__device__ __forceinline__ uint16_t hrmt_cu_f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

#endif
