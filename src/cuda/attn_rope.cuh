/* RoPE'd loads of attention head vectors (a Q tile's rows, a head's K and
 * V), shared by the tensor-core attention kernels (model_attn.cu,
 * model_attn_mma.cu): the row op's
 * arithmetic (cpu/rope_scalar.c: each product and the sum rounded
 * separately, then the storage rounding), applied while a head's Q or K is
 * read, so qkv is never rewritten. */
#ifndef HRMT_CUDA_ATTN_ROPE_CUH
#define HRMT_CUDA_ATTN_ROPE_CUH

#include <stdint.h>

#include "cuda/bf16.cuh"

namespace {

/* Elements c..c+8 and c+half..c+half+8 of the head vector at `v` (16-byte
 * aligned), RoPE'd at position t when cs is set, as exact BF16 values. */
__device__ __forceinline__ void load_pair(const uint16_t *v, int c, int half, int d, int t,
                                          const float *cs, const float *sn, uint4 *lo, uint4 *hi) {
    const uint4 a = *(const uint4 *)(v + c), b = *(const uint4 *)(v + c + half);
    if (!cs) {
        *lo = a;
        *hi = b;
        return;
    }
    const uint16_t *x1 = (const uint16_t *)&a, *x2 = (const uint16_t *)&b;
    /* Table rows are d F32 wide, c and half multiples of 8: 16-byte loads. */
    const float4 *c1 = (const float4 *)(cs + (size_t)t * d + c), *c2 = c1 + half / 4;
    const float4 *s1 = (const float4 *)(sn + (size_t)t * d + c), *s2 = s1 + half / 4;
    float cv1[8], cv2[8], sv1[8], sv2[8];
    *(float4 *)cv1 = c1[0], *(float4 *)(cv1 + 4) = c1[1];
    *(float4 *)cv2 = c2[0], *(float4 *)(cv2 + 4) = c2[1];
    *(float4 *)sv1 = s1[0], *(float4 *)(sv1 + 4) = s1[1];
    *(float4 *)sv2 = s2[0], *(float4 *)(sv2 + 4) = s2[1];
    uint16_t y1[8], y2[8];
#pragma unroll
    for (int k = 0; k < 8; k++) {
        const float f1 = __uint_as_float((uint32_t)x1[k] << 16);
        const float f2 = __uint_as_float((uint32_t)x2[k] << 16);
        y1[k] = hrmt_cu_f32_to_bf16(__fadd_rn(__fmul_rn(f1, cv1[k]), __fmul_rn(-f2, sv1[k])));
        y2[k] = hrmt_cu_f32_to_bf16(__fadd_rn(__fmul_rn(f2, cv2[k]), __fmul_rn(f1, sv2[k])));
    }
    *lo = *(const uint4 *)y1;
    *hi = *(const uint4 *)y2;
}

/* One head's K (RoPE'd) and V into shared memory as BF16 rows of ld
 * elements, Tp rows with the ones past T zero; `base` points at the head's
 * slice of row 0 of qkv [T, 3 * hidden]. All the block's threads take part;
 * the caller synchronises. */
template <int D>
__device__ __forceinline__ void load_kv(const uint16_t *base, int T, int Tp, int hidden, int ld,
                                        const float *cs, const float *sn, uint16_t *Ks,
                                        uint16_t *Vs) {
    constexpr int HALF = D / 2, PAIRS = D / 16; /* 8-wide chunk pairs per row */
    const size_t ld3 = 3 * (size_t)hidden;
    const uint4 z4 = make_uint4(0, 0, 0, 0);
    for (int e = threadIdx.x; e < Tp * PAIRS; e += blockDim.x) {
        /* Eight rows per chunk column in each quarter warp: its 16-byte
         * stores land on distinct banks (one row per quarter warp took two
         * rows' chunks onto the same banks). */
        const int t = e % 8 + e / (8 * PAIRS) * 8, c = e / 8 % PAIRS * 8;
        uint4 k1 = z4, k2 = z4, v1 = z4, v2 = z4;
        if (t < T) {
            const uint16_t *row = base + (size_t)t * ld3;
            load_pair(row + hidden, c, HALF, D, t, cs, sn, &k1, &k2);
            v1 = *(const uint4 *)(row + 2 * hidden + c);
            v2 = *(const uint4 *)(row + 2 * hidden + c + HALF);
        }
        *(uint4 *)(Ks + t * ld + c) = k1;
        *(uint4 *)(Ks + t * ld + c + HALF) = k2;
        *(uint4 *)(Vs + t * ld + c) = v1;
        *(uint4 *)(Vs + t * ld + c + HALF) = v2;
    }
}

} // namespace

#endif
