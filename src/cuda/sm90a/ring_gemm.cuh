/* The persistent wgmma GEMM main loop shared by the sm_90a kernels whose
 * tiles are A's rows times a slice of W: C-tile = A[m0 .. m0 + 64 MSUB) W'^T
 * over all of k, where the epilogue policy E says which WN rows of W a tile
 * reads (E::load_w) and what it does with the accumulators (E::store).
 *
 * Bits: each output is one F32 chain of BF16 k16 tensor-core steps in
 * ascending k from +0 (accumulators zeroed, wgmma always accumulating): the
 * arithmetic of the pinned cuBLASLt algorithms and of the mma.sync kernels,
 * whatever MSUB, WGS and WN.
 *
 * Shape (one CTA per SM, tiles blockIdx.x, blockIdx.x + gridDim.x, ...):
 *  - warpgroup 0: one thread feeds a 192 KB ring by TMA; a stage holds the
 *    tile's rows of A and its WN rows of W over 64 k, 128-byte rows in the
 *    copy engine's 128-byte swizzle, which wgmma reads as it is;
 *  - WGS consumer warpgroups taking alternate tiles: one's epilogue runs
 *    beside the other's products ("ping-pong"). They take turns (order[])
 *    to wait on the ring, so that none waits on a stage's parity a whole
 *    phase ahead of the stage.
 * CL = 2: clusters of two CTAs take the same column tile of two adjacent row
 * tiles (the second past the end reads zeros, stores nothing), and each
 * CTA's producer multicasts its part of the stage's W rows (E::load_w_part)
 * into both, so that a product moves 3/4 of the bytes from L2 per output. A
 * stage is refilled once both CTAs' consumers gave it back (every consumer
 * warp arrives on both CTAs' empty barriers). */
#ifndef HRMT_CUDA_SM90A_RING_GEMM_CUH
#define HRMT_CUDA_SM90A_RING_GEMM_CUH

#include "cuda/pdl.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

template <int MSUB, int WGS, int WN>
struct ring_cfg {
    static constexpr int BM = 64 * MSUB;
    static constexpr int THREADS = 128 * (WGS + 1);
    static constexpr int A_BYTES = BM * ROW_BYTES;
    static constexpr int W_BYTES = WN * ROW_BYTES;
    static constexpr int STAGE_BYTES = A_BYTES + W_BYTES;
    static constexpr int STAGES = (192 * 1024) / STAGE_BYTES;
    /* 1024-byte alignment for the swizzle, plus the barriers. */
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + (2 * STAGES + WGS) * 8;
};

/* What every policy's arguments start with: rows, column tiles, k blocks. */
struct ring_dims {
    int M, nt, kblocks;
};

/* E: static constexpr int TILE_N (the step of a tile's n0); typename E::args
 * (starting with ring_dims d); load_w(stage W part, map, barrier, k block,
 * n0, args) issues the stage's WN rows of W; store(acc, m0, n0, warp, lane,
 * args) consumes a finished tile's accumulators. */
template <int MSUB, int WGS, int WN, class E, int CL = 1>
__global__ void __launch_bounds__(ring_cfg<MSUB, WGS, WN>::THREADS, 1)
    ring_gemm_kernel(const __grid_constant__ CUtensorMap tm_a,
                     const __grid_constant__ CUtensorMap tm_w, const typename E::args p) {
#ifdef HRMT_SM90A
    using C = ring_cfg<MSUB, WGS, WN>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + S * C::STAGE_BYTES), *empty = full + S, *order = empty + S;
    const int wg = threadIdx.x / 128, nt = p.d.nt, mt = (p.d.M + C::BM - 1) / C::BM;
    /* Tiles of CL row tiles x one column tile, one per cluster at a time. */
    const int tiles = (mt + CL - 1) / CL * nt, kb_n = p.d.kblocks;
    const int cid = (int)blockIdx.x / CL, ncl = (int)gridDim.x / CL;
    int rank = 0;
    if constexpr (CL > 1) rank = (int)cl_rank();
    if (threadIdx.x == 0) {
        ring_init(full, empty, S, 4 * CL); /* one arrive per consumer warp of each CTA */
        for (int w = 0; w < WGS; w++) mbar_init(&order[w], 1);
        mbar_arrive(&order[0]); /* tile 0's turn */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    /* CL > 1: the other CTA's barriers exist before any load or arrive
     * reaches them. */
    if constexpr (CL > 1)
        cl_sync();
    else
        __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        /* CL > 1: the producer's warp converges before the cluster barrier
         * at the kernel's end; its other lanes waiting in that barrier
         * while lane 0 still loads made the kernel 2x slower (H200). */
        if (threadIdx.x != 0) {
            if constexpr (CL > 1) {
                __syncwarp();
                cl_sync(); /* the kernel's end (below) */
            }
            return;
        }
        /* W does not depend on the kernel before (programmatic dependent
         * launch): the first tile's first stages of it are requested before
         * waiting for that kernel, A's rows after. */
        const int pre = cid < tiles ? (kb_n < S ? kb_n : S) : 0;
        auto load_w = [&](uint8_t *st, uint64_t *bar, int kb, int n0) {
            if constexpr (CL > 1)
                E::load_w_part(st + C::A_BYTES, &tm_w, bar, kb, n0, rank, p);
            else
                E::load_w(st + C::A_BYTES, &tm_w, bar, kb, n0, p);
        };
        for (int kb = 0; kb < pre; kb++) {
            mbar_expect_tx(&full[kb], C::STAGE_BYTES);
            load_w(smem + kb * C::STAGE_BYTES, &full[kb], kb, (cid % nt) * E::TILE_N);
        }
        pdl_wait();
        pdl_trigger();
        int s = 0;
        unsigned ph = 0;
        for (int t = cid; t < tiles; t += ncl) {
            const int m0 = ((t / nt) * CL + rank) * C::BM, n0 = (t % nt) * E::TILE_N;
            for (int kb = 0; kb < kb_n; kb++) {
                uint8_t *st = smem + s * C::STAGE_BYTES;
                if (t == cid && kb < pre) { /* W already on its way */
                    tma_load(st, &tm_a, &full[s], kb * BK, m0);
                } else {
                    mbar_wait(&empty[s], ph ^ 1);
                    mbar_expect_tx(&full[s], C::STAGE_BYTES);
                    tma_load(st, &tm_a, &full[s], kb * BK, m0);
                    load_w(st, &full[s], kb, n0);
                }
                ring_next(s, ph, S);
            }
        }
        if constexpr (CL > 1) {
            __syncwarp();
            cl_sync();
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    pdl_wait(); /* before the epilogue's stores */
    pdl_trigger();
    const int cw = wg - 1, warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
    int q = cw;
    unsigned turn = 0;
    /* A stage given back: to each CTA whose producer writes into it. */
    auto give_back = [&](int st) {
        mbar_arrive(&empty[st]);
        if constexpr (CL > 1)
            for (int r = 0; r < CL; r++)
                if (r != rank) mbar_arrive_cl(&empty[st], (uint32_t)r);
    };
    for (int t = cid + cw * ncl; t < tiles; t += WGS * ncl, q += WGS) {
        const int m0 = ((t / nt) * CL + rank) * C::BM, n0 = (t % nt) * E::TILE_N;
        const unsigned base = (unsigned)q * (unsigned)kb_n; /* ring uses before this tile */
        int s = (int)(base % S);
        unsigned ph = (base / S) & 1;
        float acc[MSUB][WN / 2];
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < WN / 2; i++) acc[ms][i] = 0.0f;
        int prev = -1;
        mbar_wait(&order[cw], turn);
        turn ^= 1;
        for (int kb = 0; kb < kb_n; kb++) {
            mbar_wait(&full[s], ph);
            const uint8_t *st = smem + s * C::STAGE_BYTES;
            const uint64_t dw = desc_k128(st + C::A_BYTES);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
                for (int ms = 0; ms < MSUB; ms++)
                    wgmma_n<WN>(acc[ms], desc_k128(st + ms * 64 * ROW_BYTES) + 2 * kk, dw + 2 * kk);
            wg_commit();
            /* The previous stage's products are done once one group is left
             * in flight: hand its buffers back to the producer. */
            wg_wait<1>();
            if (prev >= 0 && lane == 0) give_back(prev);
            prev = s;
            ring_next(s, ph, S);
        }
        /* Every ring use of this tile has landed: the next tile's turn. */
        if (threadIdx.x % 128 == 0) mbar_arrive(&order[(cw + 1) % WGS]);
        wg_wait<0>();
        /* Keep the epilogue's reads of the accumulators after the wait. */
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < WN / 2; i++) asm volatile("" : "+f"(acc[ms][i])::"memory");
        if (prev >= 0 && lane == 0) give_back(prev);
        E::template store<MSUB>(acc, m0, n0, warp, lane, p);
    }
    /* CL > 1: no CTA leaves while the other may still arrive on its
     * barriers. */
    if constexpr (CL > 1) cl_sync();
#endif
}

/* Host side (wgmma_common.cuh): the image check and shared-memory opt-in. */
template <int MSUB, int WGS, int WN, class E, int CL = 1>
int ring_loads(size_t per_block) {
    return image_loads(ring_gemm_kernel<MSUB, WGS, WN, E, CL>, ring_cfg<MSUB, WGS, WN>::SMEM,
                       per_block);
}
template <int MSUB, int WGS, int WN, class E, int CL = 1>
cudaError_t ring_prepare() {
    return smem_opt_in(ring_gemm_kernel<MSUB, WGS, WN, E, CL>, ring_cfg<MSUB, WGS, WN>::SMEM);
}

} // namespace

#endif
