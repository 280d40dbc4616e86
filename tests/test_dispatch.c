/* Backend dispatch: one table per available ISA, HRMT_ISA and the isa option
 * select (lower ones too), unknown and unavailable ISAs are clear errors, and
 * supports() answers agree with the tables. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "support/test_common.h"

/* Preference order when nothing is requested: AMX tiles, then the widest
 * vector ISA. */
static hrmt_isa expected_best(unsigned mask) {
    static const hrmt_isa order[] = {HRMT_ISA_AMX, HRMT_ISA_AVX512, HRMT_ISA_AVX2, HRMT_ISA_NEON};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (mask & (1u << order[i])) return order[i];
    return HRMT_ISA_SCALAR;
}

static hrmt_status create_with(const char *isa, hrmt_context **ctx, char *err, size_t len) {
    hrmt_context_options o = hrmt_context_default_options();
    o.isa = isa;
    return hrmt_context_create(&o, ctx, err, len);
}

Test(dispatch, every_available_isa_has_a_table) {
    unsigned mask = hrmt_isas_available();
    cr_expect(mask & (1u << HRMT_ISA_SCALAR), "scalar is always available");
    cr_expect_eq(mask >> HRMT_ISA_COUNT, 0, "no bits beyond the known ISAs");
    for (int i = 0; i < HRMT_ISA_COUNT; i++) {
        const hrmt_backend *be = hrmt_backend_cpu((hrmt_isa)i);
        if (!(mask & (1u << i))) {
            cr_expect_null(be, "%s not available, no table", hrmt_isa_name((hrmt_isa)i));
            continue;
        }
        cr_assert_not_null(be, "%s", hrmt_isa_name((hrmt_isa)i));
        cr_expect_eq(be->isa, (hrmt_isa)i);
        cr_expect_eq(be->kind, HRMT_BACKEND_CPU);
        cr_expect_not_null(be->name);
        cr_expect(hrmt_backend_supports(be, HRMT_OP_COPY, HRMT_F32), "copy ships in every table");
        cr_expect(be->gemm.mr > 0 && be->gemm.nr > 0, "register tile set");
        cr_expect_eq(hrmt_backend_cpu((hrmt_isa)i), be, "one table per process");
    }
    cr_expect_null(hrmt_backend_cpu(HRMT_ISA_COUNT));
    cr_expect_null(hrmt_backend_cpu((hrmt_isa)-1));
}

Test(dispatch, default_is_the_best_available) {
    unsetenv("HRMT_ISA");
    hrmt_context *ctx = NULL;
    char err[256] = "";
    cr_assert_eq(hrmt_context_create(NULL, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_eq(hrmt_context_isa(ctx), expected_best(hrmt_isas_available()));
    cr_expect_eq(hrmt_backend_best_isa(), expected_best(hrmt_isas_available()));
    hrmt_context_destroy(ctx);
}

Test(dispatch, env_and_option_select_every_available_isa) {
    unsigned mask = hrmt_isas_available();
    for (int i = 0; i < HRMT_ISA_COUNT; i++) {
        if (!(mask & (1u << i))) continue;
        const char *name = hrmt_isa_name((hrmt_isa)i);
        char err[256] = "";
        hrmt_context *ctx = NULL;
        /* Through the environment ... */
        setenv("HRMT_ISA", name, 1);
        cr_assert_eq(hrmt_context_create(NULL, &ctx, err, sizeof err), HRMT_OK, "%s", err);
        cr_expect_eq(hrmt_context_isa(ctx), (hrmt_isa)i, "HRMT_ISA=%s", name);
        hrmt_context_destroy(ctx);
        /* ... and through the option, which wins over the environment. */
        setenv("HRMT_ISA", "scalar", 1);
        cr_assert_eq(create_with(name, &ctx, err, sizeof err), HRMT_OK, "%s", err);
        cr_expect_eq(hrmt_context_isa(ctx), (hrmt_isa)i, "isa option %s", name);
        hrmt_context_destroy(ctx);
    }
    /* A lower ISA than the best one is a valid choice. */
    unsetenv("HRMT_ISA");
    hrmt_context *ctx = NULL;
    cr_assert_eq(create_with("scalar", &ctx, NULL, 0), HRMT_OK);
    cr_expect_eq(hrmt_context_isa(ctx), HRMT_ISA_SCALAR);
    hrmt_context_destroy(ctx);
}

Test(dispatch, empty_env_means_default) {
    setenv("HRMT_ISA", "", 1);
    hrmt_context *ctx = NULL;
    cr_assert_eq(hrmt_context_create(NULL, &ctx, NULL, 0), HRMT_OK);
    cr_expect_eq(hrmt_context_isa(ctx), expected_best(hrmt_isas_available()));
    hrmt_context_destroy(ctx);
}

Test(dispatch, unknown_isa_is_an_error_naming_the_choices) {
    const char *bad[] = {"bogus", "AVX2", "avx", "sse4", " scalar"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char err[256] = "";
        hrmt_context *ctx = (hrmt_context *)&err; /* must be reset to NULL */
        cr_expect_eq(create_with(bad[k], &ctx, err, sizeof err), HRMT_ERR_ISA, "'%s'", bad[k]);
        cr_expect_null(ctx);
        for (int i = 0; i < HRMT_ISA_COUNT; i++)
            cr_expect_not_null(strstr(err, hrmt_isa_name((hrmt_isa)i)), "message lists %s: %s",
                               hrmt_isa_name((hrmt_isa)i), err);
    }
    setenv("HRMT_ISA", "bogus", 1);
    hrmt_context *ctx = NULL;
    char err[256] = "";
    cr_expect_eq(hrmt_context_create(NULL, &ctx, err, sizeof err), HRMT_ERR_ISA);
    cr_expect_not_null(strstr(err, "bogus"), "%s", err);
}

Test(dispatch, unavailable_isa_is_an_error) {
    unsigned mask = hrmt_isas_available();
    int tried = 0;
    for (int i = 0; i < HRMT_ISA_COUNT; i++) {
        if (mask & (1u << i)) continue;
        tried++;
        char err[256] = "";
        hrmt_context *ctx = NULL;
        const char *name = hrmt_isa_name((hrmt_isa)i);
        cr_expect_eq(create_with(name, &ctx, err, sizeof err), HRMT_ERR_ISA, "%s", name);
        cr_expect_null(ctx);
        cr_expect_not_null(strstr(err, name), "message names %s: %s", name, err);
        cr_expect_not_null(strstr(err, "not supported"), "%s", err);
    }
    /* Every CPU lacks at least one of the ISAs of the other architecture. */
    cr_expect_gt(tried, 0);
}

Test(dispatch, supports_agrees_with_the_tables) {
    unsigned mask = hrmt_isas_available();
    const hrmt_backend *ref = hrmt_backend_cpu(HRMT_ISA_SCALAR);
    for (int i = 0; i < HRMT_ISA_COUNT; i++) {
        if (!(mask & (1u << i))) continue;
        hrmt_context *ctx = NULL;
        cr_assert_eq(create_with(hrmt_isa_name((hrmt_isa)i), &ctx, NULL, 0), HRMT_OK);
        const hrmt_backend *be = hrmt_backend_cpu((hrmt_isa)i);
        for (int op = 0; op < HRMT_OP_COUNT; op++) {
            for (int dt = 0; dt < HRMT_DTYPE_COUNT; dt++) {
                int s = hrmt_supports(ctx, (hrmt_op)op, (hrmt_dtype)dt);
                cr_expect(s == 0 || s == 1);
                cr_expect_eq(s, hrmt_backend_supports(be, (hrmt_op)op, (hrmt_dtype)dt), "%s %s %s",
                             hrmt_isa_name((hrmt_isa)i), hrmt_op_name((hrmt_op)op),
                             hrmt_dtype_name((hrmt_dtype)dt));
                /* Every fast kernel has a scalar reference to be tested against. */
                if (s)
                    cr_expect(hrmt_backend_supports(ref, (hrmt_op)op, (hrmt_dtype)dt),
                              "%s has %s/%s but scalar does not", hrmt_isa_name((hrmt_isa)i),
                              hrmt_op_name((hrmt_op)op), hrmt_dtype_name((hrmt_dtype)dt));
            }
        }
        /* Copy is a byte copy: every dtype. */
        for (int dt = 0; dt < HRMT_DTYPE_COUNT; dt++)
            cr_expect(hrmt_supports(ctx, HRMT_OP_COPY, (hrmt_dtype)dt));
        cr_expect_eq(hrmt_supports(ctx, HRMT_OP_COUNT, HRMT_F32), 0);
        cr_expect_eq(hrmt_supports(ctx, HRMT_OP_COPY, HRMT_DTYPE_COUNT), 0);
        cr_expect_eq(hrmt_supports(ctx, (hrmt_op)-1, HRMT_F32), 0);
        hrmt_context_destroy(ctx);
    }
    cr_expect_eq(hrmt_supports(NULL, HRMT_OP_COPY, HRMT_F32), 0);
    cr_expect_eq(hrmt_backend_supports(NULL, HRMT_OP_COPY, HRMT_F32), 0);
}

Test(dispatch, isa_and_op_names_round_trip) {
    for (int i = 0; i < HRMT_ISA_COUNT; i++) {
        hrmt_isa back = HRMT_ISA_COUNT;
        const char *name = hrmt_isa_name((hrmt_isa)i);
        cr_assert_eq(hrmt_isa_parse(name, &back), HRMT_OK, "%s", name);
        cr_expect_eq(back, (hrmt_isa)i);
        for (int j = 0; j < i; j++) cr_expect_str_neq(name, hrmt_isa_name((hrmt_isa)j));
    }
    cr_expect_str_eq(hrmt_isa_name(HRMT_ISA_COUNT), "?");
    hrmt_isa out = HRMT_ISA_NEON;
    cr_expect_eq(hrmt_isa_parse("Scalar", &out), HRMT_ERR_ISA);
    cr_expect_eq(hrmt_isa_parse("", &out), HRMT_ERR_ISA);
    cr_expect_eq(out, HRMT_ISA_NEON, "untouched on failure");
    cr_expect_eq(hrmt_isa_parse(NULL, &out), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_isa_parse("scalar", NULL), HRMT_ERR_INVALID_ARG);
    for (int op = 0; op < HRMT_OP_COUNT; op++) {
        const char *n = hrmt_op_name((hrmt_op)op);
        cr_expect(n && *n && strcmp(n, "?") != 0);
        for (int j = 0; j < op; j++) cr_expect_str_neq(n, hrmt_op_name((hrmt_op)j));
    }
    cr_expect_str_eq(hrmt_op_name(HRMT_OP_COUNT), "?");
}

/* Under ctest each binary runs once per ISA with HRMT_ISA set; the context
 * the test helpers create must honour it. */
Test(dispatch, test_context_honours_ctest_isa) {
    const char *want = getenv("HRMT_ISA");
    hrmt_context *ctx = hrmt_test_context();
    if (want && *want)
        cr_expect_str_eq(hrmt_isa_name(hrmt_context_isa(ctx)), want);
    else
        cr_expect_eq(hrmt_context_isa(ctx), expected_best(hrmt_isas_available()));
    hrmt_context_destroy(ctx);
}
