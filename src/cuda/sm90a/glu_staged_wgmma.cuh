/* The fused gate_up + SwiGLU with 128 x 128 act tiles, both consumer
 * warpgroups on each tile, and the SwiGLU done by warps of their own
 * (included by sm90a/glu_wgmma.cu, whose tile shape 7 it is).
 *
 * Why: the ping-pong shapes of ring_gemm.cuh read each W block from shared
 * memory once per m64 block (m64n128 products) and fill the stage with
 * 128 A rows per 128 W rows; by the count their shared-memory traffic is
 * ~1.25x what it delivers while the tensor cores run at peak. Here each
 * consumer warpgroup takes 64 of the tile's 128 rows against all 256 W rows
 * (m64n256 products: W read once per 64 rows, A once per 256 columns) and
 * the stage holds 128 A rows per 256 W rows: ~1.0x. Sharing the tile
 * leaves no second warpgroup's products to hide the epilogue behind (tried
 * in session 24: slower), so the consumers only round their gate and up
 * pairs into a staging buffer and go on to the next tile, while three warps
 * of the producer's warpgroup look s(g) up, multiply and store.
 *
 * Bits: the same F32 chains of k16 steps, the same paired roundings, and
 * glu_silu.cuh's lookup, product and rounding: ring_gemm's glu_epi bytes.
 *
 * Shared memory: 3 stages of 48 KB, the staging buffer (64 KB: per row 64
 * units of (gate pair, up pair), 8 bytes each, the unit index XORed with
 * 4 (row % 4) so that the consumers' stores and the epilogue's loads take
 * two wavefronts per 256 bytes), the SwiGLU window, the barriers. */
#ifndef HRMT_CUDA_SM90A_GLU_STAGED_WGMMA_CUH
#define HRMT_CUDA_SM90A_GLU_STAGED_WGMMA_CUH

#include "cuda/pdl.cuh"
#include "cuda/sm90a/glu_silu.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

/* KB: k per stage (64: 128-byte rows in the 128-byte swizzle; 32: 64-byte
 * rows in the 64-byte swizzle, twice the stages for the same bytes). ER:
 * rows an epilogue warp takes at a time. */
template <int KB, int ER>
struct glu_staged_cfg {
    static constexpr int BM = 128, BNA = 128, WN = 2 * BNA;
    static constexpr int THREADS = 384; /* producer + epilogue, 2 consumers */
    static constexpr int EPI_WARPS = 3; /* warps 1-3 of warpgroup 0 */
    static constexpr int RB = KB * 2;   /* bytes per row of a stage */
    static constexpr int A_BYTES = BM * RB;
    static constexpr int STAGE_BYTES = A_BYTES + WN * RB;
    static constexpr int UNITS = BNA / 2;          /* (gate pair, up pair) per row */
    static constexpr int STG_ROW = UNITS * 8;      /* 512 bytes */
    static constexpr int STG_BYTES = BM * STG_ROW; /* 64 KB */
    static constexpr int FIXED = STG_BYTES + SLUT_BYTES + 1024 + 128;
    static constexpr int STAGES = (227 * 1024 - FIXED) / STAGE_BYTES;
    static constexpr int BAR_BYTES = ((2 * STAGES + 2) * 8 + 15) / 16 * 16;
    static constexpr int SMEM = STAGES * STAGE_BYTES + STG_BYTES + SLUT_BYTES + BAR_BYTES + 1024;
    static_assert(BAR_BYTES <= 128, "barriers past the reserve");
};

struct glu_staged_args {
    int M, nt, kblocks, I;
    const uint16_t *lut;
    uint16_t *act;
    int ldo;
    int slut; /* HRMT_CUDA_GLU_SMEM_TABLE: the window in shared memory */
};

/* Byte offset of row r's unit u in the staging buffer (512-byte rows). */
__device__ __forceinline__ int stg_at(int r, int u) {
    return r * 512 + ((u ^ ((r & 3) << 2)) << 3);
}

#ifdef HRMT_SM90A
/* Shared-memory matrix descriptor of a K-major operand with KB-wide rows in
 * the swizzle of that width (wgmma_common.cuh's desc_k128 for KB = 64). */
template <int KB>
__device__ __forceinline__ uint64_t desc_kb(const void *p) {
    if constexpr (KB == 64) return desc_k128(p);
    const uint64_t a = smem_u32(p);
    return ((a & 0x3ffff) >> 4) | (1ull << 16) | ((uint64_t)(512 >> 4) << 32) | (2ull << 62);
}
#endif

template <int KB, int ER>
__global__ void __launch_bounds__(glu_staged_cfg<KB, ER>::THREADS, 1)
    glu_staged_kernel(const __grid_constant__ CUtensorMap tm_a,
                      const __grid_constant__ CUtensorMap tm_w, const glu_staged_args p) {
#ifdef HRMT_SM90A
    using C = glu_staged_cfg<KB, ER>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *stg = smem + S * C::STAGE_BYTES;
    uint8_t *slut_part = stg + C::STG_BYTES;
    uint64_t *full = (uint64_t *)(slut_part + SLUT_BYTES), *empty = full + S;
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
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 80;");
        if (warp == 0) {
            if (lane != 0) return;
            /* W's first stages before waiting for the kernel before (PDL). */
            const int pre = blockIdx.x < tiles ? (kb_n < S ? kb_n : S) : 0;
            const int n_first = (blockIdx.x % nt) * C::BNA;
            for (int kb = 0; kb < pre; kb++) {
                uint8_t *w = smem + kb * C::STAGE_BYTES + C::A_BYTES;
                mbar_expect_tx(&full[kb], C::STAGE_BYTES);
                tma_load(w, &tm_w, &full[kb], kb * KB, n_first);
                tma_load(w + C::BNA * C::RB, &tm_w, &full[kb], kb * KB, p.I + n_first);
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
                        tma_load(w, &tm_w, &full[s], kb * KB, n0);
                        tma_load(w + C::BNA * C::RB, &tm_w, &full[s], kb * KB, p.I + n0);
                    }
                    tma_load(st, &tm_a, &full[s], kb * KB, m0);
                    ring_next(s, ph, S);
                }
            }
            return;
        }
        /* The epilogue: warp e takes rows e, e + 3, ... of each staged tile,
         * ER at a time (all loads, then lookups, then stores: one warp per
         * SM sub-partition has to keep up with the tensor cores, so it needs
         * loads in flight); lane l the units 2 l, 2 l + 1, act columns
         * 4 l .. 4 l + 3. Rows past M are zeros, looked up, not stored. */
        const int e = warp - 1;
        const uint16_t *slut = p.slut ? (const uint16_t *)slut_part : nullptr;
        if (slut) {
            slut_fill(slut_part, threadIdx.x - 32, 32 * C::EPI_WARPS, p.lut);
            asm volatile("bar.sync 1, %0;" ::"n"(32 * C::EPI_WARPS) : "memory");
        }
        pdl_wait(); /* before the stores */
        pdl_trigger();
        unsigned sph = 0;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int m0 = (t / nt) * C::BM, n0 = (t % nt) * C::BNA;
            mbar_wait(stg_full, sph);
            sph ^= 1;
            for (int r0 = e; r0 < C::BM; r0 += ER * C::EPI_WARPS) {
                uint4 v[ER];
                bool ok[ER], in = slut != nullptr;
#pragma unroll
                for (int j = 0; j < ER; j++) {
                    const int r = r0 + j * C::EPI_WARPS;
                    ok[j] = r < C::BM && m0 + r < p.M; /* the same for the whole warp */
                    v[j] = ok[j] ? *(const uint4 *)(stg + stg_at(r, 2 * lane))
                                 : make_uint4(0, 0, 0, 0);
                    in = in && slut_holds(v[j].x) && slut_holds(v[j].z);
                }
                uint32_t sg[ER][2];
                if (__all_sync(0xffffffffu, in)) {
#pragma unroll
                    for (int j = 0; j < ER; j++) {
                        sg[j][0] = silu_pair(p.lut, slut, v[j].x, true);
                        sg[j][1] = silu_pair(p.lut, slut, v[j].z, true);
                    }
                } else {
#pragma unroll
                    for (int j = 0; j < ER; j++) {
                        sg[j][0] = silu_pair(p.lut, slut, v[j].x, false);
                        sg[j][1] = silu_pair(p.lut, slut, v[j].z, false);
                    }
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
    asm volatile("setmaxnreg.inc.sync.aligned.u32 208;");
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
            const uint64_t da = desc_kb<KB>(st + c * 64 * C::RB), dw = desc_kb<KB>(st + C::A_BYTES);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < KB / 16; kk++) wgmma_n256(acc, da + 2 * kk, dw + 2 * kk);
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
