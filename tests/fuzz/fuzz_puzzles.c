/* Fuzz target: the Sudoku puzzle reader of `hrmt run --puzzles` (81-token
 * model, --max-line-bytes 100), checked against an independent reading of
 * the documented format: one puzzle per line, exactly 81 of '.', '0',
 * '1'..'9'; blank lines and '#' comments skipped, whatever their length;
 * any other line longer than the limit, or holding a NUL, refused. What the reader does with
 * surrounding whitespace is left open (it may trim or refuse it), nothing else is. */
#include "fuzz_common.h"
#include "fuzz_run_input.h"

#define SEQ 81

static int puzzle_char(uint8_t c) { return c == '.' || c == '0' || (c >= '1' && c <= '9'); }

/* Classifies one line; for FUZZ_LINE_SAMPLE and FUZZ_LINE_EITHER a puzzle
 * that is read must equal `row`. */
static fuzz_line_kind classify(const uint8_t *p, size_t n, int32_t *row) {
    size_t a, b;
    fuzz_line_kind frame = fuzz_line_frame(p, n, &a, &b);
    if (frame != FUZZ_LINE_BODY) return frame;
    int ok = b - a == SEQ;
    for (size_t i = a; ok && i < b; i++) ok = puzzle_char(p[i]);
    if (!ok) return FUZZ_LINE_BAD;
    for (size_t i = 0; i < SEQ; i++) {
        uint8_t c = p[a + i];
        row[i] = c == '.' || c == '0' ? 1 : (int32_t)(c - '1' + 2);
    }
    /* Strictly: nothing around the puzzle but a CR of a CRLF file. */
    int strict = a == 0 && (b == n || (b + 1 == n && p[b] == '\r'));
    return strict ? FUZZ_LINE_SAMPLE : FUZZ_LINE_EITHER;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_check_run_input("puzzles", "puzzle", CLI_RUN_PUZZLES, SEQ, 0, classify, data, size);
    return 0;
}
