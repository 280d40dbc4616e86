/* Input files of `hrmt run`: Sudoku puzzle lines and raw token lines. */
#ifndef HRMT_CLI_RUN_INPUT_H
#define HRMT_CLI_RUN_INPUT_H

#include <stddef.h>
#include <stdint.h>

#define CLI_RUN_MAX_SAMPLES 4096
/* Longest line read by default (a valid token line of 65536 ten-digit ids
 * fits), and the most --max-line-bytes may ask for. Memory for a line is
 * bounded by this, whatever the file holds. */
#define CLI_RUN_MAX_LINE ((size_t)1 << 20)
#define CLI_RUN_MAX_LINE_LIMIT ((size_t)1 << 30)

typedef struct cli_run_batch {
    int32_t *tokens; /* [n, seq_len] */
    int n, seq_len;
    int *line; /* source line of each sample (1-based) */
} cli_run_batch;

typedef enum cli_run_input_kind { CLI_RUN_PUZZLES, CLI_RUN_TOKENS } cli_run_input_kind;

/* Reads a puzzle or token file (formats below). Lines whose first non-blank
 * byte is '#' (comments, whatever else they hold, however long) and blank
 * lines are skipped. Every other line must be text: a NUL byte is an error,
 * and so is a line longer than max_line bytes (0: CLI_RUN_MAX_LINE); no more
 * than max_line bytes of a line are ever held. Returns 0, or -1 with
 * "FILE:LINE: reason" in err (FILE and any quoted input bytes escaped by
 * hrmt_text_escape). vocab is ignored for puzzles. */
int cli_run_read(const char *path, cli_run_input_kind kind, int seq_len, int vocab, size_t max_line,
                 cli_run_batch *out, char *err, size_t errlen);

/* Puzzles: one per line, exactly seq_len characters of '.' or '0' (blank,
 * token 1) and '1'..'9' (tokens 2..10), surrounding blanks ignored. */
int cli_run_read_puzzles(const char *path, int seq_len, cli_run_batch *out, char *err,
                         size_t errlen);

/* Tokens: one sample per line, seq_len integers in [0, vocab) separated by
 * spaces, tabs or commas. */
int cli_run_read_tokens(const char *path, int seq_len, int vocab, cli_run_batch *out, char *err,
                        size_t errlen);

void cli_run_batch_free(cli_run_batch *b);

/* Puzzle text of a token row ('.' for tokens below 2, digits for 2..10, '?'
 * beyond); `out` holds seq_len + 1 bytes. */
void cli_run_tokens_to_text(const int32_t *tokens, int seq_len, char *out);

#endif
