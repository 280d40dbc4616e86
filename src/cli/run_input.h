/* Input files of `hrmt run`: Sudoku puzzle lines and raw token lines. */
#ifndef HRMT_CLI_RUN_INPUT_H
#define HRMT_CLI_RUN_INPUT_H

#include <stddef.h>
#include <stdint.h>

#define CLI_RUN_MAX_SAMPLES 4096

typedef struct cli_run_batch {
    int32_t *tokens; /* [n, seq_len] */
    int n, seq_len;
    int *line; /* source line of each sample (1-based) */
} cli_run_batch;

/* Puzzles: one per line, exactly seq_len characters of '.' or '0' (blank,
 * token 1) and '1'..'9' (tokens 2..10). Blank lines and lines starting with
 * '#' are skipped. Returns 0, or -1 with "FILE:LINE: reason" in err. */
int cli_run_read_puzzles(const char *path, int seq_len, cli_run_batch *out, char *err,
                         size_t errlen);

/* Tokens: one sample per line, seq_len integers in [0, vocab) separated by
 * spaces, tabs or commas. Same skipping and error form. */
int cli_run_read_tokens(const char *path, int seq_len, int vocab, cli_run_batch *out, char *err,
                        size_t errlen);

void cli_run_batch_free(cli_run_batch *b);

/* Puzzle text of a token row ('.' for tokens below 2, digits for 2..10, '?'
 * beyond); `out` holds seq_len + 1 bytes. */
void cli_run_tokens_to_text(const int32_t *tokens, int seq_len, char *out);

#endif
