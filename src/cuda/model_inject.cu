/* The levels' input injection as one kernel: z = z + (a + b) for the L level
 * (a = z_H, b = the input embedding), z = z + a for the H level, launched by
 * programmatic dependent launch (pdl.cuh) like the block's kernels. Launch
 * by launch it was two row-op adds for the L level (inj = a + b, then
 * z + inj), each a link of the step's dependency chain at small batches.
 *
 * Bits: the row-op add's (rowops_elem.cu, AddOp): each sum one F32 add of
 * the BF16 operands, rounded to BF16 by the device's conversion, the inner
 * sum rounded before the outer add exactly as the two launches round it
 * (inject_pair.cuh, which the folded forms share). */
#include "cuda/cuda_backend.h"
#include "cuda/inject_pair.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"

namespace {

constexpr int INJ_THREADS = 256;

/* 8 BF16 values per uint4; THREE: o = z + bf16(a + b), else o = z + a. */
template <bool THREE>
__global__ void __launch_bounds__(INJ_THREADS)
    inject_kernel(size_t n8, const uint4 *z, const uint4 *a, const uint4 *b, uint4 *o) {
    pdl_wait(); /* z, a and b are earlier kernels' */
    pdl_trigger();
    for (size_t i = (size_t)blockIdx.x * INJ_THREADS + threadIdx.x; i < n8;
         i += (size_t)gridDim.x * INJ_THREADS) {
        const uint4 vz = z[i], va = a[i], vb = THREE ? b[i] : make_uint4(0, 0, 0, 0);
        o[i] =
            make_uint4(inject_pair<THREE>(vz.x, va.x, vb.x), inject_pair<THREE>(vz.y, va.y, vb.y),
                       inject_pair<THREE>(vz.z, va.z, vb.z), inject_pair<THREE>(vz.w, va.w, vb.w));
    }
}

} // namespace

hrmt_status cu_inject(const hrmt_model *m, void *z, const void *a, const void *b, size_t rows,
                      int *done) {
    const size_t n = rows * m->hidden;
    *done = 0;
    if (!cu_model(m)->inject || m->dt != HRMT_BF16 || n % 8 != 0 || n == 0 ||
        ((uintptr_t)z | (uintptr_t)a | (uintptr_t)b) % 16 != 0)
        return HRMT_OK;
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t n8 = n / 8, want = (n8 + INJ_THREADS - 1) / INJ_THREADS,
                 cap = (size_t)(sms > 0 ? sms : 1) * 8;
    const dim3 grid((unsigned)(want < cap ? want : cap));
    const int pdl = cu_model(m)->pdl;
    cudaError_t e;
    if (b)
        e = pdl_launch(inject_kernel<true>, grid, dim3(INJ_THREADS), 0, cu_stream(m), pdl, n8,
                       (const uint4 *)z, (const uint4 *)a, (const uint4 *)b, (uint4 *)z);
    else
        e = pdl_launch(inject_kernel<false>, grid, dim3(INJ_THREADS), 0, cu_stream(m), pdl, n8,
                       (const uint4 *)z, (const uint4 *)a, (const uint4 *)nullptr, (uint4 *)z);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda injection");
    *done = 1;
    return cu_check(m->ctx, "cuda injection");
}
