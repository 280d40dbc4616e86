/* Context: backend choice, threads, topology, tile plan, tier manager. */
#include "core/context.h"

#include <errno.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/gemm_trace.h"
#include "core/limits.h"

#if defined(HRMT_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

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

/* Backend: opts->backend, except that the default (CPU, or NULL opts) yields
 * to HRMT_BACKEND=cpu|cuda; CUDA also reads HRMT_CUDA_DEVICE. Checks that a
 * CUDA request can be served before anything is allocated. */
static hrmt_status choose_backend(const hrmt_context_options *opts, hrmt_backend_kind *kind,
                                  int *device, char *errbuf, size_t errlen) {
    if (*kind == HRMT_BACKEND_CPU || !opts) {
        const char *v = getenv("HRMT_BACKEND");
        if (v && *v) {
            if (!strcmp(v, "cuda")) {
                *kind = HRMT_BACKEND_CUDA;
            } else if (strcmp(v, "cpu") != 0) {
                set_errbuf(errbuf, errlen, "HRMT_BACKEND='%s' is not a backend (cpu, cuda)", v);
                return HRMT_ERR_INVALID_ARG;
            }
        }
    }
    if (*kind == HRMT_BACKEND_CPU) return HRMT_OK;
    if (*kind != HRMT_BACKEND_CUDA) {
        set_errbuf(errbuf, errlen, "unknown backend %d", (int)*kind);
        return HRMT_ERR_INVALID_ARG;
    }
    const char *d = getenv("HRMT_CUDA_DEVICE");
    *device = 0;
    if (d && *d) {
        char *end = NULL;
        errno = 0;
        long v = strtol(d, &end, 10);
        if (errno || *end || v < 0 || v > 1024) {
            set_errbuf(errbuf, errlen, "HRMT_CUDA_DEVICE='%s' is not a device ordinal", d);
            return HRMT_ERR_INVALID_ARG;
        }
        *device = (int)v;
    }
    hrmt_cuda_info ci;
    if (hrmt_cuda_query(&ci) != HRMT_OK || !ci.built || ci.device_count == 0) {
        set_errbuf(errbuf, errlen, "CUDA backend requested but %s",
                   ci.built ? "no CUDA device is present (no driver or no GPU)"
                            : "hrmt was built without CUDA");
        return HRMT_ERR_NO_DEVICE;
    }
    return HRMT_OK;
}

/* Opens the device, switches ctx to the CUDA table; *sram = shared memory
 * per SM, the device's closest analogue of a core's private cache. */
static hrmt_status open_cuda(hrmt_context *ctx, int device, size_t *sram, char *errbuf,
                             size_t errlen) {
#if defined(HRMT_HAVE_CUDA)
    hrmt_status s = hrmt_cuda_create(device, &ctx->cuda, errbuf, errlen);
    if (s != HRMT_OK) return s;
    size_t per_sm = 0;
    hrmt_cuda_limits(ctx->cuda, NULL, &per_sm, NULL, NULL);
    if (per_sm) *sram = per_sm;
    ctx->be = hrmt_backend_cuda();
    return HRMT_OK;
#else
    (void)ctx;
    (void)device;
    *sram = 0; /* unused: creation fails */
    set_errbuf(errbuf, errlen, "CUDA backend requested but hrmt was built without CUDA");
    return HRMT_ERR_NO_DEVICE;
#endif
}

static hrmt_status choose_isa(const char *want, hrmt_isa *out, char *errbuf, size_t errlen) {
    if (!want || !*want) want = getenv("HRMT_ISA");
    if (!want || !*want) {
        *out = hrmt_backend_best_isa();
        return HRMT_OK;
    }
    hrmt_isa isa;
    if (hrmt_isa_parse(want, &isa) != HRMT_OK) {
        set_errbuf(errbuf, errlen, "unknown ISA '%s' (valid: scalar, avx2, avx512, neon, amx)",
                   want);
        return HRMT_ERR_ISA;
    }
    if (!hrmt_backend_cpu(isa)) {
        set_errbuf(errbuf, errlen, "ISA '%s' is not supported by this CPU or this build%s", want,
                   isa == HRMT_ISA_AMX ? " (amx needs AMX-BF16 and AVX512-BF16, the tile state "
                                         "enabled in XCR0 and the OS's permission for it)"
                                       : "");
        return HRMT_ERR_ISA;
    }
    *out = isa;
    return HRMT_OK;
}

/* The team size: num_threads, else the OpenMP default (OMP_NUM_THREADS or
 * the core count). Either above limits->threads is an error, not a clamp:
 * per-thread scratch is sized from it, and a silent cap would hide a typo. */
static hrmt_status choose_threads(int requested, const hrmt_limits *limits, int *out, char *errbuf,
                                  size_t errlen) {
    char msg[HRMT_ERRMSG_LEN];
    if (requested < 0) {
        set_errbuf(errbuf, errlen, "num_threads %d is negative (0 means the OpenMP default)",
                   requested);
        return HRMT_ERR_INVALID_ARG;
    }
    if (requested > limits->threads) {
        hrmt_limit_message(msg, sizeof msg, limits, HRMT_LIMIT_THREADS, "num_threads", requested);
        set_errbuf(errbuf, errlen, "%s", msg);
        return HRMT_ERR_LIMIT;
    }
    if (requested > 0) {
        *out = requested;
        return HRMT_OK;
    }
    int omp = omp_get_max_threads();
    if (omp > limits->threads) {
        const char *env = getenv("OMP_NUM_THREADS");
        int set = env && *env;
        hrmt_limit_message(msg, sizeof msg, limits, HRMT_LIMIT_THREADS,
                           set ? "OMP_NUM_THREADS" : "the OpenMP default thread count (cores)",
                           omp);
        set_errbuf(errbuf, errlen, "%s%s", msg,
                   set ? "" : "; or set OMP_NUM_THREADS or num_threads (--threads)");
        return HRMT_ERR_LIMIT;
    }
    *out = omp > 0 ? omp : 1;
    return HRMT_OK;
}

/* 1 when the variable is set to "0" (an opt-out switch). */
static int env_is_zero(const char *name) {
    const char *v = getenv(name);
    return v && !strcmp(v, "0");
}

/* CUDA graphs: opts->cuda_graphs (-1 off, 1 on), else HRMT_CUDA_GRAPHS=0|1,
 * else on. Read on CUDA contexts only, like HRMT_CUDA_DEVICE. */
static hrmt_status choose_graphs(const hrmt_context_options *o, int *on, char *errbuf,
                                 size_t errlen) {
    *on = 0;
    if (o->cuda_graphs < -1 || o->cuda_graphs > 1) {
        set_errbuf(errbuf, errlen, "cuda_graphs %d is not -1 (off), 0 (default) or 1 (on)",
                   o->cuda_graphs);
        return HRMT_ERR_INVALID_ARG;
    }
    if (o->backend != HRMT_BACKEND_CUDA) return HRMT_OK;
    if (o->cuda_graphs != 0) {
        *on = o->cuda_graphs > 0;
        return HRMT_OK;
    }
    const char *v = getenv("HRMT_CUDA_GRAPHS");
    if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0) {
        set_errbuf(errbuf, errlen, "HRMT_CUDA_GRAPHS='%s' is not 0 or 1", v);
        return HRMT_ERR_INVALID_ARG;
    }
    *on = !env_is_zero("HRMT_CUDA_GRAPHS");
    return HRMT_OK;
}

hrmt_status hrmt_context_create(const hrmt_context_options *opts, hrmt_context **out, char *errbuf,
                                size_t errbuf_len) {
    if (!out) return HRMT_ERR_INVALID_ARG;
    *out = NULL;
    hrmt_context_options o = opts ? *opts : hrmt_context_default_options();
    hrmt_limits limits;
    hrmt_status sl = o.limits ? hrmt_limits_check(o.limits, errbuf, errbuf_len)
                              : hrmt_limits_from_env(&limits, errbuf, errbuf_len);
    if (sl != HRMT_OK) return sl;
    if (o.limits) limits = *o.limits;
    int threads = 0;
    sl = choose_threads(o.num_threads, &limits, &threads, errbuf, errbuf_len);
    if (sl != HRMT_OK) return sl;
    int cuda_device = 0;
    hrmt_status sb = choose_backend(opts, &o.backend, &cuda_device, errbuf, errbuf_len);
    if (sb != HRMT_OK) return sb;
    int cuda_graphs = 0;
    sb = choose_graphs(&o, &cuda_graphs, errbuf, errbuf_len);
    if (sb != HRMT_OK) return sb;

    hrmt_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        set_errbuf(errbuf, errbuf_len, "out of memory allocating the context");
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    ctx->backend_kind = o.backend;
    ctx->cuda_graphs = cuda_graphs;
    hrmt_status s = choose_isa(o.isa, &ctx->isa, errbuf, errbuf_len);
    if (s != HRMT_OK) goto fail;
    ctx->be = hrmt_backend_cpu(ctx->isa);
    ctx->threads = threads;
    ctx->limits = limits;

    s = hrmt_topology_detect(&ctx->topo);
    if (s != HRMT_OK) {
        set_errbuf(errbuf, errbuf_len, "cache topology: %s (check HRMT_CACHE_L1D/L2/L3)",
                   hrmt_status_str(s));
        goto fail;
    }
    if (hrmt_topology_needs_calibration(&ctx->topo) && !env_is_zero("HRMT_CALIBRATE")) {
        s = hrmt_topology_calibrate(&ctx->topo, hrmt_usable_cores());
        if (s != HRMT_OK) {
            set_errbuf(errbuf, errbuf_len, "cache calibration: %s (HRMT_CALIBRATE=0 skips it)",
                       hrmt_status_str(s));
            goto fail;
        }
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
    if ((s = hrmt_gemm_trace_from_env(&ctx->gemm_trace, errbuf, errbuf_len)) != HRMT_OK) goto fail;
    if (kc) ctx->plan.gemm_kc = kc;
    if (mc) ctx->plan.gemm_mc = mc;
    if (nc) ctx->plan.gemm_nc = nc;

    /* CUDA: the CPU table above served the topology and tile plan (host-side
     * code uses them); the ops run on the device table from here on. */
    size_t sram_default = ctx->plan.sram_tier_bytes;
    if (o.backend == HRMT_BACKEND_CUDA) {
        s = open_cuda(ctx, cuda_device, &sram_default, errbuf, errbuf_len);
        if (s != HRMT_OK) goto fail;
    }
    size_t sram = o.sram_tier_bytes ? o.sram_tier_bytes : sram_default;
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
    hrmt_gemm_trace_destroy(ctx->gemm_trace);
#if defined(HRMT_HAVE_CUDA)
    hrmt_cuda_destroy(ctx->cuda);
#endif
    free(ctx);
}

const char *hrmt_last_error(const hrmt_context *ctx) { return ctx ? ctx->err : ""; }

const hrmt_limits *hrmt_context_limits(const hrmt_context *ctx) { return hrmt_limits_of(ctx); }

hrmt_status hrmt_context_set_limits(hrmt_context *ctx, const hrmt_limits *limits) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    hrmt_status s = hrmt_limits_check(limits, ctx->err, sizeof ctx->err);
    if (s == HRMT_OK) ctx->limits = *limits;
    return s;
}
hrmt_isa hrmt_context_isa(const hrmt_context *ctx) { return ctx->isa; }
int hrmt_context_threads(const hrmt_context *ctx) { return ctx->threads; }
const hrmt_topology *hrmt_context_topology(const hrmt_context *ctx) { return &ctx->topo; }
const hrmt_tile_plan *hrmt_context_tile_plan(const hrmt_context *ctx) { return &ctx->plan; }
hrmt_backend_kind hrmt_context_backend(const hrmt_context *ctx) { return ctx->backend_kind; }
int hrmt_context_cuda_graphs(const hrmt_context *ctx) {
    return ctx && ctx->backend_kind == HRMT_BACKEND_CUDA && ctx->cuda_graphs;
}
hrmt_tiers *hrmt_context_tiers(hrmt_context *ctx) { return ctx ? ctx->tiers : NULL; }

int hrmt_supports(const hrmt_context *ctx, hrmt_op op, hrmt_dtype dtype) {
    return ctx ? hrmt_backend_supports(ctx->be, op, dtype) : 0;
}

static const char *const g_op_names[HRMT_OP_COUNT] = {
    "copy",     "convert", "add",       "rmsnorm",         "residual_rmsnorm", "swiglu",
    "softmax",  "rope",    "embedding", "engram_gate_fwd", "engram_gate_bwd",  "gemm",
    "attention"};

const char *hrmt_op_name(hrmt_op op) { return (unsigned)op < HRMT_OP_COUNT ? g_op_names[op] : "?"; }
