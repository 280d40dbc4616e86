/* rmsnorm's sum of squares on a warp, in cpu/sumsq_order.h's order.
 *
 * That order keeps 32 independent lane accumulators (element g*32 + l of
 * whole group g goes to lane l) with a cascade of 4 levels per lane that
 * only ever mixes values of the same lane. So warp lane l runs exactly
 * lane l's chain (level adds and cascade included), reading element
 * g*32 + l (coalesced across the warp); the finish is the reference's:
 * lanes 0..7 add the leftover whole 8-vectors, then the other quarters
 * ((a + a[l+8]) + a[l+16]) + a[l+24] (shuffles), and lane 0 sums the
 * leftover elements then a[0..7] from 0. A row shorter than 8 with no whole
 * group is PyTorch's scalar path, done by lane 0. `sq(j)` returns the F32
 * square of element j (rounded product, no FMA). */
#ifndef HRMT_CUDA_ROWOPS_SUMSQ_CUH
#define HRMT_CUDA_ROWOPS_SUMSQ_CUH

#include "cuda/rowops_common.cuh"

namespace hrmt_rowops_cuda {

#define HRMT_SUMSQ_BATCH 8 /* groups whose loads are issued together */

HRMT_HD unsigned sumsq_power(size_t groups) {
    unsigned k = 1;
    while (k < 63 && ((size_t)1 << k) < groups) k++;
    const unsigned p = k / 4;
    return p > 4 ? p : 4;
}

/* One cascade step after `done` groups (a multiple of 2^power): level j-1
 * goes into level j while `done` is a multiple of level j's span. Written
 * out so the levels stay in registers. */
HRMT_HD void sumsq_cascade(float acc[4], size_t done, unsigned power) {
    const size_t mask = ((size_t)1 << power) - 1;
    acc[1] = fadd(acc[1], acc[0]);
    acc[0] = 0.0f;
    if (done & (mask << power)) return;
    acc[2] = fadd(acc[2], acc[1]);
    acc[1] = 0.0f;
    if (done & (mask << (2 * power))) return;
    acc[3] = fadd(acc[3], acc[2]);
    acc[2] = 0.0f;
}

/* Lane `lane`'s accumulator over the whole groups, levels added back in. */
template <class SQ>
HRMT_HD float sumsq_lane(size_t groups, unsigned lane, SQ sq) {
    const unsigned power = sumsq_power(groups);
    const size_t mask = ((size_t)1 << power) - 1;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    size_t g = 0;
    for (; g + HRMT_SUMSQ_BATCH <= groups; g += HRMT_SUMSQ_BATCH) {
        float v[HRMT_SUMSQ_BATCH];
        HRMT_UNROLL
        for (int k = 0; k < HRMT_SUMSQ_BATCH; k++) v[k] = sq((g + k) * 32 + lane);
        HRMT_UNROLL
        for (int k = 0; k < HRMT_SUMSQ_BATCH; k++) {
            acc[0] = fadd(acc[0], v[k]);
            if (((g + k + 1) & mask) == 0) sumsq_cascade(acc, g + k + 1, power);
        }
    }
    for (; g < groups; g++) {
        acc[0] = fadd(acc[0], sq(g * 32 + lane));
        if (((g + 1) & mask) == 0) sumsq_cascade(acc, g + 1, power);
    }
    return fadd(fadd(fadd(acc[0], acc[1]), acc[2]), acc[3]);
}

/* PyTorch's scalar path (no whole group, fewer than 8 elements). */
template <class SQ>
HRMT_HD float sumsq_short(size_t n, SQ sq) {
    float a4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const size_t whole = n / 4 * 4;
    for (size_t t = 0; t < whole; t++) a4[t % 4] = fadd(a4[t % 4], sq(t));
    for (size_t t = whole; t < n; t++) a4[0] = fadd(a4[0], sq(t));
    return fadd(fadd(fadd(a4[0], a4[1]), a4[2]), a4[3]);
}

#ifdef __CUDACC__
/* The row's sum of squares, returned to every lane of the warp. */
template <class SQ>
__device__ __forceinline__ float sumsq_warp(size_t cols, unsigned lane, SQ sq) {
    const size_t groups = cols / 32, nrest = cols % 32, base = groups * 32;
    if (groups == 0 && nrest < 8) {
        const float s = lane == 0 ? sumsq_short(nrest, sq) : 0.0f;
        return __shfl_sync(HRMT_FULL_MASK, s, 0);
    }
    float a = groups ? sumsq_lane(groups, lane, sq) : 0.0f;
    const size_t nvec = nrest / 8;
    if (lane < 8)
        for (size_t v = 0; v < nvec; v++) a = fadd(a, sq(base + v * 8 + lane));
    const float b1 = __shfl_down_sync(HRMT_FULL_MASK, a, 8);
    const float b2 = __shfl_down_sync(HRMT_FULL_MASK, a, 16);
    const float b3 = __shfl_down_sync(HRMT_FULL_MASK, a, 24);
    if (lane < 8) a = fadd(fadd(fadd(a, b1), b2), b3);
    float q[8];
    HRMT_UNROLL
    for (int l = 0; l < 8; l++) q[l] = __shfl_sync(HRMT_FULL_MASK, a, l);
    float s = 0.0f;
    if (lane == 0) {
        for (size_t t = nvec * 8; t < nrest; t++) s = fadd(s, sq(base + t));
        HRMT_UNROLL
        for (int l = 0; l < 8; l++) s = fadd(s, q[l]);
    }
    return __shfl_sync(HRMT_FULL_MASK, s, 0);
}

/* The register form's finish (rowops_norm.cu's norm_reg_kernel, the
 * persistent L-level kernel): lane l's plain sum `a` over g of its squares
 * g * 32 + l, the quarters folded ((a + a[l+8]) + a[l+16]) + a[l+24], lanes
 * 0..7 summed from 0 by every lane, then inv = 1 / sqrt(sum / cols + eps),
 * each op rounded once. Returned to every lane. */
__device__ __forceinline__ float rmsnorm_reg_inv(float a, float cols, float eps) {
    const float b1 = __shfl_down_sync(HRMT_FULL_MASK, a, 8);
    const float b2 = __shfl_down_sync(HRMT_FULL_MASK, a, 16);
    const float b3 = __shfl_down_sync(HRMT_FULL_MASK, a, 24);
    a = fadd(fadd(fadd(a, b1), b2), b3); /* used from lanes 0..7 only */
    float sum = 0.0f;
    HRMT_UNROLL
    for (int l = 0; l < 8; l++) sum = fadd(sum, __shfl_sync(HRMT_FULL_MASK, a, l));
    return fdiv(1.0f, fsqrt(fadd(fdiv(sum, cols), eps)));
}

/* rmsnorm_reg_inv of a row whose lane holds v[g] = h[g * 32 + lane] for
 * g < G (MAXG a bound known at compile time): the plain sum of squares in
 * g order, then the finish above. */
template <int MAXG>
__device__ __forceinline__ float rmsnorm_lanes_inv(const float (&v)[MAXG], int G, float cols,
                                                   float eps) {
    float a = 0.0f;
    HRMT_UNROLL
    for (int g = 0; g < MAXG; g++)
        if (g < G) a = fadd(a, fmul(v[g], v[g]));
    return rmsnorm_reg_inv(a, cols, eps);
}
#endif

} // namespace hrmt_rowops_cuda

#endif
