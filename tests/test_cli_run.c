/* `hrmt run` end to end: the golden tiny-rope batch written as a Sudoku
 * puzzle file (its tokens are all 1..10), run through the built command with
 * --dump; the dump is read back and compared with expected-f32 (1e-4) and,
 * bit for bit, with the same steps run through the library; --tokens gives
 * the same dump; the JSON output; and usage errors (exit 2, flag or file:line
 * named). The command inherits HRMT_ISA (ctest runs this once, on the default table). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/run_input.h"
#include "core/safetensors.h"
#include "support/run_cmd.h"
#include "support/test_common.h"

#define HRMT_BIN HRMT_TEST_BINARY_DIR "/hrmt"

static char g_dir[256];

static void setup(void) { hrmt_test_mkdtemp(g_dir, sizeof g_dir, "run"); }

static void teardown(void) { hrmt_test_rmtree(g_dir); }

TestSuite(run, .init = setup, .fini = teardown);

/* Runs `<pre> hrmt run <args> <redir>` in the shell; the captured output is
 * whatever reaches the pipe (redir defaults to merging stderr). */
static int run_hrmt_sh(const char *pre, const char *args, const char *redir, char **out) {
    char cmd[4096];
    int k = snprintf(cmd, sizeof cmd, "%s %s run %s %s", pre, HRMT_BIN, args, redir);
    cr_assert(k > 0 && (size_t)k < sizeof cmd, "command too long");
    return hrmt_test_sh(cmd, out);
}

static int run_hrmt(const char *args, char **out) { return run_hrmt_sh("", args, "2>&1", out); }

static const char *golden(const char *f) {
    static char p[2][512];
    static int i;
    i ^= 1;
    snprintf(p[i], sizeof p[i], "%s/golden/hrm/tiny-rope/%s", HRMT_TEST_DATA_DIR, f);
    return p[i];
}

/* Writes the golden inputs as a puzzle file (with a comment and a blank line)
 * and as a token file; returns the batch size. */
static int write_inputs(hrmt_st_file *exp, char *puz, char *tok) {
    const hrmt_st_tensor *t = hrmt_st_find(exp, "inputs");
    cr_assert_not_null(t);
    int B = (int)t->shape[0], S = (int)t->shape[1];
    int32_t *v = malloc(t->nbytes);
    memcpy(v, t->data, t->nbytes);
    sprintf(puz, "%s/puzzles.txt", g_dir);
    sprintf(tok, "%s/tokens.txt", g_dir);
    FILE *fp = fopen(puz, "w"), *ft = fopen(tok, "w");
    fprintf(fp, "# golden tiny-rope batch\n\n");
    char *text = malloc((size_t)S + 1);
    for (int b = 0; b < B; b++) {
        for (int i = 0; i < S; i++) cr_assert(v[b * S + i] >= 1 && v[b * S + i] <= 10);
        cli_run_tokens_to_text(v + b * S, S, text);
        fprintf(fp, "%s\r\n", text); /* CRLF is accepted */
        for (int i = 0; i < S; i++) fprintf(ft, i ? ", %d" : "%d", (int)v[b * S + i]);
        fprintf(ft, "\n");
    }
    fclose(fp);
    fclose(ft);
    free(text);
    free(v);
    return B;
}

static double rel_l2(const hrmt_st_tensor *a, const hrmt_st_tensor *b) {
    cr_assert_eq(a->numel, b->numel, "%s: %zu vs %zu elements", a->name, a->numel, b->numel);
    float *x = malloc(a->numel * 4), *y = malloc(b->numel * 4);
    hrmt_st_read_f32(NULL, NULL, a, x);
    hrmt_st_read_f32(NULL, NULL, b, y);
    double num = 0, den = 0;
    for (size_t i = 0; i < a->numel; i++) {
        num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        den += (double)y[i] * y[i];
    }
    free(x);
    free(y);
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static const char *const k_fields[] = {"logits", "q_halt_logits", "q_continue_logits",
                                       "z_H",    "z_L",           "halted"};

Test(run, dump_matches_golden_and_library) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_file *exp = NULL;
    cr_assert_eq(hrmt_st_open(ctx, golden("expected-f32.safetensors"), &exp), HRMT_OK);
    char puz[512], tok[512], dump[512], dump2[512], args[3072];
    int B = write_inputs(exp, puz, tok);
    sprintf(dump, "%s/dump.safetensors", g_dir);
    snprintf(args, sizeof args,
             "--model '%s' --config '%s' --puzzles '%s' --dtype f32 --steps 4 --dump '%s'",
             golden("model.safetensors"), golden("case.json"), puz, dump);
    char *out = NULL;
    cr_assert_eq(run_hrmt(args, &out), 0, "%s", out);
    cr_expect(strstr(out, "puzzle 3 (line 5)") != NULL, "%s", out);
    cr_expect(strstr(out, "prediction ") != NULL, "%s", out);
    free(out);

    hrmt_st_file *d = NULL;
    cr_assert_eq(hrmt_st_open(ctx, dump, &d), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_st_count(d), 2 + 4 * 6);
    const hrmt_st_tensor *a = hrmt_st_find(d, "inputs"), *b = hrmt_st_find(exp, "inputs");
    cr_assert(a && b && a->dtype == HRMT_I32 && a->nbytes == b->nbytes);
    cr_expect_eq(memcmp(a->data, b->data, a->nbytes), 0, "dumped inputs differ from the file's");
    cr_assert_not_null(hrmt_st_find(d, "puzzle_identifiers"));
    /* Against the reference: every tensor of every step, the same names. */
    for (int k = 0; k < 4; k++) {
        for (int f = 0; f < 6; f++) {
            char key[64];
            snprintf(key, sizeof key, "step%d.%s", k, k_fields[f]);
            const hrmt_st_tensor *x = hrmt_st_find(d, key), *y = hrmt_st_find(exp, key);
            cr_assert(x && y, "%s missing", key);
            cr_expect_eq(x->dtype, y->dtype, "%s dtype", key);
            cr_expect_eq(x->ndim, y->ndim, "%s ndim", key);
            for (int i = 0; i < x->ndim; i++)
                cr_expect_eq(x->shape[i], y->shape[i], "%s shape", key);
            if (f == 5)
                cr_expect_eq(memcmp(x->data, y->data, x->nbytes), 0, "%s differs", key);
            else
                cr_expect_leq(rel_l2(x, y), 1e-4, "%s: %.3g from expected-f32", key, rel_l2(x, y));
        }
    }
    /* The library, same ISA, same steps: identical bytes. */
    hrmt_model_config cfg;
    cr_assert_eq(hrmt_model_config_load_json(ctx, golden("case.json"), &cfg), HRMT_OK);
    cfg.forward_dtype = HRMT_F32;
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_load(ctx, golden("model.safetensors"), &cfg, &m), HRMT_OK);
    hrmt_carry *c = NULL;
    cr_assert_eq(hrmt_carry_create(m, B, &c), HRMT_OK);
    size_t zn = (size_t)B * 82 * 64, ln = (size_t)B * 81 * 11;
    float *lg = malloc(ln * 4), *zh = malloc(zn * 4);
    int32_t pid[8] = {0};
    hrmt_step_outputs o = {lg, NULL, NULL, zh, NULL, NULL};
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(hrmt_act_step(m, c, (const int32_t *)hrmt_st_find(exp, "inputs")->data, pid,
                                   NULL, &o, NULL),
                     HRMT_OK);
        char key[64];
        snprintf(key, sizeof key, "step%d.logits", k);
        cr_expect_eq(memcmp(hrmt_st_find(d, key)->data, lg, ln * 4), 0, "%s != library", key);
        snprintf(key, sizeof key, "step%d.z_H", k);
        cr_expect_eq(memcmp(hrmt_st_find(d, key)->data, zh, zn * 4), 0, "%s != library", key);
    }
    /* --tokens with the same rows and the baseline schedule: the same dump. */
    sprintf(dump2, "%s/dump2.safetensors", g_dir);
    snprintf(args, sizeof args,
             "--model '%s' --config '%s' --tokens '%s' --dtype f32 --steps 4 --schedule baseline "
             "--dump '%s' --json",
             golden("model.safetensors"), golden("case.json"), tok, dump2);
    cr_assert_eq(run_hrmt(args, &out), 0, "%s", out);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "not JSON: %s", out);
    cJSON *res = cJSON_GetObjectItem(j, "results");
    cr_expect_eq(cJSON_GetArraySize(res), B);
    cJSON *r0 = cJSON_GetArrayItem(res, 0);
    cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r0, "prediction_tokens")), 81);
    cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(r0, "q_halt_logits")));
    cr_expect_eq(cJSON_GetObjectItem(j, "steps")->valueint, 4);
    cJSON_Delete(j);
    free(out);
    hrmt_st_file *d2 = NULL;
    cr_assert_eq(hrmt_st_open(ctx, dump2, &d2), HRMT_OK);
    for (size_t i = 0; i < hrmt_st_count(d); i++) {
        const hrmt_st_tensor *x = hrmt_st_at(d, i), *y = hrmt_st_find(d2, x->name);
        cr_assert_not_null(y, "%s missing", x->name);
        cr_expect_eq(memcmp(x->data, y->data, x->nbytes), 0,
                     "%s: tokens/baseline != puzzles/tiered", x->name);
    }
    hrmt_st_close(d2);
    free(lg);
    free(zh);
    hrmt_carry_destroy(c);
    hrmt_model_destroy(m);
    hrmt_st_close(d);
    hrmt_st_close(exp);
    hrmt_context_destroy(ctx);
}

static void expect_usage_error(const char *args, const char *needle) {
    char *out = NULL;
    int rc = run_hrmt(args, &out);
    cr_expect_eq(rc, 2, "exit %d for '%s': %s", rc, args, out);
    cr_expect(strstr(out, needle) != NULL, "'%s': output lacks '%s': %s", args, needle, out);
    free(out);
}

Test(run, usage_errors) {
    char args[2048], bad[512];
    const char *model = golden("model.safetensors"), *cfg = golden("case.json");
    sprintf(bad, "%s/bad.txt", g_dir);
    FILE *fp = fopen(bad, "w");
    fprintf(fp, "%s\n",
            "..3.2.6..9..3.5..1..18.64....81.29..7.......8..67.82....26.95..8..2.3..9..5.1.3..");
    fprintf(fp, "%s\n",
            "..3.2.6..9..3.5..1..18.64....81.29..7.......8..67.82....26.95..8..2.3..9..5.1.x..");
    fclose(fp);
    snprintf(args, sizeof args, "--model '%s' --config '%s' --puzzles '%s'", model, cfg, bad);
    expect_usage_error(args, "bad.txt:2: column 79: 'x'");
    fp = fopen(bad, "w");
    fprintf(fp, "1 2 3\n");
    fclose(fp);
    snprintf(args, sizeof args, "--model '%s' --config '%s' --tokens '%s'", model, cfg, bad);
    expect_usage_error(args, "bad.txt:1: 3 tokens, the model needs 81");
    fp = fopen(bad, "w");
    for (int i = 0; i < 81; i++) fprintf(fp, "%d ", i == 40 ? 11 : 1);
    fclose(fp);
    expect_usage_error(args, "bad.txt:1: token 41: 11 is outside the vocabulary 0..10");
    fp = fopen(bad, "w");
    fprintf(fp, "%s\n",
            "..3.2.6..9..3.5..1..18.64....81.29..7.......8..67.82....26.95..8..2.3..9..5.1.3..");
    fclose(fp);
    snprintf(args, sizeof args, "--model '%s' --config '%s' --puzzles '%s' --puzzle-id 1", model,
             cfg, bad);
    expect_usage_error(args, "--puzzle-id: 1 is outside the model's puzzle identifiers 0..0");
    snprintf(args, sizeof args, "--model '%s' --puzzles '%s'", model, bad);
    expect_usage_error(args, "--model"); /* no config: the golden file has no arch metadata */
    snprintf(args, sizeof args, "--model '%s/nope.safetensors' --config '%s' --puzzles x", g_dir,
             cfg);
    expect_usage_error(args, "--model");
    snprintf(args, sizeof args, "--config '%s/nope.json' --puzzles x", g_dir);
    expect_usage_error(args, "--config");
    snprintf(args, sizeof args,
             "--model '%s/../small-learned/model.safetensors' --config "
             "'%s/../small-learned/case.json' --puzzles '%s'",
             golden(""), golden(""), bad);
    expect_usage_error(args, "Sudoku model");
    expect_usage_error("--puzzles x --steps 0", "--steps");
    expect_usage_error("--puzzles x --steps many", "--steps");
    expect_usage_error("--puzzles x --dtype fp16", "--dtype");
    expect_usage_error("--puzzles x --schedule eager", "--schedule");
    expect_usage_error("--puzzles x --threads 0", "--threads");
    expect_usage_error("--puzzles x --puzzle-id -1", "--puzzle-id");
    expect_usage_error("--puzzles x --tokens y", "--tokens");
    expect_usage_error("--steps 2", "--puzzles");
    expect_usage_error("--puzzles", "--puzzles: missing value");
    expect_usage_error("--puzzles x --bogus", "--bogus");
    expect_usage_error("--puzzles x extra", "extra");
    char *out = NULL;
    cr_expect_eq(run_hrmt("--help", &out), 0);
    cr_expect(strstr(out, "--early-halt") != NULL);
    free(out);
}

Test(run, early_halt_is_opt_in) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_file *exp = NULL;
    cr_assert_eq(hrmt_st_open(ctx, golden("expected-f32.safetensors"), &exp), HRMT_OK);
    char puz[512], tok[512], dump[512], args[3072];
    write_inputs(exp, puz, tok);
    sprintf(dump, "%s/eh.safetensors", g_dir);
    /* The library's own rule, checked on the dump: halted = steps >= max, or
     * (early halt, max > 1) q_halt > q_continue. */
    snprintf(args, sizeof args,
             "--model '%s' --config '%s' --puzzles '%s' --steps 3 --early-halt --dump '%s'",
             golden("model.safetensors"), golden("case.json"), puz, dump);
    char *out = NULL;
    cr_assert_eq(run_hrmt(args, &out), 0, "%s", out);
    cr_expect(strstr(out, "early halt on") != NULL, "%s", out);
    free(out);
    hrmt_st_file *d = NULL;
    cr_assert_eq(hrmt_st_open(ctx, dump, &d), HRMT_OK);
    int32_t steps[3] = {0, 0, 0}, prev_h[3] = {1, 1, 1};
    for (int k = 0; k < 3; k++) {
        char kh[64], kq[64], kc[64];
        snprintf(kh, sizeof kh, "step%d.halted", k);
        snprintf(kq, sizeof kq, "step%d.q_halt_logits", k);
        snprintf(kc, sizeof kc, "step%d.q_continue_logits", k);
        const int32_t *h = hrmt_st_find(d, kh)->data;
        const float *qh = hrmt_st_find(d, kq)->data, *qc = hrmt_st_find(d, kc)->data;
        for (int b = 0; b < 3; b++) {
            steps[b] = prev_h[b] ? 1 : steps[b] + 1;
            int want = steps[b] >= 3 || qh[b] > qc[b];
            cr_expect_eq(h[b], want, "step %d sample %d: halted %d, want %d", k, b, h[b], want);
            prev_h[b] = h[b];
        }
    }
    hrmt_st_close(d);
    hrmt_st_close(exp);
    hrmt_context_destroy(ctx);
}

/* A FIFO, a directory or a device as an input file is refused at once (no
 * blocking open on the FIFO), with the path named; `timeout` turns a hang
 * into a failure. Bad input files are usage errors in `hrmt run` (exit 2). */
Test(run, non_regular_inputs_are_refused) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_file *exp = NULL;
    cr_assert_eq(hrmt_st_open(ctx, golden("expected-f32.safetensors"), &exp), HRMT_OK);
    char puz[512], tok[512], fifo[512], args[3072];
    write_inputs(exp, puz, tok);
    hrmt_st_close(exp);
    hrmt_context_destroy(ctx);
    snprintf(fifo, sizeof fifo, "%s/fifo", g_dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *model = golden("model.safetensors"), *cfg = golden("case.json");
    const char *cases[][4] = {
        {"--model", fifo, cfg, puz},      {"--config", model, fifo, puz},
        {"--puzzles", model, cfg, fifo},  {"--tokens", model, cfg, fifo},
        {"--puzzles", model, cfg, g_dir}, {"--config", model, "/dev/null", puz}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *in = !strcmp(cases[i][0], "--tokens") ? "--tokens" : "--puzzles";
        const char *bad = !strcmp(cases[i][0], "--model")    ? cases[i][1]
                          : !strcmp(cases[i][0], "--config") ? cases[i][2]
                                                             : cases[i][3];
        snprintf(args, sizeof args, "--model '%s' --config '%s' %s '%s' --steps 1", cases[i][1],
                 cases[i][2], in, cases[i][3]);
        char *out = NULL;
        int rc = run_hrmt_sh("timeout 60", args, "2>&1", &out);
        cr_expect_eq(rc, 2, "%s %s: exit %d: %s", cases[i][0], bad, rc, out);
        cr_expect(strstr(out, "not a regular file") && strstr(out, bad) && strstr(out, cases[i][0]),
                  "%s %s: %s", cases[i][0], bad, out);
        free(out);
    }
}

/* A full disk on stdout is a failure, not a silent success. */
Test(run, full_stdout_is_an_error) {
    if (access("/dev/full", W_OK) != 0) cr_skip_test("no /dev/full");
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_file *exp = NULL;
    cr_assert_eq(hrmt_st_open(ctx, golden("expected-f32.safetensors"), &exp), HRMT_OK);
    char puz[512], tok[512], args[3072];
    write_inputs(exp, puz, tok);
    hrmt_st_close(exp);
    hrmt_context_destroy(ctx);
    for (int json = 0; json < 2; json++) {
        snprintf(args, sizeof args, "--model '%s' --config '%s' --puzzles '%s' --steps 1%s",
                 golden("model.safetensors"), golden("case.json"), puz, json ? " --json" : "");
        char *out = NULL;
        int rc = run_hrmt_sh("", args, "2>&1 >/dev/full", &out);
        cr_expect_eq(rc, 1, "exit %d: %s", rc, out);
        cr_expect(strstr(out, "hrmt run: writing standard output: ") != NULL, "%s", out);
        free(out);
    }
}

static int same_bytes(const char *a, const char *b) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* --dump naming an input (by path, or by another path to the same inode) is
 * refused before anything is written. */
Test(run, dump_must_not_overwrite_an_input) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_file *exp = NULL;
    cr_assert_eq(hrmt_st_open(ctx, golden("expected-f32.safetensors"), &exp), HRMT_OK);
    char puz[512], tok[512], model[512], link[512], keep[512], args[4096], cmd[2600];
    write_inputs(exp, puz, tok);
    hrmt_st_close(exp);
    hrmt_context_destroy(ctx);
    snprintf(model, sizeof model, "%s/model.safetensors", g_dir);
    snprintf(link, sizeof link, "%s/link.safetensors", g_dir);
    snprintf(keep, sizeof keep, "%s/puzzles.keep", g_dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s' '%s'", golden("model.safetensors"), model,
             puz, keep);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(symlink(model, link), 0);
    const char *cases[][2] = {{model, "--model"}, {link, "--model"}, {puz, "--puzzles"}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(args, sizeof args,
                 "--model '%s' --config '%s' --puzzles '%s' --steps 1 --dump '%s'", model,
                 golden("case.json"), puz, cases[i][0]);
        char *out = NULL;
        int rc = run_hrmt(args, &out);
        cr_expect_eq(rc, 2, "--dump %s: exit %d: %s", cases[i][0], rc, out);
        cr_expect(strstr(out, "--dump") && strstr(out, cases[i][1]), "%s", out);
        free(out);
        cr_assert(same_bytes(model, golden("model.safetensors")), "--model was overwritten");
        cr_assert(same_bytes(puz, keep), "--puzzles was overwritten");
    }
}

/* Library refusals reach the command line as usage errors naming the cause
 * and the way out: NaN weights (unless --allow-nonfinite-weights), an
 * architecture above a limit (HRMT_LIMIT_* raises it), too many threads. */
Test(run, nonfinite_weights_and_limits) {
    FILE *fp = fopen(golden("model.safetensors"), "rb");
    cr_assert_not_null(fp);
    unsigned char *b = malloc(2 << 20);
    size_t n = fread(b, 1, 2 << 20, fp);
    fclose(fp);
    /* A NaN in the last 4 bytes: the data section ends with an F32 weight or
     * a BF16 pair, either way NaN (0x7fc0 in the high half). */
    static const unsigned char nan_le[4] = {0x00, 0xc0, 0xc0, 0x7f};
    memcpy(b + n - 4, nan_le, 4);
    char model[512], puz[512], args[2048];
    snprintf(model, sizeof model, "%s/nan.safetensors", g_dir);
    snprintf(puz, sizeof puz, "%s/p.txt", g_dir);
    fp = fopen(model, "wb");
    cr_assert_eq(fwrite(b, 1, n, fp), n);
    fclose(fp);
    free(b);
    fp = fopen(puz, "w");
    fprintf(fp, "%081d\n", 0);
    fclose(fp);
    char *out = NULL;
    snprintf(args, sizeof args, "--model %s --config %s --puzzles %s --quiet", model,
             golden("case.json"), puz);
    cr_expect_eq(run_hrmt(args, &out), 2, "%s", out);
    cr_expect(strstr(out, "NaN") && strstr(out, "--allow-nonfinite-weights"), "%s", out);
    free(out);
    snprintf(args, sizeof args,
             "--model %s --config %s --puzzles %s --quiet --allow-nonfinite-weights", model,
             golden("case.json"), puz);
    cr_expect_eq(run_hrmt(args, &out), 0, "%s", out);
    free(out);
    /* An architecture above a limit, and the variable that admits it. */
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/deep.json", g_dir);
    fp = fopen(cfg, "w");
    fprintf(fp,
            "{\"arch\": {\"hidden_size\": 64, \"num_heads\": 4, \"expansion\": 4, "
            "\"H_layers\": 1, \"L_layers\": 1, \"H_cycles\": 65, \"L_cycles\": 1, "
            "\"seq_len\": 81, \"vocab_size\": 11, \"num_puzzle_identifiers\": 1, "
            "\"halt_max_steps\": 1, \"pos_encodings\": \"rope\"}}");
    fclose(fp);
    snprintf(args, sizeof args, "--config %s --puzzles %s --quiet", cfg, puz);
    cr_expect_eq(run_hrmt(args, &out), 2, "%s", out);
    cr_expect(
        strstr(out, "H_cycles = 65 exceeds the limit of 64") && strstr(out, "HRMT_LIMIT_CYCLES"),
        "%s", out);
    free(out);
    cr_expect_eq(run_hrmt_sh("HRMT_LIMIT_CYCLES=65", args, "2>&1", &out), 0, "%s", out);
    free(out);
    cr_expect_eq(run_hrmt_sh("OMP_NUM_THREADS=20000", args, "2>&1", &out), 1, "%s", out);
    cr_expect(strstr(out, "OMP_NUM_THREADS = 20000") && strstr(out, "HRMT_LIMIT_THREADS"), "%s",
              out);
    free(out);
}
