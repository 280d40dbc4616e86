/* rms_norm and softmax of every table against PyTorch's own outputs
 * (tests/data/torch-ops/rowops.safetensors, tools/gen_torch_rowops.py, made
 * by the PyTorch build behind the golden files), bit for bit, for row lengths
 * from 1 to 16424: rows shorter than one 8-lane vector, every tail length,
 * and the multi-level cascade of PyTorch's row sum (from 512 columns). The
 * model's bf16 parity rests on these orders (tests/test_model_golden.c).
 * Runs under each ISA (ctest sets HRMT_ISA). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "core/safetensors.h"
#include "support/test_common.h"

static hrmt_context *g_ctx;
static hrmt_st_file *g_file;

static void setup(void) {
    g_ctx = hrmt_test_context();
    cr_assert_eq(hrmt_st_open(g_ctx, hrmt_test_data("torch-ops/rowops.safetensors"), &g_file),
                 HRMT_OK, "%s", hrmt_last_error(g_ctx));
}

static void teardown(void) {
    hrmt_st_close(g_file);
    hrmt_context_destroy(g_ctx);
}

static const hrmt_st_tensor *find(const char *name) {
    const hrmt_st_tensor *t = hrmt_st_find(g_file, name);
    cr_assert_not_null(t, "fixture lacks %s", name);
    cr_assert_eq(t->ndim, 2, "%s: 2-D expected", name);
    return t;
}

/* Column counts in the fixture (metadata-free: read from the tensor names). */
static size_t fixture_cols(size_t *cols, size_t max) {
    size_t n = 0;
    for (size_t c = 1; c <= 20000 && n < max; c++) {
        char name[64];
        snprintf(name, sizeof name, "sm.%zu.x", c);
        if (hrmt_st_find(g_file, name)) cols[n++] = c;
    }
    return n;
}

/* Runs op on fixture tensor `xname` and compares the bits with `yname`. */
static void check(const char *op, const char *xname, const char *yname) {
    const hrmt_st_tensor *x = find(xname), *y = find(yname);
    cr_assert_eq(x->nbytes, y->nbytes);
    cr_assert_eq(x->dtype, y->dtype);
    void *in = malloc(x->nbytes), *out = malloc(y->nbytes);
    cr_assert(in && out);
    memcpy(in, x->data, x->nbytes);
    hrmt_tensor tx, to;
    const size_t shape[2] = {x->shape[0], x->shape[1]};
    cr_assert_eq(hrmt_tensor_init(&tx, in, x->dtype, 2, shape), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&to, out, x->dtype, 2, shape), HRMT_OK);
    const hrmt_status s = strcmp(op, "rms") == 0 ? hrmt_rmsnorm(g_ctx, &tx, NULL, 1e-5f, &to)
                                                 : hrmt_softmax(g_ctx, &tx, 0.125f, &to);
    cr_assert_eq(s, HRMT_OK, "%s: %s", xname, hrmt_last_error(g_ctx));
    const size_t es = x->dtype == HRMT_BF16 ? 2 : 4, n = y->nbytes / es;
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) {
        if (memcmp((const char *)out + i * es, (const char *)y->data + i * es, es) == 0) continue;
        if (diff++ < 3) {
            float a, b;
            if (es == 4) {
                memcpy(&a, (const char *)out + i * 4, 4);
                memcpy(&b, (const char *)y->data + i * 4, 4);
            } else {
                uint16_t ha, hb;
                memcpy(&ha, (const char *)out + i * 2, 2);
                memcpy(&hb, (const char *)y->data + i * 2, 2);
                a = hrmt_bf16_to_f32(ha);
                b = hrmt_bf16_to_f32(hb);
            }
            fprintf(stderr, "%s [%zu]: %a, PyTorch %a\n", xname, i, (double)a, (double)b);
        }
    }
    cr_expect_eq(diff, 0, "%s: %zu of %zu elements differ from PyTorch", xname, diff, n);
    free(in);
    free(out);
}

/* Runs check() on the fixture pair named by the two formats (one %zu each)
 * for every column count. */
static void check_all(const char *op, const char *xfmt, const char *yfmt) {
    size_t cols[64], n = fixture_cols(cols, 64);
    cr_assert_geq(n, 20, "fixture has only %zu column counts", n);
    for (size_t i = 0; i < n; i++) {
        char x[64], y[64];
        snprintf(x, sizeof x, xfmt, cols[i]);
        snprintf(y, sizeof y, yfmt, cols[i]);
        check(op, x, y);
    }
}

Test(torch_rowops, rmsnorm_f32, .init = setup, .fini = teardown) {
    check_all("rms", "rms.%zu.x_f32", "rms.%zu.y_f32");
}

Test(torch_rowops, rmsnorm_bf16, .init = setup, .fini = teardown) {
    check_all("rms", "rms.%zu.x_bf16", "rms.%zu.y_bf16");
}

Test(torch_rowops, softmax, .init = setup, .fini = teardown) {
    check_all("softmax", "sm.%zu.x", "sm.%zu.y");
}
