/* Memory probes: dependent-load latency by pointer chasing, and streaming
 * read / write / copy bandwidth, each over a caller-chosen working set. */
#define _DEFAULT_SOURCE /* madvise, clock_gettime */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/context.h"
#include "core/probe_chase.h"
#include "core/probe_gpu.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/probe_cuda.h"
#endif

#define NODE_BYTES 64 /* one cache line per node */
#define MIN_LOADS ((uint64_t)1 << 22)
#define MIN_SECONDS 0.05
#define BATCH_LOADS 65536 /* loads between clock reads */
#define BW_TRIALS 5
#define BW_MIN_TRIAL_BYTES ((size_t)64 << 20)

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 64-byte-aligned buffer; large ones ask for transparent huge pages so the
 * probes measure the caches, not the page walks of 4 KiB pages. */
static void *probe_alloc(size_t bytes) {
    const size_t align = bytes >= ((size_t)4 << 20) ? ((size_t)2 << 20) : 64;
    size_t rounded = (bytes + align - 1) / align * align;
    void *p = NULL;
    if (posix_memalign(&p, align, rounded) != 0) return NULL;
    if (align > 64) (void)madvise(p, rounded, MADV_HUGEPAGE);
    return p;
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Follows `n` links from p; eight per iteration keeps the loop overhead out
 * of the dependent chain's critical path. */
static void *chase(void *p, uint64_t n) {
    void **q = p;
    for (uint64_t i = 0; i < n; i += 8) {
        q = *q;
        q = *q;
        q = *q;
        q = *q;
        q = *q;
        q = *q;
        q = *q;
        q = *q;
    }
    return q;
}

/* Chases a random single cycle over `bytes` after one warm-up lap, for up
 * to `min_loads` loads or `min_s` seconds, whichever comes first. */
static hrmt_status chase_timed(size_t bytes, uint64_t min_loads, double min_s, double *ns) {
    const size_t n = bytes / NODE_BYTES;
    char *buf = probe_alloc(n * NODE_BYTES);
    size_t *order = malloc(n * sizeof *order);
    if (!buf || !order) {
        free(buf);
        free(order);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    /* Sattolo's shuffle gives a single cycle through all n nodes, so the
     * chase visits the whole working set in an order the prefetchers cannot
     * predict. */
    for (size_t i = 0; i < n; i++) order[i] = i;
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (size_t i = n - 1; i > 0; i--) {
        const size_t j = (size_t)(xorshift(&seed) % i);
        const size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; i++)
        *(void **)(buf + order[i] * NODE_BYTES) = buf + order[(i + 1) % n] * NODE_BYTES;
    free(order);

    /* Warm-up: one full lap, at most 4M loads (a larger set cannot be
     * cache-resident anyway, and a lap of it would take seconds). */
    void *p = chase(buf, (uint64_t)n + 8 < MIN_LOADS ? (uint64_t)n + 8 : MIN_LOADS);
    uint64_t loads = 0;
    const double t0 = now_s();
    double dt;
    do {
        p = chase(p, BATCH_LOADS);
        loads += BATCH_LOADS;
        dt = now_s() - t0;
    } while (loads < min_loads && dt < min_s);
    /* Publish the end of the chain so the loads cannot be optimised away. */
    volatile uintptr_t sink = (uintptr_t)p;
    (void)sink;
    free(buf);
    *ns = dt * 1e9 / (double)loads;
    return HRMT_OK;
}

hrmt_status hrmt_chase_ns(size_t bytes, double *ns) {
    if (!ns || bytes / NODE_BYTES < 2) return HRMT_ERR_INVALID_ARG;
    /* Calibration: fewer loads than the probe; the fastest of two trials. */
    double best = 0.0;
    for (int t = 0; t < 2; t++) {
        double v;
        hrmt_status s = chase_timed(bytes, (uint64_t)1 << 18, 0.01, &v);
        if (s != HRMT_OK) return s;
        if (t == 0 || v < best) best = v;
    }
    *ns = best;
    return HRMT_OK;
}

/* ---- CUDA contexts: the device probes of src/cuda/probe_*.cu ---------------- */

static int on_cuda(const hrmt_context *ctx) {
    return ctx->backend_kind == HRMT_BACKEND_CUDA && ctx->cuda;
}

#if defined(HRMT_HAVE_CUDA)
#define GPU_MSG (HRMT_ERRMSG_LEN - 64) /* room for the function name in front */

/* A device probe's status, its message prefixed with the public name. */
static hrmt_status gpu_result(hrmt_context *ctx, hrmt_status s, const char *fn, const char *msg) {
    if (s == HRMT_OK) return HRMT_OK;
    return hrmt_fail(ctx, s, "%s: %s", fn, msg[0] ? msg : hrmt_status_str(s));
}
#endif

/* Context checks shared by the GPU-only probes: UNSUPPORTED off CUDA. */
static hrmt_status need_gpu(hrmt_context *ctx, const void *out, const char *fn) {
    if (!ctx || !out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: NULL argument", fn);
    if (!on_cuda(ctx))
        return hrmt_fail(
            ctx, HRMT_ERR_UNSUPPORTED, "%s: needs a CUDA context (this one is %s)", fn,
            ctx->backend_kind == HRMT_BACKEND_CUDA ? "CUDA without a device" : "a CPU context");
    return HRMT_OK;
}

hrmt_status hrmt_probe_gpu_caps(hrmt_context *ctx, hrmt_gpu_caps *out) {
    hrmt_status s = need_gpu(ctx, out, "hrmt_probe_gpu_caps");
    if (s != HRMT_OK) return s;
#if defined(HRMT_HAVE_CUDA)
    {
        char msg[GPU_MSG] = "";
        return gpu_result(ctx, hrmt_cuda_probe_caps(ctx->cuda, out, msg, sizeof msg),
                          "hrmt_probe_gpu_caps", msg);
    }
#else
    return HRMT_ERR_UNSUPPORTED;
#endif
}

hrmt_status hrmt_probe_smem_latency(hrmt_context *ctx, size_t bytes, double *ns_per_load) {
    hrmt_status s = need_gpu(ctx, ns_per_load, "hrmt_probe_smem_latency");
    if (s != HRMT_OK) return s;
#if defined(HRMT_HAVE_CUDA)
    {
        char msg[GPU_MSG] = "";
        return gpu_result(
            ctx, hrmt_cuda_probe_smem_latency(ctx->cuda, bytes, ns_per_load, msg, sizeof msg),
            "hrmt_probe_smem_latency", msg);
    }
#else
    (void)bytes;
    return HRMT_ERR_UNSUPPORTED;
#endif
}

hrmt_status hrmt_probe_smem_bandwidth(hrmt_context *ctx, size_t bytes_per_block,
                                      hrmt_bandwidth *out, size_t *total_bytes) {
    hrmt_status s = need_gpu(ctx, out, "hrmt_probe_smem_bandwidth");
    if (s != HRMT_OK) return s;
#if defined(HRMT_HAVE_CUDA)
    {
        char msg[GPU_MSG] = "";
        return gpu_result(ctx,
                          hrmt_cuda_probe_smem_bandwidth(ctx->cuda, bytes_per_block, out,
                                                         total_bytes, msg, sizeof msg),
                          "hrmt_probe_smem_bandwidth", msg);
    }
#else
    (void)bytes_per_block;
    if (total_bytes) *total_bytes = 0;
    return HRMT_ERR_UNSUPPORTED;
#endif
}

/* ---- public probes --------------------------------------------------------- */

hrmt_status hrmt_probe_latency(hrmt_context *ctx, size_t working_set_bytes, double *ns_per_load) {
    if (!ctx || !ns_per_load)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "hrmt_probe_latency: NULL argument");
    if (working_set_bytes / NODE_BYTES < 2)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG,
                         "hrmt_probe_latency: working set %zu bytes is below two %d-byte nodes",
                         working_set_bytes, NODE_BYTES);
#if defined(HRMT_HAVE_CUDA)
    if (on_cuda(ctx)) {
        char msg[GPU_MSG] = "";
        return gpu_result(
            ctx,
            hrmt_cuda_probe_latency(ctx->cuda, working_set_bytes, ns_per_load, msg, sizeof msg),
            "hrmt_probe_latency", msg);
    }
#endif
    if (chase_timed(working_set_bytes, MIN_LOADS, MIN_SECONDS, ns_per_load) != HRMT_OK)
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY,
                         "hrmt_probe_latency: cannot allocate %zu bytes", working_set_bytes);
    return HRMT_OK;
}

typedef enum { BW_READ, BW_WRITE, BW_COPY } bw_kind;

/* One timed trial: every thread streams its slice `reps` times. */
static double bw_trial(const hrmt_context *ctx, bw_kind kind, char *buf, size_t bytes, size_t reps,
                       uint64_t *sink) {
    const hrmt_rowops *k = &ctx->be->rowops;
    uint64_t acc = 0;
    double t0 = 0.0, t1 = 0.0;
#pragma omp parallel num_threads(ctx->threads) reduction(^ : acc)
    {
        const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
        /* Slices are cache-line aligned so threads never share a line. */
        const size_t half = bytes / 2 / 64 * 64, span = kind == BW_COPY ? half : bytes / 64 * 64;
        const size_t lines = span / 64, l0 = lines * id / nt, l1 = lines * (id + 1) / nt;
        char *mine = buf + l0 * 64;
        const size_t len = (l1 - l0) * 64;
#pragma omp barrier
#pragma omp master
        t0 = now_s();
#pragma omp barrier
        for (size_t r = 0; r < reps && len > 0; r++) {
            if (kind == BW_READ)
                acc ^= k->stream_read(mine, len);
            else if (kind == BW_WRITE)
                k->stream_write(mine, len, (uint8_t)r);
            else
                k->copy(mine + half, mine, len);
        }
#pragma omp barrier
#pragma omp master
        t1 = now_s();
    }
    *sink ^= acc;
    return t1 - t0;
}

hrmt_status hrmt_probe_bandwidth(hrmt_context *ctx, size_t working_set_bytes, hrmt_bandwidth *out) {
    if (!ctx || !out)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "hrmt_probe_bandwidth: NULL argument");
#if defined(HRMT_HAVE_CUDA)
    if (on_cuda(ctx)) {
        if (working_set_bytes < 128)
            return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG,
                             "hrmt_probe_bandwidth: working set %zu bytes is below 128 bytes",
                             working_set_bytes);
        char msg[GPU_MSG] = "";
        return gpu_result(
            ctx, hrmt_cuda_probe_bandwidth(ctx->cuda, working_set_bytes, out, msg, sizeof msg),
            "hrmt_probe_bandwidth", msg);
    }
#endif
    if (working_set_bytes < (size_t)128 * (size_t)ctx->threads)
        return hrmt_fail(
            ctx, HRMT_ERR_INVALID_ARG,
            "hrmt_probe_bandwidth: working set %zu bytes is below 128 bytes per thread",
            working_set_bytes);
    char *buf = probe_alloc(working_set_bytes);
    if (!buf)
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY,
                         "hrmt_probe_bandwidth: cannot allocate %zu bytes", working_set_bytes);
    memset(buf, 1, working_set_bytes); /* fault the pages in before timing */
    const size_t reps = working_set_bytes >= BW_MIN_TRIAL_BYTES
                            ? 1
                            : (BW_MIN_TRIAL_BYTES + working_set_bytes - 1) / working_set_bytes;
    const size_t lines_bytes = working_set_bytes / 64 * 64;
    const size_t copy_bytes = 2 * (working_set_bytes / 2 / 64 * 64);
    double best[3] = {0, 0, 0};
    uint64_t sink = 0;
    for (int kind = BW_READ; kind <= BW_COPY; kind++) {
        const double moved = (double)(kind == BW_COPY ? copy_bytes : lines_bytes) * (double)reps;
        bw_trial(ctx, (bw_kind)kind, buf, working_set_bytes, 1, &sink); /* warm-up */
        for (int t = 0; t < BW_TRIALS; t++) {
            const double dt = bw_trial(ctx, (bw_kind)kind, buf, working_set_bytes, reps, &sink);
            const double gbps = dt > 0 ? moved / dt * 1e-9 : 0.0;
            if (gbps > best[kind]) best[kind] = gbps;
        }
    }
    volatile uint64_t keep = sink;
    (void)keep;
    free(buf);
    out->read_gbps = best[BW_READ];
    out->write_gbps = best[BW_WRITE];
    out->copy_gbps = best[BW_COPY];
    return HRMT_OK;
}
