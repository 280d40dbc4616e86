/* Row-wise kernels, avx512 table. */
#include <string.h>

#include "core/backend.h"

static void copy__avx512(void *dst, const void *src, size_t nbytes) { memcpy(dst, src, nbytes); }

void hrmt_rowops_fill_avx512(hrmt_rowops *t) { t->copy = copy__avx512; }
