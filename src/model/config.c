/* HRM architecture config: the official Sudoku default, validation, and the
 * JSON `arch` loader (case.json / arch.json / safetensors __metadata__). */
#define _POSIX_C_SOURCE 200809L /* fdopen, fcntl */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/context.h"
#include "core/limits.h"
#include "core/name_index.h"
#include "core/open_regular.h"
#include "core/text_escape.h"
#include "model/model.h"

hrmt_model_config hrmt_model_config_default(void) {
    hrmt_model_config c;
    memset(&c, 0, sizeof c);
    c.hidden_size = 512;
    c.num_heads = 8;
    c.expansion = 4.0;
    c.H_layers = 4;
    c.L_layers = 4;
    c.H_cycles = 2;
    c.L_cycles = 2;
    c.seq_len = 81;
    c.vocab_size = 11;
    c.puzzle_emb_ndim = 512;
    c.num_puzzle_identifiers = 1;
    c.pos_encodings = HRMT_POS_ROPE;
    c.halt_max_steps = 16;
    c.rope_theta = 10000.0;
    c.rms_norm_eps = 1e-5;
    c.forward_dtype = HRMT_BF16;
    return c;
}

/* SwiGLU width: _find_multiple(round(expansion * hidden * 2 / 3), 256), with
 * Python's round (half to even) and the same left-to-right double arithmetic. */
int hrmt_model_inter_size(const hrmt_model_config *c) {
    double v = c->expansion * (double)c->hidden_size * 2.0 / 3.0;
    double r = nearbyint(v); /* default rounding mode: ties to even, like Python's round */
    if (!(r >= 1.0) || r > 1e9) return 0;
    long long n = (long long)r;
    return (int)((n + 255) / 256 * 256);
}

int hrmt_model_config_puzzle_len(const hrmt_model_config *c) {
    return c->puzzle_emb_ndim > 0 ? (c->puzzle_emb_ndim + c->hidden_size - 1) / c->hidden_size : 0;
}

/* Field values and their limits (core/limits.h): every size a config sets is
 * bounded before anything is allocated or run from it. */
static hrmt_status bad(hrmt_context *ctx, const char *src, const char *field, const char *why,
                       double v) {
    return hrmt_fail(ctx, HRMT_ERR_CONFIG, "%s: %s = %g %s", src, field, v, why);
}

/* Weights the model holds for `c` (what hrmt_model_alloc and the packed
 * layers store), from fields already within their limits: every term stays
 * below 2^60. */
static uint64_t param_count(const hrmt_model_config *c) {
    uint64_t h = (uint64_t)c->hidden_size, in = (uint64_t)hrmt_model_inter_size(c);
    uint64_t V = (uint64_t)c->vocab_size, P = (uint64_t)hrmt_model_config_puzzle_len(c);
    uint64_t T = (uint64_t)c->seq_len + P;
    uint64_t layer = 3 * h * h + h * h + 2 * in * h + in * h;
    uint64_t n = 2 * V * h + 4 * h + 2 + (uint64_t)c->num_puzzle_identifiers * P * h;
    if (c->pos_encodings == HRMT_POS_LEARNED) n += T * h;
    return n + ((uint64_t)c->H_layers + (uint64_t)c->L_layers) * layer;
}

/* hrmt_model_config_validate with `src` naming where the config came from. */
static hrmt_status validate(hrmt_context *ctx, const hrmt_model_config *c, const char *src) {
    const hrmt_limits *lim = hrmt_limits_of(ctx);
    const struct {
        const char *name;
        int v, lo;
        hrmt_limit_id id;
    } ints[] = {
        {"hidden_size", c->hidden_size, 1, HRMT_LIMIT_HIDDEN_SIZE},
        {"num_heads", c->num_heads, 1, HRMT_LIMIT_NUM_HEADS},
        {"H_layers", c->H_layers, 1, HRMT_LIMIT_LAYERS},
        {"L_layers", c->L_layers, 1, HRMT_LIMIT_LAYERS},
        {"H_cycles", c->H_cycles, 1, HRMT_LIMIT_CYCLES},
        {"L_cycles", c->L_cycles, 1, HRMT_LIMIT_CYCLES},
        {"seq_len", c->seq_len, 1, HRMT_LIMIT_SEQ_LEN},
        {"vocab_size", c->vocab_size, 1, HRMT_LIMIT_VOCAB_SIZE},
        {"puzzle_emb_ndim", c->puzzle_emb_ndim, 0, HRMT_LIMIT_HIDDEN_SIZE},
        {"num_puzzle_identifiers", c->num_puzzle_identifiers, 0, HRMT_LIMIT_PUZZLE_IDS},
        {"halt_max_steps", c->halt_max_steps, 1, HRMT_LIMIT_HALT_MAX_STEPS},
    };
    char what[HRMT_ERRMSG_LEN];
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (ints[i].v < ints[i].lo)
            return hrmt_fail(ctx, HRMT_ERR_CONFIG, "%s: %s = %d is below its minimum %d", src,
                             ints[i].name, ints[i].v, ints[i].lo);
        if (ints[i].v > hrmt_limit_value(lim, ints[i].id)) {
            snprintf(what, sizeof what, "%s: %s", src, ints[i].name);
            return hrmt_limit_fail(ctx, HRMT_ERR_LIMIT, ints[i].id, what, ints[i].v);
        }
    }
    if (c->hidden_size % c->num_heads != 0)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "%s: hidden_size %d is not a multiple of num_heads %d", src,
                         c->hidden_size, c->num_heads);
    int head_dim = c->hidden_size / c->num_heads;
    if (c->pos_encodings != HRMT_POS_ROPE && c->pos_encodings != HRMT_POS_LEARNED)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG, "%s: pos_encodings %d is neither rope nor learned",
                         src, (int)c->pos_encodings);
    if (c->pos_encodings == HRMT_POS_ROPE && head_dim % 2 != 0)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "%s: rope needs an even head_dim (hidden_size/num_heads = %d)", src,
                         head_dim);
    if (!isfinite(c->expansion) || !(c->expansion > 0.0) || c->expansion > 1024.0)
        return bad(ctx, src, "expansion", "must be a finite number in (0, 1024]", c->expansion);
    if (hrmt_model_inter_size(c) <= 0)
        return bad(ctx, src, "expansion", "gives an empty SwiGLU width", c->expansion);
    if (c->puzzle_emb_ndim > 0 && c->num_puzzle_identifiers < 1)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "%s: num_puzzle_identifiers must be >= 1 when puzzle_emb_ndim > 0", src);
    int64_t T = (int64_t)c->seq_len + hrmt_model_config_puzzle_len(c);
    if (T > lim->seq_len) {
        snprintf(what, sizeof what, "%s: seq_len + puzzle prefix rows (%d + %d)", src, c->seq_len,
                 hrmt_model_config_puzzle_len(c));
        return hrmt_limit_fail(ctx, HRMT_ERR_LIMIT, HRMT_LIMIT_SEQ_LEN, what, T);
    }
    if (!isfinite(c->rope_theta) || !(c->rope_theta > 0.0))
        return bad(ctx, src, "rope_theta", "must be finite and > 0", c->rope_theta);
    if (!isfinite(c->rms_norm_eps) || !(c->rms_norm_eps > 0.0) || c->rms_norm_eps > 1.0)
        return bad(ctx, src, "rms_norm_eps", "must be in (0, 1]", c->rms_norm_eps);
    if (c->forward_dtype != HRMT_BF16 && c->forward_dtype != HRMT_F32)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG, "%s: forward_dtype must be bfloat16 or float32",
                         src);
    uint64_t params = param_count(c);
    if (params > (uint64_t)lim->params) {
        snprintf(what, sizeof what,
                 "%s: the model's parameter count (hidden_size %d, vocab_size %d, %d+%d layers, "
                 "%d puzzle ids)",
                 src, c->hidden_size, c->vocab_size, c->H_layers, c->L_layers,
                 c->num_puzzle_identifiers);
        return hrmt_limit_fail(ctx, HRMT_ERR_LIMIT, HRMT_LIMIT_PARAMS, what, (int64_t)params);
    }
    return HRMT_OK;
}

hrmt_status hrmt_model_config_validate(hrmt_context *ctx, const hrmt_model_config *c) {
    if (!c) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "model config: NULL");
    return validate(ctx, c, "model config");
}

/* ---- JSON --------------------------------------------------------------- */

/* Where keys are read: the object, the source for messages ("model config
 * 'a.json'") and the key prefix ("arch." inside an arch object). */
typedef struct json_src {
    hrmt_context *ctx;
    const cJSON *o;
    const char *src, *prefix;
} json_src;

static hrmt_status get_int(const json_src *j, const char *key, int required, int *dst) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(j->o, key);
    if (!it) {
        if (required)
            return hrmt_fail(j->ctx, HRMT_ERR_CONFIG, "%s: missing key '%s%s'", j->src, j->prefix,
                             key);
        return HRMT_OK;
    }
    double d = it->valuedouble;
    if (!cJSON_IsNumber(it) || d != floor(d) || d < -2147483648.0 || d > 2147483647.0)
        return hrmt_fail(j->ctx, HRMT_ERR_CONFIG, "%s: '%s%s' must be an integer", j->src,
                         j->prefix, key);
    *dst = (int)d;
    return HRMT_OK;
}

static hrmt_status get_num(const json_src *j, const char *key, int required, double *dst) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(j->o, key);
    if (!it) {
        if (required)
            return hrmt_fail(j->ctx, HRMT_ERR_CONFIG, "%s: missing key '%s%s'", j->src, j->prefix,
                             key);
        return HRMT_OK;
    }
    if (!cJSON_IsNumber(it))
        return hrmt_fail(j->ctx, HRMT_ERR_CONFIG, "%s: '%s%s' must be a number", j->src, j->prefix,
                         key);
    *dst = it->valuedouble;
    return HRMT_OK;
}

static hrmt_status get_str(const json_src *j, const char *key, const char **dst) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(j->o, key);
    if (!it) return HRMT_OK;
    if (!cJSON_IsString(it))
        return hrmt_fail(j->ctx, HRMT_ERR_CONFIG, "%s: '%s%s' must be a string", j->src, j->prefix,
                         key);
    *dst = it->valuestring;
    return HRMT_OK;
}

/* cJSON keeps every copy of a repeated key and its lookups return the first:
 * a second "arch" object, or a second "H_cycles", would be ignored without a
 * word. A hash index finds repeats in linear time (a quadratic scan took
 * minutes on 200k keys). */
static hrmt_status check_unique_keys(const json_src *j) {
    if (!j->o) return HRMT_ERR_INVALID_ARG;
    hrmt_name_index ix;
    if (hrmt_name_index_init(&ix, (size_t)cJSON_GetArraySize(j->o)) != 0)
        return hrmt_fail(j->ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: key index", j->src);
    hrmt_status s = HRMT_OK;
    for (const cJSON *a = j->o->child; a && s == HRMT_OK; a = a->next) {
        int r = hrmt_name_index_add(&ix, a->string ? a->string : "", 0, NULL);
        if (r < 0) {
            s = hrmt_fail(j->ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: key index", j->src);
        } else if (r > 0) {
            char k[HRMT_ESCAPED_MAX];
            hrmt_text_escape_str(k, sizeof k, a->string);
            s = hrmt_fail(j->ctx, HRMT_ERR_CONFIG,
                          "%s: key '%s%s' appears twice; keep one (a config holds one value per "
                          "key%s)",
                          j->src, j->prefix, k, j->prefix[0] ? "" : " and one 'arch' object");
        }
    }
    hrmt_name_index_free(&ix);
    return s;
}

/* Parses the text as exactly one JSON value: cJSON stops after the first
 * value, so "{...} garbage" or "{...}{...}" would otherwise load. */
static hrmt_status parse_one_value(hrmt_context *ctx, const char *text, size_t len, const char *src,
                                   cJSON **out) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t pos = (at && at >= text && at <= text + len) ? (size_t)(at - text) : 0;
        return hrmt_fail(ctx, HRMT_ERR_CONFIG, "%s is not valid JSON (near byte %zu)", src, pos);
    }
    for (const char *p = end; p && p < text + len; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(root);
            return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                             "%s: unexpected bytes after the JSON object at byte %zu; the file "
                             "must hold one JSON object only",
                             src, (size_t)(p - text));
        }
    }
    *out = root;
    return HRMT_OK;
}

static hrmt_status read_arch(const json_src *j, hrmt_model_config *out) {
    /* Keys without a default in the official config class are required. */
    hrmt_model_config c = hrmt_model_config_default();
    c.puzzle_emb_ndim = 0;
    const struct {
        const char *key;
        int *dst;
        int required;
    } ints[] = {
        {"hidden_size", &c.hidden_size, 1},
        {"num_heads", &c.num_heads, 1},
        {"H_layers", &c.H_layers, 1},
        {"L_layers", &c.L_layers, 1},
        {"H_cycles", &c.H_cycles, 1},
        {"L_cycles", &c.L_cycles, 1},
        {"seq_len", &c.seq_len, 1},
        {"vocab_size", &c.vocab_size, 1},
        {"puzzle_emb_ndim", &c.puzzle_emb_ndim, 0},
        {"num_puzzle_identifiers", &c.num_puzzle_identifiers, 1},
        {"halt_max_steps", &c.halt_max_steps, 1},
    };
    hrmt_status s;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if ((s = get_int(j, ints[i].key, ints[i].required, ints[i].dst)) != HRMT_OK) return s;
    if ((s = get_num(j, "expansion", 1, &c.expansion)) != HRMT_OK ||
        (s = get_num(j, "rope_theta", 0, &c.rope_theta)) != HRMT_OK ||
        (s = get_num(j, "rms_norm_eps", 0, &c.rms_norm_eps)) != HRMT_OK)
        return s;
    const char *pos = NULL, *fdt = NULL;
    if ((s = get_str(j, "pos_encodings", &pos)) != HRMT_OK ||
        (s = get_str(j, "forward_dtype", &fdt)) != HRMT_OK)
        return s;
    char e[HRMT_ESCAPED_MAX];
    if (!pos)
        return hrmt_fail(j->ctx, HRMT_ERR_CONFIG, "%s: missing key '%spos_encodings'", j->src,
                         j->prefix);
    if (strcmp(pos, "rope") == 0) {
        c.pos_encodings = HRMT_POS_ROPE;
    } else if (strcmp(pos, "learned") == 0) {
        c.pos_encodings = HRMT_POS_LEARNED;
    } else {
        return hrmt_fail(j->ctx, HRMT_ERR_CONFIG,
                         "%s: %spos_encodings '%s' is neither 'rope' nor 'learned'", j->src,
                         j->prefix, hrmt_text_escape_str(e, sizeof e, pos));
    }
    if (fdt) {
        if (!strcmp(fdt, "bfloat16") || !strcmp(fdt, "bf16")) {
            c.forward_dtype = HRMT_BF16;
        } else if (!strcmp(fdt, "float32") || !strcmp(fdt, "f32")) {
            c.forward_dtype = HRMT_F32;
        } else {
            return hrmt_fail(j->ctx, HRMT_ERR_CONFIG,
                             "%s: %sforward_dtype '%s' is not bfloat16 or float32", j->src,
                             j->prefix, hrmt_text_escape_str(e, sizeof e, fdt));
        }
    }
    if ((s = validate(j->ctx, &c, j->src)) != HRMT_OK) return s;
    *out = c;
    return HRMT_OK;
}

hrmt_status hrmt_model_config_from_json_text(hrmt_context *ctx, const char *text, size_t len,
                                             const char *what, hrmt_model_config *out) {
    char src[HRMT_ESCAPED_MAX + 32];
    snprintf(src, sizeof src, "model config %s", what);
    cJSON *root = NULL;
    hrmt_status s = parse_one_value(ctx, text, len, src, &root);
    if (s != HRMT_OK) return s;
    json_src j = {ctx, root, src, ""};
    if (!cJSON_IsObject(root)) {
        s = hrmt_fail(ctx, HRMT_ERR_CONFIG, "%s is not a JSON object", src);
        goto out;
    }
    if ((s = check_unique_keys(&j)) != HRMT_OK) goto out;
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "arch");
    if (arch && !cJSON_IsObject(arch)) {
        s = hrmt_fail(ctx, HRMT_ERR_CONFIG, "%s: 'arch' is not an object", src);
        goto out;
    }
    if (arch) {
        j.o = arch;
        j.prefix = "arch.";
        if ((s = check_unique_keys(&j)) != HRMT_OK) goto out;
    }
    s = read_arch(&j, out);
out:
    cJSON_Delete(root);
    return s;
}

/* A config file above this is not an arch config (those are a few hundred
 * bytes); refusing it bounds the memory a mistaken path can take. */
#define CONFIG_MAX_BYTES ((size_t)16 << 20)

hrmt_status hrmt_model_config_load_json(hrmt_context *ctx, const char *path,
                                        hrmt_model_config *out) {
    if (!path || !out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "model config: NULL argument");
    char what[HRMT_ESCAPED_MAX + 4];
    char e[HRMT_ESCAPED_MAX];
    snprintf(what, sizeof what, "'%s'", hrmt_text_escape_str(e, sizeof e, path));
    const char *why;
    int opened;
    int fd = hrmt_open_regular(path, NULL, &why, &opened);
    if (fd < 0)
        return hrmt_fail(ctx, HRMT_ERR_IO,
                         opened ? "model config %s: %s" : "model config %s: cannot open: %s", what,
                         why);
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        int err = errno;
        close(fd);
        return hrmt_fail(ctx, HRMT_ERR_IO, "model config %s: cannot open: %s", what, strerror(err));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    hrmt_status s = HRMT_OK;
    for (;;) {
        if (len == cap) {
            if (cap > CONFIG_MAX_BYTES) break; /* one byte past the maximum: refused below */
            cap = cap ? 2 * cap : 4096;
            if (cap > CONFIG_MAX_BYTES) cap = CONFIG_MAX_BYTES + 1;
            char *nb = realloc(buf, cap);
            if (!nb) {
                s = hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "model config %s: no memory to read it",
                              what);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) {
            if (ferror(fp)) s = hrmt_fail(ctx, HRMT_ERR_IO, "model config %s: read failed", what);
            break;
        }
    }
    fclose(fp);
    if (s == HRMT_OK && len > CONFIG_MAX_BYTES)
        s = hrmt_fail(ctx, HRMT_ERR_CONFIG,
                      "model config %s is larger than 16 MiB; an arch config has a few hundred "
                      "bytes: check the path",
                      what);
    if (s == HRMT_OK) s = hrmt_model_config_from_json_text(ctx, buf ? buf : "", len, what, out);
    free(buf);
    return s;
}
