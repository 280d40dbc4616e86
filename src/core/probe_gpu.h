/* GPU memory-tier probes that hrmt.h's two probe functions cannot express:
 * the device's tier capacities and the shared-memory (SMEM) chase and stream.
 * Implemented in core/probe.c over src/cuda/probe_*.cu; in builds without
 * CUDA, and on CPU contexts, every function returns UNSUPPORTED with a
 * message. The CLI's GPU tier rows (SMEM, L1, L2, HBM) are built on these. */
#ifndef HRMT_CORE_PROBE_GPU_H
#define HRMT_CORE_PROBE_GPU_H

#include <stddef.h>

#include "hrmt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the device says about its memory tiers (cudaDeviceGetAttribute). */
typedef struct hrmt_gpu_caps {
    char name[256];
    int cc_major, cc_minor;
    int sms;               /* streaming multiprocessors */
    size_t smem_per_block; /* shared memory one block may opt in to */
    size_t smem_per_sm;    /* shared memory per SM */
    /* Unified L1 / shared-memory array per SM (not a device attribute: a table
     * by compute capability, 256 KiB on sm_90). A kernel without shared memory
     * (the global chase asks for the largest L1 carve-out) can cache about
     * this much in L1. */
    size_t l1_per_sm;
    size_t l2_bytes;     /* cudaDevAttrL2CacheSize */
    size_t global_bytes; /* total device memory */
    size_t free_bytes;   /* cudaMemGetInfo's free memory now */
    int clock_khz;       /* SM clock attribute (0 when the driver has none) */
} hrmt_gpu_caps;

/* Fills *out for the context's device. Errors: INVALID_ARG (NULL),
 * UNSUPPORTED (CPU context / no CUDA build), CUDA. */
hrmt_status hrmt_probe_gpu_caps(hrmt_context *ctx, hrmt_gpu_caps *out);

/* ns per dependent load of one thread chasing a random cycle of 64-byte nodes
 * over `bytes` of one block's shared memory (at most caps.smem_per_block).
 * Errors: INVALID_ARG (NULL, below two nodes, above the block's shared
 * memory), UNSUPPORTED, CUDA. */
hrmt_status hrmt_probe_smem_latency(hrmt_context *ctx, size_t bytes, double *ns_per_load);

/* Shared-memory read / write / copy bandwidth of the whole device: one block
 * per SM streams its own `bytes_per_block` of shared memory (16-byte
 * accesses), best of 5 timed trials. *total_bytes (may be NULL) = the bytes
 * resident at once over all blocks. Errors: INVALID_ARG (NULL, below 16 KiB
 * or above caps.smem_per_block), UNSUPPORTED, CUDA. */
hrmt_status hrmt_probe_smem_bandwidth(hrmt_context *ctx, size_t bytes_per_block,
                                      hrmt_bandwidth *out, size_t *total_bytes);

#ifdef __cplusplus
}
#endif
#endif
