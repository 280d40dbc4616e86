/* Engram gate forward/backward: TileKernels' golden vectors (every shape),
 * parity of the context's ISA with the scalar table, thread-count
 * independence of the weight gradient, and a float64 finite-difference
 * check of the hand-derived backward. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "support/ref_bf16.h"
#include "support/st_reader.h"
#include "support/test_common.h"

static hrmt_context *g_ctx;
static void setup(void) { g_ctx = hrmt_test_context(); }
static void teardown(void) { hrmt_context_destroy(g_ctx); }
TestSuite(engram, .init = setup, .fini = teardown, .timeout = 120);

#define OK(expr) cr_assert_eq((expr), HRMT_OK, "%s: %s", #expr, hrmt_last_error(g_ctx))

/* An owned, aligned copy of a tensor (file data may be unaligned). */
typedef struct {
    hrmt_tensor t;
    size_t n;
} buf;

static buf buf_new(hrmt_dtype dt, int ndim, const size_t *shape) {
    buf b;
    b.n = 1;
    for (int i = 0; i < ndim; i++) b.n *= shape[i];
    void *p = calloc(b.n, hrmt_dtype_size(dt));
    cr_assert_not_null(p);
    cr_assert_eq(hrmt_tensor_init(&b.t, p, dt, ndim, shape), HRMT_OK);
    return b;
}
static void buf_free(buf *b) { free(b->t.data); }
static float buf_get(const buf *b, size_t i) {
    return b->t.dtype == HRMT_BF16 ? ref_bf16_to_f32(((const uint16_t *)b->t.data)[i])
                                   : ((const float *)b->t.data)[i];
}
static void buf_set(buf *b, size_t i, float v) {
    if (b->t.dtype == HRMT_BF16)
        ((uint16_t *)b->t.data)[i] = ref_f32_to_bf16(v);
    else
        ((float *)b->t.data)[i] = v;
}

static buf load(const st_file *f, const char *prefix, const char *name) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", prefix, name);
    st_tensor st;
    cr_assert_eq(st_get(f, key, &st), 0, "golden tensor %s", key);
    buf b = buf_new(st.dtype, st.ndim, st.shape);
    memcpy(b.t.data, st.data, st.nbytes);
    return b;
}

/* assert_close(rtol = atol = tol) on the values. */
static size_t close_count(const buf *got, const buf *want, double tol, const char *what) {
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < want->n; i++) {
        const double g = buf_get(got, i), w = buf_get(want, i);
        const double err = fabs(g - w) / (1.0 + fabs(w));
        if (err > worst) worst = err;
        if (!(fabs(g - w) <= tol * (1.0 + fabs(w))) && bad++ < 3)
            fprintf(stderr, "%s[%zu]: got %.8g want %.8g\n", what, i, g, w);
    }
    cr_log_info("%s: worst |got-want|/(1+|want|) = %.3g (tol %.3g)", what, worst, tol);
    return bad;
}

/* An F32 result against a BF16 golden value at tolerance tol relative to
 * max(|value|, max|golden|): the golden value must be the bf16 rounding of
 * some number that close to ours (bf16 alone cannot resolve 1e-4). The
 * tensor-wide floor is needed because these gradients are sums over tokens
 * that cancel: an element far below the tensor's scale carries the absolute
 * rounding error of the terms, not a small relative one. */
static size_t bf16_golden_count(const buf *got, const buf *want, double tol, const char *what) {
    size_t bad = 0;
    double scale = 0, worst = 0;
    for (size_t i = 0; i < want->n; i++) scale = fmax(scale, fabs(buf_get(want, i)));
    for (size_t i = 0; i < want->n; i++) {
        const float g = buf_get(got, i);
        const uint16_t w = ((const uint16_t *)want->t.data)[i];
        const float d = (float)(tol * (fabs(g) + scale));
        const int64_t lo = ref_ord_bf16(ref_f32_to_bf16(g - d)),
                      hi = ref_ord_bf16(ref_f32_to_bf16(g + d));
        const int64_t ow = ref_ord_bf16(w);
        worst = fmax(worst, fabs(g - ref_bf16_to_f32(w)) / (fabs(g) + scale));
        if (!(lo <= ow && ow <= hi) && bad++ < 3)
            fprintf(stderr, "%s[%zu]: ours %.8g, golden %.8g\n", what, i, g, ref_bf16_to_f32(w));
    }
    cr_log_info("%s: worst |ours-golden|/(|ours|+max|golden|) = %.3g incl. bf16 rounding", what,
                worst);
    return bad;
}

static void golden_shape(const st_file *f, const char *prefix, float eps, float clamp) {
    buf x = load(f, prefix, "x"), kv = load(f, prefix, "kv"), wh = load(f, prefix, "weight_hidden");
    buf we = load(f, prefix, "weight_embed"), go = load(f, prefix, "grad_out");
    buf g_out = load(f, prefix, "out"), g_dot = load(f, prefix, "dot"),
        g_gate = load(f, prefix, "gate_score");
    buf g_rx = load(f, prefix, "rstd_x"), g_rk = load(f, prefix, "rstd_k");
    buf g_gx = load(f, prefix, "grad_x"), g_gkv = load(f, prefix, "grad_kv");
    buf g_gwh = load(f, prefix, "grad_weight_hidden"), g_gwe = load(f, prefix, "grad_weight_embed");
    const size_t T = x.t.shape[0], hc = x.t.shape[1], H = x.t.shape[2];
    const size_t ws[2] = {hc, H}, ph[2] = {T, hc};
    buf wf = buf_new(HRMT_F32, 2, ws);
    OK(hrmt_engram_fuse_weight(g_ctx, &wh.t, &we.t, &wf.t));
    for (size_t i = 0; i < wf.n; i++)
        cr_assert_eq(buf_get(&wf, i), buf_get(&wh, i) * buf_get(&we, i), "fused weight [%zu]", i);

    buf out = buf_new(HRMT_BF16, 3, x.t.shape), dot = buf_new(HRMT_F32, 2, ph);
    buf gate = buf_new(HRMT_F32, 2, ph), rx = buf_new(HRMT_F32, 2, ph),
        rk = buf_new(HRMT_F32, 2, ph);
    hrmt_engram_fwd_out o = {&out.t, &dot.t, &gate.t, &rx.t, &rk.t};
    OK(hrmt_engram_gate_fwd(g_ctx, &x.t, &kv.t, &wf.t, eps, clamp, &o));
    char what[96];
#define NAME(s) (snprintf(what, sizeof what, "%s %s", prefix, s), what)
    cr_expect_eq(close_count(&out, &g_out, 8e-3, NAME("out")), 0, "%s", what);
    cr_expect_eq(close_count(&dot, &g_dot, 2e-4, NAME("dot")), 0, "%s", what);
    cr_expect_eq(close_count(&gate, &g_gate, 1e-4, NAME("gate")), 0, "%s", what);
    cr_expect_eq(close_count(&rx, &g_rx, 1e-5, NAME("rstd_x")), 0, "%s", what);
    cr_expect_eq(close_count(&rk, &g_rk, 1e-5, NAME("rstd_k")), 0, "%s", what);

    /* the forward without saved values writes the same out */
    buf out2 = buf_new(HRMT_BF16, 3, x.t.shape);
    hrmt_engram_fwd_out o2 = {&out2.t, NULL, NULL, NULL, NULL};
    OK(hrmt_engram_gate_fwd(g_ctx, &x.t, &kv.t, &wf.t, eps, clamp, &o2));
    cr_expect(memcmp(out.t.data, out2.t.data, out.n * 2) == 0, "%s: out depends on saving", prefix);

    /* backward from the reference's saved values, as TileKernels tests it */
    buf gx = buf_new(HRMT_BF16, 3, x.t.shape), gkv = buf_new(HRMT_BF16, 3, kv.t.shape);
    buf gwf = buf_new(HRMT_F32, 2, ws), gwh = buf_new(HRMT_F32, 2, ws),
        gwe = buf_new(HRMT_F32, 2, ws);
    OK(hrmt_engram_gate_bwd(g_ctx, &go.t, &x.t, &kv.t, &wf.t, &g_dot.t, &g_gate.t, &g_rx.t, &g_rk.t,
                            clamp, &gx.t, &gkv.t, &gwf.t));
    OK(hrmt_engram_split_weight_grad(g_ctx, &gwf.t, &wh.t, &we.t, &gwh.t, &gwe.t));
    cr_expect_eq(close_count(&gx, &g_gx, 8e-3, NAME("grad_x")), 0, "%s", what);
    cr_expect_eq(close_count(&gkv, &g_gkv, 7e-3, NAME("grad_kv")), 0, "%s", what);
    cr_expect_eq(bf16_golden_count(&gwh, &g_gwh, 1e-4, NAME("grad_weight_hidden")), 0, "%s", what);
    cr_expect_eq(bf16_golden_count(&gwe, &g_gwe, 1e-4, NAME("grad_weight_embed")), 0, "%s", what);
#undef NAME
    buf *all[] = {&x,    &kv,   &wh,    &we,    &go,    &g_out, &g_dot, &g_gate, &g_rx,
                  &g_rk, &g_gx, &g_gkv, &g_gwh, &g_gwe, &wf,    &out,   &dot,    &gate,
                  &rx,   &rk,   &out2,  &gx,    &gkv,   &gwf,   &gwh,   &gwe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) buf_free(all[i]);
}

Test(engram, golden_every_shape) {
    st_file f;
    cr_assert_eq(st_open(hrmt_test_data("golden/engram/engram-gate.safetensors"), &f), 0);
    const char *shapes = st_meta(&f, "shapes"), *eps_s = st_meta(&f, "eps"),
               *cl_s = st_meta(&f, "clamp_value");
    cr_assert(shapes && eps_s && cl_s, "golden metadata");
    const float eps = strtof(eps_s, NULL), clamp = strtof(cl_s, NULL);
    char list[256];
    snprintf(list, sizeof list, "%s", shapes);
    int n = 0;
    for (char *save = NULL, *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save), n++)
        golden_shape(&f, s, eps, clamp);
    cr_expect_eq(n, 5, "the README lists five shapes");
    st_close(&f);
}

/* ---- random inputs ---------------------------------------------------------- */

typedef struct {
    size_t T, hc, H;
    buf x, kv, wf, go;
} problem;

static problem problem_new(size_t T, size_t hc, size_t H, uint64_t seed) {
    problem p;
    memset(&p, 0, sizeof p);
    p.T = T, p.hc = hc, p.H = H;
    const size_t xs[3] = {T, hc, H}, kvs[3] = {T, hc + 1, H}, ws[2] = {hc, H};
    p.x = buf_new(HRMT_BF16, 3, xs);
    p.kv = buf_new(HRMT_BF16, 3, kvs);
    p.wf = buf_new(HRMT_F32, 2, ws);
    p.go = buf_new(HRMT_BF16, 3, xs);
    hrmt_test_rng r = {seed};
    for (size_t i = 0; i < p.x.n; i++) buf_set(&p.x, i, 2.0f * hrmt_test_uniform(&r));
    for (size_t i = 0; i < p.kv.n; i++) buf_set(&p.kv, i, 2.0f * hrmt_test_uniform(&r));
    for (size_t i = 0; i < p.wf.n; i++) buf_set(&p.wf, i, 1.0f + hrmt_test_uniform(&r));
    for (size_t i = 0; i < p.go.n; i++) buf_set(&p.go, i, hrmt_test_uniform(&r));
    return p;
}
static void problem_free(problem *p) {
    buf_free(&p->x), buf_free(&p->kv), buf_free(&p->wf), buf_free(&p->go);
}

/* Forward and backward of one table (kernel called directly, one range). */
typedef struct {
    buf out, dot, gate, rx, rk, gx, gkv, gw;
} results;

static results run_table(const hrmt_rowops *k, const problem *p) {
    const size_t xs[3] = {p->T, p->hc, p->H}, kvs[3] = {p->T, p->hc + 1, p->H};
    const size_t ph[2] = {p->T, p->hc}, ws[2] = {p->hc, p->H};
    results r = {buf_new(HRMT_BF16, 3, xs),  buf_new(HRMT_F32, 2, ph), buf_new(HRMT_F32, 2, ph),
                 buf_new(HRMT_F32, 2, ph),   buf_new(HRMT_F32, 2, ph), buf_new(HRMT_BF16, 3, xs),
                 buf_new(HRMT_BF16, 3, kvs), buf_new(HRMT_F32, 2, ws)};
    k->engram_fwd(p->T, p->hc, p->H, p->x.t.data, p->kv.t.data, p->wf.t.data, 1e-20f, 1e-6f,
                  r.out.t.data, r.dot.t.data, r.gate.t.data, r.rx.t.data, r.rk.t.data, 0);
    k->engram_bwd(p->T, p->hc, p->H, p->go.t.data, p->x.t.data, p->kv.t.data, p->wf.t.data,
                  r.dot.t.data, r.gate.t.data, r.rx.t.data, r.rk.t.data, 1e-6f, r.gx.t.data,
                  r.gkv.t.data, r.gw.t.data);
    return r;
}
static void results_free(results *r) {
    buf *all[] = {&r->out, &r->dot, &r->gate, &r->rx, &r->rk, &r->gx, &r->gkv, &r->gw};
    for (size_t i = 0; i < 8; i++) buf_free(all[i]);
}

/* BF16 within 1 ulp plus 1e-5 of the tensor's scale: a row sum that differs
 * in its last bits (gate, dL/dg) moves results that cancel (x + g*v) by more
 * than an ulp of the small result. */
static size_t ulp_count(const buf *a, const buf *b, const char *what) {
    size_t bad = 0;
    double scale = 0;
    for (size_t i = 0; i < b->n; i++) scale = fmax(scale, fabs(buf_get(b, i)));
    for (size_t i = 0; i < a->n; i++) {
        const uint16_t x = ((const uint16_t *)a->t.data)[i], y = ((const uint16_t *)b->t.data)[i];
        const int ok = llabs(ref_ord_bf16(x) - ref_ord_bf16(y)) <= 1 ||
                       fabs(ref_bf16_to_f32(x) - ref_bf16_to_f32(y)) <= 1e-5 * scale;
        if (!ok && bad++ < 3) fprintf(stderr, "%s[%zu]: %04x vs %04x\n", what, i, x, y);
    }
    return bad;
}
static size_t rel_count(const buf *a, const buf *b, double rel, double abs, const char *what) {
    size_t bad = 0;
    for (size_t i = 0; i < a->n; i++) {
        const double x = buf_get(a, i), y = buf_get(b, i);
        if (!(fabs(x - y) <= rel * fabs(y) + abs) && bad++ < 3)
            fprintf(stderr, "%s[%zu]: %.9g vs %.9g\n", what, i, x, y);
    }
    return bad;
}

Test(engram, isa_matches_scalar) {
    const hrmt_rowops *ref = &hrmt_backend_cpu(HRMT_ISA_SCALAR)->rowops;
    const hrmt_rowops *k = &hrmt_backend_cpu(hrmt_context_isa(g_ctx))->rowops;
    static const size_t shapes[][3] = {
        {3, 3, 17}, {5, 2, 513}, {2, 4, 4096}, {4, 1, 7}, {1, 4, 7168}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        problem p = problem_new(shapes[s][0], shapes[s][1], shapes[s][2], 100 + s);
        results a = run_table(k, &p), b = run_table(ref, &p);
        {
            /* streaming stores for out give the same bits */
            const size_t xs[3] = {p.T, p.hc, p.H};
            buf o2 = buf_new(HRMT_BF16, 3, xs);
            k->engram_fwd(p.T, p.hc, p.H, p.x.t.data, p.kv.t.data, p.wf.t.data, 1e-20f, 1e-6f,
                          o2.t.data, NULL, NULL, NULL, NULL, 1);
            cr_expect(memcmp(o2.t.data, a.out.t.data, o2.n * 2) == 0, "engram nt differs H=%zu",
                      p.H);
            buf_free(&o2);
        }
        const double red = 1e-6 + (double)p.H / 16777216.0;
        double gmax = 0, dmax = 0;
        for (size_t i = 0; i < b.gw.n; i++) gmax = fmax(gmax, fabs(buf_get(&b.gw, i)));
        for (size_t i = 0; i < b.dot.n; i++) dmax = fmax(dmax, fabs(buf_get(&b.dot, i)));
        cr_expect_eq(ulp_count(&a.out, &b.out, "out"), 0, "out H=%zu", p.H);
        cr_expect_eq(rel_count(&a.dot, &b.dot, red, red * dmax, "dot"), 0, "dot H=%zu", p.H);
        cr_expect_eq(rel_count(&a.rx, &b.rx, red, 0, "rstd_x"), 0, "rstd_x H=%zu", p.H);
        cr_expect_eq(rel_count(&a.rk, &b.rk, red, 0, "rstd_k"), 0, "rstd_k H=%zu", p.H);
        cr_expect_eq(rel_count(&a.gate, &b.gate, 1e-5, 0, "gate"), 0, "gate H=%zu", p.H);
        cr_expect_eq(ulp_count(&a.gx, &b.gx, "grad_x"), 0, "grad_x H=%zu", p.H);
        cr_expect_eq(ulp_count(&a.gkv, &b.gkv, "grad_kv"), 0, "grad_kv H=%zu", p.H);
        cr_expect_eq(rel_count(&a.gw, &b.gw, 1e-4, 1e-5 * gmax, "grad_w"), 0, "grad_w H=%zu", p.H);
        results_free(&a), results_free(&b);
        problem_free(&p);
    }
}

Test(engram, weight_grad_independent_of_threads) {
    problem p = problem_new(203, 2, 96, 7);
    const size_t xs[3] = {p.T, p.hc, p.H}, kvs[3] = {p.T, p.hc + 1, p.H}, ph[2] = {p.T, p.hc},
                 ws[2] = {p.hc, p.H};
    buf out = buf_new(HRMT_BF16, 3, xs), dot = buf_new(HRMT_F32, 2, ph),
        gate = buf_new(HRMT_F32, 2, ph);
    buf rx = buf_new(HRMT_F32, 2, ph), rk = buf_new(HRMT_F32, 2, ph);
    hrmt_engram_fwd_out o = {&out.t, &dot.t, &gate.t, &rx.t, &rk.t};
    OK(hrmt_engram_gate_fwd(g_ctx, &p.x.t, &p.kv.t, &p.wf.t, 1e-20f, 1e-6f, &o));
    buf gw[3];
    for (int nt = 1; nt <= 3; nt++) {
        hrmt_context_options opt = hrmt_context_default_options();
        opt.num_threads = nt;
        hrmt_context *c = hrmt_test_context_opts(&opt);
        buf gx = buf_new(HRMT_BF16, 3, xs), gkv = buf_new(HRMT_BF16, 3, kvs);
        gw[nt - 1] = buf_new(HRMT_F32, 2, ws);
        cr_assert_eq(hrmt_engram_gate_bwd(c, &p.go.t, &p.x.t, &p.kv.t, &p.wf.t, &dot.t, &gate.t,
                                          &rx.t, &rk.t, 1e-6f, &gx.t, &gkv.t, &gw[nt - 1].t),
                     HRMT_OK);
        buf_free(&gx), buf_free(&gkv);
        hrmt_context_destroy(c);
    }
    cr_expect(memcmp(gw[0].t.data, gw[1].t.data, gw[0].n * 4) == 0, "1 vs 2 threads");
    cr_expect(memcmp(gw[0].t.data, gw[2].t.data, gw[0].n * 4) == 0, "1 vs 3 threads");
    for (int i = 0; i < 3; i++) buf_free(&gw[i]);
    buf_free(&out), buf_free(&dot), buf_free(&gate), buf_free(&rx), buf_free(&rk);
    problem_free(&p);
}

/* ---- float64 finite differences --------------------------------------------- */

/* L = sum(go * out) with out = x + g * v in float64 (no bf16 rounding). */
static double loss64(size_t T, size_t hc, size_t H, const double *x, const double *kv,
                     const double *w, const double *go) {
    double L = 0;
    const double scale = 1.0 / sqrt((double)H);
    for (size_t t = 0; t < T; t++)
        for (size_t h = 0; h < hc; h++) {
            const double *xr = x + (t * hc + h) * H, *kr = kv + (t * (hc + 1) + h) * H;
            const double *v = kv + (t * (hc + 1) + hc) * H, *wr = w + h * H;
            double sx = 0, sk = 0, raw = 0;
            for (size_t j = 0; j < H; j++)
                sx += xr[j] * xr[j], sk += kr[j] * kr[j], raw += xr[j] * wr[j] * kr[j];
            const double d =
                raw / sqrt(sx / (double)H + 1e-20) / sqrt(sk / (double)H + 1e-20) * scale;
            const double s = sqrt(fmax(fabs(d), 1e-6)) * (d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0);
            const double g = 1.0 / (1.0 + exp(-s));
            for (size_t j = 0; j < H; j++) L += go[(t * hc + h) * H + j] * (xr[j] + g * v[j]);
        }
    return L;
}

static double fd(double *p, size_t i, size_t T, size_t hc, size_t H, const double *x,
                 const double *kv, const double *w, const double *go) {
    const double keep = p[i], step = 1e-6 * fmax(1.0, fabs(keep));
    p[i] = keep + step;
    const double up = loss64(T, hc, H, x, kv, w, go);
    p[i] = keep - step;
    const double dn = loss64(T, hc, H, x, kv, w, go);
    p[i] = keep;
    return (up - dn) / (2 * step);
}

Test(engram, backward_matches_float64_finite_differences) {
    problem p = problem_new(3, 2, 24, 55);
    const size_t T = p.T, hc = p.hc, H = p.H;
    double *x = malloc(p.x.n * 8), *kv = malloc(p.kv.n * 8), *w = malloc(p.wf.n * 8),
           *go = malloc(p.go.n * 8);
    for (size_t i = 0; i < p.x.n; i++) x[i] = buf_get(&p.x, i);
    for (size_t i = 0; i < p.kv.n; i++) kv[i] = buf_get(&p.kv, i);
    for (size_t i = 0; i < p.wf.n; i++) w[i] = buf_get(&p.wf, i);
    for (size_t i = 0; i < p.go.n; i++) go[i] = buf_get(&p.go, i);
    const size_t xs[3] = {T, hc, H}, kvs[3] = {T, hc + 1, H}, ph[2] = {T, hc}, ws[2] = {hc, H};
    buf out = buf_new(HRMT_BF16, 3, xs), dot = buf_new(HRMT_F32, 2, ph),
        gate = buf_new(HRMT_F32, 2, ph);
    buf rx = buf_new(HRMT_F32, 2, ph), rk = buf_new(HRMT_F32, 2, ph);
    buf gx = buf_new(HRMT_BF16, 3, xs), gkv = buf_new(HRMT_BF16, 3, kvs),
        gw = buf_new(HRMT_F32, 2, ws);
    hrmt_engram_fwd_out o = {&out.t, &dot.t, &gate.t, &rx.t, &rk.t};
    OK(hrmt_engram_gate_fwd(g_ctx, &p.x.t, &p.kv.t, &p.wf.t, 1e-20f, 1e-6f, &o));
    OK(hrmt_engram_gate_bwd(g_ctx, &p.go.t, &p.x.t, &p.kv.t, &p.wf.t, &dot.t, &gate.t, &rx.t, &rk.t,
                            1e-6f, &gx.t, &gkv.t, &gw.t));
    /* grad_x and grad_kv are BF16 (2^-8 relative); grad_w is F32 */
    size_t bad = 0;
    for (size_t i = 0; i < p.x.n; i++) {
        const double want = fd(x, i, T, hc, H, x, kv, w, go), got = buf_get(&gx, i);
        if (!(fabs(got - want) <= fabs(want) / 128.0 + 1e-4) && bad++ < 3)
            fprintf(stderr, "grad_x[%zu] %.6g vs fd %.6g\n", i, got, want);
    }
    for (size_t i = 0; i < p.kv.n; i++) {
        const double want = fd(kv, i, T, hc, H, x, kv, w, go), got = buf_get(&gkv, i);
        if (!(fabs(got - want) <= fabs(want) / 128.0 + 1e-4) && bad++ < 6)
            fprintf(stderr, "grad_kv[%zu] %.6g vs fd %.6g\n", i, got, want);
    }
    for (size_t i = 0; i < p.wf.n; i++) {
        const double want = fd(w, i, T, hc, H, x, kv, w, go), got = buf_get(&gw, i);
        if (!(fabs(got - want) <= 1e-4 * fabs(want) + 1e-6) && bad++ < 9)
            fprintf(stderr, "grad_w[%zu] %.9g vs fd %.9g\n", i, got, want);
    }
    cr_expect_eq(bad, 0, "%zu gradients differ from finite differences", bad);
    free(x), free(kv), free(w), free(go);
    buf *all[] = {&out, &dot, &gate, &rx, &rk, &gx, &gkv, &gw};
    for (size_t i = 0; i < 8; i++) buf_free(all[i]);
    problem_free(&p);
}
