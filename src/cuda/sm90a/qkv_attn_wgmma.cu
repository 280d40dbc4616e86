/* The block's qkv projection and attention as one kernel over a
 * thread-block cluster per (sample, head), for small batches:
 *
 *   att[s, :, h] = attention(RoPE(bf16(h_s Wq_h^T)), RoPE(bf16(h_s Wk_h^T)),
 *                            bf16(h_s Wv_h^T))
 *
 * Launch by launch this is the qkv GEMM writing [rows, 3 H] and the attention
 * kernel reading it back (model_attn_mma.cu): two links of the block's
 * dependency chain, where at one or two samples each kernel's start, drain
 * and memory round trip cost more than its work. Here a cluster of 3 RT CTAs
 * (RT = the sample's 64-row tiles, 2 for HRM's T = 82) takes one (sample,
 * head): CTA (r, part) computes rows r 64 .. r 64 + 63 of the head's q, k or
 * v (64 columns, so a row's RoPE pairs d and d + 32 sit in one thread's
 * accumulators), rounds to BF16, RoPEs q and k (zero past T) and pushes the
 * block by 16-byte distributed-shared-memory stores to where attention reads
 * it: k and v rows into every CTA's K and V, q rows into the CTA that owns
 * their query tile (tile j: CTA j % CL) — once every CTA of the cluster has
 * started (an arrive at the start, its wait before the first push; the
 * distributed-shared-memory rule). After one cluster barrier each CTA
 * runs attention on its tiles and stores att; nothing reads another CTA's
 * memory after the barrier, so CTAs may end in any order. Opt-in
 * (HRMT_CUDA_QKV_ATTN_PUSH, PUSH): the pushes by st.async, each counted in
 * bytes on the receiver's barrier, which waits for the bytes it is owed
 * instead of the cluster barrier (sm90a/cluster_async.cuh); the same bytes.
 *
 * Bits: the projection is ring_gemm.cuh's F32 chain of k16 steps in
 * ascending k from +0 rounded to BF16 (the pinned cuBLASLt algorithms'
 * arithmetic); RoPE is attn_rope.cuh's rope_pair on the rounded values with
 * the paired RNE conversion; attention is attn_mma_tile.cuh's attend_tile on
 * the same K, V and Q rows (zero past T), so the bytes are those of the GEMM
 * and model_attn_mma.cu's kernel. cuda_model/qkv_attn_equals_launches checks
 * that on the device.
 *
 * Shape: 256 threads; warpgroup 0 (40 registers) has one thread feed a TMA
 * ring (A's 64 rows and W's 64 rows over 64 k per stage, 128-byte swizzle;
 * W requested before the wait for the kernel before), warpgroup 1 runs the
 * m64n64k16 products, the epilogue and attention (its four warps a team per
 * query tile). One CTA per SM (shared memory), so the model uses it while
 * the batch's clusters fit one wave (HRMT_CUDA_QKV_ATTN): batches 1 and 2 at
 * HRM's size on the H200, 5% / 7.5% off the step (docs/CUDA-KERNELS.md). */

#include "cuda/attn_mma_tile.cuh"
#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/cluster_async.cuh"
#include "cuda/sm90a/push_plan.cuh"
#include "cuda/sm90a/qkv_attn_common.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int QA_D = 64;        /* head_dim */
constexpr int QA_LD = QA_D + 8; /* bf16 row stride of the blocks (attention's ldk) */
constexpr int QA_TPMAX = 128;   /* padded keys: T <= 128 */
constexpr int QA_STAGES = 8;    /* hidden <= 512: every k block its own stage, all in flight */
constexpr int QA_A_BYTES = 64 * ROW_BYTES;
constexpr int QA_STAGE_BYTES = QA_A_BYTES + QA_D * ROW_BYTES;
constexpr int QA_X = 64 * QA_LD * 2;        /* this CTA's block */
constexpr int QA_KV = QA_TPMAX * QA_LD * 2; /* K or V, all keys */
constexpr int QA_Q = 2 * 16 * QA_LD * 2;    /* two query tiles */
constexpr int QA_SMEM =
    QA_STAGES * QA_STAGE_BYTES + QA_X + 2 * QA_KV + QA_Q + 1024 + 2 * QA_STAGES * 8;
constexpr int QA_SMEM_PUSH = QA_SMEM + 8; /* + the pushes' barrier */

/* The opt-in forms, bits of the kernel's FORM: pushes counted on barriers
 * (HRMT_CUDA_QKV_ATTN_PUSH), RoPE factors loaded early
 * (HRMT_CUDA_ROPE_EARLY). Bit 2 was the removed mma.sync products' (the
 * other forms keep their values, and so their kernels' names). */
/* QA_KB2 / QA_KB4: two / four k blocks a stage, A's and W's each one TMA
 * copy (HRMT_CUDA_RING_KB; encode_kb's maps), with the pushes. */
/* QA_BULK (with the pushes and QA_KB4; HRMT_CUDA_QKV_ATTN_BULK): each
 * push a copy-engine transfer of whole rows (push_plan.cuh's qa_bulk_copy)
 * instead of 16-byte st.async stores by every thread. */
enum { QA_PUSH = 1, QA_EARLY = 4, QA_KB2 = 8, QA_KB4 = 16, QA_BULK = 32 };

template <int RT, int KT, bool FULL, int FORM>
__global__ void __launch_bounds__(256, 1)
    qkv_attn_kernel(const __grid_constant__ CUtensorMap tm_a,
                    const __grid_constant__ CUtensorMap tm_w, const qkv_attn_args p) {
#ifdef HRMT_SM90A
    constexpr bool PUSH = FORM & QA_PUSH, EARLY = FORM & QA_EARLY, BULK = FORM & QA_BULK;
    static_assert(!BULK || PUSH, "the bulk copies count bytes as the pushes do");
    constexpr int KP = FORM & QA_KB4 ? 4 : FORM & QA_KB2 ? 2 : 1;
    static_assert(KP == 1 || PUSH, "wider stages with the pushes");
    /* S stages of KP k blocks: [KP][64][64] of A, then [KP][64][64] of W. */
    constexpr int CL = 3 * RT, S = QA_STAGES / KP, SB = KP * QA_STAGE_BYTES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_align1024(smem_raw);
    uint16_t *xs = (uint16_t *)(smem + QA_STAGES * QA_STAGE_BYTES);
    uint16_t *Ks = (uint16_t *)((uint8_t *)xs + QA_X), *Vs = (uint16_t *)((uint8_t *)Ks + QA_KV);
    uint16_t *Qs = (uint16_t *)((uint8_t *)Vs + QA_KV);
    uint64_t *full = (uint64_t *)((uint8_t *)Qs + QA_Q), *empty = full + S;
    uint64_t *pbar = empty + S; /* PUSH: the bytes pushed into this CTA */
    const int rank = (int)cl_rank(), part = rank % 3, r = rank / 3;
    const int cid = (int)(blockIdx.x / CL), smp = cid / p.heads, head = cid % p.heads;
    const int T = p.T, H = p.H, kb_n = p.kblocks, tp = (T + 15) / 16 * 16, nkt = tp / 16;
    const int m0 = smp * T + r * 64, n0 = part * H + head * QA_D;
    const int wg = warpgroup_idx(), warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    if (PUSH && threadIdx.x == 0) mbar_init(pbar, 1);
    ring_setup(full, empty, S, 4); /* one arrive per consumer warp */
    if (PUSH && threadIdx.x == 128) {
        /* What this CTA is owed, expected before anyone may push (below). */
        mbar_expect_tx(
            pbar, BULK ? qa_bulk_owed(RT, nkt, rank, QA_LD) : qa_push_owed(RT, nkt, rank, QA_D));
    }
    /* Peers' shared memory may be written only once every CTA of the cluster
     * has started: arrive now, wait just before the first push (by then all
     * have arrived, so the wait costs nothing). Every thread arrives before
     * any waits, so no wait can block on another's progress. */
    cl_arrive_relaxed();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            /* Every k block has its own stage (hidden <= 512, the model's
             * rule), so the ring never wraps. W is never written: it goes
             * out before the wait for the kernel before (programmatic
             * dependent launch), A's rows after. */
            for (int c = 0; c < kb_n / KP; c++) {
                mbar_expect_tx(&full[c], SB);
                tma_load_kb<KP>(smem + c * SB + KP * QA_A_BYTES, &tm_w, &full[c], c * KP, n0);
            }
            pdl_wait();
            pdl_trigger();
            for (int c = 0; c < kb_n / KP; c++)
                tma_load_kb<KP>(smem + c * SB, &tm_a, &full[c], c * KP, m0);
        }
        /* The producer warpgroup takes part in the cluster barrier (its
         * first warp converged first: lane 0 issued the loads). */
        __syncwarp();
        cl_wait();
        if (!PUSH) cl_sync();
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    /* q's and k's RoPE factors ahead of the wait (EARLY). */
    rope_regs<QA_D> rr;
    if (EARLY && part < 2 && p.cs) rope_load<QA_D>(rr, r * 64, T, p.cs, p.sn, warp & 3, lane);
    pdl_wait();
    pdl_trigger();
    float acc[QA_D / 2];
    /* +0 by an opaque move: with a plain 0.0f NVVM carries the accumulators
     * through the k loop as integers (the epilogue only bit-casts them) and
     * moves them into F32 registers before each product, which ptxas
     * answers by serialising the wgmma steps. */
#pragma unroll
    for (int i = 0; i < QA_D / 2; i++) asm volatile("mov.b32 %0, 0;" : "=f"(acc[i]));
    int s = 0, prev = -1;
    unsigned ph = 0;
    ring_products<QA_D, KP>(acc, smem, SB, KP * QA_A_BYTES, full, empty, S, kb_n, s, ph, prev, lane,
                            QA_A_BYTES, QA_D * ROW_BYTES);
    /* 1. BF16, RoPE on q and k, zero past T, into xs (qkv_attn_common.cuh). */
    const int w4 = warp & 3, tid = threadIdx.x - 128;
    qkv_emit<QA_D, QA_LD, EARLY>(acc, r * 64, T, part < 2 ? p.cs : nullptr, p.sn, w4, lane, xs, rr);
    if (BULK) fence_async_smem();                  /* xs read by the copy engine */
    asm volatile("bar.sync 3, 128;" ::: "memory"); /* xs whole (this warpgroup) */
    cl_wait();                                     /* every CTA started */
    LT_PHASE(3);
    if constexpr (BULK) {
        /* 2'. The same rows by copy-engine transfers (push_plan.cuh's
         * qa_bulk_copy): thread k issues copy k, except to this CTA, whose
         * rows the warpgroup copies itself. */
        const int nc = qa_bulk_copies(RT, nkt, rank);
        for (int k = 0; k < nc; k++) {
            const qa_copy c = qa_bulk_copy(RT, nkt, rank, k);
            uint16_t *dst = (c.buf == 0 ? Qs : c.buf == 1 ? Ks : Vs) + c.dst_row * QA_LD;
            const uint16_t *src = xs + c.src_row * QA_LD;
            if (c.to != rank) {
                if (tid == k)
                    cl_copy_async(cl_map(dst, (uint32_t)c.to), src, (uint32_t)(c.rows * QA_LD * 2),
                                  cl_map(pbar, (uint32_t)c.to));
            } else {
                for (int i = tid; i < c.rows * QA_LD / 8; i += 128)
                    ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
            }
        }
        asm volatile("bar.sync 3, 128;" ::: "memory"); /* this CTA's own rows in place */
        mbar_wait_cluster(pbar, 0);
        /* Every byte owed here has landed, so the copies into this CTA have
         * read their sources: each sender may exit (and free its xs) once
         * every CTA has arrived here (the wait before the end). */
        cl_arrive_relaxed();
    } else {
        /* 2. The block pushed, 16 bytes a store, to where attention reads it:
         * k and v rows below nkt 16 into every CTA's K or V (row r 64 + row;
         * at T = 82 that spares rows 96-127, a quarter of them), a q row into
         * the Q slot of the CTA that owns its query tile (tile j: CTA j % CL,
         * slot j / CL). */
#pragma unroll 1
        for (int e = tid; e < 64 * (QA_D / 8); e += 128) {
            const int row = e / (QA_D / 8), c = (e % (QA_D / 8)) * 8, t = r * 64 + row;
            const uint4 v = *(const uint4 *)(xs + row * QA_LD + c);
            if (part == 0) {
                const int j = t / 16;
                if (j < nkt)
                    push16<PUSH>(Qs + ((j / CL) * 16 + t % 16) * QA_LD + c, (uint32_t)(j % CL), v,
                                 pbar);
            } else if (t < nkt * 16) { /* keys past the last 16-key tile: never read */
                uint16_t *dst = (part == 1 ? Ks : Vs) + t * QA_LD + c;
#pragma unroll
                for (int d = 0; d < CL; d++) push16<PUSH>(dst, (uint32_t)d, v, pbar);
            }
        }
        /* Every push into this CTA landed and is seen (PUSH: its bytes counted
         * on pbar; nothing is written into a CTA after what it waits for, so it
         * may end before its peers), else into every CTA. */
        if (PUSH)
            mbar_wait_cluster(pbar, 0);
        else
            cl_sync();
    }
    LT_PHASE(4);

    /* 3. Attention on this CTA's query tiles rank, rank + CL: the
     * warpgroup's four warps a team (attn_mma_tile.cuh). */
    uint16_t *out = p.att + (size_t)smp * T * H + (size_t)head * QA_D;
    for (int slot = 0; slot < 2; slot++) {
        const int j = rank + CL * slot;
        if (j >= nkt) break;
        uint16_t *q = Qs + slot * 16 * QA_LD;
        attend_tile<QA_D, KT, FULL>(T, nkt, Ks, Vs, QA_LD, q, QA_LD, 16, p.scale, w4, 4, 1);
        team_sync(1, 128); /* the tile's O is whole in shared memory */
        for (int e = tid; e < 16 * (QA_D / 8); e += 128) {
            const int i = e / (QA_D / 8), c = (e % (QA_D / 8)) * 8, t = j * 16 + i;
            if (t < T) *(uint4 *)(out + (size_t)t * H + c) = *(const uint4 *)(q + i * QA_LD + c);
        }
    }
    if (BULK) cl_wait(); /* every copy out of this CTA has landed */
    LT_PHASE(8);
#endif
}

/* The instance of a form (QA_* bits; the wider stages with the pushes only). */
template <int RT, int KT, bool FULL>
auto qa_kernel(int form) {
    if (!(form & QA_PUSH)) form &= ~(QA_KB2 | QA_KB4);
    if (form & QA_KB4) form &= ~QA_KB2;
    if (!(form & QA_KB4)) form &= ~QA_BULK; /* built with the four-block stages only */
    switch (form) {
    case QA_PUSH | QA_KB2: return qkv_attn_kernel<RT, KT, FULL, QA_PUSH | QA_KB2>;
    case QA_PUSH | QA_EARLY | QA_KB2:
        return qkv_attn_kernel<RT, KT, FULL, QA_PUSH | QA_EARLY | QA_KB2>;
    case QA_PUSH | QA_KB4: return qkv_attn_kernel<RT, KT, FULL, QA_PUSH | QA_KB4>;
    case QA_PUSH | QA_EARLY | QA_KB4:
        return qkv_attn_kernel<RT, KT, FULL, QA_PUSH | QA_EARLY | QA_KB4>;
    case QA_PUSH | QA_BULK | QA_KB4:
        return qkv_attn_kernel<RT, KT, FULL, QA_PUSH | QA_BULK | QA_KB4>;
    case QA_PUSH | QA_EARLY | QA_BULK | QA_KB4:
        return qkv_attn_kernel<RT, KT, FULL, QA_PUSH | QA_EARLY | QA_BULK | QA_KB4>;
    case QA_PUSH: return qkv_attn_kernel<RT, KT, FULL, QA_PUSH>;
    case QA_EARLY: return qkv_attn_kernel<RT, KT, FULL, QA_EARLY>;
    case QA_PUSH | QA_EARLY: return qkv_attn_kernel<RT, KT, FULL, QA_PUSH | QA_EARLY>;
    default: return qkv_attn_kernel<RT, KT, FULL, 0>;
    }
}

template <int RT, int KT, bool FULL>
int qa_fits(const hrmt_cuda *cu) {
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    /* Every form opted in; the cluster count of the larger (one CTA per
     * SM either way). */
    const int forms[] = {0,
                         QA_PUSH,
                         QA_EARLY,
                         QA_PUSH | QA_EARLY,
                         QA_PUSH | QA_KB2,
                         QA_PUSH | QA_EARLY | QA_KB2,
                         QA_PUSH | QA_KB4,
                         QA_PUSH | QA_EARLY | QA_KB4,
                         QA_PUSH | QA_BULK | QA_KB4,
                         QA_PUSH | QA_EARLY | QA_BULK | QA_KB4};
    for (int f : forms) {
        const size_t smem = f & QA_PUSH ? QA_SMEM_PUSH : QA_SMEM;
        auto kern = qa_kernel<RT, KT, FULL>(f);
        if (!image_loads(kern, smem, per_block) || smem_opt_in(kern, smem) != cudaSuccess) {
            (void)cudaGetLastError();
            return 0;
        }
    }
    return cluster_fits(qa_kernel<RT, KT, FULL>(QA_PUSH), 3 * RT, 256, QA_SMEM_PUSH);
}

template <int RT, int KT, bool FULL>
hrmt_status qa_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t n,
                      const void *h, const void *w, void *att, int *done) {
    const size_t H = m->hidden, rows = n * m->T;
    const struct hrmt_model_cuda *g = cu_model(m);
    const int kp = kb_per_copy(g->qa_kb, H / BK); /* HRMT_CUDA_RING_KB */
    CUtensorMap ta, tw;
    if (!encode_kb(fn, &ta, h, rows, H, H, 64, kp) || !encode_kb(fn, &tw, w, 3 * H, H, H, QA_D, kp))
        return HRMT_OK; /* *done stays 0: the launches serve */
    const qkv_attn_args p = qkv_attn_args_for(m, att);
    const unsigned grid = (unsigned)(n * m->heads * 3 * RT);
    /* The shared-memory opt-in was made at model load (qa_fits). */
    const cudaError_t e = cluster_launch(
        qa_kernel<RT, KT, FULL>((g->qa_push ? QA_PUSH : 0) | (g->rope_early ? QA_EARLY : 0) |
                                (g->qa_bulk ? QA_BULK : 0) |
                                (kp == 4   ? QA_KB4
                                 : kp == 2 ? QA_KB2
                                           : 0)),
        3 * RT, dim3(grid), dim3(256), g->qa_push ? QA_SMEM_PUSH : QA_SMEM, cu_stream(m), g->pdl,
        ta, tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda qkv + attention");
    *done = 1;
    return cu_check(m->ctx, "cuda qkv + attention");
}

} // namespace

int cu_qkv_attn_clusters(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    const size_t T = m->T;
    /* hidden <= 512: every k block has its own stage (the ring never wraps). */
    static_assert(QA_D == 64 && QA_STAGES * BK >= 512 && QA_TPMAX == 128, "qkv_attn_serves' rule");
    if (!qkv_attn_serves(m, 0)) return 0;
    if (T <= 64) return qa_fits<1, 6, false>(cu);
    return by_key_tiles((int)((T + 15) / 16), [&](auto kt, auto full) {
        return qa_fits<2, decltype(kt)::value, decltype(full)::value>(cu);
    });
}

hrmt_status cu_qkv_attn(const hrmt_model *m, size_t n, const void *h, const void *w, void *att,
                        int *done) {
    *done = 0;
    if (!qkv_attn_one_wave(m, n, att, cu_model(m)->qa_clusters)) return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    if (m->T <= 64) return qa_launch<1, 6, false>(m, fn, n, h, w, att, done);
    return by_key_tiles((int)((m->T + 15) / 16), [&](auto kt, auto full) {
        return qa_launch<2, decltype(kt)::value, decltype(full)::value>(m, fn, n, h, w, att, done);
    });
}
