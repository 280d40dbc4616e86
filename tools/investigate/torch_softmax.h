/* PyTorch 1.13's CPU softmax (AVX2 kernel) reproduced bit for bit in plain
 * C11, for pasting into src/model/attention.c (which called it as
 * torch_softmax_rows(T, S, (float)(1.0 / sqrt((double)d))) in place of the
 * row op). Exact on the golden blocks on every ISA, but ~3x slower than the
 * SIMD row op (double emulation of fmaf vectorises only 2-wide at the
 * baseline ISA); see the report. Needs <math.h>, <stdint.h>, <string.h>. */
#ifndef HRMT_INVESTIGATE_TORCH_SOFTMAX_H
#define HRMT_INVESTIGATE_TORCH_SOFTMAX_H
#include <math.h>
#include <stdint.h>
#include <string.h>

/* fmaf(a, b, c) for the magnitudes in exp_fma: a * b is exact in double, so
 * one double add then the float rounding give fmaf's bits unless the double
 * sum lands on a float tie, which exp_fma's operands never do
 * (tools/investigate/exp_exhaustive.c checks every input). Plain double
 * arithmetic vectorises where a libm fmaf call would not. */
static inline float fma_d(float a, float b, float c) { return (float)((double)a * b + c); }

/* 2^q for a q in the normal range, built from its bits (any q is defined). */
static inline float pow2i(int32_t q) {
    const uint32_t bits = ((uint32_t)q + 0x7fu) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* exp(x) for x <= 0: SLEEF's 1-ulp xexpf with every multiply-add fused, the
 * code behind Sleef_expf8_u10avx2 that PyTorch's AVX2 kernels call (and
 * behind Sleef_expf1_u10purecfma; the non-FMA builds differ in ~1% of last
 * bits, tools/investigate/exp_check.py). Branch-free, so that loops over it
 * vectorise: no float select (the compiler keeps those as branches), the
 * integers come from bits, and masks give SLEEF's 0 below -104 and NaN. */
static inline float exp_fma(float x) {
    /* adding 1.5 * 2^23 rounds to an integer (nearest even), held in the
     * low mantissa bits */
    const float t = x * 1.442695040888963407359924681001892137426645954152985934f + 12582912.0f;
    const float qf = t - 12582912.0f;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    const int32_t q = (int32_t)tb - 0x4b400000;
    float s = fma_d(qf, -0.693145751953125f, x);
    s = fma_d(qf, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = fma_d(u, s, 0.00139304355252534151077271f);
    u = fma_d(u, s, 0.00833336077630519866943359f);
    u = fma_d(u, s, 0.0416664853692054748535156f);
    u = fma_d(u, s, 0.166666671633720397949219f);
    u = fma_d(u, s, 0.5f);
    const float ss = s * s;
    u = 1.0f + fma_d(ss, u, s);
    const int32_t q1 = q / 2 - (q % 2 != 0); /* q >> 1 (floor), portably */
    u = u * pow2i(q1) * pow2i(q - q1);
    uint32_t bits;
    memcpy(&bits, &u, sizeof bits);
    bits &= 0u - (uint32_t)(x >= -104.0f);
    bits |= 0u - (uint32_t)(x != x);
    memcpy(&u, &bits, sizeof u);
    return u;
}

/* Softmax of each row of S[T, T] (scaled by `scale` first, in place) in the
 * order of PyTorch 1.13's AVX2 CPU kernel (tools/investigate/softmax_order.py
 * matches it bit for bit): exp(x - max) with exp_fma, the sum in 8 lane
 * accumulators (element j adds into lane j % 8, in increasing j),
 * those folded by halves (l, l + 4), then (l, l + 2), then (0, 1), and every
 * exponential times 1 / sum. The golden vectors come from that kernel; the
 * sum order moves the last bit of 1 / sum, and the exp's build its bits. */
static void torch_softmax_rows(size_t T, float *S, float scale) {
    for (size_t r = 0; r < T; r++) {
        float *row = S + r * T, mx = -INFINITY, acc[8] = {0};
        for (size_t j = 0; j < T; j++) {
            row[j] *= scale;
            mx = row[j] > mx ? row[j] : mx;
        }
        /* a plain map, which the compiler vectorises */
        for (size_t j = 0; j < T; j++) row[j] = exp_fma(row[j] - mx);
        for (size_t j = 0; j < T; j++) acc[j % 8] += row[j];
        const float h0 = acc[0] + acc[4], h1 = acc[1] + acc[5], h2 = acc[2] + acc[6],
                    h3 = acc[3] + acc[7];
        const float inv = 1.0f / ((h0 + h2) + (h1 + h3));
        for (size_t j = 0; j < T; j++) row[j] *= inv;
    }
}

#endif
