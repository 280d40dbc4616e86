/* The fused gate_up's SwiGLU epilogue (glu_epi<BNA>: which W rows a tile
 * reads, and act = bf16(s(bf16(gate)) * bf16(up)) from its accumulators),
 * shared by the gate_up kernels (glu_wgmma.cu) and the gate_up + down_proj
 * cluster kernel (cluster_norm_wgmma.cu), so that both give the same bytes
 * by construction. */
#ifndef HRMT_CUDA_SM90A_GLU_EPI_CUH
#define HRMT_CUDA_SM90A_GLU_EPI_CUH

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/act_tile_swizzle.h"
#include "cuda/sm90a/ring_gemm.cuh"
#include "cuda/sm90a/silu_fast.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

/* The table's entries for |g| in [2^-16, 2^8) - nearly every gate - copied
 * into the CTA's shared memory (12 KB; cuda/sm90a/ring_gemm.cuh's epilogue
 * part): a warp's 32 lookups there cost a few shared-memory wavefronts, where
 * the same from the 128 KB global table cost a wavefront per cache line
 * touched (ncu: the kernel's warps stalled on L1TEX). Gates outside the
 * window read the global table; the bytes are the table's either way. */
constexpr unsigned SLUT_E0 = 111;        /* first biased exponent held: 2^-16 */
constexpr unsigned SLUT_HALF = 24 * 128; /* entries per sign: 24 exponents */
constexpr int SLUT_BYTES = 2 * SLUT_HALF * 2;

/* Gate bits gb's place in its sign's half of the window; SLUT_HALF or more
 * (wrapping below) when outside it. */
__device__ __forceinline__ unsigned slut_offset(uint32_t gb) {
    return (gb & 0x7fffu) - SLUT_E0 * 128u;
}
/* s(gb) from the window; gb must be in it. */
__device__ __forceinline__ uint32_t slut_at(const uint16_t *slut, uint32_t gb) {
    return slut[(gb >> 15) * SLUT_HALF + slut_offset(gb)];
}
__device__ __forceinline__ uint32_t silu_lookup(const uint16_t *lut, const uint16_t *slut,
                                                uint32_t gb) {
    if (slut && slut_offset(gb) < SLUT_HALF) return slut_at(slut, gb);
    return __ldg(lut + gb);
}

/* s of NP packed gate pairs from the table: plain loads from the window
 * when every gate of the warp falls in it (nearly always; a warp vote),
 * else silu_lookup's branch gate by gate. */
template <int NP>
__device__ __forceinline__ void silu_lookup_pairs(const uint16_t *lut, const uint16_t *slut,
                                                  const uint32_t (&g2)[NP], uint32_t (&sg)[NP]) {
    bool in = slut != nullptr;
#pragma unroll
    for (int q = 0; q < NP; q++)
        in = in && slut_offset(g2[q] & 0xffffu) < SLUT_HALF && slut_offset(g2[q] >> 16) < SLUT_HALF;
    if (__all_sync(0xffffffffu, in)) {
#pragma unroll
        for (int q = 0; q < NP; q++)
            sg[q] = slut_at(slut, g2[q] & 0xffffu) | slut_at(slut, g2[q] >> 16) << 16;
    } else {
#pragma unroll
        for (int q = 0; q < NP; q++) {
            const uint32_t lo = silu_lookup(lut, slut, g2[q] & 0xffffu);
            sg[q] = lo | silu_lookup(lut, slut, g2[q] >> 16) << 16;
        }
    }
}

/* act[r, n0 .. n0 + BNA): the tile reads W's gate rows n0.. and up rows
 * I + n0.. into one stage, adjacent, so that one wgmma of N = 2 BNA covers
 * both and a thread holds each gate next to its up. */
template <int BNA>
struct glu_epi {
    static constexpr int TILE_N = BNA;
    static constexpr int EPI_SMEM = SLUT_BYTES;
    struct args {
        ring_dims d;
        int I;
        const uint16_t *lut;
        uint16_t *act;
        int ldo;
        int slut; /* HRMT_CUDA_GLU_SMEM_TABLE: the window in shared memory */
        int fast; /* HRMT_CUDA_GLU_FAST_SILU: silu_fast_pair, no lookups */
        int mul;  /* HRMT_CUDA_GLU_MUL: s(g) u by mul_bf16x2 */
    };
    /* The window's two halves (g >= 0, g < 0), 16 bytes per copy. */
    static __device__ __forceinline__ void epi_load(uint8_t *part, int t, int threads,
                                                    const args &p) {
        if (!p.slut) return;
        constexpr int HALF16 = SLUT_HALF * 2 / 16;
        for (int i = t; i < 2 * HALF16; i += threads) {
            const int sign = i / HALF16, j = i % HALF16;
            const uint4 *src = (const uint4 *)(p.lut + (sign << 15) + SLUT_E0 * 128);
            ((uint4 *)part)[i] = __ldg(src + j);
        }
    }
    static __device__ __forceinline__ void load_w(uint8_t *st, const CUtensorMap *tm, uint64_t *bar,
                                                  int kb, int n0, const args &p) {
#ifdef HRMT_SM90A
        tma_load(st, tm, bar, kb * BK, n0);
        tma_load(st + BNA * ROW_BYTES, tm, bar, kb * BK, p.I + n0);
#endif
    }
    /* Thread (warp, lane) holds rows warp * 16 + lane / 4 (+ 8) of each m64
     * block, columns 8 i + 2 (lane % 4) (+ 1) of n8 tile i: gates in tiles
     * 0 .. BNA / 8 - 1, ups in the next BNA / 8. Each column pair of gates
     * and of ups is rounded by one paired conversion (cvt.rn.bf16x2: RNE,
     * the software rounding's bits for every non-NaN); when every gate of
     * the warp falls in the shared-memory window (nearly always) the
     * lookups are plain shared loads, else each takes silu_lookup's branch.
     * All lookups are issued before the first store: a store between them
     * (the compiler cannot tell act from the table) would make each load
     * wait for the one before. (ncu: the epilogue, ~60 instructions an
     * output in its first form, outlasted the other warpgroup's products.) */
    template <int MSUB, bool STAGE = false>
    static __device__ __forceinline__ void store(float (&acc)[MSUB][BNA], int m0, int n0, int warp,
                                                 int lane, const args &p,
                                                 const uint8_t *part = nullptr,
                                                 uint8_t *buf = nullptr) {
        constexpr int NP = MSUB * (BNA / 8) * 2; /* column pairs per thread */
        const uint16_t *slut = p.slut ? (const uint16_t *)part : nullptr;
        uint32_t g2[NP], u2[NP];
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < BNA / 8; i++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int q = (ms * (BNA / 8) + i) * 2 + hf, a = 4 * i + 2 * hf;
                    g2[q] = rc::pack_bf16x2_arith(acc[ms][a], acc[ms][a + 1]);
                    u2[q] = rc::pack_bf16x2_arith(acc[ms][BNA / 2 + a], acc[ms][BNA / 2 + a + 1]);
                }
        uint32_t sg[NP];
        if (p.fast) {
#pragma unroll
            for (int q = 0; q < NP; q++) sg[q] = silu_fast_pair(p.lut, g2[q]);
        } else {
            silu_lookup_pairs(p.lut, slut, g2, sg);
        }
        /* The act pair of column pair q, computed as it is stored (STAGE:
         * into buf's tile, glu_epi_ts; the two forms are spelt apart so
         * that the plain one compiles as it did before the staged one). */
        auto put = [&](auto pair) {
#pragma unroll
            for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int row = m0 + ms * 64 + warp * 16 + lane / 4 + 8 * hf;
                    if (row >= p.d.M) continue;
                    if constexpr (STAGE) {
#pragma unroll
                        for (int i = 0; i < BNA / 8; i++)
                            sts_u32(buf + act_tile_offset(row - m0, i, lane & 3),
                                    pair((ms * (BNA / 8) + i) * 2 + hf));
                    } else {
                        uint16_t *out = p.act + (size_t)row * p.ldo + n0 + 2 * (lane & 3);
#pragma unroll
                        for (int i = 0; i < BNA / 8; i++)
                            *(uint32_t *)(out + 8 * i) = pair((ms * (BNA / 8) + i) * 2 + hf);
                    }
                }
        };
        if (p.mul) {
            put([&](int q) { return mul_bf16x2(sg[q], u2[q]); });
        } else {
            put([&](int q) {
                const float o0 =
                    rc::fmul(__uint_as_float(sg[q] << 16), __uint_as_float(u2[q] << 16));
                const float o1 = rc::fmul(__uint_as_float(sg[q] & 0xffff0000u),
                                          __uint_as_float(u2[q] & 0xffff0000u));
                return rc::pack_bf16x2_arith(o0, o1);
            });
        }
    }
    /* The same into a 64 x 64 tile of shared memory at buf in the 128-byte
     * swizzle (act_tile_swizzle.h: a warp's 32 stores hit 32 banks), for
     * one TMA store of the tile (glu_epi_ts). */
    template <int MSUB>
    static __device__ __forceinline__ void stage(float (&acc)[MSUB][BNA], int m0, int warp,
                                                 int lane, const args &p, const uint8_t *part,
                                                 uint8_t *buf) {
        static_assert(MSUB == 1 && BNA == 64, "a 64 x 64 act tile: 128-byte rows");
        store<MSUB, true>(acc, m0, 0, warp, lane, p, part, buf);
    }
};

/* The epilogue's arguments for `rows` rows of act; slut: the table's window
 * in shared memory. */
template <int BNA>
typename glu_epi<BNA>::args glu_args(const hrmt_model *m, size_t rows, void *act, int slut) {
    const size_t H = m->hidden, I = m->inter;
    return {{(int)rows, (int)(I / BNA), (int)(H / BK)},
            (int)I,
            m->ctx->cuda->silu_bf16,
            (uint16_t *)act,
            (int)I,
            slut,
            cu_model(m)->glu_fast,
            cu_model(m)->glu_mul};
}

} // namespace

#endif
