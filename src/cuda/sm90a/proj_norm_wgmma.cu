/* A projection back to the hidden width with the block's residual + RMSNorm
 * in the epilogue (o_proj and down_proj), on wgmma fed by TMA:
 *
 *   h[r, :] = rmsnorm( bf16( h[r, :] + bf16(A W^T)[r, :] ) )
 *
 * Launch by launch this is a cuBLASLt GEMM writing proj [rows, H] and the
 * row kernel reading proj and h back: one launch and two passes over the
 * rows fewer.
 *
 * Bits: the GEMM part is each output's F32 chain of k16 steps in ascending k
 * from +0 rounded to BF16 (as glu_wgmma.cu; the pinned cuBLASLt algorithms'
 * arithmetic), then rowops_norm.cu's register form: x = bf16(h + p), lane l
 * of the reference's 32 accumulator lanes sums x[g * 32 + l]^2 over the row's
 * groups g in order from +0, the quarters fold ((a_l + a_l+8) + a_l+16) +
 * a_l+24 for l < 8, those eight are summed from +0 in lane order, inv = 1 /
 * sqrt(sum / H + eps), out = bf16(x * inv), each op rounded once. A thread of
 * the wgmma layout holds columns 8 i + 2 (lane % 4) + e: reference lanes
 * 8 k + 2 (lane % 4) + e of groups i / 4 (k = i % 4), so its chains run in
 * group order in registers; the second warpgroup (columns 256..511) takes
 * the first's chains from shared memory and goes on, the four threads of a
 * row share their folds by shuffles. cuda_model/fused_norm_equals_launches
 * checks the bytes against the launches on the device.
 *
 * Shape: persistent, one CTA per SM, tiles of 64 rows x H (H = 256 or 512):
 * one producer thread (TMA ring of 64 k, A's 64 rows plus all H rows of W)
 * and H / 256 consumer warpgroups of m64n256k16 each. */
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/norm_epilogue.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int PN_BM = 64;

template <int NWG>
struct pn_cfg {
    static constexpr int H = 256 * NWG;
    static constexpr int THREADS = 128 * (NWG + 1);
    static constexpr int A_BYTES = PN_BM * ROW_BYTES;
    static constexpr int STAGE_BYTES = A_BYTES + H * ROW_BYTES;
    static constexpr int STAGES = (216 * 1024) / STAGE_BYTES > 4 ? 4 : (216 * 1024) / STAGE_BYTES;
    static constexpr int XBUF = PN_BM * 32 * 4 + PN_BM * 4; /* lane partials, inv per row */
    static constexpr int SMEM = STAGES * STAGE_BYTES + XBUF + 1024 + 2 * STAGES * 8;
};

struct pn_args {
    int M, kblocks;
    uint16_t *h;
    float eps;
};

template <int NWG>
__global__ void __launch_bounds__(pn_cfg<NWG>::THREADS, 1)
    proj_norm_kernel(const __grid_constant__ CUtensorMap tm_a,
                     const __grid_constant__ CUtensorMap tm_w, const pn_args p) {
#ifdef HRMT_SM90A
    using C = pn_cfg<NWG>;
    constexpr int S = C::STAGES, H = C::H;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    float *xpart = (float *)(smem + S * C::STAGE_BYTES), *xinv = xpart + PN_BM * 32;
    uint64_t *full = (uint64_t *)(xinv + PN_BM), *empty = full + S;
    const int wg = threadIdx.x / 128, tiles = (p.M + PN_BM - 1) / PN_BM, kb_n = p.kblocks;
    ring_setup(full, empty, S, 4 * NWG); /* one arrive per consumer warp */
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x != 0) return;
        int s = 0;
        unsigned ph = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x)
            for (int kb = 0; kb < kb_n; kb++) {
                mbar_wait(&empty[s], ph ^ 1);
                uint8_t *st = smem + s * C::STAGE_BYTES;
                mbar_expect_tx(&full[s], C::STAGE_BYTES);
                tma_load(st, &tm_a, &full[s], kb * BK, t * PN_BM);
                for (int j = 0; j < NWG; j++) /* boxes of 256 W rows */
                    tma_load(st + C::A_BYTES + j * 256 * ROW_BYTES, &tm_w, &full[s], kb * BK,
                             j * 256);
                ring_next(s, ph, S);
            }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1, warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31, c = lane & 3;
    int s = 0;
    unsigned ph = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        float acc[128];
#pragma unroll
        for (int i = 0; i < 128; i++) acc[i] = 0.0f;
        int prev = -1;
        ring_products<256>(acc, smem, C::STAGE_BYTES, C::A_BYTES + cw * 256 * ROW_BYTES, full,
                           empty, S, kb_n, s, ph, prev, lane);
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);

        /* x = bf16(h + bf16(acc)) in place of acc; rows past M stay unread. */
        const int lr0 = warp * 16 + lane / 4; /* tile row of hf = 0 (hf = 1: + 8) */
        const int row0 = t * PN_BM + lr0;
        uint16_t *hrow[2] = {p.h + (size_t)row0 * H, p.h + (size_t)(row0 + 8) * H};
        const bool live[2] = {row0 < p.M, row0 + 8 < p.M};
#pragma unroll
        for (int i = 0; i < 32; i++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int col = cw * 256 + 8 * i + 2 * c;
                const uint32_t r = live[hf] ? *(const uint32_t *)(hrow[hf] + col) : 0u;
                residual_pair(acc[4 * i + 2 * hf], acc[4 * i + 2 * hf + 1], r);
            }
        /* Lane chains: a[hf][k][e] for reference lane 8 k + 2 c + e over this
         * warpgroup's 8 groups (n8 tiles i = 4 g + k), on from the previous
         * warpgroup's partial. */
        float a[2][4][2];
        if (cw > 0) asm volatile("bar.sync 1, %0;" ::"n"(128 * NWG) : "memory");
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
#pragma unroll
            for (int k = 0; k < 4; k++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float v = cw > 0 ? xpart[(lr0 + 8 * hf) * 32 + 8 * k + 2 * c + e] : 0.0f;
#pragma unroll
                    for (int g = 0; g < 8; g++) {
                        const float x = acc[4 * (4 * g + k) + 2 * hf + e];
                        v = rc::fadd(v, rc::fmul(x, x));
                    }
                    a[hf][k][e] = v;
                }
        if (cw < NWG - 1) {
#pragma unroll
            for (int hf = 0; hf < 2; hf++)
#pragma unroll
                for (int k = 0; k < 4; k++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        xpart[(lr0 + 8 * hf) * 32 + 8 * k + 2 * c + e] = a[hf][k][e];
            asm volatile("bar.sync 1, %0;" ::"n"(128 * NWG) : "memory"); /* partials out */
            asm volatile("bar.sync 2, %0;" ::"n"(128 * NWG) : "memory"); /* inv in */
        }
        float inv[2];
        if (cw == NWG - 1) {
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                float f[2];
#pragma unroll
                for (int e = 0; e < 2; e++)
                    f[e] = rc::fadd(rc::fadd(rc::fadd(a[hf][0][e], a[hf][1][e]), a[hf][2][e]),
                                    a[hf][3][e]);
                float sum = 0.0f; /* reference lanes 0..7 = (c, e) in order */
#pragma unroll
                for (int cc = 0; cc < 4; cc++)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        sum = rc::fadd(sum, __shfl_sync(0xffffffffu, f[e], (lane & ~3) | cc));
                inv[hf] = rc::fdiv(1.0f, rc::fsqrt(rc::fadd(rc::fdiv(sum, (float)H), p.eps)));
                if (NWG > 1 && c == 0) xinv[lr0 + 8 * hf] = inv[hf];
            }
            if (NWG > 1) asm volatile("bar.sync 2, %0;" ::"n"(128 * NWG) : "memory");
        } else {
            inv[0] = xinv[lr0];
            inv[1] = xinv[lr0 + 8];
        }
#pragma unroll
        for (int i = 0; i < 32; i++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                if (!live[hf]) continue;
                const int col = cw * 256 + 8 * i + 2 * c;
                *(uint32_t *)(hrow[hf] + col) =
                    rc::pack_bf16x2_arith(rc::fmul(acc[4 * i + 2 * hf], inv[hf]),
                                          rc::fmul(acc[4 * i + 2 * hf + 1], inv[hf]));
            }
    }
#endif
}

template <int NWG>
hrmt_status pn_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                      const void *a, size_t k, const void *w, void *h) {
    using C = pn_cfg<NWG>;
    CUtensorMap ta, tw;
    if (!encode(fn, &ta, a, rows, k, k, PN_BM) || !encode(fn, &tw, w, C::H, k, k, 256))
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda fused projection + norm: tensor map refused");
    cudaError_t e = cudaFuncSetAttribute(proj_norm_kernel<NWG>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda fused projection + norm: shared memory");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t tiles = (rows + PN_BM - 1) / PN_BM;
    const unsigned grid = (unsigned)(tiles < (size_t)sms ? tiles : (size_t)sms);
    pn_args p{(int)rows, (int)(k / BK), (uint16_t *)h, (float)m->cfg.rms_norm_eps};
    proj_norm_kernel<NWG><<<grid, C::THREADS, C::SMEM, cu_stream(m)>>>(ta, tw, p);
    return cu_check(m->ctx, "cuda fused projection + norm");
}

} // namespace

int cu_proj_norm_applies(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    const size_t H = m->hidden, I = m->inter;
    if (m->dt != HRMT_BF16 || cu->prop.major != 9 || cu->prop.minor != 0) return 0;
    if ((H != 256 && H != 512) || I % BK != 0 || I > (size_t)INT32_MAX / 2) return 0;
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    const int need = H == 512 ? pn_cfg<2>::SMEM : pn_cfg<1>::SMEM;
    if (per_block < (size_t)need) return 0;
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, proj_norm_kernel<1>) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, proj_norm_kernel<2>) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return encode_fn() != nullptr;
}

hrmt_status cu_proj_norm(const hrmt_model *m, size_t rows, const void *a, size_t k, const void *w,
                         void *h) {
    if (rows == 0) return HRMT_OK;
    if (rows > (size_t)INT32_MAX - PN_BM)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda fused projection + norm: %zu rows", rows);
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn)
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA,
                         "cuda fused projection + norm: no cuTensorMapEncodeTiled");
    if (m->hidden == 512) return pn_launch<2>(m, fn, rows, a, k, w, h);
    return pn_launch<1>(m, fn, rows, a, k, w, h);
}
