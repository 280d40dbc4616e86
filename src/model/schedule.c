/* The inner reasoning loop under the two schedules.
 *
 *   for h in H_cycles: (for l in L_cycles: zL = L(zL, zH + x)); zH = H(zH, zL)
 *
 * Baseline: op by op over the whole batch from DRAM, as an eager framework
 * runs it (the injection zH + x is recomputed for every L call).
 * Tiered: per H cycle, the samples are cut into tiles whose L-level working
 * set (z_L, injection, qkv, attention, MLP scratch) fits the SRAM tier; each
 * tile's buffers come from the tier manager, z_L is copied in, all L_cycles x
 * L_layers run on the tile, and z_L is copied back before the H-level runs
 * over the whole batch from DRAM. The injection is computed once per tile
 * (zH and x do not change inside the L loop), which gives the same bits.
 * With enough tiles, each thread takes whole tiles (its own SRAM buffers,
 * single-threaded kernels, no synchronisation inside the L loop, like a GPU
 * block per tile); otherwise tiles run in turn with team-parallel kernels.
 * Kernels are row-independent and the GEMM is blocking- and thread-count-
 * independent, so every arrangement gives the same bytes. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/tiers.h"
#include "model/model.h"
#include "model/part_clock.h"

/* The H-level over the whole batch, from DRAM: zH = H(zH, zL). */
static hrmt_status h_level(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    double t0 = hrmt_now_us();
    hrmt_tiers_scope_begin(tiers, HRMT_TIER_DRAM);
    hrmt_status s = hrmt_level(m, m->H, m->cfg.H_layers, c->zH, c->zL, (size_t)c->batch, &c->ws, 0);
    hrmt_tiers_scope_end(tiers, HRMT_TIER_DRAM);
    tm->h_level_us_total += hrmt_now_us() - t0;
    tm->h_level_calls++;
    return s;
}

static hrmt_status baseline(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm) {
    const hrmt_model_config *cfg = &m->cfg;
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    size_t B = (size_t)c->batch, rows = B * m->T;
    hrmt_status s = HRMT_OK;
    for (int h = 0; h < cfg->H_cycles && s == HRMT_OK; h++) {
        for (int l = 0; l < cfg->L_cycles && s == HRMT_OK; l++) {
            double t0 = hrmt_now_us();
            hrmt_tiers_scope_begin(tiers, HRMT_TIER_DRAM);
            double ta = hrmt_part_begin(&c->ws);
            hrmt_rows_add(m, c->zH, c->x, c->inj, rows);
            hrmt_part_end(&c->ws, HRMT_PART_ADD, ta);
            s = hrmt_level(m, m->L, cfg->L_layers, c->zL, c->inj, B, &c->ws, 0);
            hrmt_tiers_scope_end(tiers, HRMT_TIER_DRAM);
            tm->l_level_us_total += hrmt_now_us() - t0;
            tm->l_level_calls++;
        }
        if (s == HRMT_OK) s = h_level(m, c, tm);
    }
    return s;
}

/* Bytes of one tile's SRAM buffers for `n` samples with a team of `threads`
 * (z_L, injection, level scratch; a single-thread tile also carries its own
 * GEMM packing scratch). */
static size_t tile_bytes(const hrmt_model *m, size_t n, int threads, size_t *ws_bytes,
                         size_t *gemm_bytes) {
    hrmt_level_ws probe;
    size_t rows = n * m->T;
    size_t ws = hrmt_level_ws_layout(m, rows, threads, NULL, &probe);
    size_t g = threads == 1 ? (hrmt_model_gemm_scratch(m, rows, rows, 0, 1) + 63) / 64 * 64 : 0;
    if (ws_bytes) *ws_bytes = ws;
    if (gemm_bytes) *gemm_bytes = g;
    return 2 * ((rows * m->hidden * m->esz + 63) / 64 * 64) + ws + g;
}

/* Samples per tile under `budget` bytes: as many as fit, at least one
 * (binary search: the bytes grow with the sample count). */
static size_t fit_samples(const hrmt_model *m, size_t budget, int threads, int batch) {
    size_t lo = 1, hi = (size_t)batch; /* lo always acceptable (or the minimum) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (tile_bytes(m, mid, threads, NULL, NULL) <= budget)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Tiles run one per thread when there are enough of them to keep the team
 * evenly busy, or (on fewer threads) at least half of it; each then gets an
 * equal share of the SRAM tier (the tier manager models one arena).
 * Otherwise tiles run in turn, each with the whole team on every kernel. */
hrmt_tiling hrmt_tiling_for(const hrmt_model *m, int batch) {
    hrmt_context *ctx = m->ctx;
    size_t budget = hrmt_context_tile_plan(ctx)->l_tile_bytes;
    size_t cap = hrmt_tiers_sram_capacity(hrmt_context_tiers(ctx));
    if (cap && cap < budget) budget = cap;
    hrmt_tiling t;
    t.team = hrmt_context_threads(ctx) > 0 ? hrmt_context_threads(ctx) : 1;
    const size_t team = (size_t)t.team, B = (size_t)batch;
    if (team > 1 && team <= HRMT_MAX_TILE_TEAM) {
        t.samples = fit_samples(m, budget / team, 1, batch);
        t.tiles = (B + t.samples - 1) / t.samples;
        if (t.tiles >= team && (t.tiles % team == 0 || t.tiles >= 4 * team)) {
            t.parallel = 1;
            return t;
        }
        /* Fewer tiles than threads, but at least half as many: one tile per
         * thread on part of the team. In turn, the whole team would share
         * each tile's few rows (16 threads on one sample's 82: GEMMs of 3
         * slivers split 16 ways, 8 heads of attention; measured 1.5x the
         * speed of 2 threads), while a tile per thread keeps its thread busy;
         * the rest of the team waits only for the L phase. */
        if (t.tiles >= 2 && t.tiles < team && 2 * t.tiles >= team) {
            t.team = (int)t.tiles;
            t.parallel = 1;
            return t;
        }
    }
    t.parallel = 0;
    t.samples = fit_samples(m, budget, t.team, batch);
    t.tiles = (B + t.samples - 1) / t.samples;
    return t;
}

/* One tile's SRAM buffers, named per slot so concurrent tiles can coexist. */
typedef struct tile_set {
    hrmt_tensor z, inj, scratch;
    char name[3][48];
    int have[3];
    hrmt_level_ws ws;
} tile_set;

static void free_tile(hrmt_tiers *tiers, tile_set *t) {
    for (int i = 0; i < 3; i++)
        if (t->have[i]) hrmt_tiers_free(tiers, t->name[i]);
    memset(t->have, 0, sizeof t->have);
}

static hrmt_status alloc_tile(hrmt_model *m, const hrmt_carry *c, size_t samples, int threads,
                              int slot, tile_set *t) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    size_t ws_bytes, g_bytes;
    tile_bytes(m, samples, threads, &ws_bytes, &g_bytes);
    static const char *const what[3] = {"z_L", "injection", "scratch"};
    for (int i = 0; i < 3; i++)
        snprintf(t->name[i], sizeof t->name[i], "hrm.L_tile%d.%s", slot, what[i]);
    size_t zs[2] = {samples * m->T, m->hidden}, ss[1] = {(ws_bytes + g_bytes) / sizeof(float)};
    hrmt_tensor *dst[3] = {&t->z, &t->inj, &t->scratch};
    hrmt_status s = HRMT_OK;
    for (int i = 0; i < 3 && s == HRMT_OK; i++) {
        s = i < 2 ? hrmt_tiers_alloc_sram(tiers, t->name[i], 2, zs, m->dt, dst[i])
                  : hrmt_tiers_alloc_sram(tiers, t->name[i], 1, ss, HRMT_F32, dst[i]);
        t->have[i] = s == HRMT_OK;
    }
    if (s != HRMT_OK) {
        free_tile(tiers, t);
        return hrmt_fail(m->ctx, s, "tiered schedule: tier manager refused the L tile (%s)",
                         hrmt_status_str(s));
    }
    hrmt_level_ws_layout(m, samples * m->T, threads, t->scratch.data, &t->ws);
    if (threads == 1) {
        /* A lone thread's GEMM packing scratch lives in its tile. */
        t->ws.gemm_scratch = (char *)t->scratch.data + ws_bytes;
        t->ws.gemm_scratch_bytes = g_bytes;
    } else {
        t->ws.gemm_scratch = c->ws.gemm_scratch;
        t->ws.gemm_scratch_bytes = c->ws.gemm_scratch_bytes;
    }
    return HRMT_OK;
}

/* A DRAM descriptor over rows [r0, r0 + n) of a carry tensor. */
static hrmt_tensor dram_rows(const hrmt_model *m, void *base, size_t r0, size_t n) {
    hrmt_tensor t;
    size_t shape[2] = {n, m->hidden};
    hrmt_tensor_init(&t, (char *)base + r0 * m->hidden * m->esz, m->dt, 2, shape);
    t.tier = HRMT_TIER_DRAM;
    return t;
}

/* Per-thread time spent on one or more tiles. */
typedef struct tile_clock {
    double in_us, out_us, level_us;
    int level_calls;
} tile_clock;

/* All L_cycles x L_layers of one H cycle on samples [s0, s0 + n) in tile set t:
 * copy z_L in, build the injection zH + x in SRAM, run, copy z_L back. */
static hrmt_status run_tile(hrmt_model *m, hrmt_carry *c, tile_set *t, size_t s0, size_t n,
                            tile_clock *clk) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    const size_t r0 = s0 * m->T, rows = n * m->T, hb = m->hidden * m->esz;
    hrmt_tensor src = dram_rows(m, c->zL, r0, rows), dst = t->z;
    dst.shape[0] = rows;
    double t0 = hrmt_now_us();
    hrmt_status s = hrmt_tiers_copy(tiers, &dst, &src);
    if (s != HRMT_OK) return s;
    double ta = hrmt_part_begin(&t->ws);
    hrmt_rows_add(m, (char *)c->zH + r0 * hb, (char *)c->x + r0 * hb, t->inj.data, rows);
    hrmt_part_end(&t->ws, HRMT_PART_ADD, ta);
    double t1 = hrmt_now_us();
    clk->in_us += t1 - t0;
    hrmt_tiers_scope_begin(tiers, HRMT_TIER_SRAM);
    for (int l = 0; l < m->cfg.L_cycles && s == HRMT_OK; l++) {
        s = hrmt_level(m, m->L, m->cfg.L_layers, t->z.data, t->inj.data, n, &t->ws, 1);
        clk->level_calls++;
    }
    hrmt_tiers_scope_end(tiers, HRMT_TIER_SRAM);
    double t2 = hrmt_now_us();
    clk->level_us += t2 - t1;
    if (s != HRMT_OK) return s;
    s = hrmt_tiers_copy(tiers, &src, &dst);
    clk->out_us += hrmt_now_us() - t2;
    return s;
}

/* The context's thread count, or the tiling's team if larger. */
static int whole_team(const hrmt_model *m, const hrmt_tiling *tl) {
    const int t = hrmt_context_threads(m->ctx);
    return t > tl->team ? t : tl->team;
}

/* The L phase of one H cycle, tiles one per thread. Timings: the phase's wall
 * time, split between transfers and L-level work in the proportion the
 * threads spent on each. */
static hrmt_status l_phase_parallel(hrmt_model *m, hrmt_carry *c, const hrmt_tiling *tl,
                                    tile_set *sets, hrmt_step_timing *tm) {
    const long tiles = (long)tl->tiles;
    tile_clock sum = {0, 0, 0, 0};
    hrmt_status first = HRMT_OK;
    double parts0[HRMT_PART_COUNT] = {0};
    if (c->ws.part_us) memcpy(parts0, c->ws.part_us, sizeof parts0);
    double w0 = hrmt_now_us();
    /* The context's whole team, as every region (core/gemm.c's run_units
     * says why); the first tl->team threads (one tile set each) take tiles. */
    atomic_long next = 0;
#pragma omp parallel num_threads(whole_team(m, tl))
    {
        tile_clock clk = {0, 0, 0, 0};
        hrmt_status st = HRMT_OK;
        const int me = omp_get_thread_num();
        tile_set *set = me < tl->team ? &sets[me] : NULL;
        for (long i = set ? atomic_fetch_add(&next, 1) : tiles; i < tiles;
             i = atomic_fetch_add(&next, 1)) {
            size_t s0 = (size_t)i * tl->samples, B = (size_t)c->batch;
            size_t n = B - s0 < tl->samples ? B - s0 : tl->samples;
            if (st == HRMT_OK) st = run_tile(m, c, set, s0, n, &clk);
        }
#pragma omp critical(hrmt_l_phase)
        {
            sum.in_us += clk.in_us;
            sum.out_us += clk.out_us;
            sum.level_us += clk.level_us;
            sum.level_calls += clk.level_calls;
            if (first == HRMT_OK) first = st;
        }
    }
    double wall = hrmt_now_us() - w0, busy = sum.in_us + sum.out_us + sum.level_us;
    double f = busy > 0.0 ? wall / busy : 0.0;
    tm->h_to_l_transfer_us_total += sum.in_us * f;
    tm->l_to_h_transfer_us_total += sum.out_us * f;
    tm->l_level_us_total += sum.level_us * f;
    /* The tiles' parts were summed over the threads: scale them alike. */
    if (c->ws.part_us)
        for (int p = 0; p < HRMT_PART_COUNT; p++)
            c->ws.part_us[p] = parts0[p] + (c->ws.part_us[p] - parts0[p]) * f;
    tm->l_level_calls += sum.level_calls;
    tm->transfers += 2 * (int)tiles;
    if (first != HRMT_OK)
        return hrmt_fail(m->ctx, first, "tiered schedule: a tile failed (%s)",
                         hrmt_status_str(first));
    return HRMT_OK;
}

/* The same, tiles in turn with the whole team on each kernel. */
static hrmt_status l_phase_sequential(hrmt_model *m, hrmt_carry *c, const hrmt_tiling *tl,
                                      tile_set *set, hrmt_step_timing *tm) {
    hrmt_status s = HRMT_OK;
    for (size_t i = 0; i < tl->tiles && s == HRMT_OK; i++) {
        size_t s0 = i * tl->samples, B = (size_t)c->batch;
        size_t n = B - s0 < tl->samples ? B - s0 : tl->samples;
        tile_clock clk = {0, 0, 0, 0};
        s = run_tile(m, c, set, s0, n, &clk);
        tm->h_to_l_transfer_us_total += clk.in_us;
        tm->l_to_h_transfer_us_total += clk.out_us;
        tm->l_level_us_total += clk.level_us;
        tm->l_level_calls += clk.level_calls;
        tm->transfers += 2;
    }
    if (s != HRMT_OK)
        return hrmt_fail(m->ctx, s, "tiered schedule: a tile failed (%s)", hrmt_status_str(s));
    return HRMT_OK;
}

static hrmt_status tiered(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    hrmt_tiling tl = hrmt_tiling_for(m, c->batch);
    tile_set sets[HRMT_MAX_TILE_TEAM];
    int nsets = tl.parallel ? tl.team : 1;
    hrmt_status s = HRMT_OK;
    int made = 0;
    for (; made < nsets && s == HRMT_OK; made++) {
        memset(&sets[made], 0, sizeof sets[made]);
        s = alloc_tile(m, c, tl.samples, tl.parallel ? 1 : tl.team, made, &sets[made]);
    }
    if (s != HRMT_OK) made--; /* the failed set freed itself */
    for (int i = 0; i < made; i++) sets[i].ws.part_us = c->ws.part_us;
    for (int h = 0; h < m->cfg.H_cycles && s == HRMT_OK; h++) {
        s = tl.parallel ? l_phase_parallel(m, c, &tl, sets, tm)
                        : l_phase_sequential(m, c, &tl, &sets[0], tm);
        if (s == HRMT_OK) s = h_level(m, c, tm);
    }
    for (int i = 0; i < made; i++) free_tile(tiers, &sets[i]);
    return s;
}

hrmt_status hrmt_inner_forward(hrmt_model *m, hrmt_carry *c, hrmt_schedule sched,
                               hrmt_step_timing *tm) {
    return sched == HRMT_SCHEDULE_BASELINE ? baseline(m, c, tm) : tiered(m, c, tm);
}
