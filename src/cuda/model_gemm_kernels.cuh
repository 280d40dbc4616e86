/* The kernels of model_gemm.cu, C = A W^T, in a header of their own so that
 * bench/cuda_gemm_check.cu can run exactly these against a reference without
 * the library. Needs only the CUDA headers.
 *
 * Every C element is one F32 accumulation over k in ascending order whatever
 * M is and wherever its row falls in a tile:
 *  - F32: SIMT chains, one __fmaf_rn per k from 0 upwards;
 *  - BF16: one wmma m16n16k16 mma_sync (bf16 in, F32 accumulate) per 16-wide
 *    k-step, steps in ascending k, from a zero accumulator.
 * The block tile (128x128 or 64x64), the warp tile, BK and the cp.async
 * pipeline only decide who computes an element and how its operands reach
 * shared memory, never its arithmetic: a 16x16 output fragment always sees
 * the same mma_sync sequence on the same values. So the tile may be chosen by
 * M and the bits stay those of the first 64x64 kernel (checked bitwise by
 * bench/cuda_gemm_check.cu).
 * Rows and columns past the matrix are zero in shared memory and never stored,
 * so they cannot affect real rows; k past K adds 0 * 0 = +0 products, and
 * acc + 0 == acc for every acc but -0, where a -0 sum stays a zero, so K
 * padding never changes a value. The epilogue rounds to BF16 (RNE, NaN kept
 * quiet, as core/bf16.h) when C is BF16. */
#ifndef HRMT_CUDA_MODEL_GEMM_KERNELS_CUH
#define HRMT_CUDA_MODEL_GEMM_KERNELS_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>
#include "cuda/bf16.cuh"
#include "cuda/cp_async.cuh"

#include <atomic>

namespace {

__device__ __forceinline__ void store_c(void *c, size_t ldc, int r, int col, float v, int bf) {
    if (bf)
        ((uint16_t *)c)[(size_t)r * ldc + col] = hrmt_cu_f32_to_bf16(v);
    else
        ((float *)c)[(size_t)r * ldc + col] = v;
}

/* ---- F32: SIMT FMA chains -------------------------------------------------- */

constexpr int FBM = 64, FBN = 64, FK = 16;

__global__ void __launch_bounds__(256)
    gemm_f32(int M, int N, int K, const float *__restrict__ A, size_t lda,
             const float *__restrict__ W, size_t ldw, void *C, size_t ldc, int out_bf16) {
    __shared__ float As[FK][FBM + 4], Ws[FK][FBN + 4];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.x * FBM, col0 = blockIdx.y * FBN;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += FK) {
#pragma unroll
        for (int v = 0; v < 4; v++) {
            int e = tid + v * 256, r = e / FK, kk = e % FK, k = k0 + kk;
            int ra = row0 + r, rw = col0 + r;
            As[kk][r] = ra < M && k < K ? A[(size_t)ra * lda + k] : 0.0f;
            Ws[kk][r] = rw < N && k < K ? W[(size_t)rw * ldw + k] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < FK; kk++) {
            float a[4], w[4];
#pragma unroll
            for (int i = 0; i < 4; i++) a[i] = As[kk][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; j++) w[j] = Ws[kk][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = __fmaf_rn(a[i], w[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int r = row0 + ty + 16 * i, col = col0 + tx + 16 * j;
            if (r < M && col < N) store_c(C, ldc, r, col, acc[i][j], out_bf16);
        }
}

/* ---- BF16: tensor cores, cp.async pipeline ---------------------------------- */

/* Block tile BM x BN, warp tile WM x WN (16x16 fragments), BK = 32 k per
 * stage, STAGES slabs in flight. LDS = BK + 8: rows 80 B apart, so the eight
 * 16-byte rows a fragment load reads fall in eight distinct bank groups. */
template <int BM_, int BN_, int WM_, int WN_, int STAGES_, int BK_ = 32>
struct bf16_cfg {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_;
    static constexpr int BK = BK_, LDS = BK + 8, LDC = BN + 4;
    static_assert(BK % 16 == 0 && WM % 16 == 0 && WN % 16 == 0, "whole fragments");
    static constexpr int WARPS = (BM / WM) * (BN / WN), THREADS = WARPS * 32;
    static constexpr int FM = WM / 16, FN = WN / 16;
    static constexpr int PIPE_BYTES = STAGES * (BM + BN) * LDS * 2;
    static constexpr int C_BYTES = BM * LDC * 4; /* epilogue staging, reuses the pipeline */
    static constexpr int SMEM = PIPE_BYTES > C_BYTES ? PIPE_BYTES : C_BYTES;
    /* Two blocks per SM keep the tensor cores fed while one waits. */
    static constexpr int MIN_BLOCKS = WM * WN > 2048 ? 1 : THREADS >= 256 ? 2 : 4;
};
/* Large M: 8 warps of 64x32, 4 stages (80 KB, dynamic shared memory). */
using cfg_large = bf16_cfg<128, 128, 64, 32, 4>;
/* Small M: the old 64x64 tile of 4 warps, pipelined (40 KB), so that a few
 * hundred rows still spread over the SMs. */
using cfg_small = bf16_cfg<64, 64, 32, 32, 4>;

/* Issues the loads of one ROWS x BK slab (rows r0.., k0..) of a row-major
 * [rows, K] matrix into dst. vec: 16-byte cp.async (K % 8 == 0, rows 16-byte
 * aligned, so a chunk is wholly in or out of the matrix); otherwise scalar
 * loads and stores, the same values. */
template <int ROWS, int THREADS, int BK, int LDS>
__device__ __forceinline__ void issue_slab(__nv_bfloat16 *dst, const uint16_t *src, size_t ld,
                                           int rows, int K, int r0, int k0, int vec) {
    constexpr int CPR = BK / 8, CHUNKS = ROWS * CPR;
    static_assert(CHUNKS % THREADS == 0, "slab chunks must spread evenly");
#pragma unroll
    for (int v = 0; v < CHUNKS / THREADS; v++) {
        int e = threadIdx.x + v * THREADS, r = e / CPR, seg = (e % CPR) * 8;
        int gr = r0 + r, gk = k0 + seg;
        __nv_bfloat16 *d = dst + r * LDS + seg;
        if (vec) {
            bool in = gr < rows && gk < K;
            cp_async16(d, in ? (const void *)(src + (size_t)gr * ld + gk) : (const void *)src,
                       in ? 16 : 0);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                uint16_t x = gr < rows && gk + i < K ? src[(size_t)gr * ld + gk + i] : 0;
                d[i] = __ushort_as_bfloat16(x);
            }
        }
    }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    gemm_bf16_pipe(int M, int N, int K, const uint16_t *__restrict__ A, size_t lda,
                   const uint16_t *__restrict__ W, size_t ldw, void *C, size_t ldc, int out_bf16,
                   int vec, int cvec) {
    using namespace nvcuda;
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, LDS = Cfg::LDS, LDC = Cfg::LDC;
    constexpr int S = Cfg::STAGES, FM = Cfg::FM, FN = Cfg::FN, T = Cfg::THREADS;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    __nv_bfloat16 *sa = (__nv_bfloat16 *)smem_raw; /* S x [BM][LDS] */
    __nv_bfloat16 *sw = sa + S * BM * LDS;         /* S x [BN][LDS] */
    float *sc = (float *)smem_raw;                 /* [BM][LDC], after the loop */
    const int warp = threadIdx.x / 32, wm = warp / (BN / Cfg::WN), wn = warp % (BN / Cfg::WN);
    const int row0 = blockIdx.x * BM, col0 = blockIdx.y * BN;
    const int nk = (K + BK - 1) / BK;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++) wmma::fill_fragment(acc[i][j], 0.0f);

            /* Prologue: slabs 0 .. S-2 in flight (an empty group when K is short,
             * so that the wait counts below stay right). */
#pragma unroll
    for (int s = 0; s < S - 1; s++) {
        if (s < nk) {
            issue_slab<BM, T, BK, LDS>(sa + s * BM * LDS, A, lda, M, K, row0, s * BK, vec);
            issue_slab<BN, T, BK, LDS>(sw + s * BN * LDS, W, ldw, N, K, col0, s * BK, vec);
        }
        cp_async_commit();
    }
    for (int kt = 0; kt < nk; kt++) {
        cp_async_wait<S - 2>(); /* slab kt has landed (this thread's part) */
        __syncthreads();        /* ... everyone's; and slab kt-1 is consumed */
        {
            const int nx = kt + S - 1, st = nx % S;
            if (nx < nk) {
                issue_slab<BM, T, BK, LDS>(sa + st * BM * LDS, A, lda, M, K, row0, nx * BK, vec);
                issue_slab<BN, T, BK, LDS>(sw + st * BN * LDS, W, ldw, N, K, col0, nx * BK, vec);
            }
            cp_async_commit();
        }
        const __nv_bfloat16 *a = sa + (kt % S) * BM * LDS + wm * Cfg::WM * LDS;
        const __nv_bfloat16 *w = sw + (kt % S) * BN * LDS + wn * Cfg::WN * LDS;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[FM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[FN];
#pragma unroll
            for (int i = 0; i < FM; i++) wmma::load_matrix_sync(fa[i], a + i * 16 * LDS + kk, LDS);
                /* W [n, k] row-major is W^T [k, n] column-major. */
#pragma unroll
            for (int j = 0; j < FN; j++) wmma::load_matrix_sync(fb[j], w + j * 16 * LDS + kk, LDS);
#pragma unroll
            for (int i = 0; i < FM; i++)
#pragma unroll
                for (int j = 0; j < FN; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }
    cp_async_wait<0>(); /* only empty groups are left, but drain before reuse */
    __syncthreads();

#pragma unroll
    for (int i = 0; i < FM; i++)
#pragma unroll
        for (int j = 0; j < FN; j++)
            wmma::store_matrix_sync(sc + (wm * Cfg::WM + i * 16) * LDC + wn * Cfg::WN + j * 16,
                                    acc[i][j], LDC, wmma::mem_row_major);
    __syncthreads();
    /* Four columns per thread; whole in-range groups go out as one store
     * when C's rows allow (cvec), the same rounded values either way. */
    for (int e = threadIdx.x * 4; e < BM * BN; e += T * 4) {
        const int r = e / BN, col = e % BN, gr = row0 + r, gc = col0 + col;
        if (gr >= M) break;                                      /* rows only grow with e */
        const float4 v4 = *(const float4 *)(sc + r * LDC + col); /* LDC % 4 == 0 */
        const float v[4] = {v4.x, v4.y, v4.z, v4.w};
        if (cvec && gc + 4 <= N) {
            if (out_bf16) {
                uint2 p;
                p.x = (uint32_t)hrmt_cu_f32_to_bf16(v[0]) | (uint32_t)hrmt_cu_f32_to_bf16(v[1])
                                                                << 16;
                p.y = (uint32_t)hrmt_cu_f32_to_bf16(v[2]) | (uint32_t)hrmt_cu_f32_to_bf16(v[3])
                                                                << 16;
                *(uint2 *)((uint16_t *)C + (size_t)gr * ldc + gc) = p;
            } else {
                *(float4 *)((float *)C + (size_t)gr * ldc + gc) =
                    make_float4(v[0], v[1], v[2], v[3]);
            }
        } else {
#pragma unroll
            for (int q = 0; q < 4; q++)
                if (gc + q < N) store_c(C, ldc, gr, gc + q, v[q], out_bf16);
        }
    }
}

/* Per-device state: the large kernel's shared-memory opt-in, done once, and
 * the SM count for the tile choice. Racing first calls both set the same
 * attribute, which is harmless. */
constexpr int GEMM_MAX_DEV = 64;
struct gemm_dev_state {
    std::atomic<int> ready; /* 0 not yet, 1 done */
    std::atomic<int> sms;
};
static gemm_dev_state g_gemm_dev[GEMM_MAX_DEV];

static cudaError_t gemm_dev_prepare(int *sms) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    gemm_dev_state *s = dev >= 0 && dev < GEMM_MAX_DEV ? &g_gemm_dev[dev] : nullptr;
    if (s && s->ready.load(std::memory_order_acquire)) {
        *sms = s->sms.load(std::memory_order_relaxed);
        return cudaSuccess;
    }
    int n = 0;
    e = cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
    e = cudaFuncSetAttribute(gemm_bf16_pipe<cfg_large>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             cfg_large::SMEM);
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(gemm_bf16_pipe<cfg_small>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, cfg_small::SMEM);
    if (e != cudaSuccess) return e;
    if (s) {
        s->sms.store(n, std::memory_order_relaxed);
        s->ready.store(1, std::memory_order_release);
    }
    *sms = n;
    return cudaSuccess;
}

/* The large tile once it gives at least two blocks per SM (a full wave of
 * co-resident blocks); below that the 64x64 tile spreads better. Either
 * gives the same bits. */
static inline bool gemm_bf16_use_large(size_t rows, size_t n, int sms) {
    size_t blocks =
        ((rows + cfg_large::BM - 1) / cfg_large::BM) * ((n + cfg_large::BN - 1) / cfg_large::BN);
    return blocks >= (size_t)(2 * (sms > 0 ? sms : 1));
}

/* Launches the BF16 GEMM with tile Cfg; the launch error, if any, is left
 * pending for the caller's check. */
template <class Cfg>
static void gemm_bf16_launch(int M, int N, int K, const uint16_t *A, size_t lda, const uint16_t *W,
                             size_t ldw, void *C, size_t ldc, int out_bf16, cudaStream_t st) {
    /* cp.async when every row start is 16-byte aligned; the epilogue's vector
     * stores when every 4-column group of C is (same values either way). */
    const int vec = K % 8 == 0 && lda % 8 == 0 && ldw % 8 == 0 && (uintptr_t)A % 16 == 0 &&
                    (uintptr_t)W % 16 == 0;
    const int esz = out_bf16 ? 2 : 4;
    const int cvec = ldc % 4 == 0 && (uintptr_t)C % (size_t)(4 * esz) == 0;
    dim3 grid((unsigned)((M + Cfg::BM - 1) / Cfg::BM), (unsigned)((N + Cfg::BN - 1) / Cfg::BN));
    gemm_bf16_pipe<Cfg><<<grid, Cfg::THREADS, Cfg::SMEM, st>>>(M, N, K, A, lda, W, ldw, C, ldc,
                                                               out_bf16, vec, cvec);
}

} // namespace

#endif
