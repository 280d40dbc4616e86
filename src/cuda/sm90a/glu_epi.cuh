/* The fused gate_up's epilogue (SwiGLU on the accumulators, act stored),
 * shared by the ring GEMM (glu_wgmma.cu) and the cluster kernel that runs
 * o_proj + norm + gate_up (cluster_glu_wgmma.cu). Each includer is one
 * translation unit, so everything here is internal to it. */
#ifndef HRMT_CUDA_SM90A_GLU_EPI_CUH
#define HRMT_CUDA_SM90A_GLU_EPI_CUH

#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/ring_gemm.cuh" /* ring_dims */

namespace {

namespace rc = hrmt_rowops_cuda;

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
    template <int MSUB>
    static __device__ __forceinline__ void store(float (&acc)[MSUB][BNA], int m0, int n0, int warp,
                                                 int lane, const args &p,
                                                 const uint8_t *part = nullptr) {
        constexpr int NP = MSUB * (BNA / 8) * 2; /* column pairs per thread */
        const uint16_t *slut = p.slut ? (const uint16_t *)part : nullptr;
        uint32_t g2[NP], u2[NP];
        bool in = slut != nullptr;
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < BNA / 8; i++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int q = (ms * (BNA / 8) + i) * 2 + hf, a = 4 * i + 2 * hf;
                    g2[q] = rc::pack_bf16x2_arith(acc[ms][a], acc[ms][a + 1]);
                    u2[q] = rc::pack_bf16x2_arith(acc[ms][BNA / 2 + a], acc[ms][BNA / 2 + a + 1]);
                    in = in && slut_offset(g2[q] & 0xffffu) < SLUT_HALF &&
                         slut_offset(g2[q] >> 16) < SLUT_HALF;
                }
        uint32_t sg[NP];
        if (__all_sync(0xffffffffu, in)) {
#pragma unroll
            for (int q = 0; q < NP; q++)
                sg[q] = slut_at(slut, g2[q] & 0xffffu) | slut_at(slut, g2[q] >> 16) << 16;
        } else {
#pragma unroll
            for (int q = 0; q < NP; q++)
                sg[q] = silu_lookup(p.lut, slut, g2[q] & 0xffffu) |
                        silu_lookup(p.lut, slut, g2[q] >> 16) << 16;
        }
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int row = m0 + ms * 64 + warp * 16 + lane / 4 + 8 * hf;
                if (row >= p.d.M) continue;
                uint16_t *out = p.act + (size_t)row * p.ldo + n0 + 2 * (lane & 3);
#pragma unroll
                for (int i = 0; i < BNA / 8; i++) {
                    const int q = (ms * (BNA / 8) + i) * 2 + hf;
                    const float o0 =
                        rc::fmul(__uint_as_float(sg[q] << 16), __uint_as_float(u2[q] << 16));
                    const float o1 = rc::fmul(__uint_as_float(sg[q] & 0xffff0000u),
                                              __uint_as_float(u2[q] & 0xffff0000u));
                    *(uint32_t *)(out + 8 * i) = rc::pack_bf16x2_arith(o0, o1);
                }
            }
    }
};

} // namespace

#endif
