/* fmaf in plain C without a library call: the scalar table's GEMM and exp
 * need fused multiply-add bits (those of the SIMD tables and the reference
 * PyTorch), and a call to libm's fmaf per multiply-add made the reference
 * kernels ~10x slower. The product of two floats is exact in double; the sum
 * is rounded to odd in double (53 >= 24 + 2 bits), after which one rounding
 * to float is the correctly rounded a * b + c (Boldo and Melquiond, "When
 * double rounding is odd", 2005), subnormal and overflowing results
 * included. tests/test_fmaf.c compares it with libm's fmaf. */
#ifndef HRMT_CPU_FMAF_EXACT_H
#define HRMT_CPU_FMAF_EXACT_H

#include <stdint.h>
#include <string.h>

static inline float hrmt_fmaf(float a, float b, float c) {
    const double p = (double)a * (double)b, dc = (double)c;
    double s = p + dc;
    /* TwoSum: p + c = s + e exactly (e is NaN when s is Inf or NaN) */
    const double bv = s - p;
    const double e = (p - (s - bv)) + (dc - bv);
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    if (e != 0.0 && e == e && !(u & 1)) {
        /* inexact with an even last bit: step towards the exact sum */
        u += (e > 0.0) == (s > 0.0) ? 1 : UINT64_MAX;
        memcpy(&s, &u, sizeof s);
    }
    return (float)s;
}

#endif
