/* Options of `hrmt probe` and their parser (getopt_long). */
#ifndef HRMT_CLI_PROBE_OPTS_H
#define HRMT_CLI_PROBE_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "hrmt.h"

typedef enum cli_plot_format { CLI_PLOT_NONE = 0, CLI_PLOT_SVG, CLI_PLOT_PNG } cli_plot_format;

typedef struct cli_probe_opts {
    size_t min_bytes, max_bytes;
    int max_given;
    int quick;
    int json;
    int compare;
    int threads;
    hrmt_backend_kind backend;
    const char *plot_path;
    const char *input; /* --input: a saved --json output instead of measuring */
    cli_plot_format plot_format;
    int quiet, help;
} cli_probe_opts;

void cli_probe_opts_default(cli_probe_opts *o);
/* Parses argv (argv[0] = "probe"); -1 with a message naming the flag in err. */
int cli_probe_opts_parse(int argc, char **argv, cli_probe_opts *o, char *err, size_t errlen);
void cli_probe_usage(FILE *f);

#endif
