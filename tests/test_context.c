/* Context creation, ISA override and error reporting. */
#include <criterion/criterion.h>
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
