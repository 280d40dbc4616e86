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
 * (zH and x do not change inside the L loop), which gives the same bits. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/tiers.h"
#include "model/model.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* The H-level over the whole batch, from DRAM: zH = H(zH, zL). */
static hrmt_status h_level(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    double t0 = now_us();
    hrmt_tiers_scope_begin(tiers, HRMT_TIER_DRAM);
    hrmt_status s = hrmt_level(m, m->H, m->cfg.H_layers, c->zH, c->zL, (size_t)c->batch, &c->ws, 0);
    hrmt_tiers_scope_end(tiers, HRMT_TIER_DRAM);
    tm->h_level_us_total += now_us() - t0;
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
            double t0 = now_us();
            hrmt_tiers_scope_begin(tiers, HRMT_TIER_DRAM);
            hrmt_rows_add(m, c->zH, c->x, c->inj, rows);
            s = hrmt_level(m, m->L, cfg->L_layers, c->zL, c->inj, B, &c->ws, 0);
            hrmt_tiers_scope_end(tiers, HRMT_TIER_DRAM);
            tm->l_level_us_total += now_us() - t0;
            tm->l_level_calls++;
        }
        if (s == HRMT_OK) s = h_level(m, c, tm);
    }
    return s;
}

/* Samples per L-level tile: as many as fit the SRAM budget, at least one. */
size_t hrmt_tile_samples(const hrmt_model *m, int batch) {
    hrmt_context *ctx = m->ctx;
    size_t budget = hrmt_context_tile_plan(ctx)->l_tile_bytes;
    size_t cap = hrmt_tiers_sram_capacity(hrmt_context_tiers(ctx));
    if (cap && cap < budget) budget = cap;
    hrmt_level_ws probe;
    int threads = hrmt_context_threads(ctx) > 0 ? hrmt_context_threads(ctx) : 1;
    size_t fixed = hrmt_level_ws_layout(m, 0, threads, NULL, &probe);
    size_t per_sample =
        m->T * (2 * m->hidden * m->esz + hrmt_level_ws_row_bytes(m)) + (size_t)6 * 64;
    size_t n = budget > fixed ? (budget - fixed) / per_sample : 0;
    if (n < 1) n = 1;
    if (n > (size_t)batch) n = (size_t)batch;
    return n;
}

typedef struct tile_bufs {
    hrmt_tensor z, inj, scratch;
    int have_z, have_inj, have_scratch;
} tile_bufs;

static const char *const k_tile_z = "hrm.L_tile.z_L";
static const char *const k_tile_inj = "hrm.L_tile.injection";
static const char *const k_tile_ws = "hrm.L_tile.scratch";

static void free_tile(hrmt_tiers *tiers, tile_bufs *t) {
    if (t->have_z) hrmt_tiers_free(tiers, k_tile_z);
    if (t->have_inj) hrmt_tiers_free(tiers, k_tile_inj);
    if (t->have_scratch) hrmt_tiers_free(tiers, k_tile_ws);
    memset(t, 0, sizeof *t);
}

static hrmt_status alloc_tile(hrmt_model *m, size_t tile, tile_bufs *t, hrmt_level_ws *ws,
                              void *gemm_scratch, size_t gemm_scratch_bytes) {
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    int threads = hrmt_context_threads(m->ctx) > 0 ? hrmt_context_threads(m->ctx) : 1;
    size_t zs[2] = {tile * m->T, m->hidden};
    size_t ws_bytes = hrmt_level_ws_layout(m, tile * m->T, threads, NULL, ws);
    size_t ss[1] = {ws_bytes / sizeof(float)};
    hrmt_status s = hrmt_tiers_alloc_sram(tiers, k_tile_z, 2, zs, m->dt, &t->z);
    t->have_z = s == HRMT_OK;
    if (s == HRMT_OK) {
        s = hrmt_tiers_alloc_sram(tiers, k_tile_inj, 2, zs, m->dt, &t->inj);
        t->have_inj = s == HRMT_OK;
    }
    if (s == HRMT_OK) {
        s = hrmt_tiers_alloc_sram(tiers, k_tile_ws, 1, ss, HRMT_F32, &t->scratch);
        t->have_scratch = s == HRMT_OK;
    }
    if (s != HRMT_OK) {
        free_tile(tiers, t);
        return hrmt_fail(m->ctx, s, "tiered schedule: tier manager refused the L tile (%s)",
                         hrmt_status_str(s));
    }
    hrmt_level_ws_layout(m, tile * m->T, threads, t->scratch.data, ws);
    /* GEMM packing scratch stays in the carry (sized for both schedules). */
    ws->gemm_scratch = gemm_scratch;
    ws->gemm_scratch_bytes = gemm_scratch_bytes;
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

static hrmt_status tiered(hrmt_model *m, hrmt_carry *c, hrmt_step_timing *tm) {
    const hrmt_model_config *cfg = &m->cfg;
    hrmt_tiers *tiers = hrmt_context_tiers(m->ctx);
    size_t B = (size_t)c->batch, T = m->T;
    size_t tile = hrmt_tile_samples(m, c->batch);
    tile_bufs tb = {0};
    hrmt_level_ws ws;
    hrmt_status s = alloc_tile(m, tile, &tb, &ws, c->ws.gemm_scratch, c->ws.gemm_scratch_bytes);
    if (s != HRMT_OK) return s;
    for (int h = 0; h < cfg->H_cycles && s == HRMT_OK; h++) {
        for (size_t s0 = 0; s0 < B && s == HRMT_OK; s0 += tile) {
            size_t n = B - s0 < tile ? B - s0 : tile, r0 = s0 * T, rows = n * T;
            hrmt_tensor src = dram_rows(m, c->zL, r0, rows);
            hrmt_tensor dst = tb.z;
            dst.shape[0] = rows;
            /* DRAM -> SRAM: z_L of the tile, and the injection built in SRAM. */
            double t0 = now_us();
            s = hrmt_tiers_copy(tiers, &dst, &src);
            if (s != HRMT_OK) {
                s = hrmt_fail(m->ctx, s, "tiered schedule: tier copy failed");
                break;
            }
            hrmt_rows_add(m, (char *)c->zH + r0 * m->hidden * m->esz,
                          (char *)c->x + r0 * m->hidden * m->esz, tb.inj.data, rows);
            double t2 = now_us();
            tm->h_to_l_transfer_us_total += t2 - t0;
            tm->transfers++;
            hrmt_tiers_scope_begin(tiers, HRMT_TIER_SRAM);
            for (int l = 0; l < cfg->L_cycles && s == HRMT_OK; l++) {
                double t3 = now_us();
                s = hrmt_level(m, m->L, cfg->L_layers, tb.z.data, tb.inj.data, n, &ws, 1);
                tm->l_level_us_total += now_us() - t3;
                tm->l_level_calls++;
            }
            hrmt_tiers_scope_end(tiers, HRMT_TIER_SRAM);
            if (s != HRMT_OK) break;
            /* SRAM -> DRAM: the tile's new z_L. */
            double t4 = now_us();
            s = hrmt_tiers_copy(tiers, &src, &dst);
            tm->l_to_h_transfer_us_total += now_us() - t4;
            tm->transfers++;
            if (s != HRMT_OK) s = hrmt_fail(m->ctx, s, "tiered schedule: tier copy failed");
        }
        if (s == HRMT_OK) s = h_level(m, c, tm);
    }
    free_tile(tiers, &tb);
    return s;
}

hrmt_status hrmt_inner_forward(hrmt_model *m, hrmt_carry *c, hrmt_schedule sched,
                               hrmt_step_timing *tm) {
    return sched == HRMT_SCHEDULE_BASELINE ? baseline(m, c, tm) : tiered(m, c, tm);
}
