/* hrmt-mpi bench: the bench_report hook (see mpi_hooks.h). */
#ifndef HRMT_CLI_MPI_BENCH_H
#define HRMT_CLI_MPI_BENCH_H

#include <stddef.h>

#include "cli/mpi_ranks.h"
#include "hrmt.h"

/* u: the mpi_ranks. Gathers each rank's threads and tokens/s per row; rank 0
 * prints per row the sum over ranks, puzzles/s, min/mean/max and spread, then
 * a per-rank table. 0 or an exit code, agreed. */
int mpi_bench_report(void *u, const struct cli_bench_row *rows, size_t n,
                     const hrmt_model_config *cfg, hrmt_context *ctx);

#endif
