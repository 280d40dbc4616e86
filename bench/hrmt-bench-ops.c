/* hrmt-bench-ops: bandwidth of every row op against a plain copy, side by
 * side in one run, for a working set inside L2 and one far beyond L3.
 *
 * Bytes are the minimum traffic: each input read once, each output written
 * once (an in-place op counts its tensor twice). The copy moves the same
 * number of bytes (half read, half written) through hrmt_copy on the same
 * context. Each repetition runs the copy and the op back to back (so load
 * from other processes hits both alike); a measurement times single calls
 * for >= --min-ms and keeps the fastest; the best of --reps repetitions is
 * reported.
 *
 * Usage: hrmt-bench-ops [--isa NAME] [--threads N] [--reps R] [--min-ms T]
 *                       [--large-mib M] [--op NAME]... [--set L2|DRAM] [--json] [--help] */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hrmt.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef enum {
    OP_CONVERT,
    OP_ADD,
    OP_RMSNORM,
    OP_RESID_SRAM,
    OP_RESID_DRAM,
    OP_SWIGLU,
    OP_SOFTMAX,
    OP_ROPE,
    OP_EMBEDDING,
    OP_ENGRAM_FWD,
    OP_ENGRAM_BWD,
    OP_N
} op_kind;

static const char *const k_names[OP_N] = {
    "convert", "add",  "rmsnorm",   "residual_rmsnorm_sram", "residual_rmsnorm_dram", "swiglu",
    "softmax", "rope", "embedding", "engram_gate_fwd",       "engram_gate_bwd"};

/* size_t, so that byte counts are computed in size_t. */
#define COLS ((size_t)4096) /* hidden size of the row ops */
#define HEADS ((size_t)8)   /* rope: 8 heads of 64 */
#define HD ((size_t)64)
#define HC ((size_t)4) /* engram: hc_mult 4, hidden 4096 */

/* One benchmark case: its tensors and the bytes one call moves. */
typedef struct bcase {
    op_kind op;
    hrmt_dtype dt;
    size_t bytes;
    hrmt_tensor t[12];
    void *mem[12];
    int n;
} bcase;

static void die(const char *what, hrmt_context *ctx) {
    fprintf(stderr, "hrmt-bench-ops: %s: %s\n", what, ctx ? hrmt_last_error(ctx) : "out of memory");
    exit(1);
}

/* Adds a tensor filled with small values (bit patterns valid in its dtype). */
static hrmt_tensor *add_tensor(bcase *c, hrmt_dtype dt, int ndim, const size_t *shape) {
    hrmt_tensor *t = &c->t[c->n];
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    const size_t es = hrmt_dtype_size(dt);
    void *p = aligned_alloc(64, (n * es + 63) / 64 * 64);
    if (!p) die("allocation", NULL);
    uint64_t s = 0x9E3779B97F4A7C15ull + (uint64_t)c->n;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const float v = (float)((double)(s >> 40) / (double)(1 << 24) - 0.5);
        if (dt == HRMT_F32)
            ((float *)p)[i] = v;
        else if (dt == HRMT_BF16) {
            uint32_t u;
            memcpy(&u, &v, 4);
            ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
        } else
            ((int32_t *)p)[i] = 0;
    }
    hrmt_tensor_init(t, p, dt, ndim, shape);
    c->mem[c->n++] = p;
    return t;
}

static void free_case(bcase *c) {
    for (int i = 0; i < c->n; i++) free(c->mem[i]);
    c->n = 0;
}

/* Builds `op` in dtype `dt` sized to about `ws` bytes of traffic. */
static void build(bcase *c, op_kind op, hrmt_dtype dt, size_t ws) {
    memset(c, 0, sizeof *c);
    c->op = op;
    c->dt = dt;
    const size_t es = hrmt_dtype_size(dt);
    size_t rows;
    switch (op) {
    case OP_CONVERT: {
        const hrmt_dtype other = dt == HRMT_F32 ? HRMT_BF16 : HRMT_F32;
        rows = ws / (COLS * 6) + 1;
        const size_t s[2] = {rows, COLS};
        add_tensor(c, dt, 2, s);
        add_tensor(c, other, 2, s);
        c->bytes = rows * COLS * 6;
        break;
    }
    case OP_ADD:
    case OP_RESID_SRAM:
    case OP_RESID_DRAM: {
        rows = ws / (COLS * 3 * es) + 1;
        const size_t s[2] = {rows, COLS};
        for (int i = 0; i < 3; i++) add_tensor(c, dt, 2, s);
        c->bytes = rows * COLS * 3 * es;
        break;
    }
    case OP_RMSNORM:
    case OP_SOFTMAX: {
        rows = ws / (COLS * 2 * es) + 1;
        const size_t s[2] = {rows, COLS};
        add_tensor(c, dt, 2, s);
        add_tensor(c, dt, 2, s);
        c->bytes = rows * COLS * 2 * es;
        break;
    }
    case OP_SWIGLU: {
        rows = ws / (COLS * 3 * es) + 1;
        const size_t s2[2] = {rows, 2 * COLS}, s[2] = {rows, COLS};
        add_tensor(c, dt, 2, s2);
        add_tensor(c, dt, 2, s);
        c->bytes = rows * COLS * 3 * es;
        break;
    }
    case OP_ROPE: {
        const size_t per_tok = HEADS * HD * 2 * es + HD * 2 * 4;
        rows = ws / per_tok + 1;
        const size_t s[3] = {rows, HEADS, HD}, cs[2] = {rows, HD};
        add_tensor(c, dt, 3, s);
        hrmt_tensor *co = add_tensor(c, HRMT_F32, 2, cs), *si = add_tensor(c, HRMT_F32, 2, cs);
        (void)co, (void)si;
        c->bytes = rows * per_tok;
        break;
    }
    case OP_EMBEDDING: {
        rows = ws / (COLS * 2 * es + 4) + 1;
        const size_t s[2] = {rows, COLS};
        add_tensor(c, dt, 2, s);
        hrmt_tensor *ids = add_tensor(c, HRMT_I32, 1, &rows);
        for (size_t i = 0; i < rows; i++) ((int32_t *)ids->data)[i] = (int32_t)((i * 7919u) % rows);
        add_tensor(c, dt, 2, s);
        c->bytes = rows * (COLS * 2 * es + 4);
        break;
    }
    case OP_ENGRAM_FWD:
    case OP_ENGRAM_BWD: {
        /* fwd: x, kv in; out, dot/gate/rstd_x/rstd_k out.
         * bwd: grad_out, x, kv, saved 4 in; grad_x, grad_kv out; wf read,
         * grad_wf written once */
        const size_t fwd_tok = (HC + HC + 1 + HC) * COLS * 2 + 4 * HC * 4;
        const size_t bwd_tok = (HC + HC + HC + 1 + HC + HC + 1) * COLS * 2 + 4 * HC * 4;
        const size_t per_tok = op == OP_ENGRAM_FWD ? fwd_tok : bwd_tok;
        rows = ws / per_tok + 1;
        const size_t xs[3] = {rows, HC, COLS}, kvs[3] = {rows, HC + 1, COLS}, ws2[2] = {HC, COLS};
        const size_t ph[2] = {rows, HC};
        add_tensor(c, HRMT_BF16, 3, xs);                            /* 0 x */
        add_tensor(c, HRMT_BF16, 3, kvs);                           /* 1 kv */
        add_tensor(c, HRMT_F32, 2, ws2);                            /* 2 wf */
        add_tensor(c, HRMT_BF16, 3, xs);                            /* 3 out / grad_out */
        for (int i = 0; i < 4; i++) add_tensor(c, HRMT_F32, 2, ph); /* 4..7 saved */
        if (op == OP_ENGRAM_BWD) {
            add_tensor(c, HRMT_BF16, 3, xs);  /* 8 grad_x */
            add_tensor(c, HRMT_BF16, 3, kvs); /* 9 grad_kv */
            add_tensor(c, HRMT_F32, 2, ws2);  /* 10 grad_wf */
            for (size_t i = 0; i < rows * HC; i++) {
                ((float *)c->t[4].data)[i] = 3.0f; /* dot */
                ((float *)c->t[5].data)[i] = 0.7f; /* gate */
                ((float *)c->t[6].data)[i] = 3.4f; /* rstd_x */
                ((float *)c->t[7].data)[i] = 3.4f; /* rstd_k */
            }
        }
        c->bytes = rows * per_tok + HC * COLS * 4 * (op == OP_ENGRAM_BWD ? 2 : 1);
        break;
    }
    default: break;
    }
}

static void run_case(hrmt_context *ctx, bcase *c) {
    hrmt_tensor *t = c->t;
    hrmt_status s = HRMT_OK;
    switch (c->op) {
    case OP_CONVERT: s = hrmt_convert(ctx, &t[0], &t[1]); break;
    case OP_ADD: s = hrmt_add(ctx, &t[0], &t[1], &t[2]); break;
    case OP_RMSNORM: s = hrmt_rmsnorm(ctx, &t[0], NULL, 1e-5f, &t[1]); break;
    case OP_RESID_SRAM:
        s = hrmt_residual_rmsnorm(ctx, &t[0], &t[1], 1e-5f, HRMT_VARIANT_SRAM, &t[2]);
        break;
    case OP_RESID_DRAM:
        s = hrmt_residual_rmsnorm(ctx, &t[0], &t[1], 1e-5f, HRMT_VARIANT_DRAM, &t[2]);
        break;
    case OP_SWIGLU: s = hrmt_swiglu(ctx, &t[0], &t[1]); break;
    case OP_SOFTMAX: s = hrmt_softmax(ctx, &t[0], 0.125f, &t[1]); break;
    case OP_ROPE: s = hrmt_rope(ctx, &t[0], &t[1], &t[2]); break;
    case OP_EMBEDDING: s = hrmt_embedding(ctx, &t[0], &t[1], &t[2]); break;
    case OP_ENGRAM_FWD: {
        hrmt_engram_fwd_out o = {&t[3], &t[4], &t[5], &t[6], &t[7]};
        s = hrmt_engram_gate_fwd(ctx, &t[0], &t[1], &t[2], 1e-20f, 1e-6f, &o);
        break;
    }
    case OP_ENGRAM_BWD:
        s = hrmt_engram_gate_bwd(ctx, &t[3], &t[0], &t[1], &t[2], &t[4], &t[5], &t[6], &t[7], 1e-6f,
                                 &t[8], &t[9], &t[10]);
        break;
    default: break;
    }
    if (s != HRMT_OK) die(k_names[c->op], ctx);
}

/* Fastest single call, over calls spanning at least min_s (and 3 calls):
 * other processes on the machine can only make a call slower. */
static double time_calls(hrmt_context *ctx, bcase *c, double min_s) {
    run_case(ctx, c); /* warm-up: page faults, caches */
    double best = 1e30;
    const double t0 = now_s();
    for (long n = 0; n < 3 || now_s() - t0 < min_s; n++) {
        const double t = now_s();
        run_case(ctx, c);
        const double dt = now_s() - t;
        if (dt < best) best = dt;
    }
    return best;
}

typedef struct result {
    op_kind op;
    hrmt_dtype dt;
    const char *level;
    size_t bytes;
    double gbps, copy_gbps;
} result;

/* GB/s of hrmt_copy moving `half` floats (read + written both counted),
 * fastest single call as in time_calls. */
static double copy_gbps(hrmt_context *ctx, bcase *copy, size_t half, double min_s) {
    if (hrmt_copy(ctx, &copy->t[0], &copy->t[1]) != HRMT_OK) die("copy", ctx);
    double best = 1e30;
    const double t0 = now_s();
    for (long n = 0; n < 3 || now_s() - t0 < min_s; n++) {
        const double t = now_s();
        if (hrmt_copy(ctx, &copy->t[0], &copy->t[1]) != HRMT_OK) die("copy", ctx);
        const double dt = now_s() - t;
        if (dt < best) best = dt;
    }
    return (double)(2 * half * 4) / best * 1e-9;
}

static result measure(hrmt_context *ctx, op_kind op, hrmt_dtype dt, size_t ws, const char *level,
                      int reps, double min_s) {
    bcase c, copy;
    build(&c, op, dt, ws);
    memset(&copy, 0, sizeof copy);
    const size_t half = c.bytes / 8 + 1, cs[1] = {half};
    add_tensor(&copy, HRMT_F32, 1, cs);
    add_tensor(&copy, HRMT_F32, 1, cs);
    result r = {op, dt, level, c.bytes, 0, 0};
    for (int i = 0; i < reps; i++) {
        const double cg = copy_gbps(ctx, &copy, half, min_s);
        const double og = (double)c.bytes / time_calls(ctx, &c, min_s) * 1e-9;
        if (cg > r.copy_gbps) r.copy_gbps = cg;
        if (og > r.gbps) r.gbps = og;
    }
    free_case(&c);
    free_case(&copy);
    return r;
}

static void usage(int rc) {
    fprintf(rc ? stderr : stdout,
            "usage: hrmt-bench-ops [--isa NAME] [--threads N] [--reps R]\n"
            "                      [--min-ms T] [--large-mib M] [--op NAME]... [--set L2|DRAM]\n"
            "                      [--json]\n"
            "Bandwidth of each row op next to hrmt_copy of the same bytes, in one run.\n");
    exit(rc);
}

/* A whole decimal number in [lo, hi]; anything else is a usage error. */
static long arg_long(const char *s, long lo, long hi) {
    char *end = NULL;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) usage(2);
    return v;
}

/* A finite decimal number in [lo, hi]; anything else is a usage error. */
static double arg_double(const char *s, double lo, double hi) {
    char *end = NULL;
    errno = 0;
    const double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) usage(2);
    return v;
}

int main(int argc, char **argv) {
    hrmt_context_options o = hrmt_context_default_options();
    int reps = 3, json = 0;
    double min_ms = 30;
    size_t large_mib = 256;
    int want_op[OP_N] = {0}, any_op = 0;
    const char *only_set = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            usage(0);
        else if (!strcmp(a, "--json"))
            json = 1;
        else if (!strcmp(a, "--isa") && i + 1 < argc)
            o.isa = argv[++i];
        else if (!strcmp(a, "--threads") && i + 1 < argc)
            o.num_threads = (int)arg_long(argv[++i], 0, 4096);
        else if (!strcmp(a, "--reps") && i + 1 < argc)
            reps = (int)arg_long(argv[++i], 1, 1000);
        else if (!strcmp(a, "--min-ms") && i + 1 < argc)
            min_ms = arg_double(argv[++i], 0.0, 1e6);
        else if (!strcmp(a, "--large-mib") && i + 1 < argc)
            large_mib = (size_t)arg_long(argv[++i], 1, 1L << 20);
        else if (!strcmp(a, "--set") && i + 1 < argc)
            only_set = argv[++i];
        else if (!strcmp(a, "--op") && i + 1 < argc) {
            const char *name = argv[++i];
            int k = 0;
            while (k < OP_N && strcmp(name, k_names[k]) != 0) k++;
            if (k == OP_N) usage(2);
            want_op[k] = any_op = 1;
        } else
            usage(2);
    }
    hrmt_context *ctx = NULL;
    char err[256] = "";
    if (hrmt_context_create(&o, &ctx, err, sizeof err) != HRMT_OK) {
        fprintf(stderr, "hrmt-bench-ops: %s\n", err);
        return 1;
    }
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    size_t l2 = 0;
    for (int i = 0; i < topo->num_levels; i++)
        if (topo->caches[i].level == 2) l2 = topo->caches[i].size_bytes;
    if (!l2) l2 = (size_t)1 << 20;
    const struct {
        size_t ws;
        const char *level;
    } sizes[2] = {{l2 / 2, "L2"}, {large_mib << 20, "DRAM"}};
    const char *isa = hrmt_isa_name(hrmt_context_isa(ctx));
    result res[2 * OP_N * 2];
    int nres = 0;
    for (int s = 0; s < 2; s++)
        for (int op = 0; op < OP_N; op++)
            for (int d = 0; d < 2; d++) {
                if ((any_op && !want_op[op]) || (only_set && strcmp(only_set, sizes[s].level) != 0))
                    continue;
                const hrmt_dtype dt = d ? HRMT_BF16 : HRMT_F32;
                if ((op == OP_ENGRAM_FWD || op == OP_ENGRAM_BWD) && dt != HRMT_BF16) continue;
                res[nres++] =
                    measure(ctx, (op_kind)op, dt, sizes[s].ws, sizes[s].level, reps, min_ms * 1e-3);
            }
    if (json) {
        printf("[\n");
        for (int i = 0; i < nres; i++)
            printf(
                "  {\"op\": \"%s\", \"dtype\": \"%s\", \"isa\": \"%s\", \"level\": \"%s\", \"bytes\": %zu, "
                "\"gbps\": %.3f, \"copy_gbps\": %.3f, \"ratio\": %.4f}%s\n",
                k_names[res[i].op], hrmt_dtype_name(res[i].dt), isa, res[i].level, res[i].bytes,
                res[i].gbps, res[i].copy_gbps, res[i].gbps / res[i].copy_gbps,
                i + 1 < nres ? "," : "");
        printf("]\n");
    } else {
        printf(
            "hrmt-bench-ops: isa %s, %d threads, best of %d; bytes = inputs read once + outputs "
            "written once\n",
            isa, hrmt_context_threads(ctx), reps);
        printf("%-22s %-5s %-5s %12s %9s %9s %7s\n", "op", "dtype", "set", "bytes", "GB/s", "copy",
               "ratio");
        for (int i = 0; i < nres; i++)
            printf("%-22s %-5s %-5s %12zu %9.2f %9.2f %7.3f\n", k_names[res[i].op],
                   hrmt_dtype_name(res[i].dt), res[i].level, res[i].bytes, res[i].gbps,
                   res[i].copy_gbps, res[i].gbps / res[i].copy_gbps);
    }
    hrmt_context_destroy(ctx);
    return 0;
}
