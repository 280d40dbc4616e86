/* The residual + RMSNorm of a 64-row tile spread over a thread-block cluster
 * (CL CTAs of WN columns each), as the projection + norm kernels over a
 * cluster run it (cluster_norm_wgmma.cu, cluster_glu_wgmma.cu): one
 * consumer warpgroup per CTA holding the projection's m64nWN accumulators.
 * Each includer is one translation unit, so everything here is internal to
 * it. Bits: docs in cluster_norm_wgmma.cu (the row kernel's register form). */
#ifndef HRMT_CUDA_SM90A_CLUSTER_NORM_STEPS_CUH
#define HRMT_CUDA_SM90A_CLUSTER_NORM_STEPS_CUH

#include "cuda/rowops_common.cuh"
#include "cuda/rowops_sumsq.cuh"
#include "cuda/sm90a/norm_epilogue.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

constexpr int CN_BM = 64;

#ifdef HRMT_SM90A
__device__ __forceinline__ uint16_t cl_ld_u16(uint32_t a) {
    uint16_t v;
    asm volatile("ld.shared::cluster.u16 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
    return v;
}
__device__ __forceinline__ uint4 cl_ld_v4(uint32_t a) {
    uint4 v;
    asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(a)
                 : "memory");
    return v;
}
__device__ __forceinline__ void cl_st_f32(uint32_t a, float v) {
    asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(a), "f"(v) : "memory");
}
/* cl_sync's two halves, for work between them that no peer waits for. */
__device__ __forceinline__ void cl_arrive() {
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void cl_wait() {
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

/* Where consumer thread (warp, lane) works: rows lr0 and lr0 + 8 of the
 * tile, columns 8 i + 2 c (+ 1) of n8 tile i of its CTA's WN columns (the
 * m64nWN accumulator layout). */
template <int WN>
struct cn_thread {
    int lr0, c;
    uint16_t *hrow[2]; /* h's rows at this CTA's first column */
    bool live[2];      /* rows below M: read and written */
    uint32_t res[WN / 8][2];
    /* The residual's values, read while the products run. */
    __device__ __forceinline__ cn_thread(uint16_t *h, int M, int H, int m0, int n0, int warp,
                                         int lane) {
        lr0 = warp * 16 + lane / 4;
        c = lane & 3;
        hrow[0] = h + (size_t)(m0 + lr0) * H + n0;
        hrow[1] = h + (size_t)(m0 + lr0 + 8) * H + n0;
        live[0] = m0 + lr0 < M;
        live[1] = m0 + lr0 + 8 < M;
#pragma unroll
        for (int i = 0; i < WN / 8; i++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++)
                res[i][hf] = live[hf] ? *(const uint32_t *)(hrow[hf] + 8 * i + 2 * c) : 0u;
    }
    /* 1. x = bf16(h + bf16(acc)) in place of acc and into xs [64][WN]. */
    __device__ __forceinline__ void residual(float (&acc)[WN / 2], uint16_t *xs) {
        namespace rc = hrmt_rowops_cuda;
#pragma unroll
        for (int i = 0; i < WN / 8; i++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                residual_pair(acc[4 * i + 2 * hf], acc[4 * i + 2 * hf + 1], res[i][hf]);
                /* acc holds BF16 values now: the pair packs exactly. */
                *(uint32_t *)(xs + (lr0 + 8 * hf) * WN + 8 * i + 2 * c) =
                    rc::pack_bf16x2_arith(acc[4 * i + 2 * hf], acc[4 * i + 2 * hf + 1]);
            }
    }
    /* 3. bf16(x inv) of row half hf, column pair i. */
    __device__ __forceinline__ uint32_t normed(const float (&acc)[WN / 2], float inv, int i,
                                               int hf) const {
        namespace rc = hrmt_rowops_cuda;
        return rc::pack_bf16x2_arith(rc::fmul(acc[4 * i + 2 * hf], inv),
                                     rc::fmul(acc[4 * i + 2 * hf + 1], inv));
    }
};

/* 2. This CTA's RP = 64 / CL rows of the tile: inv of each, written into
 * every CTA's xinv. Lane l is the reference's lane l (rowops_sumsq.cuh's
 * register form), column g 32 + l held by CTA (g 32 + l) / WN. */
template <int WN, int CL>
__device__ __forceinline__ void cn_row_invs(const uint16_t *xs, float *xinv, uint32_t rank, int m0,
                                            int M, float eps, int warp, int lane) {
    namespace rc = hrmt_rowops_cuda;
    constexpr int H = WN * CL, G = H / 32, RP = CN_BM / CL;
    for (int j = warp; j < RP; j += 4) {
        const int row = (int)rank * RP + j;
        if (m0 + row >= M) continue;
        float xv[G];
#pragma unroll
        for (int g = 0; g < G; g++)
            xv[g] = rc::bf16_to_f(cl_ld_u16(
                cl_map(xs + row * WN + (g * 32 + lane) % WN, (uint32_t)((g * 32 + lane) / WN))));
        const float inv = rc::rmsnorm_lanes_inv<G>(xv, G, (float)H, eps);
        if (lane < CL) cl_st_f32(cl_map(xinv + row, (uint32_t)lane), inv);
    }
}
#endif

} // namespace

#endif
