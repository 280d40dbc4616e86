/* Inline AVX2 exp with the bits of SLEEF's Sleef_expf8_u10avx2 (the exp of
 * the AVX2 table and of the reference PyTorch, == hrmt_expf_fma in
 * cpu/expf_fma.h): SLEEF 3.5's operations in SLEEF's order, inlined so the
 * element-wise kernels need no call and can overlap neighbouring vectors.
 * hrmt-expf-check (tools/expf_check.c) checks all 2^32 inputs against
 * SLEEF. Only *_avx2.c (and *_avx512.c) files may include this. */
#ifndef HRMT_CPU_EXPF_AVX2_H
#define HRMT_CPU_EXPF_AVX2_H

#include <immintrin.h>

#include "cpu/expf_consts.h"

static inline __attribute__((always_inline)) __m256 hrmt_expf8_fma(__m256 x) {
    const __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(x, _mm256_set1_ps(HRMT_EXPF_LOG2E)));
    const __m256 qf = _mm256_cvtepi32_ps(q);
    __m256 s = _mm256_fmadd_ps(qf, _mm256_set1_ps(HRMT_EXPF_NLN2_HI), x);
    s = _mm256_fmadd_ps(qf, _mm256_set1_ps(HRMT_EXPF_NLN2_LO), s);
    __m256 u = _mm256_set1_ps(HRMT_EXPF_C5);
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(HRMT_EXPF_C4));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(HRMT_EXPF_C3));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(HRMT_EXPF_C2));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(HRMT_EXPF_C1));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(HRMT_EXPF_C0));
    u = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s), _mm256_set1_ps(1.0f));
    /* u * 2^q in two halves (q >> 1 rounds towards -inf), as SLEEF */
    const __m256i q1 = _mm256_srai_epi32(q, 1), one = _mm256_set1_epi32(0x3f800000);
    u = _mm256_mul_ps(u, _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(q1, 23), one)));
    u = _mm256_mul_ps(u, _mm256_castsi256_ps(_mm256_add_epi32(
                             _mm256_slli_epi32(_mm256_sub_epi32(q, q1), 23), one)));
    /* x < -104: 0; x > 100: +Inf */
    u = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-104.0f), _CMP_LT_OS), u);
    return _mm256_blendv_ps(u, _mm256_set1_ps(INFINITY),
                            _mm256_cmp_ps(_mm256_set1_ps(100.0f), x, _CMP_LT_OS));
}

#endif
