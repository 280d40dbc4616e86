/* Per-host setup of an hrmt-mpi rank (see mpi_node.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */
#include "cli/mpi_node.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mpi_node_setup(MPI_Comm comm, mpi_node *out) {
    memset(out, 0, sizeof *out);
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &out->local_rank);
    MPI_Comm_size(node, &out->local_size);
    if (!getenv("HRMT_CUDA_DEVICE")) {
        char dev[16];
        snprintf(dev, sizeof dev, "%d", out->local_rank);
        (void)setenv("HRMT_CUDA_DEVICE", dev, 1); /* on failure: device 0, the library's default */
    }
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_SET(0, &mine);
    cpu_set_t *all = calloc((size_t)out->local_size, sizeof *all);
    if (!all) { /* a few KiB; nothing sensible is left to do without them */
        fprintf(stderr, "hrmt-mpi: out of memory at start\n");
        MPI_Abort(comm, 1);
        return;
    }
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, node);
    out->cpus = CPU_COUNT(&mine);
    for (int k = 0; k < out->local_size; k++) {
        cpu_set_t both;
        CPU_AND(&both, &mine, &all[k]);
        if (CPU_COUNT(&both) > 0) out->sharing++;
    }
    free(all);
    out->threads = omp_get_max_threads();
    if (!getenv("OMP_NUM_THREADS") && out->sharing > 1) {
        out->threads = out->cpus / out->sharing > 1 ? out->cpus / out->sharing : 1;
        omp_set_num_threads(out->threads);
    }
    MPI_Comm_free(&node);
}
