/* Hooks through which `hrmt run` and `hrmt bench` run as one of several
 * processes (ranks). hrmt-mpi (src/cli/mpi_main.c) fills them with MPI calls;
 * this header is MPI-free, so the commands and `hrmt` itself never include or
 * link MPI. NULL hooks: one process, exactly as without them.
 *
 * The contract that keeps a failure from hanging a job: every rank makes the
 * same sequence of hook calls, and after a hook call a command branches only
 * on what the hooks returned (the same on every rank), never on a rank-local
 * failure. A command that must stop on its own returns without further hook
 * calls, and the front end then stops the whole job (mpi_main.c). */
#ifndef HRMT_CLI_MPI_HOOKS_H
#define HRMT_CLI_MPI_HOOKS_H

#include <stddef.h>

#include "hrmt.h"

struct cli_bench_row;

typedef struct cli_ranks {
    void *u;        /* the front end's state, passed back to every hook */
    int rank, size; /* rank 0 reads the input and writes every output */
    /* Every rank's status (0 or an exit code) -> the largest, on every rank. */
    int (*agree)(void *u, int rc);
    /* Rank 0's `bytes` bytes at buf, copied to buf on every rank. 0 or -1. */
    int (*bcast)(void *u, void *buf, size_t bytes);
    /* Rows of an [n, row_bytes] array split by cli_ranks_shard: rank 0 holds
     * all n rows (its own already in place) and receives the others'; any
     * other rank sends its shard's rows, which start at data. 0 or -1. */
    int (*gather_rows)(void *u, void *data, size_t row_bytes, int n);
    /* The largest v over the ranks. */
    double (*max)(void *u, double v);
    /* `hrmt bench`: gathers every rank's rows; rank 0 prints the per-rank
     * figures, their sum and their spread. 0 or an exit code, agreed. */
    int (*bench_report)(void *u, const struct cli_bench_row *rows, size_t n,
                        const hrmt_model_config *cfg, hrmt_context *ctx);
} cli_ranks;

/* The samples [*begin, *end) of n that `rank` of `size` runs: contiguous, in
 * rank order, counts differing by at most one. */
static inline void cli_ranks_shard(int n, int rank, int size, int *begin, int *end) {
    *begin = (int)((long long)n * rank / size);
    *end = (int)((long long)n * (rank + 1) / size);
}

/* The commands with hooks (NULL: hrmt_cmd_run / hrmt_cmd_bench). */
int hrmt_cmd_run_ranks(int argc, char **argv, const cli_ranks *ranks);   /* cli/cmd_run.c */
int hrmt_cmd_bench_ranks(int argc, char **argv, const cli_ranks *ranks); /* cli/cmd_bench.c */

#endif
