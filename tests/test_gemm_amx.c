/* The amx table's GEMM (src/cpu/gemm_amx.c) against its scalar reference
 * (tests/support/ref_amx.c: TDPBF16PS's order from Intel's definition), bit
 * for bit: BF16 A x BF16 W with F32 and BF16 C, plain and accumulating, on
 * ragged M, N and K (tails of the 16-row tiles, the 32-column panels and the
 * 32-wide K blocks), one and several K blocks, one and two threads, and M
 * split across calls. If every configuration equals the reference, they
 * equal each other: the order depends on K alone, which is what keeps the
 * model's tiered schedule bitwise equal to the baseline on this table.
 * Other dtype combinations run the avx512 table's F32 kernel: same bits as
 * that table.
 *
 * Each case creates an amx context itself; where the CPU, the OS or the build
 * lacks AMX, every case skips saying why (ctest runs this binary once). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref_amx.h"
#include "support/ref_bf16.h"
#include "support/test_common.h"

typedef struct bmat {
    size_t rows, cols, ld;
    hrmt_dtype dt;
    void *data;
} bmat;

/* rows x cols with `pad` extra elements a row, filled with NaN (read past a
 * row: shows up) and values uniform in [-scale, scale) rounded to dt. */
static bmat bmat_new(size_t rows, size_t cols, size_t pad, hrmt_dtype dt, uint64_t seed,
                     float scale) {
    bmat m = {rows, cols, cols + pad, dt, NULL};
    m.data = malloc(rows * m.ld * (dt == HRMT_F32 ? 4 : 2) + 64);
    cr_assert_not_null(m.data);
    hrmt_test_rng r = {seed};
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < m.ld; j++) {
            const float v = j < cols ? scale * hrmt_test_uniform(&r) : NAN;
            if (dt == HRMT_F32)
                ((float *)m.data)[i * m.ld + j] = v;
            else
                ((uint16_t *)m.data)[i * m.ld + j] = ref_f32_to_bf16(v);
        }
    return m;
}

static hrmt_tensor bmat_tensor(const bmat *m, size_t row0, size_t rows) {
    hrmt_tensor t;
    size_t shape[2] = {rows, m->cols};
    const size_t esz = m->dt == HRMT_F32 ? 4 : 2;
    cr_assert_eq(hrmt_tensor_init(&t, (char *)m->data + row0 * m->ld * esz, m->dt, 2, shape),
                 HRMT_OK);
    t.stride[0] = m->ld;
    return t;
}

static hrmt_packed_w *pack(hrmt_context *ctx, const bmat *w) {
    hrmt_tensor t = bmat_tensor(w, 0, w->rows);
    hrmt_packed_w *pw = NULL;
    cr_assert_eq(hrmt_gemm_pack_w(ctx, &t, &pw), HRMT_OK, "%s", hrmt_last_error(ctx));
    return pw;
}

/* C rows [r0, r1) = A rows [r0, r1) x W^T through the public API. */
static void gemm_rows(hrmt_context *ctx, const bmat *a, const hrmt_packed_w *pw, bmat *c, size_t r0,
                      size_t r1, int acc) {
    hrmt_tensor ta = bmat_tensor(a, r0, r1 - r0), tc = bmat_tensor(c, r0, r1 - r0);
    cr_assert_eq(hrmt_gemm_packed(ctx, &ta, pw, &tc, acc), HRMT_OK, "%s", hrmt_last_error(ctx));
}

/* Element (i, j) of C as F32. */
static float c_at(const bmat *c, size_t i, size_t j) {
    return c->dt == HRMT_F32 ? ((const float *)c->data)[i * c->ld + j]
                             : ref_bf16_to_f32(((const uint16_t *)c->data)[i * c->ld + j]);
}

/* The reference sums of A x W^T, [M, N] row-major (caller frees). */
static float *reference(const bmat *a, const bmat *w) {
    float *r = malloc(a->rows * w->rows * sizeof(float) + 4);
    cr_assert_not_null(r);
    ref_amx_gemm(a->rows, w->rows, a->cols, a->data, a->ld, w->data, w->ld, r, w->rows);
    return r;
}

/* What C must hold: the reference sum `ref` [M, N], added to C0 (in F32)
 * when accumulating, rounded once to BF16 for a BF16 C. Returns the
 * mismatches (the first few logged); the row padding must still be NaN. */
static size_t check(const float *ref, const bmat *c, const bmat *c0, int acc, const char *what) {
    size_t bad = 0;
    for (size_t i = 0; i < c->rows; i++)
        for (size_t j = 0; j < c->ld; j++) {
            const float got = c_at(c, i, j);
            if (j >= c->cols) {
                if (!isnan(got) && bad++ < 3)
                    cr_log_error("%s: padding [%zu,%zu] written", what, i, j);
                continue;
            }
            float want = ref[i * c->cols + j];
            if (acc) want = c_at(c0, i, j) + want;
            if (c->dt == HRMT_BF16) want = ref_round_bf16(want);
            if (ref_bits(got) != ref_bits(want) && bad++ < 3)
                cr_log_error("%s [%zu,%zu]: %a, reference %a", what, i, j, (double)got,
                             (double)want);
        }
    return bad;
}

/* M x N x K, C in c_dt, on `ctx`: whole, then accumulating on that, then
 * with M split in two calls at `split` (0: no split). */
static void run_shape(hrmt_context *ctx, size_t M, size_t N, size_t K, hrmt_dtype c_dt,
                      size_t split, uint64_t seed) {
    bmat a = bmat_new(M, K, 3, HRMT_BF16, seed, 1.0f),
         w = bmat_new(N, K, 5, HRMT_BF16, seed + 1, 1.0f);
    bmat c = bmat_new(M, N, 2, c_dt, seed + 2, 4.0f), c0 = bmat_new(M, N, 2, c_dt, seed + 2, 4.0f);
    hrmt_packed_w *pw = pack(ctx, &w);
    float *ref = reference(&a, &w);
    char what[128];
    snprintf(what, sizeof what, "M%zu N%zu K%zu C %s", M, N, K, c_dt == HRMT_F32 ? "f32" : "bf16");
    /* Accumulate first (onto the random C), then plain. */
    gemm_rows(ctx, &a, pw, &c, 0, M, 1);
    size_t bad = check(ref, &c, &c0, 1, what);
    cr_expect_eq(bad, 0, "%s accumulate: %zu outputs off the AMX order", what, bad);
    gemm_rows(ctx, &a, pw, &c, 0, M, 0);
    bad = check(ref, &c, &c0, 0, what);
    cr_expect_eq(bad, 0, "%s: %zu outputs off the AMX order", what, bad);
    if (split > 0 && split < M) {
        memcpy(c.data, c0.data, c.rows * c.ld * (c_dt == HRMT_F32 ? 4 : 2));
        gemm_rows(ctx, &a, pw, &c, 0, split, 0);
        gemm_rows(ctx, &a, pw, &c, split, M, 0);
        bad = check(ref, &c, &c0, 0, what);
        cr_expect_eq(bad, 0, "%s split at %zu: %zu outputs off the AMX order", what, split, bad);
    }
    hrmt_packed_w_destroy(pw);
    free(ref);
    free(a.data);
    free(w.data);
    free(c.data);
    free(c0.data);
}

/* Ragged shapes: M across the 16/32-row tiles, N across the 32-column panel,
 * K across the 32-wide blocks (1, 31, 33, 95, ...). */
static const size_t k_shapes[][3] = {
    {1, 1, 1},   {1, 32, 32},  {15, 17, 31}, {16, 33, 33},  {17, 31, 64},  {31, 64, 95},
    {32, 40, 2}, {33, 7, 129}, {47, 96, 63}, {82, 40, 512}, {5, 33, 1101}, {100, 45, 200},
};

static void run_all(hrmt_context *ctx, uint64_t seed) {
    for (size_t s = 0; s < sizeof k_shapes / sizeof k_shapes[0]; s++) {
        const size_t M = k_shapes[s][0], N = k_shapes[s][1], K = k_shapes[s][2];
        run_shape(ctx, M, N, K, s % 2 ? HRMT_BF16 : HRMT_F32, M / 3, seed + 10 * s);
    }
}

Test(gemm_amx, bitwise_against_the_reference) {
    hrmt_context *ctx = hrmt_test_amx_context(1);
    run_all(ctx, 100);
    hrmt_context_destroy(ctx);
}

Test(gemm_amx, bitwise_with_two_threads) {
    hrmt_context *ctx = hrmt_test_amx_context(2);
    run_all(ctx, 200);
    run_shape(ctx, 200, 100, 96, HRMT_BF16, 0, 7); /* several units per thread */
    hrmt_context_destroy(ctx);
}

/* Above the serial threshold (2M multiply-adds), N split three ways or more:
 * the team packs each row block of A once into shared scratch and every unit
 * reads it (one K block, and three with HRMT_GEMM_KC 8; ragged M and N). */
Test(gemm_amx, bitwise_with_threads_sharing_packed_a) {
    const int threads[] = {3, 16};
    for (size_t t = 0; t < 2; t++) {
        hrmt_context *ctx = hrmt_test_amx_context(threads[t]);
        run_shape(ctx, 100, 300, 96, HRMT_BF16, 0, 11);
        run_shape(ctx, 64, 520, 96, HRMT_F32, 37, 12);
        hrmt_context_destroy(ctx);
    }
    setenv("HRMT_GEMM_KC", "8", 1);
    hrmt_context *ctx = hrmt_test_amx_context(4);
    unsetenv("HRMT_GEMM_KC");
    run_shape(ctx, 82, 400, 96, HRMT_BF16, 41, 13);
    hrmt_context_destroy(ctx);
}

/* Small K blocks (HRMT_GEMM_KC 8 gives 32-wide blocks): the C tiles go to
 * the partial sums and back between blocks, which must not change a bit. */
Test(gemm_amx, bitwise_across_k_blocks) {
    setenv("HRMT_GEMM_KC", "8", 1);
    setenv("HRMT_GEMM_MC", "40", 1);
    hrmt_context *ctx = hrmt_test_amx_context(2);
    unsetenv("HRMT_GEMM_KC");
    unsetenv("HRMT_GEMM_MC");
    run_all(ctx, 300);
    hrmt_context_destroy(ctx);
}

/* Inputs and sums near the bottom of the F32 range: products and chains that
 * go denormal must flush to zero the way TDPBF16PS does (and the reference
 * says), and denormal bf16 inputs count as zero. */
Test(gemm_amx, denormals_flush_like_the_hardware) {
    hrmt_context *ctx = hrmt_test_amx_context(1);
    const size_t M = 19, N = 37, K = 70;
    bmat a = bmat_new(M, K, 0, HRMT_BF16, 11, 1.0f), w = bmat_new(N, K, 0, HRMT_BF16, 12, 1.0f);
    bmat c = bmat_new(M, N, 0, HRMT_F32, 13, 1.0f);
    /* Scale so products land around 2^-126 +- a few binades; some inputs
     * are bf16 denormals themselves. */
    uint16_t *ah = a.data, *wh = w.data;
    for (size_t i = 0; i < M * K; i++)
        ah[i] = ref_f32_to_bf16(ref_bf16_to_f32(ah[i]) * 0x1p-60f * (i % 7 == 0 ? 0x1p-10f : 1.0f));
    for (size_t i = 0; i < N * K; i++)
        wh[i] = ref_f32_to_bf16(ref_bf16_to_f32(wh[i]) * 0x1p-64f * (i % 5 == 0 ? 0x1p-8f : 1.0f));
    hrmt_packed_w *pw = pack(ctx, &w);
    gemm_rows(ctx, &a, pw, &c, 0, M, 0);
    float *ref = reference(&a, &w);
    const size_t bad = check(ref, &c, &c, 0, "denormal range");
    cr_expect_eq(bad, 0, "%zu outputs off the AMX order near denormals", bad);
    free(ref);
    hrmt_packed_w_destroy(pw);
    free(a.data);
    free(w.data);
    free(c.data);
    hrmt_context_destroy(ctx);
}

/* F32 A or F32 W: the avx512 table's kernels, so its bits. */
Test(gemm_amx, other_dtypes_are_the_avx512_tables) {
    hrmt_context *ctx = hrmt_test_amx_context(1);
    hrmt_context_options o = hrmt_context_default_options();
    o.isa = "avx512";
    o.num_threads = 1;
    hrmt_context *ref = NULL;
    cr_assert_eq(hrmt_context_create(&o, &ref, NULL, 0), HRMT_OK);
    const size_t M = 45, N = 70, K = 77;
    for (int combo = 0; combo < 3; combo++) {
        const hrmt_dtype adt = combo == 1 ? HRMT_BF16 : HRMT_F32;
        const hrmt_dtype wdt = combo == 2 ? HRMT_BF16 : HRMT_F32;
        bmat a = bmat_new(M, K, 1, adt, 21, 1.0f), w = bmat_new(N, K, 2, wdt, 22, 1.0f);
        bmat c = bmat_new(M, N, 0, HRMT_F32, 23, 1.0f), r = bmat_new(M, N, 0, HRMT_F32, 23, 1.0f);
        hrmt_packed_w *pw = pack(ctx, &w), *pr = pack(ref, &w);
        gemm_rows(ctx, &a, pw, &c, 0, M, 0);
        gemm_rows(ref, &a, pr, &r, 0, M, 0);
        cr_expect_eq(memcmp(c.data, r.data, M * N * 4), 0, "A %s W %s: not the avx512 bits",
                     hrmt_dtype_name(adt), hrmt_dtype_name(wdt));
        hrmt_packed_w_destroy(pw);
        hrmt_packed_w_destroy(pr);
        free(a.data);
        free(w.data);
        free(c.data);
        free(r.data);
    }
    hrmt_context_destroy(ref);
    hrmt_context_destroy(ctx);
}
