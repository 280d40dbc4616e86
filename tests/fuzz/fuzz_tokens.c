/* Fuzz target: the token reader of `hrmt run --tokens` (a 30-token model
 * with vocabulary 6, the golden small-learned case, --max-line-bytes 100),
 * checked against an independent reading of the documented format: 30
 * integers in [0, 6) per line separated by spaces, tabs or commas; blank
 * lines and '#' comments skipped, whatever their length; any other line
 * longer than the limit, or holding a NUL, refused. Leniency the reader may or may not have (a
 * sign, form feeds before a number, whitespace around the line) is left open; every other line must
 * be read exactly or refused. */
#include <stdio.h>
#include <string.h>

#include "cli/run_input.h"
#include "fuzz_common.h"

#define SEQ 30
#define VOCAB 6
/* --max-line-bytes: small, so that inputs of a few KB reach the limit. */
#define MAX_LINE 100

typedef enum { LINE_SKIP, LINE_SAMPLE, LINE_EITHER, LINE_BAD } line_kind;

static int sep(uint8_t c) { return c == ' ' || c == '\t' || c == ','; }
static int digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* Parses p[a..b) as the tokens of one sample into row; 1 when the line is a
 * sample, with *strict 0 when it used any leniency (sign, \v\f\r before a
 * number, as strtol skips them). */
static int parse_tokens(const uint8_t *p, size_t a, size_t b, int32_t *row, int *strict) {
    int count = 0;
    size_t i = a;
    for (;;) {
        while (i < b && sep(p[i])) i++;
        if (i == b) break;
        /* Separators are skipped, so this is \v, \f or \r; strtol then skips
         * any whitespace. */
        if (fuzz_is_space(p[i])) *strict = 0;
        while (i < b && fuzz_is_space(p[i])) i++;
        int neg = 0;
        if (i < b && (p[i] == '+' || p[i] == '-')) neg = p[i++] == '-', *strict = 0;
        if (i == b || !digit(p[i])) return 0;
        long v = 0;
        for (; i < b && digit(p[i]); i++)
            if (v < VOCAB) v = v * 10 + (p[i] - '0'); /* beyond VOCAB stays beyond */
        if (i < b && !sep(p[i])) return 0;
        if (neg && v != 0) return 0;
        if (v >= VOCAB || count == SEQ) return 0;
        row[count++] = (int32_t)v;
    }
    return count == SEQ;
}

static line_kind classify(const uint8_t *p, size_t n, int32_t *row) {
    size_t a = 0, b = n;
    while (a < b && fuzz_is_space(p[a])) a++;
    while (b > a && fuzz_is_space(p[b - 1])) b--;
    if (a == b || p[0] == '#') return LINE_SKIP;
    if (p[a] == '#') return LINE_EITHER; /* indented comment: skip or refuse */
    if (n > MAX_LINE) return LINE_BAD;   /* longer than the limit and not a comment */
    /* Leading spaces and tabs are separators; other leading whitespace and
     * any trailing whitespace but a CRLF's CR are leniency. */
    size_t s = 0;
    while (s < n && (p[s] == ' ' || p[s] == '\t')) s++;
    int strict = s == a && (b == n || (b + 1 == n && p[b] == '\r'));
    if (!parse_tokens(p, a, b, row, &strict)) return LINE_BAD;
    return strict ? LINE_SAMPLE : LINE_EITHER;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_input_path(data, size);
    cli_run_batch batch;
    char err[512];
    err[0] = '\0';
    int rc = cli_run_read(path, CLI_RUN_TOKENS, SEQ, VOCAB, MAX_LINE, &batch, err, sizeof err);

    size_t pos = 0, len = 0;
    const uint8_t *line = NULL;
    int lineno = 0, must_pass = 1, must_fail = 0, samples = 0, either = 0, row_i = 0;
    int32_t want[SEQ];
    while (fuzz_next_line(data, size, &pos, &line, &len)) {
        lineno++;
        line_kind k = classify(line, len, want);
        if (k == LINE_BAD) must_fail = 1;
        if (k == LINE_EITHER) must_pass = 0, either++;
        if (k == LINE_SAMPLE) samples++;
        if (rc != 0 || k == LINE_BAD || k == LINE_SKIP) continue;
        int used = row_i < batch.n && batch.line[row_i] == lineno;
        if (k == LINE_SAMPLE && !used) fuzz_fail("tokens", "a valid token line was dropped");
        if (used) {
            if (memcmp(batch.tokens + (size_t)row_i * SEQ, want, sizeof want) != 0)
                fuzz_fail("tokens", "tokens differ from the line's text");
            row_i++;
        }
    }
    if (samples == 0 && either == 0) must_fail = 1; /* nothing to run */
    if (must_fail || samples == 0 || samples > CLI_RUN_MAX_SAMPLES) must_pass = 0;
    if (rc == 0) {
        if (must_fail) fuzz_fail("tokens", "accepted a malformed line");
        if (row_i != batch.n) fuzz_fail("tokens", "samples from lines that hold none");
        cli_run_batch_free(&batch);
    } else {
        if (must_pass) fuzz_fail("tokens", "refused a well-formed file");
        fuzz_check_message("tokens", err, sizeof err);
        if (strncmp(err, path, strlen(path)) != 0)
            fuzz_fail("tokens", "message does not start with the file name");
    }
    return 0;
}
