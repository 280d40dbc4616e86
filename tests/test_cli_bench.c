/* End-to-end tests of the `hrmt` command: `hrmt bench` (JSON rows, field set,
 * consistency, tiered == baseline, flag errors) and `hrmt probe` (JSON shape,
 * tier latencies in order, plot, GPU slots). The binary runs through popen;
 * HRMT_ISA in the environment reaches it, so each ISA's run tests that ISA. */
#define _POSIX_C_SOURCE 200809L /* popen, mkstemp, mkfifo, symlink, open_memstream */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/bench_run.h"
#include "support/run_cmd.h"
#include "support/test_common.h"

#define HRMT_BIN HRMT_TEST_BINARY_DIR "/hrmt"

/* Runs `<pre> hrmt <args> <redir>` in the shell and returns its exit status;
 * *out (caller frees) receives what reached the pipe. run_hrmt merges stderr. */
static int run_hrmt_sh(const char *pre, const char *args, const char *redir, char **out) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s %s %s", pre, HRMT_BIN, args, redir);
    return hrmt_test_sh(cmd, out);
}

static int run_hrmt(const char *args, char **out) { return run_hrmt_sh("", args, "2>&1", out); }

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    buf[len] = 0;
    fclose(f);
    return buf;
}

static void temp_path(char *path, size_t len, const char *suffix) {
    char tmpl[] = "/tmp/hrmt_test_cli_XXXXXX";
    int fd = mkstemp(tmpl);
    cr_assert(fd >= 0);
    close(fd);
    unlink(tmpl);
    snprintf(path, len, "%s%s", tmpl, suffix);
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsNumber(v), "field '%s' missing or not a number", key);
    cr_assert(isfinite(v->valuedouble), "field '%s' not finite", key);
    return v->valuedouble;
}

static void check_stats(const cJSON *row, const char *key) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, key);
    cr_assert(cJSON_IsObject(s), "'%s' is not an object", key);
    double mn = num(s, "min"), mx = num(s, "max"), mean = num(s, "mean"), sd = num(s, "std"),
           med = num(s, "median");
    cr_expect(mn > 0, "%s.min %g > 0", key, mn);
    cr_expect(mn <= med && med <= mx, "%s: min %g <= median %g <= max %g", key, mn, med, mx);
    cr_expect(mn <= mean && mean <= mx, "%s: min %g <= mean %g <= max %g", key, mn, mean, mx);
    cr_expect(sd >= 0 && sd <= mx - mn, "%s.std %g within [0, max-min]", key, sd);
}

/* Runs `hrmt bench --mode compare OPTS --output F`, which must succeed and
 * report the schedules' outputs byte-identical; the text it printed in *out
 * (caller frees), its four JSON rows returned. */
static cJSON *compare_rows(const char *opts, char **out) {
    char path[256];
    temp_path(path, sizeof path, ".json");
    char args[512];
    snprintf(args, sizeof args, "bench --mode compare %s --output %s", opts, path);
    int rc = run_hrmt(args, out);
    cr_assert_eq(rc, 0, "hrmt bench failed (%d):\n%s", rc, *out);
    cr_expect(strstr(*out, "byte-identical"), "table reports the identity check:\n%s", *out);
    char *text = read_file(path);
    unlink(path);
    cJSON *arr = cJSON_Parse(text);
    cr_assert(cJSON_IsArray(arr), "not a JSON array:\n%s", text);
    cr_assert_eq(cJSON_GetArraySize(arr), 4);
    free(text);
    return arr;
}

/* --rounds: a row per (batch, schedule) over all rounds, and each
 * schedule's tier statistics its own although the schedules' runs
 * alternate: the baseline keeps nothing in the SRAM tier and moves nothing
 * between tiers, the tiered schedule does both. */
Test(cli_bench, compare_rounds_keep_each_schedules_tier_stats) {
    char *out;
    cJSON *arr = compare_rows(
        "--rounds 3 --batch-sizes 1,2 --seq-lens 33 --iterations 2 "
        "--warmup 1 --hidden-size 64 --num-heads 4 --H-layers 1 "
        "--L-layers 1 --quiet",
        &out);
    free(out);
    const cJSON *row;
    int tiered_rows = 0;
    cJSON_ArrayForEach(row, arr) {
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(row, "mode");
        cr_assert(cJSON_IsString(mode));
        const int tiered = !strcmp(mode->valuestring, "tiered");
        tiered_rows += tiered;
        check_stats(row, "total_inference_latency_ms");
        if (tiered) {
            cr_expect(num(row, "sram_peak_mb") > 0, "tiered sram_peak_mb %g",
                      num(row, "sram_peak_mb"));
            cr_expect(num(row, "sram_hit_rate") > 0, "tiered hit rate %g",
                      num(row, "sram_hit_rate"));
            cr_expect(num(row, "speedup_vs_baseline") > 0);
        } else {
            cr_expect_eq(num(row, "sram_peak_mb"), 0, "baseline sram_peak_mb %g",
                         num(row, "sram_peak_mb"));
            cr_expect_eq(num(row, "sram_hit_rate"), 0);
            cr_expect_eq(num(row, "h_l_transfer_mean_us"), 0);
            cr_expect_eq(num(row, "l_h_transfer_mean_us"), 0);
        }
    }
    cr_expect_eq(tiered_rows, 2);
    cJSON_Delete(arr);
}

Test(cli_bench, compare_run_writes_every_field) {
    char *out;
    cJSON *arr = compare_rows(
        "--batch-sizes 1,2 --seq-lens 81 --iterations 2 --warmup 1 "
        "--hidden-size 64 --num-heads 4 --H-layers 1 --L-layers 1 "
        "--quiet --profile",
        &out);
    cr_expect(!strchr(out, '\r'), "no progress bar when stderr is not a terminal");
    cr_expect(strstr(out, "Where the step goes") && strstr(out, "gate_up") && strstr(out, "rest"),
              "--profile prints the per-part table:\n%s", out);
    free(out);
    int seen[2][3] = {{0}};
    static const char *const positive[] = {"h_over_l_latency_ratio",
                                           "sram_probe_latency_ns",
                                           "dram_probe_latency_ns",
                                           "tokens_per_s",
                                           "gflops",
                                           "gemm_peak_gflops",
                                           "gemm_peak_fraction",
                                           "memory_efficiency"};
    static const char *const nonneg[] = {"sram_peak_mb", "dram_peak_mb", "total_memory_mb",
                                         "h_l_transfer_mean_us", "l_h_transfer_mean_us"};
    const cJSON *row;
    cJSON_ArrayForEach(row, arr) {
        const cJSON *mode = cJSON_GetObjectItemCaseSensitive(row, "mode");
        cr_assert(cJSON_IsString(mode));
        int tiered = !strcmp(mode->valuestring, "tiered");
        cr_assert(tiered || !strcmp(mode->valuestring, "baseline"), "mode %s", mode->valuestring);
        int b = (int)num(row, "batch_size");
        cr_assert(b == 1 || b == 2, "batch_size %d", b);
        cr_expect_eq(num(row, "seq_len"), 81);
        seen[tiered][b]++;
        check_stats(row, "l_level_latency_us");
        check_stats(row, "h_level_latency_us");
        check_stats(row, "total_inference_latency_ms");
        for (size_t i = 0; i < sizeof positive / sizeof positive[0]; i++)
            cr_expect(num(row, positive[i]) > 0, "%s > 0", positive[i]);
        for (size_t i = 0; i < sizeof nonneg / sizeof nonneg[0]; i++)
            cr_expect(num(row, nonneg[i]) >= 0, "%s >= 0", nonneg[i]);
        double hit = num(row, "sram_hit_rate");
        cr_expect(hit >= 0 && hit <= 1, "sram_hit_rate %g in [0,1]", hit);
        double eff = num(row, "memory_efficiency");
        cr_expect(eff <= 1.0 + 1e-9, "memory_efficiency %g <= 1", eff);
        /* A timing bound would be flaky on a shared machine; the fraction must
         * be the row's own rate over the run's measured GEMM peak. */
        cr_expect_float_eq(num(row, "gemm_peak_fraction"),
                           num(row, "gflops") / num(row, "gemm_peak_gflops"), 1e-6,
                           "gemm_peak_fraction is gflops / gemm_peak_gflops");
        cr_expect_float_eq(num(row, "total_memory_mb"),
                           num(row, "sram_peak_mb") + num(row, "dram_peak_mb"), 1e-9);
        /* The ratio is H mean over L mean, both reported. */
        double hm = num(cJSON_GetObjectItemCaseSensitive(row, "h_level_latency_us"), "mean");
        double lm = num(cJSON_GetObjectItemCaseSensitive(row, "l_level_latency_us"), "mean");
        cr_expect_float_eq(num(row, "h_over_l_latency_ratio"), hm / lm, 1e-9 * hm / lm);
        cr_expect(num(row, "sram_probe_latency_ns") < num(row, "dram_probe_latency_ns"),
                  "L1-sized probe faster than beyond-L3 probe");
        /* Every part ran, and the parts fit inside the mean step. */
        const cJSON *parts = cJSON_GetObjectItemCaseSensitive(row, "step_parts_ms");
        cr_assert(cJSON_IsObject(parts), "step_parts_ms is an object");
        double psum = 0.0;
        for (int p = 0; p < HRMT_PART_COUNT; p++) {
            double v = num(parts, hrmt_step_part_name((hrmt_step_part)p));
            cr_expect(v > 0, "step_parts_ms.%s = %g > 0", hrmt_step_part_name((hrmt_step_part)p),
                      v);
            psum += v;
        }
        double step_mean =
            num(cJSON_GetObjectItemCaseSensitive(row, "total_inference_latency_ms"), "mean");
        cr_expect(psum <= step_mean * (1.0 + 1e-6), "parts %g ms <= step %g ms", psum, step_mean);
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "outputs_identical")),
                  "outputs_identical true");
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(row, "speedup_vs_baseline");
        if (tiered)
            cr_expect(cJSON_IsNumber(sp) && sp->valuedouble > 0, "tiered has speedup");
        else
            cr_expect_null(sp, "baseline rows carry no speedup");
    }
    for (int t = 0; t < 2; t++)
        for (int b = 1; b <= 2; b++) cr_expect_eq(seen[t][b], 1, "one row per (mode, batch)");
    /* speedup = baseline mean step / tiered mean step of the same batch. */
    for (int i = 0; i < 4; i++) {
        const cJSON *r = cJSON_GetArrayItem(arr, i);
        if (strcmp(cJSON_GetObjectItemCaseSensitive(r, "mode")->valuestring, "tiered")) continue;
        const cJSON *base = NULL;
        for (int j = 0; j < 4; j++) {
            const cJSON *q = cJSON_GetArrayItem(arr, j);
            if (!strcmp(cJSON_GetObjectItemCaseSensitive(q, "mode")->valuestring, "baseline") &&
                num(q, "batch_size") == num(r, "batch_size"))
                base = q;
        }
        cr_assert_not_null(base);
        double want =
            num(cJSON_GetObjectItemCaseSensitive(base, "total_inference_latency_ms"), "mean") /
            num(cJSON_GetObjectItemCaseSensitive(r, "total_inference_latency_ms"), "mean");
        cr_expect_float_eq(num(r, "speedup_vs_baseline"), want, 1e-9 * want);
    }
    cJSON_Delete(arr);
}

Test(cli_bench, bad_flags_exit_2_naming_the_flag) {
    struct {
        const char *args, *flag;
    } cases[] = {{"bench --iterations 0", "--iterations"},
                 {"bench --warmup -1", "--warmup"},
                 {"bench --mode fast", "--mode"},
                 {"bench --batch-sizes 1,,8", "--batch-sizes"},
                 {"bench --seq-lens 0", "--seq-lens"},
                 {"bench --hidden-size 100 --num-heads 8", "--hidden-size"},
                 {"bench --hidden-size 100", "--hidden-size"}, /* default 8 heads */
                 {"bench --threads abc", "--threads"},
                 {"bench --dtype f16", "--dtype"},
                 {"bench --expansion 0", "--expansion"},
                 {"bench --H-cycles 3x", "--H-cycles"},
                 {"bench --bogus", "--bogus"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        int rc = run_hrmt(cases[i].args, &out);
        cr_expect_eq(rc, 2, "'%s' exit %d:\n%s", cases[i].args, rc, out);
        cr_expect(strstr(out, cases[i].flag), "'%s' names %s:\n%s", cases[i].args, cases[i].flag,
                  out);
        free(out);
    }
}

Test(cli_bench, help_lists_the_flags) {
    char *out;
    cr_assert_eq(run_hrmt("bench --help", &out), 0);
    static const char *const flags[] = {
        "--mode",     "--batch-sizes", "--seq-lens",  "--hidden-size", "--H-cycles",
        "--L-cycles", "--H-layers",    "--L-layers",  "--warmup",      "--iterations",
        "--output",   "--num-heads",   "--expansion", "--dtype",       "--threads",
        "--backend",  "--model",       "--quiet",     "--profile"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        cr_expect(strstr(out, flags[i]), "--help mentions %s", flags[i]);
    free(out);
}

/* HRMT_GEMM_TRACE=1: the parallel GEMM calls' thread table, one row per
 * timed configuration; nothing of it without the variable; a bad value is
 * refused by name. */
Test(cli_bench, gemm_trace_table) {
    static const char *const args =
        "bench --mode baseline --batch-sizes 4 --seq-lens 81 --iterations 2 --warmup 1 "
        "--hidden-size 64 --num-heads 4 --H-layers 1 --L-layers 1 --threads 2 --quiet";
    char *out;
    int rc = run_hrmt_sh("HRMT_GEMM_TRACE=1", args, "2>&1", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    const char *t = strstr(out, "Parallel GEMM calls");
    cr_expect(t && strstr(t, "in units") && strstr(t, "baseline"), "the trace table:\n%s", out);
    free(out);
    rc = run_hrmt(args, &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(!strstr(out, "Parallel GEMM calls"), "no trace table when off:\n%s", out);
    free(out);
    rc = run_hrmt_sh("HRMT_GEMM_TRACE=2", args, "2>&1", &out);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "HRMT_GEMM_TRACE"), "%s", out);
    free(out);
}

Test(cli_bench, model_file_fixes_seq_len) {
    char args[1024], *out;
    snprintf(args, sizeof args, "bench --model %s --config %s --seq-lens 64 --quiet",
             hrmt_test_data("golden/hrm/small-learned/model.safetensors"),
             HRMT_TEST_DATA_DIR "/golden/hrm/small-learned/case.json");
    int rc = run_hrmt(args, &out);
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "--seq-lens") && strstr(out, "30"), "names the flag and 30:\n%s", out);
    free(out);
}

Test(cli_bench, cuda_backend_is_a_clear_error_without_cuda) {
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    if (ci.built && ci.device_count > 0) return; /* a real GPU: nothing to refuse */
    char *out;
    int rc = run_hrmt("bench --backend cuda --quiet", &out);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "--backend cuda") &&
                  strstr(out, ci.built ? "no CUDA device" : "built without CUDA"),
              "%s", out);
    free(out);
    rc = run_hrmt("probe --backend cuda --quick --quiet", &out);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "CUDA"), "%s", out);
    free(out);
}

/* ---- hrmt probe ------------------------------------------------------------ */

Test(cli_probe, json_tiers_in_order) {
    char *out;
    int rc = run_hrmt("probe --json --quick --quiet", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "not JSON:\n%s", out);
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(j, "latency");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(j, "bandwidth");
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(j, "levels");
    cr_assert(cJSON_IsArray(lat) && cJSON_IsArray(bw) && cJSON_IsArray(lv));
    cr_assert(cJSON_GetArraySize(lat) >= 5);
    cr_expect_eq(cJSON_GetArraySize(lat), cJSON_GetArraySize(bw));
    double prev = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, lat) {
        double b = num(e, "bytes");
        cr_expect(b > prev, "sizes ascend");
        prev = b;
        cr_expect(num(e, "ns") > 0);
        cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(e, "device")->valuestring, "cpu");
    }
    cJSON_ArrayForEach(e, bw) {
        cr_expect(num(e, "read_gbps") > 0 && num(e, "write_gbps") > 0 && num(e, "copy_gbps") > 0);
    }
    /* One level per detected cache, then main memory, each measured at a point
     * beyond the level above; main memory beyond 2x the largest claimed cache
     * unless the probe says free memory did not allow it. Latencies are only
     * compared where every machine agrees: main memory is never faster than L1. */
    hrmt_topology topo;
    cr_assert_eq(hrmt_topology_detect(&topo), HRMT_OK);
    cr_assert_eq(cJSON_GetArraySize(lv), topo.num_levels + 1, "%s", out);
    size_t largest = 0;
    for (int k = 0; k < topo.num_levels; k++)
        if (topo.caches[k].size_bytes > largest) largest = topo.caches[k].size_bytes;
    double first_ns = 0;
    int i = 0;
    cJSON_ArrayForEach(e, lv) {
        const char *name = cJSON_GetObjectItemCaseSensitive(e, "name")->valuestring;
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "measured")),
                  "%s measured (no --max-bytes given)", name);
        double ns = num(e, "ns");
        cr_expect(ns > 0, "%s ns %.3f", name, ns);
        if (i < topo.num_levels) {
            char want[8];
            snprintf(want, sizeof want, "L%d", topo.caches[i].level);
            cr_expect_str_eq(name, want);
            cr_expect_eq(num(e, "size_bytes"), (double)topo.caches[i].size_bytes);
            cr_expect(num(e, "probe_bytes") <= (double)topo.caches[i].size_bytes);
            cr_expect(num(e, "effective_bytes") > 0 &&
                          num(e, "effective_bytes") <= (double)topo.caches[i].size_bytes,
                      "%s effective within its claim", name);
        } else {
            cr_expect_str_eq(name, "DRAM");
            const cJSON *beyond = cJSON_GetObjectItemCaseSensitive(e, "beyond_2x_largest_cache");
            cr_assert(cJSON_IsBool(beyond), "%s", out);
            if (cJSON_IsTrue(beyond))
                cr_expect(num(e, "probe_bytes") > 2.0 * (double)largest,
                          "main memory probed at %.0f bytes, largest cache %zu",
                          num(e, "probe_bytes"), largest);
            else
                cr_expect(num(e, "probe_bytes") > (double)largest);
            cr_expect(ns >= first_ns, "main memory %.2f ns not faster than L1 %.2f ns", ns,
                      first_ns);
        }
        if (i > 0) {
            cr_expect(num(e, "probe_bytes") > (double)topo.caches[i - 1].size_bytes,
                      "%s probed beyond the level above", name);
        } else {
            first_ns = ns;
        }
        i++;
    }
    /* The sweep itself reaches the main-memory point. */
    const cJSON *last = cJSON_GetArrayItem(lat, cJSON_GetArraySize(lat) - 1);
    const cJSON *dram = cJSON_GetArrayItem(lv, topo.num_levels);
    cr_expect(num(last, "bytes") >= num(dram, "probe_bytes") / 2, "sweep ends at %.0f bytes",
              num(last, "bytes"));
    cJSON_Delete(j);
    free(out);
}

/* 1 when gnuplot is on PATH (the plot test then checks the picture, else the error). */
static int have_gnuplot(void) { return system("command -v gnuplot >/dev/null 2>&1") == 0; }

Test(cli_probe, plot_svg_or_clear_error) {
    char path[256], args[512], *out;
    temp_path(path, sizeof path, ".svg");
    snprintf(args, sizeof args, "probe --quick --quiet --max-bytes 256K --plot %s", path);
    int rc = run_hrmt(args, &out);
    if (have_gnuplot()) {
        cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
        char *svg = read_file(path);
        cr_expect(strstr(svg, "<svg") && strstr(svg, "latency") && strstr(svg, "bandwidth"),
                  "an SVG with both panels");
        free(svg);
        unlink(path);
    } else {
        cr_expect_neq(rc, 0);
        cr_expect(strstr(out, "gnuplot is not installed"), "%s", out);
    }
    free(out);
}

Test(cli_probe, plot_without_gnuplot_fails_clearly) {
    char path[256], cmd[1024];
    temp_path(path, sizeof path, ".png");
    /* An empty PATH hides gnuplot whether or not it is installed. */
    snprintf(cmd, sizeof cmd,
             "PATH=/nonexistent %s probe --quick --quiet --max-bytes 64K --plot %s 2>&1", HRMT_BIN,
             path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    int st = pclose(p);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit status %d", st);
    cr_expect(strstr(buf, "--plot") && strstr(buf, "gnuplot is not installed"), "%s", buf);
    cr_expect_neq(access(path, F_OK), 0, "no file written");
}

Test(cli_probe, compare_keeps_a_gpu_column) {
    char *out;
    int rc = run_hrmt("probe --compare --quick --quiet --max-bytes 256K", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "CPU") && strstr(out, "GPU"), "%s", out);
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    hrmt_cuda_query(&ci);
    if (!ci.built || ci.device_count == 0)
        cr_expect(strstr(out, "GPU column unavailable"), "says why:\n%s", out);
    free(out);
}

Test(cli_probe, table_marks_tiers) {
    char *out;
    int rc = run_hrmt("probe --quick --quiet --max-bytes 1M", &out);
    cr_assert_eq(rc, 0, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "latency ns") && strstr(out, "read GB/s") && strstr(out, "L1"), "%s",
              out);
    free(out);
    rc = run_hrmt("probe --max-bytes 1X", &out);
    cr_expect_eq(rc, 2);
    cr_expect(strstr(out, "--max-bytes"), "%s", out);
    free(out);
}

/* ---- hostile files and streams ------------------------------------------- */

#define FAST_BENCH                                                                                  \
    "bench --mode tiered --batch-sizes 1 --seq-lens 16 --iterations 1 --warmup 0 --hidden-size 64 " \
    "--num-heads 4 --H-layers 1 --L-layers 1 --quiet"

/* A full disk on stdout is a failure, not a silent success. */
Test(cli_bench, full_stdout_is_an_error) {
    if (access("/dev/full", W_OK) != 0) cr_skip_test("no /dev/full");
    char *out;
    int rc = run_hrmt_sh("", FAST_BENCH, "2>&1 >/dev/full", &out);
    cr_expect_eq(rc, 1, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "hrmt bench: writing standard output: "), "%s", out);
    free(out);
}

Test(cli_probe, full_stdout_is_an_error) {
    if (access("/dev/full", W_OK) != 0) cr_skip_test("no /dev/full");
    const char *const args[] = {"probe --quick --quiet --max-bytes 256K",
                                "probe --json --quick --quiet --max-bytes 256K"};
    for (size_t i = 0; i < 2; i++) {
        char *out;
        int rc = run_hrmt_sh("", args[i], "2>&1 >/dev/full", &out);
        cr_expect_eq(rc, 1, "%s: exit %d:\n%s", args[i], rc, out);
        cr_expect(strstr(out, "hrmt probe: "), "%s", out);
        if (i == 0) cr_expect(strstr(out, "hrmt probe: writing standard output: "), "%s", out);
        free(out);
    }
}

/* FIFOs (and other non-regular files) as --model, --config or --input are
 * refused without blocking (timeout turns a hang into a failure); the exit
 * codes are the commands' usual ones for a bad file of that flag. */
Test(cli_bench, non_regular_inputs_are_refused) {
    char fifo[256], args[1024];
    temp_path(fifo, sizeof fifo, ".fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const struct {
        const char *fmt;
        int rc;
    } cases[] = {
        {"bench --model %s --quiet", 1}, {"bench --config %s --quiet", 2}, {"probe --input %s", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, cases[i].fmt, fifo);
        char *out;
        int rc = run_hrmt_sh("timeout 60", args, "2>&1", &out);
        cr_expect_eq(rc, cases[i].rc, "%s: exit %d:\n%s", args, rc, out);
        cr_expect(strstr(out, "not a regular file") && strstr(out, fifo), "%s: %s", args, out);
        free(out);
    }
    unlink(fifo);
    char *out;
    int rc = run_hrmt_sh("timeout 60", "bench --config /tmp --quiet", "2>&1", &out);
    cr_expect_eq(rc, 2, "exit %d:\n%s", rc, out);
    cr_expect(strstr(out, "not a regular file") && strstr(out, "/tmp"), "%s", out);
    free(out);
}

/* --output naming --config (the same path, or a link to it) is refused
 * before anything is written. */
Test(cli_bench, output_must_not_overwrite_an_input) {
    char cfg[256], link[256], args[1024];
    temp_path(cfg, sizeof cfg, ".json");
    temp_path(link, sizeof link, ".link.json");
    char *text = read_file(HRMT_TEST_DATA_DIR "/golden/hrm/tiny-rope/case.json");
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    cr_assert_eq(symlink(cfg, link), 0);
    const char *const outs[] = {cfg, link};
    for (size_t i = 0; i < 2; i++) {
        snprintf(args, sizeof args, FAST_BENCH " --config %s --output %s", cfg, outs[i]);
        char *out;
        int rc = run_hrmt(args, &out);
        cr_expect_eq(rc, 2, "--output %s: exit %d:\n%s", outs[i], rc, out);
        cr_expect(strstr(out, "--output") && strstr(out, "--config"), "%s", out);
        free(out);
        char *now = read_file(cfg);
        cr_expect_str_eq(now, text, "--config was overwritten");
        free(now);
    }
    free(text);
    unlink(link);
    unlink(cfg);
}

/* Rows without part timings (CUDA contexts) print a pointer to the kernel
 * profile instead of a table of zeros, and their JSON has no step_parts_ms;
 * a CPU row keeps both. */
Test(cli_bench, parts_only_where_measured) {
    cli_bench_row rows[2];
    memset(rows, 0, sizeof rows);
    rows[0].mode = rows[1].mode = CLI_MODE_BASELINE;
    rows[0].batch_size = rows[1].batch_size = 1;
    rows[0].total_inference_latency_ms.mean = rows[1].total_inference_latency_ms.mean = 2.0;
    rows[1].has_parts = 1;
    rows[1].part_ms[HRMT_PART_GATE_UP] = 0.5;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cli_bench_print_parts(rows, 1, f);
    fflush(f);
    cr_expect(strstr(buf, "CPU contexts only") && !strstr(buf, "gate_up"), "%s", buf);
    fclose(f);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cli_bench_print_parts(rows, 2, f);
    fflush(f);
    cr_expect(strstr(buf, "gate_up") && strstr(buf, "0.50 25%"), "%s", buf);
    fclose(f);
    free(buf);
    cJSON *j = cli_bench_json(rows, 2, "bf16", "avx512", 2);
    cr_assert_not_null(j);
    cr_expect_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(j, 0), "step_parts_ms"));
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(j, 1), "step_parts_ms");
    cr_expect_float_eq(num(p, "gate_up"), 0.5, 1e-12);
    cJSON_Delete(j);
}
