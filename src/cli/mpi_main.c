/* hrmt-mpi: `hrmt run` and `hrmt bench` over MPI ranks (docs/MPI.md).
 *
 * A separate program rather than MPI inside `hrmt`: `hrmt` then stays one
 * binary with no MPI library to load, start or trust (the same startup, the
 * same sanitizer runs, no libmpi dependency for users without a cluster),
 * while hrmt-mpi runs the very same command code through the rank hooks of
 * cli/mpi_hooks.h. Started without mpirun it is a job of one rank.
 *
 * Failures: the commands agree on their status after every phase, so a
 * failure on one rank stops every rank at the same point with one message
 * (forwarded by cli/mpi_ranks.c) and the same exit status. A rank that stops
 * anywhere else ends the job with MPI_Abort rather than leave the others
 * waiting in a collective. */
#define _POSIX_C_SOURCE 200809L /* stpcpy */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/mpi_bench.h"
#include "cli/mpi_hooks.h"
#include "cli/mpi_node.h"
#include "cli/mpi_ranks.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: mpirun [mpirun options] hrmt-mpi <command> [options]\n"
            "commands:\n"
            "  run     `hrmt run` over the ranks: each runs a contiguous shard of the\n"
            "          input; rank 0 reads it and prints output identical to `hrmt run`\n"
            "  bench   `hrmt bench` on every rank at once; rank 0 adds every rank's\n"
            "          tokens/s, their sum, puzzles/s and the spread\n"
            "  ranks   where each rank runs: host, local rank, CPUs, OpenMP threads\n"
            "Options are those of `hrmt <command>` ('hrmt-mpi <command> --help').\n"
            "Each rank's OpenMP threads: OMP_NUM_THREADS, else the CPUs mpirun bound it\n"
            "to (shared among ranks bound to the same CPUs); with --backend cuda, rank\n"
            "i of a host uses GPU i unless HRMT_CUDA_DEVICE is set. See docs/MPI.md.\n");
}

/* `hrmt-mpi ranks`: one line per rank, printed by rank 0. */
static int cmd_ranks(mpi_ranks *m, const mpi_node *node) {
    int mine[5] = {node->local_rank, node->local_size, node->cpus, node->sharing, node->threads};
    const int root = m->rank == 0; /* a local: the analyzer cannot see MPI leave m alone */
    int *all = root ? malloc((size_t)m->size * sizeof mine) : NULL;
    int bad = root && !all;
    if (bad) fprintf(stderr, "hrmt-mpi: out of memory\n");
    if (mpi_ranks_agree(m, bad) || bad) { /* agreed >= bad: `|| bad` only informs the analyzer */
        free(all);
        return 1;
    }
    MPI_Gather(mine, 5, MPI_INT, all, 5, MPI_INT, 0, m->comm);
    if (root && all) {
        printf("%d ranks\nrank  host                  local  CPUs  sharing  threads\n", m->size);
        for (int k = 0; k < m->size; k++) {
            const int *v = all + (size_t)5 * (size_t)k;
            printf("%4d  %-20s  %2d/%-2d  %4d  %7d  %7d\n", k, mpi_ranks_host(m, k), v[0], v[1],
                   v[2], v[3], v[4]);
        }
    }
    free(all);
    return 0;
}

/* The contract of mpi_hooks.h needs the same options everywhere (the same
 * phases, steps and rows); relative paths may still name different files on
 * different hosts. 0, or 2 (agreed) with the differing ranks named. */
static int same_args(mpi_ranks *m, int argc, char **argv) {
    size_t len = 0;
    for (int i = 1; i < argc; i++) len += strlen(argv[i]) + 1;
    char *mine = malloc(len + 1), *root = NULL;
    unsigned long long root_len = len;
    if (mine) {
        char *p = mine;
        for (int i = 1; i < argc; i++) p = stpcpy(p, argv[i]) + 1;
    }
    MPI_Bcast(&root_len, 1, MPI_UNSIGNED_LONG_LONG, 0, m->comm);
    root = m->rank == 0 ? mine : malloc((size_t)root_len + 1);
    int bad = !mine || !root;
    if (bad) fprintf(stderr, "hrmt-mpi: out of memory at start\n");
    if (mpi_ranks_agree(m, bad) || bad) { /* agreed >= bad: `|| bad` only informs the analyzer */
        free(mine);
        if (root != mine) free(root);
        return 1;
    }
    m->hooks.bcast(m, root, (size_t)root_len);
    int differ = root_len != len || memcmp(root, mine, len) != 0;
    if (differ)
        fprintf(stderr,
                "hrmt-mpi: the command line differs from rank 0's; every rank needs the same "
                "command and options\n");
    free(mine);
    if (root != mine) free(root);
    return mpi_ranks_agree(m, differ ? 2 : 0);
}

/* Rank 0's stdout: a full disk or a closed pipe must not look like success
 * (as in main.c). Returns rc, or 1. */
static int flush_stdout(int rc) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    fprintf(stderr, "hrmt-mpi: writing standard output failed\n");
    return rc ? rc : 1;
}

int main(int argc, char **argv) {
    int provided = 0;
    /* MPI is called from the main thread only, outside the OpenMP regions. */
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "hrmt-mpi: MPI_Init_thread failed\n");
        return 1;
    }
    mpi_ranks m;
    if (mpi_ranks_init(&m, MPI_COMM_WORLD) != 0) {
        MPI_Finalize();
        return 1;
    }
    mpi_node node;
    mpi_node_setup(MPI_COMM_WORLD, &node);
    m.hooks.bench_report = mpi_bench_report;

    const char *cmd = argc >= 2 ? argv[1] : "";
    int rc = same_args(&m, argc, argv), from_command = 0;
    if (rc != 0) {
        /* said above */
    } else if (!strcmp(cmd, "run")) {
        rc = hrmt_cmd_run_ranks(argc - 1, argv + 1, &m.hooks);
        from_command = 1;
    } else if (!strcmp(cmd, "bench")) {
        rc = hrmt_cmd_bench_ranks(argc - 1, argv + 1, &m.hooks);
        from_command = 1;
    } else if (!strcmp(cmd, "ranks")) {
        rc = cmd_ranks(&m, &node);
    } else if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        if (m.rank == 0) usage(stdout);
    } else {
        if (m.rank == 0) {
            if (*cmd) fprintf(stderr, "hrmt-mpi: unknown command '%s'\n", cmd);
            usage(stderr);
        }
        rc = 2;
    }
    if (from_command && rc != m.last_agreed) {
        /* Stopped where the other ranks may be waiting for it. */
        mpi_ranks_flush_own(&m);
        fprintf(m.err, "hrmt-mpi: rank %d (%s) stopped on its own (exit %d); ending the job\n",
                m.rank, mpi_ranks_host(&m, m.rank), rc);
        fflush(m.err);
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    if (m.rank == 0) rc = flush_stdout(rc);
    rc = mpi_ranks_agree(&m, rc);
    mpi_ranks_finish(&m);
    MPI_Finalize();
    return rc;
}
