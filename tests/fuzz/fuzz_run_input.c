/* See fuzz_run_input.h. */
#include "fuzz_run_input.h"

#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"

fuzz_line_kind fuzz_line_frame(const uint8_t *p, size_t n, size_t *a, size_t *b) {
    *a = 0;
    *b = n;
    while (*a < *b && fuzz_is_space(p[*a])) (*a)++;
    while (*b > *a && fuzz_is_space(p[*b - 1])) (*b)--;
    if (*a == *b || p[0] == '#') return FUZZ_LINE_SKIP;
    if (p[*a] == '#') return FUZZ_LINE_EITHER;   /* indented comment: skip or refuse */
    if (n > FUZZ_MAX_LINE) return FUZZ_LINE_BAD; /* longer than the limit and not a comment */
    return FUZZ_LINE_BODY;
}

void fuzz_check_run_input(const char *harness, const char *what, cli_run_input_kind kind, int seq,
                          int vocab, fuzz_line_classifier classify, const uint8_t *data,
                          size_t size) {
    /* A sample's seq tokens take at least seq bytes of a line that is no
     * longer than FUZZ_MAX_LINE. */
    int32_t want[FUZZ_MAX_LINE];
    if (seq < 1 || seq > FUZZ_MAX_LINE) fuzz_fail(harness, "sequence length out of range");
    const size_t want_bytes = (size_t)seq * sizeof want[0];
    char dropped[64];
    snprintf(dropped, sizeof dropped, "a valid %s line was dropped", what);

    const char *path = fuzz_input_path(data, size);
    cli_run_batch batch;
    char err[512];
    err[0] = '\0';
    int rc = cli_run_read(path, kind, seq, vocab, FUZZ_MAX_LINE, &batch, err, sizeof err);

    size_t pos = 0, len = 0;
    const uint8_t *line = NULL;
    int lineno = 0, must_pass = 1, must_fail = 0, samples = 0, either = 0, row_i = 0;
    while (fuzz_next_line(data, size, &pos, &line, &len)) {
        lineno++;
        fuzz_line_kind k = classify(line, len, want);
        if (k == FUZZ_LINE_BAD) must_fail = 1;
        if (k == FUZZ_LINE_EITHER) must_pass = 0, either++;
        if (k == FUZZ_LINE_SAMPLE) samples++;
        if (rc != 0 || k == FUZZ_LINE_BAD || k == FUZZ_LINE_SKIP) continue;
        /* A line the reader used must be this one, read this way. */
        int used = row_i < batch.n && batch.line[row_i] == lineno;
        if (k == FUZZ_LINE_SAMPLE && !used) fuzz_fail(harness, dropped);
        if (used) {
            if (memcmp(batch.tokens + (size_t)row_i * (size_t)seq, want, want_bytes) != 0)
                fuzz_fail(harness, "tokens differ from the line's text");
            row_i++;
        }
    }
    if (samples == 0 && either == 0) must_fail = 1; /* nothing to run */
    if (must_fail || samples == 0 || samples > CLI_RUN_MAX_SAMPLES) must_pass = 0;
    if (rc == 0) {
        if (must_fail) fuzz_fail(harness, "accepted a malformed line");
        if (row_i != batch.n) fuzz_fail(harness, "samples from lines that hold none");
        cli_run_batch_free(&batch);
    } else {
        if (must_pass) fuzz_fail(harness, "refused a well-formed file");
        fuzz_check_message(harness, err, sizeof err);
        if (strncmp(err, path, strlen(path)) != 0)
            fuzz_fail(harness, "message does not start with the file name");
    }
}
