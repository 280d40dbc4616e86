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

/* OMP_NUM_THREADS is outside the num_threads check: a huge value must still
 * be capped (libgomp read the variable at load time, so the test sets the
 * same ICV through omp_set_num_threads as well as the environment). */
Test(context, omp_default_threads_are_capped) {
    setenv("OMP_NUM_THREADS", "20000", 1);
    omp_set_num_threads(20000);
    cr_assert_eq(omp_get_max_threads(), 20000);
    hrmt_context_options o = hrmt_context_default_options();
    hrmt_context *ctx = NULL;
    char err[256] = "";
    cr_assert_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_leq(hrmt_context_threads(ctx), 4096);
    cr_expect_geq(hrmt_context_threads(ctx), 1);
    hrmt_context_destroy(ctx);
}
