/* The model's own GEMMs, C = A W^T, deterministic per row: cuBLASLt may pick
 * another algorithm (split-K, another K order) for another M, which would
 * make a tile's bits differ from the whole batch's. Here every C element is
 * one F32 accumulation over k in ascending order whatever M is:
 *  - F32: SIMT FMA chains (no TF32), a 64x64 block tile, 4x4 per thread;
 *  - BF16: wmma m16n16k16 (bf16 in, F32 accumulate), a 64x64 block tile of
 *    four warps, K in steps of 16 in ascending order.
 * Rows and columns past the matrix are zero in shared memory and never stored,
 * so they cannot affect real rows. The epilogue rounds to BF16 (RNE, NaN kept
 * quiet, as core/bf16.h) when C is BF16. */
#include <cuda_bf16.h>
#include <mma.h>

#include "cuda/model_internal.cuh"

namespace {

constexpr int BM = 64, BN = 64;

__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

__device__ __forceinline__ void store_c(void *c, size_t ldc, int r, int col, float v, int bf) {
    if (bf)
        ((uint16_t *)c)[(size_t)r * ldc + col] = f32_to_bf16(v);
    else
        ((float *)c)[(size_t)r * ldc + col] = v;
}

/* ---- F32: SIMT FMA chains -------------------------------------------------- */

constexpr int FK = 16;

__global__ void __launch_bounds__(256)
    gemm_f32(int M, int N, int K, const float *__restrict__ A, size_t lda,
             const float *__restrict__ W, size_t ldw, void *C, size_t ldc, int out_bf16) {
    __shared__ float As[FK][BM + 4], Ws[FK][BN + 4];
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.x * BM, col0 = blockIdx.y * BN;
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
        /* k past K adds 0 * 0 = +0: acc + 0 == acc for every acc but -0,
         * and a -0 sum stays a zero, so padding never changes a value. */
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

/* ---- BF16: tensor cores ------------------------------------------------------ */

constexpr int BK = 32, LDS = BK + 8; /* +8: rows 16 B apart mod 128 B, fewer conflicts */
constexpr int LDC_S = BN + 4;

struct bf16_smem {
    union {
        struct {
            __nv_bfloat16 a[BM * LDS], w[BN * LDS];
        } in;
        float c[BM * LDC_S];
    };
};

/* Loads a 64 x 32 slab (rows r0.., k0..) of a row-major [rows, K] matrix. */
__device__ __forceinline__ void load_slab(__nv_bfloat16 *dst, const uint16_t *src, size_t ld,
                                          int rows, int K, int r0, int k0, int vec) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int v = 0; v < 2; v++) {
        int e = tid + v * 128, r = e / 4, seg = (e % 4) * 8, gr = r0 + r, gk = k0 + seg;
        __nv_bfloat16 *d = dst + r * LDS + seg;
        if (vec && gr < rows && gk + 8 <= K) {
            *(uint4 *)d = *(const uint4 *)(src + (size_t)gr * ld + gk);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) {
                uint16_t x = gr < rows && gk + i < K ? src[(size_t)gr * ld + gk + i] : 0;
                d[i] = __ushort_as_bfloat16(x);
            }
        }
    }
}

__global__ void __launch_bounds__(128)
    gemm_bf16(int M, int N, int K, const uint16_t *__restrict__ A, size_t lda,
              const uint16_t *__restrict__ W, size_t ldw, void *C, size_t ldc, int out_bf16,
              int vec) {
    using namespace nvcuda;
    __shared__ __align__(128) bf16_smem sm;
    const int warp = threadIdx.x / 32, wm = warp >> 1, wn = warp & 1;
    const int row0 = blockIdx.x * BM, col0 = blockIdx.y * BN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < K; k0 += BK) {
        load_slab(sm.in.a, A, lda, M, K, row0, k0, vec);
        load_slab(sm.in.w, W, ldw, N, K, col0, k0, vec);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; i++)
                wmma::load_matrix_sync(fa[i], sm.in.a + (wm * 32 + i * 16) * LDS + kk, LDS);
                /* W [n, k] row-major is W^T [k, n] column-major. */
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::load_matrix_sync(fb[j], sm.in.w + (wn * 32 + j * 16) * LDS + kk, LDS);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(sm.c + (wm * 32 + i * 16) * LDC_S + wn * 32 + j * 16, acc[i][j],
                                    LDC_S, wmma::mem_row_major);
    __syncthreads();
    for (int e = threadIdx.x; e < BM * BN; e += 128) {
        int r = e / BN, col = e % BN, gr = row0 + r, gc = col0 + col;
        if (gr < M && gc < N) store_c(C, ldc, gr, gc, sm.c[r * LDC_S + col], out_bf16);
    }
}

} // namespace

hrmt_status cu_gemm(const hrmt_model *m, size_t rows, size_t n, size_t k, const void *a, size_t lda,
                    const void *w, void *c, hrmt_dtype cdt, size_t ldc) {
    if (rows == 0) return HRMT_OK;
    /* Row blocks on grid x (up to 2^31 - 1), column blocks on y (65535). */
    if (rows > (size_t)INT32_MAX || n > (size_t)65535 * BN || k > (size_t)INT32_MAX)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda gemm: %zux%zux%zu is too large", rows, n,
                         k);
    dim3 grid((unsigned)((rows + BM - 1) / BM), (unsigned)((n + BN - 1) / BN));
    cudaStream_t st = cu_stream(m);
    const int obf = cdt == HRMT_BF16;
    if (m->dt == HRMT_F32) {
        gemm_f32<<<grid, 256, 0, st>>>((int)rows, (int)n, (int)k, (const float *)a, lda,
                                       (const float *)w, k, c, ldc, obf);
    } else {
        /* 16-byte loads when every row start is 16-byte aligned (same values
         * either way, so the same bits). */
        int vec = lda % 8 == 0 && k % 8 == 0 && (uintptr_t)a % 16 == 0 && (uintptr_t)w % 16 == 0;
        gemm_bf16<<<grid, 128, 0, st>>>((int)rows, (int)n, (int)k, (const uint16_t *)a, lda,
                                        (const uint16_t *)w, k, c, ldc, obf, vec);
    }
    return cu_check(m->ctx, "model gemm");
}
