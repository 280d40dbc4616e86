/* A 4 x 4 transpose of 32-bit words across the four threads of a quad
 * (lanes 4 r .. 4 r + 3, quad position c = lane % 4): thread c's word k
 * becomes thread k's word c. Two exchanges (partner lane ^ 2, then ^ 1),
 * each swapping the two words whose position bit differs from the thread's.
 *
 * Why: a wgmma accumulator thread holds the column pairs 8 i + 2 c of its
 * row; reading them as 4-byte words costs one load per pair. Thread c
 * instead reads 16-byte chunk 4 j + c (the pairs 8 (4 j + c) + 2 k, k =
 * 0..3) and the transpose hands each pair to its owner: 4x fewer memory
 * instructions, full 32-byte sectors (proj_norm_wgmma.cu's residual loads
 * and output stores, whose 4-byte form filled the LSU queue: ncu's
 * lg_throttle stall at batch 256, session 38). The same transpose turns
 * owned pairs back into chunks for 16-byte stores (it is its own inverse).
 *
 * The steps are __host__ __device__ so that tests/test_quad_transpose.cu
 * can run them over four emulated threads on the host. */
#ifndef HRMT_CUDA_SM90A_QUAD_TRANSPOSE_CUH
#define HRMT_CUDA_SM90A_QUAD_TRANSPOSE_CUH

#include <stdint.h>

#include "cuda/rowops_common.cuh"

namespace {

/* The exchange with partner c ^ m (m = 2, then 1) swaps words k and k + m
 * for the k with (k & m) == 0 (m = 2: k = 0, 1; m = 1: k = 0, 2): the
 * thread whose bit m is clear sends word k + m and receives into it, its
 * partner sends word k and receives into it. */
HRMT_HD int qt_k(int m, int t) { return m == 2 ? t : 2 * t; } /* t = 0, 1 */
HRMT_HD uint32_t qt_send(const uint32_t (&v)[4], int c, int m, int t) {
    const int k = qt_k(m, t);
    return (c & m) ? v[k] : v[k + m];
}
HRMT_HD void qt_recv(uint32_t (&v)[4], int c, int m, int t, uint32_t r) {
    const int k = qt_k(m, t);
    if (c & m)
        v[k] = r;
    else
        v[k + m] = r;
}

/* Every lane of the warp takes part (the shuffles are warp-wide). */
__device__ __forceinline__ void quad_transpose(uint32_t (&v)[4], int c) {
#pragma unroll
    for (int m = 2; m >= 1; m /= 2)
#pragma unroll
        for (int t = 0; t < 2; t++)
            qt_recv(v, c, m, t, __shfl_xor_sync(0xffffffffu, qt_send(v, c, m, t), m));
}

} // namespace

#endif
