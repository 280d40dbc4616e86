/* Public device-memory API (hrmt.h, "CUDA contexts and device memory"): thin
 * checks around src/cuda/runtime.cu, UNSUPPORTED on CPU contexts and in
 * builds without CUDA. */
#include <string.h>

#include "core/context.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

hrmt_device hrmt_context_device(const hrmt_context *ctx) {
    return ctx ? hrmt_ctx_device(ctx) : HRMT_DEVICE_HOST;
}

hrmt_status hrmt_tensor_init_device(hrmt_tensor *t, void *data, hrmt_dtype dtype, int ndim,
                                    const size_t *shape) {
    hrmt_tensor r;
    hrmt_status s = hrmt_tensor_init(&r, data, dtype, ndim, shape);
    if (s != HRMT_OK) return s;
    r.device = HRMT_DEVICE_CUDA;
    *t = r;
    return HRMT_OK;
}

/* The CUDA state of ctx, or a failure naming `op` for CPU contexts. */
static hrmt_status need_cuda(hrmt_context *ctx, const char *op) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    if (ctx->backend_kind != HRMT_BACKEND_CUDA || !ctx->cuda)
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED,
                         "%s: this is a CPU context (device memory needs a CUDA context)", op);
#if defined(HRMT_HAVE_CUDA)
    return hrmt_cuda_activate(ctx->cuda, ctx->err, sizeof ctx->err);
#else
    return HRMT_ERR_UNSUPPORTED; /* unreachable: no CUDA context without CUDA */
#endif
}

hrmt_status hrmt_device_alloc(hrmt_context *ctx, size_t nbytes, void **out) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    if (!out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "hrmt_device_alloc: out is NULL");
    *out = NULL;
    hrmt_status s = need_cuda(ctx, "hrmt_device_alloc");
    if (s != HRMT_OK) return s;
#if defined(HRMT_HAVE_CUDA)
    return hrmt_cuda_malloc(ctx->cuda, nbytes, out, ctx->err, sizeof ctx->err);
#else
    (void)nbytes;
    return s;
#endif
}

void hrmt_device_free(hrmt_context *ctx, void *p) {
    if (!ctx || !p || ctx->backend_kind != HRMT_BACKEND_CUDA || !ctx->cuda) return;
#if defined(HRMT_HAVE_CUDA)
    if (hrmt_cuda_activate(ctx->cuda, NULL, 0) == HRMT_OK) hrmt_cuda_free(ctx->cuda, p);
#endif
}

#if defined(HRMT_HAVE_CUDA)
/* One side of a copy must be device memory: a host pointer there would make
 * the copy engine fault, which CUDA keeps sticky for the whole process. */
static hrmt_status check_dev_ptr(hrmt_context *ctx, const char *op, const char *name,
                                 const void *p) {
    const int k = hrmt_cuda_is_device_ptr(p);
    if (k == 1) return HRMT_OK;
    if (k < 0)
        return hrmt_fail(ctx, HRMT_ERR_CUDA, "%s: cudaPointerGetAttributes failed on %s", op, name);
    return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED,
                     "%s: %s (%p) is not device memory (allocate it with hrmt_device_alloc)", op,
                     name, p);
}
#endif

static hrmt_status copy(hrmt_context *ctx, const char *op, void *dst, const void *src,
                        size_t nbytes, int to_device) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    hrmt_status s = need_cuda(ctx, op);
    if (s != HRMT_OK || nbytes == 0) return s;
    if (!dst || !src)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "%s: %s is NULL", op, !dst ? "dst" : "src");
#if defined(HRMT_HAVE_CUDA)
    s = check_dev_ptr(ctx, op, to_device ? "dst_dev" : "src_dev", to_device ? dst : src);
    if (s != HRMT_OK) return s;
    return hrmt_cuda_memcpy(ctx->cuda, dst, src, nbytes, to_device ? 0 : 1, ctx->err,
                            sizeof ctx->err);
#else
    (void)to_device;
    return s;
#endif
}

hrmt_status hrmt_upload(hrmt_context *ctx, void *dst_dev, const void *src_host, size_t nbytes) {
    return copy(ctx, "hrmt_upload", dst_dev, src_host, nbytes, 1);
}

hrmt_status hrmt_download(hrmt_context *ctx, void *dst_host, const void *src_dev, size_t nbytes) {
    return copy(ctx, "hrmt_download", dst_host, src_dev, nbytes, 0);
}

hrmt_status hrmt_context_synchronize(hrmt_context *ctx) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    if (ctx->backend_kind != HRMT_BACKEND_CUDA) return HRMT_OK;
    hrmt_status s = need_cuda(ctx, "hrmt_context_synchronize");
    if (s != HRMT_OK) return s;
#if defined(HRMT_HAVE_CUDA)
    return hrmt_cuda_sync(ctx->cuda, ctx->err, sizeof ctx->err);
#else
    return s;
#endif
}
