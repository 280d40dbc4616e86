/* Fuzz target: the token reader of `hrmt run --tokens` (a 30-token model
 * with vocabulary 6, the golden small-learned case, --max-line-bytes 100),
 * checked against an independent reading of the documented format: 30
 * integers in [0, 6) per line separated by spaces, tabs or commas; blank
 * lines and '#' comments skipped, whatever their length; any other line
 * longer than the limit, or holding a NUL, refused. Leniency the reader may or may not have (a
 * sign, form feeds before a number, whitespace around the line) is left open; every other line must
 * be read exactly or refused. */
#include "fuzz_common.h"
#include "fuzz_run_input.h"

#define SEQ 30
#define VOCAB 6

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

static fuzz_line_kind classify(const uint8_t *p, size_t n, int32_t *row) {
    size_t a, b;
    fuzz_line_kind frame = fuzz_line_frame(p, n, &a, &b);
    if (frame != FUZZ_LINE_BODY) return frame;
    /* Leading spaces and tabs are separators; other leading whitespace and
     * any trailing whitespace but a CRLF's CR are leniency. */
    size_t s = 0;
    while (s < n && (p[s] == ' ' || p[s] == '\t')) s++;
    int strict = s == a && (b == n || (b + 1 == n && p[b] == '\r'));
    if (!parse_tokens(p, a, b, row, &strict)) return FUZZ_LINE_BAD;
    return strict ? FUZZ_LINE_SAMPLE : FUZZ_LINE_EITHER;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_check_run_input("tokens", "token", CLI_RUN_TOKENS, SEQ, VOCAB, classify, data, size);
    return 0;
}
