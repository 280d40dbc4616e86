/* The host-checkable steps of the argument that the fused gate_up's s(g)
 * by approximations (src/cuda/sm90a/silu_fast.cuh) gives the SwiGLU table's
 * bits, s(g) = bf16(g / bf16(1 + bf16(exp(-g)))) with exp the SLEEF FMA expf
 * (cpu/expf_fma.h; the device's expf_fma has its bits). A model checks the
 * device function itself against the table for every gate when it loads and
 * uses it only where all agree; these tests check, for every BF16 gate and in
 * CI (no GPU), the facts that make that check pass, against float64
 * recomputation:
 *  - g times log2(e)'s high part is exact in F32;
 *  - expf_fma is within 2 F32 units of exp, so an approximation of 2^x
 *    within ~2^-21 rounds to the same BF16 unless within 32 units of a BF16
 *    rounding boundary (where the device reads the table);
 *  - the F32 sum 1 + e rounded to BF16 equals the exact sum rounded once;
 *  - the exact quotient g / d is never within 2^-17 (relative) of a BF16
 *    midpoint, so an approximation within ~2^-21 rounds as the F32 quotient;
 * and, for the product s(g) u by mul.rn.bf16x2 (HRMT_CUDA_GLU_MUL), that a
 * BF16 x BF16 product rounded to F32 and then to BF16 is the product
 * rounded once. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "core/bf16.h"
#include "cpu/expf_fma.h"

/* silu_fast.cuh's split of -log2(e). */
#define NL2E_HI (-1.44268798828125f)
#define NL2E_LO (-7.052607543300837e-06f)

static int finite_gate(uint32_t i, float *g) {
    *g = hrmt_bf16_to_f32((uint16_t)i);
    return isfinite(*g);
}

/* The F32 unit (ulp) at |x| for a normal x. */
static double f32_unit(double x) {
    int ex = 0;
    frexp(x, &ex);
    return ldexp(1.0, ex - 24);
}

/* |x| - its distance to the nearest BF16 rounding midpoint, relative to |x|
 * (x finite, nonzero, normal in F32). */
static double midpoint_margin(double x) {
    const double ax = fabs(x);
    int ex = 0;
    frexp(ax, &ex);                         /* ax in [2^(ex-1), 2^ex) */
    const double step = ldexp(1.0, ex - 8); /* BF16 spacing there (8 significant bits) */
    const double below = floor(ax / step) * step;
    const double mid = below + step / 2;
    return fabs(ax - mid) / ax;
}

Test(silu_fast_lemmas, log2e_split_product_exact) {
    size_t bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        float g;
        /* Beyond 2^120 the product overflows or not, and 2^x is 0 or Inf
         * either way; below 2^-100, 2^x is 1. */
        if (!finite_gate(i, &g) || fabsf(g) < 0x1p-100f || fabsf(g) >= 0x1p120f) continue;
        const float p = g * NL2E_HI;
        if ((double)p != (double)g * (double)NL2E_HI) bad++;
    }
    cr_expect_eq(bad, 0, "%zu gates whose product with log2(e)'s high part rounds", bad);
    /* The split itself: the two parts sum to -log2(e) far below F32's unit. */
    cr_expect(fabs((double)NL2E_HI + (double)NL2E_LO + 1.4426950408889634) < 1e-12);
}

Test(silu_fast_lemmas, expf_fma_within_two_units) {
    size_t bad = 0, near = 0, normal = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        float g;
        if (!finite_gate(i, &g)) continue;
        const double want = exp(-(double)g);
        if (want < 0x1p-126 || want > 0x1.fffffep127) continue; /* past F32's normal range */
        normal++;
        const float got = hrmt_expf_fma(-g);
        const double err = fabs((double)got - want) / f32_unit(want);
        if (err > 2.0) {
            if (bad++ < 4)
                fprintf(stderr, "expf_fma(%a) = %a, exp %a: %.2f units\n", (double)-g, (double)got,
                        want, err);
        }
        if (midpoint_margin(want) * want < 32 * f32_unit(want)) near++;
    }
    cr_expect_eq(bad, 0, "%zu of %zu gates with expf_fma more than 2 units off", bad, normal);
    /* Those the device sends to the table: a small share, not most gates. */
    cr_expect(near < normal / 100, "%zu of %zu gates within 32 units of a BF16 boundary", near,
              normal);
}

Test(silu_fast_lemmas, one_plus_e_rounds_once) {
    size_t bad = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        float g;
        if (!finite_gate(i, &g)) continue;
        const float e = hrmt_round_bf16(hrmt_expf_fma(-g)); /* a BF16 value, >= 0 */
        const float d = hrmt_round_bf16(1.0f + e);          /* the table's */
        int ok;
        if (e >= 0x1p-16f && e < 0x1p24f)
            ok = (double)(1.0f + e) == 1.0 + (double)e; /* the F32 sum is exact */
        else if (e < 0x1p-16f)
            ok = d == 1.0f && 1.0 + (double)e < 1.0 + 0x1p-9; /* both give 1 */
        else
            ok = d == e; /* 1 is below half a unit of e: both give e (or Inf) */
        if (!ok) bad++;
    }
    cr_expect_eq(bad, 0, "%zu gates where bf16(1 + e) is not the exact sum rounded once", bad);
}

Test(silu_fast_lemmas, quotient_far_from_bf16_midpoints) {
    size_t bad = 0, checked = 0;
    double worst = 1.0;
    for (uint32_t i = 0; i < 65536; i++) {
        float g;
        if (!finite_gate(i, &g) || g == 0.0f) continue;
        const float e = hrmt_round_bf16(hrmt_expf_fma(-g));
        const float d = hrmt_round_bf16(1.0f + e);
        if (!isfinite(d)) continue;             /* g / Inf = -0 either way */
        const double q = (double)g / (double)d; /* within 2^-53 of the quotient */
        if (fabs(q) < 0x1p-120) continue;       /* subnormal results: the device check's */
        checked++;
        const double margin = midpoint_margin(q);
        if (margin < worst) worst = margin;
        if (margin < 0x1p-17) bad++;
        /* And so the F32 quotient rounds as the exact one. */
        if (hrmt_round_bf16(g / d) != hrmt_round_bf16((float)q)) bad++;
    }
    cr_expect_eq(bad, 0, "%zu of %zu quotients within 2^-17 of a BF16 midpoint (closest %.3g)", bad,
                 checked, worst);
    /* Every finite gate but those above ~88.7 in magnitude with g < 0 (d is
     * Inf there) and the tiniest: ~48000. */
    cr_expect_gt(checked, 45000, "the gates were checked: %zu", checked);
}

/* x rounded once to BF16 (nearest, ties to even; BF16's subnormals, whose
 * unit is 2^-133, kept), for x = P 2^E with P < 2^16 (exact in a double). */
static float bf16_once(double x) {
    if (x == 0.0) return (float)x;
    int ex = 0;
    frexp(x, &ex);                                /* |x| in [2^(ex-1), 2^ex) */
    const int lo = ex - 1 < -126 ? -126 : ex - 1; /* the binade, subnormals in -126's */
    const double unit = ldexp(1.0, lo - 7);       /* 8 significant bits */
    return (float)(nearbyint(x / unit) * unit);   /* exact: a BF16 value (or 2^128: Inf) */
}

/* The fused gate_up's product s(g) u of two BF16 values (HRMT_CUDA_GLU_MUL):
 * its F32 form rounds the product to F32 and then to BF16, mul.rn.bf16x2
 * rounds it once. A product of two BF16 values is P 2^E with P < 2^16 an
 * integer (8-bit significands, subnormals included). Above F32's normal
 * floor the F32 product is exact (16 <= 24 bits), so the two agree; this
 * checks the rest: every integer P < 2^16 at every exponent from where both
 * give 0 to well inside the normal range, against float64 rounding once. A
 * correctly rounded mul.rn.bf16x2 therefore gives the F32 form's bits for
 * every finite pair; that the device's is correctly rounded is what the
 * model's load-time check of all 2^32 pairs settles (cu_glu_mul_exact). */
Test(silu_fast_lemmas, bf16_product_rounds_once_as_through_f32) {
    size_t bad = 0, checked = 0;
    for (int E = -170; E <= -100; E++)
        for (uint32_t P = 1; P < 65536; P++) {
            const double x = ldexp((double)P, E);
            const float two = hrmt_round_bf16((float)x); /* F32 first, then BF16 */
            const float once = bf16_once(x);
            checked++;
            if (hrmt_f32_bits(two) != hrmt_f32_bits(once)) bad++;
        }
    cr_expect_eq(bad, 0, "%zu of %zu products round differently through F32", bad, checked);
    /* The checker itself: the tiniest subnormal's half rounds to 0 (tie to
     * even), three quarters of it up; 1 + 2^-8 (a tie) to 1, 1 + 3 2^-9 up. */
    cr_expect_eq(bf16_once(0x1p-134), 0.0f);
    cr_expect_eq(bf16_once(0x1.8p-134), 0x1p-133f);
    cr_expect_eq(bf16_once(1.0 + 0x1p-8), 1.0f);
    cr_expect_eq(bf16_once(1.0 + 0x3p-9), 1.0f + 0x1p-7f);
}
