/* GEMM micro-kernel table. OWNED BY THE GEMM WORK (issue 4): extend this struct. */
#ifndef HRMT_CORE_GEMM_KERNELS_H
#define HRMT_CORE_GEMM_KERNELS_H

#include <stddef.h>

#include "hrmt.h"

typedef struct hrmt_gemm_kernels {
    size_t mr, nr; /* register tile of this ISA's F32 micro-kernel */
} hrmt_gemm_kernels;

int hrmt_gemm_supports(const hrmt_gemm_kernels *t, hrmt_op op, hrmt_dtype dtype);

#endif
