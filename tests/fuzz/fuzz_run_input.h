/* The oracle shared by the harnesses of `hrmt run`'s input readers
 * (fuzz_puzzles.c, fuzz_tokens.c): each harness classifies a line by its own
 * reading of its format; the driver here runs cli_run_read on the input and
 * checks what it read, or why it refused, against those classes. */
#ifndef HRMT_FUZZ_RUN_INPUT_H
#define HRMT_FUZZ_RUN_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "cli/run_input.h"

/* --max-line-bytes: small, so that inputs of a few KB reach the limit. */
#define FUZZ_MAX_LINE 100

typedef enum {
    FUZZ_LINE_SKIP,   /* blank line or comment */
    FUZZ_LINE_SAMPLE, /* must be read, exactly as the harness read it */
    FUZZ_LINE_EITHER, /* read as the harness read it, skipped, or refused: left open */
    FUZZ_LINE_BAD,    /* the file must be refused */
    FUZZ_LINE_BODY    /* fuzz_line_frame only: the format's own rules decide */
} fuzz_line_kind;

/* The rules both formats share. Trims fuzz_is_space() bytes from both ends of
 * p[0..n) into [*a, *b); SKIP for a blank line or a comment at column 0,
 * EITHER for an indented comment (skip or refuse), BAD for any other line
 * longer than FUZZ_MAX_LINE, BODY for the rest. */
fuzz_line_kind fuzz_line_frame(const uint8_t *p, size_t n, size_t *a, size_t *b);

/* A harness's reading of one line; for SAMPLE and EITHER, row receives the
 * sample's seq tokens. */
typedef fuzz_line_kind (*fuzz_line_classifier)(const uint8_t *p, size_t n, int32_t *row);

/* Runs cli_run_read(kind, seq, vocab, FUZZ_MAX_LINE) on the input and checks
 * it line by line against classify; aborts through fuzz_fail(harness, ...) on
 * any disagreement. `what` names a sample line in messages ("puzzle"). */
void fuzz_check_run_input(const char *harness, const char *what, cli_run_input_kind kind, int seq,
                          int vocab, fuzz_line_classifier classify, const uint8_t *data,
                          size_t size);

#endif
