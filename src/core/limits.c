/* See limits.h; the defaults and ceilings are documented in docs/LIMITS.md. */
#include "core/limits.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"

/* Defaults (docs/LIMITS.md), named once for the table and the NULL-context copy. */
#define DEF_HIDDEN_SIZE 8192
#define DEF_NUM_HEADS 256
#define DEF_LAYERS 64
#define DEF_CYCLES 64
#define DEF_HALT_MAX_STEPS 1024
#define DEF_SEQ_LEN 4096
#define DEF_VOCAB_SIZE (1 << 20)
#define DEF_PUZZLE_IDS (1 << 24)
#define DEF_PARAMS ((int64_t)1 << 30)
#define DEF_BATCH_TOKENS ((int64_t)1 << 21)
#define DEF_THREADS 4096
#define DEF_HEADER_BYTES 100000000
#define DEF_TENSORS 16384

#define LIMIT(id, f, def, ceil) \
    [HRMT_LIMIT_##id] = {offsetof(hrmt_limits, f), #f, "HRMT_LIMIT_" #id, def, ceil}

/* Each limit: its field, environment variable, default and ceiling. The
 * ceilings keep every product the library forms from them (rows x width,
 * T x T attention scratch per thread, batch x T) inside 64-bit sizes. The
 * header's default and ceiling are the reference implementation's 100 MB (a
 * longer header is not a safetensors file); a server may lower it, since
 * cJSON needs up to ~32 bytes per header byte. */
static const struct {
    size_t offset;
    const char *field, *env;
    int64_t def, ceiling;
} k_limits[HRMT_LIMIT_COUNT] = {
    LIMIT(HIDDEN_SIZE, hidden_size, DEF_HIDDEN_SIZE, 65536),
    LIMIT(NUM_HEADS, num_heads, DEF_NUM_HEADS, 65536),
    LIMIT(LAYERS, layers, DEF_LAYERS, 4096),
    LIMIT(CYCLES, cycles, DEF_CYCLES, 4096),
    LIMIT(HALT_MAX_STEPS, halt_max_steps, DEF_HALT_MAX_STEPS, 1 << 20),
    LIMIT(SEQ_LEN, seq_len, DEF_SEQ_LEN, 1 << 20),
    LIMIT(VOCAB_SIZE, vocab_size, DEF_VOCAB_SIZE, 1 << 30),
    LIMIT(PUZZLE_IDS, puzzle_ids, DEF_PUZZLE_IDS, 1 << 30),
    LIMIT(PARAMS, params, DEF_PARAMS, (int64_t)1 << 40),
    LIMIT(BATCH_TOKENS, batch_tokens, DEF_BATCH_TOKENS, (int64_t)1 << 40),
    LIMIT(THREADS, threads, DEF_THREADS, 65536),
    LIMIT(HEADER_BYTES, header_bytes, DEF_HEADER_BYTES, 100000000),
    LIMIT(TENSORS, tensors, DEF_TENSORS, 1 << 24),
};

static int64_t *field_of(hrmt_limits *l, hrmt_limit_id id) {
    return (int64_t *)(void *)((char *)l + k_limits[id].offset);
}

int64_t hrmt_limit_value(const hrmt_limits *l, hrmt_limit_id id) {
    return *(const int64_t *)(const void *)((const char *)l + k_limits[id].offset);
}

int64_t hrmt_limit_ceiling(hrmt_limit_id id) { return k_limits[id].ceiling; }

hrmt_limits hrmt_limits_default(void) {
    hrmt_limits l;
    memset(&l, 0, sizeof l);
    for (int i = 0; i < HRMT_LIMIT_COUNT; i++) *field_of(&l, (hrmt_limit_id)i) = k_limits[i].def;
    return l;
}

const hrmt_limits *hrmt_limits_of(const hrmt_context *ctx) {
    /* A constant, not a global that changes: the defaults for ctx == NULL. */
    static const hrmt_limits k_default = {
        DEF_HIDDEN_SIZE, DEF_NUM_HEADS,    DEF_LAYERS,     DEF_CYCLES, DEF_HALT_MAX_STEPS,
        DEF_SEQ_LEN,     DEF_VOCAB_SIZE,   DEF_PUZZLE_IDS, DEF_PARAMS, DEF_BATCH_TOKENS,
        DEF_THREADS,     DEF_HEADER_BYTES, DEF_TENSORS};
    return ctx ? &ctx->limits : &k_default;
}

hrmt_status hrmt_limits_check(const hrmt_limits *l, char *buf, size_t len) {
    if (!l) {
        if (buf && len) snprintf(buf, len, "limits: NULL");
        return HRMT_ERR_INVALID_ARG;
    }
    for (int i = 0; i < HRMT_LIMIT_COUNT; i++) {
        int64_t v = hrmt_limit_value(l, (hrmt_limit_id)i);
        if (v < 1 || v > k_limits[i].ceiling) {
            if (buf && len)
                snprintf(buf, len, "limits: %s = %" PRId64 " is outside 1..%" PRId64,
                         k_limits[i].field, v, k_limits[i].ceiling);
            return HRMT_ERR_INVALID_ARG;
        }
    }
    return HRMT_OK;
}

hrmt_status hrmt_limits_from_env(hrmt_limits *out, char *buf, size_t len) {
    *out = hrmt_limits_default();
    for (int i = 0; i < HRMT_LIMIT_COUNT; i++) {
        const char *v = getenv(k_limits[i].env);
        if (!v || !*v) continue;
        char *end = NULL;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || *end || v[0] == '-' || v[0] == '+' || x < 1 || x > k_limits[i].ceiling) {
            if (buf && len)
                snprintf(buf, len, "%s='%.40s' is not an integer in 1..%" PRId64, k_limits[i].env,
                         v, k_limits[i].ceiling);
            return HRMT_ERR_INVALID_ARG;
        }
        *field_of(out, (hrmt_limit_id)i) = (int64_t)x;
    }
    return HRMT_OK;
}

void hrmt_limit_message(char *buf, size_t len, const hrmt_limits *l, hrmt_limit_id id,
                        const char *what, int64_t value) {
    int64_t lim = hrmt_limit_value(l, id), ceil = k_limits[id].ceiling;
    if (value > ceil)
        snprintf(buf, len,
                 "%s = %" PRId64 " exceeds the limit of %" PRId64
                 " (hrmt_limits.%s) and its "
                 "ceiling %" PRId64 ", which nothing raises; use a smaller value",
                 what, value, lim, k_limits[id].field, ceil);
    else
        snprintf(buf, len,
                 "%s = %" PRId64 " exceeds the limit of %" PRId64
                 " (hrmt_limits.%s); use a "
                 "smaller value or raise the limit with %s=N (at most %" PRId64 ")",
                 what, value, lim, k_limits[id].field, k_limits[id].env, ceil);
}

hrmt_status hrmt_limit_fail(hrmt_context *ctx, hrmt_status s, hrmt_limit_id id, const char *what,
                            int64_t value) {
    if (ctx) hrmt_limit_message(ctx->err, sizeof ctx->err, &ctx->limits, id, what, value);
    return s;
}
