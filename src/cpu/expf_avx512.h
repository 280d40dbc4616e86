/* Inline AVX-512 exp with the bits of SLEEF's Sleef_expf16_u10avx512f (the
 * exp of the SIMD tables, == hrmt_expf_fma in cpu/expf_fma.h), so that the
 * element-wise kernels need no call (which spills every zmm register) and
 * can overlap the latency of neighbouring vectors. Same operations in the
 * same order as SLEEF 3.5's avx512f build, with two exact rewrites:
 *  - q = round(x / ln 2) by vrndscaleps instead of vcvtps2dq + vcvtdq2ps
 *    (the same integer wherever it is used; lanes out of int range are
 *    overridden below);
 *  - u * 2^q by one vscalefps instead of SLEEF's u * 2^(q>>1) * 2^(q-(q>>1)):
 *    the first product is exact, so both round once, the same way.
 * hrmt-expf-check (tools/expf_check.c) checks all 2^32 inputs against
 * SLEEF. Only *_avx512.c and *_amx.c files (built with the AVX-512 flags) may
 * include this. */
#ifndef HRMT_CPU_EXPF_AVX512_H
#define HRMT_CPU_EXPF_AVX512_H

#include <immintrin.h>

#include "cpu/expf_consts.h"

/* exp(x) for x <= 100 or NaN (such as x - max(x) in a softmax): the bits of
 * hrmt_expf16_fma, without its overflow test, which never fires there. */
static inline __attribute__((always_inline)) __m512 hrmt_expf16_fma_le100(__m512 x) {
    const __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(HRMT_EXPF_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 s = _mm512_fmadd_ps(q, _mm512_set1_ps(HRMT_EXPF_NLN2_HI), x);
    s = _mm512_fmadd_ps(q, _mm512_set1_ps(HRMT_EXPF_NLN2_LO), s);
    __m512 u = _mm512_set1_ps(HRMT_EXPF_C5);
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(HRMT_EXPF_C4));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(HRMT_EXPF_C3));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(HRMT_EXPF_C2));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(HRMT_EXPF_C1));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(HRMT_EXPF_C0));
    u = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(s, s), u, s), _mm512_set1_ps(1.0f));
    /* x < -104: 0 (NaN keeps the first: NaN in, NaN out) */
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-104.0f), _CMP_NLT_US);
    return _mm512_maskz_scalef_ps(keep, u, q);
}

static inline __attribute__((always_inline)) __m512 hrmt_expf16_fma(__m512 x) {
    /* x > 100: +Inf */
    return _mm512_mask_mov_ps(hrmt_expf16_fma_le100(x),
                              _mm512_cmp_ps_mask(x, _mm512_set1_ps(100.0f), _CMP_GT_OQ),
                              _mm512_set1_ps(INFINITY));
}

#endif
