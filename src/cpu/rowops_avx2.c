/* Row-wise kernels, AVX2 table: starts from the scalar reference and replaces
 * the entries that have AVX2 kernels. */
#include "core/backend.h"

void hrmt_rowops_fill_avx2(hrmt_rowops *t) { hrmt_rowops_fill_scalar(t); }
