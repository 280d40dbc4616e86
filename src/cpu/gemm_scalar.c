/* GEMM micro-kernels, scalar table. */
#include "core/backend.h"

void hrmt_gemm_fill_scalar(hrmt_gemm_kernels *t) { t->mr = 8; t->nr = 8; }
