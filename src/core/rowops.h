/* Row-wise kernel family (element-wise and per-row fused ops). OWNED BY THE
 * KERNELS WORK (issue 3): extend this struct; keep one signature per family. */
#ifndef HRMT_CORE_ROWOPS_H
#define HRMT_CORE_ROWOPS_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

/* dst = src, n bytes. */
typedef void (*hrmt_copy_fn)(void *dst, const void *src, size_t nbytes);

typedef struct hrmt_rowops {
    hrmt_copy_fn copy;
} hrmt_rowops;

int hrmt_rowops_supports(const hrmt_rowops *t, hrmt_op op, hrmt_dtype dtype);

#endif
