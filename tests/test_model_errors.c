/* Model-level failures: each malformed model file (written here from the
 * golden tiny-rope model by editing its header) gives its own status code
 * through hrmt_model_load; config validation and JSON errors name the field;
 * bad step arguments are refused. Nothing crashes. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/test_common.h"

static unsigned char *g_file;
static size_t g_len, g_hlen;
static hrmt_model_config g_cfg;
static char g_path[256];

static void load_golden(void) {
    FILE *fp = fopen(hrmt_test_data("golden/hrm/tiny-rope/model.safetensors"), "rb");
    cr_assert_not_null(fp);
    fseek(fp, 0, SEEK_END);
    g_len = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    g_file = malloc(g_len);
    cr_assert_eq(fread(g_file, 1, g_len, fp), g_len);
    fclose(fp);
    g_hlen = 0;
    for (int i = 7; i >= 0; i--) g_hlen = (g_hlen << 8) | g_file[i];
    hrmt_context *ctx = hrmt_test_context();
    cr_assert_eq(
        hrmt_model_config_load_json(ctx, hrmt_test_data("golden/hrm/tiny-rope/case.json"), &g_cfg),
        HRMT_OK);
    hrmt_context_destroy(ctx);
}

static void done(void) { free(g_file); }

TestSuite(model_file, .init = load_golden, .fini = done);

/* The golden header as a cJSON object (caller deletes). */
static cJSON *header(void) {
    cJSON *h = cJSON_ParseWithLength((const char *)g_file + 8, g_hlen);
    cr_assert_not_null(h);
    return h;
}

static const char *write_bytes(const void *a, size_t na, const void *b, size_t nb) {
    snprintf(g_path, sizeof g_path, "/tmp/hrmt_model_err_%d_XXXXXX", (int)getpid());
    int fd = mkstemp(g_path);
    cr_assert(fd >= 0);
    FILE *fp = fdopen(fd, "wb");
    fwrite(a, 1, na, fp);
    if (nb) fwrite(b, 1, nb, fp);
    fclose(fp);
    return g_path;
}

/* Writes the golden data section under a new header. */
static const char *write_with_header(cJSON *h) {
    char *txt = cJSON_PrintUnformatted(h);
    size_t tl = strlen(txt);
    unsigned char *buf = malloc(8 + tl);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)tl >> (8 * i));
    memcpy(buf + 8, txt, tl);
    const char *p = write_bytes(buf, 8 + tl, g_file + 8 + g_hlen, g_len - 8 - g_hlen);
    free(buf);
    cJSON_free(txt);
    return p;
}

static hrmt_status load_status(const char *path, const hrmt_model_config *cfg, char *msg,
                               size_t ml) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_model *m = NULL;
    hrmt_status s = hrmt_model_load(ctx, path, cfg, &m);
    snprintf(msg, ml, "%s", hrmt_last_error(ctx));
    if (s == HRMT_OK)
        cr_assert_not_null(m);
    else
        cr_assert_null(m);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
    unlink(path);
    return s;
}

#define EXPECT_LOAD(path, cfg, want, needle)                                                      \
    do {                                                                                          \
        char msg_[512];                                                                           \
        hrmt_status got_ = load_status((path), (cfg), msg_, sizeof msg_);                         \
        cr_expect_eq(got_, (want), "got %s (%s), want %s", hrmt_status_str(got_), msg_,           \
                     hrmt_status_str(want));                                                      \
        if ((needle)[0])                                                                          \
            cr_expect(strstr(msg_, (needle)) != NULL, "message '%s' lacks '%s'", msg_, (needle)); \
    } while (0)

static void set_offsets(cJSON *h, const char *name, double b, double e) {
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, name);
    cr_assert_not_null(t, "%s", name);
    cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    cJSON_ReplaceItemInArray(o, 0, cJSON_CreateNumber(b));
    cJSON_ReplaceItemInArray(o, 1, cJSON_CreateNumber(e));
}

static double offset_of(cJSON *h, const char *name, int which) {
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, name);
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(t, "data_offsets"), which)
        ->valuedouble;
}

Test(model_file, golden_loads) {
    cJSON *h = header();
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_OK, "");
    cJSON_Delete(h);
}

Test(model_file, truncated) {
    EXPECT_LOAD(write_bytes(g_file, g_len - 100, NULL, 0), &g_cfg, HRMT_ERR_FILE_TRUNCATED,
                "truncated");
    EXPECT_LOAD(write_bytes(g_file, 5, NULL, 0), &g_cfg, HRMT_ERR_FILE_TRUNCATED, "8-byte");
}

Test(model_file, header_beyond_file) {
    unsigned char *copy = malloc(g_len);
    memcpy(copy, g_file, g_len);
    uint64_t bad = (uint64_t)g_len; /* header length alone exceeds the file */
    for (int i = 0; i < 8; i++) copy[i] = (unsigned char)(bad >> (8 * i));
    EXPECT_LOAD(write_bytes(copy, g_len, NULL, 0), &g_cfg, HRMT_ERR_HEADER_SIZE, "beyond");
    free(copy);
}

Test(model_file, bad_json) {
    unsigned char *copy = malloc(g_len);
    memcpy(copy, g_file, g_len);
    copy[8 + g_hlen / 2] = '{'; /* breaks the object in the middle */
    EXPECT_LOAD(write_bytes(copy, g_len, NULL, 0), &g_cfg, HRMT_ERR_BAD_JSON, "JSON");
    free(copy);
}

Test(model_file, unknown_dtype) {
    cJSON *h = header();
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "model.inner.lm_head.weight");
    cJSON_ReplaceItemInObjectCaseSensitive(t, "dtype", cJSON_CreateString("F8_E4M3"));
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_BAD_DTYPE, "F8_E4M3");
    cJSON_Delete(h);
}

Test(model_file, wrong_shape) {
    /* Same bytes, transposed shape: the file is consistent, the model is not. */
    cJSON *h = header();
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "model.inner.lm_head.weight");
    cJSON *sh = cJSON_CreateArray();
    cJSON_AddItemToArray(sh, cJSON_CreateNumber(64));
    cJSON_AddItemToArray(sh, cJSON_CreateNumber(11));
    cJSON_ReplaceItemInObjectCaseSensitive(t, "shape", sh);
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_TENSOR_SHAPE, "lm_head");
    cJSON_Delete(h);
    /* A config that does not fit the file. */
    hrmt_model_config c = g_cfg;
    c.expansion = 8.0;
    h = header();
    EXPECT_LOAD(write_with_header(h), &c, HRMT_ERR_TENSOR_SHAPE, "gate_up_proj");
    cJSON_Delete(h);
}

Test(model_file, shape_offsets_disagree) {
    cJSON *h = header();
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "model.inner.q_head.bias");
    cJSON *sh = cJSON_CreateArray();
    cJSON_AddItemToArray(sh, cJSON_CreateNumber(3));
    cJSON_ReplaceItemInObjectCaseSensitive(t, "shape", sh);
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_BAD_OFFSETS, "q_head.bias");
    cJSON_Delete(h);
}

Test(model_file, overlapping_offsets) {
    cJSON *h = header();
    /* Point L_init's 128 bytes into the middle of H_init's neighbour. */
    double b = offset_of(h, "model.inner.H_level.layers.0.mlp.down_proj.weight", 0) + 64;
    set_offsets(h, "model.inner.L_init", b, b + 128);
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_OVERLAP, "overlap");
    cJSON_Delete(h);
}

Test(model_file, out_of_range_offsets) {
    cJSON *h = header();
    double end = offset_of(h, "model.inner.q_head.weight", 1);
    set_offsets(h, "model.inner.L_init", end + 4096, end + 4096 + 128);
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_BAD_OFFSETS, "outside");
    cJSON_Delete(h);
}

Test(model_file, missing_tensor) {
    cJSON *h = header();
    cJSON_DeleteItemFromObjectCaseSensitive(h,
                                            "model.inner.L_level.layers.1.self_attn.o_proj.weight");
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_MISSING_TENSOR,
                "L_level.layers.1.self_attn.o_proj");
    cJSON_Delete(h);
}

Test(model_file, integer_weight) {
    cJSON *h = header();
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "model.inner.q_head.bias");
    cJSON_ReplaceItemInObjectCaseSensitive(t, "dtype", cJSON_CreateString("I32"));
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_DTYPE, "q_head.bias");
    cJSON_Delete(h);
}

Test(model_file, no_config_anywhere) {
    cJSON *h = header();
    EXPECT_LOAD(write_with_header(h), NULL, HRMT_ERR_CONFIG, "arch");
    cJSON_Delete(h);
}

/* Every tensor renamed: `_orig_mod.model.inner.` (compiled ACT head) and bare. */
static void rename_all(cJSON *h, const char *from, const char *to) {
    cJSON *renamed = cJSON_CreateObject();
    cJSON *it = h->child;
    while (it) {
        cJSON *next = it->next;
        cJSON *item = cJSON_DetachItemViaPointer(h, it);
        char name[512];
        if (strncmp(item->string, from, strlen(from)) == 0)
            snprintf(name, sizeof name, "%s%s", to, item->string + strlen(from));
        else
            snprintf(name, sizeof name, "%s", item->string);
        cJSON_AddItemToObject(renamed, name, item);
        it = next;
    }
    while (renamed->child) {
        cJSON *item = cJSON_DetachItemViaPointer(renamed, renamed->child);
        char *nm = strdup(item->string);
        cJSON_AddItemToObject(h, nm, item);
        free(nm);
    }
    cJSON_Delete(renamed);
}

Test(model_file, name_prefixes) {
    cJSON *h = header();
    rename_all(h, "model.inner.", "_orig_mod.model.inner.");
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_OK, "");
    cJSON_Delete(h);
    h = header();
    rename_all(h, "model.inner.", "");
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_OK, "");
    cJSON_Delete(h);
}

Test(model_file, codes_are_distinct) {
    const hrmt_status codes[] = {HRMT_ERR_FILE_TRUNCATED, HRMT_ERR_HEADER_SIZE, HRMT_ERR_BAD_JSON,
                                 HRMT_ERR_BAD_DTYPE,      HRMT_ERR_BAD_OFFSETS, HRMT_ERR_OVERLAP,
                                 HRMT_ERR_MISSING_TENSOR, HRMT_ERR_TENSOR_SHAPE};
    size_t n = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) cr_expect_neq(codes[i], codes[j]);
}

/* ---- config validation ---------------------------------------------------- */

static void expect_invalid(hrmt_model_config c, const char *field) {
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_eq(hrmt_model_config_validate(ctx, &c), HRMT_ERR_CONFIG, "%s accepted", field);
    cr_expect(strstr(hrmt_last_error(ctx), field) != NULL, "message '%s' does not name %s",
              hrmt_last_error(ctx), field);
    hrmt_model *m = NULL;
    cr_expect_eq(hrmt_model_create_random(ctx, &c, 1, &m), HRMT_ERR_CONFIG);
    cr_expect_null(m);
    hrmt_context_destroy(ctx);
}

Test(config, default_is_official_sudoku) {
    hrmt_model_config c = hrmt_model_config_default();
    cr_expect_eq(c.hidden_size, 512);
    cr_expect_eq(c.num_heads, 8);
    cr_expect_eq(c.expansion, 4.0);
    cr_expect_eq(c.H_layers, 4);
    cr_expect_eq(c.L_layers, 4);
    cr_expect_eq(c.H_cycles, 2);
    cr_expect_eq(c.L_cycles, 2);
    cr_expect_eq(c.seq_len, 81);
    cr_expect_eq(c.vocab_size, 11);
    cr_expect_eq(c.puzzle_emb_ndim, 512);
    cr_expect_eq(c.num_puzzle_identifiers, 1);
    cr_expect_eq(c.pos_encodings, HRMT_POS_ROPE);
    cr_expect_eq(c.halt_max_steps, 16);
    cr_expect_eq(c.forward_dtype, HRMT_BF16);
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_eq(hrmt_model_config_validate(ctx, &c), HRMT_OK);
    hrmt_context_destroy(ctx);
}

Test(config, invalid_fields) {
    hrmt_model_config d = hrmt_model_config_default(), c;
    c = d, c.hidden_size = 0, expect_invalid(c, "hidden_size");
    c = d, c.num_heads = -1, expect_invalid(c, "num_heads");
    c = d, c.num_heads = 3, expect_invalid(c, "num_heads"); /* 512 % 3 */
    c = d, c.hidden_size = 24, c.num_heads = 8, c.puzzle_emb_ndim = 0;
    expect_invalid(c, "head_dim"); /* 3: odd for rope */
    c = d, c.expansion = 0.0, expect_invalid(c, "expansion");
    c = d, c.expansion = NAN, expect_invalid(c, "expansion");
    c = d, c.H_layers = 0, expect_invalid(c, "H_layers");
    c = d, c.L_cycles = 0, expect_invalid(c, "L_cycles");
    c = d, c.seq_len = 0, expect_invalid(c, "seq_len");
    c = d, c.vocab_size = 0, expect_invalid(c, "vocab_size");
    c = d, c.puzzle_emb_ndim = -5, expect_invalid(c, "puzzle_emb_ndim");
    c = d, c.num_puzzle_identifiers = 0, expect_invalid(c, "num_puzzle_identifiers");
    c = d, c.halt_max_steps = 0, expect_invalid(c, "halt_max_steps");
    c = d, c.rope_theta = -1.0, expect_invalid(c, "rope_theta");
    c = d, c.rms_norm_eps = 0.0, expect_invalid(c, "rms_norm_eps");
    c = d, c.forward_dtype = HRMT_I32, expect_invalid(c, "forward_dtype");
    c = d, c.pos_encodings = (hrmt_pos_encoding)7, expect_invalid(c, "pos_encodings");
    /* The SwiGLU width: round(4 * 512 * 2 / 3) = 1365 -> 1536 (a multiple of 256). */
}

static hrmt_status json_status(const char *text, hrmt_model_config *out, char *msg, size_t ml) {
    snprintf(g_path, sizeof g_path, "/tmp/hrmt_cfg_%d_XXXXXX", (int)getpid());
    int fd = mkstemp(g_path);
    cr_assert(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs(text, fp);
    fclose(fp);
    hrmt_context *ctx = hrmt_test_context();
    hrmt_status s = hrmt_model_config_load_json(ctx, g_path, out);
    snprintf(msg, ml, "%s", hrmt_last_error(ctx));
    hrmt_context_destroy(ctx);
    unlink(g_path);
    return s;
}

#define ARCH_OK                                                                                   \
    "\"hidden_size\": 64, \"num_heads\": 4, \"expansion\": 4, \"H_layers\": 2, \"L_layers\": 2, " \
    "\"H_cycles\": 2, \"L_cycles\": 2, \"seq_len\": 81, \"vocab_size\": 11, "                     \
    "\"num_puzzle_identifiers\": 1, \"halt_max_steps\": 3"

Test(config, json_loading) {
    hrmt_model_config c;
    char msg[512];
    cr_assert_eq(json_status("{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"learned\", "
                             "\"puzzle_emb_ndim\": 200, \"forward_dtype\": \"float32\"}}",
                             &c, msg, sizeof msg),
                 HRMT_OK, "%s", msg);
    cr_expect_eq(c.pos_encodings, HRMT_POS_LEARNED);
    cr_expect_eq(c.forward_dtype, HRMT_F32);
    cr_expect_eq(c.puzzle_emb_ndim, 200);
    cr_expect_eq(c.rope_theta, 10000.0);
    cr_expect_eq(c.rms_norm_eps, 1e-5);
    /* A bare object works too; forward_dtype defaults to bfloat16. */
    cr_assert_eq(json_status("{" ARCH_OK ", \"pos_encodings\": \"rope\"}", &c, msg, sizeof msg),
                 HRMT_OK, "%s", msg);
    cr_expect_eq(c.forward_dtype, HRMT_BF16);
    cr_expect_eq(c.puzzle_emb_ndim, 0);
    const struct {
        const char *text, *needle;
    } bad[] = {
        {"{" ARCH_OK "}", "pos_encodings"},
        {"{\"hidden_size\": 64}", "num_heads"},
        {"{" ARCH_OK ", \"pos_encodings\": \"alibi\"}", "alibi"},
        {"{" ARCH_OK ", \"pos_encodings\": \"rope\", \"forward_dtype\": \"float16\"}", "float16"},
        {"{" ARCH_OK ", \"pos_encodings\": 3}", "pos_encodings"},
        {"{" ARCH_OK ", \"pos_encodings\": \"rope\", \"H_layers\": 1}", "appears twice"},
        {"{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\", \"H_cycles\": 1.5}}", "H_cycles"},
        {"{\"hidden_size\": 64, \"num_heads\": \"4\"}", "num_heads"},
        {"{" ARCH_OK ", \"pos_encodings\": \"rope\", \"rms_norm_eps\": -1}", "rms_norm_eps"},
        {"{\"arch\": [1, 2]}", "object"},
        {"{not json", "JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(json_status(bad[i].text, &c, msg, sizeof msg), HRMT_ERR_CONFIG, "accepted: %s",
                     bad[i].text);
        cr_expect(strstr(msg, bad[i].needle) != NULL, "message '%s' lacks '%s'", msg,
                  bad[i].needle);
    }
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_eq(hrmt_model_config_load_json(ctx, "/nonexistent/arch.json", &c), HRMT_ERR_IO);
    hrmt_context_destroy(ctx);
}

/* ---- step arguments --------------------------------------------------------- */

Test(step, bad_arguments) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_model_config c = hrmt_model_config_default();
    c.hidden_size = 64;
    c.num_heads = 2;
    c.H_layers = c.L_layers = 1;
    c.puzzle_emb_ndim = 64;
    c.num_puzzle_identifiers = 2;
    hrmt_model *m = NULL, *m2 = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &c, 3, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_assert_eq(hrmt_model_create_random(ctx, &c, 4, &m2), HRMT_OK);
    hrmt_carry *carry = NULL;
    cr_expect_eq(hrmt_carry_create(m, 0, &carry), HRMT_ERR_INVALID_ARG);
    cr_expect_null(carry);
    cr_assert_eq(hrmt_carry_create(m, 2, &carry), HRMT_OK);
    int32_t in[2 * 81], pid[2] = {0, 1};
    for (int i = 0; i < 2 * 81; i++) in[i] = i % 11;
    cr_expect_eq(hrmt_act_step(m, carry, in, pid, NULL, NULL, NULL), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    hrmt_step_options o = {(hrmt_schedule)9, 0};
    cr_expect_eq(hrmt_act_step(m, carry, in, pid, &o, NULL, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_act_step(m2, carry, in, pid, NULL, NULL, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_act_step(m, carry, NULL, pid, NULL, NULL, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_act_step(m, carry, in, NULL, NULL, NULL, NULL), HRMT_ERR_INVALID_ARG);
    /* A fresh carry takes the data: out-of-range tokens and ids are refused. */
    hrmt_carry *fresh = NULL;
    cr_assert_eq(hrmt_carry_create(m, 2, &fresh), HRMT_OK);
    in[100] = 11;
    cr_expect_eq(hrmt_act_step(m, fresh, in, pid, NULL, NULL, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "vocabulary") != NULL, "%s", hrmt_last_error(ctx));
    in[100] = -1;
    cr_expect_eq(hrmt_act_step(m, fresh, in, pid, NULL, NULL, NULL), HRMT_ERR_INVALID_ARG);
    in[100] = 3;
    pid[1] = 2;
    cr_expect_eq(hrmt_act_step(m, fresh, in, pid, NULL, NULL, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "puzzle") != NULL, "%s", hrmt_last_error(ctx));
    pid[1] = 1;
    cr_expect_eq(hrmt_act_step(m, fresh, in, pid, NULL, NULL, NULL), HRMT_OK);
    hrmt_carry_destroy(fresh);
    hrmt_carry_destroy(carry);
    hrmt_model_destroy(m);
    hrmt_model_destroy(m2);
    hrmt_context_destroy(ctx);
}
