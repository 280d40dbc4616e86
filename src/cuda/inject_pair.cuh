/* The levels' input injection on two BF16 values packed in 32 bits (low
 * half first): bf16(z + a), or bf16(z + bf16(a + b)) when THREE, each sum
 * one F32 add of BF16 operands rounded by the device's conversion, the
 * inner sum rounded before the outer add (the row-op add's bits, rounded as
 * two launches round them). One function for the injection kernel
 * (model_inject.cu) and the injections folded into other kernels'
 * epilogues (sm90a/cluster_norm_wgmma.cu, model_kernels.cu), so that every
 * form has the same bits by construction. */
#ifndef HRMT_CUDA_INJECT_PAIR_CUH
#define HRMT_CUDA_INJECT_PAIR_CUH

#include <stdint.h>

#include "cuda/rowops_common.cuh"

template <bool THREE>
__device__ __forceinline__ uint32_t inject_pair(uint32_t z, uint32_t a, uint32_t b) {
    namespace rc = hrmt_rowops_cuda;
    float s[2];
#pragma unroll
    for (int e = 0; e < 2; e++) {
        float t = rc::bf16_to_f((uint16_t)(a >> (16 * e)));
        if (THREE) t = rc::round_bf16_arith(rc::fadd(t, rc::bf16_to_f((uint16_t)(b >> (16 * e)))));
        s[e] = rc::fadd(rc::bf16_to_f((uint16_t)(z >> (16 * e))), t);
    }
    return rc::pack_bf16x2_arith(s[0], s[1]);
}

#endif
