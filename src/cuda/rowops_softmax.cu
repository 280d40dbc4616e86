/* Softmax, bits of cpu/softmax_scalar.c.
 *
 * Mapping: one warp per row, 1, 2 or 4 rows per block (grid-stride); rows
 * of 8..128 elements: eight lanes per row (softmax_short_kernel).
 * Order:
 *  - m = max(scale * x): order-free (a NaN anywhere gives NaN; which of +0
 *    and -0 wins cannot change exp(v - m)), lane maxima then shuffles;
 *  - e_j = expf_fma(scale * x_j - m), every lane, parked in shared memory as
 *    F32 (the reference parks them in `out` for F32 and recomputes the same
 *    bits for BF16);
 *  - the sum is the reference's 8 lane chains: warp lane k < 8 adds e_j for
 *    j = k, k + 8, ... in increasing j (one chain per thread, never split),
 *    then lane 0 folds them as cpu/softmax_order.h;
 *  - out_j = e_j * (1 / sum), element-wise.
 * Rows longer than HRMT_ROW_SMEM_MAX / 4 (12288) recompute e_j in the chain
 * and scale passes instead of parking them (same bits, slower). */
#include "cuda/cuda_backend.h"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_vec.cuh"

using namespace hrmt_rowops_cuda;

namespace {

#define HRMT_SOFTMAX_WARPS 4

/* NaN-propagating max (either NaN gives NaN). */
__device__ __forceinline__ float nan_max(float a, float b) {
    if (a != a || b != b) return a != a ? a : b;
    return b > a ? b : a;
}

template <int BF, bool SMEM, bool VEC>
__global__ void __launch_bounds__(HRMT_SOFTMAX_WARPS * 32)
    softmax_kernel(size_t rows, size_t cols, const void *x, size_t ldx, float scale, void *out,
                   size_t ldo) {
    constexpr size_t es = BF ? 2 : 4;
    constexpr int N = VecN<BF>::N;
    extern __shared__ float4 softmax_smem[];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const size_t nv = VEC ? cols / N : 0, tail = nv * N;
    float *e = (float *)(softmax_smem + (size_t)warp * cdiv(cols, 4));
    for (size_t row = (size_t)blockIdx.x * nw + warp; row < rows; row += (size_t)gridDim.x * nw) {
        const char *xr = (const char *)x + row * ldx * es;
        char *o = (char *)out + row * ldo * es;
        float m = -INFINITY;
        for (size_t v = lane; VEC && v < nv; v += 32) {
            float a[8];
            ld_vec<BF>(xr, v * N, a);
            HRMT_UNROLL
            for (int k = 0; k < N; k++) m = nan_max(m, fmul(scale, a[k]));
        }
        for (size_t j = tail + lane; j < cols; j += 32)
            m = nan_max(m, fmul(scale, ld_el<BF>(xr, j)));
        HRMT_UNROLL
        for (int d = 16; d >= 1; d /= 2) m = nan_max(m, __shfl_xor_sync(HRMT_FULL_MASK, m, d));
        auto ex = [&](size_t j) { return expf_fma(fsub(fmul(scale, ld_el<BF>(xr, j)), m)); };
        if (SMEM) {
            for (size_t v = lane; VEC && v < nv; v += 32) {
                float a[8];
                ld_vec<BF>(xr, v * N, a);
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = expf_fma(fsub(fmul(scale, a[k]), m));
                HRMT_UNROLL
                for (int k = 0; k < N; k += 4)
                    *(float4 *)(e + v * N + k) = make_float4(a[k], a[k + 1], a[k + 2], a[k + 3]);
            }
            for (size_t j = tail + lane; j < cols; j += 32) e[j] = ex(j);
            __syncwarp();
        }
        /* Lane k < 8: the reference's lane k, in increasing j. */
        float l = 0.0f;
        if (lane < 8) {
            size_t j = lane;
            if (SMEM) {
                for (; j + 7 * 8 < cols; j += 8 * 8) {
                    float t[8];
                    HRMT_UNROLL
                    for (int k = 0; k < 8; k++) t[k] = e[j + 8 * k];
                    HRMT_UNROLL
                    for (int k = 0; k < 8; k++) l = fadd(l, t[k]);
                }
            }
            for (; j < cols; j += 8) l = fadd(l, SMEM ? e[j] : ex(j));
        }
        float ls[8];
        HRMT_UNROLL
        for (int k = 0; k < 8; k++) ls[k] = __shfl_sync(HRMT_FULL_MASK, l, k);
        float sum;
        if (cols < 8) {
            sum = ls[0];
            HRMT_UNROLL
            for (int k = 1; k < 8; k++)
                if ((size_t)k < cols) sum = fadd(sum, ls[k]);
        } else {
            const float h0 = fadd(ls[0], ls[4]), h1 = fadd(ls[1], ls[5]);
            const float h2 = fadd(ls[2], ls[6]), h3 = fadd(ls[3], ls[7]);
            sum = fadd(fadd(h0, h2), fadd(h1, h3));
        }
        const float inv = fdiv(1.0f, sum);
        for (size_t v = lane; VEC && v < nv; v += 32) {
            float a[8];
            if (SMEM) {
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = e[v * N + k];
            } else {
                ld_vec<BF>(xr, v * N, a);
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = expf_fma(fsub(fmul(scale, a[k]), m));
            }
            HRMT_UNROLL
            for (int k = 0; k < N; k++) a[k] = fmul(a[k], inv);
            st_vec<BF>(o, v * N, a, 0);
        }
        for (size_t j = tail + lane; j < cols; j += 32)
            st_el<BF>(o, j, fmul(SMEM ? e[j] : ex(j), inv));
        if (SMEM) __syncwarp(); /* the next row reuses e */
    }
}

/* Short rows (8 <= cols <= 8 * SHORT_PER): eight lanes per row, four rows per
 * warp, everything in registers. Lane k of a row's group is the reference's
 * chain k (j = k, k + 8, ... in increasing j), so the bits are the same as
 * above; the point is four rows in flight per warp instead of one (HRM's
 * attention rows are 82 wide). */
#define HRMT_SOFTMAX_SHORT_PER 16

template <int BF>
__global__ void __launch_bounds__(HRMT_SOFTMAX_WARPS * 32)
    softmax_short_kernel(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                         void *out, size_t ldo) {
    constexpr size_t es = BF ? 2 : 4;
    constexpr int PER = HRMT_SOFTMAX_SHORT_PER;
    const unsigned lane = threadIdx.x & 31, k = lane & 7, grp = lane >> 3;
    const size_t per_block = (size_t)(blockDim.x >> 5) * 4;
    for (size_t r0 = (size_t)blockIdx.x * per_block; r0 < rows;
         r0 += (size_t)gridDim.x * per_block) {
        const size_t row = r0 + (threadIdx.x >> 5) * 4 + grp;
        const bool live = row < rows;
        const char *xr = (const char *)x + (live ? row : 0) * ldx * es;
        float v[PER];
        float m = -INFINITY;
        HRMT_UNROLL
        for (int i = 0; i < PER; i++) {
            const size_t j = k + 8 * (size_t)i;
            v[i] = live && j < cols ? fmul(scale, ld_el<BF>(xr, j)) : 0.0f;
            if (live && j < cols) m = nan_max(m, v[i]);
        }
        HRMT_UNROLL
        for (int d = 4; d >= 1; d /= 2) m = nan_max(m, __shfl_xor_sync(HRMT_FULL_MASK, m, d));
        float l = 0.0f;
        HRMT_UNROLL
        for (int i = 0; i < PER; i++) {
            const size_t j = k + 8 * (size_t)i;
            if (live && j < cols) {
                v[i] = expf_fma(fsub(v[i], m));
                l = fadd(l, v[i]);
            }
        }
        float ls[8];
        HRMT_UNROLL
        for (int q = 0; q < 8; q++) ls[q] = __shfl_sync(HRMT_FULL_MASK, l, (int)(grp * 8 + q));
        const float h0 = fadd(ls[0], ls[4]), h1 = fadd(ls[1], ls[5]);
        const float h2 = fadd(ls[2], ls[6]), h3 = fadd(ls[3], ls[7]);
        const float inv = fdiv(1.0f, fadd(fadd(h0, h2), fadd(h1, h3)));
        char *o = (char *)out + (live ? row : 0) * ldo * es;
        HRMT_UNROLL
        for (int i = 0; i < PER; i++) {
            const size_t j = k + 8 * (size_t)i;
            if (live && j < cols) st_el<BF>(o, j, fmul(v[i], inv));
        }
    }
}

template <int BF>
static void softmax_cuda(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                         void *out, size_t ldo) {
    if (rows == 0 || cols == 0) return;
    if (cols >= 8 && cols <= 8 * HRMT_SOFTMAX_SHORT_PER) {
        const unsigned blocks = row_blocks(rows, HRMT_SOFTMAX_WARPS * 4);
        softmax_short_kernel<BF><<<blocks, HRMT_SOFTMAX_WARPS * 32, 0, cudaStreamPerThread>>>(
            rows, cols, x, ldx, scale, out, ldo);
        return;
    }
    const size_t es = BF ? 2 : 4, row_bytes = cdiv(cols, 4) * 16;
    const unsigned nw = row_warps(row_bytes, HRMT_SOFTMAX_WARPS);
    const bool vec = rows_aligned(x, ldx, es, 16) && rows_aligned(out, ldo, es, 16);
    const unsigned w_blk = nw ? nw : HRMT_SOFTMAX_WARPS;
    const dim3 grid(row_blocks(rows, w_blk)), block(w_blk * 32);
    const size_t sm = nw ? w_blk * row_bytes : 0;
    const cudaStream_t s = cudaStreamPerThread;
#define HRMT_SOFTMAX_GO(SM, V) \
    softmax_kernel<BF, SM, V><<<grid, block, sm, s>>>(rows, cols, x, ldx, scale, out, ldo)
    if (nw)
        vec ? HRMT_SOFTMAX_GO(true, true) : HRMT_SOFTMAX_GO(true, false);
    else
        vec ? HRMT_SOFTMAX_GO(false, true) : HRMT_SOFTMAX_GO(false, false);
#undef HRMT_SOFTMAX_GO
}

} // namespace

void hrmt_rowops_fill_cuda_softmax(hrmt_rowops *t) {
    t->softmax[HRMT_F32] = softmax_cuda<0>;
    t->softmax[HRMT_BF16] = softmax_cuda<1>;
}
