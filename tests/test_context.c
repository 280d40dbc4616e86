/* Context creation, ISA override and error reporting. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_common.h"

Test(context, creates_and_reports_isa) {
    hrmt_context *ctx = hrmt_test_context();
    const char *want = getenv("HRMT_ISA");
    if (want) cr_expect_str_eq(hrmt_isa_name(hrmt_context_isa(ctx)), want);
    cr_expect(hrmt_context_threads(ctx) >= 1);
    cr_expect_str_eq(hrmt_last_error(ctx), "");
    hrmt_context_destroy(ctx);
}

Test(context, bogus_isa_is_a_clear_error) {
    hrmt_context_options o = hrmt_context_default_options();
    o.isa = "bogus";
    hrmt_context *ctx = (hrmt_context *)0x1;
    char err[256] = "";
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_ISA);
    cr_expect_null(ctx);
    cr_expect(strstr(err, "scalar") && strstr(err, "avx512"), "message lists valid ISAs: %s", err);
}

/* OMP_NUM_THREADS is checked like num_threads: a value above the thread
 * limit is an error naming the limit and its variable, not a silent cap
 * (libgomp read the variable at load time, so the test sets the same ICV
 * through omp_set_num_threads as well as the environment). */
Test(context, omp_default_threads_above_the_limit_are_refused) {
    setenv("OMP_NUM_THREADS", "20000", 1);
    omp_set_num_threads(20000);
    cr_assert_eq(omp_get_max_threads(), 20000);
    hrmt_context_options o = hrmt_context_default_options();
    hrmt_context *ctx = (hrmt_context *)0x1;
    char err[512] = "";
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_LIMIT, "%s", err);
    cr_expect_null(ctx);
    cr_expect(strstr(err, "OMP_NUM_THREADS") && strstr(err, "20000") && strstr(err, "4096") &&
                  strstr(err, "HRMT_LIMIT_THREADS"),
              "message names the value, the limit and how to raise it: %s", err);
    /* An explicit num_threads within the limit wins over the environment. */
    o.num_threads = 3;
    ctx = NULL;
    cr_assert_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_eq(hrmt_context_threads(ctx), 3);
    hrmt_context_destroy(ctx);
    /* Raising the limit (explicit limits, so the environment's are ignored) admits it. */
    hrmt_limits lim = hrmt_limits_default();
    lim.threads = 20000;
    o.num_threads = 0;
    o.limits = &lim;
    ctx = NULL;
    cr_assert_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_eq(hrmt_context_threads(ctx), 20000);
    hrmt_context_destroy(ctx);
}
