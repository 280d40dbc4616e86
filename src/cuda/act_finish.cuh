/* One sample's end of an ACT step: q += bias (rounded to the forward dtype
 * when BF16), steps += 1, the halting rule (model/act.c). Shared by the
 * finish kernel and the fused heads kernel, so both give the same bits. */
#ifndef HRMT_CUDA_ACT_FINISH_CUH
#define HRMT_CUDA_ACT_FINISH_CUH

#include <stdint.h>

#include "cuda/bf16.cuh"

__device__ __forceinline__ void act_finish_sample(int s, float q0, float q1, float b0, float b1,
                                                  int bf, float *q, int32_t *steps, int32_t *halted,
                                                  int max_steps, int early) {
    float v0 = __fadd_rn(q0, b0), v1 = __fadd_rn(q1, b1);
    if (bf) {
        v0 = __uint_as_float((uint32_t)hrmt_cu_f32_to_bf16(v0) << 16);
        v1 = __uint_as_float((uint32_t)hrmt_cu_f32_to_bf16(v1) << 16);
    }
    q[2 * s] = v0;
    q[2 * s + 1] = v1;
    const int st = steps[s] + 1;
    steps[s] = st;
    int halt = st >= max_steps;
    if (early && max_steps > 1 && v0 > v1) halt = 1;
    halted[s] = halt;
}

#endif
