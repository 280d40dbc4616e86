/* bf16 <-> f32 conversion on the context's ISA (and the scalar helpers of
 * core/bf16.h) against an independent integer round-to-nearest-even. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "core/bf16.h"
#include "support/ref_bf16.h"
#include "support/test_common.h"

static hrmt_context *g_ctx;
static void setup(void) { g_ctx = hrmt_test_context(); }
static void teardown(void) { hrmt_context_destroy(g_ctx); }
TestSuite(bf16, .init = setup, .fini = teardown, .timeout = 60);

static void convert(hrmt_dtype from, const void *src, hrmt_dtype to, void *dst, size_t n) {
    hrmt_tensor a, b;
    cr_assert_eq(hrmt_tensor_init(&a, (void *)src, from, 1, &n), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&b, dst, to, 1, &n), HRMT_OK);
    cr_assert_eq(hrmt_convert(g_ctx, &a, &b), HRMT_OK, "%s", hrmt_last_error(g_ctx));
}

Test(bf16, all_65536_round_trip) {
    const size_t n = 65536;
    uint16_t *h = malloc(n * 2), *back = malloc(n * 2);
    float *f = malloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = (uint16_t)i;
    convert(HRMT_BF16, h, HRMT_F32, f, n);
    convert(HRMT_F32, f, HRMT_BF16, back, n);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        /* widening is exact: the bits move up by 16 */
        bad += ref_bits(f[i]) != (uint32_t)i << 16;
        bad += ref_bits(hrmt_bf16_to_f32(h[i])) != (uint32_t)i << 16;
        /* narrowing gives the value back; a NaN comes back quiet */
        const uint16_t want = ref_isnan_bf16(h[i]) ? (uint16_t)(h[i] | 0x40u) : h[i];
        if (back[i] != want && bad++ < 5) cr_log_error("bf16 %04zx -> %04x", i, back[i]);
        bad += hrmt_f32_to_bf16(f[i]) != want;
    }
    cr_expect_eq(bad, 0, "%zu round-trip failures", bad);
    free(h), free(back), free(f);
}

/* Every exponent and sign with mantissas around the rounding points, NaN
 * payloads (including signalling ones with only low bits set), Inf, the
 * largest finite values (which round to Inf), and all denormal classes. */
static size_t build_sweep(uint32_t *u) {
    static const uint32_t low[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xffff, 0x4000, 0xc000};
    static const uint32_t kept[] = {0x00, 0x01, 0x02, 0x3f, 0x40, 0x7e, 0x7f};
    size_t n = 0;
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t e = 0; e < 256; e++)
            for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++)
                for (size_t l = 0; l < sizeof low / sizeof low[0]; l++)
                    u[n++] = s << 31 | e << 23 | kept[k] << 16 | low[l];
    return n;
}

Test(bf16, f32_sweep_against_integer_rne) {
    const size_t extra = (size_t)1 << 20;
    uint32_t *u = malloc((2 * 256 * 7 * 8 + extra) * sizeof *u);
    size_t n = build_sweep(u);
    hrmt_test_rng rng = {77};
    for (size_t i = 0; i < extra; i++) {
        hrmt_test_uniform(&rng);
        u[n++] = (uint32_t)(rng.s >> 17);
    }
    float *f = malloc(n * sizeof *f);
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) f[i] = ref_float(u[i]);
    convert(HRMT_F32, f, HRMT_BF16, h, n);
    size_t bad = 0, nan_seen = 0, den_seen = 0, half_seen = 0;
    for (size_t i = 0; i < n; i++) {
        const uint16_t want = ref_f32_to_bf16(f[i]);
        nan_seen += (u[i] & 0x7fffffffu) > 0x7f800000u;
        den_seen += (u[i] & 0x7f800000u) == 0 && (u[i] & 0x7fffffu) != 0;
        half_seen += (u[i] & 0xffffu) == 0x8000u;
        if ((h[i] != want || hrmt_f32_to_bf16(f[i]) != want) && bad++ < 5)
            cr_log_error("f32 %08x -> %04x (scalar %04x), want %04x", u[i], h[i],
                         hrmt_f32_to_bf16(f[i]), want);
    }
    cr_expect_eq(bad, 0, "%zu of %zu conversions differ from integer RNE", bad, n);
    cr_expect(nan_seen > 1000 && den_seen > 1000 && half_seen > 1000, "sweep covers the cases");
    free(u), free(f), free(h);
}

Test(bf16, reference_rounding_examples) {
    /* a few worked values, so the reference itself is pinned to IEEE RNE */
    cr_expect_eq(ref_f32_to_bf16(1.0f), 0x3f80);
    cr_expect_eq(ref_f32_to_bf16(ref_float(0x3f808000u)), 0x3f80); /* tie, even stays */
    cr_expect_eq(ref_f32_to_bf16(ref_float(0x3f818000u)), 0x3f82); /* tie, odd rounds up */
    cr_expect_eq(ref_f32_to_bf16(ref_float(0x3f808001u)), 0x3f81);
    cr_expect_eq(ref_f32_to_bf16(ref_float(0x7f7fffffu)), 0x7f80); /* FLT_MAX -> Inf */
    cr_expect_eq(ref_f32_to_bf16(ref_float(0x7f800001u)), 0x7fc0); /* sNaN -> quiet */
    cr_expect_eq(ref_f32_to_bf16(ref_float(0xff800000u)), 0xff80);
    cr_expect_eq(ref_f32_to_bf16(ref_float(0x00018000u)), 0x0002); /* denormal tie */
}
