/* Descriptor checks and the OpenMP row splitter for the public ops. */
#include "core/ops_util.h"

#include <omp.h>
#include <stdio.h>

#include "core/checked.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

/* Below this much traffic a parallel region costs more than it saves. */
#define HRMT_OPS_PAR_MIN_BYTES ((size_t)64 * 1024)

/* Large row sets are handed out in chunks of about this much traffic, so a
 * thread slowed by a neighbour (shared hosts, SMT siblings, small cores)
 * takes fewer chunks instead of holding the others up at the join; at least
 * HRMT_OPS_CHUNKS_PER_THREAD chunks per thread, or the split stays static. */
#define HRMT_OPS_CHUNK_BYTES ((size_t)512 * 1024)
#define HRMT_OPS_CHUNKS_PER_THREAD 8

hrmt_status hrmt_ops_check_ctx(hrmt_context *ctx, const char *op) {
    if (!ctx || !ctx->be) return HRMT_ERR_INVALID_ARG;
#if defined(HRMT_HAVE_CUDA)
    /* The device must be current on this thread: launchers use the current
     * device's per-thread stream. */
    if (ctx->cuda) {
        char msg[HRMT_ERRMSG_LEN - 64];
        if (hrmt_cuda_activate(ctx->cuda, msg, sizeof msg) != HRMT_OK)
            return hrmt_fail(ctx, HRMT_ERR_CUDA, "%s: %s", op, msg);
    }
#else
    (void)op;
#endif
    return HRMT_OK;
}

hrmt_status hrmt_ops_finish(hrmt_context *ctx, const char *op) {
#if defined(HRMT_HAVE_CUDA)
    if (ctx->cuda) {
        char msg[HRMT_ERRMSG_LEN - 64];
        if (hrmt_cuda_check(op, msg, sizeof msg) != HRMT_OK)
            return hrmt_fail(ctx, HRMT_ERR_CUDA, "%s", msg);
    }
#else
    (void)ctx;
    (void)op;
#endif
    return HRMT_OK;
}

int hrmt_ops_on_device(const hrmt_context *ctx) { return ctx->backend_kind == HRMT_BACKEND_CUDA; }

hrmt_status hrmt_ops_basic(hrmt_context *ctx, const char *op, const char *name,
                           const hrmt_tensor *t) {
    if (!t) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: %s is NULL", op, name);
    if (!t->data) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: %s has no data", op, name);
    if (t->ndim < 1 || t->ndim > HRMT_MAX_DIMS)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: %s has ndim %d (1..%d)", op, name, t->ndim,
                         HRMT_MAX_DIMS);
    if (t->device != hrmt_ctx_device(ctx))
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED,
                         t->device == HRMT_DEVICE_HOST
                             ? "%s: %s is in host memory but the context runs on CUDA (copy it "
                               "to hrmt_device_alloc memory with hrmt_upload)"
                             : "%s: %s is not in host memory (this is a CPU context)",
                         op, name);
#if defined(HRMT_HAVE_CUDA)
    /* A host pointer labelled CUDA would fault in the kernel, and CUDA keeps
     * such faults sticky for the whole process: refuse it here. */
    if (ctx->cuda && hrmt_cuda_is_device_ptr(t->data) != 1)
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED,
                         "%s: %s is labelled HRMT_DEVICE_CUDA but %p is not device memory", op,
                         name, t->data);
#endif
    if (hrmt_dtype_size(t->dtype) == 0)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: %s has an invalid dtype", op, name);
    for (int d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0)
            return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s has a zero dim %d", op, name, d);
    const int last = t->ndim - 1;
    if (t->shape[last] > 1 && t->stride[last] != 1)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s's last dim is not contiguous (stride %zu)",
                         op, name, t->stride[last]);
    return HRMT_OK;
}

hrmt_status hrmt_ops_view(hrmt_context *ctx, const char *op, const char *name, const hrmt_tensor *t,
                          hrmt_rowview *v) {
    hrmt_status s = hrmt_ops_basic(ctx, op, name, t);
    if (s != HRMT_OK) return s;
    const size_t es = hrmt_dtype_size(t->dtype);
    const int last = t->ndim - 1;
    const size_t cols = t->shape[last];
    size_t rows = 1, ld = cols, expect = 0;
    int seen = 0;
    for (int d = last - 1; d >= 0; d--) {
        if (t->shape[d] == 1) continue;
        if (!seen) {
            ld = t->stride[d];
            seen = 1;
        } else if (t->stride[d] != expect) {
            return hrmt_fail(ctx, HRMT_ERR_SHAPE,
                             "%s: %s's rows are not evenly strided (dim %d stride %zu, want %zu)",
                             op, name, d, t->stride[d], expect);
        }
        if (!hrmt_mul_ok(t->stride[d], t->shape[d], &expect) ||
            !hrmt_mul_ok(rows, t->shape[d], &rows))
            return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: %s's size overflows", op, name);
    }
    if (rows > 1 && ld < cols)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s's rows overlap (row stride %zu < %zu cols)",
                         op, name, ld, cols);
    size_t span;
    if (!hrmt_mul_ok(rows - 1, ld, &span) || !hrmt_add_ok(span, cols, &span) ||
        !hrmt_mul_ok(span, es, &span))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: %s's size overflows", op, name);
    v->data = t->data;
    v->dtype = t->dtype;
    v->rows = rows;
    v->cols = cols;
    v->ld = ld;
    v->es = es;
    return HRMT_OK;
}

hrmt_status hrmt_ops_float_dtype(hrmt_context *ctx, const char *op, const char *name,
                                 const hrmt_rowview *v) {
    if (v->dtype != HRMT_F32 && v->dtype != HRMT_BF16)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: %s is %s, want F32 or BF16", op, name,
                         hrmt_dtype_name(v->dtype));
    return HRMT_OK;
}

hrmt_status hrmt_ops_same_dtype(hrmt_context *ctx, const char *op, const char *na,
                                const hrmt_rowview *a, const char *nb, const hrmt_rowview *b) {
    if (a->dtype != b->dtype)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: %s is %s but %s is %s", op, nb,
                         hrmt_dtype_name(b->dtype), na, hrmt_dtype_name(a->dtype));
    return HRMT_OK;
}

hrmt_status hrmt_ops_same_rows(hrmt_context *ctx, const char *op, const char *na,
                               const hrmt_rowview *a, const char *nb, const hrmt_rowview *b) {
    if (a->rows != b->rows)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s has %zu rows but %s has %zu", op, nb, b->rows,
                         na, a->rows);
    return HRMT_OK;
}

hrmt_status hrmt_ops_same_cols(hrmt_context *ctx, const char *op, const char *na,
                               const hrmt_rowview *a, const char *nb, const hrmt_rowview *b) {
    if (a->cols != b->cols)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s has %zu columns but %s has %zu", op, nb,
                         b->cols, na, a->cols);
    return HRMT_OK;
}

hrmt_status hrmt_ops_exact(hrmt_context *ctx, const char *op, const char *name,
                           const hrmt_tensor *t, hrmt_dtype dtype, int ndim, const size_t *shape) {
    hrmt_rowview v;
    hrmt_status s = hrmt_ops_view(ctx, op, name, t, &v);
    if (s != HRMT_OK) return s;
    if (t->dtype != dtype)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: %s is %s, want %s", op, name,
                         hrmt_dtype_name(t->dtype), hrmt_dtype_name(dtype));
    int ok = t->ndim == ndim;
    for (int d = 0; ok && d < ndim; d++) ok = t->shape[d] == shape[d];
    if (!ok) {
        char want[96] = "", got[96] = "";
        size_t nw = 0, ng = 0;
        for (int d = 0; d < ndim && nw < sizeof want; d++)
            nw += (size_t)snprintf(want + nw, sizeof want - nw, d ? ",%zu" : "%zu", shape[d]);
        for (int d = 0; d < t->ndim && ng < sizeof got; d++)
            ng += (size_t)snprintf(got + ng, sizeof got - ng, d ? ",%zu" : "%zu", t->shape[d]);
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s has shape [%s], want [%s]", op, name, got,
                         want);
    }
    size_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] > 1 && t->stride[d] != stride)
            return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s must be contiguous", op, name);
        stride *= shape[d];
    }
    return HRMT_OK;
}

int hrmt_ops_stream(const hrmt_context *ctx, size_t out_bytes) {
    if (ctx->backend_kind != HRMT_BACKEND_CPU) return 0; /* a CPU-cache hint */
    size_t llc = 0;
    for (int i = 0; i < ctx->topo.num_levels && i < HRMT_MAX_CACHE_LEVELS; i++)
        if (ctx->topo.caches[i].size_bytes > llc) llc = ctx->topo.caches[i].size_bytes;
    return llc > 0 && out_bytes >= llc;
}

/* Each thread of a static split gets at least this much traffic (the team
 * never below 2): on the 16-core AMX host a batch-1 residual RMSNorm (82 rows,
 * 246 KB) split 16 ways took ~0.9 ms a call in the step against ~13 us on 2
 * threads (bench/threads.sh). That was measured while regions still changed
 * team size (libgomp then ends and recreates threads: see gemm.c's
 * run_units), so much of the 0.9 ms may have been thread starts; not yet
 * measured again with whole-team regions. */
#define HRMT_OPS_MIN_THREAD_BYTES ((size_t)128 * 1024)

/* Threads that get rows: ctx->threads, never more than rows, nor more than
 * the traffic feeds (HRMT_OPS_MIN_THREAD_BYTES each, at least 2). */
static int team_size(const hrmt_context *ctx, size_t rows, size_t total) {
    size_t n = (size_t)ctx->threads;
    size_t by_bytes = total / HRMT_OPS_MIN_THREAD_BYTES;
    if (by_bytes < 2) by_bytes = 2;
    if (n > rows) n = rows;
    if (n > by_bytes) n = by_bytes;
    return (int)n;
}

void hrmt_ops_run_rows(const hrmt_context *ctx, size_t rows, size_t bytes_per_row,
                       hrmt_row_body body, const void *arg) {
    size_t total;
    if (!hrmt_mul_ok(rows, bytes_per_row, &total)) total = (size_t)-1;
    /* Device launchers cover the whole range in one call (cuda_backend.h). */
    if (ctx->backend_kind == HRMT_BACKEND_CUDA) {
        if (rows > 0) body(arg, 0, rows);
        return;
    }
    if (ctx->threads <= 1 || rows < 2 || total < HRMT_OPS_PAR_MIN_BYTES || omp_in_parallel()) {
        body(arg, 0, rows);
        return;
    }
    const size_t per_chunk = bytes_per_row >= HRMT_OPS_CHUNK_BYTES
                                 ? 1
                                 : HRMT_OPS_CHUNK_BYTES / (bytes_per_row ? bytes_per_row : 1);
    const size_t chunks = rows / per_chunk + (rows % per_chunk != 0);
    if (chunks >= (size_t)ctx->threads * HRMT_OPS_CHUNKS_PER_THREAD) {
        const long n = (long)chunks;
#pragma omp parallel for num_threads(ctx->threads) schedule(dynamic, 1)
        for (long c = 0; c < n; c++) {
            const size_t r0 = (size_t)c * per_chunk;
            body(arg, r0, r0 + per_chunk < rows ? r0 + per_chunk : rows);
        }
        return;
    }
    /* The whole team always (gemm.c's run_units says why: libgomp drops and
     * restarts pool threads when team sizes alternate); the rows go to the
     * first n threads only. */
    const size_t n = (size_t)team_size(ctx, rows, total);
#pragma omp parallel num_threads(ctx->threads)
    {
        const size_t i = (size_t)omp_get_thread_num();
        if (i < n) {
            const size_t r0 = rows / n * i + (i < rows % n ? i : rows % n);
            const size_t r1 = r0 + rows / n + (i < rows % n ? 1 : 0);
            if (r1 > r0) body(arg, r0, r1);
        }
    }
}
