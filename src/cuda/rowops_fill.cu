/* The CUDA row-op table: every entry of core/rowops.h, each a host launcher
 * on cudaStreamPerThread taking device pointers (see the rowops_*.cu files
 * for each op's thread mapping and how it keeps the scalar table's order). */
#include <string.h>

#include "cuda/cuda_backend.h"
#include "cuda/rowops_common.cuh"

extern "C" void hrmt_rowops_fill_cuda(hrmt_rowops *t) {
    memset(t, 0, sizeof *t);
    hrmt_rowops_fill_cuda_elem(t);
    hrmt_rowops_fill_cuda_norm(t);
    hrmt_rowops_fill_cuda_softmax(t);
    hrmt_rowops_fill_cuda_rope(t);
    hrmt_rowops_fill_cuda_engram(t);
    hrmt_rowops_fill_cuda_probe(t);
}
