/* `hrmt bench` measurements (see bench_run.h).
 *
 * Definitions used in every row (also in the README):
 *  - l_level_latency_us: per timed iteration, the L-level time of the ACT step
 *    divided by its number of L-level calls (hrmt_step_timing); the stats are
 *    over iterations. h_level_latency_us likewise for the H-level.
 *  - total_inference_latency_ms: wall-clock time of one hrmt_act_step call.
 *  - memory_efficiency: time inside L- and H-level compute (the levels' own
 *    timers, which exclude embedding, tier transfers, the output heads and ACT
 *    bookkeeping) divided by the wall time of the steps, over all iterations.
 *  - sram_peak_mb / dram_peak_mb: the tier manager's peak bytes per tier over
 *    the timed iterations (peak starts at the bytes live when stats are reset);
 *    total_memory_mb is their sum, an upper bound on the simultaneous peak.
 *  - h_l_transfer_mean_us / l_h_transfer_mean_us: the tier manager's mean
 *    transfer time out of DRAM (H -> L) and out of SRAM (L -> H).
 *  - sram_hit_rate: the SRAM tier's hits / (hits + misses).
 *  - tokens_per_s: batch * seq_len / mean step time; gflops: the model's
 *    matrix-product FLOPs of one step / mean step time; gemm_peak_fraction:
 *    gflops / gemm_peak_gflops. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "cli/bench_run.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/probe_sweep.h"
#include "core/context.h" /* hrmt_fail */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static uint64_t xorshift(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* ---- machine: probes and GEMM peak ---------------------------------------- */

static hrmt_status gemm_peak(hrmt_context *ctx, hrmt_dtype dt, cli_bench_machine *out) {
    const size_t M = 656, N = 1536, K = 512;
    const size_t es = hrmt_dtype_size(dt);
    hrmt_status s = HRMT_OK;
    void *a = calloc(M * K, es), *w = calloc(N * K, es), *c = calloc(M * N, es);
    hrmt_packed_w *pw = NULL;
    if (!a || !w || !c) {
        /* The constant, not hrmt_fail's value: the analyzer then knows s is an error. */
        (void)hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY,
                        "GEMM peak probe: no memory for its %zux%zux%zu matrices (%.1f MiB)", M, N,
                        K, (double)((M * K + N * K + M * N) * es) / 1048576.0);
        s = HRMT_ERR_OUT_OF_MEMORY;
        goto done;
    }
    /* Small values whose BF16 form is exact: 1/8 steps in [-1, 1). */
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < M * K + N * K; i++) {
        float v = (float)((int)(xorshift(&seed) % 16) - 8) / 8.0f;
        void *base = i < M * K ? a : w;
        size_t j = i < M * K ? i : i - M * K;
        if (dt == HRMT_BF16) {
            uint32_t bits;
            memcpy(&bits, &v, 4);
            ((uint16_t *)base)[j] = (uint16_t)(bits >> 16);
        } else
            ((float *)base)[j] = v;
    }
    hrmt_tensor ta, tw, tc;
    size_t sa[2] = {M, K}, sw[2] = {N, K}, sc[2] = {M, N};
    if ((s = hrmt_tensor_init(&ta, a, dt, 2, sa)) || (s = hrmt_tensor_init(&tw, w, dt, 2, sw)) ||
        (s = hrmt_tensor_init(&tc, c, dt, 2, sc)) || (s = hrmt_gemm_pack_w(ctx, &tw, &pw)))
        goto done;
    /* Best of many calls (at least 8 and 0.3 s, the first one discarded as a
     * warm-up): other processes only ever slow a call down, so the fastest
     * one is the closest to what the machine can do. */
    double best_us = 0.0, spent_us = 0.0;
    for (int rep = 0; rep < 200 && (rep < 9 || spent_us < 3e5); rep++) {
        double t0 = now_us();
        if ((s = hrmt_gemm_packed(ctx, &ta, pw, &tc, 0)) != HRMT_OK) goto done;
        double call_us = now_us() - t0;
        spent_us += call_us;
        if (rep > 0 && (best_us == 0.0 || call_us < best_us)) best_us = call_us;
    }
    out->gemm_m = (int)M;
    out->gemm_n = (int)N;
    out->gemm_k = (int)K;
    out->gemm_peak_gflops = 2.0 * (double)M * (double)N * (double)K / (best_us * 1e3);
done:
    hrmt_packed_w_destroy(pw);
    free(a);
    free(w);
    free(c);
    return s;
}

hrmt_status cli_bench_measure_machine(hrmt_context *ctx, hrmt_dtype dtype, cli_bench_machine *out) {
    cli_bench_machine m;
    memset(&m, 0, sizeof m);
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    hrmt_status s = cli_probe_tier_latency(ctx, 0, &m.sram_probe_bytes, &m.sram_probe_ns);
    if (s == HRMT_OK)
        s = cli_probe_tier_latency(ctx, topo->num_levels, &m.dram_probe_bytes, &m.dram_probe_ns);
    /* The GEMM peak is a host packed-W measurement; a CUDA context has no
     * packed W, so its peak (and gemm_peak_fraction) reads 0. */
    if (s == HRMT_OK && hrmt_context_backend(ctx) == HRMT_BACKEND_CPU)
        s = gemm_peak(ctx, dtype, &m);
    if (s == HRMT_OK) *out = m;
    return s;
}

/* ---- one model step, its buffers and inputs -------------------------------- */

typedef struct step_io {
    int32_t *inputs, *puzzle_ids, *halted;
    float *logits, *q_halt, *q_cont, *zH, *zL;
    size_t n_logits, n_z;
} step_io;

static void io_free(step_io *io) {
    free(io->inputs);
    free(io->puzzle_ids);
    free(io->halted);
    free(io->logits);
    free(io->q_halt);
    free(io->q_cont);
    free(io->zH);
    free(io->zL);
    memset(io, 0, sizeof *io);
}

/* Buffers for `batch` samples and deterministic inputs (same for every call). */
static hrmt_status io_alloc(hrmt_context *ctx, const hrmt_model *m, int batch, int want_z,
                            step_io *io) {
    memset(io, 0, sizeof *io);
    const hrmt_model_config *c = hrmt_model_get_config(m);
    size_t B = (size_t)batch, S = (size_t)c->seq_len;
    size_t T = S + (size_t)hrmt_model_puzzle_len(m);
    io->n_logits = B * S * (size_t)c->vocab_size;
    io->n_z = B * T * (size_t)c->hidden_size;
    io->inputs = malloc(B * S * sizeof *io->inputs);
    io->puzzle_ids = malloc(B * sizeof *io->puzzle_ids);
    io->halted = malloc(B * sizeof *io->halted);
    io->logits = malloc(io->n_logits * sizeof *io->logits);
    io->q_halt = malloc(B * sizeof(float));
    io->q_cont = malloc(B * sizeof(float));
    if (want_z) {
        io->zH = malloc(io->n_z * sizeof(float));
        io->zL = malloc(io->n_z * sizeof(float));
    }
    if (!io->inputs || !io->puzzle_ids || !io->halted || !io->logits || !io->q_halt ||
        !io->q_cont || (want_z && (!io->zH || !io->zL))) {
        double mib = (double)((B * S + 3 * B + io->n_logits) * 4 + (want_z ? 2 * io->n_z * 4 : 0)) /
                     1048576.0;
        io_free(io);
        (void)hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY,
                        "batch %d, seq %zu: no memory for one step's inputs and outputs "
                        "(%.1f MiB); use smaller --batch-sizes or --seq-lens",
                        batch, S, mib);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    uint64_t seed = 0xD1B54A32D192ED03ull;
    int vocab = c->vocab_size > 1 ? c->vocab_size : 2;
    for (size_t i = 0; i < B * S; i++)
        io->inputs[i] = 1 + (int32_t)(xorshift(&seed) % (uint64_t)(vocab - 1)); /* no pad */
    int ids = c->num_puzzle_identifiers > 0 ? c->num_puzzle_identifiers : 1;
    for (size_t b = 0; b < B; b++) io->puzzle_ids[b] = (int32_t)(xorshift(&seed) % (uint64_t)ids);
    return HRMT_OK;
}

static hrmt_status step(hrmt_model *m, hrmt_carry *carry, hrmt_schedule sched, step_io *io,
                        hrmt_step_timing *timing) {
    hrmt_step_options so;
    memset(&so, 0, sizeof so);
    so.schedule = sched;
    hrmt_step_outputs outs = {io->logits, io->q_halt, io->q_cont, io->zH, io->zL, io->halted};
    return hrmt_act_step(m, carry, io->inputs, io->puzzle_ids, &so, &outs, timing);
}

/* ---- timing ----------------------------------------------------------------- */

hrmt_status cli_bench_acc_init(hrmt_context *ctx, cli_bench_acc *a, hrmt_schedule schedule,
                               size_t samples) {
    memset(a, 0, sizeof *a);
    a->schedule = schedule;
    a->l_us = malloc(samples * sizeof *a->l_us);
    a->h_us = malloc(samples * sizeof *a->h_us);
    a->t_ms = malloc(samples * sizeof *a->t_ms);
    if (!a->l_us || !a->h_us || !a->t_ms) {
        cli_bench_acc_free(a);
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY,
                         "no memory for the timings of %zu steps; use fewer --iterations or "
                         "--rounds",
                         samples);
    }
    a->cap = samples;
    return HRMT_OK;
}

void cli_bench_acc_free(cli_bench_acc *a) {
    free(a->l_us);
    free(a->h_us);
    free(a->t_ms);
    a->l_us = a->h_us = a->t_ms = NULL;
    a->n = a->cap = 0;
}

/* The run's tier statistics added to a's. */
static hrmt_status add_tier_stats(hrmt_tiers *tiers, cli_bench_acc *a) {
    hrmt_tier_stats sram, dram;
    hrmt_status s = hrmt_tiers_stats(tiers, HRMT_TIER_SRAM, &sram);
    if (s == HRMT_OK) s = hrmt_tiers_stats(tiers, HRMT_TIER_DRAM, &dram);
    if (s != HRMT_OK) return s;
    if (sram.peak_alloc_bytes > a->sram_peak) a->sram_peak = sram.peak_alloc_bytes;
    if (dram.peak_alloc_bytes > a->dram_peak) a->dram_peak = dram.peak_alloc_bytes;
    a->sram_transfers += sram.num_transfers;
    a->sram_transfer_us += sram.total_transfer_us;
    a->dram_transfers += dram.num_transfers;
    a->dram_transfer_us += dram.total_transfer_us;
    a->hits += sram.hit_count;
    a->misses += sram.miss_count;
    return HRMT_OK;
}

static void add_gemm_trace(hrmt_gemm_trace_sums *to, const hrmt_gemm_trace_sums *x) {
    to->calls += x->calls;
    to->thread_slots += x->thread_slots;
    to->units += x->units;
    to->wall_us += x->wall_us;
    to->wake_us += x->wake_us;
    to->pack_us += x->pack_us;
    to->busy_us += x->busy_us;
    to->tail_us += x->tail_us;
    to->spread_us += x->spread_us;
}

hrmt_status cli_bench_run(hrmt_context *ctx, hrmt_model *m, int batch, int warmup, int iterations,
                          cli_progress *bar, cli_bench_acc *a) {
    hrmt_tiers *tiers = hrmt_context_tiers(ctx);
    const hrmt_model_config *cfg = hrmt_model_get_config(m);
    if (iterations < 1 || (size_t)iterations > a->cap - a->n)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG,
                         "bench: %d more timed steps do not fit the %zu left", iterations,
                         a->cap - a->n);
    step_io io;
    hrmt_carry *carry = NULL;
    hrmt_status s = io_alloc(ctx, m, batch, 0, &io);
    if (s == HRMT_OK) s = hrmt_carry_create(m, batch, &carry);
    if (s != HRMT_OK) goto done;

    char label[64];
    snprintf(label, sizeof label, "%s b=%d s=%d",
             a->schedule == HRMT_SCHEDULE_TIERED ? "tiered" : "baseline", batch, cfg->seq_len);
    for (int i = 0; i < warmup; i++) {
        if ((s = step(m, carry, a->schedule, &io, NULL)) != HRMT_OK) goto done;
        cli_progress_advance(bar, 1, label);
    }
    hrmt_tiers_reset_stats(tiers);
    (void)hrmt_gemm_trace_read(ctx, NULL, 1);
    for (int i = 0; i < iterations; i++) {
        hrmt_step_timing tm;
        memset(&tm, 0, sizeof tm);
        double t0 = now_us();
        if ((s = step(m, carry, a->schedule, &io, &tm)) != HRMT_OK) goto done;
        double wall = now_us() - t0;
        a->l_us[a->n] = tm.l_level_calls ? tm.l_level_us_total / tm.l_level_calls : 0.0;
        a->h_us[a->n] = tm.h_level_calls ? tm.h_level_us_total / tm.h_level_calls : 0.0;
        a->t_ms[a->n] = wall / 1e3;
        a->n++;
        a->level_us += tm.l_level_us_total + tm.h_level_us_total;
        for (int p = 0; p < HRMT_PART_COUNT; p++) a->part_us[p] += tm.part_us[p];
        a->wall_us += wall;
        cli_progress_advance(bar, 1, label);
    }
    if ((s = add_tier_stats(tiers, a)) != HRMT_OK) goto done;
    hrmt_gemm_trace_sums g;
    if (hrmt_gemm_trace_read(ctx, &g, 1)) {
        a->has_gemm_trace = 1;
        add_gemm_trace(&a->gemm_trace, &g);
    }
done:
    hrmt_carry_destroy(carry);
    io_free(&io);
    return s;
}

hrmt_status cli_bench_row_of(hrmt_context *ctx, hrmt_model *m, int batch,
                             const cli_bench_machine *mach, const cli_bench_acc *a,
                             cli_bench_row *row) {
    const hrmt_model_config *cfg = hrmt_model_get_config(m);
    const size_t n = a->n;
    cli_bench_row r;
    memset(&r, 0, sizeof r);
    r.mode = a->schedule == HRMT_SCHEDULE_TIERED ? CLI_MODE_TIERED : CLI_MODE_BASELINE;
    r.batch_size = batch;
    r.seq_len = cfg->seq_len;
    if (n == 0) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "bench: no timed steps to summarise");
    if (cli_stats_compute(a->l_us, n, &r.l_level_latency_us) ||
        cli_stats_compute(a->h_us, n, &r.h_level_latency_us) ||
        cli_stats_compute(a->t_ms, n, &r.total_inference_latency_ms))
        return hrmt_fail(ctx, HRMT_ERR_NONFINITE, "timings are not finite");
    const double mb = 1.0 / (1024.0 * 1024.0);
    r.h_over_l_latency_ratio =
        r.l_level_latency_us.mean > 0 ? r.h_level_latency_us.mean / r.l_level_latency_us.mean : 0.0;
    r.sram_peak_mb = (double)a->sram_peak * mb;
    r.dram_peak_mb = (double)a->dram_peak * mb;
    r.total_memory_mb = r.sram_peak_mb + r.dram_peak_mb;
    /* The tier manager's means over every run: transfers out of DRAM
     * (H -> L) and out of SRAM (L -> H). */
    r.h_l_transfer_mean_us =
        a->dram_transfers ? a->dram_transfer_us / (double)a->dram_transfers : 0;
    r.l_h_transfer_mean_us =
        a->sram_transfers ? a->sram_transfer_us / (double)a->sram_transfers : 0;
    r.sram_hit_rate = a->hits + a->misses ? (double)a->hits / (double)(a->hits + a->misses) : 0.0;
    r.memory_efficiency = a->wall_us > 0 ? a->level_us / a->wall_us : 0.0;
    r.has_parts = hrmt_context_backend(ctx) == HRMT_BACKEND_CPU;
    for (int p = 0; p < HRMT_PART_COUNT; p++) r.part_ms[p] = a->part_us[p] / 1e3 / (double)n;
    r.has_gemm_trace = a->has_gemm_trace;
    r.gemm_trace = a->gemm_trace;
    r.iterations = (int)n;
    r.sram_probe_latency_ns = mach->sram_probe_ns;
    r.dram_probe_latency_ns = mach->dram_probe_ns;
    double step_s = r.total_inference_latency_ms.mean / 1e3;
    r.tokens_per_s = (double)batch * (double)cfg->seq_len / step_s;
    r.gflops = hrmt_model_step_flops(m, batch) / step_s / 1e9;
    r.gemm_peak_gflops = mach->gemm_peak_gflops;
    r.gemm_peak_fraction = mach->gemm_peak_gflops > 0 ? r.gflops / mach->gemm_peak_gflops : 0.0;
    *row = r;
    return HRMT_OK;
}

/* ---- tiered == baseline ------------------------------------------------------ */

/* Index of the first float whose bits differ, or n when all are identical
 * (bits, not values: -0.0 vs 0.0 or two NaNs must count as they are stored). */
static size_t first_diff(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t x, y;
        memcpy(&x, &a[i], sizeof x);
        memcpy(&y, &b[i], sizeof y);
        if (x != y) return i;
    }
    return n;
}

hrmt_status cli_bench_check_identical(hrmt_context *ctx, hrmt_model *m, int batch, int *identical,
                                      char *detail, size_t detail_len) {
    step_io a, b;
    hrmt_carry *ca = NULL, *cb = NULL;
    hrmt_status s = io_alloc(ctx, m, batch, 1, &a);
    if (s == HRMT_OK)
        s = io_alloc(ctx, m, batch, 1, &b);
    else
        memset(&b, 0, sizeof b);
    if (s == HRMT_OK) s = hrmt_carry_create(m, batch, &ca);
    if (s == HRMT_OK) s = hrmt_carry_create(m, batch, &cb);
    if (s == HRMT_OK) s = step(m, ca, HRMT_SCHEDULE_TIERED, &a, NULL);
    if (s == HRMT_OK) s = step(m, cb, HRMT_SCHEDULE_BASELINE, &b, NULL);
    if (s == HRMT_OK) {
        const struct {
            const char *name;
            const float *x, *y;
            size_t n;
        } cmp[] = {{"logits", a.logits, b.logits, a.n_logits},
                   {"q_halt_logits", a.q_halt, b.q_halt, (size_t)batch},
                   {"q_continue_logits", a.q_cont, b.q_cont, (size_t)batch},
                   {"z_H", a.zH, b.zH, a.n_z},
                   {"z_L", a.zL, b.zL, a.n_z}};
        *identical = 1;
        snprintf(detail, detail_len, "logits, q, z_H and z_L byte-identical");
        for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++) {
            size_t i = first_diff(cmp[k].x, cmp[k].y, cmp[k].n);
            if (i < cmp[k].n) {
                *identical = 0;
                snprintf(detail, detail_len, "%s[%zu] differs: tiered %.9g, baseline %.9g",
                         cmp[k].name, i, (double)cmp[k].x[i], (double)cmp[k].y[i]);
                break;
            }
        }
    }
    hrmt_carry_destroy(ca);
    hrmt_carry_destroy(cb);
    io_free(&a);
    io_free(&b);
    return s;
}
