/* A projection back to the hidden width with the block's residual + RMSNorm
 * in the epilogue (o_proj and down_proj), on wgmma fed by TMA, for the
 * batches past the cluster form's one wave (cluster_norm_wgmma.cu):
 *
 *   h[r, :] = rmsnorm( bf16( h[r, :] + bf16(A W^T)[r, :] ) )
 *
 * Launch by launch this is a GEMM writing proj [rows, H] and the row kernel
 * reading proj and h back: at batch 256 the row kernel's passes are ~0.8 ms
 * of an ~8.4 ms step on the H200.
 *
 * Shape: a cluster of two CTAs per 128-row tile, CTA r taking the H / 2
 * columns from r H / 2 (NH = 256 at H = 512), persistent over the tiles. In
 * each CTA one producer thread feeds a TMA ring (A's 128 rows and the CTA's
 * NH W rows per 64 k) and two consumer warpgroups take rows 0-63 and 64-127
 * of the tile with m64nNHk16 products. Its predecessor (session 19) took
 * 64 rows x all H columns per CTA: it read all of W from L2 per 64 rows
 * and was 1.5-2.7x slower than the GEMM + row kernel; here a CTA reads half
 * of W per 128 rows (48 KB per 64-k stage for 4.2 MFLOP, against 72 KB).
 *
 * Bits: the GEMM part is each output's F32 chain of k16 steps in ascending k
 * from +0 rounded to BF16 (the pinned cuBLASLt algorithms' arithmetic, as
 * ring_gemm.cuh), then rowops_norm.cu's register form: x = bf16(h + p), lane
 * l of the reference's 32 accumulator lanes sums x[g 32 + l]^2 over the
 * row's groups g in order from +0, the quarters fold ((a_l + a_l+8) +
 * a_l+16) + a_l+24 for l < 8, those eight are summed from +0 in lane order,
 * inv = 1 / sqrt(sum / H + eps), out = bf16(x inv), each op rounded once. A
 * thread of the wgmma layout holds columns 8 i + 2 (lane % 4) + e: reference
 * lanes 8 k + 2 (lane % 4) + e of groups i / 4 (k = i % 4), so its chains run
 * in group order in registers. CTA 0 holds groups 0 .. G/2 - 1: its chains'
 * values go to CTA 1's shared memory, CTA 1 goes on from them over its
 * groups, folds and sums (the four threads of a row by shuffles), and sends
 * each row's inv back (pair_norm_math.cuh). cuda_model/fused_norm_* check
 * the bytes against the launches on the device; tests/test_pair_norm_math.cu
 * runs the same epilogue arithmetic on the host against the CPU's.
 *
 * The exchange, per tile j of the CTA's loop (parity j & 1), through two
 * mbarriers of 256 arrivals (every consumer thread of the other CTA, each
 * after its own distributed-shared-memory stores: release / acquire at
 * cluster scope):
 *   CTA 0: chains -> xpart in CTA 1 -> arrive on CTA 1's xready ->
 *          wait own invready -> read xinv -> store h
 *   CTA 1: wait own xready -> read xpart, chains, fold, inv -> xinv in
 *          CTA 0 -> arrive on CTA 0's invready -> store h
 * CTA 1 reads xpart (j) before it arrives on invready (j), which CTA 0 waits
 * for before it writes xpart (j + 1); CTA 0 reads xinv (j) before it arrives
 * on xready (j + 1), which CTA 1 waits for before it writes xinv (j + 1). So
 * one buffer of each suffices, and neither CTA exits while the other may
 * still write into it (each waits for the other's last arrival).
 * tests/test_pair_norm_protocol.c checks this protocol and the ring's on the
 * host under random interleavings.
 *
 * Opt-in (HRMT_CUDA_FUSED_NORM=1; written in session 31, first run in
 * session 31's last call): slower than the GEMM + row kernel at every batch
 * it serves. ncu at batch 256 (H100, session 38): 68.5 / 100.3 us a call
 * for o_proj / down_proj against 18.4 + 21.0 / 53.3 + 21.0 launch by
 * launch, its warps stalled mostly on lg_throttle (the residual's 4-byte
 * loads filling the LSU queue); with the 16-byte loads and stores 66.3 us a
 * call on average against 83.4, and the step at batch 64 / 128 / 256
 * 1.164 / 1.146 / 1.048x the launches' time. What remains is its L2 traffic
 * (a CTA reads half of W again for every 128-row tile: ~4.8 TB/s from L2)
 * and the epilogue, which no other tile's products hide. */
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/cluster_async.cuh"
#include "cuda/sm90a/norm_epilogue.cuh"
#include "cuda/sm90a/pair_norm_math.cuh"
#include "cuda/sm90a/quad_transpose.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int PN_BM = 128;              /* rows per tile: two consumer warpgroups of 64 */
constexpr int PN_THREADS = 384;         /* a producer warpgroup, two consumer warpgroups */
constexpr int PN_ARRIVALS = 256;        /* consumer threads of the other CTA */
constexpr int PN_WG_A = 64 * ROW_BYTES; /* one warpgroup's 64 rows of A in a stage */

template <int NH>
struct pn_cfg {
    static constexpr int H = 2 * NH;
    static constexpr int A_BYTES = PN_BM * ROW_BYTES;
    static constexpr int STAGE_BYTES = A_BYTES + NH * ROW_BYTES;
    static constexpr int STAGES = (192 * 1024) / STAGE_BYTES;
    /* CTA 0's lane chains for CTA 1 (32 a row), CTA 1's inv for CTA 0. */
    static constexpr int XBUF = PN_BM * 32 * 4 + PN_BM * 4;
    static constexpr int SMEM = STAGES * STAGE_BYTES + XBUF + 1024 + (2 * STAGES + 2) * 8;
};

struct pn_args {
    int M, kblocks;
    uint16_t *h;
    float eps;
};

template <int NH>
__global__ void __launch_bounds__(PN_THREADS, 1)
    proj_norm_kernel(const __grid_constant__ CUtensorMap tm_a,
                     const __grid_constant__ CUtensorMap tm_w, const pn_args p) {
#ifdef HRMT_SM90A
    using C = pn_cfg<NH>;
    constexpr int S = C::STAGES, H = C::H, NI = NH / 8, GH = NH / 32;
    static_assert(NI % 4 == 0, "whole quads of 16-byte chunks");
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_align1024(smem_raw);
    float *xpart = (float *)(smem + S * C::STAGE_BYTES), *xinv = xpart + PN_BM * 32;
    uint64_t *full = (uint64_t *)(xinv + PN_BM), *empty = full + S;
    uint64_t *xready = empty + S, *invready = xready + 1;
    const uint32_t rank = cl_rank();
    const int wg = warpgroup_idx(), n0 = (int)rank * NH, kb_n = p.kblocks;
    const int tiles = (p.M + PN_BM - 1) / PN_BM, cluster = (int)(blockIdx.x / 2),
              clusters = (int)(gridDim.x / 2);
    if (threadIdx.x == 0) {
        ring_init(full, empty, S, 8); /* one arrive per consumer warp */
        mbar_init(xready, PN_ARRIVALS);
        mbar_init(invready, PN_ARRIVALS);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    /* Both CTAs' barriers exist before either arrives on the other's. */
    cl_sync();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x != 0) return;
        /* W is never written: the first tile's first stages of it go out
         * before the wait for the kernel before. */
        const int pre = cluster < tiles ? (kb_n < S ? kb_n : S) : 0;
        for (int kb = 0; kb < pre; kb++) {
            mbar_expect_tx(&full[kb], C::STAGE_BYTES);
            tma_load(smem + kb * C::STAGE_BYTES + C::A_BYTES, &tm_w, &full[kb], kb * BK, n0);
        }
        pdl_wait();
        pdl_trigger();
        int s = 0, first = 1;
        unsigned ph = 0;
        for (int t = cluster; t < tiles; t += clusters, first = 0)
            for (int kb = 0; kb < kb_n; kb++) {
                uint8_t *st = smem + s * C::STAGE_BYTES;
                if (!(first && kb < pre)) {
                    mbar_wait(&empty[s], ph ^ 1);
                    mbar_expect_tx(&full[s], C::STAGE_BYTES);
                    tma_load(st + C::A_BYTES, &tm_w, &full[s], kb * BK, n0);
                }
                tma_load(st, &tm_a, &full[s], kb * BK, t * PN_BM);
                ring_next(s, ph, S);
            }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    pdl_wait(); /* before reading h */
    pdl_trigger();
    const int cw = wg - 1, warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31, c = lane & 3;
    const int lr0 = 64 * cw + warp * 16 + lane / 4; /* tile row of hf = 0 (hf = 1: + 8) */
    const uint32_t xpart_peer = cl_map(xpart, 1), xinv_peer = cl_map(xinv, 0);
    const uint32_t xready_peer = cl_map(xready, 1), invready_peer = cl_map(invready, 0);
    int s = 0;
    unsigned ph = 0, xph = 0;
    for (int t = cluster; t < tiles; t += clusters, xph ^= 1) {
        const int row0 = t * PN_BM + lr0;
        uint16_t *hrow[2] = {p.h + (size_t)row0 * H + n0, p.h + (size_t)(row0 + 8) * H + n0};
        const bool live[2] = {row0 < p.M, row0 + 8 < p.M};
        /* The residual's values, read while the products run, 16 bytes a
         * load: thread c of the row's quad reads chunk 4 j + c, which
         * quad_transpose turns into its column pairs after the products
         * (4-byte loads of the pairs filled the LSU queue: lg_throttle).
         * Rows past M stay unread and unwritten. */
        uint4 rq[NI / 4][2];
#pragma unroll
        for (int j = 0; j < NI / 4; j++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++)
                rq[j][hf] = live[hf] ? *(const uint4 *)(hrow[hf] + 8 * (4 * j + c))
                                     : make_uint4(0u, 0u, 0u, 0u);
        /* Zeros the compiler cannot see through (cluster_norm_wgmma.cu:
         * plain zeros let ptxas serialise the wgmma chain, C7520). */
        float acc[NH / 2];
#pragma unroll
        for (int i = 0; i < NH / 2; i++) asm volatile("mov.b32 %0, 0;" : "=f"(acc[i]));
        int prev = -1;
        /* This warpgroup's 64 rows of the stage: A from cw 64 rows in, W
         * at A_BYTES from the stage's start (both 1024-byte aligned, so
         * the swizzle's phase holds). */
        ring_products<NH>(acc, smem + cw * PN_WG_A, C::STAGE_BYTES, C::A_BYTES - cw * PN_WG_A, full,
                          empty, S, kb_n, s, ph, prev, lane);
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);

            /* x = bf16(h + bf16(acc)) in place of acc, the residual's pair
             * 8 (4 j + q) + 2 c being word q of the transposed chunks. */
#pragma unroll
        for (int j = 0; j < NI / 4; j++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                uint32_t v[4] = {rq[j][hf].x, rq[j][hf].y, rq[j][hf].z, rq[j][hf].w};
                quad_transpose(v, c);
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    const int i = 4 * j + q;
                    residual_pair(acc[4 * i + 2 * hf], acc[4 * i + 2 * hf + 1], v[q]);
                }
            }
        /* Lane chains a[hf][k][e] for reference lane 8 k + 2 c + e over this
         * CTA's GH groups (pair_norm_math.cuh), CTA 1 going on from CTA 0's
         * values. */
        if (rank == 1) mbar_wait_cluster(xready, xph);
        float a[2][4][2];
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
            pn_lane_chains<GH>(acc, hf, rank == 1 ? xpart + (lr0 + 8 * hf) * 32 + 2 * c : nullptr,
                               a[hf]);
        float inv[2];
        if (rank == 0) {
#pragma unroll
            for (int hf = 0; hf < 2; hf++)
#pragma unroll
                for (int k = 0; k < 4; k++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        cl_st_f32(
                            xpart_peer + 4u * (uint32_t)((lr0 + 8 * hf) * 32 + 8 * k + 2 * c + e),
                            a[hf][k][e]);
            mbar_arrive_remote(xready_peer);
            mbar_wait_cluster(invready, xph);
            inv[0] = xinv[lr0];
            inv[1] = xinv[lr0 + 8];
        } else {
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                float f[2], fq[4][2]; /* the row's four threads' folds */
                pn_fold(a[hf], f);
#pragma unroll
                for (int cc = 0; cc < 4; cc++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        fq[cc][e] = __shfl_sync(0xffffffffu, f[e], (lane & ~3) | cc);
                inv[hf] = pn_inv(fq, (float)H, p.eps);
                if (c == 0) cl_st_f32(xinv_peer + 4u * (uint32_t)(lr0 + 8 * hf), inv[hf]);
            }
            mbar_arrive_remote(invready_peer);
        }
        /* out = bf16(x inv), transposed back into chunks for 16-byte
         * stores (every lane shuffles; only live rows store). */
#pragma unroll
        for (int j = 0; j < NI / 4; j++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                uint32_t v[4];
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    const int i = 4 * j + q;
                    v[q] = rc::pack_bf16x2_arith(rc::fmul(acc[4 * i + 2 * hf], inv[hf]),
                                                 rc::fmul(acc[4 * i + 2 * hf + 1], inv[hf]));
                }
                quad_transpose(v, c);
                if (live[hf])
                    *(uint4 *)(hrow[hf] + 8 * (4 * j + c)) = make_uint4(v[0], v[1], v[2], v[3]);
            }
    }
#endif
}

/* How many clusters of two such CTAs can run at once (0: none); the
 * kernel's shared-memory opt-in made. */
template <int NH>
int pn_fits(const hrmt_cuda *cu) {
    using C = pn_cfg<NH>;
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    auto kern = proj_norm_kernel<NH>;
    if (!image_loads(kern, C::SMEM, per_block) || smem_opt_in(kern, C::SMEM) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return cluster_fits(kern, 2, PN_THREADS, C::SMEM);
}

template <int NH>
hrmt_status pn_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                      const void *a, size_t k, const void *w, void *h) {
    using C = pn_cfg<NH>;
    CUtensorMap ta, tw;
    if (!encode(fn, &ta, a, rows, k, k, PN_BM) || !encode(fn, &tw, w, C::H, k, k, NH))
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda fused projection + norm: tensor map refused");
    /* The shared-memory opt-in was made at model load (pn_fits). */
    const size_t tiles = (rows + PN_BM - 1) / PN_BM, fit = (size_t)cu_model(m)->pnorm;
    const unsigned grid = 2u * (unsigned)(tiles < fit ? tiles : fit);
    const pn_args p{(int)rows, (int)(k / BK), (uint16_t *)h, (float)m->cfg.rms_norm_eps};
    const cudaError_t e = cluster_launch(proj_norm_kernel<NH>, 2, dim3(grid), dim3(PN_THREADS),
                                         C::SMEM, cu_stream(m), cu_model(m)->pdl, ta, tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda fused projection + norm");
    return cu_check(m->ctx, "cuda fused projection + norm");
}

} // namespace

int cu_proj_norm_clusters(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    const size_t H = m->hidden, I = m->inter;
    if (m->dt != HRMT_BF16 || cu->prop.major != 9 || cu->prop.minor != 0) return 0;
    if ((H != 256 && H != 512) || I % BK != 0 || I > (size_t)INT32_MAX / 2) return 0;
    if (!encode_fn()) return 0;
    return H == 512 ? pn_fits<256>(cu) : pn_fits<128>(cu);
}

hrmt_status cu_proj_norm(const hrmt_model *m, size_t rows, const void *a, size_t k, const void *w,
                         void *h) {
    if (rows == 0) return HRMT_OK;
    if (rows > (size_t)INT32_MAX - PN_BM || k % BK != 0 || k > (size_t)INT32_MAX / 2)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda fused projection + norm: %zu x %zu", rows,
                         k);
    if ((uintptr_t)h % 16 != 0) /* its rows are read and written 16 bytes at a time */
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                         "cuda fused projection + norm: h is not 16-byte aligned");
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn)
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA,
                         "cuda fused projection + norm: no cuTensorMapEncodeTiled");
    if (m->hidden == 512) return pn_launch<256>(m, fn, rows, a, k, w, h);
    return pn_launch<128>(m, fn, rows, a, k, w, h);
}
