/* Tiered and baseline schedules give identical bytes for every output, on
 * every ISA (ctest runs this per HRMT_ISA), for batch 1, 3 and a batch that
 * needs several SRAM tiles; the tiered run's tile count and its tier-manager
 * statistics show that the L-level really ran per tile through SRAM. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "support/test_common.h"

typedef struct outs {
    float *logits, *qh, *qc, *zh, *zl;
    int32_t *halted;
} outs;

static outs outs_new(const hrmt_model *m, int B) {
    const hrmt_model_config *c = hrmt_model_get_config(m);
    size_t zn =
        (size_t)B * (size_t)(c->seq_len + hrmt_model_puzzle_len(m)) * (size_t)c->hidden_size;
    outs o = {calloc((size_t)B * (size_t)c->seq_len * (size_t)c->vocab_size, 4),
              calloc((size_t)B, 4),
              calloc((size_t)B, 4),
              calloc(zn, 4),
              calloc(zn, 4),
              calloc((size_t)B, 4)};
    cr_assert(o.logits && o.qh && o.qc && o.zh && o.zl && o.halted);
    return o;
}

static void outs_free(outs *o) {
    free(o->logits);
    free(o->qh);
    free(o->qc);
    free(o->zh);
    free(o->zl);
    free(o->halted);
}

static void expect_same(const void *a, const void *b, size_t bytes, const char *what, int step) {
    cr_expect_eq(memcmp(a, b, bytes), 0, "%s differs between schedules at step %d", what, step);
}

/* Every part of the forward was timed (each runs at least once per step) and
 * the parts, disjoint intervals of the step, add up to no more than it. */
static void expect_parts(const hrmt_step_timing *t, const char *sched) {
    double sum = 0.0;
    for (int p = 0; p < HRMT_PART_COUNT; p++) {
        const char *name = hrmt_step_part_name((hrmt_step_part)p);
        cr_assert_not_null(name);
        cr_expect_gt(t->part_us[p], 0.0, "%s: part %s not timed", sched, name);
        sum += t->part_us[p];
    }
    /* 1e-6 relative: the tiered parts are rescaled (wall / busy) in floating point. */
    cr_expect_leq(sum, t->step_us * (1.0 + 1e-6), "%s: parts %.3f us > step %.3f us", sched, sum,
                  t->step_us);
}

/* Runs `steps` ACT calls under both schedules from the initial carry. */
static void compare_schedules(hrmt_context *ctx, hrmt_model *m, int B, int steps, int want_tiles) {
    const hrmt_model_config *c = hrmt_model_get_config(m);
    size_t S = (size_t)c->seq_len,
           zn = (size_t)B * (S + (size_t)hrmt_model_puzzle_len(m)) * (size_t)c->hidden_size;
    int32_t *inputs = malloc((size_t)B * S * 4), *pids = malloc((size_t)B * 4);
    hrmt_test_rng rng = {(uint64_t)B * 7919u + 1};
    for (size_t i = 0; i < (size_t)B * S; i++)
        inputs[i] = (int32_t)((hrmt_test_uniform(&rng) + 1.0f) * 0.5f * (float)c->vocab_size) %
                    c->vocab_size;
    for (int i = 0; i < B; i++)
        pids[i] = c->num_puzzle_identifiers > 0 ? i % c->num_puzzle_identifiers : 0;
    hrmt_carry *ct = NULL, *cb = NULL;
    cr_assert_eq(hrmt_carry_create(m, B, &ct), HRMT_OK);
    cr_assert_eq(hrmt_carry_create(m, B, &cb), HRMT_OK);
    outs ot = outs_new(m, B), ob = outs_new(m, B);
    hrmt_step_outputs st = {ot.logits, ot.qh, ot.qc, ot.zh, ot.zl, ot.halted};
    hrmt_step_outputs sb = {ob.logits, ob.qh, ob.qc, ob.zh, ob.zl, ob.halted};
    hrmt_step_options tiered = {HRMT_SCHEDULE_TIERED, 0}, base = {HRMT_SCHEDULE_BASELINE, 0};
    hrmt_tiers *tiers = hrmt_context_tiers(ctx);
    for (int k = 0; k < steps; k++) {
        hrmt_step_timing tt, tb;
        hrmt_tiers_reset_stats(tiers);
        cr_assert_eq(hrmt_act_step(m, ct, inputs, pids, &tiered, &st, &tt), HRMT_OK, "%s",
                     hrmt_last_error(ctx));
        hrmt_tier_stats sram, dram;
        cr_assert_eq(hrmt_tiers_stats(tiers, HRMT_TIER_SRAM, &sram), HRMT_OK);
        cr_assert_eq(hrmt_tiers_stats(tiers, HRMT_TIER_DRAM, &dram), HRMT_OK);
        cr_assert_eq(hrmt_act_step(m, cb, inputs, pids, &base, &sb, &tb), HRMT_OK, "%s",
                     hrmt_last_error(ctx));
        expect_same(ot.logits, ob.logits, (size_t)B * S * (size_t)c->vocab_size * 4, "logits", k);
        expect_same(ot.qh, ob.qh, (size_t)B * 4, "q_halt", k);
        expect_same(ot.qc, ob.qc, (size_t)B * 4, "q_continue", k);
        expect_same(ot.zh, ob.zh, zn * 4, "z_H", k);
        expect_same(ot.zl, ob.zl, zn * 4, "z_L", k);
        expect_same(ot.halted, ob.halted, (size_t)B * 4, "halted", k);
        /* Baseline: one L call per (H, L) cycle over the batch; tiered: one per tile. */
        int lcalls = c->H_cycles * c->L_cycles;
        cr_expect_eq(tb.l_level_calls, lcalls);
        cr_expect_eq(tb.h_level_calls, c->H_cycles);
        cr_expect_eq(tb.transfers, 0);
        cr_expect_eq(tt.h_level_calls, c->H_cycles);
        cr_expect_eq(tt.l_level_calls % lcalls, 0);
        int tiles = tt.l_level_calls / lcalls;
        hrmt_tiling tl = hrmt_tiling_for(m, B);
        if (want_tiles > 0)
            cr_expect_eq(tiles, want_tiles, "tiles: %d, wanted %d", tiles, want_tiles);
        if (want_tiles < 0)
            cr_expect_gt(tiles, 1, "only %d tile: the SRAM tier was meant to force several", tiles);
        cr_log_info("batch %d: %d tile(s) of %zu, %s", B, tiles, tl.samples,
                    tl.parallel ? "one per thread" : "in turn");
        cr_expect_eq(tt.transfers, 2 * tiles * c->H_cycles);
        /* The tile buffers went through the tier manager, which counted them
         * and the z_L copies in and out of the tile. */
        cr_expect_eq((size_t)tiles, tl.tiles);
        uint64_t sets = tl.parallel ? (uint64_t)tl.team : 1;
        cr_expect_eq(sram.hit_count + sram.miss_count, 3 * sets, "3 tile buffers per tile slot");
        cr_expect_eq(sram.num_transfers + dram.num_transfers, (uint64_t)tt.transfers);
        cr_expect_eq(sram.current_alloc_bytes, 0, "tile buffers freed after the step");
        cr_expect_gt(tt.step_us, 0.0);
        cr_expect_geq(tt.step_us, tt.l_level_us_total + tt.h_level_us_total);
        expect_parts(&tb, "baseline");
        expect_parts(&tt, "tiered");
    }
    outs_free(&ot);
    outs_free(&ob);
    hrmt_carry_destroy(ct);
    hrmt_carry_destroy(cb);
    free(inputs);
    free(pids);
}

static hrmt_model_config odd_config(hrmt_dtype dt) {
    /* Odd sizes everywhere: 3 heads of 32, padded 2-row prefix, learned positions. */
    hrmt_model_config c = hrmt_model_config_default();
    c.hidden_size = 96;
    c.num_heads = 3;
    c.expansion = 2.5;
    c.H_layers = 1;
    c.L_layers = 2;
    c.H_cycles = 2;
    c.L_cycles = 2;
    c.seq_len = 17;
    c.vocab_size = 9;
    c.puzzle_emb_ndim = 150;
    c.num_puzzle_identifiers = 4;
    c.pos_encodings = HRMT_POS_LEARNED;
    c.halt_max_steps = 2;
    c.forward_dtype = dt;
    return c;
}

static void run_t(hrmt_dtype dt, int rope, size_t sram, int B, int want_tiles, int threads,
                  int want_parallel) {
    hrmt_context_options o = hrmt_context_default_options();
    o.sram_tier_bytes = sram;
    o.num_threads = threads;
    hrmt_context *ctx = hrmt_test_context_opts(&o);
    hrmt_model_config c = odd_config(dt);
    if (rope) {
        c.pos_encodings = HRMT_POS_ROPE;
        c.num_heads = 2; /* head_dim 48 */
        c.puzzle_emb_ndim = 0;
        c.seq_len = 30;
    }
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &c, 42, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    if (want_parallel >= 0)
        cr_expect_eq(hrmt_tiling_for(m, B).parallel, want_parallel, "tiles %s one per thread",
                     want_parallel ? "should run" : "should not run");
    compare_schedules(ctx, m, B, 2, want_tiles);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

static void run(hrmt_dtype dt, int rope, size_t sram, int B, int want_tiles) {
    run_t(dt, rope, sram, B, want_tiles, 0, -1);
}

Test(schedules, learned_bf16_batch1) { run(HRMT_BF16, 0, 0, 1, 1); }
Test(schedules, learned_bf16_batch3) { run(HRMT_BF16, 0, 0, 3, 0); }
Test(schedules, learned_f32_batch3) { run(HRMT_F32, 0, 0, 3, 0); }
Test(schedules, rope_bf16_batch3) { run(HRMT_BF16, 1, 0, 3, 0); }
Test(schedules, rope_f32_batch1) { run(HRMT_F32, 1, 0, 1, 1); }

/* A small SRAM tier forces tiles of a few samples: 7 samples, several tiles. */
Test(schedules, several_tiles_bf16) { run(HRMT_BF16, 0, 64 * 1024, 7, -1); }
Test(schedules, several_tiles_f32_rope) { run(HRMT_F32, 1, 96 * 1024, 5, -1); }

/* Both tile arrangements on purpose: 8 one-sample tiles on 2 threads run one
 * per thread; 7 on 2 run in turn; 3 threads on 6 tiles; 1 thread. */
Test(schedules, tiles_one_per_thread) { run_t(HRMT_BF16, 0, 64 * 1024, 8, 8, 2, 1); }
Test(schedules, tiles_in_turn) { run_t(HRMT_BF16, 0, 64 * 1024, 7, 7, 2, 0); }
Test(schedules, tiles_three_threads) { run_t(HRMT_F32, 1, 96 * 1024, 6, -1, 3, 1); }
/* 3 one-sample tiles on 4 threads: one per thread on 3 of them (the same
 * bytes as the baseline, 3 tile slots). */
Test(schedules, tiles_on_part_of_the_team) {
    hrmt_context_options o = hrmt_context_default_options();
    o.sram_tier_bytes = 64 * 1024;
    o.num_threads = 4;
    hrmt_context *ctx = hrmt_test_context_opts(&o);
    hrmt_model_config c = odd_config(HRMT_BF16);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &c, 42, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    const hrmt_tiling tl = hrmt_tiling_for(m, 3);
    cr_expect_eq(tl.parallel, 1, "3 tiles on 4 threads should run one per thread");
    cr_expect_eq(tl.team, 3, "team of %d for 3 tiles", tl.team);
    compare_schedules(ctx, m, 3, 2, 3);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}
Test(schedules, tiles_single_thread) { run_t(HRMT_BF16, 1, 64 * 1024, 4, -1, 1, 0); }

/* The golden tiny-rope model at batch 5 with a tier that holds 2 samples. */
Test(schedules, golden_model_several_tiles) {
    hrmt_context_options o = hrmt_context_default_options();
    o.sram_tier_bytes = 640 * 1024;
    hrmt_context *ctx = hrmt_test_context_opts(&o);
    hrmt_model_config cfg;
    cr_assert_eq(
        hrmt_model_config_load_json(ctx, hrmt_test_data("golden/hrm/tiny-rope/case.json"), &cfg),
        HRMT_OK);
    hrmt_model *m = NULL;
    cr_assert_eq(
        hrmt_model_load(ctx, hrmt_test_data("golden/hrm/tiny-rope/model.safetensors"), &cfg, &m),
        HRMT_OK, "%s", hrmt_last_error(ctx));
    compare_schedules(ctx, m, 5, 2, -1);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

Test(schedules, step_part_names) {
    cr_expect_str_eq(hrmt_step_part_name(HRMT_PART_EMBED), "embed");
    cr_expect_str_eq(hrmt_step_part_name(HRMT_PART_HEADS), "heads");
    cr_expect_null(hrmt_step_part_name(HRMT_PART_COUNT));
    cr_expect_null(hrmt_step_part_name((hrmt_step_part)-1));
}
