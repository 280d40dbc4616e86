/* A one-line progress bar redrawn in place with '\r'. It is drawn only when
 * enabled, which cli_progress_wanted() decides for stderr: a terminal and no
 * --quiet. Pipes and log files therefore never see control characters. */
#ifndef HRMT_CLI_PROGRESS_H
#define HRMT_CLI_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

typedef struct cli_progress {
    FILE *out; /* NULL: disabled */
    size_t total, done;
    int width; /* bar cells */
    int drawn; /* something is on the line and must be cleared */
} cli_progress;

/* 1 when stderr is a terminal and quiet is 0. */
int cli_progress_wanted(int quiet);

/* out NULL disables the bar (every call is then a no-op). */
void cli_progress_init(cli_progress *p, FILE *out, size_t total);
/* Advances by `n` units and redraws with a short label (e.g. "tiered b=8 s=81"). */
void cli_progress_advance(cli_progress *p, size_t n, const char *label);
/* Clears the line so the next output starts clean. */
void cli_progress_finish(cli_progress *p);

#endif
