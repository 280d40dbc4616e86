/* The fused gate_up + SwiGLU with 128 x 128 act tiles, both consumer
 * warpgroups on each tile, each tile's SwiGLU done in slices during the next
 * tile's products (included by sm90a/glu_wgmma.cu, whose tile shape 6 it is).
 *
 * Why: the ping-pong shapes of ring_gemm.cuh read each W block from shared
 * memory once per m64 block (m64n128 products) and fill a stage with 128 A
 * rows per 128 W rows; by the count their shared-memory traffic is ~1.25x
 * what it delivers while the tensor cores run at peak. Here consumer
 * warpgroup c takes rows 64 c .. 64 c + 63 of the tile against all 256 W
 * rows (m64n256 products) and a stage holds 128 A rows per 256 W rows:
 * ~1.0x (the main loop alone ran 84 us at 20992 rows on the H200, 786
 * TFLOP/s). Sharing a tile leaves no other warpgroup's products to hide the
 * epilogue behind, so each thread rounds the finished tile's gate and up
 * pairs into registers (64) and does their SwiGLU in eight slices, one after
 * each of the next tile's k blocks is issued, while the tensor cores run.
 * Session 27 measured it with table lookups (shared-memory window): the
 * lookups alone cost ~50 us at 20992 rows, competing with the products for
 * shared memory; silu_fast.cuh's s(g) takes none (docs/CUDA.md).
 *
 * Bits: the same F32 chains of k16 steps, the same paired roundings, then
 * the table's s(g) (silu_fast_pair, or the global table when the model's
 * check did not enable it), product and rounding: glu_epi's bytes. */
#ifndef HRMT_CUDA_SM90A_GLU_COOP_WGMMA_CUH
#define HRMT_CUDA_SM90A_GLU_COOP_WGMMA_CUH

#include <type_traits>

#include "cuda/pdl.cuh"
#include "cuda/sm90a/silu_fast.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

struct glu_coop_cfg {
    static constexpr int BM = 128, BNA = 128, WN = 2 * BNA;
    /* Two warpgroups and no producer warp: thread 0 refills the ring in
     * line. 8 warps leave 255 registers a thread, room for a tile's
     * accumulators (128) beside the tile before's rounded pairs (64); a
     * ninth warp would share a sub-partition's registers three ways (168). */
    static constexpr int THREADS = 256;
    static constexpr int A_BYTES = BM * ROW_BYTES;
    static constexpr int STAGE_BYTES = A_BYTES + WN * ROW_BYTES; /* 48 KB */
    static constexpr int STAGES = 4;
    static constexpr int SLICES = 8; /* of a tile's SwiGLU: 2 n8 tiles of gates each */
    static constexpr int BAR_BYTES = ((2 * STAGES) * 8 + 15) / 16 * 16;
    static constexpr int SMEM = STAGES * STAGE_BYTES + BAR_BYTES + 1024;
};

struct glu_coop_args {
    int M, nt, kblocks, I;
    const uint16_t *lut;
    uint16_t *act;
    int ldo;
    int fast; /* silu_fast_pair; else every s(g) from the global table */
};

#ifdef HRMT_SM90A
/* f(integral_constant<int, j>) for j = 0 .. 7, in order: the slices'
 * indices known to the compiler, so that the pairs stay in registers (a
 * runtime index made ptxas spill even at 255 registers). */
template <class F>
__device__ __forceinline__ void each_slice(F &&f) {
    f(std::integral_constant<int, 0>{});
    f(std::integral_constant<int, 1>{});
    f(std::integral_constant<int, 2>{});
    f(std::integral_constant<int, 3>{});
    f(std::integral_constant<int, 4>{});
    f(std::integral_constant<int, 5>{});
    f(std::integral_constant<int, 6>{});
    f(std::integral_constant<int, 7>{});
}
/* Slice j of a finished tile: n8 tiles 2 j, 2 j + 1 of gates (ups 16
 * further), both row halves; v[hf].{x, y, z, w} = gate, up of tile 2 j,
 * gate, up of 2 j + 1. row0 / col0: the thread's first row and column of
 * the tile in act. */
__device__ __forceinline__ void coop_slice(const uint4 (&v)[2], const glu_coop_args &p, int row0,
                                           int col0, int j) {
    namespace rc = hrmt_rowops_cuda;
    uint32_t sg[2][2];
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const uint32_t g[2] = {v[hf].x, v[hf].z};
#pragma unroll
        for (int e = 0; e < 2; e++)
            sg[hf][e] = p.fast ? silu_fast_pair(p.lut, g[e])
                               : (uint32_t)__ldg(p.lut + (g[e] & 0xffffu)) |
                                     (uint32_t)__ldg(p.lut + (g[e] >> 16)) << 16;
    }
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const int row = row0 + 8 * hf;
        if (row >= p.M) continue;
        const uint32_t u[2] = {v[hf].y, v[hf].w};
        uint16_t *out = p.act + (size_t)row * p.ldo + col0 + 16 * j;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const float o0 =
                rc::fmul(__uint_as_float(sg[hf][e] << 16), __uint_as_float(u[e] << 16));
            const float o1 = rc::fmul(__uint_as_float(sg[hf][e] & 0xffff0000u),
                                      __uint_as_float(u[e] & 0xffff0000u));
            *(uint32_t *)(out + 8 * e) = rc::pack_bf16x2_arith(o0, o1);
        }
    }
}
#endif

__global__ void __launch_bounds__(glu_coop_cfg::THREADS, 1)
    glu_coop_kernel(const __grid_constant__ CUtensorMap tm_a,
                    const __grid_constant__ CUtensorMap tm_w, const glu_coop_args p) {
#ifdef HRMT_SM90A
    using C = glu_coop_cfg;
    constexpr int S = C::STAGES;
    static_assert(C::SLICES * 2 == C::BNA / 8, "a slice is two n8 tiles of gates");
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + S * C::STAGE_BYTES), *empty = full + S;
    const int wg = threadIdx.x / 128, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    const int nt = p.nt, tiles = (p.M + C::BM - 1) / C::BM * nt, kb_n = p.kblocks;
    if (threadIdx.x == 0) {
        ring_init(full, empty, S, 8); /* one arrive per warp */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    /* Thread 0's j-th load: k block j % kb_n of the CTA's (j / kb_n)-th tile
     * into stage j % S (its W part, its A part, or both). */
    auto load = [&](int j, bool w_part, bool a_part) {
        const int t = blockIdx.x + (j / kb_n) * gridDim.x, kb = j % kb_n;
        if (t >= tiles) return;
        const int m0 = (t / nt) * C::BM, n0 = (t % nt) * C::BNA, sj = j % S;
        uint8_t *st = smem + sj * C::STAGE_BYTES, *w = st + C::A_BYTES;
        if (w_part) {
            mbar_expect_tx(&full[sj], C::STAGE_BYTES);
            tma_load(w, &tm_w, &full[sj], kb * BK, n0);
            tma_load(w + C::BNA * ROW_BYTES, &tm_w, &full[sj], kb * BK, p.I + n0);
        }
        if (a_part) tma_load(st, &tm_a, &full[sj], kb * BK, m0);
    };
    /* W does not depend on the kernel before (programmatic dependent
     * launch): the first stages' W before waiting for it, their A after. */
    if (threadIdx.x == 0)
        for (int j = 0; j < S; j++) load(j, true, false);
    pdl_wait();
    if (threadIdx.x == 0)
        for (int j = 0; j < S; j++) load(j, false, true);
    pdl_trigger();
    /* Thread (warp, lane) of warpgroup c holds rows c 64 + (warp % 4) 16 +
     * lane / 4 (+ 8) of a tile, columns 8 i + 2 (lane % 4) (+ 1) of n8
     * tile i: gates in tiles 0-15, ups in 16-31. */
    const int c = wg, rsub = c * 64 + (warp & 3) * 16 + lane / 4, csub = 2 * (lane & 3);
    int prow = -1, pcol = 0; /* the finished tile's first row and column of this thread */
    int s = 0, q = 0;        /* q: ring uses so far */
    uint4 pk[C::SLICES][2];  /* the finished tile's rounded pairs, slice j at pk[j] */
    auto slice = [&](auto J) {
        constexpr int j = decltype(J)::value;
        coop_slice(pk[j], p, prow, pcol, j);
    };
    /* Stage `slot`'s use `use` is read by this warp: one arrive per warp;
     * once all 8 have, thread 0 refills it with use + S. */
    auto give_back = [&](int slot, int use) {
        if (lane == 0) mbar_arrive(&empty[slot]);
        if (threadIdx.x == 0) {
            mbar_wait(&empty[slot], (unsigned)(use / S) & 1);
            load(use + S, true, true);
        }
        __syncwarp(); /* warp 0 together again before its next wgmma */
    };
    unsigned ph = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        float acc[C::WN / 2];
#pragma unroll
        for (int i = 0; i < C::WN / 2; i++) acc[i] = 0.0f;
        int prev = -1;
        /* Eight k blocks at a time, unrolled: the tile before's slice jj
         * after the products of the first eight's block jj are issued. */
        for (int kb0 = 0; kb0 < kb_n; kb0 += C::SLICES) {
            auto step = [&](auto J) {
                constexpr int jj = decltype(J)::value;
                if (kb0 + jj >= kb_n) return;
                mbar_wait(&full[s], ph);
                const uint8_t *st = smem + s * C::STAGE_BYTES;
                const uint64_t da = desc_k128(st + c * 64 * ROW_BYTES),
                               dw = desc_k128(st + C::A_BYTES);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) wgmma_n256(acc, da + 2 * kk, dw + 2 * kk);
                wg_commit();
                if (kb0 == 0 && prow >= 0) slice(J);
                wg_wait<1>(); /* the previous stage is read: give it back */
                if (prev >= 0) give_back(prev, q - 1);
                prev = s;
                ring_next(s, ph, S);
                q++;
            };
            each_slice(step);
        }
        wg_wait<0>();
        give_back(prev, q - 1);
#pragma unroll
        for (int i = 0; i < C::WN / 2; i++) asm volatile("" : "+f"(acc[i])::"memory");
        /* Fewer k blocks than slices: the rest of the tile before now. */
        if (prow >= 0)
            each_slice([&](auto J) {
                if (decltype(J)::value >= kb_n) slice(J);
            });
        /* This tile's rounded pairs (cvt.rn.bf16x2, as glu_epi's). */
        each_slice([&](auto J) {
            constexpr int j = decltype(J)::value;
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                namespace rc = hrmt_rowops_cuda;
                const int a0 = 8 * j + 2 * hf, a1 = a0 + 4; /* n8 tiles 2 j, 2 j + 1 */
                pk[j][hf] = make_uint4(
                    rc::pack_bf16x2_arith(acc[a0], acc[a0 + 1]),
                    rc::pack_bf16x2_arith(acc[C::BNA / 2 + a0], acc[C::BNA / 2 + a0 + 1]),
                    rc::pack_bf16x2_arith(acc[a1], acc[a1 + 1]),
                    rc::pack_bf16x2_arith(acc[C::BNA / 2 + a1], acc[C::BNA / 2 + a1 + 1]));
            }
        });
        prow = (t / nt) * C::BM + rsub;
        pcol = (t % nt) * C::BNA + csub;
    }
    if (prow >= 0) each_slice(slice);
#endif
}

} // namespace

#endif
