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

#include "model/model.h"
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

/* Replaces `key` ("dtype", "shape") of tensor `name`'s header entry with v. */
static void set_field(cJSON *h, const char *name, const char *key, cJSON *v) {
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, name);
    cr_assert_not_null(t, "%s", name);
    cr_assert(cJSON_ReplaceItemInObjectCaseSensitive(t, key, v), "%s has no %s", name, key);
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
    set_field(h, "model.inner.lm_head.weight", "dtype", cJSON_CreateString("F8_E4M3"));
    EXPECT_LOAD(write_with_header(h), &g_cfg, HRMT_ERR_BAD_DTYPE, "F8_E4M3");
    cJSON_Delete(h);
}

Test(model_file, wrong_shape) {
    /* Same bytes, transposed shape: the file is consistent, the model is not. */
    cJSON *h = header();
    const int transposed[2] = {64, 11};
    set_field(h, "model.inner.lm_head.weight", "shape", cJSON_CreateIntArray(transposed, 2));
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
    const int three[1] = {3};
    set_field(h, "model.inner.q_head.bias", "shape", cJSON_CreateIntArray(three, 1));
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
    set_field(h, "model.inner.q_head.bias", "dtype", cJSON_CreateString("I32"));
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

/* ---- hostile model files ---------------------------------------------------- */

/* The golden file with `bytes` written over element `elem` of tensor `name`. */
static const char *write_patched(const char *name, size_t elem, const void *bytes, size_t n) {
    cJSON *h = header();
    double begin = offset_of(h, name, 0);
    cJSON_Delete(h);
    unsigned char *copy = malloc(g_len);
    memcpy(copy, g_file, g_len);
    memcpy(copy + 8 + g_hlen + (size_t)begin + elem * n, bytes, n);
    const char *p = write_bytes(copy, g_len, NULL, 0);
    free(copy);
    return p;
}

static hrmt_status load_flags(const char *path, const hrmt_model_config *cfg, unsigned flags,
                              char *msg, size_t ml) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_model *m = NULL;
    hrmt_status s = hrmt_model_load_ex(ctx, path, cfg, flags, &m);
    snprintf(msg, ml, "%s", hrmt_last_error(ctx));
    cr_expect((s == HRMT_OK) == (m != NULL));
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
    return s;
}

Test(model_file, nonfinite_weights_are_refused_with_the_tensor_name) {
    const uint32_t nan32 = 0x7fc00000u, inf32 = 0xff800000u, big32 = 0x7f7fffffu; /* FLT_MAX */
    const uint16_t nan16 = 0x7fc0u;
    const struct {
        const char *tensor;
        size_t elem;
        const void *bytes;
        size_t n;
        const char *needle;
    } cases[] = {
        {"model.inner.L_level.layers.1.mlp.down_proj.weight", 77, &nan32, 4, "NaN at element 77"},
        {"model.inner.lm_head.weight", 0, &inf32, 4, "Inf at element 0"},
        {"model.inner.H_init", 5, &nan16, 2, "NaN at element 5"},
        /* Finite in F32, Inf once rounded to the bf16 forward dtype. */
        {"model.inner.q_head.weight", 3, &big32, 4, "overflows bfloat16"},
    };
    char msg[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = write_patched(cases[i].tensor, cases[i].elem, cases[i].bytes, cases[i].n);
        cr_expect_eq(load_flags(p, &g_cfg, HRMT_LOAD_DEFAULT, msg, sizeof msg), HRMT_ERR_NONFINITE,
                     "%s accepted: %s", cases[i].tensor, msg);
        cr_expect(strstr(msg, cases[i].tensor) && strstr(msg, cases[i].needle) &&
                      strstr(msg, "--allow-nonfinite-weights"),
                  "message '%s' lacks the tensor, '%s' or the way out", msg, cases[i].needle);
        /* The flag lets the same file load. */
        cr_expect_eq(load_flags(p, &g_cfg, HRMT_LOAD_ALLOW_NONFINITE, msg, sizeof msg), HRMT_OK,
                     "%s", msg);
        unlink(p);
    }
    /* FLT_MAX is a legal weight of an F32 model. */
    hrmt_model_config f32 = g_cfg;
    f32.forward_dtype = HRMT_F32;
    const char *p = write_patched("model.inner.q_head.weight", 3, &big32, 4);
    cr_expect_eq(load_flags(p, &f32, HRMT_LOAD_DEFAULT, msg, sizeof msg), HRMT_OK, "%s", msg);
    cr_expect_eq(load_flags(p, &g_cfg, 0x80, msg, sizeof msg), HRMT_ERR_INVALID_ARG);
    unlink(p);
}

/* A 300-byte file whose metadata claims an architecture of ~2^39 weights
 * (inside raised limits): the loader must find the tensors missing before it
 * allocates anything. Were the model allocated first, the 512 GiB embedding
 * would fail (OUT_OF_MEMORY, or a sanitizer abort), not MISSING_TENSOR. */
Test(model_file, small_file_claiming_a_huge_model_allocates_nothing) {
    const char *arch =
        "{\\\"hidden_size\\\": 65536, \\\"num_heads\\\": 2, \\\"expansion\\\": 1, "
        "\\\"H_layers\\\": 1, \\\"L_layers\\\": 1, \\\"H_cycles\\\": 1, "
        "\\\"L_cycles\\\": 1, \\\"seq_len\\\": 8, \\\"vocab_size\\\": 4194304, "
        "\\\"num_puzzle_identifiers\\\": 1, \\\"halt_max_steps\\\": 1, "
        "\\\"pos_encodings\\\": \\\"rope\\\"}";
    char hdr[1024];
    snprintf(hdr, sizeof hdr,
             "{\"__metadata__\":{\"arch\":\"%s\"},"
             "\"model.inner.H_init\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
             arch);
    size_t hl = strlen(hdr);
    unsigned char buf[1100];
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, hdr, hl);
    memset(buf + 8 + hl, 0, 4);
    const char *p = write_bytes(buf, 8 + hl + 4, NULL, 0);
    hrmt_context *ctx = hrmt_test_context();
    hrmt_limits lim = hrmt_limits_default();
    lim.hidden_size = 65536;
    lim.vocab_size = 1 << 30;
    lim.params = (int64_t)1 << 40;
    cr_assert_eq(hrmt_context_set_limits(ctx, &lim), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_model *m = NULL;
    hrmt_status s = hrmt_model_load(ctx, p, NULL, &m);
    cr_expect_eq(s, HRMT_ERR_MISSING_TENSOR, "got %s: %s", hrmt_status_str(s),
                 hrmt_last_error(ctx));
    cr_expect_null(m);
    /* With the default limits the same file fails on the limit, naming it. */
    cr_assert_eq(hrmt_context_set_limits(ctx, hrmt_context_limits(NULL)), HRMT_OK);
    s = hrmt_model_load(ctx, p, NULL, &m);
    cr_expect_eq(s, HRMT_ERR_LIMIT, "got %s: %s", hrmt_status_str(s), hrmt_last_error(ctx));
    cr_expect(strstr(hrmt_last_error(ctx), "hidden_size = 65536") &&
                  strstr(hrmt_last_error(ctx), "HRMT_LIMIT_HIDDEN_SIZE") &&
                  strstr(hrmt_last_error(ctx), "__metadata__"),
              "%s", hrmt_last_error(ctx));
    hrmt_context_destroy(ctx);
    unlink(p);
}

/* Architectures that would run for hours (cycles, halt steps) are refused
 * from the file's metadata as from --config, naming the limit. */
Test(model_file, metadata_arch_above_the_limits) {
    const struct {
        const char *key;
        int value;
        const char *env;
    } cases[] = {{"H_cycles", 4096, "HRMT_LIMIT_CYCLES"},
                 {"L_cycles", 4096, "HRMT_LIMIT_CYCLES"},
                 {"halt_max_steps", 1 << 20, "HRMT_LIMIT_HALT_MAX_STEPS"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "hidden_size", g_cfg.hidden_size);
        cJSON_AddNumberToObject(a, "num_heads", g_cfg.num_heads);
        cJSON_AddNumberToObject(a, "expansion", g_cfg.expansion);
        cJSON_AddNumberToObject(a, "H_layers", g_cfg.H_layers);
        cJSON_AddNumberToObject(a, "L_layers", g_cfg.L_layers);
        cJSON_AddNumberToObject(a, "H_cycles", g_cfg.H_cycles);
        cJSON_AddNumberToObject(a, "L_cycles", g_cfg.L_cycles);
        cJSON_AddNumberToObject(a, "seq_len", g_cfg.seq_len);
        cJSON_AddNumberToObject(a, "vocab_size", g_cfg.vocab_size);
        cJSON_AddNumberToObject(a, "puzzle_emb_ndim", g_cfg.puzzle_emb_ndim);
        cJSON_AddNumberToObject(a, "num_puzzle_identifiers", g_cfg.num_puzzle_identifiers);
        cJSON_AddNumberToObject(a, "halt_max_steps", g_cfg.halt_max_steps);
        cJSON_AddStringToObject(a, "pos_encodings", "rope");
        cJSON_ReplaceItemInObjectCaseSensitive(a, cases[i].key, cJSON_CreateNumber(cases[i].value));
        char *txt = cJSON_PrintUnformatted(a);
        cJSON_Delete(a);
        cJSON *h = header();
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(h, "__metadata__");
        cr_assert_not_null(meta);
        cJSON_AddStringToObject(meta, "arch", txt);
        cJSON_free(txt);
        char want[64];
        snprintf(want, sizeof want, "%s = %d exceeds", cases[i].key, cases[i].value);
        const char *p = write_with_header(h);
        char msg[512];
        hrmt_status s = load_status(p, NULL, msg, sizeof msg);
        cr_expect_eq(s, HRMT_ERR_LIMIT, "%s: got %s (%s)", cases[i].key, hrmt_status_str(s), msg);
        cr_expect(strstr(msg, want) && strstr(msg, cases[i].env), "message '%s'", msg);
        cJSON_Delete(h);
    }
}

/* Untrusted bytes (a dtype string, a tensor name) reach messages escaped. */
Test(model_file, control_bytes_in_messages_are_escaped) {
    cJSON *h = header();
    cJSON *t = cJSON_GetObjectItemCaseSensitive(h, "model.inner.lm_head.weight");
    cJSON_ReplaceItemInObjectCaseSensitive(t, "dtype", cJSON_CreateString("F8\n\x1b[2J"));
    char msg[512];
    hrmt_status s = load_status(write_with_header(h), &g_cfg, msg, sizeof msg);
    cr_expect_eq(s, HRMT_ERR_BAD_DTYPE);
    cr_expect(strstr(msg, "F8\\x0a\\x1b[2J") != NULL, "message '%s' not escaped", msg);
    for (const char *c = msg; *c; c++) cr_expect((unsigned char)*c >= 0x20, "raw control byte");
    cJSON_Delete(h);
}

/* ---- hostile configs ---------------------------------------------------------- */

Test(config, one_json_object_and_one_arch_only) {
    hrmt_model_config c;
    char msg[512];
    const struct {
        const char *text, *needle;
    } bad[] = {
        {"{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\"}} trailing", "after the JSON"},
        {"{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\"}}{}", "after the JSON"},
        {"{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\"}, "
         "\"arch\": {" ARCH_OK ", \"pos_encodings\": \"learned\"}}",
         "'arch' appears twice"},
        {"{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\", \"L_cycles\": 9}}",
         "'arch.L_cycles' appears twice"},
        {"{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\"}, \"seed\": 1, \"seed\": 2}",
         "'seed' appears twice"},
        {"{" ARCH_OK ", \"pos_encodings\": \"\\u001b[2J\"}", "'\\x1b[2J'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(json_status(bad[i].text, &c, msg, sizeof msg), HRMT_ERR_CONFIG, "accepted: %s",
                     bad[i].text);
        cr_expect(strstr(msg, bad[i].needle) != NULL, "message '%s' lacks '%s'", msg,
                  bad[i].needle);
    }
    /* Whitespace after the object is fine; a NUL byte is not. */
    cr_expect_eq(
        json_status("{" ARCH_OK ", \"pos_encodings\": \"rope\"}\n\t \n", &c, msg, sizeof msg),
        HRMT_OK, "%s", msg);
    static const char with_nul[] = "{" ARCH_OK ", \"pos_encodings\": \"rope\"}\0{}";
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_eq(hrmt_model_config_from_json_text(ctx, with_nul, sizeof with_nul - 1, "'t'", &c),
                 HRMT_ERR_CONFIG);
    cr_expect(strstr(hrmt_last_error(ctx), "after the JSON") != NULL, "%s", hrmt_last_error(ctx));
    hrmt_context_destroy(ctx);
}

Test(config, limits_name_the_key_and_the_variable) {
    hrmt_model_config c;
    char msg[512], text[512];
    const struct {
        const char *key;
        long value;
        const char *needle;
    } cases[] = {
        {"H_cycles", 4096, "HRMT_LIMIT_CYCLES=N"},
        {"L_cycles", 65, "HRMT_LIMIT_CYCLES=N"},
        {"halt_max_steps", 1048576, "HRMT_LIMIT_HALT_MAX_STEPS=N"},
        {"H_layers", 65, "HRMT_LIMIT_LAYERS=N"},
        {"hidden_size", 16384, "HRMT_LIMIT_HIDDEN_SIZE=N"},
        {"num_heads", 512, "HRMT_LIMIT_NUM_HEADS=N"},
        {"seq_len", 5000, "HRMT_LIMIT_SEQ_LEN=N"},
        {"vocab_size", 2000000, "HRMT_LIMIT_VOCAB_SIZE=N"},
        {"num_puzzle_identifiers", 20000000, "HRMT_LIMIT_PUZZLE_IDS=N"},
        /* Above the ceiling: no variable raises it. */
        {"H_cycles", 5000, "nothing raises"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text, "{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\"}}");
        hrmt_context *ctx = hrmt_test_context();
        cJSON *root = cJSON_Parse(text);
        cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "arch");
        cJSON_ReplaceItemInObjectCaseSensitive(arch, cases[i].key,
                                               cJSON_CreateNumber((double)cases[i].value));
        if (!strcmp(cases[i].key, "num_heads")) /* 512 heads need a width they divide */
            cJSON_ReplaceItemInObjectCaseSensitive(arch, "hidden_size", cJSON_CreateNumber(1024));
        char *txt = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        char want[64];
        cr_expect_eq(hrmt_model_config_from_json_text(ctx, txt, strlen(txt), "'cfg.json'", &c),
                     HRMT_ERR_LIMIT, "%s = %ld accepted", cases[i].key, cases[i].value);
        snprintf(msg, sizeof msg, "%s", hrmt_last_error(ctx));
        snprintf(want, sizeof want, "%s = %ld exceeds", cases[i].key, cases[i].value);
        cr_expect(strstr(msg, want) && strstr(msg, cases[i].needle) && strstr(msg, "'cfg.json'"),
                  "message '%s' lacks '%s' or '%s'", msg, want, cases[i].needle);
        /* Raising the limit admits the value (validation only: nothing runs). */
        if (strcmp(cases[i].needle, "nothing raises") != 0) {
            hrmt_limits lim = hrmt_limits_default();
            lim.cycles = lim.layers = 4096;
            lim.halt_max_steps = lim.seq_len = 1 << 20;
            lim.hidden_size = lim.num_heads = 65536;
            lim.vocab_size = lim.puzzle_ids = 1 << 30;
            lim.params = (int64_t)1 << 40;
            cr_assert_eq(hrmt_context_set_limits(ctx, &lim), HRMT_OK, "%s", hrmt_last_error(ctx));
            cr_expect_eq(hrmt_model_config_from_json_text(ctx, txt, strlen(txt), "'c'", &c),
                         HRMT_OK, "%s: %s", cases[i].key, hrmt_last_error(ctx));
        }
        cJSON_free(txt);
        hrmt_context_destroy(ctx);
    }
    /* seq_len plus the puzzle prefix rows counts against seq_len's limit. */
    hrmt_model_config d = hrmt_model_config_default();
    d.seq_len = 4096; /* + 1 prefix row */
    hrmt_context *ctx = hrmt_test_context();
    cr_expect_eq(hrmt_model_config_validate(ctx, &d), HRMT_ERR_LIMIT);
    cr_expect(strstr(hrmt_last_error(ctx), "puzzle prefix") != NULL, "%s", hrmt_last_error(ctx));
    /* The parameter count, over every weight of the model. */
    d = hrmt_model_config_default();
    d.vocab_size = 1 << 20;
    d.hidden_size = 1024; /* 2 x 2^30 embedding weights alone */
    cr_expect_eq(hrmt_model_config_validate(ctx, &d), HRMT_ERR_LIMIT);
    cr_expect(strstr(hrmt_last_error(ctx), "HRMT_LIMIT_PARAMS") != NULL, "%s",
              hrmt_last_error(ctx));
    hrmt_context_destroy(ctx);
}

/* 200k keys, the last one a repeat: found by the hash index in linear time
 * (a pairwise scan needed ~96 s for 200k keys); the timeout turns a
 * quadratic regression into a failure. */
Test(config, many_keys_are_checked_in_linear_time, .timeout = 60) {
    const size_t n = 200000;
    size_t cap = n * 24 + 1024, len = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    len += (size_t)snprintf(text + len, cap - len,
                            "{\"arch\": {" ARCH_OK ", \"pos_encodings\": \"rope\"");
    for (size_t i = 0; i < n; i++) len += (size_t)snprintf(text + len, cap - len, ",\"k%zu\":0", i);
    size_t open_end = len;
    len += (size_t)snprintf(text + len, cap - len, "}}");
    hrmt_context *ctx = hrmt_test_context();
    hrmt_model_config c;
    cr_expect_eq(hrmt_model_config_from_json_text(ctx, text, len, "'many'", &c), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    len = open_end + (size_t)snprintf(text + open_end, cap - open_end, ",\"k7\":1}}");
    cr_expect_eq(hrmt_model_config_from_json_text(ctx, text, len, "'many'", &c), HRMT_ERR_CONFIG);
    cr_expect(strstr(hrmt_last_error(ctx), "'arch.k7' appears twice") != NULL, "%s",
              hrmt_last_error(ctx));
    hrmt_context_destroy(ctx);
    free(text);
}
