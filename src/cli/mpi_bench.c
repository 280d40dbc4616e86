/* hrmt-mpi bench: every rank's figures on rank 0 (the bench_report hook). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_opts.h"
#include "cli/bench_run.h"
#include "cli/mpi_bench.h"
#include "cli/table.h"

/* Per rank: threads, then tokens/s of each row. */
static double *pack(const cli_bench_row *rows, size_t n, hrmt_context *ctx) {
    double *v = malloc((n + 1) * sizeof *v);
    if (!v) return NULL;
    v[0] = hrmt_context_threads(ctx);
    for (size_t i = 0; i < n; i++) v[i + 1] = rows[i].tokens_per_s;
    return v;
}

static void row_label(const cli_bench_row *r, char *buf, size_t len) {
    snprintf(buf, len, "%s b=%d s=%d", cli_bench_mode_name(r->mode), r->batch_size, r->seq_len);
}

/* Sum, spread and puzzles/s per row; then every rank's tokens/s. */
static int print_report(const mpi_ranks *m, const cli_bench_row *rows, size_t n, const double *all,
                        int steps, FILE *f) {
    const size_t w = n + 1;
    static const char *const h1[] = {"mode",     "batch",     "seq",      "tokens/s", "puzzles/s",
                                     "rank min", "rank mean", "rank max", "spread"};
    static const cli_align a1[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT};
    cli_table *t = cli_table_create(9, h1, a1);
    if (!t) return -1;
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) {
        double sum = 0, lo = all[i + 1], hi = all[i + 1];
        for (int k = 0; k < m->size; k++) {
            double v = all[(size_t)k * w + i + 1];
            sum += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        double mean = sum / m->size;
        char c[9][32];
        snprintf(c[0], sizeof c[0], "%s", cli_bench_mode_name(rows[i].mode));
        snprintf(c[1], sizeof c[1], "%d", rows[i].batch_size);
        snprintf(c[2], sizeof c[2], "%d", rows[i].seq_len);
        snprintf(c[3], sizeof c[3], "%.0f", sum);
        snprintf(c[4], sizeof c[4], "%.2f", sum / rows[i].seq_len / steps);
        snprintf(c[5], sizeof c[5], "%.0f", lo);
        snprintf(c[6], sizeof c[6], "%.0f", mean);
        snprintf(c[7], sizeof c[7], "%.0f", hi);
        snprintf(c[8], sizeof c[8], "%.1f%%", mean > 0 ? 100.0 * (hi - lo) / mean : 0.0);
        const char *cells[9] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]};
        bad = cli_table_add_row(t, cells) != 0;
    }
    if (!bad) cli_table_print(t, f);
    cli_table_destroy(t);
    if (bad) return -1;

    /* Per rank: rank, host, threads, then one tokens/s column per row. */
    size_t cols = 3 + n;
    char **head = calloc(cols, sizeof *head);
    cli_align *al = calloc(cols, sizeof *al);
    char(*cell)[64] = calloc(cols, sizeof *cell);
    const char **cells = calloc(cols, sizeof *cells);
    bad = !head || !al || !cell || !cells;
    for (size_t j = 0; !bad && j < cols; j++) {
        head[j] = cell[j];
        cells[j] = cell[j];
        al[j] = j == 1 ? CLI_ALIGN_LEFT : CLI_ALIGN_RIGHT;
        if (j >= 3) row_label(&rows[j - 3], cell[j], sizeof cell[j]);
    }
    if (!bad) {
        snprintf(cell[0], sizeof cell[0], "rank");
        snprintf(cell[1], sizeof cell[1], "host");
        snprintf(cell[2], sizeof cell[2], "threads");
        t = cli_table_create(cols, (const char *const *)head, al);
        bad = !t;
    }
    for (int k = 0; !bad && k < m->size; k++) {
        const double *v = all + (size_t)k * w;
        snprintf(cell[0], sizeof cell[0], "%d", k);
        snprintf(cell[1], sizeof cell[1], "%s", mpi_ranks_host(m, k));
        snprintf(cell[2], sizeof cell[2], "%.0f", v[0]);
        for (size_t i = 0; i < n; i++) snprintf(cell[3 + i], sizeof cell[3 + i], "%.0f", v[i + 1]);
        bad = cli_table_add_row(t, cells) != 0;
    }
    if (!bad) {
        fprintf(f, "\nPer rank: tokens/s\n");
        cli_table_print(t, f);
    }
    if (t) cli_table_destroy(t);
    free(head);
    free(al);
    free(cell);
    free(cells);
    return bad ? -1 : 0;
}

int mpi_bench_report(void *u, const struct cli_bench_row *rows, size_t n,
                     const hrmt_model_config *cfg, hrmt_context *ctx) {
    mpi_ranks *m = u;
    /* The rows are the same on every rank unless the ranks were given different options. */
    long mine = (long)n, lo = 0, hi = 0;
    MPI_Allreduce(&mine, &lo, 1, MPI_LONG, MPI_MIN, m->comm);
    MPI_Allreduce(&mine, &hi, 1, MPI_LONG, MPI_MAX, m->comm);
    if (lo != hi) {
        if (m->rank == 0)
            fprintf(stderr,
                    "hrmt-mpi bench: the ranks measured %ld to %ld rows: give every rank the "
                    "same options\n",
                    lo, hi);
        return mpi_ranks_agree(m, 2);
    }
    const int root = m->rank == 0; /* a local: the analyzer cannot see MPI leave m alone */
    double *v = pack(rows, n, ctx);
    double *all = root ? malloc((size_t)m->size * (n + 1) * sizeof *all) : NULL;
    int bad = !v || (root && !all);
    if (bad) fprintf(stderr, "hrmt-mpi bench: out of memory gathering the figures\n");
    if (mpi_ranks_agree(m, bad) || bad) { /* agreed >= bad: `|| bad` only informs the analyzer */
        free(v);
        free(all);
        return 1;
    }
    MPI_Gather(v, (int)(n + 1), MPI_DOUBLE, all, (int)(n + 1), MPI_DOUBLE, 0, m->comm);
    int rc = 0;
    if (root && all) {
        int steps = cfg->halt_max_steps > 0 ? cfg->halt_max_steps : 1;
        printf(
            "\nAcross %d ranks (the tables above are rank 0's): every row was timed on all "
            "ranks at once;\ntokens/s is their sum, puzzles/s = tokens/s / seq / %d ACT "
            "steps (halt_max_steps), spread = (max - min) / mean\n",
            m->size, steps);
        rc = print_report(m, rows, n, all, steps, stdout) != 0;
        if (rc) fprintf(stderr, "hrmt-mpi bench: out of memory printing the report\n");
    }
    free(v);
    free(all);
    return mpi_ranks_agree(m, rc);
}
