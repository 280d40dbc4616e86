/* What one step of a dependent F32 chain of BF16 k16 tensor-core products
 * costs on this GPU, and whether two instructions give the same bits.
 *
 * Every BF16 product of the model is one F32 chain of k16 steps in
 * ascending k from +0 per output (docs/CUDA.md, "What is guaranteed"), so at
 * batch 1 a block's products are ~192 dependent steps (qkv, o_proj, gate_up
 * 32 each at hidden 512, down_proj 96) whatever the tiling; the link trace
 * (session 32, docs/CUDA-KERNELS.md) put a step at ~40-47 ns inside the
 * wgmma kernels, ~200 us of batch 1's ~500. This program times the chain
 * alone, one CTA, operands resident in shared memory:
 *   - wgmma m64nNk16 (N = 16, 32, 64, 256) as the kernels issue it (four
 *     k16 steps a 64-k stage, a commit per stage, one group left in flight);
 *   - mma.sync m16n8k16, each warp 16 rows x N columns (N / 8 independent
 *     chains a warp, ldmatrix operands per step: mma_warp.cuh's mma_k16);
 *   - wgmma m64n32k16 as two independent chains, in one warpgroup
 *     (alternate steps) or one in each of two warpgroups: if a chain's step
 *     then costs what it costs alone, the step is latency, not the tensor
 *     cores' throughput, and a product split over k (two partial chains,
 *     other bits) would take half the time;
 * cycles per k16 step (clock64) over REPS passes of K = 256 (all of A and
 * W resident: 161 KB at N = 256), and the 64 x 32 outputs of one pass by
 * both instructions compared bit for bit (the own kernels and the grid /
 * persistent kernels rest on their being equal). Not part of CMake. On the
 * GPU machine, from the repository root (bench/gpu_links.sh does it):
 *   nvcc -std=c++17 -O3 -arch=sm_90a -I include -I src \
 *        bench/cuda_chain_latency.cu -o /tmp/chain && /tmp/chain
 * Exit status 0 when the two instructions' outputs are equal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "cuda/mma_warp.cuh"
#include "cuda/sm90a/act_tile_swizzle.h"
#include "cuda/sm90a/wgmma_common.cuh"

#include "cuda_check.cuh"

namespace {

constexpr int K = 256, REPS = 128;
constexpr int NMAX = 256;
constexpr int A_BYTES = 64 * K * 2;   /* swizzled: KB blocks of 64 rows x 128 B */
constexpr int W_BYTES = NMAX * K * 2; /* KB blocks of N rows x 128 B */
constexpr int SMEM = A_BYTES + W_BYTES + 1024;
constexpr int LDP = K + 8; /* mma.sync operands: padded rows */

/* Byte offset of (row, k) in a K-major operand of `rows` rows in the
 * 128-byte swizzle (the copy engine's SWIZZLE_128B, which desc_k128 reads):
 * one block per 64 k, each row's 16-byte chunks placed by sw128_offset. */
#ifdef HRMT_SM90A
__device__ __forceinline__ int sw128(int rows, int row, int k) {
    return (k / BK) * rows * ROW_BYTES + sw128_offset(row, (k % BK) >> 3) + (k & 7) * 2;
}
/* A (64 x K) and W (n x K) into the wgmma kernels' shared memory, swizzled,
 * by all `threads` threads; the 1024-byte aligned start back in *sa. */
__device__ __forceinline__ void load_swizzled(uint8_t *raw, uint8_t **sa, uint8_t **sw,
                                              const uint16_t *a, const uint16_t *w, int n,
                                              int threads) {
    *sa = (uint8_t *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    *sw = *sa + A_BYTES;
    for (int i = threadIdx.x; i < 64 * K; i += threads)
        *(uint16_t *)(*sa + sw128(64, i / K, i % K)) = a[i];
    for (int i = threadIdx.x; i < n * K; i += threads)
        *(uint16_t *)(*sw + sw128(n, i / K, i % K)) = w[i];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
}
#endif

template <int N>
__global__ void __launch_bounds__(128, 1)
    mma_chain(const uint16_t *a, const uint16_t *w, int reps, float *out, long long *cyc) {
    extern __shared__ uint8_t raw[];
    uint16_t *sa = (uint16_t *)raw, *sw = sa + 64 * LDP;
    for (int i = threadIdx.x; i < 64 * K; i += 128) sa[(i / K) * LDP + i % K] = a[i];
    for (int i = threadIdx.x; i < N * K; i += 128) sw[(i / K) * LDP + i % K] = w[i];
    __syncthreads();
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    float acc[1][N / 8][4];
    for (int ni = 0; ni < N / 8; ni++)
        for (int j = 0; j < 4; j++) acc[0][ni][j] = 0.0f;
    const long long t0 = clock64();
    for (int r = 0; r < reps; r++)
        for (int k0 = 0; k0 < K; k0 += 16)
            mma_k16<1, N / 8>(
                acc, [&](int row) { return sa + (warp * 16 + row) * LDP + k0; }, sw + k0, LDP);
    __syncwarp();
    const long long t1 = clock64();
    if (threadIdx.x == 0) *cyc = t1 - t0;
    for (int ni = 0; ni < N / 8; ni++)
        for (int hf = 0; hf < 2; hf++) {
            const int row = warp * 16 + lane / 4 + 8 * hf, col = ni * 8 + 2 * (lane & 3);
            out[row * N + col] = acc[0][ni][2 * hf];
            out[row * N + col + 1] = acc[0][ni][2 * hf + 1];
        }
}

/* WGS warpgroups, each CH independent m64nNk16 chains over the same
 * operands (chain c takes the k16 steps in the same order from its own +0),
 * steps of the chains alternating, as the kernels issue them (four k16
 * steps a 64-k stage, a commit per stage, one group left in flight);
 * cycles of the whole. One chain (1, 1) is the kernels' case. */
template <int N, int WGS, int CH>
__global__ void __launch_bounds__(128 * WGS, 1)
    wg_chains(const uint16_t *a, const uint16_t *w, int reps, float *out, long long *cyc) {
#ifdef HRMT_SM90A
    extern __shared__ uint8_t raw[];
    uint8_t *sa, *sw;
    load_swizzled(raw, &sa, &sw, a, w, N, 128 * WGS);
    float acc[CH][N / 2];
#pragma unroll
    for (int c = 0; c < CH; c++)
#pragma unroll
        for (int i = 0; i < N / 2; i++) asm volatile("mov.b32 %0, 0;" : "=f"(acc[c][i]));
    const long long t0 = clock64();
    for (int r = 0; r < reps; r++)
        for (int kb = 0; kb < K / BK; kb++) {
            const uint64_t da = desc_k128(sa + kb * 64 * ROW_BYTES);
            const uint64_t dw = desc_k128(sw + kb * N * ROW_BYTES);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
                for (int c = 0; c < CH; c++) wgmma_n<N>(acc[c], da + 2 * kk, dw + 2 * kk);
            wg_commit();
            wg_wait<1>();
        }
    wg_wait<0>();
#pragma unroll
    for (int c = 0; c < CH; c++)
#pragma unroll
        for (int i = 0; i < N / 2; i++) asm volatile("" : "+f"(acc[c][i])::"memory");
    __syncthreads();
    const long long t1 = clock64();
    if (threadIdx.x == 0) *cyc = t1 - t0;
    /* Every chain's outputs must be the single chain's: the last one's. */
    if (threadIdx.x < 128) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, c = lane & 3;
#pragma unroll
        for (int i = 0; i < N / 8; i++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int row = warp * 16 + lane / 4 + 8 * hf, col = 8 * i + 2 * c;
                out[row * N + col] = acc[CH - 1][4 * i + 2 * hf];
                out[row * N + col + 1] = acc[CH - 1][4 * i + 2 * hf + 1];
            }
    }
#endif
}

typedef void (*chain_kernel)(const uint16_t *, const uint16_t *, int, float *, long long *);

/* Cycles per k16 step of one CTA's chain (each chain's, where there are
 * several), best of 5 launches. */
double per_step(chain_kernel kern, size_t smem, int threads, const uint16_t *da, const uint16_t *dw,
                float *dout, long long *dcyc, int reps) {
    CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    long long best = -1;
    for (int t = 0; t < 5; t++) {
        kern<<<1, threads, smem>>>(da, dw, reps, dout, dcyc);
        CK(cudaGetLastError());
        long long c = 0;
        CK(cudaMemcpy(&c, dcyc, sizeof c, cudaMemcpyDeviceToHost));
        if (best < 0 || c < best) best = c;
    }
    return (double)best / (reps * (K / 16));
}

} // namespace

int main(void) {
    cudaDeviceProp prop;
    if (!sm90_device(&prop)) return 2;
    static uint16_t ha[64 * K], hw[NMAX * K];
    srand(12345);
    /* Values spread over magnitudes, so that the order of the sum shows. */
    for (int i = 0; i < 64 * K; i++)
        ha[i] =
            hrmt_f32_to_bf16((float)(rand() % 2001 - 1000) / 1000.0f * (float)(1 << (rand() % 12)));
    for (int i = 0; i < NMAX * K; i++)
        hw[i] =
            hrmt_f32_to_bf16((float)(rand() % 2001 - 1000) / 1000.0f / (float)(1 << (rand() % 12)));
    uint16_t *da, *dw;
    float *dout;
    long long *dcyc;
    CK(cudaMalloc(&da, sizeof ha));
    CK(cudaMalloc(&dw, sizeof hw));
    CK(cudaMalloc(&dout, 64 * NMAX * sizeof(float)));
    CK(cudaMalloc(&dcyc, sizeof(long long)));
    CK(cudaMemcpy(da, ha, sizeof ha, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw, sizeof hw, cudaMemcpyHostToDevice));

    printf(
        "%s: one CTA, K = %d resident in shared memory, %d passes; cycles per dependent k16 "
        "step (best of 5)\n",
        prop.name, K, REPS);
    const size_t mma_smem = (size_t)(64 + NMAX) * LDP * 2;
    const struct {
        const char *what;
        chain_kernel kern;
        size_t smem;
        int threads;
    } variants[] = {
        {"wgmma m64n16k16", wg_chains<16, 1, 1>, SMEM, 128},
        {"wgmma m64n32k16", wg_chains<32, 1, 1>, SMEM, 128},
        {"wgmma m64n64k16", wg_chains<64, 1, 1>, SMEM, 128},
        {"wgmma m64n256k16", wg_chains<256, 1, 1>, SMEM, 128},
        {"mma.sync m16n8k16, 16 x 16 a warp (2 chains)", mma_chain<16>, mma_smem, 128},
        {"mma.sync m16n8k16, 16 x 32 a warp (4 chains)", mma_chain<32>, mma_smem, 128},
        {"mma.sync m16n8k16, 16 x 64 a warp (8 chains)", mma_chain<64>, mma_smem, 128},
        {"wgmma m64n32k16, 2 chains in 1 warpgroup", wg_chains<32, 1, 2>, SMEM, 128},
        {"wgmma m64n32k16, 1 chain in each of 2 wgs", wg_chains<32, 2, 1>, SMEM, 256},
        {"wgmma m64n32k16, 2 chains in each of 2 wgs", wg_chains<32, 2, 2>, SMEM, 256},
    };
    for (const auto &v : variants)
        printf("  %-46s %6.1f\n", v.what,
               per_step(v.kern, v.smem, v.threads, da, dw, dout, dcyc, REPS));
    int khz = 0;
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    printf("(clock %d MHz at most: cycles x 1000 / MHz = ns)\n", khz / 1000);

    /* One pass of 64 x 32 by each instruction: the same F32 chain? */
    static float o1[64 * 32], o2[64 * 32];
    wg_chains<32, 1, 1><<<1, 128, SMEM>>>(da, dw, 1, dout, dcyc);
    CK(cudaGetLastError());
    CK(cudaMemcpy(o1, dout, sizeof o1, cudaMemcpyDeviceToHost));
    mma_chain<32><<<1, 128, mma_smem>>>(da, dw, 1, dout, dcyc);
    CK(cudaGetLastError());
    CK(cudaMemcpy(o2, dout, sizeof o2, cudaMemcpyDeviceToHost));
    int diff = 0, first = -1;
    for (int i = 0; i < 64 * 32; i++)
        if (memcmp(&o1[i], &o2[i], 4) != 0 && diff++ == 0) first = i;
    /* Not a vacuous compare: a float64 sum of the same products, against
     * which F32 chains must differ somewhere in the last bits. */
    int off64 = 0;
    for (int i = 0; i < 64 * 32; i++) {
        double s = 0;
        for (int k = 0; k < K; k++) {
            s += (double)hrmt_bf16_to_f32(ha[(i / 32) * K + k]) *
                 hrmt_bf16_to_f32(hw[(i % 32) * K + k]);
        }
        if ((float)s != o1[i]) off64++;
    }
    printf("64 x 32 outputs, wgmma against mma.sync: %d of %d differ", diff, 64 * 32);
    if (diff)
        printf(" (first at row %d col %d: %.9g vs %.9g)", first / 32, first % 32, o1[first],
               o2[first]);
    printf("; against the float64 sum rounded once: %d differ\n", off64);
    /* The several-chain kernels compute the same chain: a check that they
     * ran it (their times are of real work). */
    static float o3[64 * 32];
    wg_chains<32, 2, 2><<<1, 256, SMEM>>>(da, dw, 1, dout, dcyc);
    CK(cudaGetLastError());
    CK(cudaMemcpy(o3, dout, sizeof o3, cudaMemcpyDeviceToHost));
    const int diff2 = memcmp(o1, o3, sizeof o1) != 0;
    printf("two warpgroups x two chains against one chain: %s\n", diff2 ? "DIFFER" : "equal");
    diff += diff2;
    CK(cudaFree(da));
    CK(cudaFree(dw));
    CK(cudaFree(dout));
    CK(cudaFree(dcyc));
    return diff ? 1 : 0;
}
