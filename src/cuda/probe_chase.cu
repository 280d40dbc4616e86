/* GPU latency probes: one thread (lane 0 of a single warp) follows a random
 * cycle of 64-byte nodes, in global memory (L1 / L2 / HBM by working-set
 * size) or in one block's shared memory; and the device's tier capacities.
 *
 * Loads: the global chase uses ld.global.ca (cache at all levels, L1
 * included), stated explicitly instead of relying on the default caching of
 * global loads, and the kernel asks for the largest L1 carve-out (it uses no
 * shared memory). Timing: %globaltimer (ns) read inside the kernel around the
 * timed loads, after a warm-up lap in the same launch (L1 does not keep its
 * contents across launches; L2 does, and the chain-building kernel that just
 * wrote every node leaves an L2-sized set resident). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "cuda/probe_common.cuh"

#define NODE 64                    /* bytes per node, the CPU probe's */
#define CAL_LOADS 8192ull          /* first launch: estimates ns per load */
#define MIN_LOADS 65536ull         /* timed launch: at least */
#define MAX_LOADS (4ull << 20)     /* ... at most (the CPU probe's 4M) */
#define TARGET_NS 30e6             /* ... or about 30 ms of loads */
#define FULL_WARM_NODES (16384ull) /* sets up to 1 MiB: a whole warm-up lap */
#define PART_WARM_NODES 4096ull    /* larger ones cannot be L1-resident */

namespace {

/* One random cycle: node perm(i) points to node perm(i + 1). */
__global__ void probe_chain_kernel(uint64_t *buf, probe_perm p) {
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += stride) {
        const uint64_t a = probe_permute(i, p), b = probe_permute(i + 1 == p.n ? 0 : i + 1, p);
        buf[a * (NODE / 8)] = (uint64_t)(uintptr_t)(buf + b * (NODE / 8));
    }
}

/* Reads every node once more: the chain kernel wrote 8 of each node's 64
 * bytes, and a read makes whole sectors L2-resident whatever L2 does with
 * partial writes. out[0] only when a link is 0 (never), to keep the reads. */
__global__ void probe_touch_kernel(const uint64_t *buf, uint64_t n, uint64_t *out) {
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t acc = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        acc |= buf[i * (NODE / 8)] == 0;
    if (acc) out[0] = acc;
}

__device__ __forceinline__ uint64_t ld_ca(uint64_t a) {
    uint64_t v;
    asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(v) : "l"(a));
    return v;
}

/* out[0] = end of the chain (keeps the loads live), out[1] = ns, out[2] = cycles. */
__global__ void probe_chase_global_kernel(uint64_t start, uint64_t warm, uint64_t loads,
                                          uint64_t *out) {
    if (threadIdx.x != 0) return;
    uint64_t p = start;
    for (uint64_t i = 0; i < warm; i++) p = ld_ca(p);
    const uint64_t t0 = probe_globaltimer(), c0 = probe_clock();
    for (uint64_t i = 0; i < loads; i += 8) {
#pragma unroll
        for (int k = 0; k < 8; k++) p = ld_ca(p);
    }
    const uint64_t t1 = probe_globaltimer(), c1 = probe_clock();
    out[0] = p;
    out[1] = t1 - t0;
    out[2] = c1 - c0;
}

__device__ __forceinline__ uint32_t ld_shared(uint32_t a) {
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(a));
    return v;
}

/* The whole block writes the cycle into shared memory (shared-space
 * addresses), then lane 0 chases it. */
__global__ void probe_chase_smem_kernel(probe_perm p, uint64_t warm, uint64_t loads,
                                        uint64_t *out) {
    extern __shared__ __align__(16) unsigned char sm[];
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(sm);
    for (uint64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
        const uint64_t a = probe_permute(i, p), b = probe_permute(i + 1 == p.n ? 0 : i + 1, p);
        *(uint32_t *)(sm + a * NODE) = base + (uint32_t)(b * NODE);
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    uint32_t a = base;
    for (uint64_t i = 0; i < warm; i++) a = ld_shared(a);
    const uint64_t t0 = probe_globaltimer(), c0 = probe_clock();
    for (uint64_t i = 0; i < loads; i += 8) {
#pragma unroll
        for (int k = 0; k < 8; k++) a = ld_shared(a);
    }
    const uint64_t t1 = probe_globaltimer(), c1 = probe_clock();
    out[0] = a;
    out[1] = t1 - t0;
    out[2] = c1 - c0;
}

/* Timed loads for about TARGET_NS at the estimated rate, a multiple of 8. */
uint64_t timed_loads(double ns_per_load) {
    double want = ns_per_load > 0 ? TARGET_NS / ns_per_load : (double)MAX_LOADS;
    uint64_t n = want >= (double)MAX_LOADS ? MAX_LOADS : (uint64_t)want;
    if (n < MIN_LOADS) n = MIN_LOADS;
    return (n + 7) & ~7ull;
}

/* One launch of the chase (global when smem_bytes == 0), then the result. */
hrmt_status chase_once(hrmt_cuda *c, uint64_t start, probe_perm p, size_t smem_bytes, uint64_t warm,
                       uint64_t loads, uint64_t *dres, double *ns, char *err, size_t errlen) {
    cudaStream_t st = (cudaStream_t)hrmt_cuda_stream(c);
    if (smem_bytes) {
        probe_chase_smem_kernel<<<1, 256, smem_bytes, st>>>(p, warm, loads, dres);
    } else {
        probe_chase_global_kernel<<<1, 32, 0, st>>>(start, warm, loads, dres);
    }
    hrmt_status s = probe_launched(
        smem_bytes ? "probe_chase_smem_kernel launch" : "probe_chase_global_kernel launch", err,
        errlen);
    uint64_t res[3] = {0, 0, 0};
    if (s == HRMT_OK) s = hrmt_cuda_memcpy(c, res, dres, sizeof res, 1, err, errlen);
    if (s != HRMT_OK) return s;
    *ns = (double)res[1] / (double)loads;
    return HRMT_OK;
}

/* Calibration launch, then the timed one; both warm up first. */
hrmt_status chase_timed(hrmt_cuda *c, uint64_t start, probe_perm p, size_t smem_bytes,
                        uint64_t *dres, double *ns, char *err, size_t errlen) {
    const uint64_t warm = p.n <= FULL_WARM_NODES ? p.n : PART_WARM_NODES;
    double est = 0.0;
    hrmt_status s = chase_once(c, start, p, smem_bytes, warm, CAL_LOADS, dres, &est, err, errlen);
    if (s != HRMT_OK) return s;
    return chase_once(c, start, p, smem_bytes, warm, timed_loads(est), dres, ns, err, errlen);
}

} // namespace

extern "C" hrmt_status hrmt_cuda_probe_latency(hrmt_cuda *c, size_t bytes, double *ns, char *err,
                                               size_t errlen) {
    const uint64_t n = bytes / NODE;
    if (n < 2) {
        probe_err(err, errlen, "working set %zu bytes is below two 64-byte nodes", bytes);
        return HRMT_ERR_INVALID_ARG;
    }
    if (n > (SIZE_MAX - 64) / NODE) {
        probe_err(err, errlen, "working set %zu bytes cannot be allocated", bytes);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    hrmt_status s = hrmt_cuda_activate(c, err, errlen);
    if (s != HRMT_OK) return s;
    /* The result words sit after the nodes: one allocation, one failure point. */
    void *mem = NULL;
    s = hrmt_cuda_malloc(c, n * NODE + 64, &mem, err, errlen);
    if (s != HRMT_OK) return s;
    uint64_t *buf = (uint64_t *)mem, *dres = buf + n * (NODE / 8);
    const probe_perm p = probe_perm_make(n, 0x5851F42D4C957F2Dull);
    int sms = 0;
    s = probe_map(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, hrmt_cuda_device(c)),
                  "cudaDeviceGetAttribute(multiProcessorCount)", err, errlen);
    if (s == HRMT_OK)
        s = probe_map(cudaFuncSetAttribute(probe_chase_global_kernel,
                                           cudaFuncAttributePreferredSharedMemoryCarveout, 0),
                      "cudaFuncSetAttribute(probe_chase_global_kernel, carveout 0)", err, errlen);
    if (s == HRMT_OK) {
        const uint64_t want = (n + 255) / 256, cap = (uint64_t)(sms > 0 ? sms : 1) * 8;
        const unsigned grid = (unsigned)(want < cap ? want : cap);
        cudaStream_t st = (cudaStream_t)hrmt_cuda_stream(c);
        probe_chain_kernel<<<grid, 256, 0, st>>>(buf, p);
        s = probe_launched("probe_chain_kernel launch", err, errlen);
        if (s == HRMT_OK) {
            probe_touch_kernel<<<grid, 256, 0, st>>>(buf, n, dres);
            s = probe_launched("probe_touch_kernel launch", err, errlen);
        }
    }
    /* The chase starts at node 0: the cycle passes through every node. */
    if (s == HRMT_OK) s = chase_timed(c, (uint64_t)(uintptr_t)buf, p, 0, dres, ns, err, errlen);
    hrmt_cuda_free(c, mem);
    return s;
}

extern "C" hrmt_status hrmt_cuda_probe_smem_latency(hrmt_cuda *c, size_t bytes, double *ns,
                                                    char *err, size_t errlen) {
    const uint64_t n = bytes / NODE;
    if (n < 2) {
        probe_err(err, errlen, "shared-memory working set %zu bytes is below two 64-byte nodes",
                  bytes);
        return HRMT_ERR_INVALID_ARG;
    }
    hrmt_status s = hrmt_cuda_activate(c, err, errlen);
    if (s != HRMT_OK) return s;
    int optin = 0;
    s = probe_map(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                         hrmt_cuda_device(c)),
                  "cudaDeviceGetAttribute(maxSharedMemoryPerBlockOptin)", err, errlen);
    if (s != HRMT_OK) return s;
    const size_t smem = (size_t)n * NODE;
    if (smem > (size_t)optin) {
        probe_err(err, errlen, "shared-memory working set %zu bytes exceeds one block's limit",
                  bytes);
        return HRMT_ERR_INVALID_ARG;
    }
    s = probe_map(cudaFuncSetAttribute(probe_chase_smem_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                  "cudaFuncSetAttribute(probe_chase_smem_kernel, max dynamic shared memory)", err,
                  errlen);
    if (s != HRMT_OK) return s;
    void *dres = NULL;
    s = hrmt_cuda_malloc(c, 64, &dres, err, errlen);
    if (s != HRMT_OK) return s;
    const probe_perm p = probe_perm_make(n, 0x2545F4914F6CDD1Dull);
    s = chase_timed(c, 0, p, smem, (uint64_t *)dres, ns, err, errlen);
    hrmt_cuda_free(c, dres);
    return s;
}

/* Unified L1 / shared array per SM: shared memory per SM plus the L1 that
 * stays when shared memory is at its maximum, in 32 KiB steps. This gives the
 * documented sizes of every generation since Volta: 128 KiB (sm_70, sm_86,
 * sm_89, sm_120), 96 KiB (sm_75), 192 KiB (sm_80), 256 KiB (sm_90, sm_100). */
static size_t unified_l1(size_t smem_per_sm) {
    const size_t step = 32 << 10;
    return (smem_per_sm + (28 << 10) + step - 1) / step * step;
}

extern "C" hrmt_status hrmt_cuda_probe_caps(hrmt_cuda *c, hrmt_gpu_caps *out, char *err,
                                            size_t errlen) {
    memset(out, 0, sizeof *out);
    hrmt_status s = hrmt_cuda_activate(c, err, errlen);
    if (s != HRMT_OK) return s;
    const int dev = hrmt_cuda_device(c);
    static const struct {
        cudaDeviceAttr a;
        const char *what;
    } attrs[] = {{cudaDevAttrComputeCapabilityMajor, "cudaDeviceGetAttribute(cc major)"},
                 {cudaDevAttrComputeCapabilityMinor, "cudaDeviceGetAttribute(cc minor)"},
                 {cudaDevAttrMultiProcessorCount, "cudaDeviceGetAttribute(SM count)"},
                 {cudaDevAttrMaxSharedMemoryPerBlockOptin,
                  "cudaDeviceGetAttribute(shared memory per block)"},
                 {cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                  "cudaDeviceGetAttribute(shared memory per SM)"},
                 {cudaDevAttrL2CacheSize, "cudaDeviceGetAttribute(L2 size)"}};
    int v[6];
    for (int i = 0; i < 6 && s == HRMT_OK; i++)
        s = probe_map(cudaDeviceGetAttribute(&v[i], attrs[i].a, dev), attrs[i].what, err, errlen);
    if (s != HRMT_OK) return s;
    /* The clock is informative only: a driver without it leaves 0. */
    if (cudaDeviceGetAttribute(&out->clock_khz, cudaDevAttrClockRate, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        out->clock_khz = 0;
    }
    size_t free_b = 0, total_b = 0;
    s = probe_map(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo", err, errlen);
    if (s != HRMT_OK) return s;
    const char *name = hrmt_cuda_name(c);
    snprintf(out->name, sizeof out->name, "%s", name ? name : "");
    out->cc_major = v[0];
    out->cc_minor = v[1];
    out->sms = v[2];
    out->smem_per_block = (size_t)v[3];
    out->smem_per_sm = (size_t)v[4];
    out->l1_per_sm = unified_l1(out->smem_per_sm);
    out->l2_bytes = (size_t)v[5];
    out->global_bytes = total_b;
    out->free_bytes = free_b;
    return HRMT_OK;
}
