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
 *    phase ahead of the stage. */
#ifndef HRMT_CUDA_SM90A_RING_GEMM_CUH
#define HRMT_CUDA_SM90A_RING_GEMM_CUH

#include "cuda/pdl.cuh"
#include "cuda/sm90a/ring_plan.h"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

/* Shared memory a policy's epilogue asks for beside the ring (E::EPI_SMEM
 * bytes, a multiple of 16; none when E does not say). */
template <class E, class = void>
struct epi_smem {
    static constexpr int value = 0;
};
template <class E>
struct epi_smem<E, decltype((void)E::EPI_SMEM)> {
    static constexpr int value = E::EPI_SMEM;
};

template <int MSUB, int WGS, int WN, int EPI = 0>
struct ring_cfg {
    static constexpr int BM = 64 * MSUB;
    static constexpr int THREADS = 128 * (WGS + 1);
    static constexpr int A_BYTES = BM * ROW_BYTES;
    static constexpr int W_BYTES = WN * ROW_BYTES;
    static constexpr int STAGE_BYTES = A_BYTES + W_BYTES;
    static constexpr int STAGES = (192 * 1024) / STAGE_BYTES;
    /* full, empty, the consumers' turns. */
    static constexpr int BAR_BYTES = ((2 * STAGES + WGS) * 8 + 15) / 16 * 16;
    /* 1024-byte alignment for the swizzle, the barriers, the epilogue's part. */
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + BAR_BYTES + EPI;
};
template <int MSUB, int WGS, int WN, class E>
using ring_cfg_for = ring_cfg<MSUB, WGS, WN, epi_smem<E>::value>;

/* What every policy's arguments start with: rows, column tiles, k blocks. */
struct ring_dims {
    int M, nt, kblocks;
};

#ifdef HRMT_SM90A
/* A consumer warpgroup's accumulators of a tile set to +0. */
template <int MSUB, int WN>
__device__ __forceinline__ void tile_zero(float (&acc)[MSUB][WN / 2]) {
#pragma unroll
    for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
        for (int i = 0; i < WN / 2; i++) acc[ms][i] = 0.0f;
}

/* Stage st given back to this CTA's producer by this warp (lane 0). */
__device__ __forceinline__ void stage_back(uint64_t *empty, int st, int lane) {
    if (lane != 0) return;
    mbar_arrive(&empty[st]);
}

/* One stage's products, committed as one group: the stage's MSUB 64-row
 * blocks of A at st against its WN rows of W at w, in k16 steps. */
template <int MSUB, int WN>
__device__ __forceinline__ void stage_products(float (&acc)[MSUB][WN / 2], const uint8_t *st,
                                               const uint8_t *w) {
    const uint64_t dw = desc_k128(w);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
            wgmma_n<WN>(acc[ms], desc_k128(st + ms * 64 * ROW_BYTES) + 2 * kk, dw + 2 * kk);
    wg_commit();
}

/* Every product group of this warpgroup complete, the accumulators
 * readable (the empty asm keeps the caller's reads after the wait). */
template <int MSUB, int WN>
__device__ __forceinline__ void products_done(float (&acc)[MSUB][WN / 2]) {
    wg_wait<0>();
    LT_PHASE(2);
#pragma unroll
    for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
        for (int i = 0; i < WN / 2; i++) asm volatile("" : "+f"(acc[ms][i])::"memory");
}

/* A consumer warpgroup's products of a tile over kb_n stages of the ring
 * from stage s (parity ph): the stage's MSUB 64-row blocks of A at
 * a_of(s), its WN rows of W at w_of(s, kb). Each stage is given back (one
 * arrive per warp on empty[]: stage_back) once the next stage's products
 * are issued; returns the last stage (-1: none), which tile_done gives
 * back. s and ph move on past the tile.
 * full_cy: where ring_wres.cuh's HRMT_WRES_PHASES build adds the cycles
 * spent waiting for stages (unused in other builds). */
template <int MSUB, int WN, class AF, class WF>
__device__ __forceinline__ int tile_products(float (&acc)[MSUB][WN / 2], uint64_t *full,
                                             uint64_t *empty, int stages, int kb_n, int &s,
                                             unsigned &ph, int lane, AF a_of, WF w_of,
                                             long long *full_cy = nullptr) {
    int prev = -1;
    for (int kb = 0; kb < kb_n; kb++) {
#ifdef HRMT_WRES_PHASES /* ring_wres.cuh's phase count: cycles waiting for stages */
        const long long w0 = clock64();
        mbar_wait(&full[s], ph);
        if (full_cy) *full_cy += clock64() - w0;
#else
        (void)full_cy;
        mbar_wait(&full[s], ph);
#endif
        if (kb == 0) LT_PHASE(1);
        stage_products<MSUB, WN>(acc, a_of(s), w_of(s, kb));
        /* The previous stage's products are done once one group is left
         * in flight: hand its buffers back to the producer. */
        wg_wait<1>();
        if (prev >= 0) stage_back(empty, prev, lane);
        prev = s;
        ring_next(s, ph, stages);
    }
    return prev;
}

/* The tile's products complete: the accumulators readable (kept after the
 * wait) and the last stage given back. */
template <int MSUB, int WN>
__device__ __forceinline__ void tile_done(float (&acc)[MSUB][WN / 2], uint64_t *empty, int prev,
                                          int lane) {
    products_done<MSUB, WN>(acc);
    if (prev >= 0) stage_back(empty, prev, lane);
}

/* The consumer warpgroups' start: their registers raised (the producer's
 * lowered), the policy's shared-memory part filled (data of no kernel
 * before, so ahead of the wait), then the wait for the kernel before
 * (programmatic dependent launch) ahead of the epilogue's stores. */
template <int WGS, class E>
__device__ __forceinline__ void consumers_begin(uint8_t *epi, const typename E::args &p) {
    /* Three consumer warpgroups (ring_wres.cuh's 64-row form) share 64K
     * registers with the producer's 40 a thread: 152 each. */
    static_assert(WGS >= 1 && WGS <= 3, "one to three consumer warpgroups");
    if constexpr (WGS <= 2)
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    else
        asm volatile("setmaxnreg.inc.sync.aligned.u32 152;");
    if constexpr (epi_smem<E>::value > 0) {
        E::epi_load(epi, threadIdx.x - 128, 128 * WGS, p);
        asm volatile("bar.sync 1, %0;" ::"n"(128 * WGS) : "memory");
    }
    pdl_wait();
    pdl_trigger();
}

/* The policy's epilogue of a finished tile (with its shared-memory part
 * when it has one). */
template <int MSUB, int WN, class E>
__device__ __forceinline__ void tile_store(float (&acc)[MSUB][WN / 2], int m0, int n0, int warp,
                                           int lane, const typename E::args &p,
                                           const uint8_t *epi) {
    if constexpr (epi_smem<E>::value > 0)
        E::template store<MSUB>(acc, m0, n0, warp, lane, p, epi);
    else
        E::template store<MSUB>(acc, m0, n0, warp, lane, p);
}
#endif

/* E: static constexpr int TILE_N (the step of a tile's n0); typename E::args
 * (starting with ring_dims d); load_w(stage W part, map, barrier, k block,
 * n0, args) issues the stage's WN rows of W; store(acc, m0, n0, warp, lane,
 * args) consumes a finished tile's accumulators. A policy with EPI_SMEM > 0
 * also has epi_load(part, thread, threads, args), which the consumer
 * warpgroups run once before their first tile to fill that shared-memory
 * part, and store(..., args, part). */
template <int MSUB, int WGS, int WN, class E>
__global__ void __launch_bounds__(ring_cfg_for<MSUB, WGS, WN, E>::THREADS, 1)
    ring_gemm_kernel(const __grid_constant__ CUtensorMap tm_a,
                     const __grid_constant__ CUtensorMap tm_w, const typename E::args p) {
#ifdef HRMT_SM90A
    using C = ring_cfg_for<MSUB, WGS, WN, E>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_align1024(smem_raw);
    uint64_t *full = (uint64_t *)(smem + S * C::STAGE_BYTES), *empty = full + S, *order = empty + S;
    uint8_t *epi = smem + S * C::STAGE_BYTES + C::BAR_BYTES;
    const int wg = warpgroup_idx(), nt = p.d.nt, mt = (p.d.M + C::BM - 1) / C::BM;
    /* Steps u = CTA, CTA + CTAs, ...: row tile u / nt of W tile u % nt. */
    const int units = mt * nt, kb_n = p.d.kblocks;
    auto m0_of = [&](int u) { return (u / nt) * C::BM; };
    auto n0_of = [&](int u) { return (u % nt) * E::TILE_N; };
    if (threadIdx.x == 0) {
        ring_init(full, empty, S, 4); /* one arrive per warp of the consuming warpgroup */
        /* One arrive ends a tile's turn: wgmma ties a warpgroup's four warps
         * to each other (a warp's products end only once all four issued
         * theirs), so that one arrive tells that all four passed the turn. */
        for (int w = 0; w < WGS; w++) mbar_init(&order[w], 1);
        mbar_arrive(&order[0]); /* tile 0's turn */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            /* W does not depend on the kernel before (programmatic
             * dependent launch): the first tile's first stages of it are
             * requested before waiting for that kernel, A's rows after. */
            const int pre = blockIdx.x < (unsigned)units ? (kb_n < S ? kb_n : S) : 0;
            for (int kb = 0; kb < pre; kb++) {
                mbar_expect_tx(&full[kb], C::STAGE_BYTES);
                E::load_w(smem + kb * C::STAGE_BYTES + C::A_BYTES, &tm_w, &full[kb], kb,
                          (int)(blockIdx.x % (unsigned)nt) * E::TILE_N, p);
            }
            pdl_wait();
            pdl_trigger();
            int s = 0;
            unsigned ph = 0;
            for (int u = (int)blockIdx.x; u < units; u += (int)gridDim.x) {
                const int m0 = m0_of(u), n0 = n0_of(u);
                for (int kb = 0; kb < kb_n; kb++) {
                    uint8_t *st = smem + s * C::STAGE_BYTES;
                    if (u == (int)blockIdx.x && kb < pre) { /* W already on its way */
                        tma_load(st, &tm_a, &full[s], kb * BK, m0);
                    } else {
                        mbar_wait(&empty[s], ph ^ 1);
                        mbar_expect_tx(&full[s], C::STAGE_BYTES);
                        tma_load(st, &tm_a, &full[s], kb * BK, m0);
                        E::load_w(st + C::A_BYTES, &tm_w, &full[s], kb, n0, p);
                    }
                    ring_next(s, ph, S);
                }
            }
        }
        return;
    }
    consumers_begin<WGS, E>(epi, p);
    const int cw = wg - 1, warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
    int q = cw;
    unsigned turn = 0;
    for (int u = blockIdx.x + cw * gridDim.x; u < units; u += WGS * gridDim.x, q += WGS) {
        const int m0 = m0_of(u), n0 = n0_of(u);
        int s;
        unsigned ph;
        ring_tile_start(q, kb_n, S, &s, &ph);
        float acc[MSUB][WN / 2];
        tile_zero<MSUB, WN>(acc);
        mbar_wait(&order[cw], turn);
        turn ^= 1;
        const int prev = tile_products<MSUB, WN>(
            acc, full, empty, S, kb_n, s, ph, lane,
            [&](int st) { return smem + st * C::STAGE_BYTES; },
            [&](int st, int) { return smem + st * C::STAGE_BYTES + C::A_BYTES; });
        /* Every ring use of this tile has landed: the next tile's turn. */
        if (threadIdx.x % 128 == 0) mbar_arrive(&order[(cw + 1) % WGS]);
        tile_done<MSUB, WN>(acc, empty, prev, lane);
        tile_store<MSUB, WN, E>(acc, m0, n0, warp, lane, p, epi);
    }
    LT_PHASE(8);
#endif
}

/* Host side (wgmma_common.cuh): the image check and shared-memory opt-in. */
template <int MSUB, int WGS, int WN, class E>
int ring_loads(size_t per_block) {
    return image_loads(ring_gemm_kernel<MSUB, WGS, WN, E>, ring_cfg_for<MSUB, WGS, WN, E>::SMEM,
                       per_block);
}
template <int MSUB, int WGS, int WN, class E>
cudaError_t ring_prepare() {
    return smem_opt_in(ring_gemm_kernel<MSUB, WGS, WN, E>, ring_cfg_for<MSUB, WGS, WN, E>::SMEM);
}

} // namespace

#endif
