/* Where mma.sync's operands come from in a TMA stage of the 128-byte
 * swizzle, and where its results go among the wgmma accumulators, as
 * __host__ __device__ functions: sm90a/ring_mma.cuh calls them, and
 * tests/test_ring_mma_layout.cu runs them on the host against the PTX
 * semantics of ldmatrix and mma.m16n8k16 and the copy engine's swizzle, so
 * the layout is checked without a GPU.
 *
 * A stage's operand block is `rows` rows of 64 BF16 k (128 bytes) from a
 * 1024-byte boundary; ldmatrix.x4 takes four 8 x 8 matrices, the rows of
 * matrix j addressed by lanes 8 j .. 8 j + 7, each a 16-byte chunk. */
#ifndef HRMT_CUDA_SM90A_MMA_LANES_CUH
#define HRMT_CUDA_SM90A_MMA_LANES_CUH

#include "cuda/rowops_common.cuh"

namespace {

/* Byte offset of 16-byte chunk `chunk` (0-7: k 8 chunk ..) of row `row`:
 * the swizzle puts it at chunk ^ (row % 8). */
HRMT_HD int mma_sw128(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

/* The A row and chunk lane `lane` addresses for k16 step kk of a 64-k
 * stage, warp `warp`'s rows 16 warp ..: matrices 0-3 = rows 0-7 / 8-15 at k
 * 0-7, then at k 8-15 (mma's a0-a3). */
HRMT_HD void mma_a_lane(int warp, int lane, int kk, int *row, int *chunk) {
    *row = warp * 16 + (lane & 15);
    *chunk = 2 * kk + (lane >> 4);
}

/* The W row (output column) and chunk for the n16 pair np: matrices 0-3 =
 * columns 0-7 at k 0-7 / 8-15, columns 8-15 at k 0-7 / 8-15 (b0, b1 of n8
 * tile 2 np, then of 2 np + 1). */
HRMT_HD void mma_w_lane(int np, int lane, int kk, int *row, int *chunk) {
    *row = np * 16 + (lane & 7) + ((lane >> 4) << 3);
    *chunk = 2 * kk + ((lane >> 3) & 1);
}

/* mma's d[x] of n8 tile i is acc[4 i + x]: the m64nNk16 layout's place for
 * row 16 warp + lane / 4 + 8 (x / 2), column 8 i + 2 (lane % 4) + x % 2. */
HRMT_HD int mma_acc(int tile, int x) { return 4 * tile + x; }

} // namespace

#endif
