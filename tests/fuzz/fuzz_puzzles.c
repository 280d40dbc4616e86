/* Fuzz target: the Sudoku puzzle reader of `hrmt run --puzzles` (81-token
 * model, --max-line-bytes 100), checked against an independent reading of
 * the documented format: one puzzle per line, exactly 81 of '.', '0',
 * '1'..'9'; blank lines and '#' comments skipped, whatever their length;
 * any other line longer than the limit, or holding a NUL, refused. What the reader does with
 * surrounding whitespace is left open (it may trim or refuse it), nothing else is. */
#include <stdio.h>
#include <string.h>

#include "cli/run_input.h"
#include "fuzz_common.h"

#define SEQ 81
/* --max-line-bytes: small, so that inputs of a few KB reach the limit. */
#define MAX_LINE 100

typedef enum { LINE_SKIP, LINE_PUZZLE, LINE_EITHER, LINE_BAD } line_kind;

static int puzzle_char(uint8_t c) { return c == '.' || c == '0' || (c >= '1' && c <= '9'); }

/* Classifies one line; for LINE_PUZZLE and LINE_EITHER a puzzle that is read
 * must equal `row`. */
static line_kind classify(const uint8_t *p, size_t n, int32_t *row) {
    size_t a = 0, b = n;
    while (a < b && fuzz_is_space(p[a])) a++;
    while (b > a && fuzz_is_space(p[b - 1])) b--;
    if (a == b || p[0] == '#') return LINE_SKIP;
    if (p[a] == '#') return LINE_EITHER; /* indented comment: skip or refuse */
    if (n > MAX_LINE) return LINE_BAD;   /* longer than the limit and not a comment */
    int ok = b - a == SEQ;
    for (size_t i = a; ok && i < b; i++) ok = puzzle_char(p[i]);
    if (!ok) return LINE_BAD;
    for (size_t i = 0; i < SEQ; i++) {
        uint8_t c = p[a + i];
        row[i] = c == '.' || c == '0' ? 1 : (int32_t)(c - '1' + 2);
    }
    /* Strictly: nothing around the puzzle but a CR of a CRLF file. */
    int strict = a == 0 && (b == n || (b + 1 == n && p[b] == '\r'));
    return strict ? LINE_PUZZLE : LINE_EITHER;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_input_path(data, size);
    cli_run_batch batch;
    char err[512];
    err[0] = '\0';
    int rc = cli_run_read(path, CLI_RUN_PUZZLES, SEQ, 0, MAX_LINE, &batch, err, sizeof err);

    size_t pos = 0, len = 0;
    const uint8_t *line = NULL;
    int lineno = 0, must_pass = 1, must_fail = 0, samples = 0, either = 0, row_i = 0;
    int32_t want[SEQ];
    while (fuzz_next_line(data, size, &pos, &line, &len)) {
        lineno++;
        line_kind k = classify(line, len, want);
        if (k == LINE_BAD) must_fail = 1;
        if (k == LINE_EITHER) must_pass = 0, either++;
        if (k == LINE_PUZZLE) samples++;
        if (rc != 0 || k == LINE_BAD || k == LINE_SKIP) continue;
        /* A line the reader used must be this one, read this way. */
        int used = row_i < batch.n && batch.line[row_i] == lineno;
        if (k == LINE_PUZZLE && !used) fuzz_fail("puzzles", "a valid puzzle line was dropped");
        if (used) {
            if (memcmp(batch.tokens + (size_t)row_i * SEQ, want, sizeof want) != 0)
                fuzz_fail("puzzles", "tokens differ from the line's text");
            row_i++;
        }
    }
    if (samples == 0 && either == 0) must_fail = 1; /* nothing to run */
    if (must_fail || samples == 0 || samples > CLI_RUN_MAX_SAMPLES) must_pass = 0;
    if (rc == 0) {
        if (must_fail) fuzz_fail("puzzles", "accepted a malformed line");
        if (row_i != batch.n) fuzz_fail("puzzles", "samples from lines that hold none");
        cli_run_batch_free(&batch);
    } else {
        if (must_pass) fuzz_fail("puzzles", "refused a well-formed file");
        fuzz_check_message("puzzles", err, sizeof err);
        if (strncmp(err, path, strlen(path)) != 0)
            fuzz_fail("puzzles", "message does not start with the file name");
    }
    return 0;
}
