/* The MLP's gate/up projection with SwiGLU in the epilogue, on Hopper's
 * warpgroup tensor-core instructions (wgmma) fed by the copy engine (TMA):
 *
 *   act[r, j] = bf16( s(bf16(A W_g^T)[r, j]) * bf16(A W_u^T)[r, j] )
 *
 * W = [W_g; W_u] is the model's gate_up weight ([2I, K], gate rows first) and
 * s the context's SwiGLU table. Launch by launch, the same is one cuBLASLt
 * GEMM writing [rows, 2I] and the table kernel reading it back: 3x the act's
 * bytes through HBM and a launch more per block, which this removes.
 *
 * Bits: each gate/up sum is one F32 chain of BF16 k16 tensor-core steps in
 * ascending k from +0 (accumulators zeroed, wgmma always accumulating) - the
 * arithmetic of the pinned cuBLASLt algorithms and of the mma.sync kernels -
 * rounded to BF16, then the table kernel's lookup, product and rounding. The
 * model checks on the device that the fused and the launch-by-launch MLP give
 * the same bytes (cuda_model/fused_glu_equals_launches).
 *
 * Shape of the kernel (persistent, one CTA per SM):
 *  - warpgroup 0: one thread issues the TMA loads into a ring of 192 KB; a
 *    stage holds a tile's rows of A and its 64 gate plus 64 up rows of W over
 *    64 k (128-byte rows in the copy engine's 128-byte swizzle, which wgmma
 *    reads as they are; gate and up rows adjacent, so one m64n128k16 covers
 *    both and a thread holds each gate next to its up);
 *  - large batches: tiles of 128 rows x 64 act columns, two consumer
 *    warpgroups taking alternate tiles (one's SwiGLU and stores overlap the
 *    other's products); small batches: 64 x 64 tiles, one consumer, so that
 *    a batch of one sample still spreads over 48 SMs.
 * Built for sm_90a only (src/CMakeLists.txt): cu_glu_applies checks that the
 * device is compute capability 9.0 and that the kernel image loads. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/bf16.cuh"
#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int BNA = 64; /* act columns per tile: 64 gate + 64 up W rows */

/* MSUB m64 row blocks per tile (a warpgroup's accumulators: MSUB x 64 gate
 * and up columns), WGS consumer warpgroups, each on its own tiles. */
template <int MSUB, int WGS>
struct glu_cfg {
    static constexpr int BM = 64 * MSUB;
    static constexpr int THREADS = 128 * (WGS + 1);
    static constexpr int A_BYTES = BM * ROW_BYTES;
    static constexpr int W_BYTES = BNA * ROW_BYTES; /* gate or up part of a stage */
    static constexpr int STAGE_BYTES = A_BYTES + 2 * W_BYTES;
    static constexpr int STAGES = (192 * 1024) / STAGE_BYTES;
    /* 1024-byte alignment for the swizzle, plus the barriers. */
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + (2 * STAGES + WGS) * 8;
};

struct glu_args {
    int M, I, kblocks;
    const uint16_t *lut;
    uint16_t *act;
    int ldo;
};

template <int MSUB, int WGS>
__global__ void __launch_bounds__(glu_cfg<MSUB, WGS>::THREADS, 1)
    glu_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_w,
               const glu_args p) {
#ifdef HRMT_SM90A
    using C = glu_cfg<MSUB, WGS>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + S * C::STAGE_BYTES), *empty = full + S, *order = empty + S;
    const int wg = threadIdx.x / 128, nt = p.I / BNA, mt = (p.M + C::BM - 1) / C::BM;
    const int tiles = mt * nt, kb_n = p.kblocks;
    if (threadIdx.x == 0) {
        ring_init(full, empty, S, 4); /* one arrive per warp of the consuming warpgroup */
        for (int w = 0; w < WGS; w++) mbar_init(&order[w], 1);
        mbar_arrive(&order[0]); /* tile 0's turn */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    /* The CTA's tiles q = 0, 1, ... (tile blockIdx.x + q gridDim.x) go
     * through the ring in order, k block by k block; warpgroup q % WGS
     * computes tile q, so one warpgroup's epilogue overlaps the other's
     * products. The warpgroups take turns (order[]) to wait on the ring, so
     * that none waits on a stage's parity a whole phase ahead of the stage. */
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x != 0) return;
        int s = 0;
        unsigned ph = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int m0 = (t / nt) * C::BM, n0 = (t % nt) * BNA;
            for (int kb = 0; kb < kb_n; kb++) {
                mbar_wait(&empty[s], ph ^ 1);
                uint8_t *st = smem + s * C::STAGE_BYTES;
                mbar_expect_tx(&full[s], C::STAGE_BYTES);
                tma_load(st, &tm_a, &full[s], kb * BK, m0);
                tma_load(st + C::A_BYTES, &tm_w, &full[s], kb * BK, n0);
                tma_load(st + C::A_BYTES + C::W_BYTES, &tm_w, &full[s], kb * BK, p.I + n0);
                if (++s == S) {
                    s = 0;
                    ph ^= 1;
                }
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int cw = wg - 1, warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
    int q = cw;
    unsigned turn = 0;
    for (int t = blockIdx.x + cw * gridDim.x; t < tiles; t += WGS * gridDim.x, q += WGS) {
        const int m0 = (t / nt) * C::BM, n0 = (t % nt) * BNA;
        const unsigned base = (unsigned)q * (unsigned)kb_n; /* ring uses before this tile */
        int s = (int)(base % S);
        unsigned ph = (base / S) & 1;
        /* acc[ms][0..31]: gate columns (n8 tiles 0-7), [32..63]: up (8-15). */
        float acc[MSUB][64];
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < 64; i++) acc[ms][i] = 0.0f;
        int prev = -1;
        mbar_wait(&order[cw], turn);
        turn ^= 1;
        for (int kb = 0; kb < kb_n; kb++) {
            mbar_wait(&full[s], ph);
            const uint8_t *st = smem + s * C::STAGE_BYTES;
            const uint64_t dw = desc_k128(st + C::A_BYTES); /* gate then up rows: n = 128 */
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
                for (int ms = 0; ms < MSUB; ms++)
                    wgmma_n128(acc[ms], desc_k128(st + ms * 64 * ROW_BYTES) + 2 * kk, dw + 2 * kk);
            wg_commit();
            /* The previous stage's products are done once one group is left
             * in flight: hand its buffers back to the producer. */
            wg_wait<1>();
            if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
            prev = s;
            if (++s == S) {
                s = 0;
                ph ^= 1;
            }
        }
        /* Every ring use of this tile has landed: the next tile's turn. */
        if (threadIdx.x % 128 == 0) mbar_arrive(&order[(cw + 1) % WGS]);
        wg_wait<0>();
        /* Keep the epilogue's reads of the accumulators after the wait. */
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < 64; i++) asm volatile("" : "+f"(acc[ms][i])::"memory");
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
        /* Epilogue: thread (warp, lane) holds rows warp * 16 + lane / 4 (+ 8)
         * of each m64 block, columns 8 i + 2 (lane % 4) (+ 1) of n8 tile i.
         * All table loads are issued before the first store: a store
         * between them (the compiler cannot tell act from the table)
         * would make each load wait for the one before it. */
        constexpr int NP = MSUB * (BNA / 8) * 2; /* column pairs per thread */
        uint32_t sg[NP];
        float uv[2 * NP];
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < BNA / 8; i++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int q = (ms * (BNA / 8) + i) * 2 + hf;
                    uint32_t s2 = 0;
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const uint16_t gb = hrmt_cu_f32_to_bf16(acc[ms][4 * i + 2 * hf + e]);
                        uv[2 * q + e] =
                            rc::bf16_to_f(hrmt_cu_f32_to_bf16(acc[ms][32 + 4 * i + 2 * hf + e]));
                        s2 |= (uint32_t)__ldg(p.lut + gb) << (16 * e);
                    }
                    sg[q] = s2;
                }
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++) {
            const int r0 = m0 + ms * 64 + warp * 16 + lane / 4;
#pragma unroll
            for (int i = 0; i < BNA / 8; i++) {
                const int col = n0 + 8 * i + 2 * (lane & 3);
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int row = r0 + 8 * hf, q = (ms * (BNA / 8) + i) * 2 + hf;
                    if (row >= p.M) continue;
                    const float o0 =
                        rc::fmul(rc::bf16_to_f((uint16_t)(sg[q] & 0xffffu)), uv[2 * q]);
                    const float o1 =
                        rc::fmul(rc::bf16_to_f((uint16_t)(sg[q] >> 16)), uv[2 * q + 1]);
                    *(uint32_t *)(p.act + (size_t)row * p.ldo + col) =
                        rc::pack_bf16x2_arith(o0, o1);
                }
            }
        }
    }
#endif
}

template <int MSUB, int WGS>
cudaError_t glu_prepare() {
    return cudaFuncSetAttribute(glu_kernel<MSUB, WGS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                glu_cfg<MSUB, WGS>::SMEM);
}

template <int MSUB, int WGS>
hrmt_status glu_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                       const void *a, const void *w, void *act) {
    using C = glu_cfg<MSUB, WGS>;
    const size_t H = m->hidden, I = m->inter;
    CUtensorMap ta, tw;
    if (!encode(fn, &ta, a, rows, H, H, C::BM) || !encode(fn, &tw, w, 2 * I, H, H, BNA))
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda fused gate_up: tensor map refused");
    cudaError_t e = glu_prepare<MSUB, WGS>();
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda fused gate_up: shared memory");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t tiles = (rows + C::BM - 1) / C::BM * (I / BNA), ctas = (tiles + WGS - 1) / WGS;
    const unsigned grid = (unsigned)(ctas < (size_t)sms ? ctas : (size_t)sms);
    glu_args p{(int)rows, (int)I, (int)(H / BK), m->ctx->cuda->silu_bf16, (uint16_t *)act, (int)I};
    glu_kernel<MSUB, WGS><<<grid, C::THREADS, C::SMEM, cu_stream(m)>>>(ta, tw, p);
    return cu_check(m->ctx, "cuda fused gate_up");
}

} // namespace

int cu_glu_applies(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    if (m->dt != HRMT_BF16 || cu->prop.major != 9 || cu->prop.minor != 0 || !cu->silu_bf16)
        return 0;
    const size_t H = m->hidden, I = m->inter;
    /* Whole 64-wide k blocks, whole tiles of act columns, 16-byte row strides. */
    if (H % BK != 0 || I % BNA != 0 || H > (size_t)INT32_MAX / 2 || I > (size_t)INT32_MAX / 4)
        return 0;
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    if (per_block < (size_t)glu_cfg<2, 2>::SMEM || per_block < (size_t)glu_cfg<1, 1>::SMEM)
        return 0;
    /* The sm_90a image must load on this device (another 9.0 part, a driver). */
    cudaFuncAttributes fa;
    if (cudaFuncGetAttributes(&fa, glu_kernel<2, 2>) != cudaSuccess ||
        cudaFuncGetAttributes(&fa, glu_kernel<1, 1>) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return encode_fn() != nullptr;
}

hrmt_status cu_glu_setting(hrmt_model *m) {
    const char *env = getenv("HRMT_CUDA_FUSED_GLU");
    if (env && strcmp(env, "0") != 0 && strcmp(env, "1") != 0)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "HRMT_CUDA_FUSED_GLU='%s' is not 0 or 1",
                         env);
    /* On wherever it applies: faster than cuBLASLt + the table kernel, or
     * level with it, at every batch on the H200 (docs/CUDA.md). */
    cu_model(m)->glu = !(env && !strcmp(env, "0")) && cu_glu_applies(m);
    env = getenv("HRMT_CUDA_FUSED_NORM");
    if (env && strcmp(env, "0") != 0 && strcmp(env, "1") != 0)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "HRMT_CUDA_FUSED_NORM='%s' is not 0 or 1",
                         env);
    /* Opt-in: slower than the GEMM + row kernel at every batch on the H200
     * (docs/CUDA.md: a 64-row tile re-reads all of W from L2, and one tile's
     * norm epilogue runs with no products beside it). */
    cu_model(m)->pnorm = env && !strcmp(env, "1") && cu_proj_norm_applies(m);
    return HRMT_OK;
}

int hrmt_cuda_model_fused_glu(const hrmt_model *m) { return m->cu && cu_model(m)->glu; }

hrmt_status cu_glu(const hrmt_model *m, size_t rows, const void *a, const void *w, void *act) {
    if (rows == 0) return HRMT_OK;
    if (rows > (size_t)INT32_MAX - 128)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda fused gate_up: %zu rows", rows);
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn)
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda fused gate_up: no cuTensorMapEncodeTiled");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    /* 128 x 64 tiles, two warpgroups taking turns, once they fill the SMs
     * twice; 64 x 64 tiles, one warpgroup per CTA, spread small batches. */
    const size_t big_tiles = (rows + 127) / 128 * (m->inter / BNA);
    if (big_tiles >= 2 * (size_t)sms) return glu_launch<2, 2>(m, fn, rows, a, w, act);
    return glu_launch<1, 1>(m, fn, rows, a, w, act);
}
