/* GEMM micro-kernels, avx2 table. */
#include "core/backend.h"

void hrmt_gemm_fill_avx2(hrmt_gemm_kernels *t) { t->mr = 8; t->nr = 8; }
