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

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int BK = 64;       /* k per stage: one 128-byte swizzled row */
constexpr int BNA = 64;      /* act columns per tile: 64 gate + 64 up W rows */
constexpr int ROW_BYTES = BK * 2;

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

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GLU_SM90A 1
#endif

#ifdef GLU_SM90A
__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra W;\n"
        "}" ::"r"(smem_u32(b)),
        "r"(parity)
        : "memory");
}
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, uint64_t *bar, int c0,
                                         int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(dst)),
        "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
        : "memory");
}

/* Shared-memory matrix descriptor of a K-major operand in the 128-byte
 * swizzle: 8-row groups 1024 bytes apart; a k16 step moves the start 32 bytes
 * along the (swizzled) row. */
__device__ __forceinline__ uint64_t desc_k128(const void *p) {
    const uint64_t a = smem_u32(p);
    return ((a & 0x3ffff) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#define GLU_R8(i)                                                                               \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
        "+f"(d[i + 6]), "+f"(d[i + 7])

/* D[64 x N] += A[64 x 16] B[N x 16]^T, both K-major in shared memory. */
__device__ __forceinline__ void wgmma_n128(float (&d)[64], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
        "%31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
        "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, "
        "%61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}"
        : GLU_R8(0), GLU_R8(8), GLU_R8(16), GLU_R8(24), GLU_R8(32), GLU_R8(40), GLU_R8(48),
          GLU_R8(56)
        : "l"(da), "l"(db), "r"(1));
}
#endif

template <int MSUB, int WGS>
__global__ void __launch_bounds__(glu_cfg<MSUB, WGS>::THREADS, 1)
    glu_kernel(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_w,
               const glu_args p) {
#ifdef GLU_SM90A
    using C = glu_cfg<MSUB, WGS>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + S * C::STAGE_BYTES), *empty = full + S,
             *order = empty + S;
    const int wg = threadIdx.x / 128, nt = p.I / BNA, mt = (p.M + C::BM - 1) / C::BM;
    const int tiles = mt * nt, kb_n = p.kblocks;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 4); /* one arrive per warp of the consuming warpgroup */
        }
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
                    wgmma_n128(acc[ms], desc_k128(st + ms * 64 * ROW_BYTES) + 2 * kk,
                               dw + 2 * kk);
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
         * of each m64 block, columns 8 i + 2 (lane % 4) (+ 1) of n8 tile i. */
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++) {
            const int r0 = m0 + ms * 64 + warp * 16 + lane / 4;
#pragma unroll
            for (int i = 0; i < BNA / 8; i++) {
                const int col = n0 + 8 * i + 2 * (lane & 3);
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int row = r0 + 8 * hf;
                    if (row >= p.M) continue;
                    float o[2];
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const uint16_t gb = hrmt_cu_f32_to_bf16(acc[ms][4 * i + 2 * hf + e]);
                        const float uv =
                            rc::bf16_to_f(hrmt_cu_f32_to_bf16(acc[ms][32 + 4 * i + 2 * hf + e]));
                        o[e] = rc::fmul(rc::bf16_to_f(__ldg(p.lut + gb)), uv);
                    }
                    *(uint32_t *)(p.act + (size_t)row * p.ldo + col) =
                        rc::pack_bf16x2_arith(o[0], o[1]);
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

PFN_cuTensorMapEncodeTiled_v12000 encode_fn() {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        return nullptr;
    return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* A 2-D BF16 tensor map of rows x cols (row stride ld elements) read in
 * boxes of box_rows x 64 with the 128-byte swizzle; rows past the end read
 * as zeros. */
int encode(PFN_cuTensorMapEncodeTiled_v12000 fn, CUtensorMap *map, const void *base, size_t rows,
           size_t cols, size_t ld, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)(ld * 2)};
    const cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows}, elem[2] = {1, 1};
    return fn(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void *>(base), dims, strides,
              box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
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
    cu_model(m)->glu = !(env && !strcmp(env, "0")) && cu_glu_applies(m);
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
