/* hrmt_limits internals: the table of limits (field, environment variable,
 * default, ceiling), parsing the environment, and the one message format every
 * limit violation uses. */
#ifndef HRMT_CORE_LIMITS_H
#define HRMT_CORE_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

typedef enum hrmt_limit_id {
    HRMT_LIMIT_HIDDEN_SIZE,
    HRMT_LIMIT_NUM_HEADS,
    HRMT_LIMIT_LAYERS,
    HRMT_LIMIT_CYCLES,
    HRMT_LIMIT_HALT_MAX_STEPS,
    HRMT_LIMIT_SEQ_LEN,
    HRMT_LIMIT_VOCAB_SIZE,
    HRMT_LIMIT_PUZZLE_IDS,
    HRMT_LIMIT_PARAMS,
    HRMT_LIMIT_BATCH_TOKENS,
    HRMT_LIMIT_THREADS,
    HRMT_LIMIT_HEADER_BYTES,
    HRMT_LIMIT_TENSORS,
    HRMT_LIMIT_COUNT
} hrmt_limit_id;

/* Value of limit `id` in `l`. */
int64_t hrmt_limit_value(const hrmt_limits *l, hrmt_limit_id id);
/* Its fixed ceiling (what no setting may exceed). */
int64_t hrmt_limit_ceiling(hrmt_limit_id id);

/* The context's limits; the defaults for a NULL context. */
const hrmt_limits *hrmt_limits_of(const hrmt_context *ctx);

/* Checks every field of `l` against 1..ceiling; on failure writes a message
 * naming the field into buf (may be NULL) and returns INVALID_ARG. */
hrmt_status hrmt_limits_check(const hrmt_limits *l, char *buf, size_t len);

/* The defaults with HRMT_LIMIT_* overrides from the environment. A variable
 * that is not an integer in 1..ceiling gives INVALID_ARG and a message in buf. */
hrmt_status hrmt_limits_from_env(hrmt_limits *out, char *buf, size_t len);

/* Writes "<what> = <value> exceeds the limit of <limit> (<how to raise>)" into
 * buf; what says where the value came from ("model config 'a.json': H_cycles"). */
void hrmt_limit_message(char *buf, size_t len, const hrmt_limits *l, hrmt_limit_id id,
                        const char *what, int64_t value);

/* hrmt_limit_message into ctx's error buffer (ctx may be NULL); returns `s`. */
hrmt_status hrmt_limit_fail(hrmt_context *ctx, hrmt_status s, hrmt_limit_id id, const char *what,
                            int64_t value);

#endif
