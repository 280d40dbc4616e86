/* Public row-wise ops of hrmt.h: check the descriptors, then split the rows
 * over OpenMP and run the context's kernels (core/rowops.h) on each range. */
#include <math.h>
#include <string.h>

#include "core/checked.h"
#include "core/ops_util.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

#define CHECK(expr)                   \
    do {                              \
        hrmt_status s_ = (expr);      \
        if (s_ != HRMT_OK) return s_; \
    } while (0)

static hrmt_status check_eps(hrmt_context *ctx, const char *op, float eps) {
    if (!isfinite(eps)) return hrmt_fail(ctx, HRMT_ERR_NONFINITE, "%s: eps is not finite", op);
    if (eps < 0.0f) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: eps %g < 0", op, (double)eps);
    return HRMT_OK;
}

static hrmt_status no_kernel(hrmt_context *ctx, const char *op, hrmt_dtype dt) {
    return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED, "%s: backend %s has no %s kernel", op,
                     ctx->be->name, hrmt_dtype_name(dt));
}

/* A tensor argument of an op: its name in messages and where its view goes. */
typedef struct {
    const char *name;
    const hrmt_tensor *t;
    hrmt_rowview *v;
} op_arg;

/* Views the n tensors; the first must be F32 or BF16 and every other one of
 * its dtype, then of its rows, then of its cols (the first failure in this
 * order is the one reported). */
static hrmt_status view_alike(hrmt_context *ctx, const char *op, const op_arg *args, size_t n) {
    for (size_t i = 0; i < n; i++)
        CHECK(hrmt_ops_view(ctx, op, args[i].name, args[i].t, args[i].v));
    const op_arg *x = &args[0];
    CHECK(hrmt_ops_float_dtype(ctx, op, x->name, x->v));
    for (size_t i = 1; i < n; i++)
        CHECK(hrmt_ops_same_dtype(ctx, op, x->name, x->v, args[i].name, args[i].v));
    for (size_t i = 1; i < n; i++)
        CHECK(hrmt_ops_same_rows(ctx, op, x->name, x->v, args[i].name, args[i].v));
    for (size_t i = 1; i < n; i++)
        CHECK(hrmt_ops_same_cols(ctx, op, x->name, x->v, args[i].name, args[i].v));
    return HRMT_OK;
}

/* Runs body over [0, rows), then reports a failed launch of the op. */
static hrmt_status run_rows(hrmt_context *ctx, const char *op, size_t rows, size_t bytes_per_row,
                            hrmt_row_body body, const void *arg) {
    hrmt_ops_run_rows(ctx, rows, bytes_per_row, body, arg);
    return hrmt_ops_finish(ctx, op);
}

/* ---- copy / convert: byte-chunked when both sides are contiguous ---------- */

#define FLAT_CHUNK ((size_t)16 * 1024) /* elements per parallel piece */

typedef struct {
    const hrmt_rowops *k;
    hrmt_rowview x, o;
    size_t flat_n; /* > 0: both contiguous, flat_n elements in `chunk` pieces */
    size_t chunk;
} xfer_args;

static void xfer_piece(const xfer_args *a, const char *src, char *dst, size_t n) {
    if (a->x.dtype == a->o.dtype)
        a->k->copy(dst, src, n * a->x.es);
    else if (a->x.dtype == HRMT_F32)
        a->k->cvt_f32_bf16((uint16_t *)dst, (const float *)src, n);
    else
        a->k->cvt_bf16_f32((float *)dst, (const uint16_t *)src, n);
}

static void xfer_body(const void *arg, size_t r0, size_t r1) {
    const xfer_args *a = arg;
    for (size_t r = r0; r < r1; r++) {
        if (a->flat_n) {
            const size_t i0 = r * a->chunk;
            const size_t n = a->flat_n - i0 < a->chunk ? a->flat_n - i0 : a->chunk;
            xfer_piece(a, a->x.data + i0 * a->x.es, a->o.data + i0 * a->o.es, n);
        } else {
            xfer_piece(a, hrmt_rv_row(&a->x, r), hrmt_rv_row(&a->o, r), a->x.cols);
        }
    }
}

static hrmt_status xfer(hrmt_context *ctx, const char *op, const hrmt_tensor *x, hrmt_tensor *out) {
    CHECK(hrmt_ops_check_ctx(ctx, op));
    xfer_args a = {&ctx->be->rowops, {0}, {0}, 0, FLAT_CHUNK};
    CHECK(hrmt_ops_view(ctx, op, "x", x, &a.x));
    CHECK(hrmt_ops_view(ctx, op, "out", out, &a.o));
    CHECK(hrmt_ops_same_rows(ctx, op, "x", &a.x, "out", &a.o));
    CHECK(hrmt_ops_same_cols(ctx, op, "x", &a.x, "out", &a.o));
    if (a.x.dtype != a.o.dtype) {
        CHECK(hrmt_ops_float_dtype(ctx, op, "x", &a.x));
        CHECK(hrmt_ops_float_dtype(ctx, op, "out", &a.o));
        if (!a.k->cvt_f32_bf16 || !a.k->cvt_bf16_f32) return no_kernel(ctx, op, a.o.dtype);
    } else if (!a.k->copy) {
        return no_kernel(ctx, op, a.o.dtype);
    }
#if defined(HRMT_HAVE_CUDA)
    /* A same-dtype copy on the device is one 2-D copy, strided rows or not. */
    if (ctx->cuda && a.x.dtype == a.o.dtype) {
        const size_t es = a.x.es;
        char msg[HRMT_ERRMSG_LEN - 64];
        hrmt_status s = hrmt_cuda_memcpy2d(ctx->cuda, a.o.data, a.o.ld * es, a.x.data, a.x.ld * es,
                                           a.x.cols * es, a.x.rows, msg, sizeof msg);
        if (s != HRMT_OK) return hrmt_fail(ctx, s, "%s: %s", op, msg);
        return hrmt_ops_finish(ctx, op);
    }
#endif
    size_t rows = a.x.rows, per_row = a.x.cols * (a.x.es + a.o.es);
    if ((a.x.rows == 1 || a.x.ld == a.x.cols) && (a.o.rows == 1 || a.o.ld == a.o.cols)) {
        a.flat_n = a.x.rows * a.x.cols; /* fits: hrmt_ops_view checked the span */
        /* device launchers take it all at once; CPU threads take pieces */
        if (hrmt_ops_on_device(ctx)) a.chunk = a.flat_n;
        rows = (a.flat_n + a.chunk - 1) / a.chunk;
        per_row = a.chunk * (a.x.es + a.o.es);
    }
    return run_rows(ctx, op, rows, per_row, xfer_body, &a);
}

hrmt_status hrmt_copy(hrmt_context *ctx, const hrmt_tensor *x, hrmt_tensor *out) {
    if (x && out && x->dtype != out->dtype)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "hrmt_copy: x is %s but out is %s (use hrmt_convert)",
                         hrmt_dtype_name(x->dtype), hrmt_dtype_name(out->dtype));
    return xfer(ctx, "hrmt_copy", x, out);
}

hrmt_status hrmt_convert(hrmt_context *ctx, const hrmt_tensor *x, hrmt_tensor *out) {
    return xfer(ctx, "hrmt_convert", x, out);
}

/* ---- add ------------------------------------------------------------------ */

typedef struct {
    hrmt_add_fn fn;
    hrmt_rowview a, b, o;
} add_args;

static void add_body(const void *arg, size_t r0, size_t r1) {
    const add_args *p = arg;
    p->fn(r1 - r0, p->a.cols, hrmt_rv_row(&p->a, r0), p->a.ld, hrmt_rv_row(&p->b, r0), p->b.ld,
          hrmt_rv_row(&p->o, r0), p->o.ld);
}

hrmt_status hrmt_add(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_tensor *b,
                     hrmt_tensor *out) {
    const char *op = "hrmt_add";
    CHECK(hrmt_ops_check_ctx(ctx, op));
    add_args p;
    const op_arg args[] = {{"a", a, &p.a}, {"b", b, &p.b}, {"out", out, &p.o}};
    CHECK(view_alike(ctx, op, args, 3));
    p.fn = ctx->be->rowops.add[p.a.dtype];
    if (!p.fn) return no_kernel(ctx, op, p.a.dtype);
    return run_rows(ctx, op, p.a.rows, 3 * p.a.cols * p.a.es, add_body, &p);
}

/* ---- rmsnorm and residual + rmsnorm --------------------------------------- */

typedef struct {
    hrmt_rmsnorm_fn fn;
    hrmt_residual_rmsnorm_fn sram;
    hrmt_residual_rmsnorm_stream_fn dram;
    hrmt_rowview x, r, o;
    const float *w;
    float eps;
    int nt;
} norm_args;

static void rmsnorm_body(const void *arg, size_t r0, size_t r1) {
    const norm_args *p = arg;
    p->fn(r1 - r0, p->x.cols, hrmt_rv_row(&p->x, r0), p->x.ld, p->w, p->eps, hrmt_rv_row(&p->o, r0),
          p->o.ld);
}

static void resid_body(const void *arg, size_t r0, size_t r1) {
    const norm_args *p = arg;
    if (p->sram)
        p->sram(r1 - r0, p->x.cols, hrmt_rv_row(&p->x, r0), p->x.ld, hrmt_rv_row(&p->r, r0),
                p->r.ld, p->eps, hrmt_rv_row(&p->o, r0), p->o.ld);
    else
        p->dram(r1 - r0, p->x.cols, hrmt_rv_row(&p->x, r0), p->x.ld, hrmt_rv_row(&p->r, r0),
                p->r.ld, p->eps, hrmt_rv_row(&p->o, r0), p->o.ld, p->nt);
}

hrmt_status hrmt_rmsnorm(hrmt_context *ctx, const hrmt_tensor *x, const hrmt_tensor *weight,
                         float eps, hrmt_tensor *out) {
    const char *op = "hrmt_rmsnorm";
    CHECK(hrmt_ops_check_ctx(ctx, op));
    norm_args p;
    memset(&p, 0, sizeof p);
    const op_arg args[] = {{"x", x, &p.x}, {"out", out, &p.o}};
    CHECK(view_alike(ctx, op, args, 2));
    CHECK(check_eps(ctx, op, eps));
    if (weight) {
        const size_t shape[1] = {p.x.cols};
        CHECK(hrmt_ops_exact(ctx, op, "weight", weight, HRMT_F32, 1, shape));
        p.w = weight->data;
    }
    p.fn = ctx->be->rowops.rmsnorm[p.x.dtype];
    if (!p.fn) return no_kernel(ctx, op, p.x.dtype);
    p.eps = eps;
    return run_rows(ctx, op, p.x.rows, 2 * p.x.cols * p.x.es, rmsnorm_body, &p);
}

hrmt_status hrmt_residual_rmsnorm(hrmt_context *ctx, const hrmt_tensor *x,
                                  const hrmt_tensor *residual, float eps, hrmt_variant variant,
                                  hrmt_tensor *out) {
    const char *op = "hrmt_residual_rmsnorm";
    CHECK(hrmt_ops_check_ctx(ctx, op));
    norm_args p;
    memset(&p, 0, sizeof p);
    const op_arg args[] = {{"x", x, &p.x}, {"residual", residual, &p.r}, {"out", out, &p.o}};
    CHECK(view_alike(ctx, op, args, 3));
    CHECK(check_eps(ctx, op, eps));
    if (variant == HRMT_VARIANT_SRAM) {
        p.sram = ctx->be->rowops.residual_rmsnorm_sram[p.x.dtype];
        if (!p.sram) return no_kernel(ctx, op, p.x.dtype);
    } else if (variant == HRMT_VARIANT_DRAM) {
        p.dram = ctx->be->rowops.residual_rmsnorm_dram[p.x.dtype];
        if (!p.dram) return no_kernel(ctx, op, p.x.dtype);
        p.nt = hrmt_ops_stream(ctx, p.o.rows * p.o.cols * p.o.es);
    } else {
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: unknown variant %d", op, (int)variant);
    }
    p.eps = eps;
    return run_rows(ctx, op, p.x.rows, 3 * p.x.cols * p.x.es, resid_body, &p);
}

/* ---- swiglu ----------------------------------------------------------------- */

typedef struct {
    hrmt_swiglu_fn fn;
    hrmt_rowview g, o;
    int nt;
} swiglu_args;

static void swiglu_body(const void *arg, size_t r0, size_t r1) {
    const swiglu_args *p = arg;
    p->fn(r1 - r0, p->o.cols, hrmt_rv_row(&p->g, r0), p->g.ld, hrmt_rv_row(&p->o, r0), p->o.ld,
          p->nt);
}

hrmt_status hrmt_swiglu(hrmt_context *ctx, const hrmt_tensor *gate_up, hrmt_tensor *out) {
    const char *op = "hrmt_swiglu";
    CHECK(hrmt_ops_check_ctx(ctx, op));
    swiglu_args p;
    CHECK(hrmt_ops_view(ctx, op, "gate_up", gate_up, &p.g));
    CHECK(hrmt_ops_view(ctx, op, "out", out, &p.o));
    CHECK(hrmt_ops_float_dtype(ctx, op, "gate_up", &p.g));
    CHECK(hrmt_ops_same_dtype(ctx, op, "gate_up", &p.g, "out", &p.o));
    CHECK(hrmt_ops_same_rows(ctx, op, "gate_up", &p.g, "out", &p.o));
    if (p.g.cols != 2 * p.o.cols)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: gate_up has %zu columns, want 2 * %zu (out)", op,
                         p.g.cols, p.o.cols);
    p.fn = ctx->be->rowops.swiglu[p.g.dtype];
    if (!p.fn) return no_kernel(ctx, op, p.g.dtype);
    p.nt = hrmt_ops_stream(ctx, p.o.rows * p.o.cols * p.o.es);
#if defined(HRMT_HAVE_CUDA)
    if (ctx->cuda) { /* BF16 by the context's table: the same bits */
        hrmt_cuda_swiglu(ctx->cuda, p.g.dtype, p.o.rows, p.o.cols, p.g.data, p.g.ld, p.o.data,
                         p.o.ld, p.nt);
        return hrmt_ops_finish(ctx, op);
    }
#endif
    return run_rows(ctx, op, p.o.rows, 3 * p.o.cols * p.o.es, swiglu_body, &p);
}

/* ---- softmax ---------------------------------------------------------------- */

typedef struct {
    hrmt_softmax_fn fn;
    hrmt_rowview x, o;
    float scale;
} softmax_args;

static void softmax_body(const void *arg, size_t r0, size_t r1) {
    const softmax_args *p = arg;
    p->fn(r1 - r0, p->x.cols, hrmt_rv_row(&p->x, r0), p->x.ld, p->scale, hrmt_rv_row(&p->o, r0),
          p->o.ld);
}

hrmt_status hrmt_softmax(hrmt_context *ctx, const hrmt_tensor *x, float scale, hrmt_tensor *out) {
    const char *op = "hrmt_softmax";
    CHECK(hrmt_ops_check_ctx(ctx, op));
    softmax_args p;
    const op_arg args[] = {{"x", x, &p.x}, {"out", out, &p.o}};
    CHECK(view_alike(ctx, op, args, 2));
    if (!isfinite(scale)) return hrmt_fail(ctx, HRMT_ERR_NONFINITE, "%s: scale is not finite", op);
    p.fn = ctx->be->rowops.softmax[p.x.dtype];
    if (!p.fn) return no_kernel(ctx, op, p.x.dtype);
    p.scale = scale;
    /* exp dominates: weigh rows as heavier than their bytes */
    return run_rows(ctx, op, p.x.rows, 16 * p.x.cols * p.x.es, softmax_body, &p);
}

/* ---- rope ------------------------------------------------------------------- */

typedef struct {
    hrmt_rope_fn fn;
    char *x;
    size_t es, tokens, heads, hd, ld_b, ld_tok, ld_head, ld_cs;
    const float *c, *s;
} rope_args;

/* Rows here are (batch, token) pairs; a range is cut at batch boundaries. */
static void rope_body(const void *arg, size_t r0, size_t r1) {
    const rope_args *p = arg;
    while (r0 < r1) {
        const size_t b = r0 / p->tokens, t = r0 % p->tokens;
        const size_t n = (p->tokens - t < r1 - r0) ? p->tokens - t : r1 - r0;
        p->fn(n, p->heads, p->hd, p->x + (b * p->ld_b + t * p->ld_tok) * p->es, p->ld_tok,
              p->ld_head, p->c + t * p->ld_cs, p->s + t * p->ld_cs, p->ld_cs);
        r0 += n;
    }
}

static hrmt_status rope_table(hrmt_context *ctx, const char *op, const char *name,
                              const hrmt_tensor *t, size_t tokens, size_t hd) {
    hrmt_rowview v;
    CHECK(hrmt_ops_view(ctx, op, name, t, &v));
    if (t->dtype != HRMT_F32)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: %s is %s, want F32", op, name,
                         hrmt_dtype_name(t->dtype));
    if (t->ndim != 2 || t->shape[0] != tokens || t->shape[1] != hd)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: %s must be [%zu, %zu] (tokens, head_dim)", op,
                         name, tokens, hd);
    return HRMT_OK;
}

hrmt_status hrmt_rope(hrmt_context *ctx, hrmt_tensor *x, const hrmt_tensor *cos_t,
                      const hrmt_tensor *sin_t) {
    const char *op = "hrmt_rope";
    CHECK(hrmt_ops_check_ctx(ctx, op));
    CHECK(hrmt_ops_basic(ctx, op, "x", x));
    if (x->dtype != HRMT_F32 && x->dtype != HRMT_BF16)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: x is %s, want F32 or BF16", op,
                         hrmt_dtype_name(x->dtype));
    if (x->ndim != 3 && x->ndim != 4)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE,
                         "%s: x has %d dims, want [tokens, heads, head_dim] or [batch, ...]", op,
                         x->ndim);
    const int n = x->ndim;
    rope_args p;
    p.es = hrmt_dtype_size(x->dtype);
    p.hd = x->shape[n - 1];
    p.heads = x->shape[n - 2];
    p.tokens = x->shape[n - 3];
    p.ld_head = x->stride[n - 2];
    p.ld_tok = x->stride[n - 3];
    const size_t batch = n == 4 ? x->shape[0] : 1;
    p.ld_b = n == 4 ? x->stride[0] : 0;
    if (p.hd % 2 != 0) return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: head_dim %zu is odd", op, p.hd);
    size_t span = 0, part;
    const size_t dims[3][2] = {{batch, p.ld_b}, {p.tokens, p.ld_tok}, {p.heads, p.ld_head}};
    for (int d = 0; d < 3; d++)
        if (!hrmt_mul_ok(dims[d][0] - 1, dims[d][1], &part) || !hrmt_add_ok(span, part, &span))
            return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: x's size overflows", op);
    if (!hrmt_add_ok(span, p.hd, &span) || !hrmt_mul_ok(span, p.es, &span))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: x's size overflows", op);
    if ((p.heads > 1 && p.ld_head < p.hd) ||
        (p.tokens > 1 && p.ld_tok < (p.heads - 1) * p.ld_head + p.hd) ||
        (batch > 1 && p.ld_b < (p.tokens - 1) * p.ld_tok + (p.heads - 1) * p.ld_head + p.hd))
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: x's rows overlap (check its strides)", op);
    CHECK(rope_table(ctx, op, "cos", cos_t, p.tokens, p.hd));
    CHECK(rope_table(ctx, op, "sin", sin_t, p.tokens, p.hd));
    if (cos_t->stride[0] != sin_t->stride[0])
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: cos and sin have different row strides", op);
    p.ld_cs = cos_t->stride[0];
    p.c = cos_t->data;
    p.s = sin_t->data;
    p.x = x->data;
    p.fn = ctx->be->rowops.rope[x->dtype];
    if (!p.fn) return no_kernel(ctx, op, x->dtype);
    const hrmt_rope_batched_fn fb = ctx->be->rowops.rope_batched[x->dtype];
    if (fb && hrmt_ops_on_device(ctx)) { /* one launch, not one per batch entry */
        fb(batch, p.tokens, p.heads, p.hd, p.x, p.ld_b, p.ld_tok, p.ld_head, p.c, p.s, p.ld_cs);
        return hrmt_ops_finish(ctx, op);
    }
    return run_rows(ctx, op, batch * p.tokens, 2 * p.heads * p.hd * p.es + 8 * p.hd, rope_body, &p);
}

/* ---- embedding -------------------------------------------------------------- */

/* Every id must index a table row before any gather runs. On a CUDA context
 * the ids are device memory: a check kernel finds the first bad one there
 * (12 bytes come back) instead of copying all ids to the host. */
static hrmt_status check_ids(hrmt_context *ctx, const char *op, const int32_t *ids, size_t n,
                             size_t vocab) {
    size_t bad = n;
    int32_t v = 0;
#if defined(HRMT_HAVE_CUDA)
    if (ctx->cuda) {
        char msg[HRMT_ERRMSG_LEN - 64];
        hrmt_status s = hrmt_cuda_check_ids(ctx->cuda, ids, n, vocab, &bad, &v, msg, sizeof msg);
        if (s != HRMT_OK) return hrmt_fail(ctx, s, "%s: checking ids: %s", op, msg);
    } else
#endif
    {
        for (size_t i = 0; i < n && bad == n; i++)
            if (ids[i] < 0 || (size_t)ids[i] >= vocab) {
                bad = i;
                v = ids[i];
            }
    }
    if (bad < n)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: ids[%zu] = %d is outside [0, %zu)", op,
                         bad, v, vocab);
    return HRMT_OK;
}

typedef struct {
    hrmt_embedding_fn fn;
    hrmt_rowview t, o;
    const int32_t *ids;
} emb_args;

static void emb_body(const void *arg, size_t r0, size_t r1) {
    const emb_args *p = arg;
    p->fn(r1 - r0, p->o.cols, p->t.data, p->t.ld, p->ids + r0, hrmt_rv_row(&p->o, r0), p->o.ld);
}

hrmt_status hrmt_embedding(hrmt_context *ctx, const hrmt_tensor *table, const hrmt_tensor *ids,
                           hrmt_tensor *out) {
    const char *op = "hrmt_embedding";
    CHECK(hrmt_ops_check_ctx(ctx, op));
    emb_args p;
    hrmt_rowview iv;
    CHECK(hrmt_ops_view(ctx, op, "table", table, &p.t));
    CHECK(hrmt_ops_view(ctx, op, "ids", ids, &iv));
    CHECK(hrmt_ops_view(ctx, op, "out", out, &p.o));
    CHECK(hrmt_ops_float_dtype(ctx, op, "table", &p.t));
    CHECK(hrmt_ops_float_dtype(ctx, op, "out", &p.o));
    if (iv.dtype != HRMT_I32)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: ids is %s, want I32", op,
                         hrmt_dtype_name(iv.dtype));
    if (iv.rows > 1 && iv.ld != iv.cols)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: ids must be contiguous", op);
    const size_t n = iv.rows * iv.cols;
    if (p.o.rows != n)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: out has %zu rows but there are %zu ids", op,
                         p.o.rows, n);
    CHECK(hrmt_ops_same_cols(ctx, op, "table", &p.t, "out", &p.o));
    p.ids = (const int32_t *)iv.data;
    CHECK(check_ids(ctx, op, p.ids, n, p.t.rows));
    p.fn = ctx->be->rowops.embedding[p.t.dtype][p.o.dtype];
    if (!p.fn) return no_kernel(ctx, op, p.o.dtype);
    return run_rows(ctx, op, n, p.o.cols * (p.t.es + p.o.es), emb_body, &p);
}
