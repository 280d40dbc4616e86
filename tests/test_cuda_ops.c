/* The CUDA backend against the CPU scalar table: every public op on a CUDA
 * context with device tensors, compared bit for bit with the same op on a
 * scalar CPU context (row ops, engram), GEMM against float64; error paths.
 *
 * Without a CUDA device (or without the backend built) every CUDA test skips
 * with a message; HRMT_TEST_REQUIRE_CUDA=1 (bench/gpu.sh sets it) turns that
 * skip into a failure, so a GPU run can never pass vacuously. The context
 * tests at the end run everywhere and assert the branch that applies. */
#define _POSIX_C_SOURCE 200809L /* setenv / unsetenv */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/mat.h"
#include "support/st_reader.h"
#include "support/test_common.h"

static hrmt_context *g_gpu; /* CUDA context, NULL when there is no device */
static hrmt_context *g_cpu; /* scalar CPU context: the reference */
static char g_why[256];     /* why there is no CUDA context */

static void setup(void) {
    hrmt_context_options o = hrmt_context_default_options();
    o.isa = "scalar";
    o.num_threads = 1;
    char err[256] = "";
    cr_assert_eq(hrmt_context_create(&o, &g_cpu, err, sizeof err), HRMT_OK, "%s", err);
    g_gpu = NULL;
    hrmt_cuda_info ci;
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    if (!ci.built) {
        snprintf(g_why, sizeof g_why, "hrmt was built without the CUDA backend");
        return;
    }
    if (ci.device_count == 0) {
        snprintf(g_why, sizeof g_why, "hrmt_cuda_query found no device (no driver or no GPU)");
        return;
    }
    /* A device is present: from here on a failure is a failure, not a skip. */
    o = hrmt_context_default_options();
    o.backend = HRMT_BACKEND_CUDA;
    hrmt_status s = hrmt_context_create(&o, &g_gpu, err, sizeof err);
    cr_assert_eq(s, HRMT_OK, "%d device(s) but CUDA context creation failed: %s: %s",
                 ci.device_count, hrmt_status_str(s), err);
}

static void teardown(void) {
    hrmt_context_destroy(g_gpu);
    hrmt_context_destroy(g_cpu);
}

TestSuite(cuda_ops, .init = setup, .fini = teardown, .timeout = 300);

#define NEED_CUDA()                                                                             \
    do {                                                                                        \
        if (!g_gpu) {                                                                           \
            cr_assert(!hrmt_test_cuda_required(),                                               \
                      "HRMT_TEST_REQUIRE_CUDA is set but there is no CUDA context: %s", g_why); \
            cr_skip_test("no CUDA device: %s", g_why);                                          \
        }                                                                                       \
    } while (0)

#define OK_GPU(expr)                                                         \
    do {                                                                     \
        hrmt_status s_ = (expr);                                             \
        cr_assert_eq(s_, HRMT_OK, "%s: %s (%s)", #expr, hrmt_status_str(s_), \
                     hrmt_last_error(g_gpu));                                \
    } while (0)
#define OK_CPU(expr)                                                         \
    do {                                                                     \
        hrmt_status s_ = (expr);                                             \
        cr_assert_eq(s_, HRMT_OK, "%s: %s (%s)", #expr, hrmt_status_str(s_), \
                     hrmt_last_error(g_cpu));                                \
    } while (0)

/* ---- device mirrors of test matrices ------------------------------------- */

/* A host matrix (tmat: values, padding guards) and its device copy of the
 * same geometry (rows x ld elements). */
typedef struct {
    tmat h;
    void *d;
    size_t bytes;
} dmat;

static dmat dmat_new(hrmt_dtype dt, size_t rows, size_t cols, size_t ld) {
    dmat m;
    m.h = tmat_new(dt, rows, cols, ld);
    m.bytes = rows * ld * m.h.es;
    OK_GPU(hrmt_device_alloc(g_gpu, m.bytes, &m.d));
    return m;
}
static void dmat_up(dmat *m) { OK_GPU(hrmt_upload(g_gpu, m->d, m->h.p, m->bytes)); }
static void dmat_down(dmat *m) { OK_GPU(hrmt_download(g_gpu, m->h.p, m->d, m->bytes)); }
static void dmat_free(dmat *m) {
    hrmt_device_free(g_gpu, m->d);
    tmat_free(&m->h);
}
static hrmt_tensor dmat_t(const dmat *m) {
    hrmt_tensor t = tmat_tensor(&m->h);
    t.data = m->d;
    t.device = HRMT_DEVICE_CUDA;
    return t;
}
/* Random values (host and device). */
static void dmat_rand(dmat *m, hrmt_test_rng *rng, float scale) {
    tmat_fill(&m->h, rng, scale);
    dmat_up(m);
}
/* An output: every element NaN bytes (0xFF), padding keeps its guard. */
static void dmat_poison(dmat *m) {
    for (size_t r = 0; r < m->h.rows; r++)
        memset((char *)m->h.p + r * m->h.ld * m->h.es, 0xFF, m->h.cols * m->h.es);
    dmat_up(m);
}

static int is_nan_bits(const unsigned char *p, size_t es) {
    if (es == 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        return (v & 0x7fffu) > 0x7f80u;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return (v & 0x7fffffffu) > 0x7f800000u;
}

/* Bitwise (NaN matches any NaN) comparison of got (downloaded) with want,
 * plus the padding guards of got. Returns the number of differences. */
static size_t same_bits(const tmat *got, const tmat *want, const char *what) {
    size_t bad = 0;
    const size_t es = got->es;
    for (size_t r = 0; r < got->rows; r++)
        for (size_t j = 0; j < got->cols; j++) {
            const unsigned char *g = (const unsigned char *)got->p + (r * got->ld + j) * es;
            const unsigned char *w = (const unsigned char *)want->p + (r * want->ld + j) * es;
            if (memcmp(g, w, es) == 0 || (is_nan_bits(g, es) && is_nan_bits(w, es))) continue;
            if (bad++ < 5)
                cr_log_error("%s: [%zu,%zu] cuda %g cpu %g", what, r, j,
                             (double)tmat_get(got, r, j), (double)tmat_get(want, r, j));
        }
    const size_t dmg = tmat_guard_damage(got);
    if (dmg) cr_log_error("%s: %zu padding bytes overwritten", what, dmg);
    return bad + dmg;
}

/* Shapes: odd and even columns, a padded leading dim for odd k, 1 to many rows.
 * The kernels pick their mapping by width: softmax 8..128 (82: HRM's
 * attention rows), 129..512 (200 and 512 whole vectors, 511 not) and longer;
 * norms on whole warp-groups up to 512 (64, 128, 512: HRM's hidden) or not. */
static const size_t COLS[] = {1, 3, 17, 64, 82, 128, 200, 511, 512, 513, 4096};
static const size_t ROWS[] = {1, 5, 300};
#define NCOLS (sizeof COLS / sizeof COLS[0])
#define NROWS (sizeof ROWS / sizeof ROWS[0])
static const hrmt_dtype DTS[] = {HRMT_F32, HRMT_BF16};
static size_t pad_ld(size_t cols, size_t k) { return (k & 1) ? cols + 5 : cols; }

/* NaN, +Inf and -Inf into an input's first rows (host and device). */
static void inject(dmat *m) {
    if (m->h.rows > 0) tmat_set(&m->h, 0, m->h.cols / 2, NAN);
    if (m->h.rows > 1) tmat_set(&m->h, 1, m->h.cols - 1, INFINITY);
    if (m->h.rows > 2) tmat_set(&m->h, 2, 0, -INFINITY);
    dmat_up(m);
}

/* One elementwise/row op, one shape: run `gpu` on device tensors and `cpu` on
 * the same host values, compare bits. */
typedef enum { OP_ADD, OP_RMSNORM, OP_RMSNORM_W, OP_RESID_SRAM, OP_RESID_DRAM, OP_SOFTMAX } rop;
static const char *const ROP_NAMES[] = {"add",           "rmsnorm",       "rmsnorm+w",
                                        "residual sram", "residual dram", "softmax"};

static void row_case(rop op, hrmt_dtype dt, size_t rows, size_t cols, size_t ld, int nonfinite,
                     hrmt_test_rng *rng) {
    dmat a = dmat_new(dt, rows, cols, ld), b = dmat_new(dt, rows, cols, ld);
    dmat o = dmat_new(dt, rows, cols, ld), w = dmat_new(HRMT_F32, 1, cols, cols);
    dmat_rand(&a, rng, 4.0f);
    dmat_rand(&b, rng, 4.0f);
    dmat_rand(&w, rng, 2.0f);
    if (nonfinite) inject(&a);
    dmat_poison(&o);
    tmat want = tmat_new(dt, rows, cols, ld);
    hrmt_tensor ga = dmat_t(&a), gb = dmat_t(&b), go = dmat_t(&o), gw = dmat_t(&w);
    hrmt_tensor ca = tmat_tensor(&a.h), cb = tmat_tensor(&b.h), co = tmat_tensor(&want);
    hrmt_tensor cw = tmat_tensor(&w.h);
    gw.ndim = cw.ndim = 1;
    gw.shape[0] = cw.shape[0] = cols;
    gw.stride[0] = cw.stride[0] = 1;
    const float eps = 1e-5f, scale = 0.125f;
    switch (op) {
    case OP_ADD:
        OK_GPU(hrmt_add(g_gpu, &ga, &gb, &go));
        OK_CPU(hrmt_add(g_cpu, &ca, &cb, &co));
        break;
    case OP_RMSNORM:
        OK_GPU(hrmt_rmsnorm(g_gpu, &ga, NULL, eps, &go));
        OK_CPU(hrmt_rmsnorm(g_cpu, &ca, NULL, eps, &co));
        break;
    case OP_RMSNORM_W:
        OK_GPU(hrmt_rmsnorm(g_gpu, &ga, &gw, eps, &go));
        OK_CPU(hrmt_rmsnorm(g_cpu, &ca, &cw, eps, &co));
        break;
    case OP_RESID_SRAM:
    case OP_RESID_DRAM: {
        const hrmt_variant v = op == OP_RESID_SRAM ? HRMT_VARIANT_SRAM : HRMT_VARIANT_DRAM;
        OK_GPU(hrmt_residual_rmsnorm(g_gpu, &ga, &gb, eps, v, &go));
        OK_CPU(hrmt_residual_rmsnorm(g_cpu, &ca, &cb, eps, v, &co));
        break;
    }
    case OP_SOFTMAX:
        OK_GPU(hrmt_softmax(g_gpu, &ga, scale, &go));
        OK_CPU(hrmt_softmax(g_cpu, &ca, scale, &co));
        break;
    }
    OK_GPU(hrmt_context_synchronize(g_gpu));
    dmat_down(&o);
    char what[128];
    snprintf(what, sizeof what, "%s %s %zux%zu ld %zu%s", ROP_NAMES[op], hrmt_dtype_name(dt), rows,
             cols, ld, nonfinite ? " nonfinite" : "");
    cr_expect_eq(same_bits(&o.h, &want, what), 0, "%s differs from the scalar CPU", what);
    tmat_free(&want);
    dmat_free(&a);
    dmat_free(&b);
    dmat_free(&o);
    dmat_free(&w);
}

static void row_op_all(rop op) {
    hrmt_test_rng rng = {0x1234567u + (uint64_t)op};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++) {
                const size_t ld = pad_ld(COLS[c], c + r);
                row_case(op, DTS[d], ROWS[r], COLS[c], ld, 0, &rng);
                if (COLS[c] == 64 || COLS[c] == 82 || COLS[c] == 512)
                    row_case(op, DTS[d], ROWS[r], COLS[c], ld, 1, &rng);
            }
}

Test(cuda_ops, add) {
    NEED_CUDA();
    row_op_all(OP_ADD);
}
Test(cuda_ops, rmsnorm) {
    NEED_CUDA();
    row_op_all(OP_RMSNORM);
    row_op_all(OP_RMSNORM_W);
}
Test(cuda_ops, residual_rmsnorm_both_variants) {
    NEED_CUDA();
    row_op_all(OP_RESID_SRAM);
    row_op_all(OP_RESID_DRAM);
}
Test(cuda_ops, softmax) {
    NEED_CUDA();
    row_op_all(OP_SOFTMAX);
}

Test(cuda_ops, copy_and_convert) {
    NEED_CUDA();
    hrmt_test_rng rng = {77};
    for (size_t c = 0; c < NCOLS; c++)
        for (size_t r = 0; r < NROWS; r++)
            for (int from = 0; from < 2; from++)
                for (int to = 0; to < 2; to++) {
                    const size_t cols = COLS[c], rows = ROWS[r];
                    const size_t ldx = pad_ld(cols, c + r), ldo = pad_ld(cols, c + r + (size_t)to);
                    dmat x = dmat_new(DTS[from], rows, cols, ldx);
                    dmat o = dmat_new(DTS[to], rows, cols, ldo);
                    dmat_rand(&x, &rng, 100.0f);
                    if (c == 2) inject(&x);
                    dmat_poison(&o);
                    tmat want = tmat_new(DTS[to], rows, cols, ldo);
                    hrmt_tensor gx = dmat_t(&x), go = dmat_t(&o);
                    hrmt_tensor cx = tmat_tensor(&x.h), co = tmat_tensor(&want);
                    if (from == to) {
                        OK_GPU(hrmt_copy(g_gpu, &gx, &go));
                        OK_CPU(hrmt_copy(g_cpu, &cx, &co));
                    } else {
                        OK_GPU(hrmt_convert(g_gpu, &gx, &go));
                        OK_CPU(hrmt_convert(g_cpu, &cx, &co));
                    }
                    dmat_down(&o);
                    char what[96];
                    snprintf(what, sizeof what, "%s %s->%s %zux%zu",
                             from == to ? "copy" : "convert", hrmt_dtype_name(DTS[from]),
                             hrmt_dtype_name(DTS[to]), rows, cols);
                    cr_expect_eq(same_bits(&o.h, &want, what), 0, "%s differs", what);
                    tmat_free(&want);
                    dmat_free(&x);
                    dmat_free(&o);
                }
}

Test(cuda_ops, swiglu) {
    NEED_CUDA();
    hrmt_test_rng rng = {99};
    for (size_t d = 0; d < 2; d++)
        for (size_t c = 0; c < NCOLS; c++)
            for (size_t r = 0; r < NROWS; r++) {
                const size_t inter = COLS[c], rows = ROWS[r];
                const size_t ldg = pad_ld(2 * inter, c + r), ldo = pad_ld(inter, c);
                dmat g = dmat_new(DTS[d], rows, 2 * inter, ldg),
                     o = dmat_new(DTS[d], rows, inter, ldo);
                dmat_rand(&g, &rng, 6.0f);
                if (c == 3) inject(&g);
                dmat_poison(&o);
                tmat want = tmat_new(DTS[d], rows, inter, ldo);
                hrmt_tensor gg = dmat_t(&g), go = dmat_t(&o);
                hrmt_tensor cg = tmat_tensor(&g.h), co = tmat_tensor(&want);
                OK_GPU(hrmt_swiglu(g_gpu, &gg, &go));
                OK_CPU(hrmt_swiglu(g_cpu, &cg, &co));
                dmat_down(&o);
                char what[96];
                snprintf(what, sizeof what, "swiglu %s %zux%zu", hrmt_dtype_name(DTS[d]), rows,
                         inter);
                cr_expect_eq(same_bits(&o.h, &want, what), 0, "%s differs", what);
                tmat_free(&want);
                dmat_free(&g);
                dmat_free(&o);
            }
}

/* Every one of the 65536 BF16 gate patterns (both zeros, subnormals,
 * infinities, NaNs) through the GPU's table path against the CPU scalar
 * kernel, each with a random up value; rows of 256 gates, one per pattern. */
Test(cuda_ops, swiglu_bf16_every_gate) {
    NEED_CUDA();
    hrmt_test_rng rng = {2718};
    const size_t rows = 256, inter = 256;
    dmat g = dmat_new(HRMT_BF16, rows, 2 * inter, 2 * inter),
         o = dmat_new(HRMT_BF16, rows, inter, inter);
    tmat_fill(&g.h, &rng, 3.0f);
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < inter; j++)
            ((uint16_t *)g.h.p)[r * 2 * inter + j] = (uint16_t)(r * inter + j);
    dmat_up(&g);
    dmat_poison(&o);
    tmat want = tmat_new(HRMT_BF16, rows, inter, inter);
    hrmt_tensor gg = dmat_t(&g), go = dmat_t(&o);
    hrmt_tensor cg = tmat_tensor(&g.h), co = tmat_tensor(&want);
    OK_GPU(hrmt_swiglu(g_gpu, &gg, &go));
    OK_CPU(hrmt_swiglu(g_cpu, &cg, &co));
    dmat_down(&o);
    cr_expect_eq(same_bits(&o.h, &want, "swiglu bf16 every gate"), 0, "swiglu bf16 differs");
    tmat_free(&want);
    dmat_free(&g);
    dmat_free(&o);
}

/* x [batch?, tokens, heads, hd] with a padded head stride for odd cases. */
Test(cuda_ops, rope) {
    NEED_CUDA();
    hrmt_test_rng rng = {4242};
    const size_t shapes[][4] = {{1, 1, 1, 2}, {1, 7, 3, 8}, {2, 81, 8, 64}, {3, 5, 2, 130}};
    for (size_t d = 0; d < 2; d++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            const size_t B = shapes[si][0], T = shapes[si][1], H = shapes[si][2], D = shapes[si][3];
            const size_t ldh = D + (si & 1) * 6; /* head stride */
            dmat x = dmat_new(DTS[d], B * T * H, D, ldh);
            dmat cs = dmat_new(HRMT_F32, T, D, D), sn = dmat_new(HRMT_F32, T, D, D);
            dmat_rand(&x, &rng, 3.0f);
            if (si == 1) inject(&x);
            dmat_rand(&cs, &rng, 1.0f);
            dmat_rand(&sn, &rng, 1.0f);
            tmat want = tmat_new(DTS[d], B * T * H, D, ldh);
            tmat_copy(&want, &x.h);
            hrmt_tensor gx = dmat_t(&x), cx = tmat_tensor(&want);
            for (hrmt_tensor *t = &gx; t; t = t == &gx ? &cx : NULL) {
                t->ndim = B > 1 ? 4 : 3;
                const int o = t->ndim - 3;
                if (o) {
                    t->shape[0] = B;
                    t->stride[0] = T * H * ldh;
                }
                t->shape[o] = T;
                t->stride[o] = H * ldh;
                t->shape[o + 1] = H;
                t->stride[o + 1] = ldh;
                t->shape[o + 2] = D;
                t->stride[o + 2] = 1;
            }
            hrmt_tensor gc = dmat_t(&cs), gs = dmat_t(&sn);
            hrmt_tensor cc = tmat_tensor(&cs.h), cs2 = tmat_tensor(&sn.h);
            OK_GPU(hrmt_rope(g_gpu, &gx, &gc, &gs));
            OK_CPU(hrmt_rope(g_cpu, &cx, &cc, &cs2));
            dmat_down(&x);
            char what[96];
            snprintf(what, sizeof what, "rope %s [%zu,%zu,%zu,%zu]", hrmt_dtype_name(DTS[d]), B, T,
                     H, D);
            cr_expect_eq(same_bits(&x.h, &want, what), 0, "%s differs", what);
            tmat_free(&want);
            dmat_free(&x);
            dmat_free(&cs);
            dmat_free(&sn);
        }
}

Test(cuda_ops, embedding_all_dtype_pairs_and_bad_ids) {
    NEED_CUDA();
    hrmt_test_rng rng = {555};
    const size_t vocab = 37, n = 300;
    for (int td = 0; td < 2; td++)
        for (int od = 0; od < 2; od++)
            for (size_t c = 0; c < NCOLS; c++) {
                const size_t cols = COLS[c];
                dmat table = dmat_new(DTS[td], vocab, cols, pad_ld(cols, c));
                dmat o = dmat_new(DTS[od], n, cols, pad_ld(cols, c + 1));
                dmat ids = dmat_new(HRMT_I32, 1, n, n);
                dmat_rand(&table, &rng, 5.0f);
                int32_t *id = ids.h.p;
                for (size_t i = 0; i < n; i++)
                    id[i] = (int32_t)((hrmt_test_uniform(&rng) + 1.0f) * 0.5f * (float)vocab) %
                            (int32_t)vocab;
                dmat_up(&ids);
                dmat_poison(&o);
                tmat want = tmat_new(DTS[od], n, cols, o.h.ld);
                hrmt_tensor gt = dmat_t(&table), gi = dmat_t(&ids), go = dmat_t(&o);
                hrmt_tensor ct = tmat_tensor(&table.h), ci = tmat_tensor(&ids.h),
                            co = tmat_tensor(&want);
                OK_GPU(hrmt_embedding(g_gpu, &gt, &gi, &go));
                OK_CPU(hrmt_embedding(g_cpu, &ct, &ci, &co));
                dmat_down(&o);
                char what[96];
                snprintf(what, sizeof what, "embedding %s->%s cols %zu", hrmt_dtype_name(DTS[td]),
                         hrmt_dtype_name(DTS[od]), cols);
                cr_expect_eq(same_bits(&o.h, &want, what), 0, "%s differs", what);
                if (td == 0 && od == 0 && c == 2) {
                    /* ids range-checked on the device, the first bad one named,
                     * out untouched */
                    id[123] = (int32_t)vocab;
                    id[200] = -1;
                    dmat_up(&ids);
                    dmat_poison(&o);
                    hrmt_status s = hrmt_embedding(g_gpu, &gt, &gi, &go);
                    cr_expect_eq(s, HRMT_ERR_INVALID_ARG, "bad id: %s", hrmt_status_str(s));
                    cr_expect(strstr(hrmt_last_error(g_gpu), "ids[123]") != NULL, "%s",
                              hrmt_last_error(g_gpu));
                    dmat_down(&o);
                    int untouched = 1;
                    for (size_t r = 0; r < n && untouched; r++)
                        untouched =
                            is_nan_bits((unsigned char *)o.h.p + r * o.h.ld * o.h.es, o.h.es);
                    cr_expect(untouched, "out written despite a bad id");
                }
                tmat_free(&want);
                dmat_free(&table);
                dmat_free(&o);
                dmat_free(&ids);
            }
}

/* ---- engram ------------------------------------------------------------------ */

/* A contiguous tensor of `n` dims mirrored on host and device. */
typedef struct {
    dmat m;
    hrmt_tensor g, c; /* device / host descriptors */
} dten;

static dten dten_new(hrmt_dtype dt, int nd, const size_t *shape) {
    size_t rows = 1;
    for (int i = 0; i < nd - 1; i++) rows *= shape[i];
    dten t;
    t.m = dmat_new(dt, rows, shape[nd - 1], shape[nd - 1]);
    cr_assert_eq(hrmt_tensor_init_device(&t.g, t.m.d, dt, nd, shape), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&t.c, t.m.h.p, dt, nd, shape), HRMT_OK);
    return t;
}

/* TileKernels' golden vectors for one shape (tests/test_engram.c checks the
 * CPU against them); NULL file: random inputs. */
typedef struct engram_gold {
    const st_file *f;
    const char *prefix; /* "7x4x256", ... */
    float eps, clamp;
} engram_gold;

/* Copies golden tensor `name` (dtype dt, `bytes` long) to dst. */
static void gold_copy(const engram_gold *g, const char *name, hrmt_dtype dt, void *dst,
                      size_t bytes) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", g->prefix, name);
    st_tensor st;
    cr_assert_eq(st_get(g->f, key, &st), 0, "golden tensor %s", key);
    cr_assert_eq(st.dtype, dt, "golden %s dtype", key);
    cr_assert_eq(st.nbytes, bytes, "golden %s size", key);
    memcpy(dst, st.data, bytes);
}

/* Fills t's host side from golden tensor `name` and uploads it. */
static void gold_fill(const engram_gold *g, const char *name, dten *t) {
    gold_copy(g, name, t->m.h.dt, t->m.h.p, t->m.bytes);
    dmat_up(&t->m);
}

/* Golden tensor `name` against the GPU's result: |got - want| <= tol (1 + |want|),
 * TileKernels' assert_close(rtol = atol = tol), as tests/test_engram.c. */
static void gold_close(const engram_gold *g, const char *name, const tmat *got, double tol) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", g->prefix, name);
    st_tensor st;
    cr_assert_eq(st_get(g->f, key, &st), 0, "golden tensor %s", key);
    cr_assert_eq(st.dtype, got->dt, "golden %s dtype", key);
    tmat want = tmat_new(st.dtype, got->rows, got->cols, got->cols);
    cr_assert_eq(st.nbytes, got->rows * got->cols * want.es, "golden %s size", key);
    memcpy(want.p, st.data, st.nbytes);
    size_t bad = 0;
    for (size_t i = 0; i < got->rows; i++)
        for (size_t j = 0; j < got->cols; j++) {
            const double a = tmat_get(got, i, j), w = tmat_get(&want, i, j);
            if (!(fabs(a - w) <= tol * (1.0 + fabs(w))) && bad++ < 3)
                fprintf(stderr, "GPU engram %s[%zu, %zu]: %.8g, golden %.8g\n", key, i, j, a, w);
        }
    cr_expect_eq(bad, 0, "GPU engram %s: %zu values off the golden ones (tol %g)", key, bad, tol);
    tmat_free(&want);
}

static void engram_case(size_t T, size_t hc, size_t H, hrmt_test_rng *rng,
                        const engram_gold *gold) {
    const size_t xs[3] = {T, hc, H}, kvs[3] = {T, hc + 1, H}, ws[2] = {hc, H}, ph[2] = {T, hc};
    dten x = dten_new(HRMT_BF16, 3, xs), kv = dten_new(HRMT_BF16, 3, kvs);
    /* weight_embed: F32 in the random cases, BF16 as the golden file stores it */
    dten wh = dten_new(HRMT_BF16, 2, ws), we = dten_new(gold ? HRMT_BF16 : HRMT_F32, 2, ws);
    dten wf = dten_new(HRMT_F32, 2, ws), go = dten_new(HRMT_BF16, 3, xs);
    if (gold) {
        gold_fill(gold, "x", &x);
        gold_fill(gold, "kv", &kv);
        gold_fill(gold, "weight_hidden", &wh);
        gold_fill(gold, "weight_embed", &we);
        gold_fill(gold, "grad_out", &go);
    } else {
        dmat_rand(&x.m, rng, 2.0f);
        dmat_rand(&kv.m, rng, 2.0f);
        dmat_rand(&wh.m, rng, 1.0f);
        dmat_rand(&we.m, rng, 1.0f);
        dmat_rand(&go.m, rng, 1.0f);
    }
    dmat_poison(&wf.m);
    OK_GPU(hrmt_engram_fuse_weight(g_gpu, &wh.g, &we.g, &wf.g));
    tmat wf_cpu = tmat_new(HRMT_F32, hc, H, H);
    hrmt_tensor wf_c;
    cr_assert_eq(hrmt_tensor_init(&wf_c, wf_cpu.p, HRMT_F32, 2, ws), HRMT_OK);
    OK_CPU(hrmt_engram_fuse_weight(g_cpu, &wh.c, &we.c, &wf_c));
    dmat_down(&wf.m);
    cr_expect_eq(same_bits(&wf.m.h, &wf_cpu, "fuse_weight"), 0);
    /* both sides continue from the same fused weight (the CPU's) */
    memcpy(wf.m.h.p, wf_cpu.p, hc * H * 4);
    dmat_up(&wf.m);

    dten out = dten_new(HRMT_BF16, 3, xs), dot = dten_new(HRMT_F32, 2, ph);
    dten gate = dten_new(HRMT_F32, 2, ph), rx = dten_new(HRMT_F32, 2, ph);
    dten rk = dten_new(HRMT_F32, 2, ph);
    dten *outs[5] = {&out, &dot, &gate, &rx, &rk};
    tmat want[5];
    hrmt_tensor wt[5];
    for (int i = 0; i < 5; i++) {
        dmat_poison(&outs[i]->m);
        want[i] = tmat_new(outs[i]->m.h.dt, outs[i]->m.h.rows, outs[i]->m.h.cols, outs[i]->m.h.ld);
        wt[i] = outs[i]->c;
        wt[i].data = want[i].p;
    }
    const float eps = gold ? gold->eps : 1e-6f, clamp = gold ? gold->clamp : 1e-6f;
    hrmt_engram_fwd_out og = {&out.g, &dot.g, &gate.g, &rx.g, &rk.g};
    hrmt_engram_fwd_out oc = {&wt[0], &wt[1], &wt[2], &wt[3], &wt[4]};
    OK_GPU(hrmt_engram_gate_fwd(g_gpu, &x.g, &kv.g, &wf.g, eps, clamp, &og));
    OK_CPU(hrmt_engram_gate_fwd(g_cpu, &x.c, &kv.c, &wf_c, eps, clamp, &oc));
    static const char *const names[5] = {"fwd out", "fwd dot", "fwd gate", "fwd rstd_x",
                                         "fwd rstd_k"};
    for (int i = 0; i < 5; i++) {
        dmat_down(&outs[i]->m);
        char what[96];
        snprintf(what, sizeof what, "engram %s T %zu hc %zu H %zu", names[i], T, hc, H);
        cr_expect_eq(same_bits(&outs[i]->m.h, &want[i], what), 0, "%s differs", what);
    }
    if (gold) { /* the tolerances of tests/test_engram.c */
        static const char *const gnames[5] = {"out", "dot", "gate_score", "rstd_x", "rstd_k"};
        static const double tol[5] = {8e-3, 2e-4, 1e-4, 1e-5, 1e-5};
        for (int i = 0; i < 5; i++) gold_close(gold, gnames[i], &outs[i]->m.h, tol[i]);
    }

    /* backward from the CPU's saved values on both sides; from the golden
     * file's with golden inputs, as TileKernels (and tests/test_engram.c) test it */
    for (int i = 1; i < 5; i++) {
        static const char *const saved[5] = {NULL, "dot", "gate_score", "rstd_x", "rstd_k"};
        if (gold) gold_copy(gold, saved[i], want[i].dt, want[i].p, outs[i]->m.bytes);
        memcpy(outs[i]->m.h.p, want[i].p, outs[i]->m.bytes);
        dmat_up(&outs[i]->m);
    }
    dten gx = dten_new(HRMT_BF16, 3, xs), gkv = dten_new(HRMT_BF16, 3, kvs);
    dten gw = dten_new(HRMT_F32, 2, ws);
    dten *gouts[3] = {&gx, &gkv, &gw};
    tmat gwant[3];
    hrmt_tensor gwt[3];
    for (int i = 0; i < 3; i++) {
        dmat_poison(&gouts[i]->m);
        gwant[i] =
            tmat_new(gouts[i]->m.h.dt, gouts[i]->m.h.rows, gouts[i]->m.h.cols, gouts[i]->m.h.ld);
        gwt[i] = gouts[i]->c;
        gwt[i].data = gwant[i].p;
    }
    OK_GPU(hrmt_engram_gate_bwd(g_gpu, &go.g, &x.g, &kv.g, &wf.g, &dot.g, &gate.g, &rx.g, &rk.g,
                                clamp, &gx.g, &gkv.g, &gw.g));
    OK_CPU(hrmt_engram_gate_bwd(g_cpu, &go.c, &x.c, &kv.c, &wf_c, &wt[1], &wt[2], &wt[3], &wt[4],
                                clamp, &gwt[0], &gwt[1], &gwt[2]));
    static const char *const gnames[3] = {"bwd grad_x", "bwd grad_kv", "bwd grad_weight"};
    for (int i = 0; i < 3; i++) {
        dmat_down(&gouts[i]->m);
        char what[96];
        snprintf(what, sizeof what, "engram %s T %zu hc %zu H %zu", gnames[i], T, hc, H);
        cr_expect_eq(same_bits(&gouts[i]->m.h, &gwant[i], what), 0, "%s differs", what);
    }
    /* The weight gradients are checked against the golden file by
     * tests/test_engram.c, on the CPU whose bits they equal here. */
    if (gold) {
        gold_close(gold, "grad_x", &gx.m.h, 8e-3);
        gold_close(gold, "grad_kv", &gkv.m.h, 7e-3);
    }

    /* split from the CPU's weight gradient */
    memcpy(gw.m.h.p, gwant[2].p, hc * H * 4);
    dmat_up(&gw.m);
    dten gh = dten_new(HRMT_BF16, 2, ws), ge = dten_new(HRMT_F32, 2, ws);
    dmat_poison(&gh.m);
    dmat_poison(&ge.m);
    tmat sh = tmat_new(HRMT_BF16, hc, H, H), se = tmat_new(HRMT_F32, hc, H, H);
    hrmt_tensor shc = gh.c, sec = ge.c;
    shc.data = sh.p;
    sec.data = se.p;
    OK_GPU(hrmt_engram_split_weight_grad(g_gpu, &gw.g, &wh.g, &we.g, &gh.g, &ge.g));
    OK_CPU(hrmt_engram_split_weight_grad(g_cpu, &gwt[2], &wh.c, &we.c, &shc, &sec));
    dmat_down(&gh.m);
    dmat_down(&ge.m);
    cr_expect_eq(same_bits(&gh.m.h, &sh, "split grad_w_hidden"), 0);
    cr_expect_eq(same_bits(&ge.m.h, &se, "split grad_w_embed"), 0);

    tmat_free(&sh);
    tmat_free(&se);
    dmat_free(&gh.m);
    dmat_free(&ge.m);
    for (int i = 0; i < 3; i++) {
        tmat_free(&gwant[i]);
        dmat_free(&gouts[i]->m);
    }
    for (int i = 0; i < 5; i++) {
        tmat_free(&want[i]);
        dmat_free(&outs[i]->m);
    }
    tmat_free(&wf_cpu);
    dten *ins[6] = {&x, &kv, &wh, &we, &wf, &go};
    for (int i = 0; i < 6; i++) dmat_free(&ins[i]->m);
}

Test(cuda_ops, engram_fwd_bwd_fuse_split) {
    NEED_CUDA();
    hrmt_test_rng rng = {31337};
    engram_case(1, 1, 8, &rng, NULL);
    engram_case(7, 4, 130, &rng, NULL);
    engram_case(200, 4, 512, &rng, NULL); /* T > 64: the chunked weight-gradient reduction */
}

/* TileKernels' golden vectors (all five shapes, H up to 4096) on the GPU: the
 * same bits as the CPU scalar table and within the golden tolerances. */
Test(cuda_ops, engram_golden_vectors) {
    NEED_CUDA();
    st_file f;
    cr_assert_eq(st_open(hrmt_test_data("golden/engram/engram-gate.safetensors"), &f), 0);
    const char *shapes = st_meta(&f, "shapes"), *eps_s = st_meta(&f, "eps"),
               *cl_s = st_meta(&f, "clamp_value");
    cr_assert(shapes && eps_s && cl_s, "golden metadata");
    char list[256];
    snprintf(list, sizeof list, "%s", shapes);
    int n = 0;
    for (char *save = NULL, *sh = strtok_r(list, ",", &save); sh; sh = strtok_r(NULL, ",", &save)) {
        size_t T, hc, H;
        cr_assert_eq(sscanf(sh, "%zux%zux%zu", &T, &hc, &H), 3, "shape %s", sh);
        const engram_gold g = {&f, sh, strtof(eps_s, NULL), strtof(cl_s, NULL)};
        engram_case(T, hc, H, NULL, &g);
        n++;
    }
    cr_expect_eq(n, 5, "the golden file lists five shapes");
    st_close(&f);
}

/* ---- GEMM ------------------------------------------------------------------- */

#define F32_UNIT 5.9604644775390625e-8 /* 2^-24 */

/* Max over C of |got - ref64| / bound, where bound is the error budget of an
 * F32 chain (sqrt(K) growth, generous factor) plus the final BF16 rounding. */
static double gemm_excess(const tmat *got, const double *ref, const double *mag, size_t m, size_t n,
                          size_t k, double *max_abs) {
    double worst = 0.0;
    *max_abs = 0.0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            const double g = tmat_get(got, i, j), r = ref[i * n + j];
            const double e = fabs(g - r);
            if (!(e <= 1e300)) return INFINITY; /* NaN where none belongs */
            double bound = 16.0 * F32_UNIT * sqrt((double)k) * mag[i * n + j] + 1e-30;
            if (got->dt == HRMT_BF16) bound += fabs(r) * (1.0 / 256.0);
            if (e / bound > worst) worst = e / bound;
            if (e > *max_abs) *max_abs = e;
        }
    return worst;
}

static void gemm_case(size_t m, size_t n, size_t k, hrmt_dtype adt, hrmt_dtype wdt, hrmt_dtype cdt,
                      int acc, int pad, hrmt_test_rng *rng) {
    dmat a = dmat_new(adt, m, k, k + (size_t)pad * 3), w = dmat_new(wdt, n, k, k + (size_t)pad);
    dmat c = dmat_new(cdt, m, n, n + (size_t)pad * 7);
    dmat_rand(&a, rng, 1.0f);
    dmat_rand(&w, rng, 1.0f);
    tmat cpu = tmat_new(cdt, m, n, c.h.ld);
    if (acc) {
        dmat_rand(&c, rng, 1.0f);
        tmat_copy(&cpu, &c.h);
    } else {
        dmat_poison(&c);
    }
    double *ref = malloc(m * n * sizeof *ref), *mag = malloc(m * n * sizeof *mag);
    cr_assert(ref && mag);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double s = acc ? tmat_get(&c.h, i, j) : 0.0, g = fabs(s);
            for (size_t kk = 0; kk < k; kk++) {
                const double p = (double)tmat_get(&a.h, i, kk) * (double)tmat_get(&w.h, j, kk);
                s += p;
                g += fabs(p);
            }
            ref[i * n + j] = s;
            mag[i * n + j] = g;
        }
    hrmt_tensor ga = dmat_t(&a), gw = dmat_t(&w), gc = dmat_t(&c);
    hrmt_tensor ca = tmat_tensor(&a.h), cw = tmat_tensor(&w.h), cc = tmat_tensor(&cpu);
    OK_GPU(hrmt_gemm(g_gpu, &ga, &gw, &gc, acc));
    OK_CPU(hrmt_gemm(g_cpu, &ca, &cw, &cc, acc));
    dmat_down(&c);
    double gpu_abs, cpu_abs;
    const double ex = gemm_excess(&c.h, ref, mag, m, n, k, &gpu_abs);
    const double ex_cpu = gemm_excess(&cpu, ref, mag, m, n, k, &cpu_abs);
    char what[128];
    snprintf(what, sizeof what, "gemm %zux%zux%zu %s*%s->%s%s%s", m, n, k, hrmt_dtype_name(adt),
             hrmt_dtype_name(wdt), hrmt_dtype_name(cdt), acc ? " acc" : "", pad ? " padded" : "");
    cr_expect(ex <= 1.0, "%s: error %.3g x the F32 budget (max abs %.3g; TF32 would show here)",
              what, ex, gpu_abs);
    cr_expect(ex_cpu <= 1.0, "%s: the CPU reference itself is off (%.3g)", what, ex_cpu);
    if (adt == HRMT_BF16 && wdt == HRMT_BF16)
        cr_expect(gpu_abs <= 1.5 * cpu_abs + 16.0 * F32_UNIT * sqrt((double)k),
                  "%s: CUDA max error %.3g vs CPU %.3g", what, gpu_abs, cpu_abs);
    cr_expect_eq(tmat_guard_damage(&c.h), 0, "%s wrote outside C's rows", what);
    free(ref);
    free(mag);
    tmat_free(&cpu);
    dmat_free(&a);
    dmat_free(&w);
    dmat_free(&c);
}

Test(cuda_ops, gemm_against_float64) {
    NEED_CUDA();
    cr_expect_eq(hrmt_supports(g_gpu, HRMT_OP_GEMM, HRMT_F32), 1);
    cr_expect_eq(hrmt_supports(g_gpu, HRMT_OP_GEMM, HRMT_BF16), 1);
    hrmt_test_rng rng = {2024};
    const size_t shapes[][3] = {{1, 1, 1},       {1, 512, 512},   {7, 13, 33},
                                {82, 1536, 512}, {300, 96, 1000}, {64, 64, 4096}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ad = 0; ad < 2; ad++)
            for (int wd = 0; wd < 2; wd++)
                for (int cd = 0; cd < 2; cd++)
                    for (int acc = 0; acc < 2; acc++)
                        gemm_case(shapes[s][0], shapes[s][1], shapes[s][2], DTS[ad], DTS[wd],
                                  DTS[cd], acc, (int)((s + (size_t)acc) & 1), &rng);
}

Test(cuda_ops, gemm_nan_propagates_like_the_cpu) {
    NEED_CUDA();
    hrmt_test_rng rng = {8};
    for (int d = 0; d < 2; d++) {
        const size_t m = 4, n = 9, k = 40;
        dmat a = dmat_new(DTS[d], m, k, k), w = dmat_new(DTS[d], n, k, k);
        dmat c = dmat_new(HRMT_F32, m, n, n);
        dmat_rand(&a, &rng, 1.0f);
        dmat_rand(&w, &rng, 1.0f);
        tmat_set(&a.h, 1, 5, NAN);
        dmat_up(&a);
        dmat_poison(&c);
        hrmt_tensor ga = dmat_t(&a), gw = dmat_t(&w), gc = dmat_t(&c);
        OK_GPU(hrmt_gemm(g_gpu, &ga, &gw, &gc, 0));
        dmat_down(&c);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                const float v = tmat_get(&c.h, i, j);
                cr_expect(i == 1 ? isnan(v) : isfinite(v), "row %zu col %zu: %g", i, j, (double)v);
            }
        dmat_free(&a);
        dmat_free(&w);
        dmat_free(&c);
    }
}

/* ---- error paths ------------------------------------------------------------ */

Test(cuda_ops, errors_are_statuses_not_crashes) {
    NEED_CUDA();
    hrmt_test_rng rng = {1};
    dmat x = dmat_new(HRMT_F32, 4, 8, 8), o = dmat_new(HRMT_F32, 4, 8, 8);
    dmat_rand(&x, &rng, 1.0f);
    hrmt_tensor gx = dmat_t(&x), go = dmat_t(&o);
    hrmt_tensor hx = tmat_tensor(&x.h), ho = tmat_tensor(&o.h);

    /* host tensors on a CUDA context, device tensors on a CPU context */
    cr_expect_eq(hrmt_rmsnorm(g_gpu, &hx, NULL, 1e-5f, &go), HRMT_ERR_UNSUPPORTED);
    cr_expect(strstr(hrmt_last_error(g_gpu), "host memory") != NULL, "%s", hrmt_last_error(g_gpu));
    cr_expect_eq(hrmt_add(g_gpu, &gx, &gx, &ho), HRMT_ERR_UNSUPPORTED);
    cr_expect_eq(hrmt_rmsnorm(g_cpu, &gx, NULL, 1e-5f, &ho), HRMT_ERR_UNSUPPORTED);
    /* a host pointer labelled CUDA is refused before any kernel sees it */
    hrmt_tensor liar = hx;
    liar.device = HRMT_DEVICE_CUDA;
    cr_expect_eq(hrmt_rmsnorm(g_gpu, &liar, NULL, 1e-5f, &go), HRMT_ERR_UNSUPPORTED);
    cr_expect(strstr(hrmt_last_error(g_gpu), "not device memory") != NULL, "%s",
              hrmt_last_error(g_gpu));
    cr_expect_eq(hrmt_upload(g_gpu, x.h.p, x.h.p, 16), HRMT_ERR_UNSUPPORTED);
    /* bad shapes */
    hrmt_tensor bad = go;
    bad.shape[1] = 7;
    cr_expect_eq(hrmt_add(g_gpu, &gx, &gx, &bad), HRMT_ERR_SHAPE);
    hrmt_tensor w3 = gx;
    w3.shape[0] = 3;
    cr_expect_eq(hrmt_gemm(g_gpu, &gx, &w3, &go, 0), HRMT_ERR_SHAPE);
    /* packed W is CPU-only */
    hrmt_packed_w *pw = NULL;
    cr_expect_eq(hrmt_gemm_pack_w(g_gpu, &gx, &pw), HRMT_ERR_UNSUPPORTED);
    cr_expect_null(pw);
    /* device OOM: a clear status, and the context keeps working */
    void *huge = (void *)&huge;
    hrmt_status s = hrmt_device_alloc(g_gpu, (size_t)1 << 50, &huge);
    cr_expect_eq(s, HRMT_ERR_OUT_OF_MEMORY, "1 PiB: %s (%s)", hrmt_status_str(s),
                 hrmt_last_error(g_gpu));
    cr_expect_null(huge);
    cr_expect(strstr(hrmt_last_error(g_gpu), "cudaMalloc") != NULL, "%s", hrmt_last_error(g_gpu));
    OK_GPU(hrmt_rmsnorm(g_gpu, &gx, NULL, 1e-5f, &go));
    OK_GPU(hrmt_context_synchronize(g_gpu));
    dmat_free(&x);
    dmat_free(&o);
}

/* ---- context creation: runs everywhere, asserts the branch that applies --------- */

Test(cuda_ops, cuda_context_or_no_device_with_a_message) {
    hrmt_cuda_info ci;
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    hrmt_context_options o = hrmt_context_default_options();
    o.backend = HRMT_BACKEND_CUDA;
    hrmt_context *ctx = NULL;
    char err[256] = "";
    hrmt_status s = hrmt_context_create(&o, &ctx, err, sizeof err);
    if (ci.built && ci.device_count > 0) {
        cr_assert_eq(s, HRMT_OK, "%s: %s", hrmt_status_str(s), err);
        cr_expect_eq(hrmt_context_backend(ctx), HRMT_BACKEND_CUDA);
        cr_expect_eq(hrmt_context_device(ctx), HRMT_DEVICE_CUDA);
        cr_expect_gt(ci.sm_count, 0);
        cr_expect_gt(ci.global_mem_bytes, 0);
        cr_expect_gt(strlen(ci.name), 0);
        cr_expect_eq(hrmt_tiers_sram_capacity(hrmt_context_tiers(ctx)), ci.smem_per_sm,
                     "SRAM tier = shared memory per SM");
        for (int op = 0; op < HRMT_OP_ATTENTION; op++)
            cr_expect(hrmt_supports(ctx, (hrmt_op)op, HRMT_BF16), "cuda lacks %s",
                      hrmt_op_name((hrmt_op)op));
        hrmt_context_destroy(ctx);
    } else {
        cr_expect_eq(s, HRMT_ERR_NO_DEVICE, "%s", hrmt_status_str(s));
        cr_expect_null(ctx);
        cr_expect(strstr(err, ci.built ? "no CUDA device" : "built without CUDA") != NULL, "%s",
                  err);
        cr_expect_eq(ci.device_count, 0);
    }
}

Test(cuda_ops, hrmt_backend_environment_variable) {
    hrmt_cuda_info ci;
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    hrmt_context *ctx = NULL;
    char err[256] = "";
    setenv("HRMT_BACKEND", "gpu", 1);
    cr_expect_eq(hrmt_context_create(NULL, &ctx, err, sizeof err), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(err, "HRMT_BACKEND") != NULL, "%s", err);
    setenv("HRMT_BACKEND", "cpu", 1);
    cr_assert_eq(hrmt_context_create(NULL, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_eq(hrmt_context_backend(ctx), HRMT_BACKEND_CPU);
    cr_expect_eq(hrmt_context_cuda_graphs(ctx), 0, "a CPU context replays no CUDA graphs");
    cr_expect_eq(hrmt_context_cuda_graphs(NULL), 0);
    hrmt_context_destroy(ctx);
    ctx = NULL;
    setenv("HRMT_BACKEND", "cuda", 1);
    hrmt_status s = hrmt_context_create(NULL, &ctx, err, sizeof err);
    if (ci.built && ci.device_count > 0) {
        cr_expect_eq(s, HRMT_OK, "%s", err);
        cr_expect_eq(hrmt_context_backend(ctx), HRMT_BACKEND_CUDA);
        setenv("HRMT_CUDA_DEVICE", "x", 1);
        hrmt_context *c2 = NULL;
        cr_expect_eq(hrmt_context_create(NULL, &c2, err, sizeof err), HRMT_ERR_INVALID_ARG);
        unsetenv("HRMT_CUDA_DEVICE");
    } else {
        cr_expect_eq(s, HRMT_ERR_NO_DEVICE, "%s", hrmt_status_str(s));
    }
    hrmt_context_destroy(ctx);
    unsetenv("HRMT_BACKEND");
}

Test(cuda_ops, device_memory_api_on_a_cpu_context) {
    void *p = (void *)&p;
    cr_expect_eq(hrmt_device_alloc(g_cpu, 64, &p), HRMT_ERR_UNSUPPORTED);
    cr_expect_null(p);
    cr_expect(strstr(hrmt_last_error(g_cpu), "CPU context") != NULL, "%s", hrmt_last_error(g_cpu));
    char buf[8] = {0};
    cr_expect_eq(hrmt_upload(g_cpu, buf, buf, 8), HRMT_ERR_UNSUPPORTED);
    cr_expect_eq(hrmt_download(g_cpu, buf, buf, 8), HRMT_ERR_UNSUPPORTED);
    cr_expect_eq(hrmt_context_synchronize(g_cpu), HRMT_OK);
    cr_expect_eq(hrmt_context_device(g_cpu), HRMT_DEVICE_HOST);
    hrmt_device_free(g_cpu, buf); /* no-op, no crash */
    cr_expect_eq(hrmt_device_alloc(NULL, 64, &p), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_context_synchronize(NULL), HRMT_ERR_INVALID_ARG);
    hrmt_tensor t;
    const size_t shape[2] = {2, 3};
    cr_expect_eq(hrmt_tensor_init_device(&t, buf, HRMT_F32, 2, shape), HRMT_OK);
    cr_expect_eq(t.device, HRMT_DEVICE_CUDA);
    cr_expect_eq(t.stride[0], 3);
    cr_expect_eq(hrmt_tensor_init_device(&t, buf, HRMT_F32, 0, shape), HRMT_ERR_INVALID_ARG);
}
