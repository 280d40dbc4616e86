/* Progress bar (see progress.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli/progress.h"

#include <unistd.h>

int cli_progress_wanted(int quiet) { return !quiet && isatty(STDERR_FILENO); }

void cli_progress_init(cli_progress *p, FILE *out, size_t total) {
    p->out = out;
    p->total = total ? total : 1;
    p->done = 0;
    p->width = 30;
    p->drawn = 0;
}

void cli_progress_advance(cli_progress *p, size_t n, const char *label) {
    if (!p->out) return;
    p->done = p->done + n > p->total ? p->total : p->done + n;
    int filled = (int)((double)p->width * (double)p->done / (double)p->total);
    fputc('\r', p->out);
    fputc('[', p->out);
    for (int i = 0; i < p->width; i++) fputc(i < filled ? '#' : '.', p->out);
    /* Trailing blanks wipe a longer label from the previous draw. */
    fprintf(p->out, "] %3d%% %-40.40s", (int)(100.0 * (double)p->done / (double)p->total),
            label ? label : "");
    fflush(p->out);
    p->drawn = 1;
}

void cli_progress_finish(cli_progress *p) {
    if (!p->out || !p->drawn) return;
    fprintf(p->out, "\r%*s\r", p->width + 48, "");
    fflush(p->out);
    p->drawn = 0;
}
