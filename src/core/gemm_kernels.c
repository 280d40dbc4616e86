/* supports_op for the GEMM kernel table. A function of the table alone, kept
 * out of the GEMM driver (gemm.c) so that dispatch needs only the table
 * layouts: context -> dispatch -> tables, and the driver -> context. */
#include "core/gemm_kernels.h"

int hrmt_gemm_supports(const hrmt_gemm_kernels *t, hrmt_op op, hrmt_dtype dtype) {
    return t && op == HRMT_OP_GEMM && t->f32.run && (dtype == HRMT_F32 || dtype == HRMT_BF16);
}
