/* ring_gemm.cuh's persistent main loop with the tile's W slice resident in
 * shared memory: each CTA takes a contiguous run of tiles ordered column by
 * column (all row tiles of W slice 0, then of slice 1, ...), loads a slice's
 * WN rows over the whole of k once (at most KBMAX 64-wide k blocks: 128 KB
 * for the fused gate_up's 128 rows at hidden 512) and streams only A's rows
 * through the ring. A run of ~30 tiles crosses a slice boundary once or
 * twice, so W's L2 reads fall from one slice per tile to one or two per CTA.
 *
 * Why: ring_gemm.cuh's 128 x 64 gate_up tiles (128 W rows) read 32 KB per
 * 64-k stage from L2 for 2.1 MFLOP, 64 bytes a cycle per SM at the tensor
 * peak; they run at ~57% of it where cuBLASLt's 256 x 128 tiles (48 bytes a
 * cycle by that count) reach ~80%, and session 27's 128 x 128 act tiles
 * (48 bytes) ran their main loop alone at 786 TFLOP/s. Here a stage is A
 * alone: 16 KB per 2.1 MFLOP, 32 bytes a cycle at the peak, and the two
 * consumer warpgroups still take turns ("ping-pong"), so one's epilogue
 * runs beside the other's products.
 *
 * Bits: the same as ring_gemm.cuh's (each output one F32 chain of BF16 k16
 * tensor-core steps in ascending k from +0): only where the operands come
 * from differs.
 *
 * Synchronisation beyond ring_gemm.cuh's: wfull completes phase g when W
 * generation g (the run's g-th slice) has landed; a consumer waits for it
 * after its turn (order[]) comes, when the tile before (the other
 * warpgroup's) has issued all its products, so that wfull is never two
 * generations behind the wait. wempty completes phase g when every product
 * reading generation g is done: each warpgroup's four warps arrive after
 * their last tile of g, and g's last tile in the run also for each
 * warpgroup that has none of g (wres_plan.h's wres_arrivals), 4 WGS
 * arrivals; the producer waits for it before it loads generation g + 1
 * over it.
 *
 * WGS (session 39): 2 (MSUB 2: 128-row tiles) or 3 (MSUB 1: 64-row tiles,
 * 8 KB stages, a ring of ten; HRMT_CUDA_GLU_WRES3, on by default). ncu
 * (H200, batch 256) saw the tensor pipe 59% busy in both, 128.4 / 125.7 us
 * a call; on an H100 the three's warps waited ~30% of samples for their
 * turn, 2% for a stage to land: the third warpgroup pays at batches 8 / 64 (the step
 * 0.90-0.96 / 0.96-0.98 of the two's), where 64-row tiles give the SMs
 * more tiles, not by a faster tile (session 40, H100: at batch 8's 656 rows
 * the tuner took this shape at 9.57 us where the two's lost, 11.10, to
 * shape 1's 10.96). Two product groups in flight (HRMT_CUDA_GLU_WRES_DEEP,
 * sessions 40-44) were slower on an H100. Nor does sharing A over a cluster
 * pay: read once per cluster by multicast (497 / 328 against 714 MB a call
 * at batch 256) it ran in the same time or longer, so the L2's bytes do
 * not bound this kernel. */
/* HRMT_WRES_PHASES (a development aid, a build of its own:
 * -DCMAKE_CUDA_FLAGS=-DHRMT_WRES_PHASES): each consumer warpgroup counts
 * the cycles (clock64) it spends waiting for its turn, for W, for stages,
 * issuing its products, waiting for them and in its epilogue, and the
 * producer those it waits for free stages; CTAs 0, 33, 66 and 99 print
 * their counts by printf at the end (lines "wres_phases ...").
 * docs/CUDA-KERNELS.md (session 40) has what it found. */
#ifndef HRMT_CUDA_SM90A_RING_WRES_CUH
#define HRMT_CUDA_SM90A_RING_WRES_CUH

#include <type_traits>

#include "cuda/pdl.cuh"
#include "cuda/sm90a/cluster_async.cuh" /* fence_async_smem */
#include "cuda/sm90a/ring_gemm.cuh"
#include "cuda/sm90a/wgmma_common.cuh"
#include "cuda/sm90a/wres_plan.h"

namespace {

constexpr int WRES_SMEM_MAX = 227 * 1024; /* opt-in shared memory per block on sm_90 */

template <int MSUB, int WN, int KBMAX, int EPI = 0, int WGS_ = 2>
struct wres_cfg {
    static constexpr int WGS = WGS_;
    static constexpr int BM = 64 * MSUB;
    static constexpr int THREADS = 128 * (WGS + 1);
    static constexpr int A_BYTES = BM * ROW_BYTES;
    static constexpr int W_BYTES = WN * ROW_BYTES; /* one k block of the slice */
    static constexpr int W_RES = KBMAX * W_BYTES;
    static constexpr int BAR_SLACK = 256;
    static constexpr int STAGES = (WRES_SMEM_MAX - W_RES - EPI - 1024 - BAR_SLACK) / A_BYTES;
    static constexpr int BAR_BYTES = ((2 * STAGES + WGS + 2) * 8 + 15) / 16 * 16;
    static constexpr int SMEM = W_RES + STAGES * A_BYTES + 1024 + BAR_BYTES + EPI;
    static_assert(STAGES >= 2, "a ring of two stages at least");
    static_assert(BAR_BYTES <= BAR_SLACK, "barriers within their slack");
    static_assert(SMEM <= WRES_SMEM_MAX, "within the opt-in limit");
};
template <int MSUB, int WN, int KBMAX, class E, int WGS = 2>
using wres_cfg_for = wres_cfg<MSUB, WN, KBMAX, epi_smem<E>::value, WGS>;

/* Whether policy E stages its tiles for a TMA store (E::TMA_STORE,
 * E::tile_buf, E::stage: glu_wgmma.cu's glu_epi_ts) instead of storing
 * them itself; the store's map is then the kernel's last parameter. */
template <class E, class = void>
struct tma_store_of {
    static constexpr bool value = false;
};
template <class E>
struct tma_store_of<E, decltype((void)E::TMA_STORE)> {
    static constexpr bool value = E::TMA_STORE;
};

/* The type of ring_wres_kernel's last parameter: the output's tensor map
 * for a TMA-storing policy, an empty struct for the others (last and
 * unread, so that their kernels' code stays as it was without it). */
struct no_map {};
template <class E>
struct wres_out {
    using map = std::conditional_t<tma_store_of<E>::value, CUtensorMap, no_map>;
};

__device__ __forceinline__ void mbar_arrive_n(uint64_t *b, unsigned n) {
#ifdef HRMT_SM90A
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)), "r"(n)
                 : "memory");
#endif
}

/* E as in ring_gemm.cuh (TILE_N, args starting with ring_dims, load_w,
 * store, optional EPI_SMEM / epi_load). p.d.kblocks <= KBMAX (the host
 * checks). Grid: at most one CTA per tile; CTA b takes tiles
 * [b T / G, (b + 1) T / G) of the T = column tiles x row tiles, tile j
 * being row tile j % mt of column tile j / mt. */
template <int MSUB, int WN, int KBMAX, class E, int WGS = 2>
__global__ void __launch_bounds__(wres_cfg_for<MSUB, WN, KBMAX, E, WGS>::THREADS, 1)
    ring_wres_kernel(const __grid_constant__ CUtensorMap tm_a,
                     const __grid_constant__ CUtensorMap tm_w, const typename E::args p,
                     const __grid_constant__ typename wres_out<E>::map tm_o) {
#ifdef HRMT_SM90A
    using C = wres_cfg_for<MSUB, WN, KBMAX, E, WGS>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    /* Rounded as an integer, so that the compiler treats the epilogue's
     * shared-memory accesses as generic, unlike the other sm90a kernels
     * (smem_align1024): with them shared, ncu put this kernel at 111.1 us
     * a call at batch 256 against 108.5 (H100, session 55; the step 1.013x
     * against 0.994x with this kernel left as it was). */
    uint8_t *smem = (uint8_t *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *wres = smem, *ring = smem + C::W_RES;
    uint64_t *full = (uint64_t *)(ring + S * C::A_BYTES), *empty = full + S, *order = empty + S;
    uint64_t *wfull = order + WGS, *wempty = wfull + 1;
    uint8_t *epi = ring + S * C::A_BYTES + C::BAR_BYTES;
    const int wg = warpgroup_idx(), mt = (p.d.M + C::BM - 1) / C::BM;
    int lo = 0, hi = 0;
    wres_range((long long)mt * p.d.nt, blockIdx.x, gridDim.x, &lo, &hi);
    const int kb_n = p.d.kblocks, col0 = lo / mt;
    auto slice_n0 = [&](int col) { return col * E::TILE_N; };
    if (threadIdx.x == 0) {
        /* One arrive per warp of the consuming warpgroup. */
        ring_init(full, empty, S, 4);
        for (int w = 0; w < WGS; w++) mbar_init(&order[w], 1);
        mbar_init(wfull, 1);
        mbar_init(wempty, 4 * WGS);
        mbar_arrive(&order[0]); /* tile 0's turn */
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x != 0) return;
        /* The first slice of W does not depend on the kernel before
         * (programmatic dependent launch): requested before waiting for it. */
        auto load_slice = [&](int col) {
            mbar_expect_tx(wfull, (unsigned)(kb_n * C::W_BYTES));
            for (int kb = 0; kb < kb_n; kb++)
                E::load_w(wres + kb * C::W_BYTES, &tm_w, wfull, kb, slice_n0(col), p);
        };
        if (lo < hi) load_slice(col0);
        pdl_wait();
        pdl_trigger();
        int s = 0, col = col0;
        unsigned ph = 0, gen = 0;
#ifdef HRMT_WRES_PHASES
        long long p_t0 = clock64(), p_wempty = 0, p_empty = 0, p_w;
#define WRES_PT(acc, stmt) (p_w = clock64(), stmt, acc += clock64() - p_w)
#else
#define WRES_PT(acc, stmt) stmt
#endif
        for (int j = lo; j < hi; j++) {
            const int c = j / mt, m0 = (j % mt) * C::BM;
            if (c != col) { /* a new slice over the old one once its products are done */
                WRES_PT(p_wempty, mbar_wait(wempty, gen & 1));
                gen++;
                col = c;
                load_slice(col);
            }
            for (int kb = 0; kb < kb_n; kb++) {
                WRES_PT(p_empty, mbar_wait(&empty[s], ph ^ 1));
                mbar_expect_tx(&full[s], C::A_BYTES);
                tma_load(ring + s * C::A_BYTES, &tm_a, &full[s], kb * BK, m0);
                ring_next(s, ph, S);
            }
        }
#undef WRES_PT
#ifdef HRMT_WRES_PHASES
        if (blockIdx.x % 33 == 0)
            printf("wres_phases cta %d producer tiles %d total %lld empty %lld wempty %lld\n",
                   (int)blockIdx.x, hi - lo, clock64() - p_t0, p_empty, p_wempty);
#endif
        return;
    }
    consumers_begin<WGS, E>(epi, p);
    const int cw = wg - 1, warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
    unsigned turn = 0;
    int have = -1; /* the W generation this warpgroup last waited for */
#ifdef HRMT_WRES_PHASES
    long long c_t0 = clock64(), c_turn = 0, c_wfull = 0, c_issue = 0, c_full = 0, c_done = 0,
              c_store = 0, c_w;
    int c_tiles = 0;
#define WRES_CT(acc, stmt) (c_w = clock64(), stmt, acc += clock64() - c_w)
#else
#define WRES_CT(acc, stmt) stmt
#endif
    for (int li = cw; lo + li < hi; li += WGS) {
        const int j = lo + li, c = j / mt, g = c - col0;
        const int m0 = (j % mt) * C::BM, n0 = slice_n0(c);
        const unsigned base = (unsigned)li * (unsigned)kb_n; /* ring uses before this tile */
        int s = (int)(base % S);
        unsigned ph = (base / S) & 1;
        float acc[MSUB][WN / 2];
        tile_zero<MSUB, WN>(acc);
        WRES_CT(c_turn, mbar_wait(&order[cw], turn));
        turn ^= 1;
        if (g != have) { /* after the turn: wfull is at most one generation behind */
            WRES_CT(c_wfull, mbar_wait(wfull, (unsigned)g & 1));
            have = g;
        }
        auto a_of = [&](int st) { return ring + st * C::A_BYTES; };
        auto w_of = [&](int, int kb) { return wres + kb * C::W_BYTES; };
        long long *full_cy = nullptr;
#ifdef HRMT_WRES_PHASES
        full_cy = &c_full;
        c_w = clock64();
#endif
        const int prev =
            tile_products<MSUB, WN>(acc, full, empty, S, kb_n, s, ph, lane, a_of, w_of, full_cy);
#ifdef HRMT_WRES_PHASES
        c_issue += clock64() - c_w;
#endif
        /* Every ring use of this tile has been issued: the next tile's turn. */
        if (threadIdx.x % 128 == 0) mbar_arrive(&order[(cw + 1) % WGS]);
        WRES_CT(c_done, (tile_done<MSUB, WN>(acc, empty, prev, lane)));
        /* This warpgroup's last tile of generation g: its products of g are
         * done. g's last tile in the run also arrives for each warpgroup
         * with no tile of g (wres_arrivals). */
        const unsigned na = wres_arrivals(j, lo, hi, mt, WGS);
        if (na > 0 && lane == 0) mbar_arrive_n(wempty, na);
        if constexpr (tma_store_of<E>::value) {
            /* The tile staged in this warpgroup's buffer (once the copy
             * engine has read the last one out), then one TMA store of it
             * at (n0, m0) by the warpgroup's first thread (tm_o: act).
             * Named barrier 4 + cw: consumers_begin takes 1. */
            static_assert(MSUB == 1, "a 64-row tile a warpgroup");
            static_assert(WGS <= E::TILE_BUFS, "a staging buffer per consumer warpgroup");
            uint8_t *buf = E::tile_buf(epi, cw);
            if (threadIdx.x % 128 == 0) bulk_wait_read<0>();
            asm volatile("bar.sync %0, 128;" ::"r"(4 + cw) : "memory");
            WRES_CT(c_store, (E::template stage<MSUB>(acc, m0, warp, lane, p, epi, buf)));
            fence_async_smem();
            asm volatile("bar.sync %0, 128;" ::"r"(4 + cw) : "memory");
            if (threadIdx.x % 128 == 0) {
                tma_store(&tm_o, buf, n0, m0);
                bulk_commit();
            }
        } else {
            WRES_CT(c_store, (tile_store<MSUB, WN, E>(acc, m0, n0, warp, lane, p, epi)));
        }
#ifdef HRMT_WRES_PHASES
        c_tiles++;
#endif
    }
#undef WRES_CT
    /* Every TMA store complete before the CTA leaves (its shared memory
     * read, its writes in global memory for the kernel after). */
    if constexpr (tma_store_of<E>::value)
        if (threadIdx.x % 128 == 0) bulk_wait<0>();
#ifdef HRMT_WRES_PHASES
    if (blockIdx.x % 33 == 0 && threadIdx.x % 128 == 0)
        printf(
            "wres_phases cta %d wg %d tiles %d total %lld turn %lld wfull %lld issue %lld "
            "full %lld done %lld store %lld\n",
            (int)blockIdx.x, cw, c_tiles, clock64() - c_t0, c_turn, c_wfull, c_issue, c_full,
            c_done, c_store);
#endif
#endif
}

/* Host side: the image check and shared-memory opt-in. */
template <int MSUB, int WN, int KBMAX, class E, int WGS = 2>
int wres_loads(size_t per_block) {
    return image_loads(ring_wres_kernel<MSUB, WN, KBMAX, E, WGS>,
                       wres_cfg_for<MSUB, WN, KBMAX, E, WGS>::SMEM, per_block);
}
template <int MSUB, int WN, int KBMAX, class E, int WGS = 2>
cudaError_t wres_prepare() {
    return smem_opt_in(ring_wres_kernel<MSUB, WN, KBMAX, E, WGS>,
                       wres_cfg_for<MSUB, WN, KBMAX, E, WGS>::SMEM);
}

} // namespace

#endif
