/* The MPI side of the rank hooks (cli/mpi_hooks.h) for hrmt-mpi.
 *
 * Every rank's stderr goes to a private temporary file; each agreement point
 * (the `agree` hook) forwards what was written since to rank 0, which prints
 * rank 0's text as it is and another rank's prefixed with its rank and host,
 * once per distinct text: a bad flag on N ranks reads as one message, a
 * missing file on one host names that host. */
#ifndef HRMT_CLI_MPI_RANKS_H
#define HRMT_CLI_MPI_RANKS_H

#include <mpi.h>
#include <stdio.h>

#include "cli/mpi_hooks.h"

#define MPI_RANKS_HOST_LEN 64 /* host names are cut to this (with the NUL) */

typedef struct mpi_ranks {
    cli_ranks hooks; /* .u points back here */
    MPI_Comm comm;
    int rank, size;
    int last_agreed;      /* what the last agree returned (0 before any) */
    FILE *err;            /* the real stderr; fd 2 now writes to cap */
    FILE *cap;            /* this rank's captured stderr (NULL: not captured) */
    long cap_done;        /* bytes of cap already forwarded */
    char *text;           /* one forward's worth of this rank's text */
    char *hosts;          /* rank 0: size names of MPI_RANKS_HOST_LEN bytes; others: their own */
    int *counts, *displs; /* size entries each, scratch of the gathers */
} mpi_ranks;

/* Fills m for comm (a collective): hooks, host names, stderr capture. 0, or
 * -1 when out of memory (a message is on stderr). */
int mpi_ranks_init(mpi_ranks *m, MPI_Comm comm);

/* The `agree` hook; the front end calls it too. */
int mpi_ranks_agree(mpi_ranks *m, int rc);

/* For a rank about to stop the job on its own: its captured text straight
 * to the real stderr, prefixed like a forwarded one. */
void mpi_ranks_flush_own(mpi_ranks *m);

/* Host name of `rank` (rank 0 knows all; another rank only its own). */
const char *mpi_ranks_host(const mpi_ranks *m, int rank);

/* Restores stderr and frees m. */
void mpi_ranks_finish(mpi_ranks *m);

#endif
