/* hrmt_fmaf (cpu/fmaf_exact.h, the scalar table's fused multiply-add)
 * against the C library's fmaf, bit for bit: random operands over the whole
 * exponent range, sums that cancel, results that round to a tie in double,
 * subnormal and overflowing results, and Inf/NaN operands. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu/fmaf_exact.h"

static uint64_t g_state = 0x9e3779b97f4a7c15u;
static uint32_t next32(void) {
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return (uint32_t)(g_state >> 16);
}
static float bits(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
/* Random float with an exponent in [lo, hi] (biased), random sign and mantissa. */
static float rnd(unsigned lo, unsigned hi) {
    const uint32_t e = lo + next32() % (hi - lo + 1);
    return bits((next32() & 0x807fffffu) | (e << 23));
}

static size_t check(float a, float b, float c) {
    const float want = fmaf(a, b, c), got = hrmt_fmaf(a, b, c);
    if (memcmp(&want, &got, 4) == 0 || (want != want && got != got)) return 0;
    fprintf(stderr, "fma(%a, %a, %a): %a, libm %a\n", (double)a, (double)b, (double)c, (double)got,
            (double)want);
    return 1;
}

Test(fmaf, random_whole_range) {
    size_t bad = 0;
    for (int i = 0; i < 2000000; i++) bad += check(rnd(0, 254), rnd(0, 254), rnd(0, 254));
    cr_expect_eq(bad, 0, "%zu differ", bad);
}

Test(fmaf, gemm_like_magnitudes) {
    size_t bad = 0;
    for (int i = 0; i < 2000000; i++) bad += check(rnd(117, 137), rnd(117, 137), rnd(110, 140));
    cr_expect_eq(bad, 0, "%zu differ", bad);
}

Test(fmaf, cancellation_and_ties) {
    size_t bad = 0;
    for (int i = 0; i < 1000000; i++) {
        const float a = rnd(120, 134), b = rnd(120, 134);
        /* c near -a*b: heavy cancellation */
        const float c = -(float)((double)a * b) * (1.0f + (float)(next32() % 5) * 0x1p-23f);
        bad += check(a, b, c);
        /* a*b tiny next to c: the exact sum sits just off a float midpoint */
        const float big = rnd(127, 130);
        const float mid = big + bits((next32() & 1) ? 0x33800000u : 0xb3800000u);
        bad += check(a, bits(0x1a800000u | (next32() & 0x7fffffu)), mid);
        /* float midpoint + tiny product: double rounding would land on a tie */
        bad += check(bits(0x3f800000u + (next32() & 0xffffu)), 0x1p-40f,
                     bits(0x3f800000u | (next32() & 0x7fffffu)));
    }
    cr_expect_eq(bad, 0, "%zu differ", bad);
}

/* a * b = half an ulp of c, give or take 2^-2k of it: the exact sum is just
 * off c's rounding midpoint, but rounding it to double first lands on the
 * midpoint, and then ties-to-even picks the wrong float. */
Test(fmaf, double_rounding_traps) {
    size_t bad = 0;
    for (int i = 0; i < 1000000; i++) {
        const unsigned e = 60 + next32() % 130;
        const float c = bits((next32() & 0x807fffffu) | 1u | (e << 23));
        const float half = ldexpf(1.0f, (int)e - 127 - 24);
        const float k = ldexpf(1.0f, -(int)(12 + next32() % 12));
        const float sa = (next32() & 1) ? 1.0f : -1.0f;
        bad += check(sa * (1.0f + k) * half, 1.0f - k, c);
        bad += check(sa * (1.0f + k) * half, 1.0f + k, c);
        bad += check(sa * (1.0f - k) * half, 1.0f - k, c);
    }
    cr_expect_eq(bad, 0, "%zu differ", bad);
}

Test(fmaf, subnormal_overflow_special) {
    size_t bad = 0;
    for (int i = 0; i < 1000000; i++) {
        bad += check(rnd(0, 30), rnd(90, 127), rnd(0, 3));         /* subnormal results */
        bad += check(rnd(190, 254), rnd(127, 200), rnd(200, 254)); /* overflow */
    }
    const float sp[] = {0.0f, -0.0f, INFINITY,  -INFINITY,      NAN,
                        1.0f, -1.0f, 0x1p-149f, 0x1.fffffep127f};
    for (size_t i = 0; i < 9; i++)
        for (size_t j = 0; j < 9; j++)
            for (size_t k = 0; k < 9; k++) bad += check(sp[i], sp[j], sp[k]);
    cr_expect_eq(bad, 0, "%zu differ", bad);
}
