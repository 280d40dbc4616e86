/* The block's residual add where a projection's epilogue does it (the sm_90a
 * projection + norm kernels), rounded as the launches round it: the GEMM
 * writes bf16(acc), the row kernel adds the residual and rounds again. */
#ifndef HRMT_CUDA_SM90A_NORM_EPILOGUE_CUH
#define HRMT_CUDA_SM90A_NORM_EPILOGUE_CUH

#include "cuda/bf16.cuh"
#include "cuda/rowops_common.cuh"

/* p0, p1 := bf16(r + bf16(p)) for two adjacent columns; r holds their BF16
 * residuals, p0's in the low half. */
__device__ __forceinline__ void residual_pair(float &p0, float &p1, uint32_t r) {
    namespace rc = hrmt_rowops_cuda;
    float *p[2] = {&p0, &p1};
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const float pv = rc::bf16_to_f(hrmt_cu_f32_to_bf16(*p[e]));
        const float rv = rc::bf16_to_f((uint16_t)(e ? r >> 16 : r & 0xffffu));
        *p[e] = rc::bf16_to_f(hrmt_cu_f32_to_bf16(rc::fadd(rv, pv)));
    }
}

#endif
