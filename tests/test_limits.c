/* hrmt_limits: the documented defaults (docs/LIMITS.md), their environment
 * overrides, the setter's checks, and the carry's batch x seq limit. Config,
 * header and thread limits are tested where those inputs are read
 * (test_model_errors, test_safetensors, test_context). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_common.h"

/* The table of docs/LIMITS.md, written out independently of the library. */
Test(limits, defaults_are_the_documented_ones) {
    hrmt_limits d = hrmt_limits_default();
    cr_expect_eq(d.hidden_size, 8192);
    cr_expect_eq(d.num_heads, 256);
    cr_expect_eq(d.layers, 64);
    cr_expect_eq(d.cycles, 64);
    cr_expect_eq(d.halt_max_steps, 1024);
    cr_expect_eq(d.seq_len, 4096);
    cr_expect_eq(d.vocab_size, 1048576);
    cr_expect_eq(d.puzzle_ids, 16777216);
    cr_expect_eq(d.params, 1073741824);
    cr_expect_eq(d.batch_tokens, 2097152);
    cr_expect_eq(d.threads, 4096);
    cr_expect_eq(d.header_bytes, 100000000);
    cr_expect_eq(d.tensors, 16384);
    cr_expect_eq(memcmp(hrmt_context_limits(NULL), &d, sizeof d), 0, "NULL context: defaults");
    /* The official Sudoku config is well inside them. */
    hrmt_model_config c = hrmt_model_config_default();
    cr_expect_eq(hrmt_model_config_validate(NULL, &c), HRMT_OK);
    /* A context without explicit limits and without HRMT_LIMIT_* has the defaults. */
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_eq(memcmp(hrmt_context_limits(ctx), &d, sizeof d), 0);
    hrmt_context_destroy(ctx);
}

Test(limits, setter_refuses_zero_and_values_above_the_ceiling) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_limits l = hrmt_limits_default();
    l.cycles = 0;
    cr_expect_eq(hrmt_context_set_limits(ctx, &l), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "cycles") != NULL, "%s", hrmt_last_error(ctx));
    l = hrmt_limits_default();
    l.layers = 4097; /* ceiling 4096 */
    cr_expect_eq(hrmt_context_set_limits(ctx, &l), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "layers = 4097 is outside 1..4096") != NULL, "%s",
              hrmt_last_error(ctx));
    /* A refused setting leaves the limits as they were. */
    cr_expect_eq(hrmt_context_limits(ctx)->layers, 64);
    l.layers = 4096;
    cr_expect_eq(hrmt_context_set_limits(ctx, &l), HRMT_OK);
    cr_expect_eq(hrmt_context_limits(ctx)->layers, 4096);
    cr_expect_eq(hrmt_context_set_limits(ctx, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_context_set_limits(NULL, &l), HRMT_ERR_INVALID_ARG);
    hrmt_context_destroy(ctx);
    /* Explicit limits at creation are checked the same way. */
    hrmt_context_options o = hrmt_context_default_options();
    l = hrmt_limits_default();
    l.tensors = -3;
    o.limits = &l;
    char err[256] = "";
    ctx = NULL;
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_INVALID_ARG);
    cr_expect_null(ctx);
    cr_expect(strstr(err, "tensors") != NULL, "%s", err);
}

Test(limits, environment_raises_a_limit) {
    setenv("HRMT_LIMIT_CYCLES", "256", 1);
    setenv("HRMT_LIMIT_BATCH_TOKENS", "1099511627776", 1); /* 2^40, the ceiling */
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_eq(hrmt_context_limits(ctx)->cycles, 256);
    cr_expect_eq(hrmt_context_limits(ctx)->batch_tokens, (int64_t)1 << 40);
    hrmt_model_config c = hrmt_model_config_default();
    c.H_cycles = 256;
    cr_expect_eq(hrmt_model_config_validate(ctx, &c), HRMT_OK, "%s", hrmt_last_error(ctx));
    c.H_cycles = 257;
    cr_expect_eq(hrmt_model_config_validate(ctx, &c), HRMT_ERR_LIMIT);
    hrmt_context_destroy(ctx);
    /* Explicit limits ignore the environment (a server's limits stay its own). */
    hrmt_context_options o = hrmt_context_default_options();
    hrmt_limits l = hrmt_limits_default();
    o.limits = &l;
    ctx = hrmt_test_context_opts(&o);
    cr_expect_eq(hrmt_context_limits(ctx)->cycles, 64);
    hrmt_context_destroy(ctx);
}

Test(limits, malformed_environment_is_an_error) {
    static const char *const bad[] = {
        "abc", "0", "-5", "12x", "4097", "+7", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("HRMT_LIMIT_LAYERS", bad[i], 1);
        hrmt_context *ctx = NULL;
        char err[256] = "";
        cr_expect_eq(hrmt_context_create(NULL, &ctx, err, sizeof err), HRMT_ERR_INVALID_ARG,
                     "HRMT_LIMIT_LAYERS=%s accepted", bad[i]);
        cr_expect_null(ctx);
        cr_expect(strstr(err, "HRMT_LIMIT_LAYERS") && strstr(err, "1..4096"), "%s", err);
    }
}

/* batch x (seq_len + prefix) rows bound every carry buffer. */
Test(limits, carry_batch_tokens) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_model_config c = hrmt_model_config_default();
    c.hidden_size = 64;
    c.num_heads = 4;
    c.H_layers = c.L_layers = 1;
    c.puzzle_emb_ndim = 64; /* one prefix row: T = 82 */
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &c, 1, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_limits l = hrmt_limits_default();
    l.batch_tokens = 1000;
    cr_assert_eq(hrmt_context_set_limits(ctx, &l), HRMT_OK);
    hrmt_carry *carry = NULL;
    cr_expect_eq(hrmt_carry_create(m, 13, &carry), HRMT_ERR_LIMIT); /* 1066 rows */
    cr_expect_null(carry);
    cr_expect(strstr(hrmt_last_error(ctx), "13 x 82 = 1066 exceeds the limit of 1000") &&
                  strstr(hrmt_last_error(ctx), "HRMT_LIMIT_BATCH_TOKENS"),
              "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_carry_create(m, 12, &carry), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_carry_destroy(carry);
    /* The default: 2^21 rows, 25575 samples of 82 rows. */
    cr_assert_eq(hrmt_context_set_limits(ctx, hrmt_context_limits(NULL)), HRMT_OK);
    cr_expect_eq(hrmt_carry_create(m, 25576, &carry), HRMT_ERR_LIMIT);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}
