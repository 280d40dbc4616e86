/* The fused gate_up + SwiGLU with 128 x 128 act tiles, both consumer
 * warpgroups on each tile, and the SwiGLU done by warps of their own
 * (included by sm90a/glu_wgmma.cu, whose tile shape 6 it is).
 *
 * Why: the ping-pong shapes of ring_gemm.cuh read each W block from shared
 * memory once per m64 block (m64n128 products) and fill the stage with
 * 128 A rows per 128 W rows; by the count their shared-memory traffic is
 * ~1.25x what it delivers while the tensor cores run at peak. Here each
 * consumer warpgroup takes 64 of the tile's 128 rows against all 256 W rows
 * (m64n256 products) and the stage holds 128 A rows per 256 W rows: ~1.0x
 * (84 us at 20992 rows on the H200 with the epilogue skipped, 92 with the
 * consumers' staging stores: session 27). The consumers only round their
 * gate and up pairs into a staging buffer and go on to the next tile, while
 * three warps of the producer's warpgroup compute s(g), multiply and store.
 * Session 27's form looked s(g) up in shared memory and its three warps,
 * stalled on those reads, could not keep up (177 us); here s(g) is
 * silu_fast.cuh's, arithmetic with no shared-memory reads.
 *
 * Bits: the same F32 chains of k16 steps, the same paired roundings, then
 * the table's s(g) (silu_fast_pair, or the global table when the model's
 * check did not enable it), product and rounding: glu_epi's bytes.
 *
 * Shared memory: 3 stages of 48 KB, the staging buffer (64 KB: per row 64
 * units of (gate pair, up pair), 8 bytes each, the unit index XORed with
 * 4 (row % 4) so that the consumers' stores and the epilogue's loads take
 * two wavefronts per 256 bytes), the barriers. */
#ifndef HRMT_CUDA_SM90A_GLU_STAGED_WGMMA_CUH
#define HRMT_CUDA_SM90A_GLU_STAGED_WGMMA_CUH

#include "cuda/pdl.cuh"
#include "cuda/sm90a/silu_fast.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

struct glu_staged_cfg {
    static constexpr int BM = 128, BNA = 128, WN = 2 * BNA;
    static constexpr int THREADS = 384; /* producer + epilogue, 2 consumers */
    static constexpr int EPI_WARPS = 3; /* warps 1-3 of warpgroup 0 */
    static constexpr int ER = 4;        /* rows an epilogue warp takes at a time */
    static constexpr int A_BYTES = BM * ROW_BYTES;
    static constexpr int STAGE_BYTES = A_BYTES + WN * ROW_BYTES; /* 48 KB */
    static constexpr int UNITS = BNA / 2;                        /* (gate pair, up pair) per row */
    static constexpr int STG_ROW = UNITS * 8;                    /* 512 bytes */
    static constexpr int STG_BYTES = BM * STG_ROW;               /* 64 KB */
    static constexpr int FIXED = STG_BYTES + 1024 + 128;
    static constexpr int STAGES = (227 * 1024 - FIXED) / STAGE_BYTES;
    static constexpr int BAR_BYTES = ((2 * STAGES + 2) * 8 + 15) / 16 * 16;
    static constexpr int SMEM = STAGES * STAGE_BYTES + STG_BYTES + BAR_BYTES + 1024;
    static_assert(BAR_BYTES <= 128, "barriers past the reserve");
};

struct glu_staged_args {
    int M, nt, kblocks, I;
    const uint16_t *lut;
    uint16_t *act;
    int ldo;
    int fast; /* silu_fast_pair; else every s(g) from the global table */
};

/* Byte offset of row r's unit u in the staging buffer (512-byte rows). */
__device__ __forceinline__ int stg_at(int r, int u) {
    return r * 512 + ((u ^ ((r & 3) << 2)) << 3);
}

__global__ void __launch_bounds__(glu_staged_cfg::THREADS, 1)
    glu_staged_kernel(const __grid_constant__ CUtensorMap tm_a,
                      const __grid_constant__ CUtensorMap tm_w, const glu_staged_args p) {
#ifdef HRMT_SM90A
    using C = glu_staged_cfg;
    constexpr int S = C::STAGES, ER = C::ER;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *stg = smem + S * C::STAGE_BYTES;
    uint64_t *full = (uint64_t *)(stg + C::STG_BYTES), *empty = full + S;
    uint64_t *stg_full = empty + S, *stg_empty = stg_full + 1;
    const int wg = threadIdx.x / 128, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    const int nt = p.nt, tiles = (p.M + C::BM - 1) / C::BM * nt, kb_n = p.kblocks;
    if (threadIdx.x == 0) {
        ring_init(full, empty, S, 8);            /* one arrive per consumer warp */
        mbar_init(stg_full, 256);                /* every consumer thread */
        mbar_init(stg_empty, 32 * C::EPI_WARPS); /* every epilogue thread */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    /* No register rebalancing (setmaxnreg): 384 threads at the 168 registers
     * ptxas gives each fit the file, and the epilogue warps need theirs. */
    if (wg == 0) {
        if (warp == 0) {
            if (lane != 0) return;
            /* W's first stages before waiting for the kernel before (PDL). */
            const int pre = blockIdx.x < tiles ? (kb_n < S ? kb_n : S) : 0;
            const int n_first = (blockIdx.x % nt) * C::BNA;
            for (int kb = 0; kb < pre; kb++) {
                uint8_t *w = smem + kb * C::STAGE_BYTES + C::A_BYTES;
                mbar_expect_tx(&full[kb], C::STAGE_BYTES);
                tma_load(w, &tm_w, &full[kb], kb * BK, n_first);
                tma_load(w + C::BNA * ROW_BYTES, &tm_w, &full[kb], kb * BK, p.I + n_first);
            }
            pdl_wait();
            pdl_trigger();
            int s = 0;
            unsigned ph = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                const int m0 = (t / nt) * C::BM, n0 = (t % nt) * C::BNA;
                for (int kb = 0; kb < kb_n; kb++) {
                    uint8_t *st = smem + s * C::STAGE_BYTES, *w = st + C::A_BYTES;
                    if (!(t == (int)blockIdx.x && kb < pre)) {
                        mbar_wait(&empty[s], ph ^ 1);
                        mbar_expect_tx(&full[s], C::STAGE_BYTES);
                        tma_load(w, &tm_w, &full[s], kb * BK, n0);
                        tma_load(w + C::BNA * ROW_BYTES, &tm_w, &full[s], kb * BK, p.I + n0);
                    }
                    tma_load(st, &tm_a, &full[s], kb * BK, m0);
                    ring_next(s, ph, S);
                }
            }
            return;
        }
        /* The epilogue: warp e takes rows e, e + 3, ... of each staged tile,
         * ER at a time (all loads, then s(g), then stores: one warp per SM
         * sub-partition has to keep up with the tensor cores, so it needs
         * independent work in flight); lane l the units 2 l, 2 l + 1, act
         * columns 4 l .. 4 l + 3. Rows past M are zeros, not stored. */
        const int e = warp - 1;
        pdl_wait(); /* before the stores */
        pdl_trigger();
        unsigned sph = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int m0 = (t / nt) * C::BM, n0 = (t % nt) * C::BNA;
            mbar_wait(stg_full, sph);
            sph ^= 1;
            for (int r0 = e; r0 < C::BM; r0 += ER * C::EPI_WARPS) {
                uint4 v[ER];
                bool ok[ER];
#pragma unroll
                for (int j = 0; j < ER; j++) {
                    const int r = r0 + j * C::EPI_WARPS;
                    ok[j] = r < C::BM && m0 + r < p.M; /* the same for the whole warp */
                    v[j] = ok[j] ? *(const uint4 *)(stg + stg_at(r, 2 * lane))
                                 : make_uint4(0, 0, 0, 0);
                }
                uint32_t sg[ER][2];
#pragma unroll
                for (int j = 0; j < ER; j++) {
                    const uint32_t g[2] = {v[j].x, v[j].z};
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        sg[j][h] = p.fast ? silu_fast_pair(p.lut, g[h])
                                          : (uint32_t)__ldg(p.lut + (g[h] & 0xffffu)) |
                                                (uint32_t)__ldg(p.lut + (g[h] >> 16)) << 16;
                }
#pragma unroll
                for (int j = 0; j < ER; j++) {
                    const int r = r0 + j * C::EPI_WARPS;
                    if (ok[j])
                        *(uint2 *)(p.act + (size_t)(m0 + r) * p.ldo + n0 + 4 * lane) = make_uint2(
                            swiglu_pair(sg[j][0], v[j].y), swiglu_pair(sg[j][1], v[j].w));
                }
            }
            mbar_arrive(stg_empty); /* this thread's reads of the buffer are done */
        }
        return;
    }
    /* Consumer warpgroup c: rows 64 c .. 64 c + 63 of each tile against the
     * stage's 256 W rows (gates n0.., then ups I + n0..). */
    const int c = wg - 1, cwarp = warp & 3;
    int s = 0;
    unsigned ph = 0, sph = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        float acc[C::WN / 2];
#pragma unroll
        for (int i = 0; i < C::WN / 2; i++) acc[i] = 0.0f;
        int prev = -1;
        for (int kb = 0; kb < kb_n; kb++) {
            mbar_wait(&full[s], ph);
            const uint8_t *st = smem + s * C::STAGE_BYTES;
            const uint64_t da = desc_k128(st + c * 64 * ROW_BYTES), dw = desc_k128(st + C::A_BYTES);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) wgmma_n256(acc, da + 2 * kk, dw + 2 * kk);
            wg_commit();
            wg_wait<1>(); /* the previous stage is read: give it back */
            if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
            prev = s;
            ring_next(s, ph, S);
        }
        wg_wait<0>();
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
            /* Keep the staging's reads of the accumulators after the wait. */
#pragma unroll
        for (int i = 0; i < C::WN / 2; i++) asm volatile("" : "+f"(acc[i])::"memory");
        /* The epilogue has read the tile before out of the buffer. */
        mbar_wait(stg_empty, sph ^ 1);
        sph ^= 1;
        /* Thread (warp, lane) holds rows cwarp * 16 + lane / 4 (+ 8), columns
         * 8 i + 2 (lane % 4) (+ 1) of n8 tile i: gates in tiles 0-15, ups
         * in 16-31; unit 4 i + lane % 4 of its row. */
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int r = c * 64 + cwarp * 16 + lane / 4 + 8 * hf;
#pragma unroll
            for (int i = 0; i < C::BNA / 8; i++) {
                const int a = 4 * i + 2 * hf;
                const uint32_t g2 = hrmt_rowops_cuda::pack_bf16x2_arith(acc[a], acc[a + 1]);
                const uint32_t u2 = hrmt_rowops_cuda::pack_bf16x2_arith(acc[C::BNA / 2 + a],
                                                                        acc[C::BNA / 2 + a + 1]);
                *(uint2 *)(stg + stg_at(r, 4 * i + (lane & 3))) = make_uint2(g2, u2);
            }
        }
        mbar_arrive(stg_full);
    }
#endif
}

} // namespace

#endif
