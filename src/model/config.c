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
#include "core/open_regular.h"
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

/* Generous caps: they only keep the size arithmetic far from overflow. */
#define CAP_DIM (1 << 16)
#define CAP_LAYERS 4096
#define CAP_SEQ (1 << 20)
#define CAP_IDS (1 << 30)

static hrmt_status bad(hrmt_context *ctx, const char *field, const char *why, double v) {
    return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: %s = %g %s", field, v, why);
}

hrmt_status hrmt_model_config_validate(hrmt_context *ctx, const hrmt_model_config *c) {
    if (!c) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "model config: NULL");
    const struct {
        const char *name;
        int v, lo, hi;
    } ints[] = {
        {"hidden_size", c->hidden_size, 1, CAP_DIM},
        {"num_heads", c->num_heads, 1, CAP_DIM},
        {"H_layers", c->H_layers, 1, CAP_LAYERS},
        {"L_layers", c->L_layers, 1, CAP_LAYERS},
        {"H_cycles", c->H_cycles, 1, CAP_LAYERS},
        {"L_cycles", c->L_cycles, 1, CAP_LAYERS},
        {"seq_len", c->seq_len, 1, CAP_SEQ},
        {"vocab_size", c->vocab_size, 1, CAP_IDS},
        {"puzzle_emb_ndim", c->puzzle_emb_ndim, 0, CAP_SEQ},
        {"num_puzzle_identifiers", c->num_puzzle_identifiers, 0, CAP_IDS},
        {"halt_max_steps", c->halt_max_steps, 1, 1 << 20},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (ints[i].v < ints[i].lo || ints[i].v > ints[i].hi)
            return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: %s = %d is outside %d..%d",
                             ints[i].name, ints[i].v, ints[i].lo, ints[i].hi);
    }
    if (c->hidden_size % c->num_heads != 0)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "model config: hidden_size %d is not a multiple of num_heads %d",
                         c->hidden_size, c->num_heads);
    int head_dim = c->hidden_size / c->num_heads;
    if (c->pos_encodings != HRMT_POS_ROPE && c->pos_encodings != HRMT_POS_LEARNED)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "model config: pos_encodings %d is neither rope nor learned",
                         (int)c->pos_encodings);
    if (c->pos_encodings == HRMT_POS_ROPE && head_dim % 2 != 0)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "model config: rope needs an even head_dim (hidden_size/num_heads = %d)",
                         head_dim);
    if (!isfinite(c->expansion) || !(c->expansion > 0.0) || c->expansion > 1024.0)
        return bad(ctx, "expansion", "must be a finite number in (0, 1024]", c->expansion);
    if (hrmt_model_inter_size(c) <= 0)
        return bad(ctx, "expansion", "gives an empty SwiGLU width", c->expansion);
    if (c->puzzle_emb_ndim > 0 && c->num_puzzle_identifiers < 1)
        return hrmt_fail(
            ctx, HRMT_ERR_CONFIG,
            "model config: num_puzzle_identifiers must be >= 1 when puzzle_emb_ndim > 0");
    if (c->seq_len + hrmt_model_config_puzzle_len(c) > CAP_SEQ)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: seq_len + puzzle prefix exceeds %d",
                         CAP_SEQ);
    if (!isfinite(c->rope_theta) || !(c->rope_theta > 0.0))
        return bad(ctx, "rope_theta", "must be finite and > 0", c->rope_theta);
    if (!isfinite(c->rms_norm_eps) || !(c->rms_norm_eps > 0.0) || c->rms_norm_eps > 1.0)
        return bad(ctx, "rms_norm_eps", "must be in (0, 1]", c->rms_norm_eps);
    if (c->forward_dtype != HRMT_BF16 && c->forward_dtype != HRMT_F32)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "model config: forward_dtype must be bfloat16 or float32");
    return HRMT_OK;
}

/* ---- JSON --------------------------------------------------------------- */

static hrmt_status get_int(hrmt_context *ctx, const cJSON *o, const char *key, int required,
                           int *dst) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it) {
        if (required) return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: missing key '%s'", key);
        return HRMT_OK;
    }
    double d = it->valuedouble;
    if (!cJSON_IsNumber(it) || d != floor(d) || d < -2147483648.0 || d > 2147483647.0)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: '%s' must be an integer", key);
    *dst = (int)d;
    return HRMT_OK;
}

static hrmt_status get_num(hrmt_context *ctx, const cJSON *o, const char *key, int required,
                           double *dst) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it) {
        if (required) return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: missing key '%s'", key);
        return HRMT_OK;
    }
    if (!cJSON_IsNumber(it))
        return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: '%s' must be a number", key);
    *dst = it->valuedouble;
    return HRMT_OK;
}

static hrmt_status get_str(hrmt_context *ctx, const cJSON *o, const char *key, const char **dst) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!it) return HRMT_OK;
    if (!cJSON_IsString(it))
        return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: '%s' must be a string", key);
    *dst = it->valuestring;
    return HRMT_OK;
}

hrmt_status hrmt_model_config_from_json_text(hrmt_context *ctx, const char *text, size_t len,
                                             const char *what, hrmt_model_config *out) {
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) return hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: %s is not valid JSON", what);
    hrmt_status s = HRMT_OK;
    const cJSON *o = root;
    if (!cJSON_IsObject(root)) {
        s = hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: %s is not a JSON object", what);
        goto out;
    }
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "arch");
    if (arch && !cJSON_IsObject(arch)) {
        s = hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: 'arch' in %s is not an object", what);
        goto out;
    }
    if (arch) o = arch;
    /* cJSON keeps duplicate keys and would silently use the first one. */
    for (const cJSON *a = o->child; a; a = a->next) {
        for (const cJSON *b = a->next; b; b = b->next) {
            if (a->string && b->string && strcmp(a->string, b->string) == 0) {
                s = hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: key '%s' appears twice in %s",
                              a->string, what);
                goto out;
            }
        }
    }
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
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if ((s = get_int(ctx, o, ints[i].key, ints[i].required, ints[i].dst)) != HRMT_OK) goto out;
    if ((s = get_num(ctx, o, "expansion", 1, &c.expansion)) != HRMT_OK ||
        (s = get_num(ctx, o, "rope_theta", 0, &c.rope_theta)) != HRMT_OK ||
        (s = get_num(ctx, o, "rms_norm_eps", 0, &c.rms_norm_eps)) != HRMT_OK)
        goto out;
    const char *pos = NULL, *fdt = NULL;
    if ((s = get_str(ctx, o, "pos_encodings", &pos)) != HRMT_OK ||
        (s = get_str(ctx, o, "forward_dtype", &fdt)) != HRMT_OK)
        goto out;
    if (!pos) {
        s = hrmt_fail(ctx, HRMT_ERR_CONFIG, "model config: missing key 'pos_encodings'");
        goto out;
    }
    if (strcmp(pos, "rope") == 0) {
        c.pos_encodings = HRMT_POS_ROPE;
    } else if (strcmp(pos, "learned") == 0) {
        c.pos_encodings = HRMT_POS_LEARNED;
    } else {
        s = hrmt_fail(ctx, HRMT_ERR_CONFIG,
                      "model config: pos_encodings '%s' is neither 'rope' nor 'learned'", pos);
        goto out;
    }
    if (fdt) {
        if (!strcmp(fdt, "bfloat16") || !strcmp(fdt, "bf16")) {
            c.forward_dtype = HRMT_BF16;
        } else if (!strcmp(fdt, "float32") || !strcmp(fdt, "f32")) {
            c.forward_dtype = HRMT_F32;
        } else {
            s = hrmt_fail(ctx, HRMT_ERR_CONFIG,
                          "model config: forward_dtype '%s' is not bfloat16 or float32", fdt);
            goto out;
        }
    }
    if ((s = hrmt_model_config_validate(ctx, &c)) != HRMT_OK) goto out;
    *out = c;
out:
    cJSON_Delete(root);
    return s;
}

hrmt_status hrmt_model_config_load_json(hrmt_context *ctx, const char *path,
                                        hrmt_model_config *out) {
    if (!path || !out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "model config: NULL argument");
    const char *why;
    int opened;
    int fd = hrmt_open_regular(path, NULL, &why, &opened);
    if (fd < 0)
        return hrmt_fail(ctx, HRMT_ERR_IO,
                         opened ? "config '%s': %s" : "cannot open config '%s': %s", path, why);
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        int e = errno;
        close(fd);
        return hrmt_fail(ctx, HRMT_ERR_IO, "cannot open config '%s': %s", path, strerror(e));
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    hrmt_status s = HRMT_OK;
    for (;;) {
        if (len == cap) {
            if (cap >= ((size_t)16 << 20)) {
                s = hrmt_fail(ctx, HRMT_ERR_CONFIG, "config '%s' is larger than 16 MiB", path);
                break;
            }
            cap = cap ? 2 * cap : 4096;
            char *nb = realloc(buf, cap);
            if (!nb) {
                s = hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "reading config '%s'", path);
                break;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, fp);
        len += got;
        if (got == 0) {
            if (ferror(fp)) s = hrmt_fail(ctx, HRMT_ERR_IO, "reading config '%s' failed", path);
            break;
        }
    }
    fclose(fp);
    if (s == HRMT_OK) {
        char what[64 + 256];
        snprintf(what, sizeof what, "'%.256s'", path);
        s = hrmt_model_config_from_json_text(ctx, buf ? buf : "", len, what, out);
    }
    free(buf);
    return s;
}
