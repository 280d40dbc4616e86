#include "core/gemm_kernels.h"

int hrmt_gemm_supports(const hrmt_gemm_kernels *t, hrmt_op op, hrmt_dtype dtype) {
    (void)t; (void)op; (void)dtype;
    return 0;
}
