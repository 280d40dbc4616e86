/* The model's GEMMs, C = A W^T, deterministic per row: a row's bits must not
 * depend on M (a tile of samples vs the whole batch). Left to itself cuBLASLt
 * picks another algorithm (another tile, split-K) for another M, so:
 *  - BF16 block GEMMs (qkv, o, gate_up, down) whose rows are 256-byte
 *    multiples: one algorithm per shape, chosen once at model load by the
 *    heuristic for a fixed reference M with split-K reductions excluded, and
 *    used for every M (cu_gemm_pin). The same algorithm computes each output
 *    tile with the same MMA sequence over k wherever the tile falls, so a row
 *    has the same bits for every M (bench/cuda_lt_pin_check.cu checks slices
 *    against the whole on the GPU; the tiered == baseline tests check the
 *    model);
 *  - everything else (F32, the heads, other widths): the own kernels of
 *    model_gemm_kernels.cuh, one F32 chain per element in ascending k. */
#include <string.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_gemm_kernels.cuh"
#include "cuda/model_internal.cuh"

namespace {

/* The reference M the algorithms are chosen for: a few thousand rows, where
 * the choice is the one that serves large batches well. */
constexpr uint64_t PIN_M = 16384;

hrmt_status lt_fail(const hrmt_model *m, cublasStatus_t st, const char *what) {
    if (st == CUBLAS_STATUS_ALLOC_FAILED)
        return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: cuBLASLt could not allocate", what);
    return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "%s: %s", what, cublasLtGetStatusString(st));
}

hrmt_status pin_one(hrmt_model *m, cu_lt_slot *sl, int *ok) {
    *ok = 0;
    hrmt_cuda *cu = m->ctx->cuda;
    const char *what = "cuda model gemm: cuBLASLt algorithm";
    cublasStatus_t st = cublasLtMatmulDescInit(&sl->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(&sl->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT,
                                            sizeof opT);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulDescSetAttribute(&sl->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN,
                                            sizeof opN);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutInit(&sl->lw, CUDA_R_16BF, sl->k, sl->n, sl->k);
    cublasLtMatrixLayoutOpaque_t la, lc;
    if (st == CUBLAS_STATUS_SUCCESS) st = cu_lt_layouts(sl, PIN_M, &la, &lc);
    cublasLtMatmulPreference_t pref = NULL;
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceCreate(&pref);
    const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    const size_t ws = cu->ws_bytes;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                  &no_reduction, sizeof no_reduction);
    cublasLtMatmulHeuristicResult_t res;
    int got = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(cu->lt, &sl->desc, &sl->lw, &la, &lc, &lc, pref, 1,
                                            &res, &got);
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && got == 0))
        return HRMT_OK; /* no algorithm: the own kernel serves this shape */
    if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(m, st, what);
    /* Split-K would add partial sums in an M-dependent way: refuse it. */
    int32_t splitk = 1;
    size_t wr = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&res.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                             sizeof splitk, &wr) != CUBLAS_STATUS_SUCCESS ||
        splitk > 1)
        return HRMT_OK;
    /* The smallest M the model runs (one sample) must take the same algorithm. */
    cublasLtMatmulHeuristicResult_t chk;
    if (cu_lt_layouts(sl, m->T, &la, &lc) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoCheck(cu->lt, &sl->desc, &sl->lw, &la, &lc, &lc, &res.algo, &chk) !=
            CUBLAS_STATUS_SUCCESS)
        return HRMT_OK;
    sl->algo = res.algo;
    sl->ws = res.workspaceSize;
    *ok = 1;
    return HRMT_OK;
}

const cu_lt_slot *find_slot(const hrmt_model *m, size_t n, size_t k, size_t lda, size_t ldc) {
    const struct hrmt_model_cuda *g = cu_model(m);
    for (int i = 0; i < g->nlt; i++) {
        const cu_lt_slot *sl = &g->lt[i];
        if (sl->n == n && sl->k == k && sl->lda == lda && sl->ldc == ldc) return sl;
    }
    return nullptr;
}

/* What serves `rows` rows of slot sl (one of cu_model(m)->lt): the tuner's
 * pick at exactly these rows, else their row bucket's, else the pinned
 * algorithm; *own 1 + the own kernel's shape that the pick prefers (same
 * bits, faster there), 0 for cuBLASLt's. */
const cublasLtMatmulAlgo_t *slot_pick(const hrmt_model *m, const cu_lt_slot *sl, size_t rows,
                                      int *own) {
    const ptrdiff_t i = sl - cu_model(m)->lt;
    const cu_exact_pick *ex = cu_exact_for(m, rows);
    if (ex) {
        *own = ex->own[i];
        return &ex->algo[i];
    }
    if (sl->nsmall > 0) {
        const int b = cu_row_bucket(rows, sl->nsmall);
        *own = sl->own[b];
        return &sl->small[b];
    }
    *own = 0;
    return &sl->algo;
}

hrmt_status lt_gemm(const hrmt_model *m, const cu_lt_slot *sl, size_t rows, const void *a,
                    const void *w, void *c) {
    hrmt_cuda *cu = m->ctx->cuda;
    cublasLtMatrixLayoutOpaque_t la, lc;
    cublasStatus_t st = cu_lt_layouts(sl, rows, &la, &lc);
    const float one = 1.0f, zero = 0.0f;
    /* A parallel branch of the step's graph has its own (model_branch.cu). */
    void *ws = cu_model(m)->lt_ws_now ? cu_model(m)->lt_ws_now : cu->workspace;
    int own = 0;
    const cublasLtMatmulAlgo_t *algo = slot_pick(m, sl, rows, &own);
    if (own > 0) {
        int done = 0;
        hrmt_status s = cu_wgemm(m, own - 1, rows, sl->n, sl->k, a, sl->lda, w, c, sl->ldc, &done);
        if (s != HRMT_OK || done) return s;
    }
    if (st == CUBLAS_STATUS_SUCCESS) /* cuBLASLt takes non-const handles but only reads them. */
        st = cublasLtMatmul(cu->lt, const_cast<cublasLtMatmulDescOpaque_t *>(&sl->desc), &one, w,
                            const_cast<cublasLtMatrixLayoutOpaque_t *>(&sl->lw), a, &la, &zero, c,
                            &lc, c, &lc, algo, ws, cu->ws_bytes, cu_stream(m));
    return st == CUBLAS_STATUS_SUCCESS ? HRMT_OK : lt_fail(m, st, "cuda model gemm (cuBLASLt)");
}

} // namespace

int cu_gemm_own_shape(const hrmt_model *m, size_t rows, size_t n, size_t k, size_t lda,
                      size_t ldc) {
    if (m->dt != HRMT_BF16) return -1;
    const cu_lt_slot *sl = find_slot(m, n, k, lda, ldc);
    if (!sl) return -1;
    int own = 0;
    (void)slot_pick(m, sl, rows, &own);
    return own - 1;
}

hrmt_status cu_gemm_pin(hrmt_model *m) {
    struct hrmt_model_cuda *g = cu_model(m);
    g->nlt = 0;
    const size_t H = m->hidden, I = m->inter;
    /* 256-byte rows keep every tile's A and C as aligned as the whole batch's
     * (the alignment the heuristic assumes), so no call needs another algorithm. */
    if (m->dt != HRMT_BF16 || (H * 2) % 256 != 0 || (I * 2) % 256 != 0 || !m->ctx->cuda->lt)
        return HRMT_OK;
    const size_t shapes[CU_LT_SLOTS][4] = {
        {3 * H, H, H, 3 * H}, {H, H, H, H}, {2 * I, H, H, 2 * I}, {H, I, I, H}};
    cu_lt_slot sl[CU_LT_SLOTS];
    for (int i = 0; i < CU_LT_SLOTS; i++) {
        memset(&sl[i], 0, sizeof sl[i]);
        sl[i].n = shapes[i][0];
        sl[i].k = shapes[i][1];
        sl[i].lda = shapes[i][2];
        sl[i].ldc = shapes[i][3];
        int ok = 0;
        hrmt_status s = pin_one(m, &sl[i], &ok);
        if (s != HRMT_OK) return s;
        if (!ok) return HRMT_OK; /* all four or none: one path for the whole block */
    }
    memcpy(g->lt, sl, sizeof sl);
    g->nlt = CU_LT_SLOTS;
    return HRMT_OK;
}

hrmt_status cu_gemm(const hrmt_model *m, size_t rows, size_t n, size_t k, const void *a, size_t lda,
                    const void *w, void *c, hrmt_dtype cdt, size_t ldc) {
    if (rows == 0) return HRMT_OK;
    /* Row blocks on grid x (up to 2^31 - 1), column blocks on y (65535 of
     * the narrowest tile, 64). */
    if (rows > (size_t)INT32_MAX || n > (size_t)65535 * FBN || k > (size_t)INT32_MAX)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda gemm: %zux%zux%zu is too large", rows, n,
                         k);
    if (m->dt == HRMT_BF16 && cdt == HRMT_BF16) {
        const cu_lt_slot *sl = find_slot(m, n, k, lda, ldc);
        if (sl) return lt_gemm(m, sl, rows, a, w, c);
    }
    cudaStream_t st = cu_stream(m);
    const int obf = cdt == HRMT_BF16;
    if (m->dt == HRMT_F32) {
        dim3 grid((unsigned)((rows + FBM - 1) / FBM), (unsigned)((n + FBN - 1) / FBN));
        gemm_f32<<<grid, 256, 0, st>>>((int)rows, (int)n, (int)k, (const float *)a, lda,
                                       (const float *)w, k, c, ldc, obf);
    } else {
        int sms = 0;
        cudaError_t e = gemm_dev_prepare(&sms);
        if (e != cudaSuccess) return cu_fail(m->ctx, e, "model gemm: shared memory opt-in");
        const uint16_t *A = (const uint16_t *)a, *W = (const uint16_t *)w;
        if (gemm_bf16_use_large(rows, n, sms))
            gemm_bf16_launch<cfg_large>((int)rows, (int)n, (int)k, A, lda, W, k, c, ldc, obf, st);
        else
            gemm_bf16_launch<cfg_small>((int)rows, (int)n, (int)k, A, lda, W, k, c, ldc, obf, st);
    }
    return cu_check(m->ctx, "model gemm");
}
