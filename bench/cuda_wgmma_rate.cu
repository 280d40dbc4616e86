/* How busy one SM's tensor pipe can be kept by wgmma with both operands in
 * shared memory (the W-resident gate_up's form, src/cuda/sm90a/ring_wres.cuh),
 * and what its turn protocol costs, with no memory traffic at all.
 *
 * Why: the W-resident gate_up keeps the tensor pipe 59% busy at batch 256
 * (ncu, session 40, H100) where cuBLASLt's 128 x 160 kernel reaches 88%, and
 * two product groups in flight (HRMT_CUDA_GLU_WRES_DEEP) made it slower, so
 * the gap between groups is not the cause. Two candidates remain, which this
 * program tells apart:
 *   - the instruction's own rate: m64n128k16 from shared memory (6 KB of
 *     operands per 64 tensor cycles) may not reach the pipe's peak where
 *     m64n256k16 does (10 KB per 128);
 *   - the turns: a warpgroup issues a tile's groups only after the one
 *     before has issued all of its own, then waits for its products and
 *     runs its epilogue; if the epilogue outlasts the other warpgroups'
 *     products, the pipe idles.
 * Mode "free": WGS consumer warpgroups issue groups of four m64nNk16 back to
 * back (a commit a group, wait_group WAIT after each: 1 leaves one group in
 * flight, as the kernels do), no barriers.
 * Mode "turns": as ring_wres.cuh's consumers: a tile of KB groups, an
 * mbarrier turn handed on once a tile's groups are issued, then wait_group 0
 * and an epilogue of EPI cycles (a spin on clock64; EPI 0: none).
 * Prints, per configuration, the tensor pipe's busy share: the products'
 * tensor cycles (64 N 16 x 2 flops at 4096 flops a cycle per SM, H100 / H200
 * dense BF16) over the SM's elapsed cycles (clock64, the slowest CTA), so
 * the figure does not depend on the clock. One CTA per SM, operands zero.
 * Not part of CMake. On the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90a -I include -I src \
 *        bench/cuda_wgmma_rate.cu -o /tmp/wgmma_rate && /tmp/wgmma_rate
 * Exit status 0 when every configuration ran. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/sm90a/wgmma_common.cuh"

#include "cuda_check.cuh"

namespace {

constexpr int A_BYTES = 64 * ROW_BYTES; /* 64 rows x 64 k: one stage of A */
constexpr int KB = 8;                   /* groups a tile: hidden 512 / 64 */

struct rate_args {
    int tiles;     /* per warpgroup */
    int epi;       /* turns: the epilogue's cycles */
    long long *cy; /* per CTA: elapsed cycles */
};

#ifdef HRMT_SM90A
template <int N>
__device__ __forceinline__ void group(float (&acc)[N / 2], const uint8_t *a, const uint8_t *b) {
    const uint64_t da = desc_k128(a), db = desc_k128(b);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) wgmma_n<N>(acc, da + 2 * kk, db + 2 * kk);
    wg_commit();
}
#endif

/* smem: WGS A stages (one per warpgroup), then W's N rows x 64 k, then the
 * turn barriers. */
template <int N, int WGS, int WAIT, bool TURNS>
__global__ void __launch_bounds__(128 * WGS, 1) rate(const rate_args a) {
#ifdef HRMT_SM90A
    extern __shared__ uint8_t raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    uint8_t *w = smem + WGS * A_BYTES;
    uint64_t *order = (uint64_t *)(w + N * ROW_BYTES);
    for (int i = threadIdx.x; i < (WGS * A_BYTES + N * ROW_BYTES) / 16; i += blockDim.x)
        ((uint4 *)smem)[i] = make_uint4(0, 0, 0, 0);
    if (threadIdx.x == 0) {
        for (int i = 0; i < WGS; i++) mbar_init(&order[i], 1);
        mbar_arrive(&order[0]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); /* zeros seen by wgmma */
    __syncthreads();
    const int wg = threadIdx.x / 128;
    const uint8_t *ast = smem + wg * A_BYTES;
    const long long t0 = clock64();
    unsigned turn = 0;
    float acc[N / 2];
    for (int t = 0; t < a.tiles; t++) {
#pragma unroll
        for (int i = 0; i < N / 2; i++) acc[i] = 0.f;
        if constexpr (TURNS) {
            mbar_wait(&order[wg], turn);
            turn ^= 1;
        }
        for (int kb = 0; kb < KB; kb++) {
            group<N>(acc, ast, w);
            wg_wait<WAIT>();
        }
        if constexpr (TURNS)
            if (threadIdx.x % 128 == 0) mbar_arrive(&order[(wg + 1) % WGS]);
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < N / 2; i++) asm volatile("" : "+f"(acc[i])::"memory");
        if (a.epi > 0) {
            const long long e0 = clock64();
            while (clock64() - e0 < a.epi) {
            }
        }
        /* Keep the products live (the operands are zero: never true). */
        if (acc[0] != 0.f || acc[N / 2 - 1] != 0.f) a.cy[gridDim.x] = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0) a.cy[blockIdx.x] = clock64() - t0;
#endif
}

template <int N, int WGS, int WAIT, bool TURNS>
int run(int sms, long long *cy, int tiles, int epi) {
    const int smem = 1024 + WGS * A_BYTES + N * ROW_BYTES + 64;
    auto k = rate<N, WGS, WAIT, TURNS>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    rate_args a{tiles, epi, cy};
    long long best = -1;
    for (int rep = 0; rep < 3; rep++) {
        k<<<sms, 128 * WGS, smem>>>(a);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        long long h[1024];
        CK(cudaMemcpy(h, cy, sizeof(long long) * (size_t)(sms + 1), cudaMemcpyDeviceToHost));
        if (h[sms] != 0) {
            fprintf(stderr, "nonzero product from zero operands\n");
            return 1;
        }
        long long worst = 0;
        for (int i = 0; i < sms; i++) worst = h[i] > worst ? h[i] : worst;
        if (best < 0 || worst < best) best = worst;
    }
    const double tensor = (double)WGS * tiles * KB * (BK / 16) * (N / 2.0);
    printf(
        "%-5s N %3d  WGS %d  wait_group %d  epilogue %5d cy | tensor busy %5.1f%%  (%.0f cycles a "
        "tile per SM)\n",
        TURNS ? "turns" : "free", N, WGS, WAIT, epi, 100.0 * tensor / (double)best,
        (double)best / ((double)WGS * tiles));
    return 0;
}

} // namespace

int main() {
    cudaDeviceProp prop;
    if (!sm90_device(&prop)) return 2;
    const int sms = prop.multiProcessorCount;
    long long *cy;
    CK(cudaMalloc(&cy, sizeof(long long) * 1025));
    CK(cudaMemset(cy, 0, sizeof(long long) * 1025));
    printf("%s, %d SMs\n", prop.name, sms);
    int bad = 0;
    const int T = 400;
    bad |= run<64, 1, 0, false>(sms, cy, T, 0);
    bad |= run<128, 1, 0, false>(sms, cy, T, 0);
    bad |= run<128, 1, 1, false>(sms, cy, T, 0);
    bad |= run<256, 1, 1, false>(sms, cy, T, 0);
    bad |= run<64, 2, 1, false>(sms, cy, T, 0);
    bad |= run<128, 2, 0, false>(sms, cy, T, 0);
    bad |= run<128, 2, 1, false>(sms, cy, T, 0);
    bad |= run<128, 3, 1, false>(sms, cy, T, 0);
    bad |= run<256, 2, 1, false>(sms, cy, T, 0);
    for (int epi : {0, 1000, 2000, 3000, 4000, 6000}) {
        bad |= run<128, 3, 1, true>(sms, cy, T, epi);
        bad |= run<128, 2, 1, true>(sms, cy, T, epi);
    }
    bad |= run<128, 3, 0, true>(sms, cy, T, 2000);
    bad |= run<256, 2, 1, true>(sms, cy, T, 2000);
    bad |= run<256, 2, 1, true>(sms, cy, T, 4000);
    CK(cudaFree(cy));
    return bad;
}
