#include "core/rowops.h"

int hrmt_rowops_supports(const hrmt_rowops *t, hrmt_op op, hrmt_dtype dtype) {
    (void)dtype;
    return op == HRMT_OP_COPY && t->copy != NULL;
}
