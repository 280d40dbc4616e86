/* The row statistics of the two-CTA projection + norm kernel
 * (proj_norm_wgmma.cu), per thread of the wgmma accumulator layout, as
 * __host__ __device__ functions: the kernel calls them, and
 * tests/test_pair_norm_math.cu runs the same source on the host against the
 * CPU's residual add and rmsnorm, so the lane mapping, the hand-over between
 * the CTAs and the fold are checked without a GPU.
 *
 * rowops_norm.cu's register form: lane l of the reference's 32 accumulator
 * lanes sums x[g 32 + l]^2 over the row's groups g in order from +0; the
 * quarters fold ((a_l + a_l+8) + a_l+16) + a_l+24 for l < 8; those eight are
 * summed from +0 in lane order; inv = 1 / sqrt(sum / H + eps). A thread (c =
 * lane % 4) of an m64nN accumulator holds, for row half hf, the columns
 * 8 i + 2 c + e of its n8 tiles i at acc[4 i + 2 hf + e]: reference lanes
 * 8 k + 2 c + e of groups i / 4 (k = i % 4). */
#ifndef HRMT_CUDA_SM90A_PAIR_NORM_MATH_CUH
#define HRMT_CUDA_SM90A_PAIR_NORM_MATH_CUH

#include "cuda/rowops_common.cuh"

namespace {

/* a[k][e]: lane 8 k + 2 c + e's chain over this CTA's GH groups in order
 * (n8 tiles i = 4 g + k of row half hf), on from from[8 k + e] (the other
 * CTA's value for that lane; NULL: +0). */
template <int GH>
HRMT_HD void pn_lane_chains(const float *acc, int hf, const float *from, float (&a)[4][2]) {
    namespace rc = hrmt_rowops_cuda;
    HRMT_UNROLL
    for (int k = 0; k < 4; k++) HRMT_UNROLL
    for (int e = 0; e < 2; e++) {
        float v = from ? from[8 * k + e] : 0.0f;
        HRMT_UNROLL
        for (int g = 0; g < GH; g++) {
            const float x = acc[4 * (4 * g + k) + 2 * hf + e];
            v = rc::fadd(v, rc::fmul(x, x));
        }
        a[k][e] = v;
    }
}

/* The quarters folded: f[e] for reference lane 2 c + e. */
HRMT_HD void pn_fold(const float (&a)[4][2], float (&f)[2]) {
    namespace rc = hrmt_rowops_cuda;
    HRMT_UNROLL
    for (int e = 0; e < 2; e++)
        f[e] = rc::fadd(rc::fadd(rc::fadd(a[0][e], a[1][e]), a[2][e]), a[3][e]);
}

/* inv from the row's four threads' folds fq[c][e] (reference lanes 0..7 in
 * order). */
HRMT_HD float pn_inv(const float (&fq)[4][2], float H, float eps) {
    namespace rc = hrmt_rowops_cuda;
    float sum = 0.0f;
    HRMT_UNROLL
    for (int c = 0; c < 4; c++) HRMT_UNROLL
    for (int e = 0; e < 2; e++) sum = rc::fadd(sum, fq[c][e]);
    return rc::fdiv(1.0f, rc::fsqrt(rc::fadd(rc::fdiv(sum, H), eps)));
}

} // namespace

#endif
