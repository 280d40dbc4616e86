/* Shared device helpers of the CUDA row-op table (src/cuda/rowops_*.cu).
 *
 * Bits: every launcher gives the bits of the CPU scalar table, which is
 * compiled with -ffp-contract=off. nvcc contracts a*b+c into an FMA by
 * default, so every F32 operation here goes through the _rn intrinsics
 * below (never fused unless the scalar code calls fmaf), and division and
 * sqrt are the IEEE ones. The files must not be built with -ftz=true or
 * --use_fast_math (denormals take part in the reference's results).
 *
 * The helpers are __host__ __device__ so the same source can be checked
 * against the scalar reference on a CPU: off the device they are the plain
 * C operators (the host compiler does not contract across statements on
 * x86-64 without -mfma). */
#ifndef HRMT_CUDA_ROWOPS_COMMON_CUH
#define HRMT_CUDA_ROWOPS_COMMON_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/rowops.h"

/* The row-op files' helpers, kept apart from the other CUDA files' names. */
namespace hrmt_rowops_cuda {

#define HRMT_HD __host__ __device__ __forceinline__
/* #pragma unroll, only where the device compiler sees it (host -Wall). */
#ifdef __CUDA_ARCH__
#define HRMT_UNROLL _Pragma("unroll")
#else
#define HRMT_UNROLL
#endif

/* ---- F32 arithmetic, one rounding each ---------------------------------- */
#ifdef __CUDA_ARCH__
HRMT_HD float fmul(float a, float b) { return __fmul_rn(a, b); }
HRMT_HD float fadd(float a, float b) { return __fadd_rn(a, b); }
HRMT_HD float fsub(float a, float b) { return __fsub_rn(a, b); }
HRMT_HD float ffma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
HRMT_HD float fdiv(float a, float b) { return __fdiv_rn(a, b); }
HRMT_HD float fsqrt(float a) { return __fsqrt_rn(a); }
HRMT_HD float frint(float a) { return rintf(a); }
HRMT_HD uint32_t fbits(float f) { return __float_as_uint(f); }
HRMT_HD float ffrom(uint32_t u) { return __uint_as_float(u); }
HRMT_HD float size_to_f(size_t n) { return __ull2float_rn((unsigned long long)n); }
#else
HRMT_HD float fmul(float a, float b) { return a * b; }
HRMT_HD float fadd(float a, float b) { return a + b; }
HRMT_HD float fsub(float a, float b) { return a - b; }
HRMT_HD float ffma(float a, float b, float c) { return fmaf(a, b, c); }
HRMT_HD float fdiv(float a, float b) { return a / b; }
HRMT_HD float fsqrt(float a) { return sqrtf(a); }
HRMT_HD float frint(float a) { return rintf(a); }
HRMT_HD uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
HRMT_HD float ffrom(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
HRMT_HD float size_to_f(size_t n) { return (float)n; }
#endif

/* ---- BF16, as core/bf16.h (integer ops: identical everywhere) ----------- */
HRMT_HD float bf16_to_f(uint16_t h) { return ffrom((uint32_t)h << 16); }
HRMT_HD uint16_t f_to_bf16(float f) {
    uint32_t u = fbits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
HRMT_HD float round_bf16(float f) { return bf16_to_f(f_to_bf16(f)); }
/* Two values rounded to BF16 and packed (a low, b high), bits of f_to_bf16:
 * the device's paired conversion (RNE, denormals kept) unless a NaN needs
 * f_to_bf16's quiet-NaN pattern. */
HRMT_HD uint32_t pack_bf16x2(float a, float b) {
#ifdef __CUDA_ARCH__
    if (__builtin_expect(a == a && b == b, 1)) {
        uint32_t r;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
        return r;
    }
#endif
    return (uint32_t)f_to_bf16(a) | ((uint32_t)f_to_bf16(b) << 16);
}

/* Element access by storage dtype (BF = 1: uint16_t bit patterns). */
template <int BF>
HRMT_HD float ld_el(const void *p, size_t i) {
    if (BF) return bf16_to_f(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}
template <int BF>
HRMT_HD void st_el(void *p, size_t i, float v) {
    if (BF)
        ((uint16_t *)p)[i] = f_to_bf16(v);
    else
        ((float *)p)[i] = v;
}
/* Rounds v to what storing it in the dtype keeps (exact for F32). */
template <int BF>
HRMT_HD float to_storage(float v) {
    return BF ? round_bf16(v) : v;
}

/* Rounding of a value that device arithmetic produced: the hardware's
 * conversion (RNE, denormals kept). Its NaN is the canonical 0x7fff, which is
 * what f_to_bf16 gives for the only NaN device arithmetic makes (0x7fffffff),
 * so the bits are f_to_bf16's; a loaded NaN with another payload needs
 * round_bf16 / pack_bf16x2 instead. pack_bf16x2_arith packs two (a low, b
 * high); round_bf16_arith is the pair with a = 0: the BF16 in the high half
 * is the rounded F32, one instruction. */
HRMT_HD uint32_t pack_bf16x2_arith(float a, float b) {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
#else
    return pack_bf16x2(a, b);
#endif
}
HRMT_HD float round_bf16_arith(float f) { return ffrom(pack_bf16x2_arith(0.0f, f)); }
/* BF16 bits of a value from device arithmetic (as round_bf16_arith). */
HRMT_HD uint16_t bf16_bits_arith(float f) { return (uint16_t)(fbits(round_bf16_arith(f)) >> 16); }
/* Two packed BF16 pairs added element by element, each sum rounded once:
 * the add row op's bits (the persistent and grid level kernels' adds). */
HRMT_HD uint32_t add_bf16x2_arith(uint32_t a, uint32_t b) {
    return pack_bf16x2_arith(fadd(bf16_to_f((uint16_t)a), bf16_to_f((uint16_t)b)),
                             fadd(bf16_to_f((uint16_t)(a >> 16)), bf16_to_f((uint16_t)(b >> 16))));
}

/* max / min that return NaN when either operand is NaN (one instruction on
 * sm_80+). Which of +0 and -0 they return is not specified: callers must not
 * care. */
HRMT_HD float fmax_nan(float a, float b) {
#ifdef __CUDA_ARCH__
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    if (a != a || b != b) return a != a ? a : b;
    return b > a ? b : a;
#endif
}
HRMT_HD float fmin_nan(float a, float b) { return -fmax_nan(-a, -b); }

/* ---- exp ----------------------------------------------------------------- */
/* 2^q for q in [-126, 127] (unsigned arithmetic: any q is defined). */
HRMT_HD float pow2i(int32_t q) { return ffrom(((uint32_t)q + 0x7fu) << 23); }

/* SLEEF's FMA expf_u10 between range reduction and scaling: exp(d - qf ln2)
 * for integral qf = rint(d / ln2), in [0.7, 1.5]. */
HRMT_HD float expf_fma_poly(float qf, float d) {
    float s = ffma(qf, -0.693145751953125f, d);
    s = ffma(qf, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = ffma(u, s, 0.00139304355252534151077271f);
    u = ffma(u, s, 0.00833336077630519866943359f);
    u = ffma(u, s, 0.0416664853692054748535156f);
    u = ffma(u, s, 0.166666671633720397949219f);
    u = ffma(u, s, 0.5f);
    u = fadd(1.0f, ffma(fmul(s, s), u, s));
    return u;
}

/* cpu/expf_fma.h (SLEEF's FMA expf_u10): softmax and swiglu. The same bits
 * as hrmt_expf_fma for every one of the 2^32 inputs (NaN for NaN; checked
 * exhaustively on the host by tools/cuda_expf_check.cu), in fewer
 * instructions:
 *  - the clamp to [-105, 101] keeps a NaN, which then flows through to a
 *    NaN result (the reference clamps it to -105 and restores it);
 *  - below -104 the scaled result underflows to 0, above 100 it overflows to
 *    +inf, as the reference's explicit cases say, so no tests are needed;
 *  - (int32_t)qf without a conversion instruction: qf is integral and
 *    |qf| <= 152, so adding 1.5 * 2^23 puts it in the low mantissa bits;
 *  - SLEEF's ldexp in two halves, q1 = q >> 1 (rounds towards -inf), always
 *    (no branch). */
HRMT_HD float expf_fma(float x) {
    const float d = fmin_nan(fmax_nan(x, -105.0f), 101.0f);
    const float qf = frint(fmul(d, 1.442695040888963407359924681001892137426645954152985934f));
    const int32_t q = (int32_t)(fbits(fadd(qf, 12582912.0f)) - 0x4B400000u);
    const float u = expf_fma_poly(qf, d);
    const int32_t q1 = q >> 1;
    return fmul(fmul(u, pow2i(q1)), pow2i(q - q1));
}

/* expf_fma for x <= 0 or NaN (softmax's scale * x_j - max): the same bits
 * (tools/cuda_expf_check.cu checks every such input). No upper clamp, and
 * u * 2^q in one step: q is in [-152, 0], so u * 2^(q + 64) is a normal
 * number, exact, and the multiply by 2^-64 rounds once, as the reference's
 * (u * 2^q1) * 2^(q - q1) does (its first product is exact too). 2^(q + 64)
 * comes straight from the bits of qf + 1.5 * 2^23 (0x4B400000 + q). */
HRMT_HD float expf_fma_nonpos(float x) {
    const float d = fmax_nan(x, -105.0f);
    const float qf = frint(fmul(d, 1.442695040888963407359924681001892137426645954152985934f));
    const uint32_t qb = fbits(fadd(qf, 12582912.0f));
    const float u = expf_fma_poly(qf, d);
    /* ((q + 64 + 127) << 23) = (qb << 23) + ((64 + 127 - 0x4B400000) << 23) */
    const float p = ffrom((qb << 23) + ((64u + 127u - 0x4B400000u) << 23));
    return fmul(fmul(u, p), 5.42101086242752217004e-20f); /* 2^-64 */
}

/* SLEEF's scalar Sleef_expf_u10 (sleefsp.c xexpf, no FMA): the Engram gate's
 * exp (cpu/engram_common.h). Its rint is (int)(x +- 0.5f), ties away. */
HRMT_HD float expf_sleef_scalar(float d) {
    const float t = fmul(d, 1.442695040888963407359924681001892137426645954152985934f);
    /* The float -> int conversions saturate here (x86 gives INT_MIN); both
     * only happen outside [-104, 104], where the result is fixed below. */
    const int32_t q = t < 0.0f ? (int32_t)fsub(t, 0.5f) : (int32_t)fadd(t, 0.5f);
    const float qf = (float)q;
    float s = fadd(fmul(qf, -0.693145751953125f), d);
    s = fadd(fmul(qf, -1.428606765330187045e-06f), s);
    float u = 0.000198527617612853646278381f;
    u = fadd(fmul(u, s), 0.00139304355252534151077271f);
    u = fadd(fmul(u, s), 0.00833336077630519866943359f);
    u = fadd(fmul(u, s), 0.0416664853692054748535156f);
    u = fadd(fmul(u, s), 0.166666671633720397949219f);
    u = fadd(fmul(u, s), 0.5f);
    u = fadd(fadd(fmul(fmul(s, s), u), s), 1.0f);
    const int32_t q1 = q >> 1; /* arithmetic shift, as SLEEF's ldexp2kf */
    u = fmul(fmul(u, pow2i(q1)), pow2i(q - q1));
    if (d < -104.0f) u = 0.0f;
    if (d > 104.0f) u = ffrom(0x7f800000u);
    return u;
}

/* ---- launch helpers ----------------------------------------------------- */
#define HRMT_FULL_MASK 0xffffffffu

HRMT_HD size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

/* 1 when p and every row start p + r*ld*es are `a`-byte aligned. */
static inline int rows_aligned(const void *p, size_t ld, size_t es, size_t a) {
    return ((uintptr_t)p % a) == 0 && (ld * es) % a == 0;
}

/* Grid for `rows` rows handled `per_block` at a time: x carries the rows
 * (kernels loop with a grid stride past 2^31 - 1 blocks). */
static inline unsigned row_blocks(size_t rows, size_t per_block) {
    const size_t b = cdiv(rows, per_block);
    return (unsigned)(b < 0x7fffffffu ? b : 0x7fffffffu);
}

/* Shared memory a block may use without opting in. */
#define HRMT_ROW_SMEM_MAX (48 * 1024)

/* Warps per block (rows per block) for kernels that keep `row_bytes` of shared
 * memory per warp: the most of max_warps, max_warps/2, ..., 1 that fit, or 0
 * when even one row does not fit. */
static inline unsigned row_warps(size_t row_bytes, unsigned max_warps) {
    for (unsigned w = max_warps; w >= 1; w /= 2)
        if (w * row_bytes <= HRMT_ROW_SMEM_MAX) return w;
    return 0;
}

} // namespace hrmt_rowops_cuda

/* Per-file parts of the table (each rowops_*.cu fills its own entries). */
void hrmt_rowops_fill_cuda_elem(hrmt_rowops *t);
void hrmt_rowops_fill_cuda_norm(hrmt_rowops *t);
void hrmt_rowops_fill_cuda_softmax(hrmt_rowops *t);
void hrmt_rowops_fill_cuda_rope(hrmt_rowops *t);
void hrmt_rowops_fill_cuda_engram(hrmt_rowops *t);
void hrmt_rowops_fill_cuda_probe(hrmt_rowops *t);

#endif
