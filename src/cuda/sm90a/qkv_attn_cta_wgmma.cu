/* The block's qkv projection and attention as one kernel, one CTA per
 * (sample, head), for batches past the cluster form's wave:
 *
 *   att[s, :, h] = attention(RoPE(bf16(h_s Wq_h^T)), RoPE(bf16(h_s Wk_h^T)),
 *                            bf16(h_s Wv_h^T))
 *
 * qkv_attn_wgmma.cu spreads a (sample, head) over a cluster of 3 RT CTAs,
 * which fills the GPU at one or two samples and needs several waves above.
 * Here one CTA holds the whole head: up to 128 rows (T <= 128) of q, k and v
 * in its own shared memory, so that from a few samples up to one (sample,
 * head) per SM the block's first two links (the qkv GEMM writing [rows, 3 H],
 * the attention kernel reading it back) are one, with no distributed shared
 * memory.
 *
 * Shape: 384 threads. Warpgroup 0 (40 registers) has one thread feed a
 * four-stage TMA ring: per 64 k, the sample's 128 rows of A (rows past the
 * tensor read as zeros; rows past T are computed and dropped) and the
 * head's 64 q, 64 k and 64 v rows of W (W requested before the wait for the
 * kernel before: programmatic dependent launch). Warpgroups 1 and 2 take
 * rows 0..63 and 64..127: three m64n64k16 products per k16 step (q, k, v),
 * then BF16, RoPE on q and k, zero past T, into Q, K and V; after a barrier
 * of the two, consumer warp w runs attention on query tiles w, w + 8
 * (attn_mma_tile.cuh, one warp a tile) and stores att.
 *
 * Bits: each projection is one F32 chain of k16 steps in ascending k from +0
 * rounded to BF16 (the pinned cuBLASLt algorithms' and qkv_attn_wgmma.cu's
 * arithmetic), RoPE is rope_pair on the rounded values (qkv_attn_common.cuh, the
 * cluster form's epilogue too), attention is
 * attend_tile on the same K, V and Q rows (zero past T): the bytes of the
 * qkv GEMM and model_attn_mma.cu's kernel (cuda_model/qkv_attn_equals_launches
 * checks that on the device). */

#include "cuda/attn_mma_tile.cuh"
#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/qkv_attn_common.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int QC_D = 64;                        /* head_dim */
constexpr int QC_LD = QC_D + 8;                 /* bf16 row stride of Q, K, V */
constexpr int QC_ROWS = 128;                    /* T <= 128: two 64-row halves */
constexpr int QC_STAGES = 4;                    /* the ring wraps above hidden 256 */
constexpr int QC_A_BYTES = QC_ROWS * ROW_BYTES; /* 16 KB */
constexpr int QC_W_PART = QC_D * ROW_BYTES;     /* one of q, k, v: 8 KB */
constexpr int QC_STAGE_BYTES = QC_A_BYTES + 3 * QC_W_PART;
constexpr int QC_QKV = QC_ROWS * QC_LD * 2; /* Q, K or V, all rows */
constexpr int QC_SMEM = QC_STAGES * QC_STAGE_BYTES + 3 * QC_QKV + 1024 + 2 * QC_STAGES * 8;
constexpr int QC_THREADS = 384;

/* EARLY: q's and k's RoPE factors loaded before the wait for the kernel
 * before (HRMT_CUDA_ROPE_EARLY; qkv_attn_common.cuh's rope_load). W1: the
 * head's q, k and v rows of W one copy a stage (HRMT_CUDA_QKV_ATTN_CTA_W1;
 * encode_parts' map). */
template <int KT, bool FULL, bool EARLY, bool W1 = false>
__global__ void __launch_bounds__(QC_THREADS, 1)
    qkv_attn_cta_kernel(const __grid_constant__ CUtensorMap tm_a,
                        const __grid_constant__ CUtensorMap tm_w, const qkv_attn_args p) {
#ifdef HRMT_SM90A
    constexpr int S = QC_STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_align1024(smem_raw);
    uint16_t *Qs = (uint16_t *)(smem + S * QC_STAGE_BYTES);
    uint16_t *Ks = (uint16_t *)((uint8_t *)Qs + QC_QKV), *Vs = (uint16_t *)((uint8_t *)Ks + QC_QKV);
    uint64_t *full = (uint64_t *)((uint8_t *)Vs + QC_QKV), *empty = full + S;
    const int smp = (int)blockIdx.x / p.heads, head = (int)blockIdx.x % p.heads;
    const int T = p.T, H = p.H, kb_n = p.kblocks, nkt = (T + 15) / 16;
    const int wg = warpgroup_idx(), warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    ring_setup(full, empty, S, 8); /* one arrive per consumer warp */
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0)
            qkv_feed<S, W1>(smem, QC_A_BYTES, &tm_a, &tm_w, full, empty, kb_n, smp * T, H, head);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int half = wg - 1, w4 = warp & 3;
    /* q's and k's RoPE factors (the same rows) ahead of the wait (EARLY). */
    rope_regs<QC_D> rr;
    if (EARLY && p.cs) rope_load<QC_D>(rr, half * 64, p.T, p.cs, p.sn, w4, lane);
    pdl_wait(); /* before att's stores */
    pdl_trigger();
    float aq[QC_D / 2], ak[QC_D / 2], av[QC_D / 2];
    qkv_products<S>(aq, ak, av, smem, QC_A_BYTES, half * 64 * ROW_BYTES, full, empty, kb_n, lane);
    /* BF16, RoPE on q and k, zero past T (qkv_attn_common.cuh). */
    const int t0 = half * 64;
    qkv_emit<QC_D, QC_LD, EARLY>(aq, t0, p.T, p.cs, p.sn, w4, lane, Qs + t0 * QC_LD, rr);
    qkv_emit<QC_D, QC_LD, EARLY>(ak, t0, p.T, p.cs, p.sn, w4, lane, Ks + t0 * QC_LD, rr);
    qkv_emit<QC_D, QC_LD>(av, t0, p.T, nullptr, nullptr, w4, lane, Vs + t0 * QC_LD, rr);
    asm volatile("bar.sync 3, 256;" ::: "memory"); /* Q, K, V whole (both warpgroups) */
    LT_PHASE(3);

    /* Attention: consumer warp cw on query tiles cw, cw + 8, one warp a tile;
     * each tile's O replaces its queries in Q, then goes out. */
    const int cw = warp - 4;
    uint16_t *out = p.att + (size_t)smp * T * H + (size_t)head * QC_D;
    for (int j = cw; j < nkt; j += 8) {
        uint16_t *q = Qs + j * 16 * QC_LD;
        attend_tile<QC_D, KT, FULL>(T, nkt, Ks, Vs, QC_LD, q, QC_LD, 16, p.scale);
        __syncwarp();
        for (int e = lane; e < 16 * (QC_D / 8); e += 32) {
            const int i = e / (QC_D / 8), c = (e % (QC_D / 8)) * 8, t = j * 16 + i;
            if (t < T) *(uint4 *)(out + (size_t)t * H + c) = *(const uint4 *)(q + i * QC_LD + c);
        }
    }
    LT_PHASE(8);
#endif
}

/* CTAs of the kernel that can be resident at once (0: none). */
template <int KT, bool FULL>
int qc_fits(const hrmt_cuda *cu) {
    size_t per_block = 0;
    int sms = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, &sms, NULL);
    auto kern = qkv_attn_cta_kernel<KT, FULL, false>;
    decltype(kern) all[4] = {kern, qkv_attn_cta_kernel<KT, FULL, true>,
                             qkv_attn_cta_kernel<KT, FULL, false, true>,
                             qkv_attn_cta_kernel<KT, FULL, true, true>};
    for (auto k : all)
        if (!image_loads(k, QC_SMEM, per_block) || smem_opt_in(k, QC_SMEM) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, QC_THREADS, QC_SMEM) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return per_sm * sms;
}

template <int KT, bool FULL>
hrmt_status qc_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t n,
                      const void *h, const void *w, void *att, int *done) {
    const size_t H = m->hidden, rows = n * m->T;
    const struct hrmt_model_cuda *g = cu_model(m);
    /* W's three parts one copy a stage (HRMT_CUDA_QKV_ATTN_CTA_W1). */
    const bool w1 = g->qa_cta_w1;
    CUtensorMap ta, tw;
    if (!encode(fn, &ta, h, rows, H, H, QC_ROWS) ||
        !(w1 ? encode_parts(fn, &tw, w, H, 3, H, H, QC_D) : encode(fn, &tw, w, 3 * H, H, H, QC_D)))
        return HRMT_OK; /* *done stays 0: the launches serve */
    const qkv_attn_args p = qkv_attn_args_for(m, att);
    auto kern =
        g->rope_early
            ? (w1 ? qkv_attn_cta_kernel<KT, FULL, true, true> : qkv_attn_cta_kernel<KT, FULL, true>)
            : (w1 ? qkv_attn_cta_kernel<KT, FULL, false, true>
                  : qkv_attn_cta_kernel<KT, FULL, false>);
    /* The shared-memory opt-in was made at model load (qc_fits). */
    const cudaError_t e = pdl_launch(kern, dim3((unsigned)(n * m->heads)), dim3(QC_THREADS),
                                     QC_SMEM, cu_stream(m), g->pdl, ta, tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda qkv + attention (CTA)");
    *done = 1;
    return cu_check(m->ctx, "cuda qkv + attention (CTA)");
}

} // namespace

int cu_qkv_attn_ctas(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    static_assert(QC_D == 64 && QC_ROWS == 128, "qkv_attn_serves' rule");
    if (!qkv_attn_serves(m, 0)) return 0;
    return by_key_tiles((int)((m->T + 15) / 16), [&](auto kt, auto full) {
        return qc_fits<decltype(kt)::value, decltype(full)::value>(cu);
    });
}

hrmt_status cu_qkv_attn_cta(const hrmt_model *m, size_t n, const void *h, const void *w, void *att,
                            int *done) {
    *done = 0;
    if (!qkv_attn_one_wave(m, n, att, cu_model(m)->qa_ctas)) return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    return by_key_tiles((int)((m->T + 15) / 16), [&](auto kt, auto full) {
        return qc_launch<decltype(kt)::value, decltype(full)::value>(m, fn, n, h, w, att, done);
    });
}
