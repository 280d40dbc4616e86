/* Checks and times the model's BF16 GEMM kernels (src/cuda/model_gemm_kernels.cuh)
 * against the first 64x64 wmma kernel, kept verbatim below as the reference:
 * every output must be bitwise identical to the reference's, for both tiles
 * and the dispatch, BF16 and F32 C, vector and scalar loads, and a row of a
 * large M must equal the same row computed alone (M = 1). Not part of CMake.
 * Build and run on the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90 -I include -I src bench/cuda_gemm_check.cu \
 *        -o /tmp/cuda_gemm_check && /tmp/cuda_gemm_check
 * Exit status 0 when every check passed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "../src/cuda/model_gemm_kernels.cuh"

#include "cuda_check.cuh"

/* ---- reference: the first kernel of model_gemm.cu, verbatim ------------------ */
namespace ref {

using ::store_c;
constexpr int BM = 64, BN = 64;
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
} // namespace ref

static void run_ref(int M, int N, int K, const uint16_t *A, size_t lda, const uint16_t *W, void *C,
                    size_t ldc, int obf) {
    int vec = lda % 8 == 0 && K % 8 == 0 && (uintptr_t)A % 16 == 0 && (uintptr_t)W % 16 == 0;
    dim3 grid((M + ref::BM - 1) / ref::BM, (N + ref::BN - 1) / ref::BN);
    ref::gemm_bf16<<<grid, 128>>>(M, N, K, A, lda, W, K, C, ldc, obf, vec);
}

/* which: 0 dispatch (as cu_gemm), 1 large tile, 2 small tile. */
static int g_sms;
static void run_new(int which, int M, int N, int K, const uint16_t *A, size_t lda,
                    const uint16_t *W, void *C, size_t ldc, int obf) {
    bool large = which == 1 || (which == 0 && gemm_bf16_use_large(M, N, g_sms));
    if (large)
        gemm_bf16_launch<cfg_large>(M, N, K, A, lda, W, K, C, ldc, obf, 0);
    else
        gemm_bf16_launch<cfg_small>(M, N, K, A, lda, W, K, C, ldc, obf, 0);
}

static uint16_t host_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static int g_fail;
static bool same(const void *dx, const void *dy, size_t bytes, const char *what) {
    std::vector<unsigned char> x(bytes), y(bytes);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(x.data(), dx, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(y.data(), dy, bytes, cudaMemcpyDeviceToHost));
    if (memcmp(x.data(), y.data(), bytes) == 0) return true;
    size_t i = 0;
    while (x[i] == y[i]) i++;
    printf("  MISMATCH %s at byte %zu\n", what, i);
    g_fail++;
    return false;
}

template <class F>
static double median_ms(F f, int reps) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    f(); /* warm-up */
    std::vector<float> t(reps);
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(e0));
        f();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t[i], e0, e1));
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return t[reps / 2];
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 20;
    CK(gemm_dev_prepare(&g_sms));

    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("%s, %d SMs; large %dx%d (%d thr, %d B smem), small %dx%d (%d thr, %d B smem)\n", p.name,
           g_sms, cfg_large::BM, cfg_large::BN, cfg_large::THREADS, cfg_large::SMEM, cfg_small::BM,
           cfg_small::BN, cfg_small::THREADS, cfg_small::SMEM);
    const int Ms[] = {1, 82, 83, 1640, 4096, 20992}, Ns[] = {512, 1536, 3072}, Ks[] = {512, 1536};
    const size_t MX = 20992, NX = 3072, KX = 1536 + 8; /* +8: room for the odd-lda case */
    std::vector<uint16_t> ha(MX * KX), hw(NX * KX);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    auto rnd = [&]() {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return (float)((s >> 40) & 0xffffff) / 8388608.0f - 1.0f;
    };
    for (auto &x : ha) x = host_bf16(rnd());
    for (auto &x : hw) x = host_bf16(rnd());
    uint16_t *A, *W;
    void *C0, *C1, *C2;
    const size_t cbytes = MX * NX * 4;
    CK(cudaMalloc(&A, ha.size() * 2));
    CK(cudaMalloc(&W, hw.size() * 2));
    CK(cudaMalloc(&C0, cbytes));
    CK(cudaMalloc(&C1, cbytes));
    CK(cudaMalloc(&C2, cbytes));
    CK(cudaMemcpy(A, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(W, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));

    printf("%6s %5s %5s %5s | %9s %9s %9s %9s | %s\n", "M", "N", "K", "tile", "ref TF/s",
           "new TF/s", "large", "small", "bits");
    for (int M : Ms)
        for (int N : Ns)
            for (int K : Ks) {
                const size_t ob = (size_t)M * N * 2, of = (size_t)M * N * 4;
                bool ok = true;
                char what[96];
                /* BF16 C, then F32 C: dispatch and both tiles against the reference. */
                for (int obf = 1; obf >= 0; obf--) {
                    const size_t bytes = obf ? ob : of;
                    run_ref(M, N, K, A, K, W, C0, N, obf);
                    for (int which = 0; which < 3; which++) {
                        CK(cudaMemset(C1, 0xff, bytes));
                        run_new(which, M, N, K, A, K, W, C1, N, obf);
                        snprintf(what, sizeof what, "M%d N%d K%d %s which=%d", M, N, K,
                                 obf ? "bf16" : "f32", which);
                        ok &= same(C0, C1, bytes, what);
                    }
                }
                /* Rows alone (M = 1, A offset to the row) equal the same rows in M. */
                {
                    run_new(0, M, N, K, A, K, W, C1, N, 1);
                    const int rows[] = {0, M / 2, M - 1};
                    for (int r : rows) {
                        run_new(0, 1, N, K, A + (size_t)r * K, K, W, C2, N, 1);
                        snprintf(what, sizeof what, "M%d N%d K%d row %d alone", M, N, K, r);
                        ok &= same((uint16_t *)C1 + (size_t)r * N, C2, (size_t)N * 2, what);
                    }
                }
                /* Scalar loads (odd lda, C with an odd ldc) on the smaller shapes. */
                if ((size_t)M * N * K <= (size_t)1640 * 1536 * 1536) {
                    const size_t lda = K + 1, ldc = N + 1, span = ((size_t)M - 1) * ldc * 2 + N * 2;
                    CK(cudaMemset(C0, 0, span));
                    run_ref(M, N, K, A, lda, W, C0, ldc, 1);
                    for (int which = 1; which < 3; which++) {
                        CK(cudaMemset(C1, 0, span));
                        run_new(which, M, N, K, A, lda, W, C1, ldc, 1);
                        snprintf(what, sizeof what, "M%d N%d K%d scalar which=%d", M, N, K, which);
                        ok &= same(C0, C1, span, what);
                    }
                }
                const double fl = 2.0 * M * N * K;
                double tr = median_ms([&] { run_ref(M, N, K, A, K, W, C0, N, 1); }, reps);
                double tn = median_ms([&] { run_new(0, M, N, K, A, K, W, C1, N, 1); }, reps);
                double tl = median_ms([&] { run_new(1, M, N, K, A, K, W, C1, N, 1); }, reps);
                double ts = median_ms([&] { run_new(2, M, N, K, A, K, W, C1, N, 1); }, reps);
                printf("%6d %5d %5d %5s | %9.1f %9.1f %9.1f %9.1f | %s\n", M, N, K,
                       gemm_bf16_use_large(M, N, g_sms) ? "large" : "small", fl / tr / 1e9,
                       fl / tn / 1e9, fl / tl / 1e9, fl / ts / 1e9, ok ? "same" : "DIFFER");
                fflush(stdout);
            }
    CK(cudaGetLastError());
    printf("%s (%d mismatches)\n", g_fail ? "FAIL" : "PASS", g_fail);
    return g_fail ? 1 : 0;
}
