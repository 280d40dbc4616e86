/* How many parallel branches the baseline step's levels are captured as
 * (model_step.cu). Samples never interact inside a level, so a batch cut into
 * sample ranges is that many independent chains of the same kernels on the
 * ranges' rows: captured as parallel branches of the step's CUDA graph, one
 * range's memory-bound kernels (SwiGLU, norms, attention) can run beside
 * another's tensor-core GEMMs. Every kernel's bits are per row and per sample
 * (the GEMMs' pinned algorithms give a row the same bits for every M), so the
 * bytes are those of one chain. Launches outside a graph stay one chain. */
#include <stdlib.h>
#include <string.h>

#include "cuda/model_grid.h"

namespace {

/* Rows from which auto uses two branches: large batches, whose kernels
 * are throughput-bound; a small batch's step is a latency chain that two
 * chains of half the rows would not shorten. */
constexpr size_t AUTO_ROWS = 8192;

} // namespace

hrmt_status cu_branch_setting(hrmt_model *m) {
    const char *env = getenv("HRMT_CUDA_BRANCHES");
    int n = 0;
    if (env && strcmp(env, "auto") != 0) {
        n = strlen(env) == 1 && env[0] >= '1' && env[0] <= '0' + CU_MAX_BRANCHES ? env[0] - '0' : -1;
        if (n < 0)
            return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                             "HRMT_CUDA_BRANCHES='%s' is not auto or 1..%d", env, CU_MAX_BRANCHES);
    }
    cu_model(m)->branches = n;
    return HRMT_OK;
}

int cu_branch_count(const hrmt_model *m, size_t B) {
    const struct hrmt_model_cuda *g = cu_model(m);
    if (!m->ctx->cuda_graphs || cu_grid_use(m) || B < 2) return 1;
    int n = g->branches ? g->branches : (B * m->T >= AUTO_ROWS ? 2 : 1);
    return (size_t)n > B ? (int)B : n;
}
