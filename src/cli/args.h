/* Strict parsing of command-line values: integers, decimals, byte sizes,
 * comma-separated lists and named choices. Every parser returns 0 on success
 * and -1 on failure, writing "<flag>: <reason>" into err, so each command can
 * print one message that names the offending flag. */
#ifndef HRMT_CLI_ARGS_H
#define HRMT_CLI_ARGS_H

#include <stddef.h>

#include "hrmt.h"

/* Decimal integer in [lo, hi]: optional '-', then digits only (no spaces,
 * signs '+', hex, trailing characters). */
int cli_parse_int(const char *flag, const char *text, long lo, long hi, int *out, char *err,
                  size_t errlen);

/* Finite decimal number with lo < value <= hi. */
int cli_parse_double(const char *flag, const char *text, double lo_exclusive, double hi,
                     double *out, char *err, size_t errlen);

/* Byte count in [lo, hi]: digits with an optional binary suffix K, M, G
 * (or KiB, MiB, GiB; case-insensitive). "4K" = 4096. */
int cli_parse_bytes(const char *flag, const char *text, size_t lo, size_t hi, size_t *out,
                    char *err, size_t errlen);

/* Comma-separated integers, each in [lo, hi], at most `cap` of them, no empty
 * items and no repeats. */
int cli_parse_int_list(const char *flag, const char *text, long lo, long hi, int *out, size_t cap,
                       size_t *n, char *err, size_t errlen);

/* A file name: any text but the empty one; *out = text. */
int cli_parse_path(const char *flag, const char *text, const char **out, char *err, size_t errlen);

/* One of `names` (exact match); *out is its index. The message lists them. */
int cli_parse_choice(const char *flag, const char *text, const char *const *names, size_t n,
                     int *out, char *err, size_t errlen);

/* --backend: "cpu" or "cuda" (exact); the message lists both. */
int cli_parse_backend(const char *flag, const char *text, hrmt_backend_kind *out, char *err,
                      size_t errlen);
/* A command's default backend: HRMT_BACKEND when set (parsed as above, the
 * flag named "HRMT_BACKEND" in messages), else CPU. */
int cli_backend_default(hrmt_backend_kind *out, char *err, size_t errlen);
/* Makes the library agree with the backend a command settled on: the
 * library reads HRMT_BACKEND whenever a context asks for the default CPU
 * backend, so an explicit `--backend cpu` must overwrite it. Call before
 * hrmt_context_create. */
void cli_backend_pin(hrmt_backend_kind kind);

/* Formats "<flag>: <reason>" into err (printf-style reason); returns -1. */
int cli_arg_error(char *err, size_t errlen, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
