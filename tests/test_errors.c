/* Error reporting: status names, tensor descriptor validation, NULL
 * arguments, and the per-context message after a failure. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "support/test_common.h"

Test(errors, status_strings_are_distinct_and_non_empty) {
    for (int i = 0; i < HRMT_STATUS_COUNT; i++) {
        const char *s = hrmt_status_str((hrmt_status)i);
        cr_assert_not_null(s);
        cr_expect_gt(strlen(s), 0, "status %d", i);
        cr_expect_str_neq(s, "unknown status", "status %d has a name", i);
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(s, hrmt_status_str((hrmt_status)j), "%d and %d", i, j);
    }
    cr_expect_str_eq(hrmt_status_str(HRMT_OK), "ok");
    cr_expect_not_null(hrmt_status_str(HRMT_STATUS_COUNT));
    cr_expect_not_null(hrmt_status_str((hrmt_status)-1));
    cr_expect_str_eq(hrmt_status_str(HRMT_STATUS_COUNT), hrmt_status_str((hrmt_status)1000));
}

Test(errors, dtype_facts) {
    cr_expect_eq(hrmt_dtype_size(HRMT_F32), 4);
    cr_expect_eq(hrmt_dtype_size(HRMT_BF16), 2);
    cr_expect_eq(hrmt_dtype_size(HRMT_I32), 4);
    cr_expect_eq(hrmt_dtype_size(HRMT_DTYPE_COUNT), 0);
    cr_expect_str_eq(hrmt_dtype_name(HRMT_BF16), "BF16");
    cr_expect_str_eq(hrmt_dtype_name((hrmt_dtype)42), "?");
}

Test(errors, tensor_init_validates_shape) {
    hrmt_tensor t, keep;
    memset(&keep, 0x3c, sizeof keep);
    t = keep;
    size_t ok[4] = {2, 3, 4, 5};
    size_t zero_last[2] = {3, 0};
    size_t zero_first[3] = {0, 3, 4};
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 2, zero_last), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 3, zero_first), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 0, ok), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 5, ok), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, -1, ok), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_DTYPE_COUNT, 2, ok), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_init(NULL, NULL, HRMT_F32, 2, ok), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 2, NULL), HRMT_ERR_INVALID_ARG);
    /* Element count overflows; element count fits but bytes overflow. */
    size_t elems[2] = {SIZE_MAX / 2 + 1, 2};
    size_t bytes[1] = {SIZE_MAX / 2};
    size_t four_dims[4] = {1u << 16, 1u << 16, 1u << 16, 1u << 16};
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 2, elems), HRMT_ERR_OVERFLOW);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 1, bytes), HRMT_ERR_OVERFLOW);
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_I32, 4, four_dims), HRMT_ERR_OVERFLOW);
    cr_expect_eq(memcmp(&t, &keep, sizeof t), 0, "untouched on failure");

    /* The limit is the byte count: SIZE_MAX / 4 F32 elements still fit. */
    size_t fits[1] = {SIZE_MAX / 4};
    cr_expect_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 1, fits), HRMT_OK);

    float buf[120];
    cr_assert_eq(hrmt_tensor_init(&t, buf, HRMT_F32, 4, ok), HRMT_OK);
    cr_expect_eq(t.data, buf);
    size_t want_stride[4] = {60, 20, 5, 1};
    for (int i = 0; i < 4; i++) cr_expect_eq(t.stride[i], want_stride[i]);
    size_t n = 0;
    cr_expect_eq(hrmt_tensor_numel(&t, &n), HRMT_OK);
    cr_expect_eq(n, 120);
    cr_expect_eq(hrmt_tensor_nbytes(&t, &n), HRMT_OK);
    cr_expect_eq(n, 480);
}

Test(errors, numel_and_nbytes_reject_bad_descriptors) {
    size_t n = 7;
    hrmt_tensor t;
    size_t shape[1] = {3};
    cr_assert_eq(hrmt_tensor_init(&t, NULL, HRMT_F32, 1, shape), HRMT_OK);
    cr_expect_eq(hrmt_tensor_numel(NULL, &n), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_numel(&t, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tensor_nbytes(NULL, &n), HRMT_ERR_INVALID_ARG);
    hrmt_tensor bad = t;
    bad.ndim = 0;
    cr_expect_eq(hrmt_tensor_numel(&bad, &n), HRMT_ERR_INVALID_ARG);
    bad = t;
    bad.dtype = HRMT_DTYPE_COUNT;
    cr_expect_eq(hrmt_tensor_nbytes(&bad, &n), HRMT_ERR_INVALID_ARG);
    /* A hand-made descriptor whose shape overflows. */
    bad = t;
    bad.ndim = 2;
    bad.shape[0] = SIZE_MAX / 2;
    bad.shape[1] = 3;
    cr_expect_eq(hrmt_tensor_numel(&bad, &n), HRMT_ERR_OVERFLOW);
    bad.shape[1] = 1;
    cr_expect_eq(hrmt_tensor_nbytes(&bad, &n), HRMT_ERR_OVERFLOW);
    cr_expect_eq(n, 7, "untouched on failure");
}

Test(errors, context_creation_failures_explain_themselves) {
    cr_expect_eq(hrmt_context_create(NULL, NULL, NULL, 0), HRMT_ERR_INVALID_ARG);
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = -1;
    hrmt_context *ctx = NULL;
    char err[256] = "";
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_INVALID_ARG);
    cr_expect_null(ctx);
    cr_expect_not_null(strstr(err, "num_threads"), "%s", err);

    o = hrmt_context_default_options();
    o.cuda_graphs = 2; /* -1, 0 or 1 */
    err[0] = '\0';
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_INVALID_ARG);
    cr_expect_null(ctx);
    cr_expect_not_null(strstr(err, "cuda_graphs"), "%s", err);

    o = hrmt_context_default_options();
    o.backend = HRMT_BACKEND_CUDA;
    hrmt_cuda_info ci;
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    if (!ci.built || ci.device_count == 0) {
        err[0] = '\0';
        cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_NO_DEVICE);
        cr_expect_null(ctx);
        cr_expect_gt(strlen(err), 0);
    }
    o.backend = (hrmt_backend_kind)7;
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_cuda_query(NULL), HRMT_ERR_INVALID_ARG);
}

Test(errors, last_error_after_a_failure) {
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_str_eq(hrmt_last_error(ctx), "", "fresh context has no message");
    float a[4] = {0}, b[4] = {0};
    size_t shape[1] = {4};
    hrmt_tensor x, y;
    cr_assert_eq(hrmt_tensor_init(&x, a, HRMT_F32, 1, shape), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&y, b, HRMT_BF16, 1, shape), HRMT_OK);
    hrmt_status s = hrmt_copy(ctx, &x, &y);
    cr_expect_neq(s, HRMT_OK, "copy F32 -> BF16 is refused");
    const char *msg = hrmt_last_error(ctx);
    cr_expect_gt(strlen(msg), 0, "a message is recorded");
    cr_expect_not_null(strstr(msg, "copy"), "it names the call: %s", msg);
    cr_expect_str_eq(hrmt_last_error(NULL), "");
    hrmt_context_destroy(ctx);
}
