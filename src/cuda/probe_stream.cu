/* GPU bandwidth probes: read / write / copy over a global-memory working set
 * split into one contiguous slice per block (4 blocks of 512 threads per SM,
 * fewer when the set is small), each block streaming its own slice `reps`
 * times, like the CPU probe's per-thread slices; and the same over every SM's
 * shared memory. 16-byte vector accesses through asm volatile, so no pass is
 * merged or dropped by the compiler; reads go through L1 (ld.global.ca), so a
 * set whose per-SM share fits L1 measures L1. Each trial is timed with
 * cudaEvents and sized to about 1 ms (launch overhead below 1%); the best of
 * 5 trials counts, as on the CPU. Copy counts bytes read + written. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/probe_common.cuh"

#define THREADS 512
#define BLOCKS_PER_SM 4 /* 4 x 512 = 2048 threads: a full SM on sm_80 and sm_90 */
#define SMEM_THREADS 1024
#define TRIALS 5
#define TRIAL_S 1e-3
#define CAL_BYTES ((double)(64 << 20)) /* calibration trial: about this much traffic */

namespace {

enum { K_READ = 0, K_WRITE = 1, K_COPY = 2 };

__device__ __forceinline__ uint4 ldg4(const uint4 *p) {
    uint4 v;
    asm volatile("ld.global.ca.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}
__device__ __forceinline__ void stg4(uint4 *p, uint4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}
__device__ __forceinline__ uint4 lds4(uint32_t a) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(a));
    return v;
}
__device__ __forceinline__ void sts4(uint32_t a, uint4 v) {
    asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}

/* Block b streams vectors [nvec*b/G, nvec*(b+1)/G) of buf (copy: into
 * buf + dst). 4 accesses in flight per thread per step. */
template <int KIND>
__global__ void __launch_bounds__(THREADS)
    probe_stream_kernel(uint4 *buf, uint64_t nvec, uint64_t dst, uint32_t reps, uint32_t *sink) {
    const uint64_t g = gridDim.x, b = blockIdx.x;
    const uint64_t lo = nvec * b / g, hi = nvec * (b + 1) / g;
    uint32_t acc = 0;
    for (uint32_t r = 0; r < reps; r++) {
        const uint4 w = make_uint4(r, r, r, r);
        for (uint64_t i = lo + threadIdx.x; i < hi; i += 4 * THREADS) {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const uint64_t j = i + (uint64_t)k * THREADS;
                if (j >= hi) break;
                if (KIND == K_READ) {
                    const uint4 v = ldg4(buf + j);
                    acc ^= v.x ^ v.y ^ v.z ^ v.w;
                } else if (KIND == K_WRITE) {
                    stg4(buf + j, w);
                } else {
                    stg4(buf + dst + j, ldg4(buf + j));
                }
            }
        }
    }
    if (acc == 0x9E3779B9u) *sink = acc; /* keeps the reads live */
}

/* Every block fills then streams its own `bytes` of shared memory. */
template <int KIND>
__global__ void __launch_bounds__(SMEM_THREADS)
    probe_smem_stream_kernel(uint32_t bytes, uint32_t reps, uint32_t *sink) {
    extern __shared__ __align__(16) unsigned char sm[];
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(sm);
    const uint32_t nvec = bytes / 16, half = nvec / 2;
    for (uint32_t i = threadIdx.x; i < nvec; i += SMEM_THREADS)
        sts4(base + 16 * i, make_uint4(i, i + 1, i + 2, i + 3));
    __syncthreads();
    const uint32_t span = KIND == K_COPY ? half : nvec;
    uint32_t acc = 0;
    for (uint32_t r = 0; r < reps; r++) {
        const uint4 w = make_uint4(r, r, r, r);
        for (uint32_t i = threadIdx.x; i < span; i += SMEM_THREADS) {
            const uint32_t a = base + 16 * i;
            if (KIND == K_READ) {
                const uint4 v = lds4(a);
                acc ^= v.x ^ v.y ^ v.z ^ v.w;
            } else if (KIND == K_WRITE) {
                sts4(a, w);
            } else {
                sts4(a + 16 * half, lds4(a));
            }
        }
    }
    if (acc == 0x9E3779B9u) *sink = acc;
}

/* What one bandwidth measurement launches. */
struct stream_job {
    hrmt_cuda *c;
    int smem;            /* 0: global memory */
    uint4 *buf;          /* global */
    uint64_t nvec;       /* global: vectors streamed (copy: the source half) */
    uint64_t dst;        /* global copy: destination offset in vectors */
    unsigned blocks;     /* grid */
    size_t smem_bytes;   /* shared: bytes streamed per block */
    size_t smem_reserve; /* shared: bytes reserved per block (>= smem_bytes) */
    uint32_t *sink;
};

void launch(const stream_job *j, int kind, uint32_t reps, cudaStream_t st) {
    if (!j->smem) {
        if (kind == K_READ)
            probe_stream_kernel<K_READ>
                <<<j->blocks, THREADS, 0, st>>>(j->buf, j->nvec, 0, reps, j->sink);
        else if (kind == K_WRITE)
            probe_stream_kernel<K_WRITE>
                <<<j->blocks, THREADS, 0, st>>>(j->buf, j->nvec, 0, reps, j->sink);
        else
            probe_stream_kernel<K_COPY>
                <<<j->blocks, THREADS, 0, st>>>(j->buf, j->nvec, j->dst, reps, j->sink);
        return;
    }
    const uint32_t b = (uint32_t)j->smem_bytes;
    const size_t r = j->smem_reserve;
    if (kind == K_READ)
        probe_smem_stream_kernel<K_READ><<<j->blocks, SMEM_THREADS, r, st>>>(b, reps, j->sink);
    else if (kind == K_WRITE)
        probe_smem_stream_kernel<K_WRITE><<<j->blocks, SMEM_THREADS, r, st>>>(b, reps, j->sink);
    else
        probe_smem_stream_kernel<K_COPY><<<j->blocks, SMEM_THREADS, r, st>>>(b, reps, j->sink);
}

/* Seconds of one launch of `reps` passes. */
hrmt_status timed(const stream_job *j, int kind, uint32_t reps, cudaEvent_t e0, cudaEvent_t e1,
                  double *sec, char *err, size_t errlen) {
    cudaStream_t st = (cudaStream_t)hrmt_cuda_stream(j->c);
    hrmt_status s = probe_map(cudaEventRecord(e0, st), "cudaEventRecord", err, errlen);
    if (s != HRMT_OK) return s;
    launch(j, kind, reps, st);
    s = probe_launched(j->smem ? "probe_smem_stream_kernel launch" : "probe_stream_kernel launch",
                       err, errlen);
    if (s == HRMT_OK) s = probe_map(cudaEventRecord(e1, st), "cudaEventRecord", err, errlen);
    if (s == HRMT_OK) s = probe_map(cudaEventSynchronize(e1), "cudaEventSynchronize", err, errlen);
    float ms = 0.0f;
    if (s == HRMT_OK)
        s = probe_map(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime", err, errlen);
    *sec = 1e-3 * (double)ms;
    return s;
}

/* Best GB/s of one kind over TRIALS; pass_bytes = bytes one pass moves. */
hrmt_status measure(const stream_job *j, int kind, double pass_bytes, double *gbps, char *err,
                    size_t errlen) {
    cudaEvent_t e0 = NULL, e1 = NULL;
    hrmt_status s = probe_map(cudaEventCreate(&e0), "cudaEventCreate", err, errlen);
    if (s == HRMT_OK) s = probe_map(cudaEventCreate(&e1), "cudaEventCreate", err, errlen);
    double best = 0.0, sec = 0.0;
    /* Calibration (also the warm-up): about CAL_BYTES, then trials of ~TRIAL_S. */
    const double cal = CAL_BYTES / pass_bytes;
    uint32_t reps = cal < 1 ? 1 : cal > 1e6 ? 1000000u : (uint32_t)cal;
    if (s == HRMT_OK) s = timed(j, kind, reps, e0, e1, &sec, err, errlen);
    if (s == HRMT_OK) {
        const double want = sec > 0 ? TRIAL_S / (sec / reps) : 1.0;
        reps = want < 1 ? 1 : want > 1e9 ? 1000000000u : (uint32_t)want;
    }
    for (int t = 0; t < TRIALS && s == HRMT_OK; t++) {
        s = timed(j, kind, reps, e0, e1, &sec, err, errlen);
        const double v = sec > 0 ? pass_bytes * reps / sec * 1e-9 : 0.0;
        if (v > best) best = v;
    }
    if (e0) (void)cudaEventDestroy(e0);
    if (e1) (void)cudaEventDestroy(e1);
    *gbps = best;
    return s;
}

hrmt_status sm_count(hrmt_cuda *c, int *sms, char *err, size_t errlen) {
    return probe_map(
        cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, hrmt_cuda_device(c)),
        "cudaDeviceGetAttribute(multiProcessorCount)", err, errlen);
}

} // namespace

extern "C" hrmt_status hrmt_cuda_probe_bandwidth(hrmt_cuda *c, size_t bytes, hrmt_bandwidth *out,
                                                 char *err, size_t errlen) {
    const uint64_t nvec = bytes / 16;
    if (nvec < 8) {
        probe_err(err, errlen, "working set %zu bytes is below 128 bytes", bytes);
        return HRMT_ERR_INVALID_ARG;
    }
    if (nvec > (SIZE_MAX - 16) / 16) {
        probe_err(err, errlen, "working set %zu bytes cannot be allocated", bytes);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    hrmt_status s = hrmt_cuda_activate(c, err, errlen);
    int sms = 0;
    if (s == HRMT_OK) s = sm_count(c, &sms, err, errlen);
    if (s != HRMT_OK) return s;
    void *mem = NULL;
    s = hrmt_cuda_malloc(c, nvec * 16 + 16, &mem, err, errlen);
    if (s != HRMT_OK) return s;
    stream_job j = {};
    j.buf = (uint4 *)mem;
    j.sink = (uint32_t *)(j.buf + nvec);
    /* Pages touched and the sink set before any timing. */
    s = hrmt_cuda_memset(c, mem, 1, nvec * 16 + 16, err, errlen);
    const uint64_t half = nvec / 2;
    /* Grid: up to BLOCKS_PER_SM per SM, never a block without a vector per thread. */
    const uint64_t cap = (uint64_t)(sms > 0 ? sms : 1) * BLOCKS_PER_SM;
    uint64_t want = (nvec + THREADS - 1) / THREADS;
    j.c = c;
    j.blocks = (unsigned)(want < cap ? want : cap);
    j.nvec = nvec;
    if (s == HRMT_OK) s = measure(&j, K_READ, (double)nvec * 16, &out->read_gbps, err, errlen);
    if (s == HRMT_OK) s = measure(&j, K_WRITE, (double)nvec * 16, &out->write_gbps, err, errlen);
    /* Copy: half the set into the other half, each block its slice of both. */
    want = (half + THREADS - 1) / THREADS;
    j.blocks = (unsigned)(want < cap ? want : cap);
    j.nvec = half;
    j.dst = half;
    if (s == HRMT_OK)
        s = measure(&j, K_COPY, 2.0 * (double)half * 16, &out->copy_gbps, err, errlen);
    hrmt_cuda_free(c, mem);
    return s;
}

extern "C" hrmt_status hrmt_cuda_probe_smem_bandwidth(hrmt_cuda *c, size_t bytes_per_block,
                                                      hrmt_bandwidth *out, size_t *total_bytes,
                                                      char *err, size_t errlen) {
    hrmt_status s = hrmt_cuda_activate(c, err, errlen);
    int sms = 0, optin = 0, per_sm = 0;
    if (s == HRMT_OK) s = sm_count(c, &sms, err, errlen);
    if (s == HRMT_OK)
        s = probe_map(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                             hrmt_cuda_device(c)),
                      "cudaDeviceGetAttribute(maxSharedMemoryPerBlockOptin)", err, errlen);
    if (s == HRMT_OK)
        s = probe_map(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                                             hrmt_cuda_device(c)),
                      "cudaDeviceGetAttribute(maxSharedMemoryPerMultiprocessor)", err, errlen);
    if (s != HRMT_OK) return s;
    const size_t bytes = bytes_per_block / 32 * 32; /* copy halves stay 16-byte aligned */
    if (bytes < (16u << 10) || bytes > (size_t)optin) {
        probe_err(err, errlen,
                  "shared-memory bytes per block %zu outside 16 KiB .. the block's limit",
                  bytes_per_block);
        return HRMT_ERR_INVALID_ARG;
    }
    const void *kernels[3] = {(const void *)probe_smem_stream_kernel<K_READ>,
                              (const void *)probe_smem_stream_kernel<K_WRITE>,
                              (const void *)probe_smem_stream_kernel<K_COPY>};
    /* Each block reserves more than half an SM's shared memory, so no two
     * share an SM and the grid of one block per SM covers every SM. */
    size_t reserve = (size_t)per_sm / 2 + 1024;
    if (reserve < bytes) reserve = bytes;
    if (reserve > (size_t)optin) reserve = (size_t)optin;
    for (int k = 0; k < 3 && s == HRMT_OK; k++)
        s = probe_map(cudaFuncSetAttribute(kernels[k], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)reserve),
                      "cudaFuncSetAttribute(probe_smem_stream_kernel, max dynamic shared memory)",
                      err, errlen);
    void *sink = NULL;
    if (s == HRMT_OK) s = hrmt_cuda_malloc(c, 16, &sink, err, errlen);
    if (s != HRMT_OK) return s;
    stream_job j = {};
    j.c = c;
    j.smem = 1;
    j.smem_bytes = bytes;
    j.smem_reserve = reserve;
    j.blocks = (unsigned)(sms > 0 ? sms : 1);
    j.sink = (uint32_t *)sink;
    const double pass = (double)bytes * j.blocks; /* copy: half read + half written */
    if (s == HRMT_OK) s = measure(&j, K_READ, pass, &out->read_gbps, err, errlen);
    if (s == HRMT_OK) s = measure(&j, K_WRITE, pass, &out->write_gbps, err, errlen);
    if (s == HRMT_OK) s = measure(&j, K_COPY, pass, &out->copy_gbps, err, errlen);
    hrmt_cuda_free(c, sink);
    if (s == HRMT_OK && total_bytes) *total_bytes = bytes * j.blocks;
    return s;
}
