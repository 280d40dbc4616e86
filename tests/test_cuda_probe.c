/* GPU memory-tier probes (src/cuda/probe_*.cu through core/probe.c and
 * `hrmt probe --backend cuda` / `--compare`). Nothing here assumes how a given
 * GPU's tiers compare (that is what the probe measures); the tests check that
 * every tier row is there, every value is positive and finite, the JSON is
 * well formed, and that bad working sets fail with the right status and a
 * message instead of crashing. Without a CUDA build or device the device
 * tests skip with the reason (fail when HRMT_TEST_REQUIRE_CUDA=1, as
 * bench/gpu.sh sets it); the CLI's no-device path is checked instead. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/probe_gpu.h"
#include "support/run_cmd.h"
#include "support/test_common.h"

#define HRMT_BIN HRMT_TEST_BINARY_DIR "/hrmt"
#define MIB ((size_t)1 << 20)

static int have_device(hrmt_cuda_info *ci) {
    memset(ci, 0, sizeof *ci);
    cr_assert_eq(hrmt_cuda_query(ci), HRMT_OK);
    return ci->built && ci->device_count > 0;
}

static hrmt_context *cuda_ctx(void) {
    hrmt_cuda_info ci;
    if (!have_device(&ci)) {
        const char *why = ci.built ? "none found" : "hrmt was built without the CUDA backend";
        if (hrmt_test_cuda_required()) cr_assert_fail("HRMT_TEST_REQUIRE_CUDA is set but: %s", why);
        cr_skip_test("no CUDA device: %s", why);
    }
    hrmt_context_options o = hrmt_context_default_options();
    o.backend = HRMT_BACKEND_CUDA;
    hrmt_context *ctx = NULL;
    char err[256] = "";
    hrmt_status s = hrmt_context_create(&o, &ctx, err, sizeof err);
    cr_assert_eq(s, HRMT_OK, "CUDA context: %s: %s", hrmt_status_str(s), err);
    return ctx;
}

static void positive(double v, const char *what, size_t bytes) {
    cr_expect(isfinite(v) && v > 0.0, "%s at %zu bytes: %g", what, bytes, v);
}

static void check_bw(const hrmt_bandwidth *bw, size_t bytes) {
    positive(bw->read_gbps, "read GB/s", bytes);
    positive(bw->write_gbps, "write GB/s", bytes);
    positive(bw->copy_gbps, "copy GB/s", bytes);
}

/* Runs `hrmt <args>` (stderr merged) and returns its exit status; *out (caller
 * frees) receives the output. */
static int run_hrmt(const char *args, char **out) {
    char cmd[1024];
    cr_assert(snprintf(cmd, sizeof cmd, "%s %s 2>&1", HRMT_BIN, args) < (int)sizeof cmd);
    return hrmt_test_sh(cmd, out);
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsNumber(v), "field '%s' missing or not a number", key);
    cr_assert(isfinite(v->valuedouble), "field '%s' not finite", key);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsString(v), "field '%s' missing or not a string", key);
    return v->valuestring;
}

/* ---- library ------------------------------------------------------------------ */

Test(cuda_probe, gpu_probes_refuse_a_cpu_context) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_gpu_caps caps;
    double ns;
    hrmt_bandwidth bw;
    cr_expect_eq(hrmt_probe_gpu_caps(ctx, &caps), HRMT_ERR_UNSUPPORTED);
    cr_expect(strstr(hrmt_last_error(ctx), "CUDA context"), "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_probe_smem_latency(ctx, 4096, &ns), HRMT_ERR_UNSUPPORTED);
    cr_expect_eq(hrmt_probe_smem_bandwidth(ctx, 32768, &bw, NULL), HRMT_ERR_UNSUPPORTED);
    cr_expect_eq(hrmt_probe_gpu_caps(ctx, NULL), HRMT_ERR_INVALID_ARG);
    hrmt_context_destroy(ctx);
}

Test(cuda_probe, caps_describe_every_tier, .timeout = 120) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_gpu_caps c;
    cr_assert_eq(hrmt_probe_gpu_caps(ctx, &c), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect(c.name[0], "device name");
    cr_expect(c.sms > 0 && c.smem_per_block > 0 && c.smem_per_sm > 0 && c.l1_per_sm > 0 &&
                  c.l2_bytes > 0 && c.global_bytes > 0,
              "sms %d smem %zu/%zu l1 %zu l2 %zu global %zu", c.sms, c.smem_per_block,
              c.smem_per_sm, c.l1_per_sm, c.l2_bytes, c.global_bytes);
    /* Consistency of the device's own numbers, not a property of one GPU. */
    cr_expect(c.smem_per_block <= c.smem_per_sm && c.smem_per_sm <= c.l1_per_sm);
    cr_expect(c.free_bytes <= c.global_bytes);
    hrmt_context_destroy(ctx);
}

Test(cuda_probe, latency_and_bandwidth_of_every_tier, .timeout = 300) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_gpu_caps c;
    cr_assert_eq(hrmt_probe_gpu_caps(ctx, &c), HRMT_OK, "%s", hrmt_last_error(ctx));
    /* An L1-sized, an L2-sized and a beyond-L2 set, as the CLI's tier rows. */
    size_t hbm = 16 * c.l2_bytes > 256 * MIB ? 16 * c.l2_bytes : 256 * MIB;
    if (hbm > c.free_bytes / 4) hbm = c.free_bytes / 4;
    const size_t sets[3] = {c.l1_per_sm / 4, 4 * c.l1_per_sm, hbm};
    for (int i = 0; i < 3; i++) {
        double ns = 0;
        hrmt_bandwidth bw = {0, 0, 0};
        cr_assert_eq(hrmt_probe_latency(ctx, sets[i], &ns), HRMT_OK, "%zu: %s", sets[i],
                     hrmt_last_error(ctx));
        positive(ns, "latency ns", sets[i]);
        cr_assert_eq(hrmt_probe_bandwidth(ctx, sets[i], &bw), HRMT_OK, "%zu: %s", sets[i],
                     hrmt_last_error(ctx));
        check_bw(&bw, sets[i]);
    }
    /* Shared memory: the chase at its largest block size, the stream in every SM. */
    double ns = 0;
    cr_assert_eq(hrmt_probe_smem_latency(ctx, c.smem_per_block, &ns), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    positive(ns, "SMEM latency ns", c.smem_per_block);
    hrmt_bandwidth bw = {0, 0, 0};
    size_t total = 0;
    cr_assert_eq(hrmt_probe_smem_bandwidth(ctx, 32768, &bw, &total), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    check_bw(&bw, 32768);
    cr_expect_eq(total, (size_t)32768 * (size_t)c.sms);
    hrmt_context_destroy(ctx);
}

Test(cuda_probe, bad_working_sets_fail_with_a_message, .timeout = 120) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_gpu_caps c;
    cr_assert_eq(hrmt_probe_gpu_caps(ctx, &c), HRMT_OK, "%s", hrmt_last_error(ctx));
    double ns;
    hrmt_bandwidth bw;
    cr_expect_eq(hrmt_probe_latency(ctx, 64, &ns), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_bandwidth(ctx, 64, &bw), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_latency(ctx, 1 << 20, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_smem_latency(ctx, 64, &ns), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_smem_latency(ctx, c.smem_per_block + 4096, &ns), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "hrmt_probe_smem_latency"), "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_probe_smem_bandwidth(ctx, 1024, &bw, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_probe_smem_bandwidth(ctx, c.smem_per_block + 4096, &bw, NULL),
                 HRMT_ERR_INVALID_ARG);
    /* More than the device has: OUT_OF_MEMORY with the failing call named. */
    const size_t huge = 2 * c.global_bytes;
    cr_expect_eq(hrmt_probe_latency(ctx, huge, &ns), HRMT_ERR_OUT_OF_MEMORY);
    cr_expect(strstr(hrmt_last_error(ctx), "hrmt_probe_latency") &&
                  strstr(hrmt_last_error(ctx), "cudaMalloc"),
              "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_probe_bandwidth(ctx, huge, &bw), HRMT_ERR_OUT_OF_MEMORY);
    cr_expect(strstr(hrmt_last_error(ctx), "hrmt_probe_bandwidth"), "%s", hrmt_last_error(ctx));
    /* A failed allocation leaves the context usable. */
    cr_expect_eq(hrmt_probe_latency(ctx, 1 << 16, &ns), HRMT_OK, "%s", hrmt_last_error(ctx));
    positive(ns, "latency after a failed probe", 1 << 16);
    hrmt_context_destroy(ctx);
}

/* ---- command line ------------------------------------------------------------- */

/* Runs everywhere: without a device a clear error and exit 1, with one the
 * full tier map (SMEM, L1, L2, HBM), every value positive. */
Test(cuda_probe_cli, backend_cuda_tiers_or_clear_error, .timeout = 600) {
    hrmt_cuda_info ci;
    char *out;
    int rc = run_hrmt("probe --backend cuda --quick --quiet --json", &out);
    if (!have_device(&ci)) {
        cr_expect(!hrmt_test_cuda_required(),
                  "HRMT_TEST_REQUIRE_CUDA is set but there is no device");
        cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
        cr_expect(
            strstr(out, "CUDA") && strstr(out, ci.built ? "no CUDA device" : "built without CUDA"),
            "says why:\n%s", out);
        free(out);
        return;
    }
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "not JSON:\n%s", out);
    cr_expect_str_eq(str(j, "device"), "cuda");
    cr_expect(str(j, "device_name")[0]);
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(j, "latency");
    const cJSON *bws = cJSON_GetObjectItemCaseSensitive(j, "bandwidth");
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(j, "levels");
    cr_assert(cJSON_IsArray(lat) && cJSON_IsArray(bws) && cJSON_IsArray(lv));
    cr_expect(cJSON_GetArraySize(lat) >= 5 && cJSON_GetArraySize(lat) == cJSON_GetArraySize(bws));
    const cJSON *e;
    cJSON_ArrayForEach(e, lat) {
        cr_expect(num(e, "ns") > 0, "%.0f bytes", num(e, "bytes"));
        cr_expect_str_eq(str(e, "device"), "cuda");
    }
    cJSON_ArrayForEach(e, bws) {
        cr_expect(num(e, "read_gbps") > 0 && num(e, "write_gbps") > 0 && num(e, "copy_gbps") > 0,
                  "%.0f bytes", num(e, "bytes"));
    }
    static const char *const names[] = {"SMEM", "L1", "L2", "HBM"};
    cr_assert_eq(cJSON_GetArraySize(lv), 4, "%s", out);
    int i = 0;
    cJSON_ArrayForEach(e, lv) {
        cr_expect_str_eq(str(e, "name"), names[i]);
        cr_expect(num(e, "size_bytes") > 0 && num(e, "probe_bytes") > 0, "%s", names[i]);
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "measured")), "%s", names[i]);
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "bandwidth_measured")), "%s",
                  names[i]);
        cr_expect(num(e, "ns") > 0, "%s", names[i]);
        cr_expect(num(e, "read_gbps") > 0 && num(e, "write_gbps") > 0 && num(e, "copy_gbps") > 0,
                  "%s", names[i]);
        i++;
    }
    cJSON_Delete(j);
    free(out);
}

/* --compare --json: the CPU side always; the GPU side, or null with the reason. */
Test(cuda_probe_cli, compare_json_has_both_sides, .timeout = 600) {
    hrmt_cuda_info ci;
    const int gpu = have_device(&ci);
    char *out;
    int rc = run_hrmt("probe --compare --json --quick --quiet --max-bytes 256K", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "not JSON:\n%s", out);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "cpu");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "gpu");
    cr_assert(cJSON_IsObject(c), "%s", out);
    cr_expect_str_eq(str(c, "device"), "cpu");
    if (gpu) {
        cr_assert(cJSON_IsObject(g), "%s", out);
        cr_expect_str_eq(str(g, "device"), "cuda");
        const cJSON *lv = cJSON_GetObjectItemCaseSensitive(g, "levels");
        cr_expect_eq(cJSON_GetArraySize(lv), 4);
        /* SMEM is measured whatever --max-bytes says (no global working set). */
        const cJSON *smem = cJSON_GetArrayItem(lv, 0);
        cr_expect(num(smem, "ns") > 0 && num(smem, "read_gbps") > 0);
    } else {
        cr_expect(cJSON_IsNull(g), "%s", out);
        cr_expect(str(j, "gpu_unavailable")[0]);
    }
    cJSON_Delete(j);
    /* --input prints a saved run as measured (a GPU run charted elsewhere). */
    char path[] = "/tmp/hrmt_test_cuda_probe_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs(out, f);
    fclose(f);
    free(out);
    char args[256];
    snprintf(args, sizeof args, "probe --input %s", path);
    rc = run_hrmt(args, &out);
    unlink(path);
    cr_expect_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(
        strstr(out, "CPU read GB/s") && strstr(out, gpu ? "GPU ns" : "GPU column unavailable"),
        "%s", out);
    free(out);
    rc = run_hrmt("probe --compare --quick --quiet --max-bytes 256K", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "CPU read GB/s") && strstr(out, "GPU read GB/s") && strstr(out, "SMEM"),
              "%s", out);
    if (!gpu) cr_expect(strstr(out, "GPU column unavailable"), "%s", out);
    free(out);
}
