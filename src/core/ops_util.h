/* Shared plumbing of the public op functions (ops.c, ops_engram.c): tensor
 * views as rows x cols with one leading dim, descriptor checks that report
 * through hrmt_fail, and the OpenMP row splitter. */
#ifndef HRMT_CORE_OPS_UTIL_H
#define HRMT_CORE_OPS_UTIL_H

#include <stddef.h>

#include "core/context.h"

/* A tensor seen as `rows` rows of `cols` contiguous elements, row r at
 * data + r * ld elements. */
typedef struct hrmt_rowview {
    char *data;
    hrmt_dtype dtype;
    size_t rows, cols, ld, es;
} hrmt_rowview;

/* NULL / data / ndim / on the context's device (host, or CUDA device memory
 * on a CUDA context) / dtype / zero dims / contiguous last dim. */
hrmt_status hrmt_ops_basic(hrmt_context *ctx, const char *op, const char *name,
                           const hrmt_tensor *t);
/* Checks `t` (named `name` in messages of op `op`) and views it as rows. Row
 * dims must collapse into one leading dim (a strided slab of rows). */
hrmt_status hrmt_ops_view(hrmt_context *ctx, const char *op, const char *name, const hrmt_tensor *t,
                          hrmt_rowview *v);
/* The view must have dtype F32 or BF16. */
hrmt_status hrmt_ops_float_dtype(hrmt_context *ctx, const char *op, const char *name,
                                 const hrmt_rowview *v);
/* b must have the same dtype / rows / cols as a. */
hrmt_status hrmt_ops_same_dtype(hrmt_context *ctx, const char *op, const char *na,
                                const hrmt_rowview *a, const char *nb, const hrmt_rowview *b);
hrmt_status hrmt_ops_same_rows(hrmt_context *ctx, const char *op, const char *na,
                               const hrmt_rowview *a, const char *nb, const hrmt_rowview *b);
hrmt_status hrmt_ops_same_cols(hrmt_context *ctx, const char *op, const char *na,
                               const hrmt_rowview *a, const char *nb, const hrmt_rowview *b);
/* The tensor must be exactly [d0, d1, ...] (ndim dims) and fully contiguous. */
hrmt_status hrmt_ops_exact(hrmt_context *ctx, const char *op, const char *name,
                           const hrmt_tensor *t, hrmt_dtype dtype, int ndim, const size_t *shape);
/* ctx usable; on a CUDA context also makes its device current. */
hrmt_status hrmt_ops_check_ctx(hrmt_context *ctx, const char *op);
/* After an op's launches: on a CUDA context a pending launch error becomes
 * HRMT_ERR_CUDA with "<op>: <CUDA message>" in ctx; OK on the CPU. */
hrmt_status hrmt_ops_finish(hrmt_context *ctx, const char *op);
/* 1 on a CUDA context: tensors hold device pointers (never dereference them
 * on the host). */
int hrmt_ops_on_device(const hrmt_context *ctx);

/* Non-temporal stores pay off once the output is beyond the last-level cache. */
int hrmt_ops_stream(const hrmt_context *ctx, size_t out_bytes);

/* Calls body(arg, r0, r1) on disjoint row ranges covering [0, rows), in
 * parallel with ctx->threads threads when the work is big enough: one range
 * per thread, or chunks handed out dynamically when there are many rows. On a
 * CUDA context: once, with the whole range, on the calling thread. */
typedef void (*hrmt_row_body)(const void *arg, size_t r0, size_t r1);
void hrmt_ops_run_rows(const hrmt_context *ctx, size_t rows, size_t bytes_per_row,
                       hrmt_row_body body, const void *arg);

static inline char *hrmt_rv_row(const hrmt_rowview *v, size_t r) {
    return v->data + r * v->ld * v->es;
}

#endif
