/* The amx table's BF16 attention (src/cpu/attention_amx.c) against a scalar
 * reference built from independent parts, bit for bit:
 *   S = Q K^T in TDPBF16PS's order (tests/support/ref_amx.c),
 *   P = the scalar table's F32 softmax of S * scale,
 *   P split into hi + mid + lo BF16 parts (integer round to nearest even,
 *     tests/support/ref_bf16.h), O = one AMX-order chain over
 *     [hi | mid | lo] x [V; V; V] (each part padded to the 32-key blocks),
 *     rounded once;
 * and within one BF16 ulp of a float64 attention. Shapes cover one token,
 * token counts off and on the 32-row tiles and head dims off the 32-wide K
 * blocks; rows are padded with NaN, so a read past a row shows up, and the
 * output's padding must stay untouched. Skips where AMX is not usable. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/context.h"
#include "support/ref_amx.h"
#include "support/ref_bf16.h"
#include "support/test_common.h"

#define PAD 5 /* NaN elements after each row */

/* T rows of d BF16 values in [-scale, scale), stride d + PAD, NaN padded. */
static uint16_t *rows_new(size_t T, size_t d, uint64_t seed, float scale) {
    const size_t ld = d + PAD;
    uint16_t *x = malloc(T * ld * 2);
    cr_assert_not_null(x);
    hrmt_test_rng r = {seed};
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j < ld; j++)
            x[i * ld + j] = ref_f32_to_bf16(j < d ? scale * hrmt_test_uniform(&r) : NAN);
    return x;
}

/* The reference output rows (BF16, stride d). */
static uint16_t *reference(size_t T, size_t d, const uint16_t *q, const uint16_t *k,
                           const uint16_t *v, float scale) {
    const size_t ld = d + PAD, Tp = (T + 31) / 32 * 32;
    float *S = malloc(T * T * 4);
    uint16_t *a = calloc(3 * Tp, 2), *w = calloc(3 * Tp, 2), *o = malloc(T * d * 2);
    cr_assert(S && a && w && o);
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j < T; j++) S[i * T + j] = ref_amx_dot(d, q + i * ld, k + j * ld);
    hrmt_backend_cpu(HRMT_ISA_SCALAR)->rowops.softmax[HRMT_F32](T, T, S, T, scale, S, T);
    for (size_t i = 0; i < T; i++) {
        for (size_t j = 0; j < T; j++) {
            float rest = S[i * T + j];
            for (size_t part = 0; part < 3; part++) {
                a[part * Tp + j] = ref_f32_to_bf16(rest);
                rest -= ref_bf16_to_f32(a[part * Tp + j]); /* exact */
            }
        }
        for (size_t c = 0; c < d; c++) {
            for (size_t part = 0; part < 3; part++)
                for (size_t j = 0; j < T; j++) w[part * Tp + j] = v[j * ld + c];
            o[i * d + c] = ref_f32_to_bf16(ref_amx_dot(3 * Tp, a, w));
        }
    }
    free(S);
    free(a);
    free(w);
    return o;
}

/* Exact attention in float64 of row i, column c. */
static double f64_attention(size_t T, size_t d, const uint16_t *q, const uint16_t *k,
                            const uint16_t *v, double scale, size_t i, size_t c) {
    const size_t ld = d + PAD;
    double *s = malloc(T * sizeof *s), mx = -INFINITY, sum = 0.0, o = 0.0;
    cr_assert_not_null(s);
    for (size_t j = 0; j < T; j++) {
        double acc = 0.0;
        for (size_t x = 0; x < d; x++)
            acc += (double)ref_bf16_to_f32(q[i * ld + x]) * (double)ref_bf16_to_f32(k[j * ld + x]);
        s[j] = acc * scale;
        if (s[j] > mx) mx = s[j];
    }
    for (size_t j = 0; j < T; j++) sum += (s[j] = exp(s[j] - mx));
    for (size_t j = 0; j < T; j++) o += s[j] / sum * (double)ref_bf16_to_f32(v[j * ld + c]);
    free(s);
    return o;
}

static void run_shape(const hrmt_context *ctx, size_t T, size_t d, uint64_t seed) {
    const hrmt_gemm_kernels *t = &ctx->be->gemm;
    cr_assert_not_null(t->attend_bf16, "the amx table has no tile attention");
    const size_t ld = d + PAD, ldo = d + PAD;
    const float scale = (float)(1.0 / sqrt((double)d));
    uint16_t *q = rows_new(T, d, seed, 2.0f), *k = rows_new(T, d, seed + 1, 2.0f),
             *v = rows_new(T, d, seed + 2, 1.0f), *out = rows_new(T, d, seed + 3, 1.0f);
    const uint16_t poison = out[d];
    void *scr = malloc(hrmt_attend_tile_scratch_bytes(T, d) + 1); /* +1: unaligned on purpose */
    cr_assert_not_null(scr);
    t->attend_bf16(t, T, d, q, k, v, ld, scale, NULL, NULL, out, ldo, (char *)scr + 1);
    uint16_t *ref = reference(T, d, q, k, v, scale);
    size_t diff = 0, far = 0;
    for (size_t i = 0; i < T; i++) {
        for (size_t c = 0; c < d; c++) {
            const uint16_t got = out[i * ldo + c];
            if (got != ref[i * d + c] && diff++ < 3)
                cr_log_error("T %zu d %zu [%zu,%zu]: %a vs reference %a", T, d, i, c,
                             (double)ref_bf16_to_f32(got), (double)ref_bf16_to_f32(ref[i * d + c]));
            const double exact = f64_attention(T, d, q, k, v, scale, i, c);
            const double ulp = ldexp(1.0, (exact != 0.0 ? ilogb(exact) : -126) - 7);
            if (fabs((double)ref_bf16_to_f32(got) - exact) > ulp) far++;
        }
        for (size_t c = d; c < ldo; c++)
            cr_expect_eq(out[i * ldo + c], poison, "T %zu d %zu: row %zu padding written", T, d, i);
    }
    cr_expect_eq(diff, 0, "T %zu d %zu: %zu of %zu outputs differ from the AMX-order reference", T,
                 d, diff, T * d);
    cr_expect_eq(far, 0, "T %zu d %zu: %zu outputs more than a bf16 ulp from float64", T, d, far);
    free(ref);
    free(scr);
    free(q);
    free(k);
    free(v);
    free(out);
}

Test(attention_amx, bitwise_against_the_reference) {
    hrmt_context *ctx = hrmt_test_amx_context(1);
    /* HRM's 82 tokens x 64; one token; tile edges; head dims off the K block. */
    const size_t shapes[][2] = {{82, 64}, {1, 64}, {32, 32}, {33, 128},
                                {64, 48}, {17, 2}, {96, 96}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        run_shape(ctx, shapes[i][0], shapes[i][1], 100 + 10 * i);
    hrmt_context_destroy(ctx);
}

/* With RoPE tables the attention rotates Q and K itself: the same bits as
 * the table's BF16 rope row op run in place first (the model's path for the
 * other tables) and the attention without tables, and q, k untouched. */
static void run_rope_shape(const hrmt_context *ctx, size_t T, size_t d, uint64_t seed) {
    const hrmt_gemm_kernels *t = &ctx->be->gemm;
    const size_t ld = d + PAD, ldo = d + PAD;
    const float scale = (float)(1.0 / sqrt((double)d));
    uint16_t *q = rows_new(T, d, seed, 2.0f), *k = rows_new(T, d, seed + 1, 2.0f),
             *v = rows_new(T, d, seed + 2, 1.0f), *out = rows_new(T, d, seed + 3, 1.0f),
             *ref = rows_new(T, d, seed + 3, 1.0f), *qr = malloc(T * ld * 2),
             *kr = malloc(T * ld * 2);
    float *cs = malloc(T * d * sizeof *cs), *sn = malloc(T * d * sizeof *sn);
    void *scr = malloc(hrmt_attend_tile_scratch_bytes(T, d) + 3);
    cr_assert(qr && kr && cs && sn && scr);
    for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j < d; j++) {
            const double a = (double)i / pow(10000.0, (double)(2 * (j % (d / 2))) / (double)d);
            cs[i * d + j] = (float)cos(a);
            sn[i * d + j] = (float)sin(a);
        }
    memcpy(qr, q, T * ld * 2);
    memcpy(kr, k, T * ld * 2);
    ctx->be->rowops.rope[HRMT_BF16](T, 1, d, qr, ld, 0, cs, sn, d);
    ctx->be->rowops.rope[HRMT_BF16](T, 1, d, kr, ld, 0, cs, sn, d);
    t->attend_bf16(t, T, d, qr, kr, v, ld, scale, NULL, NULL, ref, ldo, (char *)scr + 3);
    uint16_t *q0 = malloc(T * ld * 2), *k0 = malloc(T * ld * 2);
    cr_assert(q0 && k0);
    memcpy(q0, q, T * ld * 2);
    memcpy(k0, k, T * ld * 2);
    t->attend_bf16(t, T, d, q, k, v, ld, scale, cs, sn, out, ldo, (char *)scr + 3);
    cr_expect_eq(memcmp(out, ref, T * ldo * 2), 0, "T %zu d %zu: RoPE inside differs", T, d);
    cr_expect_eq(memcmp(q, q0, T * ld * 2), 0, "T %zu d %zu: q written", T, d);
    cr_expect_eq(memcmp(k, k0, T * ld * 2), 0, "T %zu d %zu: k written", T, d);
    free(q0);
    free(k0);
    free(scr);
    free(cs);
    free(sn);
    free(qr);
    free(kr);
    free(ref);
    free(q);
    free(k);
    free(v);
    free(out);
}

Test(attention_amx, rope_inside_equals_the_row_op_first) {
    hrmt_context *ctx = hrmt_test_amx_context(1);
    const size_t shapes[][2] = {{82, 64}, {1, 64}, {33, 128}, {17, 2}, {40, 96}, {9, 36}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        run_rope_shape(ctx, shapes[i][0], shapes[i][1], 500 + 10 * i);
    hrmt_context_destroy(ctx);
}
