/* The block's residual add where a projection's epilogue does it (the sm_90a
 * projection + norm kernels), rounded as the launches round it: the GEMM
 * writes bf16(acc), the row kernel adds the residual and rounds again. */
#ifndef HRMT_CUDA_SM90A_NORM_EPILOGUE_CUH
#define HRMT_CUDA_SM90A_NORM_EPILOGUE_CUH

#include "cuda/rowops_common.cuh"

/* p0, p1 := bf16(r + bf16(p)) for two adjacent columns; r holds their BF16
 * residuals, p0's in the low half. Both roundings are paired conversions
 * (cvt.rn.bf16x2: RNE, the software rounding's bits for every non-NaN; the
 * row kernel rounds its sum the same way). Host and device: the host side
 * is what tests/test_pair_norm_math.cu checks. */
HRMT_HD void residual_pair(float &p0, float &p1, uint32_t r) {
    namespace rc = hrmt_rowops_cuda;
    const uint32_t pb = rc::pack_bf16x2_arith(p0, p1);
    const uint32_t sb =
        rc::pack_bf16x2_arith(rc::fadd(rc::ffrom(r << 16), rc::ffrom(pb << 16)),
                              rc::fadd(rc::ffrom(r & 0xffff0000u), rc::ffrom(pb & 0xffff0000u)));
    p0 = rc::ffrom(sb << 16);
    p1 = rc::ffrom(sb & 0xffff0000u);
}

#endif
