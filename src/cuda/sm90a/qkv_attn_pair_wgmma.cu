/* The block's qkv projection and attention as one kernel over a cluster of
 * two CTAs per (sample, head), for the middle batches (opt-in,
 * HRMT_CUDA_QKV_ATTN_PAIR):
 *
 *   att[s, :, h] = attention(RoPE(bf16(h_s Wq_h^T)), RoPE(bf16(h_s Wk_h^T)),
 *                            bf16(h_s Wv_h^T))
 *
 * Between the two other forms: the cluster form (qkv_attn_wgmma.cu, six
 * CTAs per pair at T = 82) fills the GPU at one or two samples and needs
 * several waves above; the CTA form (qkv_attn_cta_wgmma.cu) holds a pair in
 * one CTA, so at batch 8 (64 pairs) half the SMs idle while each busy one
 * runs both row tiles' products (~4 us of tensor work, session 32's link
 * trace) and six query tiles. Here CTA r of the pair (T in 65..128: two
 * 64-row tiles) computes rows r 64 .. r 64 + 63 of the head's q, k and v,
 * rounds, RoPEs q and k, zeroes rows past T and pushes the block by 16-byte
 * distributed-shared-memory stores to where attention reads it: k and v
 * rows below the last 16-key tile into both CTAs' K and V, a q row into
 * the CTA that owns its query tile (tile j: CTA j % 2, slot j / 2), so each
 * CTA attends over three of T = 82's six tiles. Pushes wait until both CTAs
 * have started (an arrive at the start, its wait before the first push).
 * PUSH (HRMT_CUDA_QKV_ATTN_PUSH, on by default): by st.async, counted in
 * bytes on the receiver's barrier, which waits for what it is owed
 * (push_plan.cuh) instead of a cluster barrier.
 *
 * Bits: the projections are the F32 chains of k16 steps in ascending k
 * from +0 that the CTA form runs (the same wgmma_n64 steps on the same
 * rows), qkv_emit's rounding and RoPE, attend_tile on the same K, V and Q
 * rows: the bytes of the other forms and of the qkv GEMM + attention
 * kernel (cuda_model/qkv_attn_pair_equals_cta_* on the device).
 *
 * Shape: 256 threads; warpgroup 0 (40 registers) has one thread feed a
 * four-stage TMA ring (per 64 k, A's 64 rows and the head's 64 q, 64 k and
 * 64 v rows of W; W's first stages before the wait for the kernel before),
 * warpgroup 1 runs three m64n64k16 products per k16 step (half the CTA
 * form's per SM), the epilogue, and attention: warp w on query tile
 * rank + 2 w, one warp a tile.
 *
 * Measured (H100, session 36): 11.7 us a call at batch 8 against the CTA
 * form's 12.6 under ncu, but no step gain beyond the noise (the small
 * batches' ring products are paced at ~140 ns a stage whatever the bytes,
 * docs/CUDA-KERNELS.md), so it stays opt-in. */

#include "cuda/attn_mma_tile.cuh"
#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/cluster_async.cuh"
#include "cuda/sm90a/push_plan.cuh"
#include "cuda/sm90a/qkv_attn_common.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

constexpr int QP_D = 64;                    /* head_dim */
constexpr int QP_LD = QP_D + 8;             /* bf16 row stride of the blocks (attention's ldk) */
constexpr int QP_TPMAX = 128;               /* two row tiles: 64 < T <= 128 */
constexpr int QP_SLOTS = QP_TPMAX / 32;     /* query tiles a CTA owns: every second */
constexpr int QP_STAGES = 4;                /* the ring wraps above hidden 256 */
constexpr int QP_A_BYTES = 64 * ROW_BYTES;  /* 8 KB */
constexpr int QP_W_PART = QP_D * ROW_BYTES; /* one of q, k, v: 8 KB */
constexpr int QP_STAGE_BYTES = QP_A_BYTES + 3 * QP_W_PART;
constexpr int QP_X = 3 * 64 * QP_LD * 2;        /* this CTA's q, k and v rows */
constexpr int QP_KV = QP_TPMAX * QP_LD * 2;     /* K or V, all keys */
constexpr int QP_Q = QP_SLOTS * 16 * QP_LD * 2; /* its query tiles */
constexpr int QP_SMEM =
    QP_STAGES * QP_STAGE_BYTES + QP_X + 2 * QP_KV + QP_Q + 1024 + (2 * QP_STAGES + 1) * 8;

/* Bits of the kernel's FORM: pushes counted on a barrier, RoPE factors
 * loaded before the wait for the kernel before (HRMT_CUDA_ROPE_EARLY). */
enum { QP_PUSH = 1, QP_EARLY = 2, QP_FORMS = 4 };

template <int KT, bool FULL, int FORM>
__global__ void __launch_bounds__(256, 1)
    qkv_attn_pair_kernel(const __grid_constant__ CUtensorMap tm_a,
                         const __grid_constant__ CUtensorMap tm_w, const qkv_attn_args p) {
#ifdef HRMT_SM90A
    tma_prefetch_maps(p.tpf, &tm_a, &tm_w);
    constexpr bool PUSH = FORM & QP_PUSH, EARLY = FORM & QP_EARLY;
    constexpr int S = QP_STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint16_t *xs = (uint16_t *)(smem + S * QP_STAGE_BYTES);
    uint16_t *Ks = (uint16_t *)((uint8_t *)xs + QP_X), *Vs = (uint16_t *)((uint8_t *)Ks + QP_KV);
    uint16_t *Qs = (uint16_t *)((uint8_t *)Vs + QP_KV);
    uint64_t *full = (uint64_t *)((uint8_t *)Qs + QP_Q), *empty = full + S;
    uint64_t *pbar = empty + S; /* PUSH: the bytes pushed into this CTA */
    const int r = (int)cl_rank();
    const int cid = (int)(blockIdx.x / 2), smp = cid / p.heads, head = cid % p.heads;
    const int T = p.T, H = p.H, kb_n = p.kblocks, nkt = (T + 15) / 16;
    const int wg = warpgroup_idx(), warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (PUSH && threadIdx.x == 0) mbar_init(pbar, 1);
    ring_setup(full, empty, S, 4); /* one arrive per consumer warp */
    if (PUSH && threadIdx.x == 128) mbar_expect_tx(pbar, qp_push_owed(nkt, r, QP_D));
    /* The peer's shared memory may be written only once it has started:
     * arrive now, wait just before the first push. Every thread arrives
     * before any waits, so no wait can block on another's progress. */
    cl_arrive_relaxed();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        /* A's rows past the sample are the next sample's or zeros:
         * computed, then dropped. */
        if (threadIdx.x == 0)
            qkv_feed<S>(smem, QP_A_BYTES, &tm_a, &tm_w, full, empty, kb_n, smp * T + r * 64, H,
                        head);
        /* The producer warpgroup takes part in the cluster barriers (its
         * first warp converged first: lane 0 issued the loads). */
        __syncwarp();
        cl_wait();
        if (!PUSH) cl_sync();
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int w4 = warp & 3, tid = threadIdx.x - 128, t0 = r * 64;
    /* q's and k's RoPE factors (the same rows) ahead of the wait (EARLY). */
    rope_regs<QP_D> rr;
    if (EARLY && p.cs) rope_load<QP_D>(rr, t0, T, p.cs, p.sn, w4, lane);
    pdl_wait(); /* before att's stores */
    pdl_trigger();
    float aq[QP_D / 2], ak[QP_D / 2], av[QP_D / 2];
    qkv_products<S>(aq, ak, av, smem, QP_A_BYTES, 0, full, empty, kb_n, lane);
    /* 1. BF16, RoPE on q and k, zero past T, into xs (qkv_attn_common.cuh). */
    qkv_emit<QP_D, QP_LD, EARLY>(aq, t0, T, p.cs, p.sn, w4, lane, xs, rr);
    qkv_emit<QP_D, QP_LD, EARLY>(ak, t0, T, p.cs, p.sn, w4, lane, xs + 64 * QP_LD, rr);
    qkv_emit<QP_D, QP_LD>(av, t0, T, nullptr, nullptr, w4, lane, xs + 2 * 64 * QP_LD, rr);
    asm volatile("bar.sync 3, 128;" ::: "memory"); /* xs whole (this warpgroup) */
    cl_wait();                                     /* the peer started */
    LT_PHASE(3);
    /* 2. The block pushed, 16 bytes a store: k and v rows below nkt 16
     * into both CTAs' K or V (row t0 + row), a q row into the Q slot of the
     * CTA that owns its query tile (tile j: CTA j % 2, slot j / 2). */
#pragma unroll 1
    for (int e = tid; e < 3 * 64 * (QP_D / 8); e += 128) {
        const int part = e / (64 * (QP_D / 8)), pe = e % (64 * (QP_D / 8));
        const int row = pe / (QP_D / 8), c = (pe % (QP_D / 8)) * 8, t = t0 + row;
        const uint4 v = *(const uint4 *)(xs + (part * 64 + row) * QP_LD + c);
        if (part == 0) {
            const int j = t / 16;
            if (j < nkt)
                push16<PUSH>(Qs + ((j / 2) * 16 + t % 16) * QP_LD + c, (uint32_t)(j % 2), v, pbar);
        } else if (t < nkt * 16) { /* keys past the last 16-key tile: never read */
            uint16_t *dst = (part == 1 ? Ks : Vs) + t * QP_LD + c;
            push16<PUSH>(dst, 0u, v, pbar);
            push16<PUSH>(dst, 1u, v, pbar);
        }
    }
    /* Every push into this CTA landed and is seen (PUSH: its bytes counted
     * on pbar; nothing is written into a CTA after what it waits for, so it
     * may end before its peer), else into both. */
    if (PUSH)
        mbar_wait_cluster(pbar, 0);
    else
        cl_sync();
    LT_PHASE(4);

    /* 3. Attention: warp w4 on query tile r + 2 w4 (slot w4), one warp a
     * tile; the tile's O replaces its queries in Q, then goes out. */
    uint16_t *out = p.att + (size_t)smp * T * H + (size_t)head * QP_D;
    const int j = r + 2 * w4;
    if (j < nkt) {
        uint16_t *q = Qs + w4 * 16 * QP_LD;
        attend_tile<QP_D, KT, FULL>(T, nkt, Ks, Vs, QP_LD, q, QP_LD, 16, p.scale);
        __syncwarp();
        for (int e = lane; e < 16 * (QP_D / 8); e += 32) {
            const int i = e / (QP_D / 8), c = (e % (QP_D / 8)) * 8, t = j * 16 + i;
            if (t < T) *(uint4 *)(out + (size_t)t * H + c) = *(const uint4 *)(q + i * QP_LD + c);
        }
    }
    LT_PHASE(8);
#endif
}

template <int KT, bool FULL>
auto qp_kernel(int form) {
    switch (form) {
    case QP_PUSH: return qkv_attn_pair_kernel<KT, FULL, QP_PUSH>;
    case QP_EARLY: return qkv_attn_pair_kernel<KT, FULL, QP_EARLY>;
    case QP_PUSH | QP_EARLY: return qkv_attn_pair_kernel<KT, FULL, QP_PUSH | QP_EARLY>;
    default: return qkv_attn_pair_kernel<KT, FULL, 0>;
    }
}

/* Pairs that can be resident at once (0: none); every form's shared-memory
 * opt-in made. */
template <int KT, bool FULL>
int qp_fits(const hrmt_cuda *cu) {
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    for (int f = 0; f < QP_FORMS; f++) {
        auto kern = qp_kernel<KT, FULL>(f);
        if (!image_loads(kern, QP_SMEM, per_block) || smem_opt_in(kern, QP_SMEM) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
    }
    return cluster_fits(qp_kernel<KT, FULL>(QP_PUSH), 2, 256, QP_SMEM);
}

template <int KT, bool FULL>
hrmt_status qp_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t n,
                      const void *h, const void *w, void *att, int *done) {
    const size_t H = m->hidden, rows = n * m->T;
    CUtensorMap ta, tw;
    if (!encode(fn, &ta, h, rows, H, H, 64) || !encode(fn, &tw, w, 3 * H, H, H, QP_D))
        return HRMT_OK; /* *done stays 0: the launches serve */
    const struct hrmt_model_cuda *g = cu_model(m);
    const qkv_attn_args p = qkv_attn_args_for(m, att);
    const unsigned grid = (unsigned)(n * m->heads * 2);
    /* The shared-memory opt-in was made at model load (qp_fits). */
    const cudaError_t e = cluster_launch(
        qp_kernel<KT, FULL>((g->qa_pair_push ? QP_PUSH : 0) | (g->rope_early ? QP_EARLY : 0)), 2,
        dim3(grid), dim3(256), QP_SMEM, cu_stream(m), g->pdl, ta, tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda qkv + attention (pair)");
    *done = 1;
    return cu_check(m->ctx, "cuda qkv + attention (pair)");
}

} // namespace

int cu_qkv_attn_pairs(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    /* Two row tiles: 64 < T <= 128. */
    static_assert(QP_D == 64 && QP_TPMAX == 128, "qkv_attn_serves' rule");
    if (!qkv_attn_serves(m, 64)) return 0;
    const int nkt = (int)((m->T + 15) / 16);
    if (nkt == 6) return qp_fits<6, true>(cu);
    return nkt < 6 ? qp_fits<6, false>(cu) : qp_fits<8, false>(cu);
}

hrmt_status cu_qkv_attn_pair(const hrmt_model *m, size_t n, const void *h, const void *w, void *att,
                             int *done) {
    *done = 0;
    const struct hrmt_model_cuda *g = cu_model(m);
    /* One wave of pairs; 16-byte rows of att; sizes the kernel's int
     * arithmetic holds. */
    if (n == 0 || n * m->heads > (size_t)g->qa_pairs || (uintptr_t)att % 16 != 0 ||
        n * m->T > (size_t)INT32_MAX / 2)
        return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    const int nkt = (int)((m->T + 15) / 16);
    if (nkt == 6) return qp_launch<6, true>(m, fn, n, h, w, att, done);
    return nkt < 6 ? qp_launch<6, false>(m, fn, n, h, w, att, done)
                   : qp_launch<8, false>(m, fn, n, h, w, att, done);
}
