/* What the qkv + attention kernels share (sm90a/qkv_attn_wgmma.cu, a
 * cluster of six per (sample, head); sm90a/qkv_attn_cta_wgmma.cu, one CTA):
 * their arguments, the CTA form's ring (producer and products), and the
 * epilogue that makes a warpgroup's 64 x D block of the head's q, k or v as
 * attention reads it - one function each, so that the forms give the same
 * bits by construction. */
#ifndef HRMT_CUDA_SM90A_QKV_ATTN_COMMON_CUH
#define HRMT_CUDA_SM90A_QKV_ATTN_COMMON_CUH

#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "cuda/attn_rope.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/wgmma_common.cuh" /* HRMT_SM90A */

namespace {

/* The kernels' arguments: T, hidden, heads, k blocks of 64, att [n T, H]
 * (the head's 64 columns at head 64), the RoPE tables [T, 64] (NULL: no
 * RoPE), the softmax scale. */
struct qkv_attn_args {
    int T, H, heads, kblocks;
    uint16_t *att;
    const float *cs, *sn;
    float scale;
};

/* Whether a qkv + attention form can serve model m: BF16 on compute
 * capability 9.0, head_dim 64 with heads x 64 = hidden, hidden a multiple
 * of 64 up to 512 (the forms the device tests cover, hidden 256 and 512;
 * the cluster form's ring holds every k block), t_above < T <= 128, and the
 * tensor-map encoder. */
inline bool qkv_attn_serves(const hrmt_model *m, size_t t_above) {
    const hrmt_cuda *cu = m->ctx->cuda;
    const size_t T = m->T, H = m->hidden;
    return m->dt == HRMT_BF16 && cu->prop.major == 9 && cu->prop.minor == 0 && m->head_dim == 64 &&
           m->heads * 64 == H && H % BK == 0 && H <= 512 && T > t_above && T <= 128 &&
           encode_fn() != nullptr;
}

/* Whether a form of which `wave` (sample, head) pairs run at once serves n
 * samples in one wave, with att's rows 16-byte aligned and sizes the
 * kernels' int arithmetic holds. */
inline bool qkv_attn_one_wave(const hrmt_model *m, size_t n, const void *att, int wave) {
    return n > 0 && n * m->heads <= (size_t)wave && (uintptr_t)att % 16 == 0 &&
           n * m->T <= (size_t)INT32_MAX / 2;
}

/* f(KT, FULL) as integral constants, for the attention instance that nkt
 * 16-key tiles take: exactly six (HRM's T = 82: constant loop bounds),
 * fewer, or up to eight. */
template <class F>
auto by_key_tiles(int nkt, F f) {
    if (nkt == 6) return f(std::integral_constant<int, 6>{}, std::true_type{});
    if (nkt < 6) return f(std::integral_constant<int, 6>{}, std::false_type{});
    return f(std::integral_constant<int, 8>{}, std::false_type{});
}

inline qkv_attn_args qkv_attn_args_for(const hrmt_model *m, void *att) {
    const struct hrmt_model_cuda *g = cu_model(m);
    const int rope = m->cfg.pos_encodings == HRMT_POS_ROPE;
    return qkv_attn_args{(int)m->T,
                         (int)m->hidden,
                         (int)m->heads,
                         (int)(m->hidden / 64),
                         (uint16_t *)att,
                         rope ? g->rope_cos : nullptr,
                         rope ? g->rope_sin : nullptr,
                         (float)(1.0 / sqrt((double)m->head_dim))};
}

#ifdef HRMT_SM90A
/* The RoPE factors qkv_emit uses, for the thread's two rows (hf) and its
 * D / 16 pairs a row: loaded ahead of the products (the tables are model
 * constants, so ahead of the wait for the kernel before too), so that the
 * epilogue does not wait on an L2 round trip after the products. */
template <int D>
struct rope_regs {
    float2 c[2][D / 16], s[2][D / 16];
};
template <int D>
__device__ __forceinline__ void rope_load(rope_regs<D> &r, int t0, int T, const float *cs,
                                          const float *sn, int w4, int lane) {
    const int c2 = 2 * (lane & 3);
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const int t = t0 + w4 * 16 + lane / 4 + 8 * hf;
#pragma unroll
        for (int i = 0; i < D / 16; i++) {
            const int d = 8 * i + c2;
            r.c[hf][i] = t < T ? *(const float2 *)(cs + (size_t)t * D + d) : make_float2(0, 0);
            r.s[hf][i] = t < T ? *(const float2 *)(sn + (size_t)t * D + d) : make_float2(0, 0);
        }
    }
}

/* The one-thread producer of the CTA form's TMA ring of S stages of one k
 * block: per stage, A's box of rows at m0 (a_bytes) and after it the head's
 * 64 q, then 64 k, then 64 v rows of W, one copy per part. W is never
 * written, so its first stages go out before the wait for the kernel
 * before (programmatic dependent launch), A's rows after it. W1
 * (HRMT_CUDA_QKV_ATTN_CTA_W1): W's three parts as one copy of
 * encode_parts' map, the same bytes in the same places. */
template <int S, bool W1 = false>
__device__ __forceinline__ void qkv_feed(uint8_t *smem, int a_bytes, const CUtensorMap *tm_a,
                                         const CUtensorMap *tm_w, uint64_t *full, uint64_t *empty,
                                         int kb_n, int m0, int H, int head) {
    constexpr int D = 64, W_PART = D * ROW_BYTES;
    const int stage_bytes = a_bytes + 3 * W_PART;
    const int pre = kb_n < S ? kb_n : S;
    auto load_w = [&](uint8_t *st, uint64_t *bar, int kb) {
        if constexpr (W1) {
            tma_load_4d(st + a_bytes, tm_w, bar, 0, head * D, 0, kb);
        } else {
#pragma unroll
            for (int part = 0; part < 3; part++)
                tma_load(st + a_bytes + part * W_PART, tm_w, bar, kb * BK, part * H + head * D);
        }
    };
    for (int c = 0; c < pre; c++) {
        mbar_expect_tx(&full[c], stage_bytes);
        load_w(smem + c * stage_bytes, &full[c], c);
    }
    pdl_wait();
    pdl_trigger();
    int s = 0;
    unsigned ph = 0;
    for (int c = 0; c < kb_n; c++) {
        uint8_t *st = smem + s * stage_bytes;
        if (c >= pre) {
            mbar_wait(&empty[s], ph ^ 1);
            mbar_expect_tx(&full[s], stage_bytes);
            load_w(st, &full[s], c);
        }
        tma_load(st, tm_a, &full[s], c * BK, m0);
        ring_next(s, ph, S);
    }
}

/* A consumer warpgroup's q, k and v products over qkv_feed's ring: the 64
 * rows of A a_off bytes into each k block's box against the head's three W
 * blocks, one F32 chain each of k16 steps in ascending k from +0 (the pinned
 * GEMM's arithmetic). Each stage is given back (one arrive per warp) once
 * the next stage's products are issued. */
template <int S>
__device__ __forceinline__ void qkv_products(float (&aq)[32], float (&ak)[32], float (&av)[32],
                                             const uint8_t *smem, int a_bytes, int a_off,
                                             uint64_t *full, uint64_t *empty, int kb_n, int lane) {
    constexpr int W_PART = 64 * ROW_BYTES;
    const int stage_bytes = a_bytes + 3 * W_PART;
    /* +0 by an opaque move (qkv_attn_wgmma.cu: with a plain 0.0f ptxas
     * serialises the wgmma steps). */
#pragma unroll
    for (int i = 0; i < 32; i++) {
        asm volatile("mov.b32 %0, 0;" : "=f"(aq[i]));
        asm volatile("mov.b32 %0, 0;" : "=f"(ak[i]));
        asm volatile("mov.b32 %0, 0;" : "=f"(av[i]));
    }
    int s = 0, prev = -1;
    unsigned ph = 0;
    for (int kb = 0; kb < kb_n; kb++) {
        mbar_wait(&full[s], ph);
        if (kb == 0) LT_PHASE(1);
        const uint8_t *st = smem + s * stage_bytes, *w = st + a_bytes;
        wg_fence();
        const uint64_t da = desc_k128(st + a_off);
        const uint64_t dq = desc_k128(w), dk = desc_k128(w + W_PART),
                       dv = desc_k128(w + 2 * W_PART);
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            wgmma_n64(aq, da + 2 * kk, dq + 2 * kk);
            wgmma_n64(ak, da + 2 * kk, dk + 2 * kk);
            wgmma_n64(av, da + 2 * kk, dv + 2 * kk);
        }
        wg_commit();
        wg_wait<1>(); /* the previous stage is read: give it back */
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
        prev = s;
        ring_next(s, ph, S);
    }
    wg_wait<0>();
    LT_PHASE(2);
    /* Keep the caller's reads of the accumulators after the wait. */
#pragma unroll
    for (int i = 0; i < 32; i++) asm volatile("" : "+f"(aq[i]), "+f"(ak[i]), "+f"(av[i])::"memory");
}

/* BF16 (the GEMM's rounding: one paired RNE conversion, the software
 * rounding's bits for every non-NaN), RoPE at position t when cs is given
 * (PRE: its factors from `pre`, rope_load's, the same values; else `pre` is
 * not read)
 * (q and k of a RoPE model; the pair d, d + D / 2 is accumulators 4 i + ..
 * and 4 (i + D / 16) + ..), zero past T, into dst's rows 0..63 (row stride
 * LD). Thread (w4, lane) of the warpgroup holds rows w4 16 + lane / 4 (+ 8),
 * columns 8 i + 2 (lane % 4) (+ 1): wgmma's accumulator layout. */
template <int D, int LD, bool PRE = false>
__device__ __forceinline__ void qkv_emit(const float (&acc)[D / 2], int t0, int T, const float *cs,
                                         const float *sn, int w4, int lane, uint16_t *dst,
                                         const rope_regs<D> &pre) {
    namespace rc = hrmt_rowops_cuda;
    const int c2 = 2 * (lane & 3);
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        const int lr = w4 * 16 + lane / 4 + 8 * hf, t = t0 + lr;
        uint32_t outw[D / 8];
#pragma unroll
        for (int i = 0; i < D / 8; i++)
            outw[i] =
                t < T ? rc::pack_bf16x2_arith(acc[4 * i + 2 * hf], acc[4 * i + 2 * hf + 1]) : 0u;
        if (cs && t < T) {
#pragma unroll
            for (int i = 0; i < D / 16; i++) {
                const int d = 8 * i + c2;
                const float2 cf = PRE ? pre.c[hf][i] : *(const float2 *)(cs + (size_t)t * D + d);
                const float2 sf = PRE ? pre.s[hf][i] : *(const float2 *)(sn + (size_t)t * D + d);
                const uint32_t a = outw[i], b = outw[i + D / 16];
                float o1[2], o2[2];
                rope_pair(__uint_as_float(a << 16), __uint_as_float(b << 16), cf.x, sf.x, &o1[0],
                          &o2[0]);
                rope_pair(__uint_as_float(a & 0xffff0000u), __uint_as_float(b & 0xffff0000u), cf.y,
                          sf.y, &o1[1], &o2[1]);
                outw[i] = rc::pack_bf16x2_arith(o1[0], o1[1]);
                outw[i + D / 16] = rc::pack_bf16x2_arith(o2[0], o2[1]);
            }
        }
#pragma unroll
        for (int i = 0; i < D / 8; i++) *(uint32_t *)(dst + lr * LD + 8 * i + c2) = outw[i];
    }
}
#endif

} // namespace

#endif
