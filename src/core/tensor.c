/* Tensor descriptors and dtype facts. */
#include <stdlib.h>

#include "core/checked.h"
#include "hrmt.h"

size_t hrmt_dtype_size(hrmt_dtype dt) {
    switch (dt) {
    case HRMT_F32: return 4;
    case HRMT_BF16: return 2;
    case HRMT_I32: return 4;
    default: return 0;
    }
}

const char *hrmt_dtype_name(hrmt_dtype dt) {
    switch (dt) {
    case HRMT_F32: return "F32";
    case HRMT_BF16: return "BF16";
    case HRMT_I32: return "I32";
    default: return "?";
    }
}

hrmt_status hrmt_tensor_init(hrmt_tensor *t, void *data, hrmt_dtype dtype, int ndim,
                             const size_t *shape) {
    if (!t || !shape || ndim < 1 || ndim > HRMT_MAX_DIMS || hrmt_dtype_size(dtype) == 0)
        return HRMT_ERR_INVALID_ARG;
    hrmt_tensor r = {0};
    r.data = data;
    r.dtype = dtype;
    r.ndim = ndim;
    size_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] == 0) return HRMT_ERR_INVALID_ARG;
        r.shape[i] = shape[i];
        r.stride[i] = stride;
        if (!hrmt_mul_ok(stride, shape[i], &stride)) return HRMT_ERR_OVERFLOW;
    }
    size_t bytes;
    if (!hrmt_mul_ok(stride, hrmt_dtype_size(dtype), &bytes)) return HRMT_ERR_OVERFLOW;
    *t = r;
    return HRMT_OK;
}

hrmt_status hrmt_tensor_numel(const hrmt_tensor *t, size_t *out) {
    if (!t || !out || t->ndim < 1 || t->ndim > HRMT_MAX_DIMS) return HRMT_ERR_INVALID_ARG;
    size_t n = 1;
    for (int i = 0; i < t->ndim; i++)
        if (!hrmt_mul_ok(n, t->shape[i], &n)) return HRMT_ERR_OVERFLOW;
    *out = n;
    return HRMT_OK;
}

hrmt_status hrmt_tensor_nbytes(const hrmt_tensor *t, size_t *out) {
    size_t n;
    hrmt_status s = hrmt_tensor_numel(t, &n);
    if (s != HRMT_OK) return s;
    size_t es = hrmt_dtype_size(t->dtype), bytes;
    if (es == 0) return HRMT_ERR_INVALID_ARG;
    if (!hrmt_mul_ok(n, es, &bytes)) return HRMT_ERR_OVERFLOW; /* *out untouched */
    *out = bytes;
    return HRMT_OK;
}

void hrmt_free(void *p) { free(p); }
