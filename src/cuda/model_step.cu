/* One ACT step on the GPU, both schedules (see model/schedule.c for the CPU):
 *  - baseline: op by op over the whole batch, activations in HBM (the DRAM tier);
 *  - tiered: per H cycle, the samples are cut into tiles sized from the
 *    device's shared memory (model_mem.cu); each tile's z_L is copied into
 *    the tile buffers, its injection zH + x built once, all L_cycles x
 *    L_layers run over the tile's rows (whose working set stays on chip,
 *    shared memory and L2), and z_L is copied back. This is a tile-by-tile
 *    schedule of the same kernels; RoPE is fused into attention and the
 *    injection is built once per tile. With HRMT_CUDA_L_PERSIST=1 the L
 *    level is instead one persistent kernel per H cycle holding each
 *    sample's z_L in shared memory (model_l_persist.cu), same bits. The
 *    tier manager accounts the tile as SRAM (tensors hrm.L_tile0.*,
 *    hits/misses), the copies as transfers (device-timed).
 * With HRMT_CUDA_GRID=1 the baseline's levels are each one grid-wide kernel
 * (model_grid.cu), same bits.
 * Every kernel is row-independent with per-row deterministic bits (the
 * model's own GEMMs, per (sample, head) attention, the row-op table), so the
 * two schedules give the same bytes. Timings come from CUDA events.
 * By default (ctx->cuda_graphs) the device work of a step is captured once
 * per carry as a CUDA graph and replayed: ~230 launches become one (10-12%
 * of a batch-1 or batch-8 step on the H200; the rest is the kernels). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_profiler_api.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_grid.h"
#include "cuda/model_kernels.cuh"
#include "cuda/model_l_persist.h"

extern "C" {
#include "core/bf16.h"
#include "core/tiers.h"
}

#define TRY(expr)                     \
    do {                              \
        hrmt_status s_ = (expr);      \
        if (s_ != HRMT_OK) return s_; \
    } while (0)

/* ---- event timeline ------------------------------------------------------------ */

/* Makes sure event `idx` of the pool exists. */
static hrmt_status ev_reserve(const hrmt_model *m, struct hrmt_carry_cuda *g, int idx) {
    if (idx >= g->evcap) {
        int cap = g->evcap ? g->evcap : 32;
        while (cap <= idx) cap *= 2;
        cudaEvent_t *ev = (cudaEvent_t *)realloc(g->ev, (size_t)cap * sizeof *ev);
        if (!ev) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "cuda step: event pool");
        g->ev = ev;
        for (; g->evcap < cap; g->evcap++) {
            cudaError_t e = cudaEventCreate(&g->ev[g->evcap]);
            if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step: cudaEventCreate");
        }
    }
    return HRMT_OK;
}

/* The timeline's side stream and its fork / join events, once per carry. */
static hrmt_status side_ready(const hrmt_model *m, struct hrmt_carry_cuda *g) {
    cudaError_t e = cudaSuccess;
    if (!g->side) e = cudaStreamCreateWithFlags(&g->side, cudaStreamNonBlocking);
    if (e == cudaSuccess && !g->fork)
        e = cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming);
    if (e == cudaSuccess && !g->join)
        e = cudaEventCreateWithFlags(&g->join, cudaEventDisableTiming);
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "cuda step: timeline stream");
}

/* Records the next event of the pool once everything enqueued so far has
 * run: on the side stream, which waits for the step's stream, so that the
 * step's next kernel still follows the last one by a programmatic edge (an
 * event recorded between them cost 5% of a batch-1 step on the H200,
 * docs/CUDA-KERNELS.md). While a graph is being captured it becomes an event-record
 * node on a branch that every replay records again. */
static hrmt_status ev_rec(const hrmt_model *m, struct hrmt_carry_cuda *g, int *idx) {
    TRY(ev_reserve(m, g, g->nev));
    TRY(side_ready(m, g));
    cudaError_t e = cudaEventRecord(g->fork, cu_stream(m));
    if (e == cudaSuccess) e = cudaStreamWaitEvent(g->side, g->fork, 0);
    if (e == cudaSuccess)
        e = cudaEventRecordWithFlags(
            g->ev[g->nev], g->side,
            g->capturing ? cudaEventRecordExternal : cudaEventRecordDefault);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step: cudaEventRecord");
    *idx = g->nev++;
    return HRMT_OK;
}

/* The side stream back into the step's stream (a capture must end joined). */
static hrmt_status side_join(const hrmt_model *m, struct hrmt_carry_cuda *g) {
    if (!g->side) return HRMT_OK;
    cudaError_t e = cudaEventRecord(g->join, g->side);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(cu_stream(m), g->join, 0);
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "cuda step: timeline join");
}

static hrmt_status seg_add(const hrmt_model *m, struct hrmt_carry_cuda *g, int e0, int e1, int kind,
                           size_t bytes) {
    if (g->nseg == g->segcap) {
        int cap = g->segcap ? 2 * g->segcap : 32;
        cu_seg *s = (cu_seg *)realloc(g->seg, (size_t)cap * sizeof *s);
        if (!s) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "cuda step: timeline");
        g->seg = s;
        g->segcap = cap;
    }
    g->seg[g->nseg++] = cu_seg{e0, e1, kind, bytes};
    return HRMT_OK;
}

static hrmt_status elapsed_us(const hrmt_model *m, struct hrmt_carry_cuda *g, int e0, int e1,
                              double *us) {
    float ms = 0.0f;
    cudaError_t e = cudaEventElapsedTime(&ms, g->ev[e0], g->ev[e1]);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step: cudaEventElapsedTime");
    *us = (double)ms * 1e3;
    return HRMT_OK;
}

/* ---- a reasoning level ----------------------------------------------------------- */

static hrmt_status row_check(const hrmt_model *m, const char *what) {
    return cu_check(m->ctx, what);
}

/* out = rmsnorm(x + r) (out may be x). */
static hrmt_status resnorm(const hrmt_model *m, void *out, const void *x, const void *r,
                           size_t rows, int sram) {
    const hrmt_rowops *k = &m->ctx->be->rowops;
    const size_t H = m->hidden;
    const float eps = (float)m->cfg.rms_norm_eps;
    const struct hrmt_model_cuda *g = cu_model(m);
    if (g->pdl &&
        hrmt_cuda_residual_rmsnorm_pdl(m->dt, rows, H, x, H, r, H, eps, out, H, 1, g->norm_vec,
                                       g->norm_descend, g->norm_stream, cu_stream(m)))
        return row_check(m, "cuda residual_rmsnorm");
    if (sram)
        k->residual_rmsnorm_sram[m->dt](rows, H, x, H, r, H, eps, out, H);
    else
        k->residual_rmsnorm_dram[m->dt](rows, H, x, H, r, H, eps, out, H, 0);
    return row_check(m, "cuda residual_rmsnorm");
}

/* One post-norm block on h [n T, H]:
 *   h1 = rmsnorm(h + o_proj(attention(qkv(h)))),  h = rmsnorm(h1 + down(SwiGLU(gate_up(h1)))).
 * At small batches (HRMT_CUDA_NORM_PROLOGUE, model_internal.cuh) a norm is
 * the next GEMM's prologue instead of a kernel of its own: h1 goes to ws->hn
 * (a prologue cannot write in place), and the block's last norm is left
 * pending (*pend = its residual; the sum's other term is ws->proj) for the
 * next block's qkv, or for the level's end. Or (HRMT_CUDA_CLUSTER_NORM, on
 * by default) each projection and the norm after it are one kernel over a
 * thread-block cluster at small batches (cu_cluster_norm_ctas), and past
 * them, when asked for (HRMT_CUDA_FUSED_NORM), over clusters of two CTAs,
 * and (HRMT_CUDA_QKV_ATTN, on by default) the qkv GEMM and attention are one
 * kernel over a cluster per (sample, head) while those fit one wave, then
 * over two CTAs per pair (HRMT_CUDA_QKV_ATTN_PAIR), then one CTA per pair
 * (HRMT_CUDA_QKV_ATTN_CTA), each while its CTAs fit one wave. Same bytes
 * every way. */
static hrmt_status block(const hrmt_model *m, const hrmt_block_weights *b, void *h, size_t n,
                         const cu_level_ws *ws, int sram, int last, const void **pend,
                         const cu_fold *fold, int *folded) {
    const size_t rows = n * m->T, H = m->hidden, I = m->inter;
    const struct hrmt_model_cuda *g = cu_model(m);
    const int npro = g->npro && rows <= CU_NPRO_MAX_ROWS;
    const int cnorm = cu_cluster_norm_ctas(m, rows);
    /* The qkv GEMM's own tile shape for these rows (-1: cuBLASLt's): a
     * pending norm needs one. */
    const int qkv_own = npro ? cu_gemm_own_shape(m, rows, 3 * H, H, H, 3 * H) : -1;
    int done = 0;
    if (*pend) {
        TRY(cu_wgemm_norm(m, qkv_own, rows, 3 * H, H, *pend, ws->proj, h,
                          (float)m->cfg.rms_norm_eps, b->qkv.dev, ws->qkv, 3 * H, &done));
        if (!done) TRY(resnorm(m, h, *pend, ws->proj, rows, sram));
        *pend = NULL;
    }
    int attended = 0; /* att made by the qkv + attention kernel */
    if (!done && g->qa) TRY(cu_qkv_attn(m, n, h, b->qkv.dev, ws->att, &attended));
    if (!done && !attended && g->qa_pairs)
        TRY(cu_qkv_attn_pair(m, n, h, b->qkv.dev, ws->att, &attended));
    if (!done && !attended && g->qa_ctas)
        TRY(cu_qkv_attn_cta(m, n, h, b->qkv.dev, ws->att, &attended));
    if (!attended) {
        if (!done) TRY(cu_gemm(m, rows, 3 * H, H, h, H, b->qkv.dev, ws->qkv, m->dt, 3 * H));
        TRY(cu_attention(m, ws->qkv, ws->att, n));
    }
    int normed = 0; /* h1 already in h: o_proj came with its norm */
    if (cnorm) TRY(cu_cluster_norm(m, cnorm, rows, ws->att, H, b->o.dev, h, NULL, &normed));
    if (!normed && g->pnorm) {
        TRY(cu_proj_norm(m, rows, ws->att, H, b->o.dev, h));
        normed = 1;
    } else if (!normed) {
        TRY(cu_gemm(m, rows, H, H, ws->att, H, b->o.dev, ws->proj, m->dt, H));
    }
    const void *res = h; /* the last norm's residual */
    if (npro) {
        TRY(cu_glu_norm(m, rows, h, ws->proj, ws->hn, b->gate_up.dev, ws->act, &done));
        if (done) res = ws->hn;
    }
    if (res == h) {
        if (!normed) TRY(resnorm(m, h, h, ws->proj, rows, sram));
        if (g->glu) {
            TRY(cu_glu(m, rows, h, b->gate_up.dev, ws->act));
        } else {
            TRY(cu_gemm(m, rows, 2 * I, H, h, H, b->gate_up.dev, ws->gu, m->dt, 2 * I));
            hrmt_cuda_swiglu(m->ctx->cuda, m->dt, rows, I, ws->gu, 2 * I, ws->act, I, 0);
            TRY(row_check(m, "cuda swiglu"));
        }
    }
    if (cnorm) {
        const cu_fold *f = last ? fold : NULL;
        TRY(cu_cluster_norm(m, cnorm, rows, ws->act, I, b->down.dev, h, f, &normed));
        if (normed) {
            if (f) *folded = 1;
            return HRMT_OK;
        }
    }
    if (g->pnorm) return cu_proj_norm(m, rows, ws->act, I, b->down.dev, h);
    TRY(cu_gemm(m, rows, H, I, ws->act, I, b->down.dev, ws->proj, m->dt, H));
    /* Pending only where the next qkv can take it: x (ws->hn) is not h. */
    if (res != h && !last && qkv_own >= 0) {
        *pend = res;
        return HRMT_OK;
    }
    return resnorm(m, h, res, ws->proj, rows, sram);
}

static hrmt_status add_rows(const hrmt_model *m, const void *a, const void *b, void *out,
                            size_t rows) {
    const size_t H = m->hidden;
    m->ctx->be->rowops.add[m->dt](rows, H, a, H, b, H, out, H);
    return row_check(m, "cuda add");
}

/* z = z + inj (+ inj2, the inner sum rounded first, into inj_out on the
 * row-op path) over `rows` rows: the injection kernel, else the row-op adds. */
static hrmt_status inject(const hrmt_model *m, void *z, const void *inj, const void *inj2,
                          void *inj_out, size_t rows) {
    int done = 0;
    TRY(cu_inject(m, z, inj, inj2, rows, &done));
    if (done) return HRMT_OK;
    if (inj2) {
        TRY(add_rows(m, inj, inj2, inj_out, rows));
        inj = inj_out;
    }
    return add_rows(m, z, inj, z, rows);
}

/* ReasoningModule: z = z + injection, then each layer in order. The
 * injection is inj, or bf16(inj + inj2) when inj2 is given (the L level's
 * z_H + x), rounded as two adds would round it. `injected`: the kernel
 * before already did it (a fold). `next` (may be NULL): the next level's
 * injection, folded into this level's last kernel where that kernel can
 * (*folded = 1 then). */
static hrmt_status level(const hrmt_model *m, const hrmt_block_weights *blocks, int nlayers,
                         void *z, const void *inj, const void *inj2, void *inj_out, size_t n,
                         const cu_level_ws *ws, int sram, int injected, const cu_fold *next,
                         int *folded) {
    if (folded) *folded = 0;
    if (!injected) TRY(inject(m, z, inj, inj2, inj_out, n * m->T));
    const void *pend = NULL;
    for (int i = 0; i < nlayers; i++)
        TRY(block(m, &blocks[i], z, n, ws, sram, i + 1 == nlayers, &pend, next, folded));
    return HRMT_OK;
}

/* ---- schedules --------------------------------------------------------------------- */

/* The grid kernel's next barrier counter (zeroed once per step). */
static unsigned *next_bar(struct hrmt_carry_cuda *g, int *used) { return g->bar + (*used)++; }

/* The carry's state and level scratch for samples [s0, s0 + n). */
typedef struct cu_part {
    void *zH, *zL, *x, *inj;
    cu_level_ws ws;
    size_t n;
} cu_part;

static cu_part part_of(const hrmt_model *m, const struct hrmt_carry_cuda *g, size_t s0, size_t n) {
    const size_t r = s0 * m->T * m->esz, H = m->hidden, I = m->inter;
    cu_part p;
    p.zH = (char *)g->zH + r * H;
    p.zL = (char *)g->zL + r * H;
    p.x = (char *)g->x + r * H;
    p.inj = (char *)g->inj + r * H;
    p.ws.qkv = (char *)g->ws.qkv + r * 3 * H;
    p.ws.att = (char *)g->ws.att + r * H;
    p.ws.proj = (char *)g->ws.proj + r * H;
    p.ws.gu = (char *)g->ws.gu + r * 2 * I;
    p.ws.act = (char *)g->ws.act + r * I;
    p.ws.hn = (char *)g->ws.hn + r * H;
    p.n = n;
    return p;
}

/* The H level: z_H = level(z_H + z_L). Timed: its events and call count
 * (a parallel branch after the first is not). */
static hrmt_status h_level(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm, const cu_part *p,
                           int *grid_bars, int timed, int injected, const cu_fold *next,
                           int *folded) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    int e0 = 0, e1 = 0;
    if (timed) TRY(ev_rec(m, g, &e0));
    hrmt_tiers_scope_begin(tiers, HRMT_TIER_DRAM);
    hrmt_status s = grid_bars ? cu_grid_level(m, 1, p->zH, p->zL, NULL, p->n, &p->ws, p->inj,
                                              next_bar(g, grid_bars))
                              : level(m, m->H, m->cfg.H_layers, p->zH, p->zL, NULL, NULL, p->n,
                                      &p->ws, 0, injected, next, folded);
    hrmt_tiers_scope_end(tiers, HRMT_TIER_DRAM);
    TRY(s);
    if (!timed) return HRMT_OK;
    TRY(ev_rec(m, g, &e1));
    tm->h_level_calls++;
    return seg_add(m, g, e0, e1, SEG_H, 0);
}

/* The L level: z_L = level(z_L + (zH + x)). */
static hrmt_status l_level(hrmt_model *m, struct hrmt_carry_cuda *g, const cu_part *p,
                           int *grid_bars, int injected, const cu_fold *next, int *folded) {
    if (grid_bars)
        return cu_grid_level(m, 0, p->zL, p->zH, p->x, p->n, &p->ws, p->inj,
                             next_bar(g, grid_bars));
    return level(m, m->L, m->cfg.L_layers, p->zL, p->zH, p->x, p->inj, p->n, &p->ws, 0, injected,
                 next, folded);
}

/* The injection after level (h, l) of the step (l = L_cycles: the H level),
 * for folding into its last kernel; NULL after the last level, or when the
 * step folds none. */
static const cu_fold *next_fold(const hrmt_model *m, const cu_part *p, int h, int l, int on,
                                cu_fold *f) {
    if (!on) return NULL;
    if (l + 1 < m->cfg.L_cycles) /* L then L: z_L = bf16(h + bf16(z_H + x)) in h's place */
        *f = cu_fold{p->zH, p->x, p->zL, 1, 0};
    else if (l + 1 == m->cfg.L_cycles) /* L then H: z_H = bf16(z_H + h), h kept as z_L */
        *f = cu_fold{p->zH, NULL, p->zH, 0, 1};
    else if (h + 1 < m->cfg.H_cycles) /* H then L: z_L = bf16(z_L + bf16(h + x)), h kept */
        *f = cu_fold{p->zL, p->x, p->zL, 0, 1};
    else
        return NULL;
    return f;
}

/* Every level of the step, op by op, on one part of the batch. */
static hrmt_status levels(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm, const cu_part *p,
                          int *grid_bars, int timed, int injected) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    /* Each level's injection folded into the kernel before it where it can
     * be (`injected`: the first was, by the reset + embedding). */
    const int fold = !grid_bars && cu_model(m)->fold_inject;
    cu_fold f;
    for (int h = 0; h < m->cfg.H_cycles; h++) {
        for (int l = 0; l < m->cfg.L_cycles; l++) {
            int e0 = 0, e1 = 0;
            if (timed) TRY(ev_rec(m, g, &e0));
            hrmt_tiers_scope_begin(tiers, HRMT_TIER_DRAM);
            int folded = 0;
            hrmt_status s =
                l_level(m, g, p, grid_bars, injected, next_fold(m, p, h, l, fold, &f), &folded);
            injected = folded;
            hrmt_tiers_scope_end(tiers, HRMT_TIER_DRAM);
            TRY(s);
            if (!timed) continue;
            TRY(ev_rec(m, g, &e1));
            TRY(seg_add(m, g, e0, e1, SEG_L, 0));
            tm->l_level_calls++;
        }
        int folded = 0;
        TRY(h_level(m, c, tm, p, grid_bars, timed, injected,
                    next_fold(m, p, h, m->cfg.L_cycles, fold, &f), &folded));
        injected = folded;
    }
    return HRMT_OK;
}

/* The capture's current dependency nodes, appended to set[*n] (cap entries). */
static hrmt_status capture_deps(const hrmt_model *m, cudaGraphNode_t *set, size_t *n, size_t cap) {
    cudaStreamCaptureStatus cs;
    const cudaGraphNode_t *d = NULL;
    size_t nd = 0;
    cudaError_t e = cudaStreamGetCaptureInfo(cu_stream(m), &cs, NULL, NULL, &d, NULL, &nd);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step graph: cudaStreamGetCaptureInfo");
    if (cs != cudaStreamCaptureStatusActive)
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda step graph: the capture is not active");
    if (*n + nd > cap) /* a fork or join wider than the branches make */
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA,
                         "cuda step graph: %zu capture dependencies (%zu "
                         "expected at most)",
                         *n + nd, cap);
    for (size_t i = 0; i < nd; i++) set[(*n)++] = d[i];
    return HRMT_OK;
}

static hrmt_status set_deps(const hrmt_model *m, cudaGraphNode_t *set, size_t n) {
    cudaError_t e = cudaStreamUpdateCaptureDependencies(cu_stream(m), set, NULL, n,
                                                        cudaStreamSetCaptureDependencies);
    return e == cudaSuccess
               ? HRMT_OK
               : cu_fail(m->ctx, e, "cuda step graph: cudaStreamUpdateCaptureDependencies");
}

/* The levels as g->nbranch parallel branches of the graph being captured,
 * one sample range each (model_branch.cu): each branch starts from the
 * nodes before it (the fork) and the step goes on after all of them (the
 * join). Each branch after the first has its own cuBLASLt workspace. */
static hrmt_status branched(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm, int injected) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    struct hrmt_model_cuda *mc = cu_model(m);
    const size_t B = (size_t)c->batch, nb = (size_t)g->nbranch, ws = m->ctx->cuda->ws_bytes;
    enum { CAP = 16 };
    cudaGraphNode_t fork[CAP], join[CU_MAX_BRANCHES * CAP];
    size_t nf = 0, nj = 0;
    TRY(capture_deps(m, fork, &nf, CAP));
    hrmt_status s = HRMT_OK;
    for (size_t k = 0; k < nb && s == HRMT_OK; k++) {
        if (k > 0) s = set_deps(m, fork, nf);
        mc->lt_ws_now = k ? (char *)g->lt_ws + (k - 1) * ws : NULL;
        const size_t s0 = B * k / nb, s1 = B * (k + 1) / nb;
        const cu_part p = part_of(m, g, s0, s1 - s0);
        if (s == HRMT_OK) s = levels(m, c, tm, &p, NULL, k == 0, injected);
        if (s == HRMT_OK) s = capture_deps(m, join, &nj, sizeof join / sizeof join[0]);
    }
    mc->lt_ws_now = NULL;
    TRY(s);
    return set_deps(m, join, nj);
}

/* Op by op over the whole batch; with HRMT_CUDA_GRID=1 each level is
 * instead one grid-wide kernel (model_grid.cu), same bits; while a graph
 * is captured, possibly as parallel branches over sample ranges. */
static hrmt_status baseline(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm, int injected) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    if (g->capturing && g->nbranch > 1) return branched(m, c, tm, injected);
    int bars = 0, *grid_bars = cu_grid_use(m) ? &bars : NULL;
    if (grid_bars) {
        cudaError_t e = cudaMemsetAsync(g->bar, 0, (size_t)g->nbar * sizeof *g->bar, cu_stream(m));
        if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step: grid barriers");
    }
    const cu_part p = part_of(m, g, 0, (size_t)c->batch);
    return levels(m, c, tm, &p, grid_bars, 1, injected);
}

static hrmt_status d2d(const hrmt_model *m, void *dst, const void *src, size_t bytes) {
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cu_stream(m));
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "cuda tiered: tile copy");
}

/* All L_cycles x L_layers of one H cycle on samples [s0, s0 + n). With
 * HRMT_CUDA_TILE_LINKS the copy in, the injection and the first L level's
 * injection are one kernel, the later injections are folded into the
 * kernel before where the baseline's are (next_fold on the tile's rows),
 * and the copy back is another kernel; the tile also makes the H level's
 * injection of its rows, zH = zH + zL (fold or copy back), so the caller's
 * H level skips its own (cu_tile_in / _out). */
static hrmt_status run_tile(hrmt_model *m, hrmt_carry *c, size_t s0, size_t n,
                            hrmt_step_timing *tm) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    const size_t r0 = s0 * m->T, rows = n * m->T, hb = m->hidden * m->esz, bytes = rows * hb;
    cu_part tp = part_of(m, g, s0, n); /* the tile's rows of z_H and x; its z_L the tile's */
    tp.zL = g->tz;
    char *zL = (char *)g->zL + r0 * hb, *zH = (char *)tp.zH;
    const int hinj = cu_model(m)->tile_links;
    int e0 = 0, e1 = 0, e2 = 0, e3 = 0, in = 0, out = 0;
    TRY(ev_rec(m, g, &e0));
    TRY(cu_tile_in(m, zL, zH, tp.x, g->tz, g->tinj, rows, &in));
    if (!in) {
        TRY(d2d(m, g->tz, zL, bytes));
        TRY(add_rows(m, zH, tp.x, g->tinj, rows));
    }
    TRY(ev_rec(m, g, &e1));
    hrmt_tiers_scope_begin(tiers, HRMT_TIER_SRAM);
    hrmt_status s = HRMT_OK;
    const int fold = in && cu_model(m)->fold_inject;
    int injected = in, folded = 0;
    cu_fold f;
    for (int l = 0; l < m->cfg.L_cycles && s == HRMT_OK; l++) {
        s = level(m, m->L, m->cfg.L_layers, g->tz, g->tinj, NULL, NULL, n, &g->ws, 1, injected,
                  next_fold(m, &tp, 0, l, fold, &f), &folded);
        injected = folded;
        tm->l_level_calls++;
    }
    hrmt_tiers_scope_end(tiers, HRMT_TIER_SRAM);
    TRY(s);
    TRY(ev_rec(m, g, &e2));
    const int hleft = hinj && !folded; /* the H injection still to make for these rows */
    TRY(cu_tile_out(m, g->tz, zL, hleft ? zH : NULL, rows, &out));
    if (!out) {
        TRY(d2d(m, zL, g->tz, bytes));
        if (hleft) TRY(inject(m, zH, zL, NULL, NULL, rows));
    }
    TRY(ev_rec(m, g, &e3));
    tm->transfers += 2;
    TRY(seg_add(m, g, e0, e1, SEG_IN, bytes));
    TRY(seg_add(m, g, e1, e2, SEG_L, 0));
    return seg_add(m, g, e2, e3, SEG_OUT, bytes);
}

/* The tile's tier-manager tensors, as the CPU schedule names them: z_L,
 * injection, and the level scratch of the tile's rows. */
static const char *const k_tile_what[3] = {"z_L", "injection", "scratch"};

static void free_tile_tensors(hrmt_tiers *tiers, int have) {
    char name[48];
    for (int i = 0; i < have; i++) {
        snprintf(name, sizeof name, "hrm.L_tile0.%s", k_tile_what[i]);
        hrmt_tiers_free(tiers, name);
    }
}

/* Registered over the tile's device buffers (z_L, the injection, the level
 * scratch from its first buffer on): counted as the CPU schedule counts its
 * tile, with no host memory taken or zeroed (11-30 MB a step at HRM's
 * batches 8-256, which outlasted the GPU's step at 8-16). */
static hrmt_status alloc_tile_tensors(hrmt_model *m, const struct hrmt_carry_cuda *g,
                                      size_t samples, int *have) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    const size_t rows = samples * m->T;
    size_t zs[2] = {rows, m->hidden}, ss[1] = {(rows * hrmt_level_ws_row_bytes(m) + 3) / 4};
    void *data[3] = {g->tz, g->tinj, g->ws.qkv};
    hrmt_status s = HRMT_OK;
    *have = 0;
    for (int i = 0; i < 3 && s == HRMT_OK; i++) {
        char name[48];
        snprintf(name, sizeof name, "hrm.L_tile0.%s", k_tile_what[i]);
        s = i < 2 ? hrmt_tiers_register_sram(tiers, name, 2, zs, m->dt, data[i], HRMT_DEVICE_CUDA,
                                             NULL)
                  : hrmt_tiers_register_sram(tiers, name, 1, ss, HRMT_F32, data[i],
                                             HRMT_DEVICE_CUDA, NULL);
        if (s == HRMT_OK) (*have)++;
    }
    if (s != HRMT_OK)
        return hrmt_fail(m->ctx, s, "tiered schedule: tier manager refused the L tile (%s)",
                         hrmt_status_str(s));
    return HRMT_OK;
}

/* The tiered schedule with the persistent L-level kernel: one launch per H
 * cycle runs all L cycles and layers, each CTA's z_L in shared memory. */
static hrmt_status tiered_persistent(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    for (int h = 0; h < m->cfg.H_cycles; h++) {
        int e0 = 0, e1 = 0;
        TRY(ev_rec(m, g, &e0));
        hrmt_tiers_scope_begin(tiers, HRMT_TIER_SRAM);
        hrmt_status s = cu_l_persist(m, g->zL, g->zH, g->x, (size_t)c->batch, g->ws.qkv, g->ws.act);
        hrmt_tiers_scope_end(tiers, HRMT_TIER_SRAM);
        TRY(s);
        TRY(ev_rec(m, g, &e1));
        TRY(seg_add(m, g, e0, e1, SEG_L, 0));
        tm->l_level_calls += m->cfg.L_cycles;
        const cu_part p = part_of(m, g, 0, (size_t)c->batch);
        TRY(h_level(m, c, tm, &p, NULL, 1, 0, NULL, NULL));
    }
    return HRMT_OK;
}

static hrmt_status tiered(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    const size_t B = (size_t)c->batch, ts = g->tile_samples;
    hrmt_status s = HRMT_OK;
    if (cu_model(m)->l_persist) return tiered_persistent(m, c, tm);
    for (int h = 0; h < m->cfg.H_cycles && s == HRMT_OK; h++) {
        for (size_t s0 = 0; s0 < B && s == HRMT_OK; s0 += ts)
            s = run_tile(m, c, s0, B - s0 < ts ? B - s0 : ts, tm);
        const cu_part p = part_of(m, g, 0, B);
        /* With the tile links each tile made the H injection of its rows. */
        if (s == HRMT_OK) s = h_level(m, c, tm, &p, NULL, 1, cu_model(m)->tile_links, NULL, NULL);
    }
    return s;
}

/* The tier manager's tile tensors are bookkeeping only on the GPU (the tile
 * lives in device memory): registered and forgotten once per tiered step,
 * while the GPU runs the step. */
static hrmt_status tile_bookkeeping(hrmt_model *m, const hrmt_carry *c) {
    int have = 0;
    hrmt_status s = alloc_tile_tensors(m, cu_carry(c), cu_carry(c)->tile_samples, &have);
    free_tile_tensors(hrmt_context_tiers(m->ctx), have);
    return s;
}

/* ---- the step ------------------------------------------------------------------------ */

/* logits = lm_head(zH) over all T rows; q = q_head(zH[:, 0]) + bias; halting. */
static hrmt_status heads(hrmt_model *m, hrmt_carry *c, int early_halt) {
    if (cu_model(m)->heads) return cu_heads(m, c, early_halt);
    struct hrmt_carry_cuda *g = cu_carry(c);
    const size_t B = (size_t)c->batch, T = m->T, H = m->hidden;
    TRY(cu_gemm(m, B * T, m->vocab, H, g->zH, H, m->lm_head.dev, g->logits, m->dt, m->vocab));
    TRY(cu_gemm(m, B, 2, H, g->zH, T * H, m->q_head.dev, g->q, HRMT_F32, 2));
    return cu_finish(m, c, early_halt);
}

/* Device results -> the timing struct and the tier manager's transfer stats. */
static hrmt_status account(hrmt_model *m, struct hrmt_carry_cuda *g, int e_start, int e_end,
                           hrmt_step_timing *tm) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    for (int i = 0; i < g->nseg; i++) {
        const cu_seg *sg = &g->seg[i];
        double us = 0.0;
        TRY(elapsed_us(m, g, sg->e0, sg->e1, &us));
        if (us < 0.0) us = 0.0;
        switch (sg->kind) {
        case SEG_L: tm->l_level_us_total += us; break;
        case SEG_H: tm->h_level_us_total += us; break;
        case SEG_IN:
            tm->h_to_l_transfer_us_total += us;
            hrmt_tiers_record(tiers, HRMT_TIER_DRAM, HRMT_TIER_OP_TRANSFER, sg->bytes, us);
            break;
        default:
            tm->l_to_h_transfer_us_total += us;
            hrmt_tiers_record(tiers, HRMT_TIER_SRAM, HRMT_TIER_OP_TRANSFER, sg->bytes, us);
            break;
        }
    }
    return elapsed_us(m, g, e_start, e_end, &tm->step_us);
}

/* Grows the host staging buffer to `bytes`. */
static hrmt_status stage(hrmt_model *m, struct hrmt_carry_cuda *g, size_t bytes) {
    if (bytes > g->host_bytes) {
        void *p = realloc(g->host, bytes);
        if (!p) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "cuda step: host staging");
        g->host = p;
        g->host_bytes = bytes;
    }
    return HRMT_OK;
}

static hrmt_status download(hrmt_model *m, struct hrmt_carry_cuda *g, const void *src, size_t bytes,
                            void **host) {
    TRY(stage(m, g, bytes));
    *host = g->host;
    return hrmt_cuda_memcpy(m->ctx->cuda, g->host, src, bytes, 1, m->ctx->err, sizeof m->ctx->err);
}

static void to_f32(const hrmt_model *m, const void *src, float *dst, size_t n) {
    if (m->dt == HRMT_F32) {
        memcpy(dst, src, n * sizeof(float));
    } else {
        const uint16_t *h = (const uint16_t *)src;
        for (size_t i = 0; i < n; i++) dst[i] = hrmt_bf16_to_f32(h[i]);
    }
}

/* The page-locked staging's parts (model_mem.cu: pin_staging): the logits,
 * q right after them as on the device, then the inputs. */
static char *pin_logits(const struct hrmt_carry_cuda *g) { return (char *)g->pin; }
static char *pin_state(const struct hrmt_carry_cuda *g) { return pin_logits(g) + g->pin_logits; }
static char *pin_inputs(const struct hrmt_carry_cuda *g) { return pin_state(g) + g->pin_state; }

/* Whether the step's downloads queue behind it into the pinned staging. */
static int pinned_logits(const struct hrmt_carry_cuda *g, const hrmt_step_outputs *o) {
    return g->pin && o && o->logits && g->pin_logits > 0;
}

static hrmt_status copy_out(hrmt_model *m, hrmt_carry *c, hrmt_step_outputs *o) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    const size_t B = (size_t)c->batch, T = m->T, H = m->hidden, V = m->vocab, es = m->esz;
    void *h = NULL;
    if (o->logits) {
        if (pinned_logits(g, o))
            h = pin_logits(g); /* downloaded with the step */
        else
            TRY(download(m, g, g->logits, B * T * V * es, &h));
        for (size_t s = 0; s < B; s++)
            to_f32(m, (char *)h + (s * T + m->P) * V * es, o->logits + s * m->seq * V, m->seq * V);
    }
    for (size_t s = 0; s < B; s++) {
        if (o->q_halt_logits) o->q_halt_logits[s] = c->q[2 * s];
        if (o->q_continue_logits) o->q_continue_logits[s] = c->q[2 * s + 1];
    }
    if (o->z_H) {
        TRY(download(m, g, g->zH, B * T * H * es, &h));
        to_f32(m, h, o->z_H, B * T * H);
    }
    if (o->z_L) {
        TRY(download(m, g, g->zL, B * T * H * es, &h));
        to_f32(m, h, o->z_L, B * T * H);
    }
    if (o->halted) memcpy(o->halted, c->halted, B * sizeof(int32_t));
    return HRMT_OK;
}

/* The bytes cu_upload_bytes names, laid out as on the device, at dst. */
static void pack_inputs(const hrmt_model *m, const struct hrmt_carry_cuda *g, void *dst, size_t B,
                        const int32_t *inputs, const int32_t *puzzle_ids) {
    const size_t in_bytes = B * m->seq * 4;
    memcpy(dst, inputs, in_bytes);
    if (!puzzle_ids) return;
    const size_t off = (size_t)((char *)g->new_pids - (char *)g->new_inputs);
    memset((char *)dst + in_bytes, 0, off - in_bytes); /* the alignment gap */
    memcpy((char *)dst + off, puzzle_ids, B * 4);
}

/* The staged inputs to the device, in stream order (a node of the graph). */
static hrmt_status enqueue_upload(hrmt_model *m, hrmt_carry *c, int has_pids) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    const cudaError_t e = cudaMemcpyAsync(g->new_inputs, pin_inputs(g),
                                          cu_upload_bytes(g, (size_t)c->batch, m->seq, has_pids),
                                          cudaMemcpyHostToDevice, cu_stream(m));
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "cuda step: inputs upload");
}

/* Without pinned staging: the same bytes in one synchronous copy. */
static hrmt_status upload_inputs(hrmt_model *m, struct hrmt_carry_cuda *g, size_t B,
                                 const int32_t *inputs, const int32_t *puzzle_ids) {
    const size_t bytes = cu_upload_bytes(g, B, m->seq, puzzle_ids != NULL);
    TRY(stage(m, g, bytes));
    pack_inputs(m, g, g->host, B, inputs, puzzle_ids);
    return hrmt_cuda_memcpy(m->ctx->cuda, g->new_inputs, g->host, bytes, 0, m->ctx->err,
                            sizeof m->ctx->err);
}

/* The step's downloads queued behind it into the pinned staging: q, steps,
 * halted (adjacent on the device, model_mem.cu), with the logits before
 * them in the same copy if asked. */
static hrmt_status enqueue_downloads(hrmt_model *m, struct hrmt_carry_cuda *g,
                                     const hrmt_step_outputs *o) {
    const int lg = pinned_logits(g, o);
    const cudaError_t e = cudaMemcpyAsync(
        lg ? pin_logits(g) : pin_state(g), lg ? g->logits : (void *)g->q,
        (lg ? g->pin_logits : 0) + g->pin_state, cudaMemcpyDeviceToHost, cu_stream(m));
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, "cuda step: outputs download");
}

/* q, steps, halted to the host mirrors: from the pinned staging, else one
 * synchronous download. */
static hrmt_status download_act_state(hrmt_model *m, hrmt_carry *c) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    const size_t B = (size_t)c->batch;
    char *q0 = (char *)g->q;
    void *h = g->pin ? pin_state(g) : NULL;
    if (!h) TRY(download(m, g, g->q, (size_t)((char *)g->halted - q0) + B * 4, &h));
    memcpy(c->q, h, 2 * B * 4);
    memcpy(c->steps, (char *)h + ((char *)g->steps - q0), B * 4);
    memcpy(c->halted, (char *)h + ((char *)g->halted - q0), B * 4);
    return HRMT_OK;
}

/* Everything a step runs on the device after the inputs are uploaded. */
static hrmt_status enqueue_step(hrmt_model *m, hrmt_carry *c, const hrmt_step_options *o,
                                int has_pids, hrmt_step_timing *tm) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    if (g->pin) TRY(enqueue_upload(m, c, has_pids));
    /* The first L level's injection folded into the reset + embedding: the
     * baseline's op-by-op levels only (the tiles and the grid kernel make
     * their own). */
    const int fold =
        o->schedule == HRMT_SCHEDULE_BASELINE && cu_model(m)->fold_inject && !cu_grid_use(m);
    int fused = 0;
    TRY(cu_reset_embed(m, c, has_pids, fold, &fused));
    if (!fused) {
        TRY(cu_reset(m, c, has_pids));
        TRY(cu_embed(m, c));
    }
    TRY(o->schedule == HRMT_SCHEDULE_BASELINE ? baseline(m, c, tm, fused && fold)
                                              : tiered(m, c, tm));
    TRY(heads(m, c, o->early_halt));
    return side_join(m, g);
}

/* Captures enqueue_step as a graph for `key` (replacing any other). Every
 * pointer and shape it bakes in belongs to this carry and model, and the
 * step's data-dependent choices (which samples restart, halting) are made
 * by kernels from device memory, so replays compute what launches would.
 * Relaxed mode: the opt-in attribute calls made on first use are allowed. */
static hrmt_status build_graph(hrmt_model *m, hrmt_carry *c, const hrmt_step_options *o,
                               int has_pids, int key) {
    struct hrmt_carry_cuda *g = cu_carry(c);
    cudaStream_t st = cu_stream(m);
    if (g->graph) {
        cudaError_t e = cudaGraphExecDestroy(g->graph);
        g->graph = NULL;
        g->graph_key = -1;
        if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step graph: cudaGraphExecDestroy");
    }
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step graph: cudaStreamBeginCapture");
    hrmt_step_timing tm;
    memset(&tm, 0, sizeof tm);
    g->capturing = 1;
    hrmt_status s = enqueue_step(m, c, o, has_pids, &tm);
    g->capturing = 0;
    cudaGraph_t graph = NULL;
    e = cudaStreamEndCapture(st, &graph);
    if (s != HRMT_OK || e != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError(); /* an invalidated capture is not sticky */
        return s != HRMT_OK ? s : cu_fail(m->ctx, e, "cuda step graph: cudaStreamEndCapture");
    }
    e = cudaGraphInstantiate(&g->graph, graph, 0);
    cudaError_t e2 = cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        g->graph = NULL;
        return cu_fail(m->ctx, e, "cuda step graph: cudaGraphInstantiate");
    }
    if (e2 != cudaSuccess) return cu_fail(m->ctx, e2, "cuda step graph: cudaGraphDestroy");
    g->graph_tm = tm;
    g->graph_key = key;
    return HRMT_OK;
}

/* Events 0 and 1 of the pool time the whole step, around the uploads, the
 * device work and (with pinned staging) the downloads; the timeline's
 * segments use events from 2 on. */
enum { EV_START = 0, EV_END = 1, EV_FIRST_SEG = 2 };

static hrmt_status act_step(hrmt_model *m, hrmt_carry *c, const int32_t *inputs,
                            const int32_t *puzzle_ids, const hrmt_step_options *o,
                            hrmt_step_outputs *outs, hrmt_step_timing *timing) {
    hrmt_context *ctx = m->ctx;
    struct hrmt_carry_cuda *g = cu_carry(c);
    const size_t B = (size_t)c->batch;
    const int has_pids = puzzle_ids != NULL;
    const int key =
        (o->schedule == HRMT_SCHEDULE_BASELINE) | (o->early_halt ? 2 : 0) | (has_pids ? 4 : 0);
    const int use_graph = ctx->cuda_graphs;
    const int rebuild = use_graph && g->graph_key != key;
    hrmt_step_timing tm;
    memset(&tm, 0, sizeof tm);
    TRY(ev_reserve(m, g, EV_END));
#ifdef HRMT_CUDA_LINK_TRACE
    TRY(cu_link_trace_begin(m));
#endif
    if (!use_graph || rebuild) { /* a new timeline; a replay reuses the captured one */
        g->nev = EV_FIRST_SEG;
        g->nseg = 0;
    }
    cudaError_t e = cudaEventRecord(g->ev[EV_START], cu_stream(m));
    if (e != cudaSuccess) return cu_fail(ctx, e, "cuda step: cudaEventRecord");
    /* Only halted samples take the new data, on the device (cu_reset). With
     * pinned staging the upload is the step's first node, else a copy now. */
    if (g->pin)
        pack_inputs(m, g, pin_inputs(g), B, inputs, puzzle_ids);
    else
        TRY(upload_inputs(m, g, B, inputs, puzzle_ids));
    if (use_graph) {
        if (rebuild) TRY(build_graph(m, c, o, has_pids, key));
        tm = g->graph_tm;
        e = cudaGraphLaunch(g->graph, cu_stream(m));
        if (e != cudaSuccess) return cu_fail(ctx, e, "cuda step graph: cudaGraphLaunch");
    } else {
        TRY(enqueue_step(m, c, o, has_pids, &tm));
    }
    if (g->pin) TRY(enqueue_downloads(m, g, outs));
    e = cudaEventRecord(g->ev[EV_END], cu_stream(m));
    if (e != cudaSuccess) return cu_fail(ctx, e, "cuda step: cudaEventRecord");
    if (o->schedule != HRMT_SCHEDULE_BASELINE) TRY(tile_bookkeeping(m, c));
    /* Waits for the step; an asynchronous fault surfaces here. */
    TRY(hrmt_cuda_sync(ctx->cuda, ctx->err, sizeof ctx->err));
#ifdef HRMT_CUDA_LINK_TRACE
    TRY(cu_link_trace_end(m, B));
#endif
    TRY(download_act_state(m, c));
    TRY(account(m, g, EV_START, EV_END, &tm));
    if (outs) TRY(copy_out(m, c, outs));
    if (timing) *timing = tm;
    return HRMT_OK;
}

hrmt_status hrmt_cuda_act_step(hrmt_model *m, hrmt_carry *c, const int32_t *inputs,
                               const int32_t *puzzle_ids, const hrmt_step_options *o,
                               hrmt_step_outputs *outs, hrmt_step_timing *timing) {
    /* The block GEMMs at this batch's own M, once (before any capture, and
     * outside the profiler range: the tuner's launches are not the step's). */
    TRY(cu_gemm_tune_rows(m, (size_t)c->batch * m->T));
    if (!cu_model(m)->profile_steps) return act_step(m, c, inputs, puzzle_ids, o, outs, timing);
    cudaError_t e = cudaProfilerStart();
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step: cudaProfilerStart");
    const hrmt_status s = act_step(m, c, inputs, puzzle_ids, o, outs, timing);
    e = cudaProfilerStop();
    if (s == HRMT_OK && e != cudaSuccess) return cu_fail(m->ctx, e, "cuda step: cudaProfilerStop");
    return s;
}
