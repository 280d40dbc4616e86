/* The model's own GEMMs, C = A W^T, deterministic per row: cuBLASLt may pick
 * another algorithm (split-K, another K order) for another M, which would
 * make a tile's bits differ from the whole batch's. Here every C element is
 * one F32 accumulation over k in ascending order whatever M is; the kernels
 * and why the tile choice keeps the bits are in model_gemm_kernels.cuh. */
#include "cuda/model_gemm_kernels.cuh"
#include "cuda/model_internal.cuh"

hrmt_status cu_gemm(const hrmt_model *m, size_t rows, size_t n, size_t k, const void *a, size_t lda,
                    const void *w, void *c, hrmt_dtype cdt, size_t ldc) {
    if (rows == 0) return HRMT_OK;
    /* Row blocks on grid x (up to 2^31 - 1), column blocks on y (65535 of
     * the narrowest tile, 64). */
    if (rows > (size_t)INT32_MAX || n > (size_t)65535 * FBN || k > (size_t)INT32_MAX)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda gemm: %zux%zux%zu is too large", rows, n,
                         k);
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
