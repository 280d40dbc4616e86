/* exp(x) with the bits of SLEEF's 1-ulp expf built with fused multiply-adds
 * (Sleef_expf8_u10avx2, Sleef_expf16_u10avx512f, Sleef_expf4_u10advsimd,
 * Sleef_expf1_u10purecfma), in portable C: the SIMD tables call those, and
 * the reference PyTorch's CPU kernels use the AVX2 one, so the scalar table
 * needs the same bits to give the same answers. SLEEF's non-FMA scalar build
 * differs in about 1% of last bits. The multiply-adds are cpu/fmaf_exact.h's
 * (exact, no library call). tests/test_ops_parity.c compares every ISA's
 * softmax with this, bit for bit. */
#ifndef HRMT_CPU_EXPF_FMA_H
#define HRMT_CPU_EXPF_FMA_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu/fmaf_exact.h"

#include "cpu/expf_consts.h"

/* 2^q for q in [-126, 127], from its bits. */
static inline float hrmt_pow2i(int32_t q) {
    const uint32_t bits = (uint32_t)(q + 0x7f) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float hrmt_expf_fma(float x) {
    /* Outside [-104, 100] the result is fixed below; clamping keeps the
     * integer conversion defined (a NaN clamps to -105 and is restored). */
    const float d = x < -105.0f || x != x ? -105.0f : x > 101.0f ? 101.0f : x;
    const float qf = rintf(d * HRMT_EXPF_LOG2E);
    const int32_t q = (int32_t)qf;
    float s = hrmt_fmaf(qf, HRMT_EXPF_NLN2_HI, d);
    s = hrmt_fmaf(qf, HRMT_EXPF_NLN2_LO, s);
    float u = HRMT_EXPF_C5;
    u = hrmt_fmaf(u, s, HRMT_EXPF_C4);
    u = hrmt_fmaf(u, s, HRMT_EXPF_C3);
    u = hrmt_fmaf(u, s, HRMT_EXPF_C2);
    u = hrmt_fmaf(u, s, HRMT_EXPF_C1);
    u = hrmt_fmaf(u, s, HRMT_EXPF_C0);
    u = 1.0f + hrmt_fmaf(s * s, u, s);
    /* ldexp in two halves, as SLEEF: q >> 1 rounds towards -inf */
    const int32_t q1 = q >= 0 ? q / 2 : -((1 - q) / 2);
    u = u * hrmt_pow2i(q1) * hrmt_pow2i(q - q1);
    if (x < -104.0f) u = 0.0f;
    if (x > 100.0f) u = INFINITY;
    if (x != x) u = x;
    return u;
}

#endif
