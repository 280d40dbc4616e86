/* 16-byte vector access for the row-op kernels: N = 4 F32 or 8 BF16 elements
 * per uint4. Callers check alignment first (rows_aligned) and fall back to
 * element loads otherwise. */
#ifndef HRMT_CUDA_ROWOPS_VEC_CUH
#define HRMT_CUDA_ROWOPS_VEC_CUH

#include "cuda/rowops_common.cuh"

namespace hrmt_rowops_cuda {

template <int BF>
struct VecN {
    static constexpr int N = BF ? 8 : 4;
};

/* v[0..N) = elements j..j+N of row p (j a multiple of N). */
template <int BF>
__device__ __forceinline__ void ld_vec(const void *p, size_t j, float *v) {
    const uint4 q = *(const uint4 *)((const char *)p + j * (BF ? 2 : 4));
    const uint32_t w[4] = {q.x, q.y, q.z, q.w};
    HRMT_UNROLL
    for (int k = 0; k < 4; k++) {
        if (BF) {
            v[2 * k] = bf16_to_f((uint16_t)(w[k] & 0xffffu));
            v[2 * k + 1] = bf16_to_f((uint16_t)(w[k] >> 16));
        } else {
            v[k] = ffrom(w[k]);
        }
    }
}

/* Packs N floats into the storage dtype (BF16 rounded to nearest even). */
template <int BF>
__device__ __forceinline__ uint4 pack_vec(const float *v) {
    uint32_t w[4];
    HRMT_UNROLL
    for (int k = 0; k < 4; k++) w[k] = BF ? pack_bf16x2(v[2 * k], v[2 * k + 1]) : fbits(v[k]);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* nt: streaming store (evict-first), the CPU tables' non-temporal store. */
template <int BF>
__device__ __forceinline__ void st_vec(void *p, size_t j, const float *v, int nt) {
    uint4 *d = (uint4 *)((char *)p + j * (BF ? 2 : 4));
    const uint4 q = pack_vec<BF>(v);
    if (nt)
        __stcs(d, q);
    else
        *d = q;
}

/* N consecutive F32 weights (w 16-byte aligned, j a multiple of N). */
template <int BF>
__device__ __forceinline__ void ld_w(const float *w, size_t j, float *v) {
    const float4 a = *(const float4 *)(w + j);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    if (BF) {
        const float4 b = *(const float4 *)(w + j + 4);
        v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
    }
}

} // namespace hrmt_rowops_cuda

#endif
