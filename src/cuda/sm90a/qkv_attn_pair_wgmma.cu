/* The block's qkv projection and attention as one kernel over a pair of
 * CTAs per (sample, head), for the batches whose pairs fit one wave:
 *
 *   att[s, :, h] = attention(RoPE(bf16(h_s Wq_h^T)), RoPE(bf16(h_s Wk_h^T)),
 *                            bf16(h_s Wv_h^T))
 *
 * qkv_attn_cta_wgmma.cu gives a (sample, head) one CTA whose two consumer
 * warpgroups take rows 0..63 and 64..127; their products share one SM's
 * tensor cores, 6 m64n64k16 a k16 step (HRM's batch 8: ~3 us of products
 * a call on 64 of 132 SMs). Here CTA r of a cluster of two takes rows
 * 64 r .. 64 r + 63 (T > 64) on its own SM, so the pairs of a batch up to
 * 66 / heads samples use twice the SMs, each at half the products:
 *  1. a producer thread's TMA ring: per 64 k, the CTA's 64 rows of A (rows
 *     past the tensor read as zeros; rows past T computed and dropped) and
 *     the head's 64 q, 64 k and 64 v rows of W (requested before the wait
 *     for the kernel before); one consumer warpgroup runs three m64n64k16
 *     products a k16 step (qkv_attn_common.cuh's ring and products);
 *  2. BF16, RoPE on q and k, zero past T: q into this CTA's Q rows (its
 *     query tiles are its own rows), k and v into its K and V rows and,
 *     those below nkt 16, pushed into the peer's by st.async, each counted
 *     in bytes on the peer's barrier (cluster_async.cuh; who sends what:
 *     push_plan.cuh's qp_push_rows, replayed by tests/test_push_plan.cu);
 *  3. once its barrier has counted the peer's rows, attention on the CTA's
 *     query tiles 4 r .. (a team of warps a tile where it has two or fewer)
 *     and att stored. Nothing reads another CTA's memory, and every write
 *     into a CTA is waited for by it, so the CTAs end in any order.
 *
 * Bits: the same functions on the same rows as the CTA form (the products'
 * F32 chains of k16 steps in ascending k from +0, qkv_emit's rounding and
 * RoPE, attend_tile, which a team runs with the same values per output
 * column), so the bytes of the qkv GEMM and model_attn_mma.cu's kernel
 * (cuda_model/qkv_attn_equals_launches and qkv_attn_pair_equals_cta check
 * that on the device). Opt-out: HRMT_CUDA_QKV_ATTN_PAIR=0. */

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
constexpr int QP_LD = QP_D + 8;             /* bf16 row stride of Q, K, V */
constexpr int QP_STAGES = 4;                /* the ring wraps above hidden 256 */
constexpr int QP_A_BYTES = 64 * ROW_BYTES;  /* this CTA's 64 rows: 8 KB */
constexpr int QP_W_PART = QP_D * ROW_BYTES; /* one of q, k, v: 8 KB */
constexpr int QP_STAGE_BYTES = QP_A_BYTES + 3 * QP_W_PART;
constexpr int QP_KV = 128 * QP_LD * 2; /* K or V, all keys (T <= 128) */
constexpr int QP_Q = 64 * QP_LD * 2;   /* this CTA's query rows */
constexpr int QP_SMEM =
    QP_STAGES * QP_STAGE_BYTES + 2 * QP_KV + QP_Q + 1024 + 2 * QP_STAGES * 8 + 8;
constexpr int QP_THREADS = 256;

/* EARLY: q's and k's RoPE factors loaded before the wait for the kernel
 * before (HRMT_CUDA_ROPE_EARLY; qkv_attn_common.cuh's rope_load). BULK:
 * each CTA's K rows and V rows for its peer go as one copy-engine transfer
 * each, whole rows of the padded stride (HRMT_CUDA_QKV_ATTN_BULK), instead
 * of 16-byte st.async stores by every thread. */
template <int KT, bool FULL, bool EARLY, bool BULK>
__global__ void __launch_bounds__(QP_THREADS, 1)
    qkv_attn_pair_kernel(const __grid_constant__ CUtensorMap tm_a,
                         const __grid_constant__ CUtensorMap tm_w, const qkv_attn_args p) {
#ifdef HRMT_SM90A
    constexpr int S = QP_STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_align1024(smem_raw);
    uint16_t *Qs = (uint16_t *)(smem + S * QP_STAGE_BYTES);
    uint16_t *Ks = (uint16_t *)((uint8_t *)Qs + QP_Q), *Vs = (uint16_t *)((uint8_t *)Ks + QP_KV);
    uint64_t *full = (uint64_t *)((uint8_t *)Vs + QP_KV), *empty = full + S;
    uint64_t *pbar = empty + S; /* the bytes the peer pushes into this CTA */
    const int rank = (int)cl_rank(), cid = (int)blockIdx.x / 2;
    const int smp = cid / p.heads, head = cid % p.heads;
    const int T = p.T, H = p.H, kb_n = p.kblocks, nkt = (T + 15) / 16, t0 = rank * 64;
    const int wg = warpgroup_idx(), warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) mbar_init(pbar, 1);
    ring_setup(full, empty, S, 4); /* one arrive per consumer warp; fences pbar's init too */
    if (threadIdx.x == 128) mbar_expect_tx(pbar, qp_push_owed(nkt, rank, BULK ? QP_LD : QP_D));
    /* The peer's shared memory may be written only once it has started:
     * arrive now, wait just before the first push. */
    cl_arrive_relaxed();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            qkv_feed<S>(smem, QP_A_BYTES, &tm_a, &tm_w, full, empty, kb_n, smp * T + t0, H, head);
        __syncwarp(); /* lane 0 issued the loads: converge for the barrier */
        cl_wait();
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int w4 = warp & 3, tid = threadIdx.x - 128;
    rope_regs<QP_D> rr;
    if (EARLY && p.cs) rope_load<QP_D>(rr, t0, T, p.cs, p.sn, w4, lane);
    pdl_wait(); /* before att's stores */
    pdl_trigger();
    float aq[QP_D / 2], ak[QP_D / 2], av[QP_D / 2];
    qkv_products<S>(aq, ak, av, smem, QP_A_BYTES, 0, full, empty, kb_n, lane);
    /* 2. BF16, RoPE on q and k, zero past T (qkv_attn_common.cuh). */
    qkv_emit<QP_D, QP_LD, EARLY>(aq, t0, T, p.cs, p.sn, w4, lane, Qs, rr);
    qkv_emit<QP_D, QP_LD, EARLY>(ak, t0, T, p.cs, p.sn, w4, lane, Ks + t0 * QP_LD, rr);
    qkv_emit<QP_D, QP_LD>(av, t0, T, nullptr, nullptr, w4, lane, Vs + t0 * QP_LD, rr);
    if (BULK) fence_async_smem();                  /* K and V read by the copy engine */
    asm volatile("bar.sync 3, 128;" ::: "memory"); /* this CTA's K and V rows whole */
    cl_wait();                                     /* the peer started */
    LT_PHASE(3);
    const uint32_t peer = (uint32_t)(rank ^ 1);
    const int sent = qp_push_rows(nkt, rank); /* keys past the last 16-key tile: never read */
    if constexpr (BULK) {
        /* Rows t0 .. t0 + sent - 1 of K and of V land at the same rows of
         * the peer's (sent >= 1: T > 64). */
        if (tid < 2) {
            uint16_t *src = (tid == 0 ? Ks : Vs) + t0 * QP_LD;
            cl_copy_async(cl_map(src, peer), src, (uint32_t)(sent * QP_LD * 2), cl_map(pbar, peer));
        }
    } else {
#pragma unroll 1
        for (int e = tid; e < sent * (QP_D / 8); e += 128) {
            const int t = t0 + e / (QP_D / 8), c = (e % (QP_D / 8)) * 8;
            uint16_t *k = Ks + t * QP_LD + c, *v = Vs + t * QP_LD + c;
            push16<true>(k, peer, *(const uint4 *)k, pbar);
            push16<true>(v, peer, *(const uint4 *)v, pbar);
        }
    }
    mbar_wait_cluster(pbar, 0); /* the peer's rows landed and are seen */
    /* BULK: so the peer's copy has read its source; it may exit once this CTA
     * has arrived (its wait before the end), and this CTA once the peer has
     * (its copy landed here likewise). */
    if (BULK) cl_arrive_relaxed();
    LT_PHASE(4);

    /* 3. Attention on query tiles 4 rank .. (its own Q rows), W of them: a
     * tile a warp, or a team of 4 / W warps a tile where W <= 2. */
    const int W = nkt - 4 * rank < 4 ? nkt - 4 * rank : 4;
    const int team = W <= 1 ? 4 : W == 2 ? 2 : 1, slot = w4 / team, mate = w4 % team;
    /* Only the team's named barrier follows; an exited thread does not hold
     * up the cluster barrier (PTX ISA: exit), and slot 0's warps stay. */
    if (slot >= W) return;
    const int j = 4 * rank + slot;
    uint16_t *q = Qs + slot * 16 * QP_LD;
    attend_tile<QP_D, KT, FULL>(T, nkt, Ks, Vs, QP_LD, q, QP_LD, 16, p.scale, mate, team, 1 + slot);
    if (team > 1)
        team_sync(1 + slot, team * 32); /* the tile's O is whole in shared memory */
    else
        __syncwarp();
    uint16_t *out = p.att + (size_t)smp * T * H + (size_t)head * QP_D;
    for (int e = mate * 32 + lane; e < 16 * (QP_D / 8); e += team * 32) {
        const int i = e / (QP_D / 8), c = (e % (QP_D / 8)) * 8, t = j * 16 + i;
        if (t < T) *(uint4 *)(out + (size_t)t * H + c) = *(const uint4 *)(q + i * QP_LD + c);
    }
    if (BULK) cl_wait(); /* this CTA's copies have landed in the peer */
    LT_PHASE(8);
#endif
}

/* The instance of a form (HRMT_CUDA_ROPE_EARLY, HRMT_CUDA_QKV_ATTN_BULK). */
template <int KT, bool FULL>
auto qp_kernel(bool early, bool bulk) {
    if (early)
        return bulk ? qkv_attn_pair_kernel<KT, FULL, true, true>
                    : qkv_attn_pair_kernel<KT, FULL, true, false>;
    return bulk ? qkv_attn_pair_kernel<KT, FULL, false, true>
                : qkv_attn_pair_kernel<KT, FULL, false, false>;
}

/* Pairs of the kernel that can be resident at once (0: none). */
template <int KT, bool FULL>
int qp_fits(const hrmt_cuda *cu) {
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    for (int f = 0; f < 4; f++) {
        auto k = qp_kernel<KT, FULL>(f & 1, f & 2);
        if (!image_loads(k, QP_SMEM, per_block) || smem_opt_in(k, QP_SMEM) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
    }
    return cluster_fits(qp_kernel<KT, FULL>(false, false), 2, QP_THREADS, QP_SMEM);
}

template <int KT, bool FULL>
hrmt_status qp_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t n,
                      const void *h, const void *w, void *att, int *done) {
    const size_t H = m->hidden, rows = n * m->T;
    const struct hrmt_model_cuda *g = cu_model(m);
    CUtensorMap ta, tw;
    if (!encode(fn, &ta, h, rows, H, H, 64) || !encode(fn, &tw, w, 3 * H, H, H, QP_D))
        return HRMT_OK; /* *done stays 0: another form or the launches serve */
    const qkv_attn_args p = qkv_attn_args_for(m, att);
    auto kern = qp_kernel<KT, FULL>(g->rope_early, g->qp_bulk);
    /* The shared-memory opt-in was made at model load (qp_fits). */
    const cudaError_t e =
        cluster_launch(kern, 2, dim3((unsigned)(n * m->heads * 2)), dim3(QP_THREADS), QP_SMEM,
                       cu_stream(m), g->pdl, ta, tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda qkv + attention (pairs)");
    *done = 1;
    return cu_check(m->ctx, "cuda qkv + attention (pairs)");
}

} // namespace

int cu_qkv_attn_pairs(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    static_assert(QP_D == 64, "qkv_attn_serves' rule");
    /* T > 64: the second CTA has rows of its own. */
    if (!qkv_attn_serves(m, 64)) return 0;
    return by_key_tiles((int)((m->T + 15) / 16), [&](auto kt, auto full) {
        return qp_fits<decltype(kt)::value, decltype(full)::value>(cu);
    });
}

hrmt_status cu_qkv_attn_pair(const hrmt_model *m, size_t n, const void *h, const void *w, void *att,
                             int *done) {
    *done = 0;
    if (!qkv_attn_one_wave(m, n, att, cu_model(m)->qa_pairs)) return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    return by_key_tiles((int)((m->T + 15) / 16), [&](auto kt, auto full) {
        return qp_launch<decltype(kt)::value, decltype(full)::value>(m, fn, n, h, w, att, done);
    });
}
