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

/* The tiered schedule's tile links (HRMT_CUDA_TILE_LINKS): tile_in makes
 * the tile's injection inj = bf16(zH + x) and its z_L already injected, tz =
 * bf16(zL + inj) (inject_pair's three-operand form: the bits of the copy,
 * the add and the first L level's injection kernel it replaces); tile_out
 * copies tz back to zL and, with HINJ, makes the H level's injection on the
 * tile's rows, zH = bf16(zH + tz) (the injection kernel's two-operand form). */
__global__ void __launch_bounds__(INJ_THREADS)
    tile_in_kernel(size_t n8, const uint4 *zL, const uint4 *zH, const uint4 *x, uint4 *tz,
                   uint4 *tinj) {
    pdl_wait(); /* zL, zH and x are earlier kernels' */
    pdl_trigger();
    for (size_t i = (size_t)blockIdx.x * INJ_THREADS + threadIdx.x; i < n8;
         i += (size_t)gridDim.x * INJ_THREADS) {
        const uint4 vl = zL[i], vh = zH[i], vx = x[i];
        tinj[i] = make_uint4(inject_pair<false>(vh.x, vx.x, 0), inject_pair<false>(vh.y, vx.y, 0),
                             inject_pair<false>(vh.z, vx.z, 0), inject_pair<false>(vh.w, vx.w, 0));
        tz[i] =
            make_uint4(inject_pair<true>(vl.x, vh.x, vx.x), inject_pair<true>(vl.y, vh.y, vx.y),
                       inject_pair<true>(vl.z, vh.z, vx.z), inject_pair<true>(vl.w, vh.w, vx.w));
    }
}

template <bool HINJ>
__global__ void __launch_bounds__(INJ_THREADS)
    tile_out_kernel(size_t n8, const uint4 *tz, uint4 *zL, uint4 *zH) {
    pdl_wait(); /* tz is the tile's last kernel's */
    pdl_trigger();
    for (size_t i = (size_t)blockIdx.x * INJ_THREADS + threadIdx.x; i < n8;
         i += (size_t)gridDim.x * INJ_THREADS) {
        const uint4 vt = tz[i];
        zL[i] = vt;
        if (HINJ) {
            const uint4 vh = zH[i];
            zH[i] =
                make_uint4(inject_pair<false>(vh.x, vt.x, 0), inject_pair<false>(vh.y, vt.y, 0),
                           inject_pair<false>(vh.z, vt.z, 0), inject_pair<false>(vh.w, vt.w, 0));
        }
    }
}

/* Elements of `rows` rows in 8-wide chunks and the grid over them, or 0
 * where the 16-byte kernels do not serve (`on` 0: switched off; other
 * dtypes, widths, alignment of the pointers or'd in ptrs). *done = 0. */
size_t chunks(const hrmt_model *m, int on, size_t rows, uintptr_t ptrs, dim3 *grid, int *done) {
    const size_t n = rows * m->hidden;
    *done = 0;
    if (!on || m->dt != HRMT_BF16 || n % 8 != 0 || n == 0 || ptrs % 16 != 0) return 0;
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t n8 = n / 8, want = (n8 + INJ_THREADS - 1) / INJ_THREADS,
                 cap = (size_t)(sms > 0 ? sms : 1) * 8;
    *grid = dim3((unsigned)(want < cap ? want : cap));
    return n8;
}

/* A launch's status as the wrappers report it: *done = 1 once it is queued. */
hrmt_status launched(const hrmt_model *m, cudaError_t e, const char *what, int *done) {
    if (e != cudaSuccess) return cu_fail(m->ctx, e, what);
    *done = 1;
    return cu_check(m->ctx, what);
}

} // namespace

hrmt_status cu_tile_in(const hrmt_model *m, const void *zL, const void *zH, const void *x, void *tz,
                       void *tinj, size_t rows, int *done) {
    dim3 grid;
    const uintptr_t ptrs =
        (uintptr_t)zL | (uintptr_t)zH | (uintptr_t)x | (uintptr_t)tz | (uintptr_t)tinj;
    const size_t n8 = chunks(m, cu_model(m)->tile_links, rows, ptrs, &grid, done);
    if (!n8) return HRMT_OK;
    const cudaError_t e = pdl_launch(tile_in_kernel, grid, dim3(INJ_THREADS), 0, cu_stream(m),
                                     cu_model(m)->pdl, n8, (const uint4 *)zL, (const uint4 *)zH,
                                     (const uint4 *)x, (uint4 *)tz, (uint4 *)tinj);
    return launched(m, e, "cuda tiered: tile in", done);
}

hrmt_status cu_tile_out(const hrmt_model *m, const void *tz, void *zL, void *zH, size_t rows,
                        int *done) {
    dim3 grid;
    const uintptr_t ptrs = (uintptr_t)tz | (uintptr_t)zL | (uintptr_t)zH;
    const size_t n8 = chunks(m, cu_model(m)->tile_links, rows, ptrs, &grid, done);
    if (!n8) return HRMT_OK;
    const cudaError_t e =
        pdl_launch(zH ? tile_out_kernel<true> : tile_out_kernel<false>, grid, dim3(INJ_THREADS), 0,
                   cu_stream(m), cu_model(m)->pdl, n8, (const uint4 *)tz, (uint4 *)zL, (uint4 *)zH);
    return launched(m, e, "cuda tiered: tile out", done);
}

hrmt_status cu_inject(const hrmt_model *m, void *z, const void *a, const void *b, size_t rows,
                      int *done) {
    dim3 grid;
    const uintptr_t ptrs = (uintptr_t)z | (uintptr_t)a | (uintptr_t)b;
    const size_t n8 = chunks(m, cu_model(m)->inject, rows, ptrs, &grid, done);
    if (!n8) return HRMT_OK;
    const cudaError_t e = pdl_launch(
        b ? inject_kernel<true> : inject_kernel<false>, grid, dim3(INJ_THREADS), 0, cu_stream(m),
        cu_model(m)->pdl, n8, (const uint4 *)z, (const uint4 *)a, (const uint4 *)b, (uint4 *)z);
    return launched(m, e, "cuda injection", done);
}
