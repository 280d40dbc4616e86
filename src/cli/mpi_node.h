/* Per-host setup of an hrmt-mpi rank, before the command runs. */
#ifndef HRMT_CLI_MPI_NODE_H
#define HRMT_CLI_MPI_NODE_H

#include <mpi.h>

typedef struct mpi_node {
    int local_rank, local_size; /* among the ranks on this host */
    int cpus;                   /* CPUs of this rank's binding */
    int sharing;                /* ranks on this host whose binding overlaps this one's */
    int threads;                /* OpenMP threads the command will get by default */
} mpi_node;

/* Collective over comm. Sets HRMT_CUDA_DEVICE to the local rank unless it is
 * already set (one rank per GPU), and without OMP_NUM_THREADS shares the
 * CPUs of this rank's binding with the other ranks on the host bound to the
 * same CPUs: mpirun binds each of more than two ranks to a whole socket by
 * default, and every rank would otherwise start one thread per CPU of it. */
void mpi_node_setup(MPI_Comm comm, mpi_node *out);

#endif
