/* What feeds a small-batch ring kernel's products: how fast a CTA's TMA ring
 * brings its stages from L2, against the chain of k16 steps they feed.
 *
 * The link trace (session 32, docs/CUDA-KERNELS.md) put a k16 step of the
 * batch-1 kernels at ~40-47 ns (the cluster projection + norm's products:
 * o_proj 8 stages in ~1.5 us, down_proj 24 stages in ~4 us after the first
 * landed), while bench/cuda_chain_latency.cu measured the chain alone at
 * ~12.6 ns a step (m64n32, operands resident). So the stages arrive slower
 * than the products consume them. Why decides what to build next:
 *   - bytes per SM (each CTA's stream through the SM's port from L2): then
 *     fewer A rows per CTA (box rows) pay;
 *   - bytes in all (the L2's bandwidth, 32 CTAs asking at once): then more
 *     CTAs cost, and A multicast within a cluster pays;
 *   - the ring's depth against the copy's round trip (24 stages through 16):
 *     then a deeper ring pays;
 *   - none of those (a fixed rate of copies): then fewer, larger copies.
 * Each CTA of the grid streams kb_n stages of A (box_rows of a 64-row
 * block, 128-byte swizzle, the `group` CTAs of a cluster-like group reading
 * the same rows, as a cluster projection's CTAs do) and WN rows of W
 * (distinct per CTA in the group) through an S-stage ring, one producer
 * thread and one consumer warpgroup that issues m64nWNk16 wgmma per stage
 * (four k16 steps, a commit a stage, one group in flight: ring_products),
 * or only waits and gives each stage back (feed alone). %globaltimer at the
 * CTA's start, at the first stage's landing, at the products' end; the
 * operands are warm in L2 (a launch before). Prints, per configuration, the
 * median over 7 launches of the CTAs' median and slowest times, and ns a
 * stage after the first. The configurations: the batch-1 cluster
 * projection's (down_proj and o_proj), batch 8's (clusters of 8) and batch
 * 8's fused gate_up tiles (132 CTAs of 64 rows x 128 W rows, 12 CTAs a row
 * tile: ~50 MB from L2 a call by the count), each beside one CTA alone and
 * the feed alone, and the variants above.
 * The answer (session 37, H100): mode 7 (every stage landed before the
 * products) 79 ns a stage against 137 as run; modes 8-10 (2 / 4 / 8 k
 * blocks a copy, 3-D tensor maps) 109 / 72 / 99 for down_proj: a ring is
 * paced by its number of copies, not their bytes, so the cluster kernels
 * now copy four k blocks at a time (HRMT_CUDA_RING_KB). The fused gate_up's
 * batch-8 tiles are the L2's: W multicast to 2 / 4 row tiles (mc 2) took
 * their products from 279 / 261 to 256 / 219 ns a stage.
 * Not part of CMake. On the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90a -I include -I src \
 *        bench/cuda_ring_feed.cu -o /tmp/ring_feed && /tmp/ring_feed
 * Exit status 0 when every configuration ran. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include "cuda/sm90a/cluster_async.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

#include "cuda_check.cuh"

namespace {

constexpr int A_BLOCK = 64 * ROW_BYTES; /* a stage's A part: 64 rows, whatever the box */
constexpr int SMEM_MAX = 227 * 1024;
constexpr int W_ROWS = 2048; /* W rows of the configurations' groups (12 x 128 at most) */

struct feed_args {
    int kb_n, stages, group, wn, w_load;
    int nt;                /* MCW: W tiles (n0 = WN x the cluster's tile); 0 otherwise */
    unsigned long long *t; /* per CTA: start, first stage, end */
};

#ifdef HRMT_SM90A
/* One stage's products as the kernels issue them (ring_products): a fence,
 * the four k16 steps, a commit. */
template <int WN>
__device__ __forceinline__ void stage_products(float (&acc)[WN / 2], const uint8_t *st) {
    const uint64_t da = desc_k128(st), dw = desc_k128(st + A_BLOCK);
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) wgmma_n<WN>(acc, da + 2 * kk, dw + 2 * kk);
    wg_commit();
}
/* Every group done; the accumulators read after the wait. */
template <int WN>
__device__ __forceinline__ void products_done(float (&acc)[WN / 2]) {
    wg_wait<0>();
#pragma unroll
    for (int i = 0; i < WN / 2; i++) asm volatile("" : "+f"(acc[i])::"memory");
}
#endif

/* MC: launched in clusters of a.group CTAs (the group), A's box of k block
 * kb multicast by CTA kb % group to all of them; before it issues into a
 * stage again, every CTA's consumer warps have given that stage back
 * (mc_empty[s] of the issuer, 4 group arrivals); W stays each CTA's own.
 * The issuer waits mc_empty[s] at the ring's parity, right while each of
 * its mc_empty barriers completes at most once a wrap: kb_n <= 2 stages
 * (the host checks). MCW (with MC): W multicast instead, the group being
 * `group` row tiles of the same W tile (a.nt W tiles), A each CTA's own:
 * the fused gate_up's batch-8 tiles read all of W once per row tile. */
template <int WN, int MODE, bool MC = false, bool MCW = false>
__global__ void __launch_bounds__(256, 1)
    feed(const __grid_constant__ CUtensorMap tm_a, const __grid_constant__ CUtensorMap tm_w,
         int box_bytes, const feed_args a) {
#ifdef HRMT_SM90A
    extern __shared__ uint8_t raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
    /* MODE 8 / 9 / 10: slots of PAIR = 2 / 4 / 8 k blocks ([A kb].. [W kb]..),
     * 1 / PAIR as many, each filled by one 3-D copy of A and one of W. */
    constexpr int PAIR = MODE == 8 ? 2 : MODE == 9 ? 4 : MODE == 10 ? 8 : 1;
    const int S = a.stages / PAIR, stage = PAIR * (A_BLOCK + WN * ROW_BYTES);
    uint64_t *full = (uint64_t *)(smem + S * stage), *empty = full + S, *mc_empty = empty + S;
    if (MC && threadIdx.x == 0)
        for (int i = 0; i < S; i++) mbar_init(&mc_empty[i], 4u * (unsigned)a.group);
    ring_setup(full, empty, S, 4);
    const uint32_t rank = MC ? cl_rank() : 0;
    if constexpr (MC) {
        cl_arrive_relaxed(); /* every CTA's barriers made before any copy lands */
        cl_wait();
    }
    const unsigned long long t0 = now_ns();
    const int cid = (int)(blockIdx.x / (unsigned)a.group),
              cr = (int)(blockIdx.x % (unsigned)a.group);
    const int m0 = MCW ? ((cid / a.nt) * a.group + cr) * 64 : cid * 64;
    const int n0 = MCW ? (cid % a.nt) * WN : cr * WN;
    const unsigned bytes = (unsigned)box_bytes + (a.w_load ? (unsigned)(WN * ROW_BYTES) : 0u);
    if (threadIdx.x < 128) {
        if (threadIdx.x != 0) {
            if constexpr (MC) {
                cl_arrive_relaxed(); /* the end's cluster barrier */
                cl_wait();
            }
            return;
        }
        int s = 0;
        unsigned ph = 0;
        if constexpr (PAIR > 1) {
            for (int kb = 0, i = 0; kb < a.kb_n; kb += PAIR, i++) {
                uint8_t *st = smem + s * stage;
                if (i >= S) mbar_wait(&empty[s], ph ^ 1);
                mbar_expect_tx(&full[s], PAIR * bytes);
                if (a.w_load) tma_load_3d(st + PAIR * A_BLOCK, &tm_w, &full[s], 0, n0, kb);
                tma_load_3d(st, &tm_a, &full[s], 0, m0, kb);
                ring_next(s, ph, S);
            }
            return;
        }
        /* MODE 4, 5: one stage, which the products then read kb_n times. */
        const int loads = MODE == 4 || MODE == 5 ? 1 : a.kb_n;
        for (int kb = 0; kb < loads; kb++) {
            uint8_t *st = smem + s * stage;
            if (kb >= S) mbar_wait(&empty[s], ph ^ 1);
            mbar_expect_tx(&full[s], bytes);
            if (a.w_load && !MCW) tma_load(st + A_BLOCK, &tm_w, &full[s], kb * BK, n0);
            if (MCW && kb % a.group == (int)rank) {
                if (kb >= S) mbar_wait_cluster(&mc_empty[s], ph ^ 1);
                tma_load_mc(st + A_BLOCK, &tm_w, &full[s], kb * BK, n0,
                            (uint16_t)((1u << a.group) - 1));
            }
            if (!MC || MCW) {
                tma_load(st, &tm_a, &full[s], kb * BK, m0);
            } else if (kb % a.group == (int)rank) {
                if (kb >= S) mbar_wait_cluster(&mc_empty[s], ph ^ 1);
                tma_load_mc(st, &tm_a, &full[s], kb * BK, m0, (uint16_t)((1u << a.group) - 1));
            }
            ring_next(s, ph, S);
        }
        if constexpr (MC) {
            cl_arrive_relaxed();
            cl_wait();
        }
        return;
    }
    const int lane = threadIdx.x & 31;
    int s = 0;
    unsigned ph = 0;
    unsigned long long t_first = 0;
    float acc[WN / 2];
#pragma unroll
    for (int i = 0; i < WN / 2; i++) asm volatile("mov.b32 %0, 0;" : "=f"(acc[i]));
    if constexpr (MODE == 4 || MODE == 5) {
        /* The chain alone on operands in shared memory: every stage's
         * products read stage 0, a trip count ptxas sees (24 stages, 16 at
         * WN 128: the configurations' kb_n); MODE 4 with the kernels'
         * per-stage fence, commit and wait, MODE 5 as one group. */
        constexpr int KBC = WN == 128 ? 16 : 24;
        mbar_wait(&full[0], 0);
        t_first = now_ns();
        const uint64_t da = desc_k128(smem), dw = desc_k128(smem + A_BLOCK);
        wg_fence();
#pragma unroll
        for (int kb = 0; kb < KBC; kb++) {
            if (MODE == 4 && kb > 0) wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) wgmma_n<WN>(acc, da + 2 * kk, dw + 2 * kk);
            if constexpr (MODE == 4) {
                wg_commit();
                wg_wait<1>();
            }
        }
        wg_commit();
        products_done<WN>(acc);
    } else if constexpr (MODE == 7) {
        /* Every stage landed first (kb_n <= S: no wrap), then the kernels'
         * products over them: "first" is when the last landed. */
        for (int kb = 0; kb < a.kb_n; kb++) mbar_wait(&full[kb], 0);
        t_first = now_ns();
        for (int kb = 0; kb < a.kb_n; kb++) {
            stage_products<WN>(acc, smem + kb * stage);
            wg_wait<1>();
        }
        products_done<WN>(acc);
    } else if constexpr (PAIR > 1) {
        /* A slot of PAIR k blocks a group, as mode 6, from one barrier. */
        int prev = -1;
        for (int kb = 0; kb < a.kb_n; kb += PAIR) {
            mbar_wait(&full[s], ph);
            if (kb == 0) t_first = now_ns();
            const uint8_t *st = smem + s * stage;
            wg_fence();
#pragma unroll
            for (int j = 0; j < PAIR; j++) {
                const uint64_t da = desc_k128(st + j * A_BLOCK),
                               dw = desc_k128(st + PAIR * A_BLOCK + j * WN * ROW_BYTES);
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) wgmma_n<WN>(acc, da + 2 * kk, dw + 2 * kk);
            }
            wg_commit();
            wg_wait<1>();
            if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
            prev = s;
            ring_next(s, ph, S);
        }
        products_done<WN>(acc);
    } else if constexpr (MODE == 6) {
        /* Two stages a group (kb_n even): one fence, eight k16 steps, one
         * commit; the previous pair given back once this one is issued. */
        int prev = -1, prev1 = -1;
        for (int kb = 0; kb < a.kb_n; kb += 2) {
            const int s0 = s;
            mbar_wait(&full[s], ph);
            if (kb == 0) t_first = now_ns();
            ring_next(s, ph, S);
            const int s1 = s;
            mbar_wait(&full[s], ph);
            ring_next(s, ph, S);
            const uint8_t *st0 = smem + s0 * stage, *st1 = smem + s1 * stage;
            const uint64_t da = desc_k128(st0), dw = desc_k128(st0 + A_BLOCK);
            const uint64_t db = desc_k128(st1), dx = desc_k128(st1 + A_BLOCK);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) wgmma_n<WN>(acc, da + 2 * kk, dw + 2 * kk);
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) wgmma_n<WN>(acc, db + 2 * kk, dx + 2 * kk);
            wg_commit();
            wg_wait<1>();
            if (prev >= 0 && lane == 0) {
                mbar_arrive(&empty[prev]);
                mbar_arrive(&empty[prev1]);
            }
            prev = s0;
            prev1 = s1;
        }
        products_done<WN>(acc);
    } else if constexpr (MODE == 3) {
        /* Two groups in flight: stage kb - 2 given back. */
        int prev = -1, prev2 = -1;
        for (int kb = 0; kb < a.kb_n; kb++) {
            mbar_wait(&full[s], ph);
            if (kb == 0) t_first = now_ns();
            stage_products<WN>(acc, smem + s * stage);
            wg_wait<2>();
            if (prev2 >= 0 && lane == 0) mbar_arrive(&empty[prev2]);
            prev2 = prev;
            prev = s;
            ring_next(s, ph, S);
        }
        products_done<WN>(acc);
    } else if constexpr (MODE == 1) {
        int prev = -1;
        /* ring_products with the first stage's time taken. */
        for (int kb = 0; kb < a.kb_n; kb++) {
            mbar_wait(&full[s], ph);
            if (kb == 0) t_first = now_ns();
            stage_products<WN>(acc, smem + s * stage);
            wg_wait<1>();
            if (prev >= 0 && lane == 0) {
                mbar_arrive(&empty[prev]);
                /* The stage's next A comes from CTA (kb - 1 + S) % group. */
                if (MC && kb - 1 + S < a.kb_n)
                    mbar_arrive_remote(cl_map(&mc_empty[prev], (uint32_t)((kb - 1 + S) % a.group)));
            }
            prev = s;
            ring_next(s, ph, S);
        }
        products_done<WN>(acc);
    } else {
        for (int kb = 0; kb < a.kb_n; kb++) {
            mbar_wait(&full[s], ph);
            if (kb == 0) t_first = now_ns();
            if (lane == 0) {
                mbar_arrive(&empty[s]);
                if (MC && kb + S < a.kb_n)
                    mbar_arrive_remote(cl_map(&mc_empty[s], (uint32_t)((kb + S) % a.group)));
            }
            ring_next(s, ph, S);
        }
    }
    const unsigned long long t_end = now_ns();
    /* Keep the products: one value a warpgroup, never 1e30 in practice. */
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < WN / 2; i++) sum += acc[i];
    if (threadIdx.x == 128) {
        a.t[3 * blockIdx.x] = t0;
        a.t[3 * blockIdx.x + 1] = t_first;
        a.t[3 * blockIdx.x + 2] = sum == 1e30f ? 0 : t_end;
    }
    if constexpr (MC) {
        cl_arrive_relaxed(); /* no CTA leaves while a peer may still arrive on it */
        cl_wait();
    }
#endif
}

struct cfg {
    const char *what;
    int ctas, group, box_rows, wn, kb_n, stages, mode, w_load, mc;
    int nt; /* mc 2 (W multicast to `group` row tiles): the W tiles */
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

/* false when a cluster of a.group such CTAs cannot be placed (nothing run). */
template <int WN, int C, bool MC, bool MCW = false>
bool launch(const CUtensorMap &ta, const CUtensorMap &tw, int box_bytes, const feed_args &a,
            int ctas, size_t smem) {
    auto k = feed<WN, C, MC, MCW>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    if (MC && cluster_fits(k, a.group, 256, smem) == 0) return false;
    CK(cluster_launch(k, MC ? a.group : 1, dim3(ctas), dim3(256), smem, 0, 0, ta, tw, box_bytes,
                      a));
    CK(cudaGetLastError());
    return true;
}

/* The instance of a consumer mode: 0 feed alone, 1 products as the
 * kernels run them, 3 with two groups in flight, 4 the products of every
 * stage on one stage's operands (the chain without the feed), 5 that as one
 * group, 6 the ring's stages two a group, 7 every stage landed before the
 * products start (kb_n <= stages; "first" is the last landing), 8 two k
 * blocks a copy (3-D tensor maps) and a group (multicast: 0 and 1 only).
 * (A fence before the first stage only is no mode: ptxas injects the
 * warpgroup arrive before each stage's products itself, C7519.) */
template <int WN, bool MC>
bool launch_as(int mode, const CUtensorMap &ta, const CUtensorMap &tw, int box_bytes,
               const feed_args &a, int ctas, size_t smem) {
    if constexpr (MC)
        return mode ? launch<WN, 1, MC>(ta, tw, box_bytes, a, ctas, smem)
                    : launch<WN, 0, MC>(ta, tw, box_bytes, a, ctas, smem);
    switch (mode) {
    case 0: return launch<WN, 0, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 3: return launch<WN, 3, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 4: return launch<WN, 4, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 5: return launch<WN, 5, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 6: return launch<WN, 6, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 7: return launch<WN, 7, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 8: return launch<WN, 8, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 9: return launch<WN, 9, MC>(ta, tw, box_bytes, a, ctas, smem);
    case 10: return launch<WN, 10, MC>(ta, tw, box_bytes, a, ctas, smem);
    default: return launch<WN, 1, MC>(ta, tw, box_bytes, a, ctas, smem);
    }
}

} // namespace

int main(void) {
    cudaDeviceProp prop;
    if (!sm90_device(&prop)) return 2;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) {
        fprintf(stderr, "no cuTensorMapEncodeTiled\n");
        return 2;
    }
    /* The batch-1 cluster projection + norm: 2 row tiles x 16 CTAs of 32
     * columns (down_proj: K = 1536, 24 stages through 16; o_proj: 8). */
    const cfg cfgs[] = {
        {"down_proj as now (32 CTAs, groups of 16)", 32, 16, 64, 32, 24, 16, 1, 1, 0},
        {"  feed alone", 32, 16, 64, 32, 24, 16, 0, 1, 0},
        {"  feed alone, A only", 32, 16, 64, 32, 24, 16, 0, 0, 0},
        {"  one CTA", 1, 16, 64, 32, 24, 16, 1, 1, 0},
        {"  one CTA, feed alone", 1, 16, 64, 32, 24, 16, 0, 1, 0},
        {"  A box of 32 rows", 32, 16, 32, 32, 24, 16, 1, 1, 0},
        {"  A box of 16 rows", 32, 16, 16, 32, 24, 16, 1, 1, 0},
        {"  18 stages", 32, 16, 64, 32, 24, 18, 1, 1, 0},
        {"  each CTA its own A rows", 32, 1, 64, 32, 24, 16, 1, 1, 0},
        {"  132 CTAs (groups of 16)", 132, 16, 64, 32, 24, 16, 1, 1, 0},
        {"  132 CTAs, feed alone", 132, 16, 64, 32, 24, 16, 0, 1, 0},
        {"o_proj as now (8 stages)", 32, 16, 64, 32, 8, 16, 1, 1, 0},
        {"  feed alone", 32, 16, 64, 32, 8, 16, 0, 1, 0},
        {"  one CTA", 1, 16, 64, 32, 8, 16, 1, 1, 0},
        {"clusters of 8, 64 columns (batch 8's form: 88 CTAs)", 88, 8, 64, 64, 24, 12, 1, 1, 0},
        {"  feed alone", 88, 8, 64, 64, 24, 12, 0, 1, 0},
        {"down_proj, A multicast in groups of 16", 32, 16, 64, 32, 24, 16, 1, 1, 1},
        {"  feed alone", 32, 16, 64, 32, 24, 16, 0, 1, 1},
        {"o_proj, A multicast in groups of 16", 32, 16, 64, 32, 8, 16, 1, 1, 1},
        {"clusters of 8, A multicast (88 CTAs)", 88, 8, 64, 64, 24, 12, 1, 1, 1},
        {"  feed alone", 88, 8, 64, 64, 24, 12, 0, 1, 1},
        {"gate_up at batch 8 (132 CTAs, 128 W rows, groups of 12)", 132, 12, 64, 128, 16, 8, 1, 1,
         0},
        {"  feed alone", 132, 12, 64, 128, 16, 8, 0, 1, 0},
        {"  one CTA", 1, 12, 64, 128, 16, 8, 1, 1, 0},
        {"  one CTA, feed alone", 1, 12, 64, 128, 16, 8, 0, 1, 0},
        {"down_proj, two groups in flight", 32, 16, 64, 32, 24, 16, 3, 1, 0},
        {"clusters of 8, two groups in flight", 88, 8, 64, 64, 24, 12, 3, 1, 0},
        {"gate_up at batch 8, two groups in flight", 132, 12, 64, 128, 16, 8, 3, 1, 0},
        {"down_proj, A alone fed (W as if resident)", 32, 16, 64, 32, 24, 16, 1, 0, 0},
        {"o_proj, A alone fed (W as if resident)", 32, 16, 64, 32, 8, 16, 1, 0, 0},
        {"clusters of 8, A alone fed (W as if resident)", 88, 8, 64, 64, 24, 12, 1, 0, 0},
        {"gate_up at batch 8, A alone fed (W as if resident)", 132, 12, 64, 128, 16, 8, 1, 0, 0},
        {"down_proj, A box of 16 rows alone fed", 32, 16, 16, 32, 24, 16, 1, 0, 0},
        {"  feed alone", 32, 16, 16, 32, 24, 16, 0, 0, 0},
        {"down_proj, A alone (64 rows), feed alone", 32, 16, 64, 32, 24, 16, 0, 0, 0},
        {"16 k blocks as down_proj's ring runs them", 32, 16, 64, 32, 16, 16, 1, 1, 0},
        {"  every stage landed before the products", 32, 16, 64, 32, 16, 16, 7, 1, 0},
        {"12 k blocks as batch 8's clusters of 8 run them", 88, 8, 64, 64, 12, 12, 1, 1, 0},
        {"  every stage landed before the products", 88, 8, 64, 64, 12, 12, 7, 1, 0},
        {"down_proj, two k blocks a copy (3-D maps)", 32, 16, 64, 32, 24, 16, 8, 1, 0},
        {"o_proj, two k blocks a copy", 32, 16, 64, 32, 8, 16, 8, 1, 0},
        {"clusters of 8, two k blocks a copy", 88, 8, 64, 64, 24, 12, 8, 1, 0},
        {"down_proj, four k blocks a copy", 32, 16, 64, 32, 24, 16, 9, 1, 0},
        {"o_proj, four k blocks a copy", 32, 16, 64, 32, 8, 16, 9, 1, 0},
        {"clusters of 8, four k blocks a copy", 88, 8, 64, 64, 24, 12, 9, 1, 0},
        {"down_proj, eight k blocks a copy", 32, 16, 64, 32, 24, 16, 10, 1, 0},
        {"o_proj, eight k blocks a copy", 32, 16, 64, 32, 8, 16, 10, 1, 0},
        {"gate_up, 120 CTAs (10 row tiles x 12), as run", 120, 12, 64, 128, 8, 8, 1, 1, 0},
        {"  feed alone", 120, 12, 64, 128, 8, 8, 0, 1, 0},
        {"  W multicast to pairs of row tiles", 120, 2, 64, 128, 8, 8, 1, 1, 2, 12},
        {"  W multicast to pairs, feed alone", 120, 2, 64, 128, 8, 8, 0, 1, 2, 12},
        {"  W multicast to fours of row tiles", 96, 4, 64, 128, 8, 8, 1, 1, 2, 12},
        {"  (96 CTAs as run, for the fours)", 96, 12, 64, 128, 8, 8, 1, 1, 0},
        {"gate_up at batch 8, two k blocks a copy", 132, 12, 64, 128, 8, 8, 8, 1, 0},
        {"  as run, 8 k blocks", 132, 12, 64, 128, 8, 8, 1, 1, 0},
        {"down_proj, one stage read 24 times", 32, 16, 64, 32, 24, 16, 4, 1, 0},
        {"  the same as one group (the chain alone)", 32, 16, 64, 32, 24, 16, 5, 1, 0},
        {"  two stages a group", 32, 16, 64, 32, 24, 16, 6, 1, 0},
        {"o_proj, two stages a group", 32, 16, 64, 32, 8, 16, 6, 1, 0},
        {"clusters of 8, one stage read 24 times", 88, 8, 64, 64, 24, 12, 4, 1, 0},
        {"  the same as one group (the chain alone)", 88, 8, 64, 64, 24, 12, 5, 1, 0},
        {"  two stages a group", 88, 8, 64, 64, 24, 12, 6, 1, 0},
        {"gate_up at batch 8, one stage read 16 times", 132, 12, 64, 128, 16, 8, 4, 1, 0},
        {"  the same as one group (the chain alone)", 132, 12, 64, 128, 16, 8, 5, 1, 0},
        {"  two stages a group", 132, 12, 64, 128, 16, 8, 6, 1, 0},
    };
    const int K = 24 * BK, max_tiles = 132;
    uint16_t *a_buf, *w_buf;
    unsigned long long *t;
    const size_t a_elems = (size_t)max_tiles * 64 * K, w_elems = (size_t)W_ROWS * K;
    CK(cudaMalloc(&a_buf, a_elems * 2));
    CK(cudaMalloc(&w_buf, w_elems * 2));
    CK(cudaMemset(a_buf, 0, a_elems * 2));
    CK(cudaMemset(w_buf, 0, w_elems * 2));
    CK(cudaMalloc(&t, sizeof(unsigned long long) * 3 * max_tiles));
    printf(
        "%s, %d SMs: one TMA ring a CTA (A box rows + W rows a 64-k stage), median of 7 "
        "launches, operands warm in L2\n",
        prop.name, prop.multiProcessorCount);
    printf("%-52s %6s %8s %8s %9s %9s %9s %9s\n", "configuration", "stages", "KB/CTA", "MB all",
           "first us", "done med", "done max", "ns/stage");
    int fails = 0;
    for (const cfg &c : cfgs) {
        alignas(64) CUtensorMap ta, tw;
        const int kp = c.mode == 8    ? 2
                       : c.mode == 9  ? 4
                       : c.mode == 10 ? 8
                                      : 1; /* k blocks a copy */
        const bool made = encode_kb(fn, &ta, a_buf, (size_t)max_tiles * 64, K, K, c.box_rows, kp) &&
                          encode_kb(fn, &tw, w_buf, W_ROWS, K, K, c.wn, kp);
        if (!made) {
            printf("%-52s tensor map refused\n", c.what);
            fails++;
            continue;
        }
        const int stage = A_BLOCK + c.wn * ROW_BYTES;
        const size_t smem = (size_t)c.stages * stage + 1024 + 24 * (size_t)c.stages;
        if (smem > SMEM_MAX) {
            printf("%-52s %zu bytes of shared memory: too many\n", c.what, smem);
            fails++;
            continue;
        }
        if ((c.mc == 1 && c.wn == 128) || (c.mc == 2 && c.wn != 128)) {
            printf("%-52s multicast of that form: no such instance\n", c.what);
            fails++;
            continue;
        }
        if ((c.mode == 6 && c.kb_n % 2) ||
            ((c.mode == 4 || c.mode == 5) && c.kb_n != (c.wn == 128 ? 16 : 24)) ||
            (c.mode == 7 && c.kb_n > c.stages) ||
            (kp > 1 && (c.kb_n % kp || c.stages % kp || c.box_rows != 64))) {
            printf("%-52s %d k blocks: no such instance\n", c.what, c.kb_n);
            fails++;
            continue;
        }
        if (c.mc && c.kb_n > 2 * c.stages) {
            printf("%-52s multicast past two wraps of the ring: not measured\n", c.what);
            fails++;
            continue;
        }
        const int box_bytes = c.box_rows * ROW_BYTES;
        feed_args a{c.kb_n, c.stages, c.group, c.wn, c.w_load, c.nt, t};
        std::vector<double> first, med, mx;
        bool placed = true;
        for (int rep = 0; rep < 8 && placed; rep++) {
            if (c.wn == 32)
                placed = c.mc ? launch_as<32, true>(c.mode, ta, tw, box_bytes, a, c.ctas, smem)
                              : launch_as<32, false>(c.mode, ta, tw, box_bytes, a, c.ctas, smem);
            else if (c.wn == 64)
                placed = c.mc ? launch_as<64, true>(c.mode, ta, tw, box_bytes, a, c.ctas, smem)
                              : launch_as<64, false>(c.mode, ta, tw, box_bytes, a, c.ctas, smem);
            else if (c.mc == 2)
                placed = c.mode ? launch<128, 1, true, true>(ta, tw, box_bytes, a, c.ctas, smem)
                                : launch<128, 0, true, true>(ta, tw, box_bytes, a, c.ctas, smem);
            else
                placed = launch_as<128, false>(c.mode, ta, tw, box_bytes, a, c.ctas, smem);
            if (!placed) break;
            CK(cudaDeviceSynchronize());
            if (rep == 0) continue; /* the warm-up: operands into L2 */
            std::vector<unsigned long long> h(3 * (size_t)c.ctas);
            CK(cudaMemcpy(h.data(), t, sizeof(unsigned long long) * h.size(),
                          cudaMemcpyDeviceToHost));
            std::vector<double> f, d;
            for (int i = 0; i < c.ctas; i++) {
                f.push_back((double)(h[3 * i + 1] - h[3 * i]) * 1e-3);
                d.push_back((double)(h[3 * i + 2] - h[3 * i]) * 1e-3);
            }
            first.push_back(median(f));
            med.push_back(median(d));
            mx.push_back(*std::max_element(d.begin(), d.end()));
        }
        if (!placed) {
            printf("%-52s no cluster of %d such CTAs can be placed: not measured\n", c.what,
                   c.group);
            fails++;
            continue;
        }
        const double per_cta =
            (double)c.kb_n * (box_bytes + (c.w_load ? c.wn * ROW_BYTES : 0)) / 1024.0;
        const double f = median(first), dm = median(med);
        printf("%-52s %6d %8.0f %8.2f %9.2f %9.2f %9.2f %9.0f\n", c.what, c.stages, per_cta,
               per_cta * c.ctas / 1024.0, f, dm, median(mx),
               c.kb_n > 1 ? (dm - f) * 1e3 / (c.kb_n - 1) : 0.0);
    }
    printf(
        "(first: the first stage landed; done: the products (or the feed) ended; us from the "
        "CTA's start. Chain alone, bench/cuda_chain_latency.cu: ~12.6 ns a k16 step at "
        "m64n32, ~50 ns a stage)\n");
    CK(cudaFree(a_buf));
    CK(cudaFree(w_buf));
    CK(cudaFree(t));
    return fails ? 1 : 0;
}
