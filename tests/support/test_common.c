#include "support/test_common.h"

#include "support/run_cmd.h"

#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A per-ISA run (ctest's NAME.ISA tests set HRMT_ISA) on a CPU or build
 * without that ISA skips as a whole, saying why, before Criterion starts any
 * test: a skip inside a forked test could only fail that test (ctest's
 * SKIP_RETURN_CODE 77 sees the binary's status). */
__attribute__((constructor)) static void skip_unavailable_isa(void) {
    const char *want = getenv("HRMT_ISA");
    hrmt_isa isa;
    if (!want || !*want || hrmt_isa_parse(want, &isa) != HRMT_OK) return;
    if (!(hrmt_isas_available() & (1u << isa))) {
        fprintf(stderr, "skipping: HRMT_ISA=%s, which this CPU, OS or build cannot run\n", want);
        exit(77);
    }
}

hrmt_context *hrmt_test_context_opts(const hrmt_context_options *o) {
    hrmt_context *ctx = NULL;
    char err[256] = "";
    hrmt_status s = hrmt_context_create(o, &ctx, err, sizeof err);
    if (s == HRMT_ERR_ISA) {
        const char *want = getenv("HRMT_ISA");
        hrmt_isa isa;
        if (want && hrmt_isa_parse(want, &isa) == HRMT_OK) {
            fprintf(stderr, "skipping: %s\n", err);
            exit(77);
        }
    }
    if (s != HRMT_OK) {
        fprintf(stderr, "context creation failed: %s: %s\n", hrmt_status_str(s), err);
        exit(1);
    }
    return ctx;
}

hrmt_context *hrmt_test_context(void) { return hrmt_test_context_opts(NULL); }

hrmt_context *hrmt_test_amx_context(int threads) {
    hrmt_context_options o = hrmt_context_default_options();
    o.isa = "amx";
    o.num_threads = threads;
    o.event_log_enabled = 0;
    hrmt_context *ctx = NULL;
    char err[256] = "";
    hrmt_status s = hrmt_context_create(&o, &ctx, err, sizeof err);
    if (s == HRMT_ERR_ISA) cr_skip_test("no amx table here: %s", err);
    cr_assert_eq(s, HRMT_OK, "%s", err);
    return ctx;
}

float hrmt_test_uniform(hrmt_test_rng *r) {
    uint64_t x = r->s ? r->s : 0x9E3779B97F4A7C15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    r->s = x;
    return (float)((double)(x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

const char *hrmt_test_data(const char *rel) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", HRMT_TEST_DATA_DIR, rel);
    return buf;
}

int hrmt_test_cuda_required(void) {
    const char *v = getenv("HRMT_TEST_REQUIRE_CUDA");
    return v && *v && strcmp(v, "0") != 0;
}

char *hrmt_test_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = hrmt_test_read_all(f);
    fclose(f);
    return text;
}

void hrmt_test_spit(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert(fputs(text, f) >= 0, "%s", path);
    cr_assert_eq(fclose(f), 0, "%s", path);
}
