/* Context: backend choice, threads, topology, tile plan, tier manager. */
#include "core/context.h"

#include <errno.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hrmt_status hrmt_fail(hrmt_context *ctx, hrmt_status s, const char *fmt, ...) {
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
    }
    return s;
}

hrmt_context_options hrmt_context_default_options(void) {
    hrmt_context_options o;
    memset(&o, 0, sizeof o);
    o.backend = HRMT_BACKEND_CPU;
    o.event_log_enabled = 1;
    return o;
}

static void set_errbuf(char *buf, size_t len, const char *fmt, ...) {
    if (!buf || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Parses a positive byte count from the environment; 0 when unset. */
static hrmt_status env_size(const char *name, size_t *out, char *errbuf, size_t errlen) {
    const char *v = getenv(name);
    *out = 0;
    if (!v || !*v) return HRMT_OK;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x == 0 || v[0] == '-') {
        set_errbuf(errbuf, errlen, "%s='%s' is not a positive integer", name, v);
        return HRMT_ERR_INVALID_ARG;
    }
    *out = (size_t)x;
    return HRMT_OK;
}

static hrmt_status choose_isa(const char *want, hrmt_isa *out, char *errbuf, size_t errlen) {
    if (!want || !*want) want = getenv("HRMT_ISA");
    if (!want || !*want) {
        *out = hrmt_backend_best_isa();
        return HRMT_OK;
    }
    hrmt_isa isa;
    if (hrmt_isa_parse(want, &isa) != HRMT_OK) {
        set_errbuf(errbuf, errlen, "unknown ISA '%s' (valid: scalar, avx2, avx512, neon)", want);
        return HRMT_ERR_ISA;
    }
    if (!hrmt_backend_cpu(isa)) {
        set_errbuf(errbuf, errlen, "ISA '%s' is not supported by this CPU or this build", want);
        return HRMT_ERR_ISA;
    }
    *out = isa;
    return HRMT_OK;
}

hrmt_status hrmt_context_create(const hrmt_context_options *opts, hrmt_context **out, char *errbuf,
                                size_t errbuf_len) {
    if (!out) return HRMT_ERR_INVALID_ARG;
    *out = NULL;
    hrmt_context_options o = opts ? *opts : hrmt_context_default_options();
    if (o.num_threads < 0 || o.num_threads > 4096) {
        set_errbuf(errbuf, errbuf_len, "num_threads %d out of range 0..4096", o.num_threads);
        return HRMT_ERR_INVALID_ARG;
    }
    if (o.backend == HRMT_BACKEND_CUDA) {
        hrmt_cuda_info ci;
        if (hrmt_cuda_query(&ci) != HRMT_OK || !ci.built || ci.device_count == 0) {
            set_errbuf(errbuf, errbuf_len, "CUDA backend requested but %s",
                       ci.built ? "no CUDA device is present" : "hrmt was built without CUDA");
            return HRMT_ERR_NO_DEVICE;
        }
    } else if (o.backend != HRMT_BACKEND_CPU) {
        set_errbuf(errbuf, errbuf_len, "unknown backend %d", (int)o.backend);
        return HRMT_ERR_INVALID_ARG;
    }

    hrmt_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        set_errbuf(errbuf, errbuf_len, "out of memory allocating the context");
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    ctx->backend_kind = o.backend;
    hrmt_status s = choose_isa(o.isa, &ctx->isa, errbuf, errbuf_len);
    if (s != HRMT_OK) goto fail;
    ctx->be = hrmt_backend_cpu(ctx->isa);
    ctx->threads = o.num_threads > 0 ? o.num_threads : omp_get_max_threads();

    s = hrmt_topology_detect(&ctx->topo);
    if (s != HRMT_OK) {
        set_errbuf(errbuf, errbuf_len, "cache topology: %s (check HRMT_CACHE_L1D/L2/L3)",
                   hrmt_status_str(s));
        goto fail;
    }
    s = hrmt_tile_plan_compute(&ctx->topo, ctx->be->gemm.mr, ctx->be->gemm.nr, 4, &ctx->plan);
    if (s != HRMT_OK) {
        set_errbuf(errbuf, errbuf_len, "tile plan: %s", hrmt_status_str(s));
        goto fail;
    }
    /* Experiment knobs: override the analytical blocking. */
    size_t kc, mc, nc;
    if ((s = env_size("HRMT_GEMM_KC", &kc, errbuf, errbuf_len)) != HRMT_OK ||
        (s = env_size("HRMT_GEMM_MC", &mc, errbuf, errbuf_len)) != HRMT_OK ||
        (s = env_size("HRMT_GEMM_NC", &nc, errbuf, errbuf_len)) != HRMT_OK)
        goto fail;
    if (kc) ctx->plan.gemm_kc = kc;
    if (mc) ctx->plan.gemm_mc = mc;
    if (nc) ctx->plan.gemm_nc = nc;

    size_t sram = o.sram_tier_bytes ? o.sram_tier_bytes : ctx->plan.sram_tier_bytes;
    s = hrmt_tiers_create(sram, o.event_log_cap, &ctx->tiers);
    if (s != HRMT_OK) {
        set_errbuf(errbuf, errbuf_len, "tier manager: %s", hrmt_status_str(s));
        goto fail;
    }
    hrmt_tiers_set_event_log(ctx->tiers, o.event_log_enabled, 0);
    *out = ctx;
    return HRMT_OK;
fail:
    hrmt_context_destroy(ctx);
    return s;
}

void hrmt_context_destroy(hrmt_context *ctx) {
    if (!ctx) return;
    hrmt_tiers_destroy(ctx->tiers);
    free(ctx);
}

const char *hrmt_last_error(const hrmt_context *ctx) { return ctx ? ctx->err : ""; }
hrmt_isa hrmt_context_isa(const hrmt_context *ctx) { return ctx->isa; }
int hrmt_context_threads(const hrmt_context *ctx) { return ctx->threads; }
const hrmt_topology *hrmt_context_topology(const hrmt_context *ctx) { return &ctx->topo; }
const hrmt_tile_plan *hrmt_context_tile_plan(const hrmt_context *ctx) { return &ctx->plan; }
hrmt_backend_kind hrmt_context_backend(const hrmt_context *ctx) { return ctx->backend_kind; }
hrmt_tiers *hrmt_context_tiers(hrmt_context *ctx) { return ctx ? ctx->tiers : NULL; }

int hrmt_supports(const hrmt_context *ctx, hrmt_op op, hrmt_dtype dtype) {
    return ctx ? hrmt_backend_supports(ctx->be, op, dtype) : 0;
}

static const char *const g_op_names[HRMT_OP_COUNT] = {
    "copy",     "convert", "add",       "rmsnorm",         "residual_rmsnorm", "swiglu",
    "softmax",  "rope",    "embedding", "engram_gate_fwd", "engram_gate_bwd",  "gemm",
    "attention"};

const char *hrmt_op_name(hrmt_op op) { return (unsigned)op < HRMT_OP_COUNT ? g_op_names[op] : "?"; }
