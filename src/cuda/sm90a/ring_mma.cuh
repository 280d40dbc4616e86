/* A warpgroup's products of one tile from a TMA ring by mma.sync instead of
 * wgmma (opt-in: the fused gate_up's mma.sync shapes, HRMT_CUDA_GLU_MMA,
 * ring_gemm.cuh's MMA): the same stages (A's 64 rows and W's N rows over 64
 * k in the copy engine's 128-byte swizzle), the same accumulators in the
 * same places, the same bits.
 *
 * Why: at batch 1 every output is one F32 chain of k16 steps (96 at
 * down_proj), and the link trace put a dependent wgmma step at ~40-47 ns
 * (docs/CUDA-KERNELS.md, session 32); an mma.sync m16n8k16 chain may be
 * shorter per step, and a warp's N / 8 tiles are independent chains that
 * overlap. bench/cuda_chain_latency.cu measures both; in the cluster
 * kernels this form made the step 1.22 / 1.09x slower at batch 1 / 8 (H100),
 * so only the gate_up's opt-in shapes keep it.
 *
 * Bits: each C element gets one m16n8k16 product per k16 step, in ascending
 * k from +0: the F32 chain of the wgmma form (and of the pinned cuBLASLt
 * algorithms); cuda_model/glu_shapes_equal_launches_* and
 * glu_mma_equals_launches_long_runs compare the bytes.
 * Layout: mma.sync's fragment of an m16n8 tile (rows lane / 4 and + 8,
 * columns 2 (lane % 4) and + 1) is where m64nNk16 puts warp w's rows
 * 16 w .. 16 w + 15 of n8 tile i, so tile i's four values are acc[4 i ..
 * 4 i + 3] in both forms and the epilogue is unchanged. Operands by
 * ldmatrix at the swizzled addresses (mma_lanes.cuh, whose mapping
 * tests/test_ring_mma_layout.cu checks on the host). */
#ifndef HRMT_CUDA_SM90A_RING_MMA_CUH
#define HRMT_CUDA_SM90A_RING_MMA_CUH

#include "cuda/attn_mma_tile.cuh"
#include "cuda/mma_warp.cuh"
#include "cuda/sm90a/cluster_async.cuh"
#include "cuda/sm90a/mma_lanes.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

#ifdef HRMT_SM90A
/* ring_products' contract (wgmma_common.cuh) for warp `warp` (0-3) of the
 * consuming warpgroup, rows 16 warp .. 16 warp + 15 of the tile, except that
 * each stage is given back as soon as its products are issued, so no last
 * stage is left for the caller (no `prev`). */
template <int N>
__device__ __forceinline__ void ring_products_mma(float (&acc)[N / 2], const uint8_t *smem,
                                                  int stage_bytes, int w_off, uint64_t *full,
                                                  uint64_t *empty, int stages, int kb_n, int &s,
                                                  unsigned &ph, int lane, int warp) {
    static_assert(N % 16 == 0, "W rows in pairs of n8 tiles");
    for (int kb = 0; kb < kb_n; kb++) {
        mbar_wait(&full[s], ph);
        if (kb == 0) LT_PHASE(1);
        const uint8_t *st = smem + s * stage_bytes, *sw = st + w_off;
        uint32_t a[BK / 16][4], b[BK / 16][N / 16][4];
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            int row, chunk;
            mma_a_lane(warp, lane, kk, &row, &chunk);
            ldsm_x4(st + mma_sw128(row, chunk), a[kk]);
#pragma unroll
            for (int np = 0; np < N / 16; np++) {
                mma_w_lane(np, lane, kk, &row, &chunk);
                ldsm_x4(sw + mma_sw128(row, chunk), b[kk][np]);
            }
        }
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
            for (int np = 0; np < N / 16; np++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    float *t = acc + mma_acc(2 * np + h, 0);
                    mma_bf16(t, a[kk], b[kk][np][2 * h], b[kk][np][2 * h + 1], t);
                }
        /* The stage given back once its operands are read: after the
         * products that consume them (an ldmatrix only issued may not have
         * read yet: given back straight after them, the ring's next copy
         * could land first; the device test at 50-100 tiles a CTA saw it),
         * and its reads ordered before the copy engine's next write of it
         * (a generic read, an async-proxy write). */
        fence_async_smem();
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
        ring_next(s, ph, stages);
    }
    LT_PHASE(2);
}
#endif

} // namespace

#endif
