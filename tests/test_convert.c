/* tools/convert_checkpoint.py on a checkpoint saved by PyTorch
 * (tests/fixtures/hrm-tiny, made by tests/fixtures/make_checkpoint.py): every
 * tensor equals the values the fixture script wrote with its own writer, the
 * architecture lands in __metadata__ and arch.json, the converted model loads
 * and computes exactly what the reference tensors compute; refusals for
 * missing information and for pickles that try to run code. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "support/run_cmd.h"
#include "support/test_common.h"

static char g_dir[256];

static void make_dir(void) { hrmt_test_mkdtemp(g_dir, sizeof g_dir, "convert"); }

static void remove_dir(void) { hrmt_test_rmtree(g_dir); }

TestSuite(convert, .init = make_dir, .fini = remove_dir);

/* Runs the converter with `args`; returns its exit status, output in g_dir/log. */
static int convert(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s/tools/convert_checkpoint.py' %s > '%s/log' 2>&1",
             HRMT_TEST_SOURCE_DIR, args, g_dir);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void read_log(char *buf, size_t len) {
    char p[512];
    snprintf(p, sizeof p, "%s/log", g_dir);
    FILE *fp = fopen(p, "r");
    size_t n = fp ? fread(buf, 1, len - 1, fp) : 0;
    buf[n] = '\0';
    if (fp) fclose(fp);
}

static const char *fixture(const char *f) {
    static char p[512];
    snprintf(p, sizeof p, "%s/tests/fixtures/hrm-tiny/%s", HRMT_TEST_SOURCE_DIR, f);
    return p;
}

static void run_step(hrmt_model *m, float *logits, float *zh) {
    const hrmt_model_config *c = hrmt_model_get_config(m);
    int32_t in[2 * 16], pid[2] = {2, 0};
    for (int i = 0; i < 2 * 16; i++) in[i] = (i * 5) % c->vocab_size;
    hrmt_carry *carry = NULL;
    cr_assert_eq(hrmt_carry_create(m, 2, &carry), HRMT_OK);
    hrmt_step_outputs o = {logits, NULL, NULL, zh, NULL, NULL};
    cr_assert_eq(hrmt_act_step(m, carry, in, pid, NULL, &o, NULL), HRMT_OK);
    hrmt_carry_destroy(carry);
}

Test(convert, fixture_round_trip) {
    char args[1024], log[4096];
    snprintf(args, sizeof args, "'%s' --out-dir '%s'", fixture("step_100"), g_dir);
    int rc = convert(args);
    read_log(log, sizeof log);
    cr_assert_eq(rc, 0, "converter failed: %s", log);

    hrmt_context *ctx = hrmt_test_context();
    char conv[512], arch[512];
    snprintf(conv, sizeof conv, "%s/model.safetensors", g_dir);
    snprintf(arch, sizeof arch, "%s/arch.json", g_dir);
    hrmt_st_file *a = NULL, *b = NULL;
    cr_assert_eq(hrmt_st_open(ctx, conv, &a), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_assert_eq(hrmt_st_open(ctx, fixture("reference.safetensors"), &b), HRMT_OK);
    cr_expect_eq(hrmt_st_count(a), hrmt_st_count(b));
    cr_expect_eq(hrmt_st_count(b), 20);
    for (size_t i = 0; i < hrmt_st_count(b); i++) {
        const hrmt_st_tensor *r = hrmt_st_at(b, i), *t = hrmt_st_find(a, r->name);
        cr_assert_not_null(t, "converted file lacks %s", r->name);
        cr_expect_eq(t->dtype, r->dtype, "%s dtype", r->name);
        cr_expect_eq(t->ndim, r->ndim, "%s ndim", r->name);
        for (int d = 0; d < r->ndim; d++)
            cr_expect_eq(t->shape[d], r->shape[d], "%s shape", r->name);
        cr_expect_eq(t->nbytes, r->nbytes);
        cr_expect_eq(memcmp(t->data, r->data, r->nbytes), 0, "%s values differ", r->name);
    }
    cr_assert_not_null(hrmt_st_metadata(a, "arch"));
    hrmt_st_close(a);
    hrmt_st_close(b);

    /* The config from __metadata__ and from arch.json: the YAML's arch plus
     * what only the weights tell (vocab, puzzle ids, seq_len from embed_pos). */
    hrmt_model_config cj;
    cr_assert_eq(hrmt_model_config_load_json(ctx, arch, &cj), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(cj.hidden_size, 64);
    cr_expect_eq(cj.num_heads, 4);
    cr_expect_eq(cj.expansion, 2.0);
    cr_expect_eq(cj.H_layers, 1);
    cr_expect_eq(cj.L_layers, 2);
    cr_expect_eq(cj.H_cycles, 2);
    cr_expect_eq(cj.L_cycles, 2);
    cr_expect_eq(cj.seq_len, 16);
    cr_expect_eq(cj.vocab_size, 7);
    cr_expect_eq(cj.puzzle_emb_ndim, 96);
    cr_expect_eq(cj.num_puzzle_identifiers, 3);
    cr_expect_eq(cj.pos_encodings, HRMT_POS_LEARNED);
    cr_expect_eq(cj.halt_max_steps, 2);
    cr_expect_eq(cj.forward_dtype, HRMT_BF16);

    /* Loaded both ways (metadata config; reference file + arch.json), in F32
     * the two models compute the same bits. */
    hrmt_model *mc = NULL, *mr = NULL;
    cr_assert_eq(hrmt_model_load(ctx, conv, NULL, &mc), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(memcmp(hrmt_model_get_config(mc), &cj, sizeof cj), 0,
                 "metadata config != arch.json");
    hrmt_model_destroy(mc);
    cj.forward_dtype = HRMT_F32;
    cr_assert_eq(hrmt_model_load(ctx, conv, &cj, &mc), HRMT_OK);
    cr_assert_eq(hrmt_model_load(ctx, fixture("reference.safetensors"), &cj, &mr), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    size_t ln = 2 * 16 * 7, zn = 2 * 18 * 64;
    float *l1 = calloc(ln, 4), *l2 = calloc(ln, 4), *z1 = calloc(zn, 4), *z2 = calloc(zn, 4);
    run_step(mc, l1, z1);
    run_step(mr, l2, z2);
    cr_expect_eq(memcmp(l1, l2, ln * 4), 0);
    cr_expect_eq(memcmp(z1, z2, zn * 4), 0);
    double ss = 0.0;
    for (size_t i = 0; i < ln; i++) ss += (double)l1[i] * l1[i];
    cr_expect_gt(ss, 0.0, "logits all zero");
    free(l1);
    free(l2);
    free(z1);
    free(z2);
    hrmt_model_destroy(mc);
    hrmt_model_destroy(mr);
    hrmt_context_destroy(ctx);
}

Test(convert, explicit_arch_json_and_seq_len) {
    /* RoPE needs seq_len, which neither the weights nor the YAML carry. */
    char p[512], args[2048], log[4096];
    snprintf(p, sizeof p, "%s/arch_in.json", g_dir);
    FILE *fp = fopen(p, "w");
    fputs(
        "{\"arch\": {\"hidden_size\": 64, \"num_heads\": 4, \"expansion\": 2, \"H_layers\": 1, "
        "\"L_layers\": 2, \"H_cycles\": 2, \"L_cycles\": 2, \"puzzle_emb_ndim\": 96, "
        "\"pos_encodings\": \"rope\", \"halt_max_steps\": 2}}",
        fp);
    fclose(fp);
    snprintf(args, sizeof args, "'%s' --arch-json '%s' --out-dir '%s'", fixture("step_100"), p,
             g_dir);
    cr_expect_neq(convert(args), 0);
    read_log(log, sizeof log);
    cr_expect(strstr(log, "seq_len") != NULL, "message: %s", log);
    snprintf(args, sizeof args, "'%s' --arch-json '%s' --seq-len 16 --out-dir '%s'",
             fixture("step_100"), p, g_dir);
    cr_assert_eq(convert(args), 0);
    hrmt_context *ctx = hrmt_test_context();
    snprintf(p, sizeof p, "%s/arch.json", g_dir);
    hrmt_model_config c;
    cr_assert_eq(hrmt_model_config_load_json(ctx, p, &c), HRMT_OK);
    cr_expect_eq(c.seq_len, 16);
    cr_expect_eq(c.pos_encodings, HRMT_POS_ROPE);
    hrmt_context_destroy(ctx);
}

Test(convert, refuses_bad_input) {
    char args[1024], log[4096];
    /* Not a zip. */
    snprintf(args, sizeof args, "'%s' --out-dir '%s'", fixture("all_config.yaml"), g_dir);
    cr_expect_neq(convert(args), 0);
    read_log(log, sizeof log);
    cr_expect(strstr(log, "zip") != NULL, "message: %s", log);
    /* A pickle that would run a command when loaded by plain pickle. */
    char evil[512], marker[512], cmd[2048];
    snprintf(evil, sizeof evil, "%s/evil", g_dir);
    snprintf(marker, sizeof marker, "%s/pwned", g_dir);
    snprintf(
        cmd, sizeof cmd,
        "python3 -c \"import pickle, zipfile, os\n"
        "class E:\n"
        "    def __reduce__(self): return (os.system, ('touch %s',))\n"
        "zipfile.ZipFile('%s', 'w').writestr('evil/data.pkl', pickle.dumps({'w': E()}, protocol=2))\"",
        marker, evil);
    cr_assert_eq(system(cmd), 0);
    snprintf(args, sizeof args, "'%s' --out-dir '%s'", evil, g_dir);
    cr_expect_neq(convert(args), 0);
    read_log(log, sizeof log);
    cr_expect(strstr(log, "system") != NULL, "message: %s", log);
    cr_expect_neq(access(marker, F_OK), 0, "the pickle's command ran");
}
