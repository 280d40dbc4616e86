/* GEMM driver, BLIS style: C[M,N] (+)= A[M,K] * W[N,K]^T.
 *
 * W is packed once (core/gemm_pack.c) into K blocks of NR-column panels. A
 * call cuts C into units of m_chunk x n_chunk (multiples of MR x NR) that the
 * OpenMP threads take dynamically. The loops, outside in:
 *
 *   NC  units along N: the unit's W columns (K x n_chunk) stay in L3 while
 *       the M units go by;
 *   MC  units along M: the unit's rows of A are packed once, all K blocks,
 *       into MR slivers; the block (m_chunk x K) is sized to the plan's
 *       L2 budget for A (MC x KC elements of F32);
 *   NR  one W column panel;
 *   KC  one K block: the kc x NR panel sliver sits in L1 (the plan's KC)
 *       while every A sliver of the unit passes through it;
 *   MR  one micro-kernel call on an MR x NR tile.
 *
 * KC sits inside NR so that the partial sums between K blocks (an m_chunk x
 * NR strip of F32) stay in L1/L2 and C is written exactly once, finished:
 * with K blocks outermost (textbook BLIS) every block would re-read and
 * re-write C from L3, which on Zen 4 costs more than the L1 reuse saves,
 * and a BF16 C could not hold the partial sums at all.
 *
 * Every tile, edges included, runs the same micro-kernel on zero-padded
 * slivers and panels and stores only its valid part, so each element's chain
 * is the same wherever it sits, whatever the units or thread count. */
#include "core/gemm.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "core/bf16.h"
#include "core/checked.h"
#include "core/context.h"
#include "core/gemm_trace.h"
#include "core/ops_util.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/cuda_backend.h"
#endif

typedef struct gemm_plan {
    size_t M, N, K;
    const void *A;
    hrmt_dtype a_dt;
    size_t lda;
    const hrmt_packed_w *W;
    void *C;
    hrmt_dtype c_dt;
    size_t ldc;
    int accumulate;
    const hrmt_gemm_kernels *kernels;
    const hrmt_gemm_ukernel *uk;
    int widen_w;                                    /* BF16X2 panels run through the F32 kernel */
    size_t a_esz, c_esz;                            /* packed A element bytes, C element bytes */
    size_t m_chunk, n_chunk;                        /* unit size (multiples of MR, NR) */
    size_t mt, nt;                                  /* units along M and N */
    size_t a_bytes, b_bytes, p_bytes, thread_bytes; /* per-thread scratch pieces */
    int shared_a;        /* 1: each M unit's A packed once, before the units, for all */
    size_t shared_bytes; /* the shared packed A (mt blocks of a_bytes) ahead of the threads' */
    int threads;         /* threads with units (and scratch) */
    int team;            /* the OpenMP team: the caller's count (see run_units) */
} gemm_plan;

/* Threading granularity (see pick_grid). */
#define UNITS_PER_THREAD 4
#define MIN_SLIVERS 8
#define MIN_PANELS 8
#define SERIAL_MACS (2.0 * 1024 * 1024)
/* Above that, at least this much work per thread (~10 us on one AMX core):
 * on the 16-core GPU host, o_proj at batch 1 (82x512x512, 21M MACs) took
 * 330-460 us a call on 16 threads in the step against 37-49 us on 2 or 8
 * (bench/threads.sh, hrmt bench --profile). It gets 5 threads now (not yet
 * measured there). No effect on 2 threads (the cap is never below 2). */
#define MIN_THREAD_MACS (4.0 * 1024 * 1024)
/* A unit's cost beside its slivers x panels products: per sliver and per
 * panel it streams in (see grid_cost). */
#define UNIT_EDGE_COST 0.25

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }
static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Whether the team packs A once for all units (run_units): N is split in
 * three or more (each row block would be packed once per N unit; at two the
 * saving did not pay for the barrier at 2 threads) and each thread's share
 * of the packed A fits its L2 budget for A (otherwise the shared copy goes
 * out to L3 or memory and back, where a unit's own packing stays in L2). */
static int share_a(size_t mt, size_t nt, size_t a_bytes, int threads, size_t a_budget) {
    return threads > 1 && nt > 2 &&
           (double)mt * (double)a_bytes <= (double)threads * (double)a_budget;
}

/* Estimated time of an mt x nt grid (after rounding) on `th` threads: units
 * go to threads dynamically, so about ceil(units / th) rounds of the largest
 * unit. */
static double grid_cost(size_t M, size_t N, size_t mr, size_t nr, size_t th, size_t mt, size_t nt,
                        size_t *gm, size_t *gn) {
    const size_t mc = round_up(ceil_div(M, mt), mr), nc = round_up(ceil_div(N, nt), nr);
    *gm = ceil_div(M, mc);
    *gn = ceil_div(N, nc);
    const size_t su = mc / mr, pu = nc / nr; /* exact: chunks are multiples */
    const double s = (double)su, p = (double)pu;
    return (double)ceil_div(*gm * *gn, th) * (s * p + UNIT_EDGE_COST * (s + p));
}

/* The unit grid for `threads` threads from at least mt x nt units (the cache
 * budgets). Several units per thread, handed out dynamically, so a thread
 * that the OS preempts delays the call by one unit at most. Cut along M
 * first (the unit's W columns are then re-read from L3, cheap), down to
 * MIN_SLIVERS slivers a unit; then along N, down to MIN_PANELS panels, to
 * two units a thread; tiny problems: one unit a thread where possible.
 * That count can leave the last round of units half empty (16 threads: 24
 * units of gate_up at M = 656, 42 of every layer at M = 5248): then a finer
 * grid (units down to half those sizes) whose rounds come out fuller is taken
 * when grid_cost says it is 5% faster. No grid changes a bit: the K order
 * does not depend on it. */
static void pick_grid(size_t M, size_t N, size_t mr, size_t nr, int threads, size_t *mt,
                      size_t *nt) {
    const size_t slivers = ceil_div(M, mr), panels = ceil_div(N, nr), th = (size_t)threads;
    size_t i = *mt, j = *nt;
    while (i * j < UNITS_PER_THREAD * th && ceil_div(slivers, i + 1) >= MIN_SLIVERS) i++;
    while (i * j < 2 * th && ceil_div(panels, j + 1) >= MIN_PANELS) j++;
    while (i * j < th && j < panels) j++;
    while (i * j < th && i < slivers) i++;
    size_t gm, gn;
    const double base = grid_cost(M, N, mr, nr, th, i, j, &gm, &gn);
    *mt = gm;
    *nt = gn;
    size_t i_hi = ceil_div(slivers, MIN_SLIVERS / 2), j_hi = ceil_div(panels, MIN_PANELS / 2);
    if (j_hi < (panels < th ? panels : th)) j_hi = panels < th ? panels : th;
    double best = 0.95 * base;
    for (size_t a = i; a <= i_hi; a++)
        for (size_t b = j; b <= j_hi; b++) {
            const double c = grid_cost(M, N, mr, nr, th, a, b, &gm, &gn);
            if (c < best) {
                best = c;
                *mt = gm;
                *nt = gn;
            }
        }
}

/* The shared packed A's per-row-block counters of packed slivers (after
 * the mt blocks; see run_units). mt is at most M / MR, far from overflow. */
static size_t ready_bytes(size_t mt) { return round_up(mt * sizeof(atomic_size_t), 64); }

/* Chooses kernel, unit grid and scratch sizes. Pure arithmetic on validated
 * sizes; HRMT_ERR_OVERFLOW when the scratch would not fit size_t. */
static hrmt_status plan_call(const hrmt_context *ctx, int threads, gemm_plan *g) {
    const hrmt_gemm_kernels *t = &ctx->be->gemm;
    const hrmt_packed_w *W = g->W;
    g->kernels = t;
    g->widen_w = 0;
    if (W->fmt == HRMT_GEMM_PACK_BF16X2 && g->a_dt == HRMT_BF16) {
        g->uk = t->bf16_tile.run ? &t->bf16_tile : &t->bf16;
        g->a_esz = 2;
    } else {
        g->uk = &t->f32;
        g->a_esz = 4;
        g->widen_w = W->fmt == HRMT_GEMM_PACK_BF16X2;
    }
    g->c_esz = g->c_dt == HRMT_F32 ? 4 : 2;
    const size_t mr = g->uk->mr, nr = g->uk->nr;

    /* The plan sizes the A block (MC x KC) for L2 and the W panel (KC x NC)
     * for L3 in F32 elements. Here a unit's A block spans all of K and its W
     * columns too, so keep those byte budgets: MC' = MC*KC*4 / (K * a bytes),
     * NC' = NC*KC*4 / (K * w bytes). */
    const hrmt_tile_plan *pl = &ctx->plan;
    size_t a_budget, w_budget, a_row, w_col, kc_bytes;
    if (!hrmt_mul_ok(pl->gemm_kc, 4, &kc_bytes) || !hrmt_mul_ok(pl->gemm_mc, kc_bytes, &a_budget) ||
        !hrmt_mul_ok(pl->gemm_nc, kc_bytes, &w_budget) ||
        !hrmt_mul_ok(W->k_pad, g->a_esz, &a_row) || !hrmt_mul_ok(W->k_pad, W->esz, &w_col))
        return HRMT_ERR_OVERFLOW;
    size_t mc = a_budget / a_row / mr * mr, nc = w_budget / w_col / nr * nr;
    if (mc < mr) mc = mr;
    if (nc < nr) nc = nr;

    size_t mt = ceil_div(g->M, mc), nt = ceil_div(g->N, nc);
    /* Below ~40 us of work, waking other threads costs more than it saves. */
    const double macs = (double)g->M * (double)g->N * (double)g->K;
    g->team = threads;
    if (macs < SERIAL_MACS) {
        threads = 1;
    } else {
        double cap = macs / MIN_THREAD_MACS;
        if (cap < 2.0) cap = 2.0;
        if ((double)threads > cap) threads = (int)cap;
    }
    if (threads > 1) pick_grid(g->M, g->N, mr, nr, threads, &mt, &nt);
    g->m_chunk = round_up(ceil_div(g->M, mt), mr);
    g->n_chunk = round_up(ceil_div(g->N, nt), nr);
    g->mt = ceil_div(g->M, g->m_chunk);
    g->nt = ceil_div(g->N, g->n_chunk);
    size_t units = g->mt * g->nt;
    g->threads = units < (size_t)threads ? (int)units : threads;

    /* Per thread: the unit's packed A (all K), one widened W panel block, and
     * the partial sums of one column strip (m_chunk x NR) between K blocks.
     * When N is split, the units of one row block would each pack the same
     * rows (16 threads at M = 656: 8 copies, by the 1-thread cost of packing
     * about a third of each thread's GEMM time): with share_a the team packs
     * every row block once into shared scratch, then runs the units on it. */
    if (!hrmt_mul_ok(g->m_chunk, a_row, &g->a_bytes)) return HRMT_ERR_OVERFLOW;
    g->a_bytes = round_up(g->a_bytes, 64);
    g->b_bytes = g->widen_w ? round_up(W->kc * nr * 4, 64) : 0;
    g->p_bytes = W->nblk > 1 ? round_up(g->m_chunk * nr * 4, 64) : 0;
    g->shared_a = share_a(g->mt, g->nt, g->a_bytes, g->threads, a_budget);
    g->shared_bytes = 0;
    if (g->shared_a && (!hrmt_mul_ok(g->mt, g->a_bytes, &g->shared_bytes) ||
                        !hrmt_add_ok(g->shared_bytes, ready_bytes(g->mt), &g->shared_bytes)))
        return HRMT_ERR_OVERFLOW;
    if (!hrmt_add_ok(g->shared_a ? 0 : g->a_bytes, g->b_bytes, &g->thread_bytes) ||
        !hrmt_add_ok(g->thread_bytes, g->p_bytes, &g->thread_bytes))
        return HRMT_ERR_OVERFLOW;
    return HRMT_OK;
}

/* All scratch of a plan: shared packed A, then each thread's pieces. */
static int plan_scratch(const gemm_plan *g, size_t *total) {
    return hrmt_mul_ok(g->thread_bytes, (size_t)g->threads, total) &&
           hrmt_add_ok(*total, g->shared_bytes, total);
}

/* BF16 pair panel (kc_p/2 x nr x 2, even k in the low half; see gemm_pack.c)
 * -> F32 k-major panel (kc_p x nr) with each pair swapped, the F32 layout of
 * BF16 W. */
static void widen_panel(const uint16_t *src, size_t kc_p, size_t nr, float *dst) {
    for (size_t kp = 0; kp < kc_p / 2; kp++)
        for (size_t j = 0; j < nr; j++) {
            dst[(2 * kp) * nr + j] = hrmt_bf16_to_f32(src[kp * 2 * nr + 2 * j + 1]);
            dst[(2 * kp + 1) * nr + j] = hrmt_bf16_to_f32(src[kp * 2 * nr + 2 * j]);
        }
}

/* An F32 sliver (kc_p x mr, kc_p even) with each k pair's rows swapped, to
 * meet BF16 W's swapped F32 panels (gemm_pack.c): the F32 kernels then add
 * k = 2p + 1 before 2p, like vdpbf16ps. */
static void swap_pairs(float *s, size_t kc_p, size_t mr) {
    for (size_t k = 0; k + 1 < kc_p; k += 2, s += 2 * mr)
        for (size_t i = 0; i < mr; i++) {
            const float t = s[i];
            s[i] = s[mr + i];
            s[mr + i] = t;
        }
}

/* Prefetches (into L1, for writing) the rows of C a finishing micro-kernel
 * call will store: C comes from L3 or memory and would stall the stores. */
static inline void prefetch_c(const gemm_plan *g, const char *c, size_t m, size_t n) {
    for (size_t r = 0; r < m; r++) {
        const char *row = c + r * g->ldc * g->c_esz;
        for (size_t off = 0; off < n * g->c_esz; off += 64) __builtin_prefetch(row + off, 1, 3);
    }
}

/* Packs slivers [s0, s1) of the row block [m0, m1) of A, every K block, into
 * `abuf`: block p at p*kc*m_pad elements, its sliver s at s*MR*kc_p within. A
 * sliver's rows are read along all of K in one go (longer streams for the
 * prefetchers). */
static void pack_slivers(const gemm_plan *g, size_t m0, size_t m1, size_t s0, size_t s1,
                         char *abuf) {
    const hrmt_gemm_ukernel *uk = g->uk;
    const hrmt_packed_w *W = g->W;
    const size_t mr = uk->mr, a_esz = g->a_esz, m_pad = ceil_div(m1 - m0, mr) * mr;
    /* The pair kernel's A pairs stay in memory order like the BF16X2 panels;
     * F32 slivers for BF16 W get their pairs swapped like its panels. */
    const hrmt_gemm_pack_a_fn pack = uk->pack_a;
    const int swap_a = uk->k_unit == 1 && W->src_dtype == HRMT_BF16;
    for (size_t s = s0; s < s1; s++) {
        const size_t i = m0 + s * mr, m = m1 - i < mr ? m1 - i : mr;
        for (size_t p = 0; p < W->nblk; p++) {
            size_t kc_p;
            (void)hrmt_gemm_packed_panel(W, p, 0, &kc_p);
            const size_t k0 = p * W->kc;
            const size_t kv = g->K - k0 < kc_p ? g->K - k0 : kc_p; /* valid k */
            char *dst = abuf + (k0 * m_pad + s * mr * kc_p) * a_esz;
            const char *src = (const char *)g->A + (i * g->lda + k0) * hrmt_dtype_size(g->a_dt);
            pack(m, kv, src, g->a_dt, g->lda, dst);
            if (uk->k_unit == 1 && kc_p > kv) /* F32 kernel on padded BF16 pairs */
                memset(dst + kv * mr * a_esz, 0, (kc_p - kv) * mr * a_esz);
            if (swap_a) swap_pairs((float *)(void *)dst, kc_p, mr);
        }
    }
}

/* One unit of C: rows [m0, m1), columns [n0, n1). `abuf`: the rows' packed A
 * (shared), or NULL: pack them into this thread's `scratch`. */
static void run_unit(const gemm_plan *g, size_t m0, size_t m1, size_t n0, size_t n1,
                     const char *abuf, char *scratch) {
    const hrmt_gemm_ukernel *uk = g->uk;
    const hrmt_packed_w *W = g->W;
    const size_t mr = uk->mr, nr = uk->nr, a_esz = g->a_esz;
    const size_t slivers = ceil_div(m1 - m0, mr), m_pad = slivers * mr;
    const size_t own_a = g->shared_a ? 0 : g->a_bytes;
    float *bbuf = (float *)(scratch + own_a);
    float *pbuf = (float *)(scratch + own_a + g->b_bytes);
    if (!abuf) {
        pack_slivers(g, m0, m1, 0, slivers, scratch);
        abuf = scratch;
    }

    hrmt_gemm_ukr_out o;
    memset(&o, 0, sizeof o);
    o.c_dt = g->c_dt;
    o.ldc = g->ldc;
    o.accumulate = g->accumulate;
    o.ld_partial = nr;
    /* W streams from L3 or memory (each unit passes over all of its columns),
     * and the first sliver of a panel would wait on every line of it: each
     * micro-kernel call prefetches its share of the next panel into L2 (+5%
     * at M = 82 when W is not in L2). */
    const size_t panel_bytes = W->k_pad * nr * W->esz, calls = W->nblk * slivers;
    const size_t pf_share = calls ? round_up(ceil_div(panel_bytes, calls), 64) : 0;
    const int tiles = uk == &g->kernels->bf16_tile;
    hrmt_gemm_deferred deferred;
    if (tiles) {
        deferred.next = 2;
        o.deferred = &deferred;
        g->kernels->tile_begin();
    }
    for (size_t j = n0; j < n1; j += nr) {
        o.n = n1 - j < nr ? n1 - j : nr;
        const char *next = j + nr < n1 ? (const char *)W->data + (j / nr + 1) * panel_bytes : NULL;
        for (size_t p = 0; p < W->nblk; p++) {
            size_t kc_p;
            const void *b = hrmt_gemm_packed_panel(W, p, j / nr, &kc_p);
            if (g->widen_w) {
                widen_panel(b, kc_p, nr, bbuf);
                b = bbuf;
            }
            const char *ablk = abuf + p * W->kc * m_pad * a_esz;
            o.load = p > 0;
            o.final = p + 1 == W->nblk;
            for (size_t s = 0; s < slivers; s++) {
                const size_t i = m0 + s * mr;
                o.m = m1 - i < mr ? m1 - i : mr;
                o.c = (char *)g->C + (i * g->ldc + j) * g->c_esz;
                o.partial = pbuf + s * mr * nr;
                if (o.final && s + 1 < slivers && !tiles) {
                    size_t mn = m1 - i - mr < mr ? m1 - i - mr : mr;
                    prefetch_c(g, (const char *)o.c + mr * g->ldc * g->c_esz, mn, o.n);
                }
                const size_t pf_off = (p * slivers + s) * pf_share;
                o.pf = next && pf_off < panel_bytes ? next + pf_off : NULL;
                o.pf_bytes =
                    o.pf ? (panel_bytes - pf_off < pf_share ? panel_bytes - pf_off : pf_share) : 0;
                uk->run(kc_p, ablk + s * mr * kc_p * a_esz, b, &o);
            }
        }
    }
    if (tiles) g->kernels->tile_end(&deferred);
}

/* Waits until `n` slivers of a row block are packed: at most one sliver's
 * packing (a few us) by a thread that took it before this one asked. Spins,
 * then yields the core: with more threads than cores the packer may be the
 * one waiting for it. */
static void wait_packed(atomic_size_t *ready, size_t n) {
    for (unsigned spins = 0; atomic_load_explicit(ready, memory_order_acquire) < n; spins++) {
        if (spins >= 4096) {
            thrd_yield();
            continue;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ volatile("yield");
#endif
    }
}

/* tr: HRMT_GEMM_TRACE's accumulator (NULL: untimed). */
static void run_units(const gemm_plan *g, char *scratch, hrmt_gemm_trace *tr) {
    const size_t units = g->mt * g->nt;
    if (g->threads <= 1) {
        for (size_t u = 0; u < units; u++) {
            size_t um = u / g->nt, un = u % g->nt;
            size_t m0 = um * g->m_chunk, n0 = un * g->n_chunk;
            size_t m1 = m0 + g->m_chunk < g->M ? m0 + g->m_chunk : g->M;
            size_t n1 = n0 + g->n_chunk < g->N ? n0 + g->n_chunk : g->N;
            run_unit(g, m0, m1, n0, n1, NULL, scratch);
        }
        return;
    }
    char *shared = g->shared_a ? scratch : NULL;
    const size_t per_block = g->m_chunk / g->uk->mr, slivers = g->mt * per_block;
    atomic_size_t *ready = shared ? (atomic_size_t *)(void *)(shared + g->mt * g->a_bytes) : NULL;
    for (size_t b = 0; ready && b < g->mt; b++) atomic_init(&ready[b], 0);
    atomic_size_t next_sliver = 0;
    /* The team is always the caller's thread count, whatever this call can
     * use: when a region asks for fewer threads than the last one, libgomp
     * lets the pool's surplus threads exit (team.c: "The extra threads should
     * be exiting") and a later, larger region creates new ones
     * (pthread_create, then each new thread's first tile instruction makes
     * the kernel enlarge its saved state). Calls alternating between team
     * sizes (a batch-1 step: 16 for the large GEMMs, 2 to 5 for small ones
     * and the row ops) paid that every time: on the 16-core host the batch-1
     * step took 13x its 2-thread time. Threads past g->threads take no unit
     * (they have no scratch) and only wait at the region's end. */
    atomic_size_t next = 0;
    hrmt_gemm_trace_thread *tt = tr ? calloc((size_t)g->threads, sizeof *tt) : NULL;
    const uint64_t t0 = tt ? hrmt_gemm_trace_now_ns() : 0;
#pragma omp parallel num_threads(g->team)
    {
        const int me = omp_get_thread_num();
        char *mine =
            me < g->threads ? scratch + g->shared_bytes + (size_t)me * g->thread_bytes : NULL;
        hrmt_gemm_trace_thread *my = tt && me < g->threads ? &tt[me] : NULL;
        if (my) my->in = hrmt_gemm_trace_now_ns();
        /* Every thread of the team, with units or not, takes slivers to pack
         * until none is left, then units; a unit waits only until its own row
         * block is packed. No barrier: a thread the OS wakes late (or
         * preempts) finds the slivers taken instead of holding everyone up.
         * On the 16-core AMX host the batch-8 step took 32.9-36.7 ms against
         * 37.7-41.8 with the static split and its barrier (docs/AMX.md). */
        for (size_t q = shared ? atomic_fetch_add(&next_sliver, 1) : slivers; q < slivers;
             q = atomic_fetch_add(&next_sliver, 1)) {
            const size_t um = q / per_block, s = q % per_block, m0 = um * g->m_chunk;
            const size_t m1 = m0 + g->m_chunk < g->M ? m0 + g->m_chunk : g->M;
            if (m0 + s * g->uk->mr < m1)
                pack_slivers(g, m0, m1, s, s + 1, shared + um * g->a_bytes);
            atomic_fetch_add_explicit(&ready[um], 1, memory_order_release);
        }
        if (my) my->packed = my->out = hrmt_gemm_trace_now_ns();
        for (size_t u = me < g->threads ? atomic_fetch_add(&next, 1) : units; u < units;
             u = atomic_fetch_add(&next, 1)) {
            size_t um = u / g->nt, un = u % g->nt;
            size_t m0 = um * g->m_chunk, n0 = un * g->n_chunk;
            size_t m1 = m0 + g->m_chunk < g->M ? m0 + g->m_chunk : g->M;
            size_t n1 = n0 + g->n_chunk < g->N ? n0 + g->n_chunk : g->N;
            uint64_t u0 = my ? hrmt_gemm_trace_now_ns() : 0;
            if (shared) {
                wait_packed(&ready[um], per_block);
                if (my) {
                    const uint64_t w = hrmt_gemm_trace_now_ns();
                    my->waited += w - u0;
                    u0 = w;
                }
            }
            run_unit(g, m0, m1, n0, n1, shared ? shared + um * g->a_bytes : NULL, mine);
            if (my) {
                my->out = hrmt_gemm_trace_now_ns();
                my->busy += my->out - u0;
                my->units++;
            }
        }
    }
    if (tt) hrmt_gemm_trace_add(tr, t0, hrmt_gemm_trace_now_ns(), tt, g->threads);
    free(tt);
}

/* Packed W is a CPU micro-kernel layout: a CUDA context has no use for it. */
static hrmt_status packed_on_device(hrmt_context *ctx) {
    return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED,
                     "gemm: packed W is a CPU layout; on a CUDA context call hrmt_gemm with W "
                     "in device memory (cuBLASLt)");
}

static hrmt_status check_raw(hrmt_context *ctx, int threads, size_t M, size_t N, size_t K,
                             const void *A, hrmt_dtype a_dt, size_t lda, const hrmt_packed_w *W,
                             const void *C, hrmt_dtype c_dt, size_t ldc) {
    if (!A || !W || !C)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm: %s is NULL",
                         !A   ? "A"
                         : !W ? "packed W"
                              : "C");
    if (threads < 1)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm: thread count %d < 1", threads);
    if (M == 0 || N == 0 || K == 0)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm: zero dimension (M %zu, N %zu, K %zu)", M,
                         N, K);
    if (a_dt != HRMT_F32 && a_dt != HRMT_BF16)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "gemm: A dtype %s (want F32 or BF16)",
                         hrmt_dtype_name(a_dt));
    if (c_dt != HRMT_F32 && c_dt != HRMT_BF16)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "gemm: C dtype %s (want F32 or BF16)",
                         hrmt_dtype_name(c_dt));
    if (W->n != N || W->k != K)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm: packed W is [%zu, %zu], want [N %zu, K %zu]",
                         W->n, W->k, N, K);
    if (W->isa != ctx->isa)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG,
                         "gemm: W was packed for ISA %s, this context runs %s",
                         hrmt_isa_name(W->isa), hrmt_isa_name(ctx->isa));
    if (lda < K) return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm: lda %zu < K %zu", lda, K);
    if (ldc < N) return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm: ldc %zu < N %zu", ldc, N);
    size_t t;
    if (!hrmt_mul_ok(M, lda, &t) || !hrmt_mul_ok(t, 4, &t) || !hrmt_mul_ok(M, ldc, &t) ||
        !hrmt_mul_ok(t, 4, &t))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "gemm: A or C extent overflows");
    return HRMT_OK;
}

static void fill_plan(gemm_plan *g, size_t M, size_t N, size_t K, const void *A, hrmt_dtype a_dt,
                      size_t lda, const hrmt_packed_w *W, void *C, hrmt_dtype c_dt, size_t ldc,
                      int accumulate) {
    memset(g, 0, sizeof *g);
    g->M = M;
    g->N = N;
    g->K = K;
    g->A = A;
    g->a_dt = a_dt;
    g->lda = lda;
    g->W = W;
    g->C = C;
    g->c_dt = c_dt;
    g->ldc = ldc;
    g->accumulate = accumulate != 0;
}

size_t hrmt_gemm_scratch_bytes(const hrmt_context *ctx, int threads, size_t M, size_t N, size_t K,
                               hrmt_dtype a_dt, const hrmt_packed_w *W, hrmt_dtype c_dt,
                               int accumulate) {
    if (!ctx || ctx->backend_kind != HRMT_BACKEND_CPU || !W || threads < 1 || M == 0 || N == 0 ||
        K == 0 || W->n != N || W->k != K || (a_dt != HRMT_F32 && a_dt != HRMT_BF16) ||
        (c_dt != HRMT_F32 && c_dt != HRMT_BF16))
        return 0;
    gemm_plan g;
    fill_plan(&g, M, N, K, NULL, a_dt, K, W, NULL, c_dt, N, accumulate);
    size_t total;
    if (plan_call(ctx, threads, &g) != HRMT_OK || !plan_scratch(&g, &total)) return 0;
    return total;
}

hrmt_status hrmt_gemm_raw_ex(hrmt_context *ctx, int threads, size_t M, size_t N, size_t K,
                             const void *A, hrmt_dtype a_dt, size_t lda, const hrmt_packed_w *W,
                             void *C, hrmt_dtype c_dt, size_t ldc, int accumulate, void *scratch,
                             size_t scratch_bytes) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    if (ctx->backend_kind != HRMT_BACKEND_CPU) return packed_on_device(ctx);
    hrmt_status s = check_raw(ctx, threads, M, N, K, A, a_dt, lda, W, C, c_dt, ldc);
    if (s != HRMT_OK) return s;
    gemm_plan g;
    fill_plan(&g, M, N, K, A, a_dt, lda, W, C, c_dt, ldc, accumulate);
    if (plan_call(ctx, threads, &g) != HRMT_OK)
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "gemm: scratch size overflows");
    size_t need;
    if (!plan_scratch(&g, &need))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "gemm: scratch size overflows");
    void *own = NULL;
    if (scratch) {
        if (scratch_bytes < need || ((uintptr_t)scratch & 63u) != 0)
            return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG,
                             "gemm: scratch of %zu bytes at %p; need %zu, 64-byte aligned",
                             scratch_bytes, scratch, need);
    } else {
        own = aligned_alloc(64, need);
        if (!own)
            return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "gemm: cannot allocate %zu bytes", need);
        scratch = own;
    }
    run_units(&g, scratch, ctx->gemm_trace);
    free(own);
    return HRMT_OK;
}

hrmt_status hrmt_gemm_raw(hrmt_context *ctx, size_t M, size_t N, size_t K, const void *A,
                          hrmt_dtype a_dt, size_t lda, const hrmt_packed_w *W, void *C,
                          hrmt_dtype c_dt, size_t ldc, int accumulate) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    return hrmt_gemm_raw_ex(ctx, ctx->threads, M, N, K, A, a_dt, lda, W, C, c_dt, ldc, accumulate,
                            NULL, 0);
}

/* Checks one 2-D operand on the context's device; `what` names it in messages. */
static hrmt_status check_tensor(hrmt_context *ctx, const hrmt_tensor *x, const char *what) {
    if (!x) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm: %s is NULL", what);
    if (!x->data) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm: %s has no data", what);
    if (x->device != hrmt_ctx_device(ctx))
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED,
                         "gemm: %s is in %s memory but the context runs on %s", what,
                         x->device == HRMT_DEVICE_HOST ? "host" : "CUDA device",
                         ctx->backend_kind == HRMT_BACKEND_CUDA ? "CUDA" : "the CPU");
    if (x->ndim != 2)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm: %s must be 2-D, has %d dims", what, x->ndim);
    if (x->shape[0] == 0 || x->shape[1] == 0)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm: %s has a zero dimension", what);
    if (x->stride[1] != 1)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm: %s's last dim must be contiguous", what);
    if (x->dtype != HRMT_F32 && x->dtype != HRMT_BF16)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "gemm: %s dtype %s (want F32 or BF16)", what,
                         hrmt_dtype_name(x->dtype));
    if (x->stride[0] < x->shape[1])
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm: %s row stride %zu < row length %zu", what,
                         x->stride[0], x->shape[1]);
    if (ctx->backend_kind == HRMT_BACKEND_CUDA)
        return hrmt_ops_basic(ctx, "gemm", what, x); /* also: is it device memory? */
    return HRMT_OK;
}

hrmt_status hrmt_gemm_packed(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_packed_w *w,
                             hrmt_tensor *c, int accumulate) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    if (ctx->backend_kind != HRMT_BACKEND_CPU) return packed_on_device(ctx);
    hrmt_status s;
    if ((s = check_tensor(ctx, a, "a")) != HRMT_OK || (s = check_tensor(ctx, c, "c")) != HRMT_OK)
        return s;
    if (!w) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm: packed w is NULL");
    if (c->shape[0] != a->shape[0] || c->shape[1] != w->n || a->shape[1] != w->k)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE,
                         "gemm: a [%zu, %zu] * w^T [%zu, %zu]^T does not give c [%zu, %zu]",
                         a->shape[0], a->shape[1], w->n, w->k, c->shape[0], c->shape[1]);
    return hrmt_gemm_raw(ctx, a->shape[0], w->n, w->k, a->data, a->dtype, a->stride[0], w, c->data,
                         c->dtype, c->stride[0], accumulate);
}

/* CUDA: C, A, W in device memory (checked by check_tensor), cuBLASLt. C must
 * not overlap A or W (as on the CPU); the call is asynchronous. */
static hrmt_status gemm_cuda(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_tensor *w,
                             hrmt_tensor *c, int accumulate) {
    const char *op = "hrmt_gemm";
    hrmt_status s = hrmt_ops_check_ctx(ctx, op);
    if (s != HRMT_OK) return s;
#if defined(HRMT_HAVE_CUDA)
    size_t t;
    if (!hrmt_mul_ok(a->shape[0], a->stride[0], &t) || !hrmt_mul_ok(t, 4, &t) ||
        !hrmt_mul_ok(w->shape[0], w->stride[0], &t) || !hrmt_mul_ok(t, 4, &t) ||
        !hrmt_mul_ok(c->shape[0], c->stride[0], &t) || !hrmt_mul_ok(t, 4, &t))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "gemm: A, W or C extent overflows");
    char msg[HRMT_ERRMSG_LEN - 64];
    s = hrmt_cuda_gemm(ctx->cuda, a->shape[0], w->shape[0], a->shape[1], a->data, a->dtype,
                       a->stride[0], w->data, w->dtype, w->stride[0], c->data, c->dtype,
                       c->stride[0], accumulate, msg, sizeof msg);
    if (s != HRMT_OK) return hrmt_fail(ctx, s, "gemm: %s", msg);
    return hrmt_ops_finish(ctx, op);
#else
    (void)a;
    (void)w;
    (void)c;
    (void)accumulate;
    return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED, "gemm: built without CUDA");
#endif
}

hrmt_status hrmt_gemm(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_tensor *w, hrmt_tensor *c,
                      int accumulate) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    hrmt_status s;
    if ((s = check_tensor(ctx, a, "a")) != HRMT_OK || (s = check_tensor(ctx, w, "w")) != HRMT_OK ||
        (s = check_tensor(ctx, c, "c")) != HRMT_OK)
        return s;
    if (a->shape[1] != w->shape[1] || c->shape[0] != a->shape[0] || c->shape[1] != w->shape[0])
        return hrmt_fail(
            ctx, HRMT_ERR_SHAPE, "gemm: a [%zu, %zu] * w^T [%zu, %zu]^T does not give c [%zu, %zu]",
            a->shape[0], a->shape[1], w->shape[0], w->shape[1], c->shape[0], c->shape[1]);
    if (ctx->backend_kind == HRMT_BACKEND_CUDA) return gemm_cuda(ctx, a, w, c, accumulate);
    hrmt_packed_w *pw = NULL;
    s = hrmt_gemm_pack_w(ctx, w, &pw);
    if (s != HRMT_OK) return s;
    s = hrmt_gemm_packed(ctx, a, pw, c, accumulate);
    hrmt_packed_w_destroy(pw);
    return s;
}
