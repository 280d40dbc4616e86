/* Public Engram gate ops: weight fusion, forward, backward (with a
 * thread-count-independent weight-gradient reduction), gradient split. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
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

/* The weight gradient is summed over at most this many token chunks; chunk
 * boundaries depend only on T, so the result is the same for any thread count. */
#define ENGRAM_MAX_CHUNKS 64

static float ld_any(const hrmt_tensor *t, size_t i) {
    return t->dtype == HRMT_BF16 ? hrmt_bf16_to_f32(((const uint16_t *)t->data)[i])
                                 : ((const float *)t->data)[i];
}

/* Writes through t->data; the descriptor itself is not changed. */
static void st_any(const hrmt_tensor *t, size_t i, float v) {
    if (t->dtype == HRMT_BF16)
        ((uint16_t *)t->data)[i] = hrmt_f32_to_bf16(v);
    else
        ((float *)t->data)[i] = v;
}

/* A [hc, H] weight-shaped tensor, F32 or BF16 (or exactly `only` if >= 0). */
static hrmt_status weight_like(hrmt_context *ctx, const char *op, const char *name,
                               const hrmt_tensor *t, size_t hc, size_t hidden, int only) {
    const size_t shape[2] = {hc, hidden};
    if (!t) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: %s is NULL", op, name);
    hrmt_dtype want = only >= 0 ? (hrmt_dtype)only : (t->dtype == HRMT_BF16 ? HRMT_BF16 : HRMT_F32);
    return hrmt_ops_exact(ctx, op, name, t, want, 2, shape);
}

static hrmt_status check_ctx(hrmt_context *ctx, const char *op) {
    return hrmt_ops_check_ctx(ctx, op);
}

/* ---- host staging of the weight-sized ops on a CUDA context ---------------
 * Fusing and splitting are one multiply per weight element, once per step:
 * they run on the host (the same loop, so the same bits as on the CPU) over
 * copies of the device tensors. Up to 5 [hc, H] tensors take part. */
#define STAGE_MAX 5

typedef struct {
    hrmt_tensor host[STAGE_MAX];
    const hrmt_tensor *dev[STAGE_MAX];
    int out[STAGE_MAX];
    size_t bytes[STAGE_MAX];
    int n;
} stage_set;

static void stage_free(stage_set *st) {
    for (int i = 0; i < st->n; i++) free(st->host[i].data);
    st->n = 0;
}

/* Adds tensor t (already checked: contiguous [hc, H]); inputs are downloaded.
 * *view is what the host loop should use (t itself on a CPU context). */
static hrmt_status stage_add(hrmt_context *ctx, const char *op, stage_set *st, const hrmt_tensor *t,
                             int is_out, const hrmt_tensor **view) {
    *view = t;
    if (!hrmt_ops_on_device(ctx)) return HRMT_OK;
#if defined(HRMT_HAVE_CUDA)
    size_t bytes;
    if (hrmt_tensor_nbytes(t, &bytes) != HRMT_OK)
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: size overflows", op);
    hrmt_tensor h = *t;
    h.device = HRMT_DEVICE_HOST;
    h.data = malloc(bytes ? bytes : 1);
    if (!h.data)
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: no memory for %zu staging bytes", op,
                         bytes);
    const int i = st->n++;
    st->host[i] = h;
    st->dev[i] = t;
    st->out[i] = is_out;
    st->bytes[i] = bytes;
    if (!is_out) {
        char msg[HRMT_ERRMSG_LEN - 64];
        hrmt_status s = hrmt_cuda_memcpy(ctx->cuda, h.data, t->data, bytes, 1, msg, sizeof msg);
        if (s != HRMT_OK) return hrmt_fail(ctx, s, "%s: %s", op, msg);
    }
    *view = &st->host[i];
    return HRMT_OK;
#else
    (void)op;
    (void)st;
    (void)is_out;
    return HRMT_OK;
#endif
}

/* Uploads the staged outputs. */
static hrmt_status stage_finish(hrmt_context *ctx, const char *op, stage_set *st) {
#if defined(HRMT_HAVE_CUDA)
    for (int i = 0; i < st->n; i++) {
        if (!st->out[i]) continue;
        char msg[HRMT_ERRMSG_LEN - 64];
        hrmt_status s = hrmt_cuda_memcpy(ctx->cuda, st->dev[i]->data, st->host[i].data,
                                         st->bytes[i], 0, msg, sizeof msg);
        if (s != HRMT_OK) return hrmt_fail(ctx, s, "%s: %s", op, msg);
    }
#else
    (void)ctx;
    (void)op;
    (void)st;
#endif
    return HRMT_OK;
}

hrmt_status hrmt_engram_fuse_weight(hrmt_context *ctx, const hrmt_tensor *w_hidden,
                                    const hrmt_tensor *w_embed, hrmt_tensor *weight_fused) {
    const char *op = "hrmt_engram_fuse_weight";
    CHECK(check_ctx(ctx, op));
    CHECK(hrmt_ops_basic(ctx, op, "w_hidden", w_hidden));
    if (w_hidden->ndim != 2)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: w_hidden must be [hc, hidden]", op);
    const size_t hc = w_hidden->shape[0], hidden = w_hidden->shape[1];
    CHECK(weight_like(ctx, op, "w_hidden", w_hidden, hc, hidden, -1));
    CHECK(weight_like(ctx, op, "w_embed", w_embed, hc, hidden, -1));
    CHECK(weight_like(ctx, op, "weight_fused", weight_fused, hc, hidden, HRMT_F32));
    stage_set st = {.n = 0};
    const hrmt_tensor *wh = NULL, *we = NULL, *wf = NULL;
    hrmt_status s;
    if ((s = stage_add(ctx, op, &st, w_hidden, 0, &wh)) == HRMT_OK &&
        (s = stage_add(ctx, op, &st, w_embed, 0, &we)) == HRMT_OK &&
        (s = stage_add(ctx, op, &st, weight_fused, 1, &wf)) == HRMT_OK) {
        for (size_t i = 0; i < hc * hidden; i++)
            ((float *)wf->data)[i] = ld_any(wh, i) * ld_any(we, i);
        s = stage_finish(ctx, op, &st);
    }
    stage_free(&st);
    return s;
}

hrmt_status hrmt_engram_split_weight_grad(hrmt_context *ctx, const hrmt_tensor *grad_weight_fused,
                                          const hrmt_tensor *w_hidden, const hrmt_tensor *w_embed,
                                          hrmt_tensor *grad_w_hidden, hrmt_tensor *grad_w_embed) {
    const char *op = "hrmt_engram_split_weight_grad";
    CHECK(check_ctx(ctx, op));
    CHECK(hrmt_ops_basic(ctx, op, "grad_weight_fused", grad_weight_fused));
    if (grad_weight_fused->ndim != 2)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: grad_weight_fused must be [hc, hidden]", op);
    const size_t hc = grad_weight_fused->shape[0], hidden = grad_weight_fused->shape[1];
    CHECK(weight_like(ctx, op, "grad_weight_fused", grad_weight_fused, hc, hidden, HRMT_F32));
    CHECK(weight_like(ctx, op, "w_hidden", w_hidden, hc, hidden, -1));
    CHECK(weight_like(ctx, op, "w_embed", w_embed, hc, hidden, -1));
    CHECK(weight_like(ctx, op, "grad_w_hidden", grad_w_hidden, hc, hidden, -1));
    CHECK(weight_like(ctx, op, "grad_w_embed", grad_w_embed, hc, hidden, -1));
    stage_set st = {.n = 0};
    const hrmt_tensor *gv = NULL, *whv = NULL, *wev = NULL, *gh = NULL, *ge = NULL;
    hrmt_status s;
    if ((s = stage_add(ctx, op, &st, grad_weight_fused, 0, &gv)) == HRMT_OK &&
        (s = stage_add(ctx, op, &st, w_hidden, 0, &whv)) == HRMT_OK &&
        (s = stage_add(ctx, op, &st, w_embed, 0, &wev)) == HRMT_OK &&
        (s = stage_add(ctx, op, &st, grad_w_hidden, 1, &gh)) == HRMT_OK &&
        (s = stage_add(ctx, op, &st, grad_w_embed, 1, &ge)) == HRMT_OK) {
        const float *g = gv->data;
        for (size_t i = 0; i < hc * hidden; i++) {
            const float wh = ld_any(whv, i), we = ld_any(wev, i);
            st_any(gh, i, g[i] * we);
            st_any(ge, i, g[i] * wh);
        }
        s = stage_finish(ctx, op, &st);
    }
    stage_free(&st);
    return s;
}

/* x [T,hc,H] BF16 -> T, hc, H; kv and weight checked against them. */
static hrmt_status engram_dims(hrmt_context *ctx, const char *op, const hrmt_tensor *x,
                               const hrmt_tensor *kv, const hrmt_tensor *wf, size_t *T, size_t *hc,
                               size_t *hidden) {
    CHECK(hrmt_ops_basic(ctx, op, "x", x));
    if (x->ndim != 3)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "%s: x has %d dims, want [T, hc, hidden]", op,
                         x->ndim);
    *T = x->shape[0];
    *hc = x->shape[1];
    *hidden = x->shape[2];
    size_t tmp;
    if (!hrmt_mul_ok(*T, *hc + 1, &tmp) || !hrmt_mul_ok(tmp, *hidden, &tmp) ||
        !hrmt_mul_ok(tmp, 4, &tmp))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: sizes overflow", op);
    const size_t xs[3] = {*T, *hc, *hidden}, kvs[3] = {*T, *hc + 1, *hidden};
    CHECK(hrmt_ops_exact(ctx, op, "x", x, HRMT_BF16, 3, xs));
    CHECK(hrmt_ops_exact(ctx, op, "kv", kv, HRMT_BF16, 3, kvs));
    CHECK(weight_like(ctx, op, "weight_fused", wf, *hc, *hidden, HRMT_F32));
    return HRMT_OK;
}

static hrmt_status per_head(hrmt_context *ctx, const char *op, const char *name,
                            const hrmt_tensor *t, size_t T, size_t hc, int required) {
    if (!t) {
        if (required) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: %s is NULL", op, name);
        return HRMT_OK;
    }
    const size_t shape[2] = {T, hc};
    return hrmt_ops_exact(ctx, op, name, t, HRMT_F32, 2, shape);
}

static float *opt_data(const hrmt_tensor *t) { return t ? (float *)t->data : NULL; }

typedef struct {
    hrmt_engram_fwd_fn fn;
    size_t hc, hidden;
    const uint16_t *x, *kv;
    const float *wf;
    float eps, clamp;
    uint16_t *out;
    float *dot, *gate, *rx, *rk;
    int nt;
} fwd_args;

static void fwd_body(const void *arg, size_t t0, size_t t1) {
    const fwd_args *p = arg;
    const size_t th = t0 * p->hc;
    p->fn(t1 - t0, p->hc, p->hidden, p->x + th * p->hidden, p->kv + t0 * (p->hc + 1) * p->hidden,
          p->wf, p->eps, p->clamp, p->out + th * p->hidden, p->dot ? p->dot + th : NULL,
          p->gate ? p->gate + th : NULL, p->rx ? p->rx + th : NULL, p->rk ? p->rk + th : NULL,
          p->nt);
}

hrmt_status hrmt_engram_gate_fwd(hrmt_context *ctx, const hrmt_tensor *x, const hrmt_tensor *kv,
                                 const hrmt_tensor *weight_fused, float eps, float clamp_value,
                                 const hrmt_engram_fwd_out *outs) {
    const char *op = "hrmt_engram_gate_fwd";
    CHECK(check_ctx(ctx, op));
    size_t T = 0, hc = 0, hidden = 0;
    CHECK(engram_dims(ctx, op, x, kv, weight_fused, &T, &hc, &hidden));
    if (!outs || !outs->out)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: outs / outs->out is NULL", op);
    const size_t xs[3] = {T, hc, hidden};
    CHECK(hrmt_ops_exact(ctx, op, "out", outs->out, HRMT_BF16, 3, xs));
    CHECK(per_head(ctx, op, "dot", outs->dot, T, hc, 0));
    CHECK(per_head(ctx, op, "gate_score", outs->gate_score, T, hc, 0));
    CHECK(per_head(ctx, op, "rstd_x", outs->rstd_x, T, hc, 0));
    CHECK(per_head(ctx, op, "rstd_k", outs->rstd_k, T, hc, 0));
    if (!isfinite(eps) || !isfinite(clamp_value))
        return hrmt_fail(ctx, HRMT_ERR_NONFINITE, "%s: eps / clamp_value not finite", op);
    if (eps < 0.0f || clamp_value < 0.0f)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: eps / clamp_value < 0", op);
    fwd_args p = {ctx->be->rowops.engram_fwd,
                  hc,
                  hidden,
                  x->data,
                  kv->data,
                  weight_fused->data,
                  eps,
                  clamp_value,
                  outs->out->data,
                  opt_data(outs->dot),
                  opt_data(outs->gate_score),
                  opt_data(outs->rstd_x),
                  opt_data(outs->rstd_k),
                  hrmt_ops_stream(ctx, T * hc * hidden * 2)};
    if (!p.fn)
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED, "%s: backend %s has no kernel", op,
                         ctx->be->name);
    hrmt_ops_run_rows(ctx, T, (3 * hc + 1) * hidden * 2, fwd_body, &p);
    return hrmt_ops_finish(ctx, op);
}

typedef struct {
    hrmt_engram_bwd_fn fn;
    size_t T, hc, hidden, chunk;
    const uint16_t *go, *x, *kv;
    const float *wf, *dot, *gate, *rx, *rk;
    float clamp;
    uint16_t *gx, *gkv;
    float *partial; /* [nchunks][hc*H] */
} bwd_args;

static void bwd_body(const void *arg, size_t c0, size_t c1) {
    const bwd_args *p = arg;
    const size_t w = p->hc * p->hidden;
    for (size_t c = c0; c < c1; c++) {
        const size_t t0 = c * p->chunk;
        const size_t n = p->T - t0 < p->chunk ? p->T - t0 : p->chunk;
        const size_t th = t0 * p->hc, tkv = t0 * (p->hc + 1) * p->hidden;
        float *gw = p->partial + c * w;
        memset(gw, 0, w * sizeof *gw);
        p->fn(n, p->hc, p->hidden, p->go + th * p->hidden, p->x + th * p->hidden, p->kv + tkv,
              p->wf, p->dot + th, p->gate + th, p->rx + th, p->rk + th, p->clamp,
              p->gx + th * p->hidden, p->gkv + tkv, gw);
    }
}

typedef struct {
    const float *partial;
    float *out;
    size_t nchunks, width;
} reduce_args;

/* Column block [r0, r1) of the weight gradient: chunks summed in order. */
static void reduce_body(const void *arg, size_t r0, size_t r1) {
    const reduce_args *p = arg;
    for (size_t i = r0; i < r1; i++) {
        float acc = 0.0f;
        for (size_t c = 0; c < p->nchunks; c++) acc += p->partial[c * p->width + i];
        p->out[i] = acc;
    }
}

#if defined(HRMT_HAVE_CUDA)
/* The CPU's chunked reduction on the device, for the same bits: each chunk's
 * launch adds its tokens into its own zeroed partial row, then one kernel
 * sums the rows in chunk order. */
static hrmt_status bwd_cuda(hrmt_context *ctx, const char *op, bwd_args *p, size_t nchunks,
                            size_t width, size_t bytes, float *gw_out) {
    char msg[HRMT_ERRMSG_LEN - 64];
    void *partial = NULL;
    hrmt_status s = hrmt_cuda_malloc(ctx->cuda, bytes, &partial, msg, sizeof msg);
    if (s != HRMT_OK) return hrmt_fail(ctx, s, "%s: partial sums: %s", op, msg);
    p->partial = partial;
    s = hrmt_cuda_memset(ctx->cuda, partial, 0, bytes, msg, sizeof msg);
    for (size_t c = 0; s == HRMT_OK && c < nchunks; c++) {
        const size_t t0 = c * p->chunk;
        const size_t n = p->T - t0 < p->chunk ? p->T - t0 : p->chunk;
        const size_t th = t0 * p->hc, tkv = t0 * (p->hc + 1) * p->hidden;
        p->fn(n, p->hc, p->hidden, p->go + th * p->hidden, p->x + th * p->hidden, p->kv + tkv,
              p->wf, p->dot + th, p->gate + th, p->rx + th, p->rk + th, p->clamp,
              p->gx + th * p->hidden, p->gkv + tkv, p->partial + c * width);
        s = hrmt_cuda_check(op, msg, sizeof msg);
    }
    if (s == HRMT_OK)
        s = hrmt_cuda_sum_chunks_f32(ctx->cuda, p->partial, nchunks, width, gw_out, msg,
                                     sizeof msg);
    hrmt_cuda_free(ctx->cuda, partial); /* cudaFree waits for the kernels using it */
    if (s != HRMT_OK) return hrmt_fail(ctx, s, "%s: %s", op, msg);
    return hrmt_ops_finish(ctx, op);
}
#endif

hrmt_status hrmt_engram_gate_bwd(hrmt_context *ctx, const hrmt_tensor *grad_out,
                                 const hrmt_tensor *x, const hrmt_tensor *kv,
                                 const hrmt_tensor *weight_fused, const hrmt_tensor *dot,
                                 const hrmt_tensor *gate_score, const hrmt_tensor *rstd_x,
                                 const hrmt_tensor *rstd_k, float clamp_value, hrmt_tensor *grad_x,
                                 hrmt_tensor *grad_kv, hrmt_tensor *grad_weight_fused) {
    const char *op = "hrmt_engram_gate_bwd";
    CHECK(check_ctx(ctx, op));
    size_t T = 0, hc = 0, hidden = 0;
    CHECK(engram_dims(ctx, op, x, kv, weight_fused, &T, &hc, &hidden));
    const size_t xs[3] = {T, hc, hidden}, kvs[3] = {T, hc + 1, hidden};
    CHECK(hrmt_ops_exact(ctx, op, "grad_out", grad_out, HRMT_BF16, 3, xs));
    CHECK(per_head(ctx, op, "dot", dot, T, hc, 1));
    CHECK(per_head(ctx, op, "gate_score", gate_score, T, hc, 1));
    CHECK(per_head(ctx, op, "rstd_x", rstd_x, T, hc, 1));
    CHECK(per_head(ctx, op, "rstd_k", rstd_k, T, hc, 1));
    CHECK(hrmt_ops_exact(ctx, op, "grad_x", grad_x, HRMT_BF16, 3, xs));
    CHECK(hrmt_ops_exact(ctx, op, "grad_kv", grad_kv, HRMT_BF16, 3, kvs));
    CHECK(weight_like(ctx, op, "grad_weight_fused", grad_weight_fused, hc, hidden, HRMT_F32));
    if (!isfinite(clamp_value))
        return hrmt_fail(ctx, HRMT_ERR_NONFINITE, "%s: clamp_value not finite", op);
    if (clamp_value < 0.0f) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: clamp_value < 0", op);
    bwd_args p = {ctx->be->rowops.engram_bwd,
                  T,
                  hc,
                  hidden,
                  0,
                  grad_out->data,
                  x->data,
                  kv->data,
                  weight_fused->data,
                  dot->data,
                  gate_score->data,
                  rstd_x->data,
                  rstd_k->data,
                  clamp_value,
                  grad_x->data,
                  grad_kv->data,
                  NULL};
    if (!p.fn)
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED, "%s: backend %s has no kernel", op,
                         ctx->be->name);
    p.chunk = T > ENGRAM_MAX_CHUNKS ? (T + ENGRAM_MAX_CHUNKS - 1) / ENGRAM_MAX_CHUNKS : 1;
    const size_t nchunks = (T + p.chunk - 1) / p.chunk, width = hc * hidden;
    size_t bytes;
    if (!hrmt_mul_ok(nchunks, width, &bytes) || !hrmt_mul_ok(bytes, sizeof(float), &bytes))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: scratch size overflows", op);
#if defined(HRMT_HAVE_CUDA)
    if (ctx->cuda) return bwd_cuda(ctx, op, &p, nchunks, width, bytes, grad_weight_fused->data);
#endif
    p.partial = malloc(bytes);
    if (!p.partial)
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: no memory for %zu bytes of partial sums",
                         op, bytes);
    hrmt_ops_run_rows(ctx, nchunks, p.chunk * (4 * hc + 2) * hidden * 2, bwd_body, &p);
    reduce_args r = {p.partial, grad_weight_fused->data, nchunks, width};
    hrmt_ops_run_rows(ctx, width, nchunks * sizeof(float), reduce_body, &r);
    free(p.partial);
    return hrmt_ops_finish(ctx, op);
}
