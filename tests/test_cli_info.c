/* `hrmt info`: runs the built command and checks its JSON against the library's
 * own view of this machine (same environment, same process tree). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "support/run_cmd.h"
#include "support/test_common.h"

/* Runs `hrmt <args>` (stderr merged when merge_stderr); returns its exit
 * status and the output (caller frees). */
static int run_hrmt(const char *args, int merge_stderr, char **out) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/hrmt' %s%s", HRMT_TEST_BINARY_DIR, args,
             merge_stderr ? " 2>&1" : "");
    int st = hrmt_test_popen(cmd, out);
    cr_assert(WIFEXITED(st), "%s did not exit normally", cmd);
    return WEXITSTATUS(st);
}

static cJSON *info_json(void) {
    char *out = NULL;
    int rc = run_hrmt("info --json", 0, &out);
    cr_assert_eq(rc, 0, "hrmt info --json exited %d: %s", rc, out);
    cJSON *root = cJSON_Parse(out);
    cr_assert_not_null(root, "not JSON: %s", out);
    cr_assert(cJSON_IsObject(root));
    free(out);
    return root;
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert(cJSON_IsNumber(v), "number %s", k);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert(cJSON_IsString(v), "string %s", k);
    return v->valuestring;
}

Test(cli_info, json_matches_the_library) {
    cJSON *root = info_json();
    hrmt_context *ctx = hrmt_test_context(); /* same HRMT_ISA as the child saw */

    cr_expect_str_eq(str(root, "isa"), hrmt_isa_name(hrmt_context_isa(ctx)));
    const cJSON *isas = cJSON_GetObjectItemCaseSensitive(root, "isas_available");
    cr_assert(cJSON_IsArray(isas));
    unsigned mask = hrmt_isas_available(), seen = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, isas) {
        cr_assert(cJSON_IsString(it));
        hrmt_isa isa;
        cr_assert_eq(hrmt_isa_parse(it->valuestring, &isa), HRMT_OK, "%s", it->valuestring);
        seen |= 1u << isa;
    }
    cr_expect_eq(seen, mask);
    cr_expect_float_eq(num(root, "threads"), (double)hrmt_context_threads(ctx), 0.0);

    hrmt_topology topo;
    cr_assert_eq(hrmt_topology_detect(&topo), HRMT_OK);
    const cJSON *caches = cJSON_GetObjectItemCaseSensitive(root, "caches");
    cr_assert(cJSON_IsArray(caches));
    cr_assert_eq(cJSON_GetArraySize(caches), topo.num_levels);
    for (int i = 0; i < topo.num_levels; i++) {
        const cJSON *c = cJSON_GetArrayItem(caches, i);
        const hrmt_cache_level *w = &topo.caches[i];
        cr_expect_float_eq(num(c, "level"), w->level, 0.0);
        cr_expect_float_eq(num(c, "size_bytes"), (double)w->size_bytes, 0.0, "L%d", w->level);
        cr_expect_float_eq(num(c, "line_bytes"), (double)w->line_bytes, 0.0);
        cr_expect_float_eq(num(c, "ways"), w->ways, 0.0);
        cr_expect_float_eq(num(c, "shared_by_cores"), w->shared_by_cores, 0.0);
        /* Effective share: the context's (it may have calibrated), within the claim. */
        const hrmt_cache_level *e = &hrmt_context_topology(ctx)->caches[i];
        cr_expect_float_eq(num(c, "effective_bytes"), (double)e->effective_bytes, 0.0);
        cr_expect(e->effective_bytes > 0 && e->effective_bytes <= w->size_bytes);
        const cJSON *src = cJSON_GetObjectItemCaseSensitive(c, "effective_source");
        cr_expect(cJSON_IsString(src) && e->effective_source &&
                      !strcmp(src->valuestring, e->effective_source),
                  "L%d effective source", w->level);
    }

    const hrmt_tile_plan *p = hrmt_context_tile_plan(ctx);
    const cJSON *tp = cJSON_GetObjectItemCaseSensitive(root, "tile_plan");
    cr_assert(cJSON_IsObject(tp));
    cr_expect_float_eq(num(tp, "sram_tier_bytes"), (double)p->sram_tier_bytes, 0.0);
    cr_expect_float_eq(num(tp, "l_tile_bytes"), (double)p->l_tile_bytes, 0.0);
    cr_expect_float_eq(num(tp, "gemm_mr"), (double)p->gemm_mr, 0.0);
    cr_expect_float_eq(num(tp, "gemm_nr"), (double)p->gemm_nr, 0.0);
    cr_expect_float_eq(num(tp, "gemm_kc"), (double)p->gemm_kc, 0.0);
    cr_expect_float_eq(num(tp, "gemm_mc"), (double)p->gemm_mc, 0.0);
    cr_expect_float_eq(num(tp, "gemm_nc"), (double)p->gemm_nc, 0.0);

    const cJSON *cu = cJSON_GetObjectItemCaseSensitive(root, "cuda");
    cr_assert(cJSON_IsObject(cu));
    hrmt_cuda_info ci;
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    cr_expect_eq(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cu, "built")), ci.built != 0);
    cr_expect_float_eq(num(cu, "device_count"), ci.device_count, 0.0);
    const char *status = str(cu, "status");
    if (!ci.built)
        cr_expect_str_eq(status, "not built");
    else if (ci.device_count == 0)
        cr_expect_str_eq(status, "no device");
    else
        cr_expect_str_eq(str(cu, "name"), ci.name);
    hrmt_context_destroy(ctx);
    cJSON_Delete(root);
}

Test(cli_info, isa_env_selects_lower_isa) {
    if (!(hrmt_isas_available() & (1u << HRMT_ISA_AVX2))) {
        /* Without AVX2 the same request must be refused instead. */
        setenv("HRMT_ISA", "avx2", 1);
        char *out = NULL;
        cr_expect_neq(run_hrmt("info --json", 1, &out), 0);
        free(out);
        return;
    }
    setenv("HRMT_ISA", "avx2", 1);
    cJSON *root = info_json();
    cr_expect_str_eq(str(root, "isa"), "avx2");
    cJSON_Delete(root);
    setenv("HRMT_ISA", "scalar", 1);
    root = info_json();
    cr_expect_str_eq(str(root, "isa"), "scalar");
    cJSON_Delete(root);
}

Test(cli_info, bogus_isa_fails_naming_the_choices) {
    setenv("HRMT_ISA", "bogus", 1);
    char *out = NULL;
    int rc = run_hrmt("info", 1, &out);
    cr_expect_neq(rc, 0);
    for (int i = 0; i < HRMT_ISA_COUNT; i++)
        cr_expect_not_null(strstr(out, hrmt_isa_name((hrmt_isa)i)), "lists %s: %s",
                           hrmt_isa_name((hrmt_isa)i), out);
    cr_expect_not_null(strstr(out, "bogus"), "%s", out);
    free(out);
}

Test(cli_info, cache_override_reaches_the_report) {
    setenv("HRMT_CACHE_L2", "3145728", 1);
    cJSON *root = info_json();
    const cJSON *caches = cJSON_GetObjectItemCaseSensitive(root, "caches");
    int found = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, caches) {
        if (num(c, "level") == 2) {
            found = 1;
            cr_expect_float_eq(num(c, "size_bytes"), 3145728.0, 0.0);
        }
    }
    cr_expect(found);
    cr_expect_not_null(strstr(str(root, "topology_source"), "+env"));
    cJSON_Delete(root);
    setenv("HRMT_CACHE_L2", "2MB", 1);
    char *out = NULL;
    cr_expect_neq(run_hrmt("info --json", 1, &out), 0, "malformed override refused");
    cr_expect_not_null(strstr(out, "HRMT_CACHE"), "%s", out);
    free(out);
}

Test(cli_info, text_report_and_usage) {
    hrmt_topology topo;
    cr_assert_eq(hrmt_topology_detect(&topo), HRMT_OK);
    char *out = NULL;
    cr_assert_eq(run_hrmt("info", 0, &out), 0, "%s", out);
    char l1[64];
    snprintf(l1, sizeof l1, "%zu bytes", topo.caches[0].size_bytes);
    cr_expect_not_null(strstr(out, "L1d"), "%s", out);
    cr_expect_not_null(strstr(out, l1), "L1d size %s in: %s", l1, out);
    cr_expect_not_null(strstr(out, "tile plan"), "%s", out);
    cr_expect_not_null(strstr(out, "cuda"), "%s", out);
    free(out);

    cr_expect_eq(run_hrmt("info --help", 0, &out), 0);
    cr_expect_not_null(strstr(out, "--json"), "%s", out);
    free(out);
    cr_expect_eq(run_hrmt("info --frobnicate", 1, &out), 2, "unknown flag is a usage error");
    cr_expect_not_null(strstr(out, "--frobnicate"), "%s", out);
    free(out);
    cr_expect_eq(run_hrmt("info extra", 1, &out), 2, "stray argument is a usage error");
    free(out);
}
