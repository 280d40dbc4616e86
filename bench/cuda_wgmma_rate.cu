/* How busy one SM's tensor pipe can be kept by wgmma with both operands in
 * shared memory (the W-resident gate_up's form, src/cuda/sm90a/ring_wres.cuh),
 * and what its turn protocol costs, with no memory traffic at all.
 *
 * Why: the W-resident gate_up keeps the tensor pipe 59% busy at batch 256
 * (ncu, session 40, H100) where cuBLASLt's 128 x 160 kernel reaches 88%, and
 * two product groups in flight (HRMT_CUDA_GLU_WRES_DEEP, removed in session
 * 44) made it slower, so the gap between groups is not the cause. Two
 * candidates remain, which this program tells apart:
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
 * Mode "ring" (below) adds ring_wres.cuh's whole protocol, a TMA feed and
 * the fused gate_up's epilogue. The answers (session 40, H100): m64n128k16
 * over two or three warpgroups keeps the pipe 100% busy and the turns hide
 * epilogues up to ~3000 cycles; with the ring and its TMA feed 92-95%; with
 * the epilogue's arithmetic 87%, with its 4-byte global stores alone 63%,
 * with both 65% (the kernel: 59.5%). The last pair of configurations, the
 * epilogue with its tile staged in shared memory and written by one TMA
 * store against the plain epilogue at the same 7 stages (session 42,
 * H100): 68.4% against 62.6%. In the kernel itself the same staging
 * (HRMT_CUDA_GLU_WRES_TSTORE, session 40) was no faster (ncu at batch 256:
 * 126.9 against 127.2 us, the tensor pipe 58.4 against 59.1%; the step
 * 1.003-1.007x), so it was removed then. The next three configurations
 * (session 42) repeat the ring with its TMA feed, alone, with the
 * epilogue and with its arithmetic, with the warpgroup index warp-uniform
 * (warpgroup_idx, as the kernels now take it): every configuration above
 * compiles its issue loop with ~4 R2UR a wgmma (cuobjdump), these with
 * none. Session 43 (H100): 91.7%, 62.7% and 88.4%, the kernel itself
 * 59.6 -> 67.3% with the change, so with the loop short the stores are
 * what the epilogue costs; the last pair (session 43, not yet run) repeats
 * the plain and TMA-stored epilogues at 7 stages with the uniform index,
 * beside HRMT_CUDA_GLU_WRES_TSTORE, restored in the kernel.
 * Not part of CMake. On the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90a -I include -I src \
 *        bench/cuda_wgmma_rate.cu -o /tmp/wgmma_rate && /tmp/wgmma_rate
 * Exit status 0 when every configuration ran. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/sm90a/act_tile_swizzle.h"
#include "cuda/sm90a/cluster_async.cuh" /* fence_async_smem */
#include "cuda/sm90a/ring_gemm.cuh"

#include "cuda_check.cuh"

namespace {

constexpr int A_BYTES = 64 * ROW_BYTES; /* 64 rows x 64 k: one stage of A */
constexpr int KB = 8;                   /* groups a tile: hidden 512 / 64 */
constexpr int MAX_SMS = 1024;           /* cy's slots */

struct rate_args {
    int tiles;     /* per warpgroup */
    int epi;       /* turns: the epilogue's cycles */
    long long *cy; /* per CTA: elapsed cycles */
};

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
    fence_async_smem(); /* zeros seen by wgmma */
    __syncthreads();
    const int wg = threadIdx.x / 128;
    const uint8_t *ast = smem + wg * A_BYTES;
    const long long t0 = clock64();
    unsigned turn = 0;
    float acc[1][N / 2];
    for (int t = 0; t < a.tiles; t++) {
#pragma unroll
        for (int i = 0; i < N / 2; i++) acc[0][i] = 0.f;
        if constexpr (TURNS) {
            mbar_wait(&order[wg], turn);
            turn ^= 1;
        }
        for (int kb = 0; kb < KB; kb++) {
            stage_products<1, N>(acc, ast, w);
            wg_wait<WAIT>();
        }
        if constexpr (TURNS)
            if (threadIdx.x % 128 == 0) mbar_arrive(&order[(wg + 1) % WGS]);
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < N / 2; i++) asm volatile("" : "+f"(acc[0][i])::"memory");
        if (a.epi > 0) {
            const long long e0 = clock64();
            while (clock64() - e0 < a.epi) {
            }
        }
        /* Keep the products live (the operands are zero: never true). */
        if (acc[0][0] != 0.f || acc[0][N / 2 - 1] != 0.f) a.cy[gridDim.x] = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0) a.cy[blockIdx.x] = clock64() - t0;
#endif
}

/* Mode "ring": ring_wres.cuh's whole protocol with its products and its
 * turns, the epilogue still a spin: W (128 rows x KB k blocks) resident,
 * A streamed through an S-stage ring of 8 KB stages (64 rows x 64 k) by one
 * producer thread, each consumer warpgroup's tile KB stages, a stage given
 * back once the next group is issued. TMA: the producer fills each stage
 * from a rows x 512 BF16 matrix by a tensor-map copy (tile j's rows j % mt,
 * as the kernel walks them); otherwise it only arrives on full (no bytes
 * move: the barriers' cost alone). */
struct ring_args {
    int tiles; /* per warpgroup */
    int epi;
    int mt; /* 64-row tiles of A */
    long long *cy;
    uint16_t *act; /* EK 1, 3: the epilogue's stores, rows x 1536 */
};

#ifdef HRMT_SM90A
/* EK 1-3: the fused gate_up's epilogue as glu_epi::store does it with the
 * fast SiLU (src/cuda/sm90a/glu_wgmma.cu, silu_fast.cuh), without its
 * table fallback: per column pair, the gate and up pairs packed to BF16,
 * two ex2 and two rcp, the products, and a 4-byte store at the act
 * layout (EK 1); its arithmetic alone (2: folded into one value kept
 * live) or its stores alone (3: the accumulators packed and stored). */
template <int EK>
__device__ __forceinline__ void glu_like_epilogue(const float (&acc)[64], const ring_args &a,
                                                  int m0, int n0, int warp, int lane,
                                                  uint8_t *buf) {
    uint32_t fold = 0;
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int q = 4 * i + 2 * hf;
            uint32_t g2, u2, o;
            asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(g2) : "f"(acc[q + 1]), "f"(acc[q]));
            asm("cvt.rn.bf16x2.f32 %0, %1, %2;"
                : "=r"(u2)
                : "f"(acc[32 + q + 1]), "f"(acc[32 + q]));
            if constexpr (EK == 3) {
                o = g2 ^ u2;
            } else {
                const float g0 = __uint_as_float(g2 << 16), g1 = __uint_as_float(g2 & 0xffff0000u);
                float e0, e1, r0, r1;
                asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e0) : "f"(g0 * -1.4426950f));
                asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e1) : "f"(g1 * -1.4426950f));
                asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r0) : "f"(1.f + e0));
                asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r1) : "f"(1.f + e1));
                const float o0 = g0 * r0 * __uint_as_float(u2 << 16);
                const float o1 = g1 * r1 * __uint_as_float(u2 & 0xffff0000u);
                asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(o) : "f"(o1), "f"(o0));
            }
            if constexpr (EK == 2) {
                fold ^= o;
            } else if constexpr (EK == 4) { /* the tile in the 128-byte swizzle */
                const int r = warp * 16 + lane / 4 + 8 * hf;
                *(uint32_t *)(buf + act_tile_offset(r, i, lane & 3)) = o;
            } else {
                const int row = m0 + warp * 16 + lane / 4 + 8 * hf;
                *(uint32_t *)(a.act + (size_t)row * 1536 + n0 + 8 * i + 2 * (lane & 3)) = o;
            }
        }
    if (EK == 2 && fold == 0x12345678u) a.cy[gridDim.x] = 2;
}
#endif

template <int WGS, int S, bool TMA, int EK = 0, bool UNI = false>
__global__ void __launch_bounds__(128 * (WGS + 1), 1)
    ring_rate(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_o,
              const ring_args a) {
#ifdef HRMT_SM90A
    constexpr int WN = 128, W_BYTES = WN * ROW_BYTES;
    extern __shared__ uint8_t raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    uint8_t *wres = smem, *ring = smem + KB * W_BYTES;
    uint64_t *full = (uint64_t *)(ring + S * A_BYTES), *empty = full + S, *order = empty + S;
    for (int i = threadIdx.x; i < (KB * W_BYTES + S * A_BYTES) / 16; i += blockDim.x)
        ((uint4 *)smem)[i] = make_uint4(0, 0, 0, 0);
    if (threadIdx.x == 0) {
        ring_init(full, empty, S, 4);
        for (int i = 0; i < WGS; i++) mbar_init(&order[i], 1);
        mbar_arrive(&order[0]);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    fence_async_smem();
    __syncthreads();
    const int wg = UNI ? warpgroup_idx() : (int)threadIdx.x / 128;
    const long long t0 = clock64();
    if (wg == 0) {
        if (threadIdx.x == 0) {
            int s = 0;
            unsigned ph = 0;
            for (int j = blockIdx.x * WGS * a.tiles, n = 0; n < WGS * a.tiles; j++, n++)
                for (int kb = 0; kb < KB; kb++) {
                    mbar_wait(&empty[s], ph ^ 1);
                    if constexpr (TMA) {
                        mbar_expect_tx(&full[s], A_BYTES);
                        tma_load(ring + s * A_BYTES, &tm_a, &full[s], kb * BK, (j % a.mt) * 64);
                    } else {
                        mbar_arrive(&full[s]);
                    }
                    ring_next(s, ph, S);
                }
        }
        return;
    }
    const int cw = wg - 1, lane = threadIdx.x & 31;
    unsigned turn = 0;
    float acc[1][WN / 2];
    for (int li = cw; li < WGS * a.tiles; li += WGS) {
        const unsigned base = (unsigned)li * KB;
        int s = (int)(base % S), prev = -1;
        unsigned ph = (base / S) & 1;
#pragma unroll
        for (int i = 0; i < WN / 2; i++) acc[0][i] = 0.f;
        mbar_wait(&order[cw], turn);
        turn ^= 1;
        for (int kb = 0; kb < KB; kb++) {
            mbar_wait(&full[s], ph);
            stage_products<1, WN>(acc, ring + s * A_BYTES, wres + kb * W_BYTES);
            wg_wait<1>();
            if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
            prev = s;
            ring_next(s, ph, S);
        }
        if (threadIdx.x % 128 == 0) mbar_arrive(&order[(cw + 1) % WGS]);
        wg_wait<0>();
        if (lane == 0) mbar_arrive(&empty[prev]);
#pragma unroll
        for (int i = 0; i < WN / 2; i++) asm volatile("" : "+f"(acc[0][i])::"memory");
        const int j = blockIdx.x * WGS * a.tiles + li, m0 = (j % a.mt) * 64,
                  n0 = (j / a.mt % 24) * 64;
        /* EK 4: this warpgroup's 8 KB tile after the barriers, 1024-aligned;
         * refilled once the copy engine has read the last one out. */
        uint8_t *buf =
            (uint8_t *)(((uintptr_t)(order + WGS) + 1023) & ~(uintptr_t)1023) + cw * A_BYTES;
        if constexpr (EK == 4) {
            if (threadIdx.x % 128 == 0) bulk_wait_read<0>();
            asm volatile("bar.sync %0, 128;" ::"r"(2 + cw) : "memory");
        }
        if constexpr (EK > 0)
            glu_like_epilogue<EK>(acc[0], a, m0, n0, (threadIdx.x / 32) & 3, lane, buf);
        if constexpr (EK == 4) {
            fence_async_smem();
            asm volatile("bar.sync %0, 128;" ::"r"(2 + cw) : "memory");
            if (threadIdx.x % 128 == 0) {
                tma_store(&tm_o, buf, n0, m0);
                bulk_commit();
            }
        }
        if (a.epi > 0) {
            const long long e0 = clock64();
            while (clock64() - e0 < a.epi) {
            }
        }
        if (acc[0][0] != 0.f || acc[0][WN / 2 - 1] != 0.f) a.cy[gridDim.x] = 1;
    }
    if (EK == 4 && threadIdx.x % 128 == 0) bulk_wait<0>();
    asm volatile("bar.sync 1, %0;" ::"n"(128 * WGS) : "memory");
    if (threadIdx.x == 128) a.cy[blockIdx.x] = clock64() - t0;
#endif
}

/* The slowest CTA's cycles (cy[0 .. sms - 1]) in the best of three runs of
 * launch(); -1 when a kernel flagged cy[sms] (a nonzero product from zero
 * operands: the measurement is void). */
template <class L>
long long best_cycles(L launch, int sms, long long *cy) {
    long long best = -1;
    for (int rep = 0; rep < 3; rep++) {
        launch();
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        long long h[MAX_SMS + 1];
        CK(cudaMemcpy(h, cy, sizeof(long long) * (size_t)(sms + 1), cudaMemcpyDeviceToHost));
        if (h[sms] != 0) {
            fprintf(stderr, "nonzero product from zero operands\n");
            return -1;
        }
        long long worst = 0;
        for (int i = 0; i < sms; i++) worst = h[i] > worst ? h[i] : worst;
        if (best < 0 || worst < best) best = worst;
    }
    return best;
}

template <int WGS, int S, bool TMA, int EK = 0, bool UNI = false>
int run_ring(const char *what, int sms, long long *cy, const CUtensorMap &tm, int mt, int tiles,
             int epi, uint16_t *act = nullptr, const CUtensorMap *tm_o = nullptr) {
    const int smem = 1024 + KB * 128 * ROW_BYTES + S * A_BYTES + (2 * S + WGS) * 8 +
                     (EK == 4 ? 1024 + WGS * A_BYTES : 0);
    auto k = ring_rate<WGS, S, TMA, EK, UNI>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    ring_args a{tiles, epi, mt, cy, act};
    const long long best =
        best_cycles([&] { k<<<sms, 128 * (WGS + 1), smem>>>(tm, tm_o ? *tm_o : tm, a); }, sms, cy);
    if (best < 0) return 1;
    static const char *ek_name[] = {"", " + epilogue", " + epilogue maths", " + epilogue stores",
                                    " + epilogue, TMA store"};
    char name[96];
    snprintf(name, sizeof name, "%s%s%s", what, ek_name[EK], UNI ? ", uniform wg" : "");
    what = name;
    const double tensor = (double)WGS * tiles * KB * (BK / 16) * 64.0;
    printf(
        "ring  %-56s WGS %d  stages %2d  epilogue %5d cy | tensor busy %5.1f%%  (%.0f cycles "
        "a tile per SM)\n",
        what, WGS, S, epi, 100.0 * tensor / (double)best, (double)best / ((double)WGS * tiles));
    return 0;
}

template <int N, int WGS, int WAIT, bool TURNS>
int run(int sms, long long *cy, int tiles, int epi) {
    const int smem = 1024 + WGS * A_BYTES + N * ROW_BYTES + 64;
    auto k = rate<N, WGS, WAIT, TURNS>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    rate_args a{tiles, epi, cy};
    const long long best = best_cycles([&] { k<<<sms, 128 * WGS, smem>>>(a); }, sms, cy);
    if (best < 0) return 1;
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
    if (sms > MAX_SMS) {
        fprintf(stderr, "%d SMs: this program counts at most %d\n", sms, MAX_SMS);
        return 2;
    }
    long long *cy;
    CK(cudaMalloc(&cy, sizeof(long long) * (MAX_SMS + 1)));
    CK(cudaMemset(cy, 0, sizeof(long long) * (MAX_SMS + 1)));
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
    /* The ring: A as batch 256's gate_up input (20992 x 512, 21 MB: L2
     * and HBM) and as one 64-row tile (always in L2). */
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) {
        fprintf(stderr, "no cuTensorMapEncodeTiled\n");
        return 2;
    }
    const size_t rows = 20992, K = (size_t)KB * BK;
    void *A;
    CK(cudaMalloc(&A, rows * K * 2));
    CK(cudaMemset(A, 0, rows * K * 2));
    CUtensorMap tm_big, tm_one;
    if (!encode(fn, &tm_big, A, rows, K, K, 64) || !encode(fn, &tm_one, A, 64, K, K, 64)) {
        fprintf(stderr, "tensor map encoding failed\n");
        return 2;
    }
    const int RT = 20, mt = (int)(rows / 64);
    bad |= run_ring<3, 10, false>("barriers only", sms, cy, tm_one, 1, RT, 0);
    bad |= run_ring<3, 10, false>("barriers only", sms, cy, tm_one, 1, RT, 2500);
    bad |= run_ring<3, 10, true>("TMA, one 64-row tile (L2)", sms, cy, tm_one, 1, RT, 0);
    bad |= run_ring<3, 10, true>("TMA, one 64-row tile (L2)", sms, cy, tm_one, 1, RT, 2500);
    bad |= run_ring<3, 10, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0);
    bad |= run_ring<3, 10, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 2500);
    bad |= run_ring<3, 4, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 2500);
    bad |= run_ring<3, 6, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 2500);
    bad |= run_ring<2, 10, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 2500);
    uint16_t *act;
    CK(cudaMalloc(&act, rows * 1536 * 2));
    bad |= run_ring<3, 10, true, 1>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |= run_ring<3, 10, true, 2>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |= run_ring<3, 10, true, 3>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |= run_ring<3, 10, false, 1>("barriers only", sms, cy, tm_one, 1, RT, 0, act);
    bad |= run_ring<2, 10, true, 1>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    /* The epilogue's tile staged in shared memory and written by one TMA
     * store (act_tile_swizzle.h's layout): 24 KB of tiles leave 7 stages. */
    CUtensorMap tm_act;
    if (!encode(fn, &tm_act, act, rows, 1536, 1536, 64)) {
        fprintf(stderr, "tensor map encoding failed\n");
        return 2;
    }
    bad |= run_ring<3, 7, true, 1>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |= run_ring<3, 7, true, 4>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act, &tm_act);
    /* The warpgroup index warp-uniform (warpgroup_idx: the kernels' form
     * since session 42), its descriptors then in uniform registers: the
     * same configurations without and with the epilogue. */
    bad |= run_ring<3, 10, true, 0, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |= run_ring<3, 10, true, 1, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |= run_ring<3, 10, true, 2, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |= run_ring<3, 7, true, 1, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act);
    bad |=
        run_ring<3, 7, true, 4, true>("TMA, 20992 rows", sms, cy, tm_big, mt, RT, 0, act, &tm_act);
    CK(cudaFree(act));
    CK(cudaFree(A));
    CK(cudaFree(cy));
    return bad;
}
