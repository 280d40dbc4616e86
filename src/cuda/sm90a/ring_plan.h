/* The persistent ring GEMM loop's turns and ring positions (ring_gemm.cuh),
 * as plain C so that tests/test_ring_turns.c drives the same decisions
 * through a model of the kernel's barriers on the host. A CTA's consumer
 * warpgroups take its tiles in turn (warpgroup cw: its q-th tile is the
 * CTA's tile q WGS + cw); the producer fills one ring of S stages for all
 * of them in tile order. */
#ifndef HRMT_CUDA_SM90A_RING_PLAN_H
#define HRMT_CUDA_SM90A_RING_PLAN_H

#ifdef __CUDACC__
#define RING_HD static inline __host__ __device__
#else
#define RING_HD static inline
#endif

/* Arrivals that end a tile's turn: wgmma ties a warpgroup's four warps to
 * each other (a warp's products end only once all four issued theirs), so
 * one arrive tells that all four passed the turn; mma.sync warps run apart,
 * so each arrives (else a fast warp's lone arrive could complete the turn
 * after next before a slow warp waited for this one). */
RING_HD unsigned ring_turn_arrives(int mma) { return mma ? 4u : 1u; }

/* The stage and parity at which the CTA's tile number `u` (0, 1, .. in the
 * producer's order) starts: kb_n ring uses a tile. */
RING_HD void ring_tile_start(int u, int kb_n, int stages, int *s, unsigned *ph) {
    const unsigned base = (unsigned)u * (unsigned)kb_n;
    *s = (int)(base % (unsigned)stages);
    *ph = (base / (unsigned)stages) & 1u;
}

#undef RING_HD

#endif
