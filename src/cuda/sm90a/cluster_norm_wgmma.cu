/* A projection back to the hidden width with the block's residual + RMSNorm
 * in the epilogue, one row tile spread over a thread-block cluster (o_proj
 * and down_proj at small batches):
 *
 *   h[r, :] = rmsnorm( bf16( h[r, :] + bf16(A W^T)[r, :] ) )
 *
 * Launch by launch this is a GEMM writing proj and the row kernel reading
 * proj and h back: two links of the block's dependency chain, where at a
 * few samples each kernel's start and drain cost more than its work.
 * proj_norm_wgmma.cu does the same with a CTA per 64 rows x all H columns,
 * which leaves most SMs idle at small batches; here the CL CTAs of a
 * cluster take WN columns each (H = CL WN), and the norm's row statistics
 * are shared through distributed shared memory:
 *  1. each CTA forms x = bf16(h + bf16(acc)) for its 64 x WN block and puts
 *     it in its shared memory; cluster barrier;
 *  2. CTA r computes inv for rows r 64/CL .. (r + 1) 64/CL - 1 of the tile
 *     (a warp per row, lane l reading x[g 32 + l] from the CTA that holds
 *     it) and writes each inv into every CTA's shared memory; barrier;
 *  3. each CTA writes bf16(x inv) over its block of h; with a fold (cu_fold,
 *     the level's last call) also the next level's injection of it, from
 *     operands read while the products ran (inject_pair.cuh's bits).
 * Opt-in (HRMT_CUDA_CLUSTER_NORM_PUSH, PUSH): no cluster barrier after the
 * products; in 1 the rows go to the CTA that computes their inv by one
 * copy-engine transfer per other owner (its own rows a CTA copies itself:
 * a bulk copy may not target the executing CTA), in 2 the invs to every CTA by st.async,
 * each receiver waiting on a barrier counting the bytes it is owed
 * (cluster_async.cuh; a release arrive of a cluster barrier is a GPU-scope
 * memory barrier in the SASS). With OWN a CTA's own rows go straight into
 * its receive buffer beside xs, at the offset they have there. Link-trace
 * points of the push form: 6 x whole in xs, 3 the rows sent, 5 the rows
 * owed landed (OWN: then 7 its first row's inv, 4 its stores done) or 4
 * the invs sent and 5 those owed landed.
 *
 * Bits: the GEMM is each output's F32 chain of k16 steps in ascending k
 * from +0 rounded to BF16 (the pinned cuBLASLt algorithms' arithmetic, as
 * ring_gemm.cuh); the norm is rowops_norm.cu's register form: lane l of the
 * reference's 32 accumulator lanes sums x[g 32 + l]^2 over groups g in
 * order from +0, the quarters fold ((a_l + a_l+8) + a_l+16) + a_l+24 for
 * l < 8, those eight are summed from +0 in lane order, inv = 1 / sqrt(sum /
 * H + eps), out = bf16(x inv), each op rounded once. Here lane l of a warp
 * is reference lane l, so the chain is one thread's loop.
 * cuda_model/cluster_norm_equals_launches checks the bytes on the device.
 *
 * Shape: a CTA per (row tile of 64, WN columns): one producer thread (a TMA
 * ring of 64 k: A's 64 rows and W's WN rows), one consumer warpgroup of
 * m64nWNk16 (the residual read while the products run); CL = 16 or 8, by
 * the batch's tile count (cu_cluster_norm_ctas, model_settings.cu).
 *
 * KP (HRMT_CUDA_RING_KB: 1, 2 or 4, default 4; the push form's wgmma
 * products): each stage KP k blocks of A and of W, one 3-D TMA copy of
 * each, one barrier and one group of k16 steps: the same chain. The
 * ring-feed bench (bench/cuda_ring_feed.cu, session 37, H100) found the
 * ring paced by its number of copies: down_proj's products at 143 / 109 /
 * 72 ns a 64-k stage with 1 / 2 / 4 k blocks a copy (the chain alone: 63).
 *
 * On by default (HRMT_CUDA_CLUSTER_NORM=0 turns it off): on the H200 the
 * step is 7% / 5% / 4% faster at batches 1 / 4 / 8 (docs/CUDA-KERNELS.md). Tried and
 * dropped: A's rows multicast once per cluster (8-row slices, every
 * consumer warp arriving on every CTA's empty barrier) made a call 1.5x
 * slower (ncu at batch 1: 14.2 against 9.2 us). */
#include <stdlib.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/inject_pair.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_sumsq.cuh"
#include "cuda/sm90a/cluster_async.cuh"
#include "cuda/sm90a/norm_epilogue.cuh"
#include "cuda/sm90a/push_plan.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int CN_BM = 64;

/* KP: k blocks a stage, each stage's A and W one copy each
 * (HRMT_CUDA_RING_KB; wgmma_common.cuh's encode_kb): [KP][64][64] of A,
 * then [KP][WN][64] of W. */
template <int WN, int CL, int KP = 1>
struct cn_cfg {
    static constexpr int H = WN * CL;
    static constexpr int RP = CN_BM / CL; /* tile rows whose inv a CTA computes */
    static constexpr int A_BYTES = KP * CN_BM * ROW_BYTES;
    static constexpr int STAGE_BYTES = A_BYTES + KP * WN * ROW_BYTES;
    /* At the rows it serves the grid is at most one CTA per SM: a deep ring. */
    static constexpr int STAGES = (192 * 1024) / STAGE_BYTES;
    static constexpr int XBUF = CN_BM * WN * 2 + CN_BM * 4; /* x (BF16), inv per row */
    static constexpr int SMEM = STAGES * STAGE_BYTES + XBUF + 1024 + 2 * STAGES * 8;
    /* The push form (cluster_async.cuh) adds the rows this CTA normalises,
     * as its CL peers' blocks [CL][RP][WN], and their two barriers. */
    static constexpr int SMEM_PUSH = SMEM + 16 + CN_BM * WN * 2;
};

/* The owner form over all eight warps (OWN 2) where a CTA owns more rows
 * than the consumer has warps (clusters of 8), else the consumer's (OWN 1). */
template <int WN, int CL>
constexpr int cn_own8() {
    return cn_cfg<WN, CL>::RP > 4 ? 2 : 1;
}

struct cn_args {
    int M, kblocks;
    uint16_t *h;
    float eps;
    /* The next level's injection folded into the epilogue (cu_fold): fo
     * NULL for none; fp1 the operand that is not h, fp2 the third (NULL:
     * two operands); fhz 1: h is the injection's z, 0: its a. */
    const uint16_t *fp1, *fp2;
    uint16_t *fo;
    int fhz, fstore;
};

/* The fold on one pair: bf16(z + bf16(a (+ b))) with h in z's or a's place. */
__device__ __forceinline__ uint32_t fold_pair(const cn_args &p, uint32_t hv, uint32_t f1,
                                              uint32_t f2) {
    if (p.fhz) return p.fp2 ? inject_pair<true>(hv, f1, f2) : inject_pair<false>(hv, f1, 0u);
    return p.fp2 ? inject_pair<true>(f1, hv, f2) : inject_pair<false>(f1, hv, 0u);
}

#ifdef HRMT_SM90A
__device__ __forceinline__ uint16_t cl_ld_u16(uint32_t a) {
    uint16_t v;
    asm volatile("ld.shared::cluster.u16 %0, [%1];" : "=h"(v) : "r"(a) : "memory");
    return v;
}
#endif

/* PUSH: the norm's exchanges pushed to where they are read and waited for
 * by byte counts (HRMT_CUDA_CLUSTER_NORM_PUSH, below), the same bits; else
 * pulled between two cluster barriers. OWN (with PUSH;
 * HRMT_CUDA_CLUSTER_NORM_OWNER): the CTA that computes a row's inv also
 * normalises and stores the whole row from the copy it was sent, so no inv
 * travels back and no CTA waits for one (3' below); the same bits. OWN 2
 * (HRMT_CUDA_CLUSTER_NORM_OWNER8, on by default since session 56): where a
 * CTA owns eight rows (clusters of 8), the producer warpgroup's four warps
 * take rows too, one a warp, instead of idling while the consumer's warps
 * take two each: the link trace put those two rows at ~1.1 us (H100, batch
 * 8) against ~0.3 for one (batch 1). Where a CTA owns four (clusters of
 * 16) the producer's warps would have none and only wait: not built. */
template <int WN, int CL, bool PUSH, int KP = 1, int OWN = 0>
__global__ void __launch_bounds__(256, 1)
    cluster_norm_kernel(const __grid_constant__ CUtensorMap tm_a,
                        const __grid_constant__ CUtensorMap tm_w, const cn_args p) {
#ifdef HRMT_SM90A
    static_assert(!OWN || PUSH, "the owner's stores take the pushed rows");
    static_assert(OWN >= 0 && OWN <= 2, "no owner, the consumer's warps, or all eight");
    using C = cn_cfg<WN, CL, KP>;
    static_assert(OWN != 2 || C::RP > 4, "the producer's warps own rows only past four a CTA");
    constexpr int S = C::STAGES, H = C::H, G = H / 32;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_align1024(smem_raw);
    uint16_t *xs = (uint16_t *)(smem + S * C::STAGE_BYTES); /* [64][WN] */
    float *xinv = (float *)(xs + CN_BM * WN);
    uint64_t *full = (uint64_t *)(xinv + CN_BM), *empty = full + S;
    /* PUSH: xbar counts the rows pushed to this CTA (xr), ibar the invs. */
    uint64_t *xbar = empty + S, *ibar = xbar + 1;
    uint16_t *xr = (uint16_t *)(ibar + 1); /* [CL][RP][WN] */
    const uint32_t rank = cl_rank();
    const int wg = warpgroup_idx(), kb_n = p.kblocks;
    const int m0 = (int)(blockIdx.x / CL) * CN_BM, n0 = (int)rank * WN;
    /* Live rows of the tile, and of CTA k's RP rows (PUSH). */
    const int tile_live = p.M - m0 < CN_BM ? p.M - m0 : CN_BM;
    auto rows_of = [&](int k) { return cn_push_rows(tile_live, k, C::RP); };
    if (PUSH && threadIdx.x == 0) {
        mbar_init(xbar, 1);
        mbar_init(ibar, 1);
    }
    ring_setup(full, empty, S, 4); /* one arrive per consumer warp */
    if constexpr (PUSH) {
        /* What this CTA is owed, by one arrival. Nobody sends before the
         * cluster barrier's wait, so the barriers' fenced init comes first;
         * the relaxed arrive below does not order this expectation before
         * a peer's sends, so bytes may land first, which the barrier allows
         * (cluster_async.cuh; tests/test_cn_protocol.c lets them). */
        if (threadIdx.x == 128) {
            mbar_expect_tx(xbar, (unsigned)cn_push_owed_rows(tile_live, (int)rank, C::RP, WN, H));
            if (!OWN) mbar_expect_tx(ibar, (unsigned)(tile_live * 4));
        }
        cl_arrive_relaxed();
    }
    /* OWN: row j (ow, ow + NOW, ...) of the RP this CTA owns, ow the owner
     * warp (the consumer's warps 0-3; OWN 2: the producer's 4-7), NOW of
     * them; 16-byte chunk q (lane, lane + 32, ...) of H / 8: at most two
     * rows and two chunks (RP <= 8, H <= 512). */
    constexpr int NOW = OWN == 2 ? 8 : 4;
    constexpr int OJ = (C::RP + NOW - 1) / NOW, OQ = (H / 8 + 31) / 32;
    static_assert(!OWN || (OJ <= 2 && OQ <= 2), "the owner's rows and chunks a thread");
    using owner_ops = uint4[OWN ? OJ : 1][OWN ? OQ : 1]; /* of1, of2: the fold's */
    const int own_base = m0 + (int)rank * C::RP;         /* the owned rows' first, of M */
    /* The folded injection's operands of owner warp ow's rows, read while
     * the products run (after the wait for the kernel before). */
    auto owner_prefetch = [&](int ow, int lane, int mine_rows, owner_ops &of1, owner_ops &of2) {
#pragma unroll
        for (int u = 0; u < OJ; u++)
#pragma unroll
            for (int v = 0; v < OQ; v++) {
                const int j = ow + NOW * u, q = lane + 32 * v;
                const bool go = p.fo && j < mine_rows && q < H / 8;
                const size_t at = (size_t)(own_base + j) * H + 8 * q;
                of1[u][v] = go ? *(const uint4 *)(p.fp1 + at) : make_uint4(0, 0, 0, 0);
                of2[u][v] = go && p.fp2 ? *(const uint4 *)(p.fp2 + at) : make_uint4(0, 0, 0, 0);
            }
    };
    /* 3'. Owner warp ow's rows of the `mine` this CTA owns, every byte of
     * them in xr: inv as 2.'s chain, out = bf16(x inv) over the whole row,
     * in place in xr (lane l's columns g 32 + l; 3.'s product and
     * rounding), then stored in 16-byte chunks, the fold's likewise. */
    auto owner_rows = [&](int ow, int lane, int mine, const owner_ops &of1, const owner_ops &of2) {
#pragma unroll
        for (int u = 0; u < OJ; u++) {
            const int j = ow + NOW * u;
            if (j >= mine) break;
            float xv[G];
#pragma unroll
            for (int g = 0; g < G; g++)
                xv[g] = rc::bf16_to_f(xr[cn_push_at(j, g * 32 + lane, WN, C::RP)]);
            const float inv = rc::rmsnorm_lanes_inv<G>(xv, G, (float)H, p.eps);
            if (u == 0) LT_PHASE(7);
#pragma unroll
            for (int g = 0; g < G; g++)
                xr[cn_push_at(j, g * 32 + lane, WN, C::RP)] =
                    rc::bf16_bits_arith(rc::fmul(xv[g], inv));
            __syncwarp();
            const size_t rb = (size_t)(own_base + j) * H;
#pragma unroll
            for (int v = 0; v < OQ; v++) {
                const int q = lane + 32 * v;
                if (q >= H / 8) break;
                const uint4 hv = *(const uint4 *)(xr + cn_push_at(j, 8 * q, WN, C::RP));
                if (!p.fo || p.fstore) *(uint4 *)(p.h + rb + 8 * q) = hv;
                if (p.fo) {
                    const uint4 a = of1[u][v], b = of2[u][v];
                    *(uint4 *)(p.fo + rb + 8 * q) =
                        make_uint4(fold_pair(p, hv.x, a.x, b.x), fold_pair(p, hv.y, a.y, b.y),
                                   fold_pair(p, hv.z, a.z, b.z), fold_pair(p, hv.w, a.w, b.w));
                }
            }
        }
    };
    if (wg == 0) {
        if (threadIdx.x == 0) {
            /* W is never written: its first stages go out before the wait
             * for the kernel before (programmatic dependent launch). */
            const int copies = kb_n / KP, pre = copies < S ? copies : S;
            for (int c = 0; c < pre; c++) {
                mbar_expect_tx(&full[c], C::STAGE_BYTES);
                tma_load_kb<KP>(smem + c * C::STAGE_BYTES + C::A_BYTES, &tm_w, &full[c], c * KP,
                                n0);
            }
            pdl_wait();
            pdl_trigger();
            int s = 0;
            unsigned ph = 0;
            for (int c = 0; c < copies; c++) {
                uint8_t *st = smem + s * C::STAGE_BYTES;
                if (c >= pre) {
                    mbar_wait(&empty[s], ph ^ 1);
                    mbar_expect_tx(&full[s], C::STAGE_BYTES);
                    tma_load_kb<KP>(st + C::A_BYTES, &tm_w, &full[s], c * KP, n0);
                }
                tma_load_kb<KP>(st, &tm_a, &full[s], c * KP, m0);
                ring_next(s, ph, S);
            }
        }
        /* The producer warpgroup takes part in the cluster's two barriers
         * (PUSH: the one split barrier), its first warp converged first
         * (lane 0 issued the loads). */
        __syncwarp();
        if constexpr (OWN == 2) {
            /* Its rows' stores overwrite h and read the fold's operands,
             * which the kernel before wrote: each thread waits for it
             * (thread 0 has, before its loads; once, for the link trace's
             * one record a thread). */
            if (threadIdx.x != 0) pdl_wait();
            const int ow = 4 + (int)(threadIdx.x / 32), lane = threadIdx.x & 31;
            const int mine = rows_of((int)rank);
            owner_ops of1, of2;
            owner_prefetch(ow, lane, mine, of1, of2);
            cl_wait();
            /* The rows the consumer stored in xr (its own block), and
             * every byte pushed to this CTA where this warp has a row. */
            asm volatile("bar.sync 2, 256;" ::: "memory");
            if (ow < mine) mbar_wait_cluster(xbar, 0);
            cl_arrive_relaxed(); /* as the consumer's, below */
            owner_rows(ow, lane, mine, of1, of2);
            cl_wait();
        } else if constexpr (PUSH) {
            cl_wait();
        } else {
            cl_sync();
            cl_sync();
        }
        return;
    }
    pdl_wait(); /* before reading h */
    pdl_trigger();
    const int warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31, c = lane & 3;
    /* The residual's values, read while the products run; rows past M stay
     * unread and unwritten. */
    const int lr0 = warp * 16 + lane / 4; /* tile row of hf = 0 (hf = 1: + 8) */
    uint16_t *hrow[2] = {p.h + (size_t)(m0 + lr0) * H + n0, p.h + (size_t)(m0 + lr0 + 8) * H + n0};
    const bool live[2] = {m0 + lr0 < p.M, m0 + lr0 + 8 < p.M};
    uint32_t res[WN / 8][2];
#pragma unroll
    for (int i = 0; i < WN / 8; i++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
            res[i][hf] = live[hf] ? *(const uint32_t *)(hrow[hf] + 8 * i + 2 * c) : 0u;
    /* The folded injection's operands, read while the products run too:
     * this thread's pairs of the block, or (OWN) its 16-byte chunks of the
     * rows this CTA owns (of1 / of2 below). */
    constexpr int FB = OWN ? 1 : WN / 8;
    uint32_t f1[FB][2], f2[FB][2];
    const size_t off[2] = {(size_t)(m0 + lr0) * H + n0, (size_t)(m0 + lr0 + 8) * H + n0};
    if constexpr (!OWN) {
#pragma unroll
        for (int i = 0; i < WN / 8; i++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const bool go = p.fo && live[hf];
                f1[i][hf] = go ? *(const uint32_t *)(p.fp1 + off[hf] + 8 * i + 2 * c) : 0u;
                f2[i][hf] = go && p.fp2 ? *(const uint32_t *)(p.fp2 + off[hf] + 8 * i + 2 * c) : 0u;
            }
    }
    owner_ops of1, of2;
    if constexpr (OWN) owner_prefetch(warp, lane, rows_of((int)rank), of1, of2);
    /* Zeros the compiler cannot see through: a plain 0.0f let it carry the
     * accumulators as integers into the first wgmma and serialise every
     * wgmma of <64, 8> (ptxas C7520; qkv_attn_wgmma.cu's C7514 finding). */
    float acc[WN / 2];
#pragma unroll
    for (int i = 0; i < WN / 2; i++) asm volatile("mov.b32 %0, 0;" : "=f"(acc[i]));
    int s = 0, prev = -1;
    unsigned ph = 0;
    ring_products<WN, KP>(acc, smem, C::STAGE_BYTES, C::A_BYTES, full, empty, S, kb_n, s, ph, prev,
                          lane, CN_BM * ROW_BYTES, WN * ROW_BYTES);

    /* 1. x = bf16(h + bf16(acc)) in place of acc and into xs. */
#pragma unroll
    for (int i = 0; i < WN / 8; i++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int col = 8 * i + 2 * c;
            residual_pair(acc[4 * i + 2 * hf], acc[4 * i + 2 * hf + 1], res[i][hf]);
            /* acc holds BF16 values now: the pair packs exactly. */
            const int r = lr0 + 8 * hf;
            const uint32_t x2 = rc::pack_bf16x2_arith(acc[4 * i + 2 * hf], acc[4 * i + 2 * hf + 1]);
            *(uint32_t *)(xs + r * WN + col) = x2;
            /* OWN: this CTA's own rows also straight into xr, where the
             * copy below put them (cn_push_dst(rank) + j WN = r WN), so
             * that no copy and no barrier follow the one after xs. */
            if (OWN && r / C::RP == (int)rank) *(uint32_t *)(xr + r * WN + col) = x2;
        }
    if constexpr (PUSH) {
        /* 2'. Each owner's rows of the block to it by the copy engine (one
         * copy per owner, thread k sending CTA k's), the owner's invs to
         * every CTA by st.async; each CTA waits only for what it is owed.
         * Bits as 2. below: the same x, the same chain per lane. xs is the
         * copies' source until this CTA exits: every owner it copied to
         * has received all its rows before it sends the invs this CTA
         * waits for. */
        const int tid = threadIdx.x - 128, mine = rows_of((int)rank);
        fence_async_smem();
        asm volatile("bar.sync 1, 128;" ::: "memory"); /* xs whole */
        /* OWN 2: the own rows stored above, to the producer's warps. */
        if constexpr (OWN == 2) asm volatile("bar.arrive 2, 256;" ::: "memory");
        LT_PHASE(6);
        cl_wait(); /* every CTA's barriers made */
        if (tid < CL && tid != (int)rank && rows_of(tid) > 0)
            cl_copy_async(cl_map(xr + cn_push_dst((int)rank, WN, C::RP), (uint32_t)tid),
                          xs + cn_push_src(tid, WN, C::RP), (uint32_t)(rows_of(tid) * WN * 2),
                          cl_map(xbar, (uint32_t)tid));
        /* This CTA's own block of its rows by ordinary stores: a bulk copy
         * from a CTA's shared memory must go to another CTA's (OWN: stored
         * with xs, before the barrier above). */
        if constexpr (!OWN) {
            const uint4 *from = (const uint4 *)(xs + cn_push_src((int)rank, WN, C::RP));
            uint4 *to = (uint4 *)(xr + cn_push_dst((int)rank, WN, C::RP));
            for (int i = tid; i < mine * WN / 8; i += 128) to[i] = from[i];
            asm volatile("bar.sync 1, 128;" ::: "memory"); /* own block in xr */
        }
        LT_PHASE(3);
        if (mine > 0) mbar_wait_cluster(xbar, 0);
        if constexpr (OWN) {
            LT_PHASE(5);
            /* Every byte owed to this CTA has landed, so the copies its
             * senders made have been read: each may exit once every CTA
             * has arrived here (the wait at the end). */
            cl_arrive_relaxed();
            owner_rows(warp, lane, mine, of1, of2);
            LT_PHASE(4);
            cl_wait();
        } else {
            for (int j = warp; j < mine; j += 4) {
                float xv[G];
#pragma unroll
                for (int g = 0; g < G; g++) {
                    const int col = g * 32 + lane;
                    xv[g] = rc::bf16_to_f(xr[cn_push_at(j, col, WN, C::RP)]);
                }
                const float inv = rc::rmsnorm_lanes_inv<G>(xv, G, (float)H, p.eps);
                if (lane < CL)
                    cl_st_async_f32(cl_map(xinv + rank * C::RP + j, (uint32_t)lane), inv,
                                    cl_map(ibar, (uint32_t)lane));
            }
            LT_PHASE(4);
            mbar_wait_cluster(ibar, 0);
            LT_PHASE(5);
        }
    } else {
        cl_sync();
        LT_PHASE(3);

        /* 2. This CTA's rows of the tile: lane l is the reference's lane l
         * (rowops_sumsq.cuh's register form), column c = g 32 + l held by CTA
         * c / WN. */
        for (int j = warp; j < C::RP; j += 4) {
            const int row = (int)rank * C::RP + j;
            if (m0 + row >= p.M) continue;
            float xv[G];
#pragma unroll
            for (int g = 0; g < G; g++)
                xv[g] = rc::bf16_to_f(cl_ld_u16(cl_map(xs + row * WN + (g * 32 + lane) % WN,
                                                       (uint32_t)((g * 32 + lane) / WN))));
            const float inv = rc::rmsnorm_lanes_inv<G>(xv, G, (float)H, p.eps);
            if (lane < CL) cl_st_f32(cl_map(xinv + row, (uint32_t)lane), inv);
        }
        LT_PHASE(4);
        cl_sync();
        LT_PHASE(5);
    }

    /* 3. out = bf16(x inv) over this CTA's block; with a fold, the next
     * level's injection of it too (stored in out's place or beside it).
     * OWN: done in 3'. */
    if constexpr (!OWN) {
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            if (!live[hf]) continue;
            const float inv = xinv[lr0 + 8 * hf];
#pragma unroll
            for (int i = 0; i < WN / 8; i++) {
                const uint32_t hv = rc::pack_bf16x2_arith(rc::fmul(acc[4 * i + 2 * hf], inv),
                                                          rc::fmul(acc[4 * i + 2 * hf + 1], inv));
                if (!p.fo || p.fstore) *(uint32_t *)(hrow[hf] + 8 * i + 2 * c) = hv;
                if (p.fo)
                    *(uint32_t *)(p.fo + off[hf] + 8 * i + 2 * c) =
                        fold_pair(p, hv, f1[i][hf], f2[i][hf]);
            }
        }
    }
    LT_PHASE(8);
#endif
}

/* One instance's image and shared-memory (and cluster-size) opt-in. */
template <class K>
int cn_opt_in(K *kern, size_t smem, size_t per_block, int cl) {
    if (!image_loads(kern, smem, per_block) || smem_opt_in(kern, smem) != cudaSuccess ||
        (cl > 8 && cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
                       cudaSuccess)) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

/* The push form's instance (OWN 0, 1 or 2) for KP k blocks a copy, and
 * its shared memory. */
template <int WN, int CL, int OWN>
auto cn_push_kernel(int kp) {
    return kp == 4   ? cluster_norm_kernel<WN, CL, true, 4, OWN>
           : kp == 2 ? cluster_norm_kernel<WN, CL, true, 2, OWN>
                     : cluster_norm_kernel<WN, CL, true, 1, OWN>;
}
template <int WN, int CL>
size_t cn_push_smem(int kp) {
    return kp == 4   ? cn_cfg<WN, CL, 4>::SMEM_PUSH
           : kp == 2 ? cn_cfg<WN, CL, 2>::SMEM_PUSH
                     : cn_cfg<WN, CL>::SMEM_PUSH;
}
/* Every KP's instance of push form OWN opted in. */
template <int WN, int CL, int OWN>
int cn_push_opt_in(size_t per_block) {
    for (int kp : {1, 2, 4})
        if (!cn_opt_in(cn_push_kernel<WN, CL, OWN>(kp), cn_push_smem<WN, CL>(kp), per_block, CL))
            return 0;
    return 1;
}

/* How many clusters of CL such CTAs can run at once (0: none); every
 * instance (barriers, push) opted in, the push form's larger shared memory
 * counted (the cluster count is that of the larger, which the settings then
 * use for both: one CTA per SM either way). */
template <int WN, int CL>
int cn_fits(const hrmt_cuda *cu) {
    using C = cn_cfg<WN, CL>;
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    /* The wider stages (KP 2, 4) take no more shared memory than KP 1's. */
    static_assert(cn_cfg<WN, CL, 2>::SMEM_PUSH <= C::SMEM_PUSH &&
                      cn_cfg<WN, CL, 4>::SMEM_PUSH <= C::SMEM_PUSH,
                  "one cluster count for every KP");
    constexpr int O8 = cn_own8<WN, CL>(); /* OWN 2 where built */
    if (!cn_opt_in(cluster_norm_kernel<WN, CL, false>, C::SMEM, per_block, CL) ||
        !cn_push_opt_in<WN, CL, 0>(per_block) || !cn_push_opt_in<WN, CL, 1>(per_block) ||
        (O8 == 2 && !cn_push_opt_in<WN, CL, O8>(per_block)))
        return 0;
    /* Whether a cluster of CL such CTAs can be resident at all. */
    return cluster_fits(cluster_norm_kernel<WN, CL, true>, CL, 256, C::SMEM_PUSH);
}

template <int WN, int CL>
hrmt_status cn_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                      const void *a, size_t k, const void *w, void *h, const cu_fold *f, bool al16,
                      int *done) {
    const struct hrmt_model_cuda *g = cu_model(m);
    const int kp = kb_per_copy(g->cnorm_kb, k / BK); /* HRMT_CUDA_RING_KB */
    CUtensorMap ta, tw;
    if (!encode_kb(fn, &ta, a, rows, k, k, CN_BM, kp) ||
        !encode_kb(fn, &tw, w, (size_t)WN * CL, k, k, WN, kp))
        return HRMT_OK; /* *done stays 0: the launches serve */
    /* Its shared-memory (and cluster-size) opt-in was made at model load by
     * cn_fits, which this model's settings passed. */
    const cn_args p{(int)rows,
                    (int)(k / BK),
                    (uint16_t *)h,
                    (float)m->cfg.rms_norm_eps,
                    f ? (const uint16_t *)f->p1 : nullptr,
                    f ? (const uint16_t *)f->p2 : nullptr,
                    f ? (uint16_t *)f->o : nullptr,
                    f ? f->hz : 0,
                    f ? f->store : 0};
    /* The owner's stores (HRMT_CUDA_CLUSTER_NORM_OWNER) write 16-byte
     * chunks: with h and the fold's operands 16-byte aligned (al16), else
     * the push form. */
    const bool own = g->cnorm_push && g->cnorm_own && al16;
    /* HRMT_CUDA_CLUSTER_NORM_OWNER8 where a CTA owns more than four rows
     * (cn_own8: elsewhere OWN 1 again). */
    constexpr int O8 = cn_own8<WN, CL>();
    auto kern = !g->cnorm_push         ? cluster_norm_kernel<WN, CL, false>
                : own && g->cnorm_own8 ? cn_push_kernel<WN, CL, O8>(kp)
                : own                  ? cn_push_kernel<WN, CL, 1>(kp)
                                       : cn_push_kernel<WN, CL, 0>(kp);
    const size_t smem = !g->cnorm_push ? cn_cfg<WN, CL>::SMEM : cn_push_smem<WN, CL>(kp);
    const unsigned grid = (unsigned)((rows + CN_BM - 1) / CN_BM * CL);
    const cudaError_t e =
        cluster_launch(kern, CL, dim3(grid), dim3(256), smem, cu_stream(m), g->pdl, ta, tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda cluster projection + norm");
    *done = 1;
    return cu_check(m->ctx, "cuda cluster projection + norm");
}

} // namespace

int cu_cluster_norm_clusters(const hrmt_model *m, int ctas) {
    const hrmt_cuda *cu = m->ctx->cuda;
    const size_t H = m->hidden, I = m->inter;
    if (m->dt != HRMT_BF16 || cu->prop.major != 9 || cu->prop.minor != 0) return 0;
    if ((H != 256 && H != 512) || I % BK != 0 || I > (size_t)INT32_MAX / 2) return 0;
    if (!encode_fn()) return 0;
    if (H == 512) return ctas == 16 ? cn_fits<32, 16>(cu) : cn_fits<64, 8>(cu);
    return ctas == 16 ? cn_fits<16, 16>(cu) : cn_fits<32, 8>(cu);
}

hrmt_status cu_cluster_norm(const hrmt_model *m, int ctas, size_t rows, const void *a, size_t k,
                            const void *w, void *h, const cu_fold *f, int *done) {
    *done = 0;
    if (ctas != 8 && ctas != 16) return HRMT_OK;
    /* Whole k blocks; 4-byte pairs of h (and of the fold's operands); sizes
     * the kernel's int arithmetic holds. */
    const uintptr_t al = f ? (uintptr_t)f->p1 | (uintptr_t)f->p2 | (uintptr_t)f->o : 0;
    if (rows == 0 || k % BK != 0 || k > (size_t)INT32_MAX / 2 || rows > (size_t)INT32_MAX / 2 ||
        ((uintptr_t)h | al) % 4 != 0 || (f && (!f->p1 || !f->o)))
        return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    const int c16 = ctas == 16;
    const bool al16 = ((uintptr_t)h | al) % 16 == 0; /* the owner's 16-byte stores */
    if (m->hidden == 512)
        return c16 ? cn_launch<32, 16>(m, fn, rows, a, k, w, h, f, al16, done)
                   : cn_launch<64, 8>(m, fn, rows, a, k, w, h, f, al16, done);
    if (m->hidden == 256)
        return c16 ? cn_launch<16, 16>(m, fn, rows, a, k, w, h, f, al16, done)
                   : cn_launch<32, 8>(m, fn, rows, a, k, w, h, f, al16, done);
    return HRMT_OK;
}
