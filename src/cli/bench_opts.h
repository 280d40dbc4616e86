/* Options of `hrmt bench` and their parser (getopt_long). */
#ifndef HRMT_CLI_BENCH_OPTS_H
#define HRMT_CLI_BENCH_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "hrmt.h"

#define CLI_BENCH_MAX_LIST 32

typedef enum cli_bench_mode {
    CLI_MODE_TIERED = 0,
    CLI_MODE_BASELINE = 1,
    CLI_MODE_COMPARE = 2
} cli_bench_mode;

typedef struct cli_bench_opts {
    cli_bench_mode mode;
    int batch_sizes[CLI_BENCH_MAX_LIST];
    size_t n_batch;
    int seq_lens[CLI_BENCH_MAX_LIST];
    size_t n_seq;
    int seq_lens_given; /* --seq-lens was on the command line */
    /* Architecture overrides; 0 (0.0 for expansion, -1 for dtype) = not given. */
    int hidden_size, num_heads, H_cycles, L_cycles, H_layers, L_layers;
    double expansion;
    int dtype; /* -1 or a hrmt_dtype */
    int warmup, iterations;
    int rounds;  /* runs per schedule (--rounds); compare mode alternates the order */
    int threads; /* 0: OpenMP default */
    hrmt_backend_kind backend;
    const char *model_path, *config_path, *output_path;
    int quiet, help;
    int profile; /* --profile: print the per-part table */
} cli_bench_opts;

/* The defaults: a compare run of the built-in Sudoku-sized model that takes
 * about a minute on a 2-core machine. */
void cli_bench_opts_default(cli_bench_opts *o);

/* Parses argv (argv[0] = "bench"). Returns 0 ok, -1 with a message naming the
 * flag in err. Resets getopt's state first, so it may be called repeatedly. */
int cli_bench_opts_parse(int argc, char **argv, cli_bench_opts *o, char *err, size_t errlen);

/* Checks combinations that need the final config: hidden % heads, and that the
 * given seq-lens equal a loaded model's. `flag` names the option at fault. */
int cli_bench_check_config(const cli_bench_opts *o, const hrmt_model_config *cfg, int from_file,
                           char *err, size_t errlen);

void cli_bench_usage(FILE *f);

const char *cli_bench_mode_name(cli_bench_mode m);

#endif
