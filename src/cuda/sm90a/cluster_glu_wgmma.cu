/* o_proj, the residual + RMSNorm after it and the MLP's gate_up + SwiGLU as
 * one kernel over a thread-block cluster (small batches):
 *
 *   h[r, :]   = rmsnorm( bf16( h[r, :] + bf16(att W_o^T)[r, :] ) )
 *   act[r, :] = bf16( s(bf16(h W_g^T)[r, :]) * bf16(h W_u^T)[r, :] )
 *
 * Launch by launch these are cluster_norm_wgmma.cu's kernel and the fused
 * gate_up (glu_wgmma.cu): two links of the block's chain, where at a few
 * samples each kernel's start and drain cost more than its work. Here the
 * CL CTAs of a cluster first run the cluster projection + norm of a 64-row
 * tile (cluster_norm_steps.cuh: WN columns each, the row statistics shared
 * through distributed shared memory), then each CTA gathers the whole
 * normalised tile (64 x H) from its peers' shared memory into its own, in
 * the 128-byte swizzle wgmma reads, and runs gate_up for its I / CL act
 * columns against it: passes of three chunks of 32 act columns (a chunk's
 * 32 gate and 32 up rows of W adjacent in a stage, one m64n64k16 per k16
 * step, as glu_epi<32> expects), the epilogue glu_epi.cuh's.
 *
 * Bits: each o_proj and gate/up output is one F32 chain of BF16 k16 steps in
 * ascending k from +0 rounded to BF16 (the pinned cuBLASLt algorithms'
 * arithmetic); the norm is the row kernel's register form; the SwiGLU is the
 * context's table: the launches' bytes, which
 * cuda_model/cluster_norm_equals_launches checks on the device.
 *
 * Shared memory: o_proj's TMA ring (96 KB; the gathered tile takes its place
 * once the products are done), gate_up's ring of W (four 24 KB stages, the
 * first ones requested at the kernel's start: W depends on no kernel
 * before), the tile's x / normalised block, the row invs and the SwiGLU
 * table window (glu_epi.cuh). Warpgroup 0's first thread feeds both rings;
 * warpgroup 1 computes. */
#include <stdlib.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/sm90a/cluster_norm_steps.cuh"
#include "cuda/sm90a/glu_epi.cuh"

namespace {

constexpr int CG_BNA = 32;                  /* act columns per chunk */
constexpr int CG_CHUNKS = 3;                /* chunks per pass: 96 accumulators a thread */
constexpr int CG_PASS = CG_BNA * CG_CHUNKS; /* act columns per pass */
constexpr int CG_CHUNK_BYTES = 2 * CG_BNA * ROW_BYTES;

template <int WN, int CL>
struct cg_cfg {
    static constexpr int H = WN * CL;
    static constexpr int A_BYTES = CN_BM * ROW_BYTES;
    static constexpr int O_STAGE = A_BYTES + WN * ROW_BYTES;
    static constexpr int O_RING = 96 * 1024;
    static constexpr int OS = O_RING / O_STAGE;
    static constexpr int G_STAGE = CG_CHUNKS * CG_CHUNK_BYTES;
    static constexpr int GS = 4;
    static constexpr int XBUF = CN_BM * WN * 2 + CN_BM * 4; /* x / normalised block, invs */
    static constexpr int BARS = 2 * (OS + GS) * 8;
    static constexpr int SMEM = O_RING + GS * G_STAGE + XBUF + SLUT_BYTES + BARS + 1024;
    static_assert(CN_BM * H * 2 <= O_RING, "the gathered tile fits o_proj's ring");
};

struct cg_args {
    int M, kblocks, passes; /* rows; k blocks of H (both GEMMs); gate_up passes */
    uint16_t *h;
    float eps;
    glu_epi<CG_BNA>::args g;
};

template <int WN, int CL>
__global__ void __launch_bounds__(256, 1)
    cluster_glu_kernel(const __grid_constant__ CUtensorMap tm_a,
                       const __grid_constant__ CUtensorMap tm_w,
                       const __grid_constant__ CUtensorMap tm_gu, const cg_args p) {
#ifdef HRMT_SM90A
    using C = cg_cfg<WN, CL>;
    constexpr int OS = C::OS, GS = C::GS, H = C::H;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *gring = smem + C::O_RING;
    uint16_t *xs = (uint16_t *)(gring + GS * C::G_STAGE); /* [64][WN] */
    float *xinv = (float *)(xs + CN_BM * WN);
    uint8_t *slut = (uint8_t *)(xinv + CN_BM);
    uint64_t *ofull = (uint64_t *)(slut + SLUT_BYTES), *oempty = ofull + OS;
    uint64_t *gfull = oempty + OS, *gempty = gfull + GS;
    const uint32_t rank = cl_rank();
    const int wg = threadIdx.x / 128, kb_n = p.kblocks, gtotal = p.passes * kb_n;
    const int m0 = (int)(blockIdx.x / CL) * CN_BM, n0 = (int)rank * WN;
    const int a0 = (int)rank * p.passes * CG_PASS; /* this CTA's first act column */
    if (threadIdx.x == 0) {
        ring_init(ofull, oempty, OS, 4); /* one arrive per consumer warp */
        ring_init(gfull, gempty, GS, 4);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        /* gate_up stage i (pass i / kb_n, k block i % kb_n) into ring slot s. */
        auto g_load = [&](int i, int s) {
            const int kb = i % kb_n, col0 = a0 + (i / kb_n) * CG_PASS;
            uint8_t *st = gring + s * C::G_STAGE;
            mbar_expect_tx(&gfull[s], C::G_STAGE);
#pragma unroll
            for (int ch = 0; ch < CG_CHUNKS; ch++) {
                const int col = col0 + ch * CG_BNA;
                tma_load(st + ch * CG_CHUNK_BYTES, &tm_gu, &gfull[s], kb * BK, col);
                tma_load(st + ch * CG_CHUNK_BYTES + CG_BNA * ROW_BYTES, &tm_gu, &gfull[s], kb * BK,
                         p.g.I + col);
            }
        };
        int gi = 0, gs = 0;
        unsigned gph = 0;
        if (threadIdx.x == 0) {
            /* W_o and W_gu are never written: their first stages go out
             * before the wait for the kernel before. */
            const int pre = kb_n < OS ? kb_n : OS;
            for (int kb = 0; kb < pre; kb++) {
                mbar_expect_tx(&ofull[kb], C::O_STAGE);
                tma_load(smem + kb * C::O_STAGE + C::A_BYTES, &tm_w, &ofull[kb], kb * BK, n0);
            }
            for (; gi < (gtotal < GS ? gtotal : GS); gi++) {
                g_load(gi, gs);
                ring_next(gs, gph, GS);
            }
            pdl_wait();
            pdl_trigger();
            int s = 0;
            unsigned ph = 0;
            for (int kb = 0; kb < kb_n; kb++) {
                uint8_t *st = smem + s * C::O_STAGE;
                if (kb >= pre) {
                    mbar_wait(&oempty[s], ph ^ 1);
                    mbar_expect_tx(&ofull[s], C::O_STAGE);
                    tma_load(st + C::A_BYTES, &tm_w, &ofull[s], kb * BK, n0);
                }
                tma_load(st, &tm_a, &ofull[s], kb * BK, m0);
                ring_next(s, ph, OS);
            }
        }
        /* The cluster's barriers (x, invs, normalised block; the gather's
         * end), its first warp converged first; the rest of W_gu after them:
         * its slots come back only once the gate_up products run. */
        __syncwarp();
        cl_sync();
        cl_sync();
        cl_sync();
        cl_arrive();
        if (threadIdx.x == 0) {
            for (; gi < gtotal; gi++) {
                mbar_wait(&gempty[gs], gph ^ 1);
                g_load(gi, gs);
                ring_next(gs, gph, GS);
            }
        }
        __syncwarp();
        cl_wait();
        return;
    }
    const int warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
    /* The table window: data of no kernel before. */
    glu_epi<CG_BNA>::epi_load(slut, threadIdx.x - 128, 128, p.g);
    pdl_wait(); /* before reading h */
    pdl_trigger();
    cn_thread<WN> th(p.h, p.M, H, m0, n0, warp, lane);
    /* Opaque zeros (cluster_norm_wgmma.cu: ptxas C7520). */
    float acc[WN / 2];
#pragma unroll
    for (int i = 0; i < WN / 2; i++) asm volatile("mov.b32 %0, 0;" : "=f"(acc[i]));
    int s = 0, prev = -1;
    unsigned ph = 0;
    ring_products<WN>(acc, smem, C::O_STAGE, C::A_BYTES, ofull, oempty, OS, kb_n, s, ph, prev,
                      lane);
    th.residual(acc, xs); /* 1. */
    cl_sync();
    cn_row_invs<WN, CL>(xs, xinv, rank, m0, p.M, p.eps, warp, lane); /* 2. */
    cl_sync();
    /* 3. out = bf16(x inv) over this CTA's block of h, and over its x in xs
     * (the peers' reads of x ended at the barrier); rows past M as zeros. */
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const float inv = th.live[hf] ? xinv[th.lr0 + 8 * hf] : 0.0f;
#pragma unroll
        for (int i = 0; i < WN / 8; i++) {
            const uint32_t v = th.live[hf] ? th.normed(acc, inv, i, hf) : 0u;
            if (th.live[hf]) *(uint32_t *)(th.hrow[hf] + 8 * i + 2 * th.c) = v;
            *(uint32_t *)(xs + (th.lr0 + 8 * hf) * WN + 8 * i + 2 * th.c) = v;
        }
    }
    cl_sync();
    /* 4. The whole normalised tile from the cluster into o_proj's ring (its
     * products are done): k block kb at kb 8 KB, row r's 16-byte chunk j at
     * r 128 + (j ^ (r % 8)) 16 (the copy engine's 128-byte swizzle). Eight
     * loads in flight a thread. */
    constexpr int CH = H / 8, EL = CN_BM * CH / 128;
    static_assert(EL % 8 == 0, "whole batches of eight chunks a thread");
    for (int e0 = 0; e0 < EL; e0 += 8) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const int e = (e0 + u) * 128 + (threadIdx.x - 128), r = e / CH, col = (e % CH) * 8;
            v[u] = cl_ld_v4(cl_map(xs + r * WN + col % WN, (uint32_t)(col / WN)));
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const int e = (e0 + u) * 128 + (threadIdx.x - 128), r = e / CH, j = e % CH;
            *(uint4 *)(smem + (j / 8) * C::A_BYTES + r * ROW_BYTES + (((j % 8) ^ (r % 8)) * 16)) =
                v[u];
        }
    }
    /* The tile's generic-proxy writes seen by wgmma (the async proxy), by
     * the whole warpgroup; the peers may leave once every CTA read them. */
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 1, 128;" ::: "memory");
    cl_arrive();
    /* 5. gate_up + SwiGLU, pass by pass. */
    int gs = 0, gprev = -1;
    unsigned gph = 0;
    for (int pass = 0; pass < p.passes; pass++) {
        float ga[CG_CHUNKS][CG_BNA];
#pragma unroll
        for (int ch = 0; ch < CG_CHUNKS; ch++)
#pragma unroll
            for (int i = 0; i < CG_BNA; i++) asm volatile("mov.b32 %0, 0;" : "=f"(ga[ch][i]));
        for (int kb = 0; kb < kb_n; kb++) {
            mbar_wait(&gfull[gs], gph);
            const uint8_t *st = gring + gs * C::G_STAGE;
            const uint64_t da = desc_k128(smem + kb * C::A_BYTES);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
                for (int ch = 0; ch < CG_CHUNKS; ch++)
                    wgmma_n<2 * CG_BNA>(ga[ch], da + 2 * kk,
                                        desc_k128(st + ch * CG_CHUNK_BYTES) + 2 * kk);
            wg_commit();
            wg_wait<1>(); /* the previous stage is read: give it back */
            if (gprev >= 0 && lane == 0) mbar_arrive(&gempty[gprev]);
            gprev = gs;
            ring_next(gs, gph, GS);
        }
        wg_wait<0>();
#pragma unroll
        for (int ch = 0; ch < CG_CHUNKS; ch++)
#pragma unroll
            for (int i = 0; i < CG_BNA; i++) asm volatile("" : "+f"(ga[ch][i])::"memory");
        if (lane == 0) mbar_arrive(&gempty[gprev]);
        gprev = -1;
#pragma unroll
        for (int ch = 0; ch < CG_CHUNKS; ch++)
            glu_epi<CG_BNA>::store<1>(*reinterpret_cast<float(*)[1][CG_BNA]>(&ga[ch]), m0,
                                      a0 + pass * CG_PASS + ch * CG_BNA, warp, lane, p.g, slut);
    }
    cl_wait();
#endif
}

/* How many clusters of CL such CTAs can run at once (0: none). */
template <int WN, int CL>
int cg_fits(const hrmt_cuda *cu) {
    using C = cg_cfg<WN, CL>;
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    auto kern = cluster_glu_kernel<WN, CL>;
    if (!image_loads(kern, C::SMEM, per_block) || smem_opt_in(kern, C::SMEM) != cudaSuccess ||
        (CL > 8 && cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                       cudaSuccess)) {
        (void)cudaGetLastError();
        return 0;
    }
    return cluster_fits(kern, CL, 256, C::SMEM);
}

template <int WN, int CL>
hrmt_status cg_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                      const void *att, const void *w_o, void *h, const void *w_gu, void *act,
                      int *done) {
    using C = cg_cfg<WN, CL>;
    const size_t H = m->hidden, I = m->inter;
    CUtensorMap ta, tw, tg;
    if (!encode(fn, &ta, att, rows, H, H, CN_BM) || !encode(fn, &tw, w_o, H, H, H, WN) ||
        !encode(fn, &tg, w_gu, 2 * I, H, H, CG_BNA))
        return HRMT_OK; /* *done stays 0: the other kernels serve */
    /* Its shared-memory (and cluster-size) opt-in was made at model load by
     * cg_fits, which this model's settings passed. */
    const cg_args p{(int)rows,
                    (int)(H / BK),
                    (int)(I / CL / CG_PASS),
                    (uint16_t *)h,
                    (float)m->cfg.rms_norm_eps,
                    {{(int)rows, 0, (int)(H / BK)},
                     (int)I,
                     m->ctx->cuda->silu_bf16,
                     (uint16_t *)act,
                     (int)I,
                     cu_model(m)->glu_slut}};
    const cudaError_t e = cluster_launch(
        cluster_glu_kernel<WN, CL>, CL, dim3((unsigned)((rows + CN_BM - 1) / CN_BM * CL)),
        dim3(256), C::SMEM, cu_stream(m), cu_model(m)->pdl, ta, tw, tg, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda cluster o_proj + norm + gate_up");
    *done = 1;
    return cu_check(m->ctx, "cuda cluster o_proj + norm + gate_up");
}

} // namespace

int cu_cluster_glu_clusters(const hrmt_model *m, int ctas) {
    const hrmt_cuda *cu = m->ctx->cuda;
    const size_t H = m->hidden, I = m->inter;
    if (m->dt != HRMT_BF16 || cu->prop.major != 9 || cu->prop.minor != 0 || !cu->silu_bf16)
        return 0;
    if ((ctas != 8 && ctas != 16) || I % ((size_t)ctas * CG_PASS) != 0 || I > (size_t)INT32_MAX / 4)
        return 0;
    if (!encode_fn()) return 0;
    if (H == 512) return ctas == 16 ? cg_fits<32, 16>(cu) : cg_fits<64, 8>(cu);
    if (H == 256 && ctas == 8) return cg_fits<32, 8>(cu);
    return 0;
}

hrmt_status cu_cluster_glu(const hrmt_model *m, int ctas, size_t rows, const void *att,
                           const void *w_o, void *h, const void *w_gu, void *act, int *done) {
    *done = 0;
    /* 4-byte pairs of h; sizes the kernel's int arithmetic holds. */
    if (rows == 0 || rows > (size_t)INT32_MAX / 2 || (uintptr_t)h % 4 != 0) return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    if (m->hidden == 512 && ctas == 16)
        return cg_launch<32, 16>(m, fn, rows, att, w_o, h, w_gu, act, done);
    if (m->hidden == 512 && ctas == 8)
        return cg_launch<64, 8>(m, fn, rows, att, w_o, h, w_gu, act, done);
    if (m->hidden == 256 && ctas == 8)
        return cg_launch<32, 8>(m, fn, rows, att, w_o, h, w_gu, act, done);
    return HRMT_OK;
}
