/* Element-wise row ops: one thread per (row, chunk of 8 elements), the
 * (row, chunk) pairs flattened so that a warp's chunks are consecutive in
 * memory (coalesced) whatever the row width, and one launch covers any
 * number of rows (grid-stride past 2^31 - 1 blocks). Each element's result
 * depends on that element only, so the mapping cannot change any bits. */
#ifndef HRMT_CUDA_ROWOPS_TILE_CUH
#define HRMT_CUDA_ROWOPS_TILE_CUH

#include "cuda/rowops_common.cuh"

namespace hrmt_rowops_cuda {

#define HRMT_TILE_N 8 /* elements per chunk: 16 bytes of BF16, 32 of F32 */
#define HRMT_TILE_THREADS 256

/* 8 elements j..j+8 of row p, 16-byte aligned (F32: two loads). */
template <int BF>
__device__ __forceinline__ void ld8(const void *p, size_t j, float *v) {
    const uint4 *s = (const uint4 *)((const char *)p + j * (BF ? 2 : 4));
    const uint4 q0 = s[0];
    if (BF) {
        const uint32_t w[4] = {q0.x, q0.y, q0.z, q0.w};
        HRMT_UNROLL
        for (int k = 0; k < 4; k++) {
            v[2 * k] = bf16_to_f((uint16_t)(w[k] & 0xffffu));
            v[2 * k + 1] = bf16_to_f((uint16_t)(w[k] >> 16));
        }
    } else {
        const uint4 q1 = s[1];
        const uint32_t w[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
        HRMT_UNROLL
        for (int k = 0; k < 8; k++) v[k] = ffrom(w[k]);
    }
}

/* ARITH: the values come out of device arithmetic (pack_bf16x2_arith: no NaN
 * test); otherwise they may be loaded NaNs whose pattern f_to_bf16 keeps. */
template <int BF, bool ARITH = false>
__device__ __forceinline__ void st8(void *p, size_t j, const float *v, int nt) {
    uint4 *d = (uint4 *)((char *)p + j * (BF ? 2 : 4));
    uint32_t w[8];
    if (BF) {
        HRMT_UNROLL
        for (int k = 0; k < 4; k++)
            w[k] = ARITH ? pack_bf16x2_arith(v[2 * k], v[2 * k + 1])
                         : pack_bf16x2(v[2 * k], v[2 * k + 1]);
    } else {
        HRMT_UNROLL
        for (int k = 0; k < 8; k++) w[k] = fbits(v[k]);
    }
    const uint4 q0 = make_uint4(w[0], w[1], w[2], w[3]);
    if (nt)
        __stcs(d, q0);
    else
        d[0] = q0;
    if (!BF) {
        const uint4 q1 = make_uint4(w[4], w[5], w[6], w[7]);
        if (nt)
            __stcs(d + 1, q1);
        else
            d[1] = q1;
    }
}

/* op(row, chunk) for every row < rows, chunk < nchunks. */
template <class Op>
__global__ void tile_kernel(Op op, size_t rows, size_t nchunks) {
    const size_t total = rows * nchunks, step = (size_t)gridDim.x * blockDim.x;
    const bool narrow = total <= 0xffffffffu; /* 32-bit division when it fits */
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        size_t r, c;
        if (narrow) {
            r = (uint32_t)i / (uint32_t)nchunks;
            c = (uint32_t)i - (uint32_t)r * (uint32_t)nchunks;
        } else {
            r = i / nchunks;
            c = i - r * nchunks;
        }
        op(r, c);
    }
}

template <class Op>
static void tile_launch(const Op &op, size_t rows, size_t nchunks) {
    if (rows == 0 || nchunks == 0) return;
    const size_t b = cdiv(rows * nchunks, HRMT_TILE_THREADS);
    const unsigned blocks = (unsigned)(b < 0x7fffffffu ? b : 0x7fffffffu);
    tile_kernel<<<blocks, HRMT_TILE_THREADS, 0, cudaStreamPerThread>>>(op, rows, nchunks);
}

/* Chunks of a row of `cols`: 8 elements each with vectors, else 1. */
static inline size_t tile_chunks(size_t cols, bool vec) {
    return vec ? cdiv(cols, HRMT_TILE_N) : cols;
}

} // namespace hrmt_rowops_cuda

#endif
