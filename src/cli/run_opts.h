/* Options of `hrmt run` and their parser (getopt_long). */
#ifndef HRMT_CLI_RUN_OPTS_H
#define HRMT_CLI_RUN_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "hrmt.h"

typedef struct cli_run_opts {
    const char *model_path; /* NULL: the built-in random Sudoku model */
    const char *config_path;
    const char *puzzles_path; /* exactly one of puzzles / tokens */
    const char *tokens_path;
    const char *dump_path;
    int puzzle_id; /* default 0 */
    int steps;     /* 0: halt_max_steps */
    int dtype;     /* -1: the config's; else a hrmt_dtype */
    hrmt_schedule schedule;
    int threads;               /* 0: OpenMP default */
    hrmt_backend_kind backend; /* --backend (default HRMT_BACKEND, else CPU) */
    int early_halt;
    unsigned load_flags; /* --allow-nonfinite-weights: HRMT_LOAD_ALLOW_NONFINITE */
    size_t max_line;     /* --max-line-bytes; 0: CLI_RUN_MAX_LINE */
    int json, quiet, help;
} cli_run_opts;

/* Parses argv (argv[0] = "run"). 0 ok; -1 with "<flag>: reason" in err. */
int cli_run_opts_parse(int argc, char **argv, cli_run_opts *o, char *err, size_t errlen);
void cli_run_usage(FILE *f);

#endif
