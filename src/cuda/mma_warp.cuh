/* One warp's k16 step of a BF16 GEMM tile from shared memory (mma.sync
 * m16n8k16, F32 accumulate), shared by the persistent L-level kernel
 * (model_l_persist.cu) and the grid-wide level kernel (model_grid.cu): the
 * warp's C is MI m16 tiles x NI n8 tiles, A row-major (rows at arow(i) for
 * the warp's 16 MI rows), W (B^T) row-major, each in one ldmatrix.x4 per
 * 16 x 16 block. Every C element gets one mma per k16 step, so a chain of
 * steps in ascending k is the own GEMM kernels' arithmetic. */
#ifndef HRMT_CUDA_MMA_WARP_CUH
#define HRMT_CUDA_MMA_WARP_CUH

#include <stdint.h>

#include "cuda/attn_mma_tile.cuh"

namespace {

/* acc += A[rows, k0:k0+16] W[w0 + (0 .. 8 NI), k0:k0+16]^T: A's row r of
 * m16 tile mi at a_row(mi * 16 + r) (a pointer at column k0), W's rows from
 * w (column k0) at stride ldw. */
template <int MI, int NI, class AROW>
__device__ __forceinline__ void mma_k16(float (&acc)[MI][NI][4], AROW a_row, const uint16_t *w,
                                        int ldw) {
    const int lane = threadIdx.x & 31;
    uint32_t a[MI][4], b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++) ldsm_x4(a_row(mi * 16 + (lane & 15)) + (lane >> 4) * 8, a[mi]);
#pragma unroll
    for (int np = 0; np < NI / 2; np++) {
        uint32_t r[4];
        ldsm_x4(w + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * ldw + ((lane >> 3) & 1) * 8, r);
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
    }
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
            mma_bf16(acc[mi][ni], a[mi], b[ni][0], b[ni][1], acc[mi][ni]);
}

} // namespace

#endif
