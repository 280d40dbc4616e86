/* The L level's weights kept in L2 (HRMT_CUDA_L2_PERSIST=1, opt-in): an
 * access-policy window over them with the persisting hit property, on every
 * kernel node of the step's graph (and on the stream for a step run launch
 * by launch).
 *
 * Why: a step reads the L weights (27 MB at HRM's size) in four level calls
 * and the H weights in two; both levels' 54 MB do not fit the H200's 50 MB
 * of L2, so each H call pushes out L weights that the next L call fetches
 * from HBM again, and at a few samples a kernel's time is mostly the wait
 * for its weights. Persisting lines hold part of L2 for the window.
 *
 * This sets the device-wide persisting-L2 limit (cudaLimitPersistingL2CacheSize,
 * raised to what the window needs, never lowered), which other work in the
 * process shares: hence opt-in. The bits do not change (only cache policy). */
#include <stdint.h>
#include <stdlib.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"

hrmt_status cu_l2_setting(hrmt_model *m) {
    struct hrmt_model_cuda *g = cu_model(m);
    int on = 0;
    const hrmt_status s = cu_env_switch(m, "HRMT_CUDA_L2_PERSIST", 0, &on);
    if (s != HRMT_OK) return s;
    g->l2_bytes = 0;
    const cudaDeviceProp *p = &m->ctx->cuda->prop;
    if (!on || p->persistingL2CacheMaxSize <= 0 || p->accessPolicyMaxWindowSize <= 0 ||
        m->cfg.L_layers <= 0)
        return HRMT_OK;
    /* The span of the L blocks' weights (separate allocations, made one
     * after another at load). */
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < m->cfg.L_layers; i++) {
        const hrmt_linear *ls[4] = {&m->L[i].qkv, &m->L[i].o, &m->L[i].gate_up, &m->L[i].down};
        for (int j = 0; j < 4; j++) {
            const uintptr_t a = (uintptr_t)ls[j]->dev, b = a + ls[j]->n * ls[j]->k * m->esz;
            if (a < lo) lo = a;
            if (b > hi) hi = b;
        }
    }
    size_t bytes = hi - lo;
    if (bytes > (size_t)p->accessPolicyMaxWindowSize) bytes = (size_t)p->accessPolicyMaxWindowSize;
    size_t limit =
        bytes < (size_t)p->persistingL2CacheMaxSize ? bytes : (size_t)p->persistingL2CacheMaxSize;
    size_t cur = 0;
    cudaError_t e = cudaDeviceGetLimit(&cur, cudaLimitPersistingL2CacheSize);
    if (e == cudaSuccess && cur < limit)
        e = cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, limit);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "HRMT_CUDA_L2_PERSIST: persisting L2 limit");
    if (cur > limit) limit = cur;
    g->l2_base = (void *)lo;
    g->l2_bytes = bytes;
    g->l2_ratio = limit >= bytes ? 1.0f : (float)((double)limit / (double)bytes);
    return HRMT_OK;
}

static cudaAccessPolicyWindow window(const struct hrmt_model_cuda *g, int on) {
    cudaAccessPolicyWindow w = {};
    w.base_ptr = on ? g->l2_base : NULL;
    w.num_bytes = on ? g->l2_bytes : 0;
    w.hitRatio = on ? g->l2_ratio : 0.0f;
    w.hitProp = cudaAccessPropertyPersisting;
    w.missProp = cudaAccessPropertyStreaming;
    return w;
}

hrmt_status cu_l2_graph(const hrmt_model *m, cudaGraph_t graph) {
    const struct hrmt_model_cuda *g = cu_model(m);
    if (!g->l2_bytes) return HRMT_OK;
    size_t n = 0;
    cudaError_t e = cudaGraphGetNodes(graph, NULL, &n);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step graph: cudaGraphGetNodes");
    cudaGraphNode_t *nodes = (cudaGraphNode_t *)malloc((n ? n : 1) * sizeof *nodes);
    if (!nodes) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "cuda step graph: %zu nodes", n);
    e = cudaGraphGetNodes(graph, nodes, &n);
    cudaKernelNodeAttrValue v = {};
    v.accessPolicyWindow = window(g, 1);
    for (size_t i = 0; i < n && e == cudaSuccess; i++) {
        cudaGraphNodeType t;
        e = cudaGraphNodeGetType(nodes[i], &t);
        if (e == cudaSuccess && t == cudaGraphNodeTypeKernel)
            e = cudaGraphKernelNodeSetAttribute(nodes[i], cudaKernelNodeAttributeAccessPolicyWindow,
                                                &v);
    }
    free(nodes);
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "cuda step graph: L2 access policy");
}

hrmt_status cu_l2_stream(const hrmt_model *m, int on) {
    const struct hrmt_model_cuda *g = cu_model(m);
    if (!g->l2_bytes) return HRMT_OK;
    cudaStreamAttrValue v = {};
    v.accessPolicyWindow = window(g, on);
    const cudaError_t e =
        cudaStreamSetAttribute(cu_stream(m), cudaStreamAttributeAccessPolicyWindow, &v);
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "cuda step: L2 access policy");
}
