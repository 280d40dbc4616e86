/* Device side of the memory probes (src/cuda/probe_chase.cu, probe_stream.cu),
 * called by core/probe.c on CUDA contexts. Conventions of cuda_backend.h:
 * everything runs on hrmt_cuda_stream and waits for it; errors come back as
 * hrmt_status with "<what>: <CUDA text>" in err. Semantics of each function:
 * hrmt.h (hrmt_probe_latency / hrmt_probe_bandwidth) and core/probe_gpu.h. */
#ifndef HRMT_CUDA_PROBE_CUDA_H
#define HRMT_CUDA_PROBE_CUDA_H

#include <stddef.h>

#include "core/probe_gpu.h"
#include "cuda/cuda_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

hrmt_status hrmt_cuda_probe_caps(hrmt_cuda *c, hrmt_gpu_caps *out, char *err, size_t errlen);
/* Global memory: one thread (lane 0 of one warp) chases a random cycle. */
hrmt_status hrmt_cuda_probe_latency(hrmt_cuda *c, size_t bytes, double *ns, char *err,
                                    size_t errlen);
hrmt_status hrmt_cuda_probe_smem_latency(hrmt_cuda *c, size_t bytes, double *ns, char *err,
                                         size_t errlen);
/* Global memory: every SM streams its blocks' slices of `bytes`. */
hrmt_status hrmt_cuda_probe_bandwidth(hrmt_cuda *c, size_t bytes, hrmt_bandwidth *out, char *err,
                                      size_t errlen);
hrmt_status hrmt_cuda_probe_smem_bandwidth(hrmt_cuda *c, size_t bytes_per_block,
                                           hrmt_bandwidth *out, size_t *total_bytes, char *err,
                                           size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
