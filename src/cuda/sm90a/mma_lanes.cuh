/* Where a 16-byte chunk of an operand row lies in a TMA stage of the copy
 * engine's 128-byte swizzle, as a __host__ __device__ function:
 * bench/cuda_chain_latency.cu and bench/cuda_handoff_latency.cu place their
 * operands with it as the copy engine would (so that wgmma reads them as
 * they are), and tests/test_sw128_layout.cu checks it on the host against
 * the swizzle's definition, without a GPU.
 *
 * A stage's operand block is `rows` rows of 64 BF16 k (128 bytes) from a
 * 1024-byte boundary. */
#ifndef HRMT_CUDA_SM90A_MMA_LANES_CUH
#define HRMT_CUDA_SM90A_MMA_LANES_CUH

#include "cuda/rowops_common.cuh"

namespace {

/* Byte offset of 16-byte chunk `chunk` (0-7: k 8 chunk ..) of row `row`:
 * the swizzle puts it at chunk ^ (row % 8). */
HRMT_HD int mma_sw128(int row, int chunk) { return row * 128 + ((chunk ^ (row & 7)) << 4); }

} // namespace

#endif
