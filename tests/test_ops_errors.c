/* Bad descriptors give the right status, a message naming the op, and leave
 * the output untouched. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "support/test_common.h"

static hrmt_context *g_ctx;
static float g_a[64], g_b[64], g_o[64], g_w[64];
static uint16_t g_h[64];
static int32_t g_ids[8];

static void setup(void) {
    g_ctx = hrmt_test_context();
    for (int i = 0; i < 64; i++) g_a[i] = g_b[i] = g_w[i] = 1.0f, g_o[i] = 42.0f, g_h[i] = 0x3f80;
    memset(g_ids, 0, sizeof g_ids);
}
static void teardown(void) { hrmt_context_destroy(g_ctx); }
TestSuite(ops_errors, .init = setup, .fini = teardown);

static hrmt_tensor t2(void *p, hrmt_dtype dt, size_t r, size_t c) {
    hrmt_tensor t;
    const size_t s[2] = {r, c};
    cr_assert_eq(hrmt_tensor_init(&t, p, dt, 2, s), HRMT_OK);
    return t;
}

/* The call failed with `want`, said which op, and did not write g_o. */
static void expect_fail(hrmt_status got, hrmt_status want, const char *op) {
    cr_expect_eq(got, want, "%s: got %s, want %s (%s)", op, hrmt_status_str(got),
                 hrmt_status_str(want), hrmt_last_error(g_ctx));
    cr_expect(strstr(hrmt_last_error(g_ctx), op) != NULL, "message '%s' should name %s",
              hrmt_last_error(g_ctx), op);
    for (int i = 0; i < 64; i++) cr_expect_eq(g_o[i], 42.0f, "%s wrote its output on failure", op);
}

Test(ops_errors, null_and_missing_data) {
    hrmt_tensor a = t2(g_a, HRMT_F32, 4, 16), o = t2(g_o, HRMT_F32, 4, 16), nod = a;
    nod.data = NULL;
    cr_expect_eq(hrmt_add(NULL, &a, &a, &o), HRMT_ERR_INVALID_ARG);
    expect_fail(hrmt_add(g_ctx, NULL, &a, &o), HRMT_ERR_INVALID_ARG, "hrmt_add");
    expect_fail(hrmt_add(g_ctx, &a, &a, NULL), HRMT_ERR_INVALID_ARG, "hrmt_add");
    expect_fail(hrmt_rmsnorm(g_ctx, &nod, NULL, 1e-5f, &o), HRMT_ERR_INVALID_ARG, "hrmt_rmsnorm");
    expect_fail(hrmt_softmax(g_ctx, &a, 1.0f, NULL), HRMT_ERR_INVALID_ARG, "hrmt_softmax");
    expect_fail(hrmt_copy(g_ctx, NULL, &o), HRMT_ERR_INVALID_ARG, "hrmt_copy");
    expect_fail(hrmt_swiglu(g_ctx, NULL, &o), HRMT_ERR_INVALID_ARG, "hrmt_swiglu");
    expect_fail(hrmt_embedding(g_ctx, &a, NULL, &o), HRMT_ERR_INVALID_ARG, "hrmt_embedding");
}

Test(ops_errors, dtypes) {
    hrmt_tensor a = t2(g_a, HRMT_F32, 4, 16), o = t2(g_o, HRMT_F32, 4, 16);
    hrmt_tensor i32 = t2(g_a, HRMT_I32, 4, 16), bf = t2(g_h, HRMT_BF16, 4, 16);
    expect_fail(hrmt_add(g_ctx, &a, &bf, &o), HRMT_ERR_DTYPE, "hrmt_add");
    expect_fail(hrmt_add(g_ctx, &i32, &i32, &o), HRMT_ERR_DTYPE, "hrmt_add");
    expect_fail(hrmt_rmsnorm(g_ctx, &i32, NULL, 1e-5f, &o), HRMT_ERR_DTYPE, "hrmt_rmsnorm");
    expect_fail(hrmt_residual_rmsnorm(g_ctx, &a, &bf, 1e-5f, HRMT_VARIANT_SRAM, &o), HRMT_ERR_DTYPE,
                "hrmt_residual_rmsnorm");
    expect_fail(hrmt_softmax(g_ctx, &bf, 1.0f, &o), HRMT_ERR_DTYPE, "hrmt_softmax");
    expect_fail(hrmt_convert(g_ctx, &i32, &o), HRMT_ERR_DTYPE, "hrmt_convert");
    expect_fail(hrmt_copy(g_ctx, &bf, &o), HRMT_ERR_DTYPE, "hrmt_copy");
    hrmt_tensor ids = t2(g_a, HRMT_F32, 1, 4), eo = t2(g_o, HRMT_F32, 4, 16);
    expect_fail(hrmt_embedding(g_ctx, &a, &ids, &eo), HRMT_ERR_DTYPE, "hrmt_embedding");
    hrmt_tensor w = t2(g_h, HRMT_BF16, 1, 16);
    w.ndim = 1, w.shape[0] = 16, w.stride[0] = 1;
    expect_fail(hrmt_rmsnorm(g_ctx, &a, &w, 1e-5f, &o), HRMT_ERR_DTYPE, "hrmt_rmsnorm");
}

Test(ops_errors, shapes_and_strides) {
    hrmt_tensor a = t2(g_a, HRMT_F32, 4, 16), o = t2(g_o, HRMT_F32, 4, 16);
    hrmt_tensor rows3 = t2(g_b, HRMT_F32, 3, 16), cols8 = t2(g_b, HRMT_F32, 4, 8);
    expect_fail(hrmt_add(g_ctx, &a, &rows3, &o), HRMT_ERR_SHAPE, "hrmt_add");
    expect_fail(hrmt_add(g_ctx, &a, &cols8, &o), HRMT_ERR_SHAPE, "hrmt_add");
    expect_fail(hrmt_residual_rmsnorm(g_ctx, &a, &rows3, 1e-5f, HRMT_VARIANT_DRAM, &o),
                HRMT_ERR_SHAPE, "hrmt_residual_rmsnorm");
    hrmt_tensor oc = o;
    oc.stride[1] = 2;
    expect_fail(hrmt_rmsnorm(g_ctx, &a, NULL, 1e-5f, &oc), HRMT_ERR_SHAPE, "hrmt_rmsnorm");
    hrmt_tensor overlap = a;
    overlap.stride[0] = 8;
    expect_fail(hrmt_softmax(g_ctx, &overlap, 1.0f, &o), HRMT_ERR_SHAPE, "hrmt_softmax");
    /* [2,2,16] whose outer stride does not continue the inner one */
    hrmt_tensor uneven;
    const size_t s3[3] = {2, 2, 16};
    hrmt_tensor_init(&uneven, g_a, HRMT_F32, 3, s3);
    uneven.stride[0] = 33, uneven.stride[1] = 16;
    hrmt_tensor o3;
    hrmt_tensor_init(&o3, g_o, HRMT_F32, 3, s3);
    expect_fail(hrmt_add(g_ctx, &uneven, &uneven, &o3), HRMT_ERR_SHAPE, "hrmt_add");
    /* swiglu needs gate_up = 2 * out columns */
    hrmt_tensor gu = t2(g_a, HRMT_F32, 2, 30), so = t2(g_o, HRMT_F32, 2, 16);
    expect_fail(hrmt_swiglu(g_ctx, &gu, &so), HRMT_ERR_SHAPE, "hrmt_swiglu");
    hrmt_tensor w = t2(g_w, HRMT_F32, 1, 8);
    w.ndim = 1, w.shape[0] = 8, w.stride[0] = 1;
    expect_fail(hrmt_rmsnorm(g_ctx, &a, &w, 1e-5f, &o), HRMT_ERR_SHAPE, "hrmt_rmsnorm");
    hrmt_tensor zero = a;
    zero.shape[0] = 0;
    expect_fail(hrmt_rmsnorm(g_ctx, &zero, NULL, 1e-5f, &o), HRMT_ERR_SHAPE, "hrmt_rmsnorm");
}

Test(ops_errors, eps_scale_variant) {
    hrmt_tensor a = t2(g_a, HRMT_F32, 4, 16), o = t2(g_o, HRMT_F32, 4, 16);
    expect_fail(hrmt_rmsnorm(g_ctx, &a, NULL, NAN, &o), HRMT_ERR_NONFINITE, "hrmt_rmsnorm");
    expect_fail(hrmt_rmsnorm(g_ctx, &a, NULL, INFINITY, &o), HRMT_ERR_NONFINITE, "hrmt_rmsnorm");
    expect_fail(hrmt_rmsnorm(g_ctx, &a, NULL, -1e-5f, &o), HRMT_ERR_INVALID_ARG, "hrmt_rmsnorm");
    expect_fail(hrmt_residual_rmsnorm(g_ctx, &a, &a, NAN, HRMT_VARIANT_SRAM, &o),
                HRMT_ERR_NONFINITE, "hrmt_residual_rmsnorm");
    expect_fail(hrmt_residual_rmsnorm(g_ctx, &a, &a, 1e-5f, (hrmt_variant)7, &o),
                HRMT_ERR_INVALID_ARG, "hrmt_residual_rmsnorm");
    expect_fail(hrmt_softmax(g_ctx, &a, INFINITY, &o), HRMT_ERR_NONFINITE, "hrmt_softmax");
    /* eps = 0 is allowed */
    cr_expect_eq(hrmt_rmsnorm(g_ctx, &a, NULL, 0.0f, &o), HRMT_OK);
}

Test(ops_errors, rope) {
    hrmt_tensor x, c, s;
    const size_t xs[3] = {2, 2, 8}, cs[2] = {2, 8};
    hrmt_tensor_init(&x, g_o, HRMT_F32, 3, xs);
    hrmt_tensor_init(&c, g_a, HRMT_F32, 2, cs);
    hrmt_tensor_init(&s, g_b, HRMT_F32, 2, cs);
    hrmt_tensor odd = x;
    odd.shape[2] = 7, odd.stride[1] = 7, odd.stride[0] = 14;
    expect_fail(hrmt_rope(g_ctx, &odd, &c, &s), HRMT_ERR_SHAPE, "hrmt_rope");
    hrmt_tensor c_short = c;
    c_short.shape[0] = 1;
    expect_fail(hrmt_rope(g_ctx, &x, &c_short, &s), HRMT_ERR_SHAPE, "hrmt_rope");
    hrmt_tensor c_bf = c;
    c_bf.dtype = HRMT_BF16;
    expect_fail(hrmt_rope(g_ctx, &x, &c_bf, &s), HRMT_ERR_DTYPE, "hrmt_rope");
    hrmt_tensor x2 = x;
    x2.ndim = 2;
    expect_fail(hrmt_rope(g_ctx, &x2, &c, &s), HRMT_ERR_SHAPE, "hrmt_rope");
    expect_fail(hrmt_rope(g_ctx, &x, &c, NULL), HRMT_ERR_INVALID_ARG, "hrmt_rope");
}

Test(ops_errors, embedding_ids) {
    hrmt_tensor tab = t2(g_a, HRMT_F32, 4, 16), o = t2(g_o, HRMT_F32, 4, 16), ids;
    const size_t n = 4;
    hrmt_tensor_init(&ids, g_ids, HRMT_I32, 1, &n);
    g_ids[2] = 4; /* vocab is 4 */
    expect_fail(hrmt_embedding(g_ctx, &tab, &ids, &o), HRMT_ERR_INVALID_ARG, "hrmt_embedding");
    cr_expect(strstr(hrmt_last_error(g_ctx), "ids[2]") != NULL, "%s", hrmt_last_error(g_ctx));
    g_ids[2] = -1;
    expect_fail(hrmt_embedding(g_ctx, &tab, &ids, &o), HRMT_ERR_INVALID_ARG, "hrmt_embedding");
    g_ids[2] = 3;
    hrmt_tensor o3 = t2(g_o, HRMT_F32, 3, 16);
    expect_fail(hrmt_embedding(g_ctx, &tab, &ids, &o3), HRMT_ERR_SHAPE, "hrmt_embedding");
    cr_expect_eq(hrmt_embedding(g_ctx, &tab, &ids, &o), HRMT_OK, "%s", hrmt_last_error(g_ctx));
}

Test(ops_errors, engram) {
    static uint16_t x[2 * 2 * 8], kv[2 * 3 * 8], out[2 * 2 * 8];
    static float wf[2 * 8], ph[4];
    hrmt_tensor tx, tkv, tw, to, tp;
    const size_t xs[3] = {2, 2, 8}, kvs[3] = {2, 3, 8}, ws[2] = {2, 8}, ps[2] = {2, 2};
    hrmt_tensor_init(&tx, x, HRMT_BF16, 3, xs);
    hrmt_tensor_init(&tkv, kv, HRMT_BF16, 3, kvs);
    hrmt_tensor_init(&tw, wf, HRMT_F32, 2, ws);
    hrmt_tensor_init(&to, out, HRMT_BF16, 3, xs);
    hrmt_tensor_init(&tp, ph, HRMT_F32, 2, ps);
    hrmt_engram_fwd_out o = {&to, &tp, NULL, NULL, NULL};
    const char *op = "hrmt_engram_gate_fwd";
    hrmt_tensor bad = tkv;
    bad.shape[1] = 2;
    cr_expect_eq(hrmt_engram_gate_fwd(g_ctx, &tx, &bad, &tw, 1e-20f, 1e-6f, &o), HRMT_ERR_SHAPE);
    cr_expect(strstr(hrmt_last_error(g_ctx), op), "%s", hrmt_last_error(g_ctx));
    hrmt_tensor xf = tx;
    xf.dtype = HRMT_F32;
    cr_expect_eq(hrmt_engram_gate_fwd(g_ctx, &xf, &tkv, &tw, 1e-20f, 1e-6f, &o), HRMT_ERR_DTYPE);
    cr_expect_eq(hrmt_engram_gate_fwd(g_ctx, &tx, &tkv, &tw, NAN, 1e-6f, &o), HRMT_ERR_NONFINITE);
    cr_expect_eq(hrmt_engram_gate_fwd(g_ctx, &tx, &tkv, &tw, 1e-20f, -1.0f, &o),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_engram_gate_fwd(g_ctx, &tx, &tkv, &tw, 1e-20f, 1e-6f, NULL),
                 HRMT_ERR_INVALID_ARG);
    hrmt_tensor pbad = tp;
    pbad.shape[1] = 3;
    hrmt_engram_fwd_out ob = {&to, NULL, &pbad, NULL, NULL};
    cr_expect_eq(hrmt_engram_gate_fwd(g_ctx, &tx, &tkv, &tw, 1e-20f, 1e-6f, &ob), HRMT_ERR_SHAPE);
    for (size_t i = 0; i < 32; i++) cr_expect_eq(out[i], 0, "out written on failure");
    cr_expect_eq(hrmt_engram_gate_bwd(g_ctx, &tx, &tx, &tkv, &tw, NULL, &tp, &tp, &tp, 1e-6f, &to,
                                      &tkv, &tw),
                 HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(g_ctx), "hrmt_engram_gate_bwd"), "%s", hrmt_last_error(g_ctx));
    hrmt_tensor w3 = tw;
    w3.shape[1] = 4;
    cr_expect_eq(hrmt_engram_fuse_weight(g_ctx, &tw, &w3, &tw), HRMT_ERR_SHAPE);
}
