/* How many parallel branches the baseline step's levels are captured as
 * (model_step.cu). Samples never interact inside a level, so a batch cut into
 * sample ranges is that many independent chains of the same kernels on the
 * ranges' rows: captured as parallel branches of the step's CUDA graph, one
 * range's memory-bound kernels (SwiGLU, norms, attention) can run beside
 * another's tensor-core GEMMs. Every kernel's bits are per row and per sample
 * (the GEMMs' pinned algorithms give a row the same bits for every M), so the
 * bytes are those of one chain. Launches outside a graph stay one chain.
 * Opt-in: on the H200 two branches ran the batch-256 step 1.7% slower and
 * four 7-9% slower than one chain (batch 64: two 1.8% faster, four 14%
 * slower; nvjet's GEMMs run one CTA per SM, ncu: grid 2 x 66), so the
 * default is one. */
#include <stdlib.h>
#include <string.h>

#include "cuda/model_grid.h"

hrmt_status cu_branch_setting(hrmt_model *m) {
    const char *env = getenv("HRMT_CUDA_BRANCHES");
    int n = 1;
    if (env) {
        n = strlen(env) == 1 && env[0] >= '1' && env[0] <= '0' + CU_MAX_BRANCHES ? env[0] - '0' : 0;
        if (!n)
            return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "HRMT_CUDA_BRANCHES='%s' is not 1..%d",
                             env, CU_MAX_BRANCHES);
    }
    cu_model(m)->branches = n;
    return HRMT_OK;
}

int cu_branch_count(const hrmt_model *m, size_t B) {
    const struct hrmt_model_cuda *g = cu_model(m);
    if (!m->ctx->cuda_graphs || cu_grid_use(m) || B < 2) return 1;
    return (size_t)g->branches > B ? (int)B : g->branches;
}
