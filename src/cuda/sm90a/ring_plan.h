/* The persistent ring GEMM loop's ring positions (ring_gemm.cuh), as
 * plain C so that tests/test_ring_turns.c drives the same decisions
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

/* The stage and parity at which the CTA's tile number `u` (0, 1, .. in the
 * producer's order) starts: kb_n ring uses a tile. */
RING_HD void ring_tile_start(int u, int kb_n, int stages, int *s, unsigned *ph) {
    const unsigned base = (unsigned)u * (unsigned)kb_n;
    *s = (int)(base % (unsigned)stages);
    *ph = (base / (unsigned)stages) & 1u;
}

#undef RING_HD

#endif
