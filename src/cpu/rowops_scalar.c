/* Row-wise kernels, scalar table. */
#include <string.h>

#include "core/backend.h"

static void copy__scalar(void *dst, const void *src, size_t nbytes) { memcpy(dst, src, nbytes); }

void hrmt_rowops_fill_scalar(hrmt_rowops *t) { t->copy = copy__scalar; }
