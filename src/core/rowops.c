/* supports_op for the row-wise kernel table. */
#include "core/rowops.h"

int hrmt_rowops_supports(const hrmt_rowops *t, hrmt_op op, hrmt_dtype dtype) {
    if (!t || (unsigned)dtype >= HRMT_DTYPE_COUNT) return 0;
    if (op == HRMT_OP_COPY) return t->copy != NULL; /* any dtype: a byte copy */
    if (dtype != HRMT_F32 && dtype != HRMT_BF16) return 0;
    const int d = (int)dtype;
    switch (op) {
    case HRMT_OP_CONVERT: return t->cvt_f32_bf16 != NULL && t->cvt_bf16_f32 != NULL;
    case HRMT_OP_ADD: return t->add[d] != NULL;
    case HRMT_OP_RMSNORM: return t->rmsnorm[d] != NULL;
    case HRMT_OP_RESIDUAL_RMSNORM:
        return t->residual_rmsnorm_sram[d] != NULL && t->residual_rmsnorm_dram[d] != NULL;
    case HRMT_OP_SWIGLU: return t->swiglu[d] != NULL;
    case HRMT_OP_SOFTMAX: return t->softmax[d] != NULL;
    case HRMT_OP_ROPE: return t->rope[d] != NULL;
    case HRMT_OP_EMBEDDING: return t->embedding[d][d] != NULL;
    case HRMT_OP_ENGRAM_GATE_FWD: return dtype == HRMT_BF16 && t->engram_fwd != NULL;
    case HRMT_OP_ENGRAM_GATE_BWD: return dtype == HRMT_BF16 && t->engram_bwd != NULL;
    default: return 0;
    }
}
