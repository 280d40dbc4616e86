/* Strict value parsers for the CLI (see args.h). */
#define _POSIX_C_SOURCE 200809L /* setenv (cli_backend_pin) */
#include "cli/args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_escape.h"

int cli_arg_error(char *err, size_t errlen, const char *flag, const char *fmt, ...) {
    if (err && errlen) {
        int k = snprintf(err, errlen, "%s: ", flag);
        if (k >= 0 && (size_t)k < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

int cli_parse_path(const char *flag, const char *text, const char **out, char *err, size_t errlen) {
    if (!*text) return cli_arg_error(err, errlen, flag, "empty file name");
    *out = text;
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Parses [-]digits exactly, into a long long; 1 ok, 0 not an integer, -1 overflow. */
static int parse_ll(const char *s, size_t len, long long *out) {
    size_t i = 0;
    int neg = 0;
    if (len > 0 && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i == len) return 0;
    unsigned long long v = 0;
    int overflow = 0;
    for (; i < len; i++) {
        if (!is_digit(s[i])) return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            overflow = 1;
        else
            v = v * 10 + d;
    }
    if (overflow || v > (unsigned long long)LLONG_MAX) return -1;
    *out = neg ? -(long long)v : (long long)v;
    return 1;
}

static int int_in_range(const char *flag, const char *item, size_t len, long lo, long hi, int *out,
                        char *err, size_t errlen) {
    long long v = 0;
    int r = parse_ll(item, len, &v);
    char e[HRMT_ESCAPED_MAX];
    hrmt_text_escape(e, sizeof e, item, len); /* the value as written, printable */
    if (r == 0) return cli_arg_error(err, errlen, flag, "'%s' is not an integer", e);
    int below = r < 0 ? item[0] == '-' : v < lo;
    int above = r < 0 ? item[0] != '-' : v > hi;
    if (below && lo == 1)
        return cli_arg_error(err, errlen, flag, "must be a positive integer, got %s", e);
    if (below) return cli_arg_error(err, errlen, flag, "%s is below the minimum %ld", e, lo);
    if (above) return cli_arg_error(err, errlen, flag, "%s is out of range (maximum %ld)", e, hi);
    *out = (int)v;
    return 0;
}

int cli_parse_int(const char *flag, const char *text, long lo, long hi, int *out, char *err,
                  size_t errlen) {
    if (!text || !*text) return cli_arg_error(err, errlen, flag, "missing value");
    int v = 0;
    if (int_in_range(flag, text, strlen(text), lo, hi, &v, err, errlen)) return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *flag, const char *text, double lo_exclusive, double hi,
                     double *out, char *err, size_t errlen) {
    if (!text || !*text) return cli_arg_error(err, errlen, flag, "missing value");
    char e[HRMT_ESCAPED_MAX];
    hrmt_text_escape_str(e, sizeof e, text);
    /* strtod alone would accept leading spaces, hex floats, "inf" and "nan". */
    for (const char *p = text; *p; p++)
        if (!is_digit(*p) && !strchr(".eE+-", *p))
            return cli_arg_error(err, errlen, flag, "'%s' is not a number", e);
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end) return cli_arg_error(err, errlen, flag, "'%s' is not a number", e);
    if (errno == ERANGE || !isfinite(v))
        return cli_arg_error(err, errlen, flag, "'%s' is out of range", e);
    if (!(v > lo_exclusive))
        return cli_arg_error(err, errlen, flag, "must be greater than %g, got %s", lo_exclusive, e);
    if (v > hi) return cli_arg_error(err, errlen, flag, "%s is above the maximum %g", e, hi);
    *out = v;
    return 0;
}

int cli_parse_bytes(const char *flag, const char *text, size_t lo, size_t hi, size_t *out,
                    char *err, size_t errlen) {
    if (!text || !*text) return cli_arg_error(err, errlen, flag, "missing value");
    char e[HRMT_ESCAPED_MAX];
    hrmt_text_escape_str(e, sizeof e, text);
    size_t nd = 0;
    while (is_digit(text[nd])) nd++;
    if (text[0] == '-')
        return cli_arg_error(err, errlen, flag, "must be a positive size, got %s", e);
    if (nd == 0)
        return cli_arg_error(err, errlen, flag, "'%s' is not a size (examples: 4096, 64K, 1G)", e);
    const char *suf = text + nd;
    unsigned shift = 0;
    if (*suf) {
        char c = suf[0];
        if (c == 'k' || c == 'K')
            shift = 10;
        else if (c == 'm' || c == 'M')
            shift = 20;
        else if (c == 'g' || c == 'G')
            shift = 30;
        const char *rest = suf + 1;
        int ok = shift && (!*rest || !strcmp(rest, "iB") || !strcmp(rest, "ib") ||
                           !strcmp(rest, "IB") || !strcmp(rest, "B") || !strcmp(rest, "b"));
        if (!ok)
            return cli_arg_error(err, errlen, flag, "'%s' is not a size (examples: 4096, 64K, 1G)",
                                 e);
    }
    long long v = 0;
    if (parse_ll(text, nd, &v) < 0 || (unsigned long long)v > (SIZE_MAX >> shift))
        return cli_arg_error(err, errlen, flag, "%s is out of range", e);
    size_t bytes = (size_t)v << shift;
    if (bytes == 0 || bytes < lo)
        return cli_arg_error(err, errlen, flag, "%s is below the minimum of %zu bytes", e, lo);
    if (bytes > hi)
        return cli_arg_error(err, errlen, flag, "%s is above the maximum of %zu bytes", e, hi);
    *out = bytes;
    return 0;
}

int cli_parse_backend(const char *flag, const char *text, hrmt_backend_kind *out, char *err,
                      size_t errlen) {
    static const char *const names[] = {"cpu", "cuda"};
    int v = 0;
    if (cli_parse_choice(flag, text, names, 2, &v, err, errlen)) return -1;
    *out = v ? HRMT_BACKEND_CUDA : HRMT_BACKEND_CPU;
    return 0;
}

int cli_backend_default(hrmt_backend_kind *out, char *err, size_t errlen) {
    const char *v = getenv("HRMT_BACKEND");
    *out = HRMT_BACKEND_CPU;
    if (!v || !*v) return 0;
    return cli_parse_backend("HRMT_BACKEND", v, out, err, errlen);
}

void cli_backend_pin(hrmt_backend_kind kind) {
    /* Failure (no memory) leaves the old value: at worst what HRMT_BACKEND
     * already said. */
    (void)setenv("HRMT_BACKEND", kind == HRMT_BACKEND_CUDA ? "cuda" : "cpu", 1);
}

int cli_parse_int_list(const char *flag, const char *text, long lo, long hi, int *out, size_t cap,
                       size_t *n, char *err, size_t errlen) {
    if (!text || !*text) return cli_arg_error(err, errlen, flag, "missing value");
    char e[HRMT_ESCAPED_MAX];
    hrmt_text_escape_str(e, sizeof e, text);
    size_t count = 0;
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) return cli_arg_error(err, errlen, flag, "empty item in list '%s'", e);
        if (count == cap)
            return cli_arg_error(err, errlen, flag, "more than %zu items in '%s'", cap, e);
        int v = 0;
        if (int_in_range(flag, p, len, lo, hi, &v, err, errlen)) return -1;
        for (size_t i = 0; i < count; i++)
            if (out[i] == v)
                return cli_arg_error(err, errlen, flag, "%d is listed twice in '%s'", v, e);
        out[count++] = v;
        if (!comma) break;
        p = comma + 1;
    }
    *n = count;
    return 0;
}

int cli_parse_choice(const char *flag, const char *text, const char *const *names, size_t n,
                     int *out, char *err, size_t errlen) {
    if (!text) text = "";
    for (size_t i = 0; i < n; i++)
        if (!strcmp(text, names[i])) {
            *out = (int)i;
            return 0;
        }
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof list; i++) {
        int k = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
        if (k < 0) break;
        used += (size_t)k;
    }
    char e[HRMT_ESCAPED_MAX];
    return cli_arg_error(err, errlen, flag, "unknown value '%s' (valid: %s)",
                         hrmt_text_escape_str(e, sizeof e, text), list);
}
