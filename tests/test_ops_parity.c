/* Every row op of the context's ISA against the scalar reference table on
 * random inputs (odd and even widths, strided rows, NaN/Inf), and the scalar
 * kernels themselves against float64 recomputation. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "support/mat.h"
#include "support/ref_bf16.h"
#include "support/test_common.h"

static const size_t COLS[] = {1, 3, 7, 17, 64, 511, 512, 513, 4096, 7168};
static const size_t ROWS[] = {1, 4, 9};
#define NCOLS (sizeof COLS / sizeof COLS[0])
#define NROWS (sizeof ROWS / sizeof ROWS[0])
static const hrmt_dtype DTS[] = {HRMT_F32, HRMT_BF16};

#define U24 (1.0 / 16777216.0) /* f32 unit roundoff */
#define ELEM_REL 1e-6
/* Reordered f32 sums of n positive terms differ by at most ~n units. */
static double red_rel(size_t n) { return ELEM_REL + (double)n * U24; }

static hrmt_context *g_ctx;
static const hrmt_rowops *g_ref; /* scalar table */

static void setup(void) {
    g_ctx = hrmt_test_context();
    const hrmt_backend *b = hrmt_backend_cpu(HRMT_ISA_SCALAR);
    cr_assert_not_null(b);
    g_ref = &b->rowops;
}
static void teardown(void) { hrmt_context_destroy(g_ctx); }

TestSuite(ops_parity, .init = setup, .fini = teardown, .timeout = 120);

/* Row strides: tight for even cases, padded (guard bytes checked) for odd. */
static size_t pad_ld(size_t cols, size_t k) { return (k & 1) ? cols + 5 : cols; }

/* NaN, +Inf and -Inf into the first rows of an input (where they exist). */
static void inject(tmat *m) {
    if (m->rows > 0) tmat_set(m, 0, m->cols / 2, NAN);
    if (m->rows > 1) tmat_set(m, 1, m->cols - 1, INFINITY);
    if (m->rows > 2) tmat_set(m, 2, 0, -INFINITY);
}

static void expect_ok(hrmt_status s, const char *what) {
    cr_assert_eq(s, HRMT_OK, "%s: %s (%s)", what, hrmt_status_str(s), hrmt_last_error(g_ctx));
}

static void check(const tmat *got, const tmat *want, double rel, int ulps, const char *op,
                  hrmt_dtype dt, size_t rows, size_t cols, int nonfinite) {
    char what[128];
    snprintf(what, sizeof what, "%s %s %zux%zu%s", op, hrmt_dtype_name(dt), rows, cols,
             nonfinite ? " nonfinite" : "");
    cr_expect_eq(tmat_compare(got, want, rel, 0.0, ulps, what), 0, "%s differs from scalar", what);
    cr_expect_eq(tmat_guard_damage(got), 0, "%s wrote outside its rows", what);
}

/* ---- add ------------------------------------------------------------------ */

static void add_case(hrmt_dtype dt, size_t rows, size_t cols, size_t ld, int nonfinite,
                     hrmt_test_rng *rng) {
    tmat a = tmat_new(dt, rows, cols, ld), b = tmat_new(dt, rows, cols, ld);
    tmat o = tmat_new(dt, rows, cols, ld), w = tmat_new(dt, rows, cols, ld);
    tmat_fill(&a, rng, 4.0f);
    tmat_fill(&b, rng, 4.0f);
    if (nonfinite) inject(&a);
    hrmt_tensor ta = tmat_tensor(&a), tb = tmat_tensor(&b), to = tmat_tensor(&o);
    expect_ok(hrmt_add(g_ctx, &ta, &tb, &to), "hrmt_add");
    g_ref->add[dt](rows, cols, a.p, ld, b.p, ld, w.p, ld);
    check(&o, &w, 0.0, 0, "add", dt, rows, cols, nonfinite);
    /* float64: the f32 sum is correctly rounded, so it must be exact */
    size_t bad = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++) {
            const float s = (float)((double)tmat_get(&a, r, j) + (double)tmat_get(&b, r, j));
            const float want = dt == HRMT_BF16 ? ref_round_bf16(s) : s;
            const float got = tmat_get(&w, r, j);
            bad += !(got == want || (isnan(got) && isnan(want)));
        }
    cr_expect_eq(bad, 0, "scalar add vs float64: %zu mismatches", bad);
    tmat_free(&a), tmat_free(&b), tmat_free(&o), tmat_free(&w);
}

Test(ops_parity, add) {
    hrmt_test_rng rng = {11};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++)
                add_case(DTS[d], ROWS[r], COLS[c], pad_ld(COLS[c], r), 0, &rng);
    for (size_t d = 0; d < 2; d++) add_case(DTS[d], 3, 513, 513, 1, &rng);
}

/* ---- rmsnorm (with and without weight) ------------------------------------ */

/* float64 rmsnorm of row r of x (h already in f32), compared with got. */
static size_t rms_f64_check(const tmat *h, const tmat *got, const float *wt, float eps,
                            hrmt_dtype dt) {
    size_t bad = 0;
    for (size_t r = 0; r < h->rows; r++) {
        double ss = 0;
        for (size_t j = 0; j < h->cols; j++) ss += (double)tmat_get(h, r, j) * tmat_get(h, r, j);
        const double inv = 1.0 / sqrt(ss / (double)h->cols + (double)eps);
        for (size_t j = 0; j < h->cols; j++) {
            const double y = tmat_get(h, r, j) * inv * (wt ? wt[j] : 1.0);
            const float g = tmat_get(got, r, j);
            int ok;
            if (dt == HRMT_BF16)
                ok = llabs(ref_ord_bf16(ref_f32_to_bf16(g)) -
                           ref_ord_bf16(ref_f32_to_bf16((float)y))) <= 1;
            else
                ok = fabs(g - y) <= red_rel(h->cols) * fabs(y) + 1e-30;
            if (!ok && bad++ < 3)
                fprintf(stderr, "rmsnorm f64 [%zu,%zu] %.9g vs %.9g\n", r, j, g, y);
        }
    }
    return bad;
}

static void rmsnorm_case(hrmt_dtype dt, size_t rows, size_t cols, size_t ld, int weighted,
                         int nonfinite, hrmt_test_rng *rng) {
    tmat x = tmat_new(dt, rows, cols, ld), o = tmat_new(dt, rows, cols, ld),
         w = tmat_new(dt, rows, cols, ld);
    tmat_fill(&x, rng, 3.0f);
    if (nonfinite) inject(&x);
    float *wt = NULL;
    hrmt_tensor tw, *ptw = NULL;
    if (weighted) {
        wt = malloc(cols * sizeof *wt);
        for (size_t j = 0; j < cols; j++) wt[j] = 1.0f + 0.5f * hrmt_test_uniform(rng);
        hrmt_tensor_init(&tw, wt, HRMT_F32, 1, &cols);
        ptw = &tw;
    }
    const float eps = 1e-5f;
    hrmt_tensor tx = tmat_tensor(&x), to = tmat_tensor(&o);
    expect_ok(hrmt_rmsnorm(g_ctx, &tx, ptw, eps, &to), "hrmt_rmsnorm");
    g_ref->rmsnorm[dt](rows, cols, x.p, ld, wt, eps, w.p, ld);
    check(&o, &w, 0.0, 0, "rmsnorm", dt, rows, cols, nonfinite);
    if (!nonfinite)
        cr_expect_eq(rms_f64_check(&x, &w, wt, eps, dt), 0, "scalar rmsnorm vs float64");
    free(wt);
    tmat_free(&x), tmat_free(&o), tmat_free(&w);
}

Test(ops_parity, rmsnorm) {
    hrmt_test_rng rng = {12};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++)
                rmsnorm_case(DTS[d], ROWS[r], COLS[c], pad_ld(COLS[c], r), (int)(r == 1), 0, &rng);
    for (size_t d = 0; d < 2; d++) rmsnorm_case(DTS[d], 3, 513, 520, 0, 1, &rng);
}

/* ---- residual + rmsnorm: SRAM and DRAM forms ------------------------------- */

static void resid_case(hrmt_dtype dt, size_t rows, size_t cols, size_t ld, int nonfinite,
                       hrmt_test_rng *rng) {
    tmat x = tmat_new(dt, rows, cols, ld), res = tmat_new(dt, rows, cols, ld);
    tmat os = tmat_new(dt, rows, cols, ld), od = tmat_new(dt, rows, cols, ld);
    tmat on = tmat_new(dt, rows, cols, ld), w = tmat_new(dt, rows, cols, ld);
    tmat_fill(&x, rng, 2.0f);
    tmat_fill(&res, rng, 2.0f);
    if (nonfinite) inject(&res);
    const float eps = 1e-5f;
    hrmt_tensor tx = tmat_tensor(&x), tr = tmat_tensor(&res), ts = tmat_tensor(&os),
                td = tmat_tensor(&od);
    expect_ok(hrmt_residual_rmsnorm(g_ctx, &tx, &tr, eps, HRMT_VARIANT_SRAM, &ts), "sram");
    expect_ok(hrmt_residual_rmsnorm(g_ctx, &tx, &tr, eps, HRMT_VARIANT_DRAM, &td), "dram");
    /* the streaming-store path of this ISA, called directly */
    const hrmt_rowops *k = &hrmt_backend_cpu(hrmt_context_isa(g_ctx))->rowops;
    k->residual_rmsnorm_dram[dt](rows, cols, x.p, ld, res.p, ld, eps, on.p, ld, 1);
    g_ref->residual_rmsnorm_sram[dt](rows, cols, x.p, ld, res.p, ld, eps, w.p, ld);
    cr_expect(memcmp(os.p, od.p, rows * ld * os.es) == 0, "SRAM and DRAM differ (%s %zux%zu)",
              hrmt_dtype_name(dt), rows, cols);
    cr_expect(memcmp(os.p, on.p, rows * ld * os.es) == 0, "SRAM and DRAM+nt differ (%s %zux%zu)",
              hrmt_dtype_name(dt), rows, cols);
    check(&os, &w, 0.0, 0, "residual_rmsnorm", dt, rows, cols, nonfinite);
    if (!nonfinite) {
        /* h = x + r, rounded to bf16 first for BF16 (PyTorch's bf16 add) */
        tmat h = tmat_new(HRMT_F32, rows, cols, cols);
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < cols; j++) {
                const float s = (float)((double)tmat_get(&x, r, j) + tmat_get(&res, r, j));
                tmat_set(&h, r, j, dt == HRMT_BF16 ? ref_round_bf16(s) : s);
            }
        cr_expect_eq(rms_f64_check(&h, &w, NULL, eps, dt), 0, "scalar residual_rmsnorm vs float64");
        tmat_free(&h);
    }
    tmat_free(&x), tmat_free(&res), tmat_free(&os), tmat_free(&od), tmat_free(&on), tmat_free(&w);
}

Test(ops_parity, residual_rmsnorm) {
    hrmt_test_rng rng = {13};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++)
                resid_case(DTS[d], ROWS[r], COLS[c], pad_ld(COLS[c], r), 0, &rng);
    for (size_t d = 0; d < 2; d++) resid_case(DTS[d], 3, 4096, 4099, 1, &rng);
    /* rows longer than the SIMD tables' DRAM-form stack buffer (8192) */
    for (size_t d = 0; d < 2; d++) resid_case(DTS[d], 2, 8200, 8203, 0, &rng);
}

/* The SIMD tables round h = x + r to bf16 without a NaN test (a sum of bf16
 * values has a NaN with a zero low half): every bf16 NaN pattern, and Inf -
 * Inf, must still give a NaN row, never a finite one. */
Test(ops_parity, residual_rmsnorm_bf16_nan_patterns) {
    static const uint16_t nans[] = {0x7f81, 0x7fbf, 0x7fc0, 0x7fff, 0xff81, 0xffff};
    const size_t n = sizeof nans / sizeof nans[0], rows = n + 2, cols = 40;
    hrmt_test_rng rng = {22};
    tmat x = tmat_new(HRMT_BF16, rows, cols, cols), r = tmat_new(HRMT_BF16, rows, cols, cols);
    tmat o = tmat_new(HRMT_BF16, rows, cols, cols);
    tmat_fill(&x, &rng, 2.0f);
    tmat_fill(&r, &rng, 2.0f);
    for (size_t i = 0; i < n; i++) ((uint16_t *)x.p)[i * cols + 33] = nans[i];
    tmat_set(&x, n, 5, INFINITY), tmat_set(&r, n, 5, -INFINITY); /* Inf - Inf */
    hrmt_tensor tx = tmat_tensor(&x), tr = tmat_tensor(&r), to = tmat_tensor(&o);
    for (int v = 0; v < 2; v++) {
        expect_ok(hrmt_residual_rmsnorm(g_ctx, &tx, &tr, 1e-5f,
                                        v ? HRMT_VARIANT_DRAM : HRMT_VARIANT_SRAM, &to),
                  "hrmt_residual_rmsnorm");
        for (size_t i = 0; i <= n; i++) {
            size_t finite = 0;
            for (size_t j = 0; j < cols; j++) finite += !isnan(tmat_get(&o, i, j));
            cr_expect_eq(finite, 0, "row %zu (x = %#06x%s): %zu finite outputs", i,
                         i < n ? nans[i] : 0x7f80, i < n ? "" : ", r = -Inf", finite);
        }
        for (size_t j = 0; j < cols; j++)
            cr_expect(!isnan(tmat_get(&o, n + 1, j)), "finite row became NaN");
    }
    tmat_free(&x), tmat_free(&r), tmat_free(&o);
}

/* ---- swiglu ----------------------------------------------------------------- */

static double silu64(double g) { return g / (1.0 + exp(-g)); }

static void swiglu_case(hrmt_dtype dt, size_t rows, size_t inter, size_t pad, int nonfinite,
                        hrmt_test_rng *rng) {
    tmat gu = tmat_new(dt, rows, 2 * inter, 2 * inter + pad);
    tmat o = tmat_new(dt, rows, inter, inter + pad), w = tmat_new(dt, rows, inter, inter + pad);
    tmat_fill(&gu, rng, 6.0f);
    if (nonfinite) inject(&gu);
    hrmt_tensor tg = tmat_tensor(&gu), to = tmat_tensor(&o);
    expect_ok(hrmt_swiglu(g_ctx, &tg, &to), "hrmt_swiglu");
    g_ref->swiglu[dt](rows, inter, gu.p, gu.ld, w.p, w.ld, 0);
    check(&o, &w, 0.0, 0, "swiglu", dt, rows, inter, nonfinite);
    {
        /* the streaming-store path of this ISA gives the same bits */
        tmat n = tmat_new(dt, rows, inter, inter + pad);
        hrmt_backend_cpu(hrmt_context_isa(g_ctx))
            ->rowops.swiglu[dt](rows, inter, gu.p, gu.ld, n.p, n.ld, 1);
        cr_expect(memcmp(n.p, o.p, rows * n.ld * n.es) == 0, "swiglu nt differs (%s %zux%zu)",
                  hrmt_dtype_name(dt), rows, inter);
        tmat_free(&n);
    }
    if (nonfinite) goto done;
    size_t bad = 0;
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < inter; j++) {
            const double g = tmat_get(&gu, r, j), u = tmat_get(&gu, r, inter + j);
            const float got = tmat_get(&w, r, j);
            int ok;
            if (dt == HRMT_BF16) {
                /* bf16 silu as the reference PyTorch evaluates it: exp(-g),
                 * 1 + e and g / d each rounded to bf16; exp is 1-ulp
                 * accurate, so near a rounding boundary either neighbour of
                 * e is a faithful reference */
                const double e = exp(-g);
                ok = 0;
                for (int k = -1; k <= 1 && !ok; k += 2) {
                    const float eb = ref_round_bf16((float)(e * (1.0 + k * 4 * U24)));
                    const float db = ref_round_bf16((float)(1.0 + (double)eb));
                    const float sb = ref_round_bf16((float)(g / (double)db));
                    ok = llabs(ref_ord_bf16(ref_f32_to_bf16(got)) -
                               ref_ord_bf16(ref_f32_to_bf16((float)((double)sb * u)))) <= 1;
                }
            } else {
                const double y = silu64(g) * u;
                ok = fabs(got - y) <= ELEM_REL * fabs(y) + 1e-30;
            }
            if (!ok && bad++ < 3)
                fprintf(stderr, "swiglu f64 [%zu,%zu] g=%g u=%g got %.9g\n", r, j, g, u, got);
        }
    cr_expect_eq(bad, 0, "scalar swiglu vs float64 (%s)", hrmt_dtype_name(dt));
done:
    tmat_free(&gu), tmat_free(&o), tmat_free(&w);
}

Test(ops_parity, swiglu) {
    hrmt_test_rng rng = {14};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++)
                swiglu_case(DTS[d], ROWS[r], COLS[c], (r & 1) ? 3 : 0, 0, &rng);
    for (size_t d = 0; d < 2; d++) swiglu_case(DTS[d], 3, 513, 0, 1, &rng);
}

/* Every bf16 bit pattern as a gate (NaNs, Infs, denormals included), bit for
 * bit against the scalar reference; F32 gets the same values plus random low
 * bits. SIMD silu replays the reference's exp and roundings exactly. */
Test(ops_parity, swiglu_every_gate) {
    hrmt_test_rng rng = {15};
    const size_t rows = 64, inter = 1024, ld = 2 * inter + 3;
    for (size_t d = 0; d < 2; d++) {
        tmat gu = tmat_new(DTS[d], rows, 2 * inter, ld);
        tmat o = tmat_new(DTS[d], rows, inter, inter), w = tmat_new(DTS[d], rows, inter, inter);
        tmat_fill(&gu, &rng, 3.0f);
        for (size_t r = 0; r < rows; r++)
            for (size_t j = 0; j < inter; j++) {
                const uint32_t bits = (uint32_t)(r * inter + j) << 16;
                if (DTS[d] == HRMT_BF16)
                    ((uint16_t *)gu.p)[r * ld + j] = (uint16_t)(bits >> 16);
                else
                    ((uint32_t *)gu.p)[r * ld + j] =
                        bits | ((uint32_t)((hrmt_test_uniform(&rng) + 1.0f) * 32767.0f) & 0xffffu);
            }
        hrmt_tensor tg = tmat_tensor(&gu), to = tmat_tensor(&o);
        expect_ok(hrmt_swiglu(g_ctx, &tg, &to), "hrmt_swiglu");
        g_ref->swiglu[DTS[d]](rows, inter, gu.p, gu.ld, w.p, w.ld, 0);
        check(&o, &w, 0.0, 0, "swiglu every gate", DTS[d], rows, inter, 1);
        tmat_free(&gu), tmat_free(&o), tmat_free(&w);
    }
}

/* ---- softmax ---------------------------------------------------------------- */

static void softmax_case(hrmt_dtype dt, size_t rows, size_t cols, size_t ld, float scale,
                         int nonfinite, hrmt_test_rng *rng) {
    tmat x = tmat_new(dt, rows, cols, ld), o = tmat_new(dt, rows, cols, ld),
         w = tmat_new(dt, rows, cols, ld);
    tmat_fill(&x, rng, 8.0f);
    if (nonfinite) inject(&x);
    hrmt_tensor tx = tmat_tensor(&x), to = tmat_tensor(&o);
    expect_ok(hrmt_softmax(g_ctx, &tx, scale, &to), "hrmt_softmax");
    g_ref->softmax[dt](rows, cols, x.p, ld, scale, w.p, ld);
    check(&o, &w, 0.0, 0, "softmax", dt, rows, cols, nonfinite);
    if (!nonfinite) {
        size_t bad = 0;
        for (size_t r = 0; r < rows; r++) {
            double m = -INFINITY, sum = 0;
            for (size_t j = 0; j < cols; j++) m = fmax(m, (double)scale * tmat_get(&x, r, j));
            for (size_t j = 0; j < cols; j++) sum += exp((double)scale * tmat_get(&x, r, j) - m);
            for (size_t j = 0; j < cols; j++) {
                const double y = exp((double)scale * tmat_get(&x, r, j) - m) / sum;
                const float got = tmat_get(&w, r, j);
                /* scale*x - max is rounded in f32 first: an absolute error
                 * of |scale*x| units in the exponent */
                const double tol = red_rel(cols) + 8.0 * 8.0 * fabs((double)scale) * U24;
                const int ok = dt == HRMT_BF16 ? llabs(ref_ord_bf16(ref_f32_to_bf16(got)) -
                                                       ref_ord_bf16(ref_f32_to_bf16((float)y))) <= 1
                                               : fabs(got - y) <= tol * y + 1e-38;
                if (!ok && bad++ < 3)
                    fprintf(stderr, "softmax f64 [%zu,%zu] %.9g vs %.9g\n", r, j, got, y);
            }
        }
        cr_expect_eq(bad, 0, "scalar softmax vs float64 (%s %zux%zu)", hrmt_dtype_name(dt), rows,
                     cols);
    }
    tmat_free(&x), tmat_free(&o), tmat_free(&w);
}

Test(ops_parity, softmax) {
    hrmt_test_rng rng = {15};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++)
                softmax_case(DTS[d], ROWS[r], COLS[c], pad_ld(COLS[c], r), r == 2 ? 0.125f : 1.0f,
                             0, &rng);
    for (size_t d = 0; d < 2; d++) softmax_case(DTS[d], 4, 513, 513, 1.0f, 1, &rng);
}

/* ---- rope ------------------------------------------------------------------- */

/* x [tokens, heads, hd] inside a wider row (token stride ld_tok, like q in a
 * fused qkv buffer); cos/sin [tokens, hd]. */
static void rope_case(hrmt_dtype dt, size_t tokens, size_t heads, size_t hd, size_t extra,
                      int nonfinite, hrmt_test_rng *rng) {
    const size_t ld_tok = heads * hd + extra;
    tmat x = tmat_new(dt, tokens, heads * hd, ld_tok);
    tmat_fill(&x, rng, 2.0f);
    if (nonfinite) inject(&x);
    tmat got = tmat_new(dt, tokens, heads * hd, ld_tok),
         want = tmat_new(dt, tokens, heads * hd, ld_tok);
    tmat_copy(&got, &x);
    tmat_copy(&want, &x);
    float *c = malloc(tokens * hd * sizeof *c), *s = malloc(tokens * hd * sizeof *s);
    for (size_t t = 0; t < tokens; t++)
        for (size_t i = 0; i < hd / 2; i++) {
            const double ang = (double)t * pow(10000.0, -2.0 * (double)i / (double)hd);
            c[t * hd + i] = c[t * hd + i + hd / 2] = (float)cos(ang);
            s[t * hd + i] = s[t * hd + i + hd / 2] = (float)sin(ang);
        }
    hrmt_tensor tx, tc, ts;
    const size_t xs[3] = {tokens, heads, hd}, cs[2] = {tokens, hd};
    hrmt_tensor_init(&tx, got.p, dt, 3, xs);
    tx.stride[0] = ld_tok;
    hrmt_tensor_init(&tc, c, HRMT_F32, 2, cs);
    hrmt_tensor_init(&ts, s, HRMT_F32, 2, cs);
    expect_ok(hrmt_rope(g_ctx, &tx, &tc, &ts), "hrmt_rope");
    g_ref->rope[dt](tokens, heads, hd, want.p, ld_tok, hd, c, s, hd);
    check(&got, &want, 0.0, 0, "rope", dt, tokens, heads * hd, nonfinite);
    if (!nonfinite) {
        size_t bad = 0;
        for (size_t t = 0; t < tokens; t++)
            for (size_t h = 0; h < heads; h++)
                for (size_t i = 0; i < hd; i++) {
                    const size_t b = h * hd, half = hd / 2, p = i < half ? i + half : i - half;
                    const double x1 = tmat_get(&x, t, b + i), x2 = tmat_get(&x, t, b + p);
                    const double rot = i < half ? -x2 : x2;
                    const double y = x1 * c[t * hd + i] + rot * s[t * hd + i];
                    const double mag = fabs(x1 * c[t * hd + i]) + fabs(rot * s[t * hd + i]);
                    const double g = tmat_get(&want, t, b + i);
                    const double tol =
                        dt == HRMT_BF16 ? fabs(y) / 128.0 + mag * 4 * U24 : mag * 4 * U24;
                    if (!(fabs(g - y) <= tol) && bad++ < 3)
                        fprintf(stderr, "rope f64 [%zu,%zu,%zu] %.9g vs %.9g\n", t, h, i, g, y);
                }
        cr_expect_eq(bad, 0, "scalar rope vs float64");
    }
    free(c), free(s);
    tmat_free(&x), tmat_free(&got), tmat_free(&want);
}

Test(ops_parity, rope) {
    hrmt_test_rng rng = {16};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++) {
                const size_t hd = COLS[c] + (COLS[c] & 1); /* head_dim is even */
                rope_case(DTS[d], ROWS[r] + 1, 2, hd, (r & 1) ? 2 * hd : 0, 0, &rng);
            }
    for (size_t d = 0; d < 2; d++) rope_case(DTS[d], 3, 2, 64, 0, 1, &rng);
}

Test(ops_parity, rope_batched) {
    /* [batch, tokens, heads, hd] must equal rope on each batch entry alone:
     * the batch index must not shift the cos/sin rows */
    hrmt_test_rng rng = {17};
    enum { B = 3, T = 5, H = 2, D = 16 };
    float *x = malloc(B * T * H * D * sizeof *x), *one = malloc(T * H * D * sizeof *one);
    for (size_t i = 0; i < B * T * H * D; i++) x[i] = hrmt_test_uniform(&rng);
    float c[T * D], s[T * D];
    for (size_t i = 0; i < T * D; i++) c[i] = cosf(0.1f * (float)i), s[i] = sinf(0.1f * (float)i);
    hrmt_tensor tx, tc, ts, t1;
    const size_t xs[4] = {B, T, H, D}, x1s[3] = {T, H, D}, cs[2] = {T, D};
    hrmt_tensor_init(&tc, c, HRMT_F32, 2, cs);
    hrmt_tensor_init(&ts, s, HRMT_F32, 2, cs);
    hrmt_tensor_init(&tx, x, HRMT_F32, 4, xs);
    float *orig = malloc(B * T * H * D * sizeof *orig);
    memcpy(orig, x, B * T * H * D * sizeof *x);
    expect_ok(hrmt_rope(g_ctx, &tx, &tc, &ts), "rope 4d");
    for (size_t b = 0; b < B; b++) {
        memcpy(one, orig + b * T * H * D, T * H * D * sizeof *one);
        hrmt_tensor_init(&t1, one, HRMT_F32, 3, x1s);
        expect_ok(hrmt_rope(g_ctx, &t1, &tc, &ts), "rope 3d");
        cr_expect(memcmp(one, x + b * T * H * D, T * H * D * sizeof *one) == 0,
                  "batch %zu of the 4-d rope differs from rope on it alone", b);
    }
    free(x), free(one), free(orig);
}

/* ---- embedding -------------------------------------------------------------- */

Test(ops_parity, embedding) {
    hrmt_test_rng rng = {18};
    for (size_t c = 0; c < NCOLS; c++)
        for (int tdi = 0; tdi < 2; tdi++)
            for (int odi = 0; odi < 2; odi++) {
                const size_t vocab = 37, n = 19, cols = COLS[c];
                tmat tab = tmat_new(DTS[tdi], vocab, cols, cols + (size_t)tdi);
                tmat_fill(&tab, &rng, 3.0f);
                if (tdi == 0) tmat_set(&tab, 5, 0, NAN);
                tmat o = tmat_new(DTS[odi], n, cols, cols), w = tmat_new(DTS[odi], n, cols, cols);
                int32_t ids[19];
                for (size_t i = 0; i < n; i++)
                    ids[i] = (int32_t)((hrmt_test_uniform(&rng) + 1.0f) * 18.4f);
                ids[0] = 5;
                ids[1] = 36;
                hrmt_tensor tt = tmat_tensor(&tab), ti, to = tmat_tensor(&o);
                hrmt_tensor_init(&ti, ids, HRMT_I32, 1, &n);
                expect_ok(hrmt_embedding(g_ctx, &tt, &ti, &to), "hrmt_embedding");
                g_ref->embedding[DTS[tdi]][DTS[odi]](n, cols, tab.p, tab.ld, ids, w.p, cols);
                check(&o, &w, 0.0, 0, "embedding", DTS[odi], n, cols, 0);
                size_t bad = 0; /* independent: gather + reference rounding */
                for (size_t i = 0; i < n; i++)
                    for (size_t j = 0; j < cols; j++) {
                        const float v = tmat_get(&tab, (size_t)ids[i], j);
                        const float want = DTS[odi] == HRMT_BF16 ? ref_round_bf16(v) : v;
                        const float got = tmat_get(&w, i, j);
                        bad += !(got == want || (isnan(got) && isnan(want)));
                    }
                cr_expect_eq(bad, 0, "scalar embedding vs gather");
                tmat_free(&tab), tmat_free(&o), tmat_free(&w);
            }
}

/* ---- copy and convert ------------------------------------------------------- */

Test(ops_parity, copy_convert) {
    hrmt_test_rng rng = {19};
    for (size_t c = 0; c < NCOLS; c++)
        for (size_t r = 0; r < NROWS; r++) {
            const size_t rows = ROWS[r] * 7, cols = COLS[c], ld = pad_ld(cols, r);
            tmat f = tmat_new(HRMT_F32, rows, cols, ld);
            tmat_fill(&f, &rng, 1e3f);
            inject(&f);
            tmat b = tmat_new(HRMT_BF16, rows, cols, ld), bw = tmat_new(HRMT_BF16, rows, cols, ld);
            tmat f2 = tmat_new(HRMT_F32, rows, cols, ld), fc = tmat_new(HRMT_F32, rows, cols, ld);
            hrmt_tensor tf = tmat_tensor(&f), tb = tmat_tensor(&b), tf2 = tmat_tensor(&f2),
                        tfc = tmat_tensor(&fc);
            expect_ok(hrmt_convert(g_ctx, &tf, &tb), "f32->bf16");
            for (size_t i = 0; i < rows; i++)
                g_ref->cvt_f32_bf16((uint16_t *)bw.p + i * ld, (const float *)f.p + i * ld, cols);
            check(&b, &bw, 0.0, 0, "convert f32->bf16", HRMT_BF16, rows, cols, 1);
            expect_ok(hrmt_convert(g_ctx, &tb, &tf2), "bf16->f32");
            size_t bad = 0;
            for (size_t i = 0; i < rows; i++)
                for (size_t j = 0; j < cols; j++) {
                    const uint16_t hb = ((const uint16_t *)b.p)[i * ld + j];
                    const float back = tmat_get(&f2, i, j);
                    bad += ref_bits(back) != ((uint32_t)hb << 16);
                    bad += hb != ref_f32_to_bf16(tmat_get(&f, i, j));
                }
            cr_expect_eq(bad, 0, "convert vs reference rounding: %zu", bad);
            expect_ok(hrmt_copy(g_ctx, &tf, &tfc), "copy");
            for (size_t i = 0; i < rows; i++)
                cr_expect(memcmp((float *)fc.p + i * ld, (float *)f.p + i * ld, cols * 4) == 0,
                          "copy row %zu", i);
            cr_expect_eq(tmat_guard_damage(&fc), 0);
            tmat_free(&f), tmat_free(&b), tmat_free(&bw), tmat_free(&f2), tmat_free(&fc);
        }
}

/* ---- thread count never changes a row's result ------------------------------ */

Test(ops_parity, threads_do_not_change_bits) {
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = 1;
    hrmt_context *one = hrmt_test_context_opts(&o);
    hrmt_test_rng rng = {20};
    const size_t rows = 67, cols = 4096;
    for (size_t d = 0; d < 2; d++) {
        tmat x = tmat_new(DTS[d], rows, cols, cols), r = tmat_new(DTS[d], rows, cols, cols);
        tmat a = tmat_new(DTS[d], rows, cols, cols), b = tmat_new(DTS[d], rows, cols, cols);
        tmat_fill(&x, &rng, 2.0f);
        tmat_fill(&r, &rng, 2.0f);
        hrmt_tensor tx = tmat_tensor(&x), tr = tmat_tensor(&r), ta = tmat_tensor(&a),
                    tb = tmat_tensor(&b);
        expect_ok(hrmt_residual_rmsnorm(g_ctx, &tx, &tr, 1e-5f, HRMT_VARIANT_SRAM, &ta), "many");
        cr_assert_eq(hrmt_residual_rmsnorm(one, &tx, &tr, 1e-5f, HRMT_VARIANT_SRAM, &tb), HRMT_OK);
        cr_expect(memcmp(a.p, b.p, rows * cols * a.es) == 0, "residual_rmsnorm depends on threads");
        /* a row computed alone equals the same row computed in a batch */
        hrmt_tensor t1x = tx, t1r = tr, t1b = tb;
        t1x.shape[0] = t1r.shape[0] = t1b.shape[0] = 1;
        t1x.data = (char *)x.p + 33 * cols * x.es;
        t1r.data = (char *)r.p + 33 * cols * x.es;
        cr_assert_eq(hrmt_residual_rmsnorm(one, &t1x, &t1r, 1e-5f, HRMT_VARIANT_DRAM, &t1b),
                     HRMT_OK);
        cr_expect(memcmp((char *)a.p + 33 * cols * a.es, b.p, cols * a.es) == 0,
                  "row depends on batch");
        tmat_free(&x), tmat_free(&r), tmat_free(&a), tmat_free(&b);
    }
    hrmt_context_destroy(one);
}

/* Large row sets go to threads in dynamically handed-out chunks (core/ops_util.c):
 * a row count that is not a multiple of the chunk, more threads than cores,
 * and every row must still come out exactly as one thread computes it. */
Test(ops_parity, dynamic_chunks_cover_every_row) {
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = 1;
    hrmt_context *one = hrmt_test_context_opts(&o);
    o.num_threads = 3;
    hrmt_context *three = hrmt_test_context_opts(&o);
    hrmt_test_rng rng = {21};
    /* 12 kB per F32 row: ~43 rows per 512 KiB chunk, 48 chunks >= 8 per thread */
    const size_t rows = 2053, inter = 1000;
    for (size_t d = 0; d < 2; d++) {
        tmat gu = tmat_new(DTS[d], rows, 2 * inter, 2 * inter);
        tmat a = tmat_new(DTS[d], rows, inter, inter), b = tmat_new(DTS[d], rows, inter, inter);
        tmat_fill(&gu, &rng, 3.0f);
        hrmt_tensor tg = tmat_tensor(&gu), ta = tmat_tensor(&a), tb = tmat_tensor(&b);
        cr_assert_eq(hrmt_swiglu(three, &tg, &ta), HRMT_OK, "%s", hrmt_last_error(three));
        cr_assert_eq(hrmt_swiglu(one, &tg, &tb), HRMT_OK, "%s", hrmt_last_error(one));
        size_t bad_rows = 0;
        for (size_t r = 0; r < rows; r++)
            bad_rows += memcmp((char *)a.p + r * inter * a.es, (char *)b.p + r * inter * b.es,
                               inter * a.es) != 0;
        cr_expect_eq(bad_rows, 0, "%s swiglu: %zu rows differ between 3 threads and 1",
                     hrmt_dtype_name(DTS[d]), bad_rows);
        cr_expect_eq(tmat_guard_damage(&a), 0);
        tmat_free(&gu), tmat_free(&a), tmat_free(&b);
    }
    hrmt_context_destroy(three);
    hrmt_context_destroy(one);
}

/* ---- supports_op ------------------------------------------------------------ */

Test(ops_parity, supports_every_row_op) {
    static const hrmt_op ops[] = {
        HRMT_OP_COPY,   HRMT_OP_CONVERT, HRMT_OP_ADD,  HRMT_OP_RMSNORM,  HRMT_OP_RESIDUAL_RMSNORM,
        HRMT_OP_SWIGLU, HRMT_OP_SOFTMAX, HRMT_OP_ROPE, HRMT_OP_EMBEDDING};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (size_t d = 0; d < 2; d++)
            cr_expect(hrmt_supports(g_ctx, ops[i], DTS[d]), "%s %s", hrmt_op_name(ops[i]),
                      hrmt_dtype_name(DTS[d]));
    cr_expect(hrmt_supports(g_ctx, HRMT_OP_ENGRAM_GATE_FWD, HRMT_BF16));
    cr_expect(hrmt_supports(g_ctx, HRMT_OP_ENGRAM_GATE_BWD, HRMT_BF16));
    cr_expect(!hrmt_supports(g_ctx, HRMT_OP_ENGRAM_GATE_FWD, HRMT_F32));
    cr_expect(!hrmt_supports(g_ctx, HRMT_OP_RMSNORM, HRMT_I32));
    cr_expect(hrmt_supports(g_ctx, HRMT_OP_COPY, HRMT_I32));
}

/* ---- in place: out aliasing an input gives the out-of-place bits ------------ */

Test(ops_parity, in_place_matches_out_of_place) {
    hrmt_test_rng rng = {21};
    const size_t rows = 5, cols = 4099;
    for (size_t d = 0; d < 2; d++) {
        tmat x = tmat_new(DTS[d], rows, cols, cols), r = tmat_new(DTS[d], rows, cols, cols);
        tmat o = tmat_new(DTS[d], rows, cols, cols), y = tmat_new(DTS[d], rows, cols, cols);
        tmat_fill(&x, &rng, 2.0f);
        tmat_fill(&r, &rng, 2.0f);
        hrmt_tensor tx = tmat_tensor(&x), tr = tmat_tensor(&r), to = tmat_tensor(&o),
                    ty = tmat_tensor(&y);
        for (int variant = 0; variant < 2; variant++) {
            tmat_copy(&y, &x);
            expect_ok(hrmt_residual_rmsnorm(g_ctx, &tx, &tr, 1e-5f, (hrmt_variant)variant, &to),
                      "out");
            expect_ok(hrmt_residual_rmsnorm(g_ctx, &ty, &tr, 1e-5f, (hrmt_variant)variant, &ty),
                      "in place");
            cr_expect(memcmp(o.p, y.p, rows * cols * o.es) == 0,
                      "residual_rmsnorm in place (%s, %d)", hrmt_dtype_name(DTS[d]), variant);
        }
        tmat_copy(&y, &x);
        expect_ok(hrmt_rmsnorm(g_ctx, &tx, NULL, 1e-5f, &to), "out");
        expect_ok(hrmt_rmsnorm(g_ctx, &ty, NULL, 1e-5f, &ty), "in place");
        cr_expect(memcmp(o.p, y.p, rows * cols * o.es) == 0, "rmsnorm in place");
        tmat_copy(&y, &x);
        expect_ok(hrmt_softmax(g_ctx, &tx, 0.5f, &to), "out");
        expect_ok(hrmt_softmax(g_ctx, &ty, 0.5f, &ty), "in place");
        cr_expect(memcmp(o.p, y.p, rows * cols * o.es) == 0, "softmax in place");
        tmat_copy(&y, &x);
        expect_ok(hrmt_add(g_ctx, &tx, &tr, &to), "out");
        expect_ok(hrmt_add(g_ctx, &ty, &tr, &ty), "in place");
        cr_expect(memcmp(o.p, y.p, rows * cols * o.es) == 0, "add in place");
        tmat_free(&x), tmat_free(&r), tmat_free(&o), tmat_free(&y);
    }
}
