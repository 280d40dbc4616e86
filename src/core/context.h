/* The context's private layout, shared by core, model and CLI-internal code. */
#ifndef HRMT_CORE_CONTEXT_H
#define HRMT_CORE_CONTEXT_H

#include "core/backend.h"
#include "hrmt.h"

#define HRMT_ERRMSG_LEN 512

struct hrmt_cuda; /* src/cuda/cuda_backend.h; opaque here */

struct hrmt_context {
    hrmt_backend_kind backend_kind;
    hrmt_isa isa;           /* CPU ISA (on CUDA: the host-side table's, e.g. for the tile plan) */
    const hrmt_backend *be; /* kernel table in use (the CUDA table on CUDA contexts) */
    struct hrmt_cuda *cuda; /* CUDA state (device, cuBLASLt); NULL on CPU contexts */
    int threads;            /* OpenMP team size for this context's ops */
    hrmt_topology topo;
    hrmt_tile_plan plan; /* after HRMT_GEMM_KC/MC/NC overrides */
    hrmt_tiers *tiers;
    hrmt_limits limits; /* checked by the loaders, the config and the carry (core/limits.h) */
    int cuda_graphs;    /* CUDA: ACT steps replayed as CUDA graphs (opts->cuda_graphs resolved) */
    struct hrmt_gemm_trace *gemm_trace; /* HRMT_GEMM_TRACE=1 (core/gemm_trace.h); else NULL */
    char err[HRMT_ERRMSG_LEN];
};

/* Records a formatted message in ctx (may be NULL) and returns `s`, so error
 * paths read `return hrmt_fail(ctx, HRMT_ERR_SHAPE, "x has %d dims", n);`. */
hrmt_status hrmt_fail(hrmt_context *ctx, hrmt_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Device where this context's tensors must live (HOST for CPU contexts). */
static inline hrmt_device hrmt_ctx_device(const hrmt_context *ctx) {
    return ctx->backend_kind == HRMT_BACKEND_CUDA ? HRMT_DEVICE_CUDA : HRMT_DEVICE_HOST;
}

#endif
