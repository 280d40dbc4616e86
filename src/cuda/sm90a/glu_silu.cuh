/* The fused gate_up kernels' SwiGLU on rounded BF16 pairs (sm90a/glu_wgmma.cu
 * and the staged form beside it): the context's table s, with a window of it
 * copied into the CTA's shared memory, then the table kernel's product and
 * rounding - one function, so every tile shape gives the table kernel's
 * bytes.
 *
 * The window holds the entries for |g| in [2^-16, 2^8) - nearly every gate -
 * (12 KB): a warp's 32 lookups there cost a few shared-memory wavefronts,
 * where the same from the 128 KB global table cost a wavefront per cache line
 * touched (ncu: the kernel's warps stalled on L1TEX). Gates outside the
 * window read the global table; the bytes are the table's either way. */
#ifndef HRMT_CUDA_SM90A_GLU_SILU_CUH
#define HRMT_CUDA_SM90A_GLU_SILU_CUH

#include <stdint.h>

#include "cuda/rowops_common.cuh"

namespace {

constexpr unsigned SLUT_E0 = 111;        /* first biased exponent held: 2^-16 */
constexpr unsigned SLUT_HALF = 24 * 128; /* entries per sign: 24 exponents */
constexpr int SLUT_BYTES = 2 * SLUT_HALF * 2;

/* Gate bits gb's place in its sign's half of the window; SLUT_HALF or more
 * (wrapping below) when outside it. */
__device__ __forceinline__ unsigned slut_offset(uint32_t gb) {
    return (gb & 0x7fffu) - SLUT_E0 * 128u;
}
/* Both gates of a packed pair in the window. */
__device__ __forceinline__ bool slut_holds(uint32_t g2) {
    return slut_offset(g2 & 0xffffu) < SLUT_HALF && slut_offset(g2 >> 16) < SLUT_HALF;
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
/* s of a packed gate pair: from the window alone (in_window, every gate of
 * the caller's warp in it), else gate by gate. */
__device__ __forceinline__ uint32_t silu_pair(const uint16_t *lut, const uint16_t *slut,
                                              uint32_t g2, bool in_window) {
    if (in_window) return slut_at(slut, g2 & 0xffffu) | slut_at(slut, g2 >> 16) << 16;
    return silu_lookup(lut, slut, g2 & 0xffffu) | silu_lookup(lut, slut, g2 >> 16) << 16;
}
/* The act pair bf16(s(g) * u) from s(g) and u, each a packed BF16 pair. */
__device__ __forceinline__ uint32_t swiglu_pair(uint32_t sg, uint32_t u2) {
    namespace rc = hrmt_rowops_cuda;
    const float o0 = rc::fmul(__uint_as_float(sg << 16), __uint_as_float(u2 << 16));
    const float o1 = rc::fmul(__uint_as_float(sg & 0xffff0000u), __uint_as_float(u2 & 0xffff0000u));
    return rc::pack_bf16x2_arith(o0, o1);
}
/* The window's two halves (g >= 0, g < 0) from the table, 16 bytes per
 * copy, by threads t of `threads`. */
__device__ __forceinline__ void slut_fill(uint8_t *part, int t, int threads, const uint16_t *lut) {
    constexpr int HALF16 = SLUT_HALF * 2 / 16;
    for (int i = t; i < 2 * HALF16; i += threads) {
        const int sign = i / HALF16, j = i % HALF16;
        const uint4 *src = (const uint4 *)(lut + (sign << 15) + SLUT_E0 * 128);
        ((uint4 *)part)[i] = __ldg(src + j);
    }
}

} // namespace

#endif
