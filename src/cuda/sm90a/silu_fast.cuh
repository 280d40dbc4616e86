/* BF16 SwiGLU's s(g) for a packed pair of gates by the special-function
 * units (2^x, 1/x) instead of the context's table: the fused gate_up's
 * epilogue (sm90a/glu_wgmma.cu) without shared-memory lookups, which its
 * tiles' products already keep busy (session 28: 137 against 160 us at
 * 20992 rows on the H200; docs/CUDA-KERNELS.md).
 *
 * Bits: the table's, s(g) = bf16(g / bf16(1 + bf16(exp(-g)))) with every
 * step as rowops_common.cuh's silu_bf16 rounds it:
 *  - e: -g log2(e) with log2(e) split so that g (8 significant bits) times
 *    its high part (16) is exact in F32, then ex2.approx (~2^-22 relative);
 *    the table's expf_fma is within ~2^-23, so the two round to the same
 *    BF16 unless the approximation lies within 32 F32 units of a BF16
 *    rounding boundary: such pairs (6 of the 65536 checked on the H200,
 *    gates near -88 where 2^x overflows) read the table instead;
 *  - 1 + e rounded once in BF16 equals the F32 sum rounded to BF16 (the sum
 *    is exact in F32 for e in [2^-16, 2^24); below, both are 1, above, e);
 *  - g / d, d that BF16: a quotient of two 8-bit significands is never
 *    within 2^-17 (relative) of a BF16 midpoint, so g * rcp.approx(d), off
 *    by ~2^-22, rounds as the correctly rounded F32 quotient does.
 * tests/test_silu_fast_lemmas.c checks the host-checkable steps for every
 * gate in CI (expf_fma within 0.875 units; the closest quotient 2^-16.75
 * from a midpoint). The rest rests on the approximations' error bounds, so
 * the model checks the function itself on the device for every one of the
 * 65536 gates before using it (cu_silu_fast_exact). */
#ifndef HRMT_CUDA_SM90A_SILU_FAST_CUH
#define HRMT_CUDA_SM90A_SILU_FAST_CUH

#include <stdint.h>

#include "cuda/rowops_common.cuh"

namespace {

__device__ __forceinline__ float ex2_approx(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float rcp_approx(float x) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

/* s of both gates of g2 (low and high BF16) from the context's table,
 * packed likewise. */
__device__ __forceinline__ uint32_t silu_table_pair(const uint16_t *lut, uint32_t g2) {
    return (uint32_t)__ldg(lut + (g2 & 0xffffu)) | (uint32_t)__ldg(lut + (g2 >> 16)) << 16;
}

/* The same by the special-function units; lut read only near a rounding
 * boundary. */
__device__ __forceinline__ uint32_t silu_fast_pair(const uint16_t *lut, uint32_t g2) {
    namespace rc = hrmt_rowops_cuda;
    constexpr float NL2E_HI = -1.44268798828125f, NL2E_LO = -7.052607543300837e-06f;
    constexpr uint32_t T = 32; /* F32 units either side of a boundary */
    const float g0 = __uint_as_float(g2 << 16), g1 = __uint_as_float(g2 & 0xffff0000u);
    const float e0 = ex2_approx(__fmaf_rn(g0, NL2E_LO, __fmul_rn(g0, NL2E_HI)));
    const float e1 = ex2_approx(__fmaf_rn(g1, NL2E_LO, __fmul_rn(g1, NL2E_HI)));
    const uint32_t b0 = __float_as_uint(e0), b1 = __float_as_uint(e1);
    /* Bit 15 changes within [b - T, b + T]: a BF16 midpoint (or, harmlessly,
     * a BF16 value) that close. */
    const bool near = (((b0 + T) ^ (b0 - T)) | ((b1 + T) ^ (b1 - T))) & 0x8000u;
    uint32_t d2; /* bf16(1 + e), both halves */
    asm("fma.rn.bf16x2 %0, %1, %2, %2;"
        : "=r"(d2)
        : "r"(rc::pack_bf16x2_arith(e0, e1)), "r"(0x3f803f80u));
    const float q0 = __fmul_rn(g0, rcp_approx(__uint_as_float(d2 << 16)));
    const float q1 = __fmul_rn(g1, rcp_approx(__uint_as_float(d2 & 0xffff0000u)));
    if (near) return silu_table_pair(lut, g2);
    return rc::pack_bf16x2_arith(q0, q1);
}

/* The BF16 products of two packed pairs, each rounded once (RNE) by the
 * tensor-free BF16 unit: one instruction where the F32 form unpacks four
 * halves, multiplies twice and converts. A BF16 x BF16 product is exact in
 * F32 (8 + 8 significant bits) except below F32's normal range, and there
 * too rounding it to F32 and then to BF16 gives the once-rounded BF16 for
 * every finite pair (bench/bf16_mul_lemma.c, on the host); that this
 * instruction rounds correctly, subnormals kept, the model checks on the
 * device for all 2^32 pairs (cu_glu_mul_exact) before it uses it. */
__device__ __forceinline__ uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
    uint32_t r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
#else
    namespace rc = hrmt_rowops_cuda;
    r = rc::pack_bf16x2_arith(
        rc::fmul(__uint_as_float(a << 16), __uint_as_float(b << 16)),
        rc::fmul(__uint_as_float(a & 0xffff0000u), __uint_as_float(b & 0xffff0000u)));
#endif
    return r;
}

} // namespace

#endif
