/* RoPE'd loads of attention head vectors (a Q tile's rows, a head's Q, K
 * and V), shared by the tensor-core attention kernels (model_attn.cu,
 * model_attn_mma.cu): the row op's arithmetic (cpu/rope_scalar.c: each
 * product and the sum rounded separately, then the storage rounding),
 * applied while a head's Q or K is read, so qkv is never rewritten. */
#ifndef HRMT_CUDA_ATTN_ROPE_CUH
#define HRMT_CUDA_ATTN_ROPE_CUH

#include <stdint.h>

#include <cuda_bf16.h>

#include "cuda/bf16.cuh"
#include "cuda/cp_async.cuh"

namespace {

/* The RoPE factors of elements c..c+8 of position t. The tables are
 * model/weights.c's rope_tables, emb = cat(freqs, freqs): a row's second
 * half repeats its first bit for bit, so elements c + half use the same
 * factors and only the first half is read (half the table traffic). */
struct rope8 {
    float c[8], s[8];
};

__device__ __forceinline__ void rope_factors(const float *cs, const float *sn, int t, int d, int c,
                                             rope8 *r) {
    /* Table rows are d F32 wide, c a multiple of 8: 16-byte loads. */
    const float4 *c1 = (const float4 *)(cs + (size_t)t * d + c);
    const float4 *s1 = (const float4 *)(sn + (size_t)t * d + c);
    *(float4 *)r->c = c1[0], *(float4 *)(r->c + 4) = c1[1];
    *(float4 *)r->s = s1[0], *(float4 *)(r->s + 4) = s1[1];
}

/* One rotated pair (x1 at element j, x2 at j + half) at factors c, s: each
 * product and the sum rounded separately (the row op's arithmetic); the
 * caller rounds to the storage type. */
__device__ __forceinline__ void rope_pair(float f1, float f2, float c, float s, float *o1,
                                          float *o2) {
    *o1 = __fadd_rn(__fmul_rn(f1, c), __fmul_rn(-f2, s));
    *o2 = __fadd_rn(__fmul_rn(f2, c), __fmul_rn(f1, s));
}

/* x1 = elements c..c+8, x2 = c+half..c+half+8 of a head vector, rotated:
 * the row op's arithmetic (each product and the sum rounded separately,
 * then the storage rounding), as exact BF16 values. */
__device__ __forceinline__ void rope_rotate(uint4 a, uint4 b, const rope8 &r, uint4 *lo,
                                            uint4 *hi) {
    const uint32_t *x1 = (const uint32_t *)&a, *x2 = (const uint32_t *)&b;
    uint32_t y1[4], y2[4];
#pragma unroll
    for (int k = 0; k < 4; k++) { /* two elements per word */
        float o1[2], o2[2];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const float f1 = __uint_as_float(j ? x1[k] & 0xffff0000u : x1[k] << 16);
            const float f2 = __uint_as_float(j ? x2[k] & 0xffff0000u : x2[k] << 16);
            rope_pair(f1, f2, r.c[2 * k + j], r.s[2 * k + j], &o1[j], &o2[j]);
        }
        /* The hardware's paired RNE conversion: core/bf16.h's bits for
         * every non-NaN (a NaN stays a NaN, its payload may differ). */
        const __nv_bfloat162 p1 = __floats2bfloat162_rn(o1[0], o1[1]);
        const __nv_bfloat162 p2 = __floats2bfloat162_rn(o2[0], o2[1]);
        y1[k] = *(const uint32_t *)&p1;
        y2[k] = *(const uint32_t *)&p2;
    }
    *lo = *(const uint4 *)y1;
    *hi = *(const uint4 *)y2;
}

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
    rope8 r;
    rope_factors(cs, sn, t, d, c, &r);
    rope_rotate(a, b, r, lo, hi);
}

/* One head's K (RoPE'd) and V into shared memory as BF16 rows of ld
 * elements, Tp rows with the ones past T zero, and Q (RoPE'd, same rule)
 * for rows q0..q1 (none when q0 == q1) into Qs (row t at Qs + (t - q0) * ldq) with the
 * same factor loads as K's; `base` points at the head's slice of row 0 of qkv
 * [T, 3 * hidden]. All the block's threads take part; the caller
 * synchronises. */
template <int D>
__device__ __forceinline__ void load_qkv(const uint16_t *base, int T, int Tp, int hidden, int ld,
                                         const float *cs, const float *sn, uint16_t *Ks,
                                         uint16_t *Vs, int q0, int q1, uint16_t *Qs, int ldq) {
    constexpr int HALF = D / 2, PAIRS = D / 16; /* 8-wide chunk pairs per row */
    const size_t ld3 = 3 * (size_t)hidden;
    const uint4 z4 = make_uint4(0, 0, 0, 0);
    for (int e = threadIdx.x; e < Tp * PAIRS; e += blockDim.x) {
        /* Eight rows per chunk column in each quarter warp: its 16-byte
         * stores land on distinct banks (one row per quarter warp took two
         * rows' chunks onto the same banks). */
        const int t = e % 8 + e / (8 * PAIRS) * 8, c = e / 8 % PAIRS * 8;
        const bool wq = t >= q0 && t < q1;
        uint4 k1 = z4, k2 = z4, v1 = z4, v2 = z4, u1 = z4, u2 = z4;
        if (t < T) {
            const uint16_t *row = base + (size_t)t * ld3;
            /* qkv is read once: streaming loads (evict first), so that L1
             * keeps the RoPE factors every block of the launch reads. */
            k1 = __ldcs((const uint4 *)(row + hidden + c));
            k2 = __ldcs((const uint4 *)(row + hidden + c + HALF));
            v1 = __ldcs((const uint4 *)(row + 2 * hidden + c));
            v2 = __ldcs((const uint4 *)(row + 2 * hidden + c + HALF));
            if (wq) {
                u1 = __ldcs((const uint4 *)(row + c));
                u2 = __ldcs((const uint4 *)(row + c + HALF));
            }
            if (cs) {
                rope8 r;
                rope_factors(cs, sn, t, D, c, &r);
                rope_rotate(k1, k2, r, &k1, &k2);
                if (wq) rope_rotate(u1, u2, r, &u1, &u2);
            }
        }
        *(uint4 *)(Ks + t * ld + c) = k1;
        *(uint4 *)(Ks + t * ld + c + HALF) = k2;
        *(uint4 *)(Vs + t * ld + c) = v1;
        *(uint4 *)(Vs + t * ld + c + HALF) = v2;
        if (wq) {
            *(uint4 *)(Qs + (t - q0) * ldq + c) = u1;
            *(uint4 *)(Qs + (t - q0) * ldq + c + HALF) = u2;
        }
    }
}

/* Rows t0..t1 of a head vector block in shared memory (row t at
 * X + (t - base) * ld) RoPE'd in place at positions t. (load_qkv's
 * bank-friendly order, eight rows per chunk column, made ptxas spill 240
 * bytes in attend_mma<64, 6, true> under its 80-register cap; this order
 * and form spill nothing there.) */
template <int D>
__device__ __forceinline__ void rope_rows_smem(uint16_t *X, int ld, int t0, int t1, int base,
                                               const float *cs, const float *sn) {
    constexpr int HALF = D / 2, PAIRS = D / 16;
#pragma unroll 1
    for (int e = threadIdx.x + t0 * PAIRS; e < t1 * PAIRS; e += blockDim.x) {
        const int t = e / PAIRS, c = e % PAIRS * 8;
        rope8 r;
        rope_factors(cs, sn, t, D, c, &r);
        uint4 *x1 = (uint4 *)(X + (t - base) * ld + c);
        uint4 *x2 = (uint4 *)(X + (t - base) * ld + c + HALF);
        rope_rotate(*x1, *x2, r, x1, x2);
    }
}

/* K's rows 0..T and the block's Q rows q0..q1 (row t at Q + (t - q0) * ldq)
 * RoPE'd in place with one factor load per (row, chunk) for both: where
 * rope_rows_smem over K then over Q loads the factors of a row twice. Same
 * arithmetic, same bytes. (At batch 256 on the H200 the factor loads were
 * about half of attention's L2 traffic: 170 MB against 86 MB of qkv reads
 * and att writes, ncu, session 29.) */
/* Four elements at a time (8-byte shared accesses, four factors each of
 * cos and sin live): the eight-wide form made ptxas spill ~200 bytes in
 * attend_mma<64, 6, true> under its 80-register cap. */
__device__ __forceinline__ void rope_rotate4(uint2 *x1, uint2 *x2, float4 c, float4 s) {
    const uint32_t a[2] = {x1->x, x1->y}, b[2] = {x2->x, x2->y};
    const float cf[4] = {c.x, c.y, c.z, c.w}, sf[4] = {s.x, s.y, s.z, s.w};
    uint32_t y1[2], y2[2];
#pragma unroll
    for (int k = 0; k < 2; k++) {
        float o1[2], o2[2];
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const float f1 = __uint_as_float(j ? a[k] & 0xffff0000u : a[k] << 16);
            const float f2 = __uint_as_float(j ? b[k] & 0xffff0000u : b[k] << 16);
            rope_pair(f1, f2, cf[2 * k + j], sf[2 * k + j], &o1[j], &o2[j]);
        }
        const __nv_bfloat162 p1 = __floats2bfloat162_rn(o1[0], o1[1]);
        const __nv_bfloat162 p2 = __floats2bfloat162_rn(o2[0], o2[1]);
        y1[k] = *(const uint32_t *)&p1;
        y2[k] = *(const uint32_t *)&p2;
    }
    *x1 = make_uint2(y1[0], y1[1]);
    *x2 = make_uint2(y2[0], y2[1]);
}

/* K's rows 0..T and the block's Q rows q0..q1 (row t at Q + (t - q0) * ldq)
 * RoPE'd in place with one factor load per (row, 4-column chunk) for both,
 * where rope_rows_smem over K then over Q loads a row's factors twice. Same
 * arithmetic, same bytes. fetch() requests a thread's first NPRE chunks'
 * factors at once (at batch 256 a thread has ~3.4 chunks), before the
 * caller waits for its copies of qkv, so that their latencies overlap;
 * apply() rotates, the chunks past NPRE one load at a time. */
template <int D, int NPRE = 4>
struct rope_kq {
    static constexpr int HALF = D / 2, QUADS = D / 8; /* 4-wide chunks of a row's first half */
    float4 fc[NPRE], fs[NPRE];
    int b, f; /* rows of both K and Q: [b, f) */

    __device__ __forceinline__ static void factors(int e, const float *cs, const float *sn,
                                                   float4 *c4, float4 *s4) {
        const int t = e / QUADS, c = e % QUADS * 4;
        *c4 = *(const float4 *)(cs + (size_t)t * D + c);
        *s4 = *(const float4 *)(sn + (size_t)t * D + c);
    }
    __device__ __forceinline__ void fetch(int T, int q0, int q1, const float *cs, const float *sn) {
        b = q0 < T ? q0 : T;
        f = q1 < T ? q1 : T;
        const int e0 = threadIdx.x + b * QUADS;
#pragma unroll
        for (int i = 0; i < NPRE; i++)
            if (e0 + i * (int)blockDim.x < f * QUADS)
                factors(e0 + i * (int)blockDim.x, cs, sn, &fc[i], &fs[i]);
    }
    __device__ __forceinline__ void apply(uint16_t *K, int ld, int T, uint16_t *Q, int ldq, int q0,
                                          const float *cs, const float *sn) const {
        auto rotate = [&](int e, float4 c4, float4 s4) {
            const int t = e / QUADS, c = e % QUADS * 4;
            rope_rotate4((uint2 *)(K + t * ld + c), (uint2 *)(K + t * ld + c + HALF), c4, s4);
            rope_rotate4((uint2 *)(Q + (t - q0) * ldq + c),
                         (uint2 *)(Q + (t - q0) * ldq + c + HALF), c4, s4);
        };
        const int e0 = threadIdx.x + b * QUADS, step = blockDim.x, end = f * QUADS;
#pragma unroll
        for (int i = 0; i < NPRE; i++)
            if (e0 + i * step < end) rotate(e0 + i * step, fc[i], fs[i]);
#pragma unroll 1
        for (int e = e0 + NPRE * step; e < end; e += step) {
            float4 c4, s4;
            factors(e, cs, sn, &c4, &s4);
            rotate(e, c4, s4);
        }
        /* K's other rows. */
        rope_rows_smem<D>(K, ld, 0, b, 0, cs, sn);
        rope_rows_smem<D>(K, ld, f, T, 0, cs, sn);
    }
};

/* load_qkv's result by another route: every row is first copied as it is
 * with cp.async (all of a thread's copies in flight at once, no registers
 * held; rows past T zero-filled), then K's and Q's real rows are rotated in
 * shared memory with the same arithmetic. One memory round trip per block
 * instead of one per loop pass. Same arguments, same bytes; the caller
 * synchronises. ONCE: K's and Q's rotations share each factor load
 * (rope_kq; HRMT_CUDA_ATTN_ROPE_ONCE). EF: the copies evict-first in L2
 * (HRMT_CUDA_ATTN_STREAM: q, k and v are read here for the last time). */
template <int D, bool ONCE = false, bool EF = false>
__device__ __forceinline__ void load_qkv_async(const uint16_t *base, int T, int Tp, int hidden,
                                               int ld, const float *cs, const float *sn,
                                               uint16_t *Ks, uint16_t *Vs, int q0, int q1,
                                               uint16_t *Qs, int ldq) {
    constexpr int CH = D / 8; /* 16-byte chunks per row */
    const size_t ld3 = 3 * (size_t)hidden;
    uint64_t pol = 0;
    if (EF) pol = l2_evict_first_policy();
    auto copy = [&](void *dst, const void *src, int n) {
        if (EF)
            cp_async16_hint(dst, src, n, pol);
        else
            cp_async16(dst, src, n);
    };
#pragma unroll 1
    for (int e = threadIdx.x; e < Tp * CH; e += blockDim.x) {
        const int t = e / CH, c = e % CH * 8;
        const bool real = t < T;
        const uint16_t *row = base + (size_t)(real ? t : 0) * ld3;
        const int n = real ? 16 : 0;
        copy(Ks + t * ld + c, row + hidden + c, n);
        copy(Vs + t * ld + c, row + 2 * hidden + c, n);
        if (t >= q0 && t < q1) copy(Qs + (t - q0) * ldq + c, row + c, n);
    }
    cp_async_commit();
    rope_kq<D> rk;
    if (ONCE && cs) rk.fetch(T, q0, q1, cs, sn); /* while the copies fly */
    cp_async_wait<0>();
    if (!cs) return;
    __syncthreads();
    if (ONCE) {
        rk.apply(Ks, ld, T, Qs, ldq, q0, cs, sn);
        return;
    }
    /* K's rows, then the block's Q rows: fewer values live at once (the
     * caller's register cap). */
    rope_rows_smem<D>(Ks, ld, 0, T, 0, cs, sn);
    rope_rows_smem<D>(Qs, ldq, q0, q1 < T ? q1 : T, q0, cs, sn);
}

} // namespace

#endif
