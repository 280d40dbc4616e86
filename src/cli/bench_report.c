/* `hrmt bench` output: JSON rows and text tables (see bench_run.h). */
#include <string.h>

#include "cli/bench_run.h"
#include "cli/json_out.h"
#include "cli/table.h"

static int add_stats(cJSON *o, const char *name, const cli_stats *s) {
    cJSON *j = cli_json_stats(s);
    if (!j) return -1;
    cJSON_AddItemToObject(o, name, j);
    return 0;
}

static cJSON *row_json(const cli_bench_row *r, const char *dtype, const char *isa, int threads) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int bad = !cJSON_AddStringToObject(o, "mode", cli_bench_mode_name(r->mode)) ||
              cli_json_add_num(o, "batch_size", r->batch_size) ||
              cli_json_add_num(o, "seq_len", r->seq_len) ||
              add_stats(o, "l_level_latency_us", &r->l_level_latency_us) ||
              add_stats(o, "h_level_latency_us", &r->h_level_latency_us) ||
              add_stats(o, "total_inference_latency_ms", &r->total_inference_latency_ms) ||
              cli_json_add_num(o, "h_over_l_latency_ratio", r->h_over_l_latency_ratio) ||
              cli_json_add_num(o, "sram_peak_mb", r->sram_peak_mb) ||
              cli_json_add_num(o, "dram_peak_mb", r->dram_peak_mb) ||
              cli_json_add_num(o, "total_memory_mb", r->total_memory_mb) ||
              cli_json_add_num(o, "h_l_transfer_mean_us", r->h_l_transfer_mean_us) ||
              cli_json_add_num(o, "l_h_transfer_mean_us", r->l_h_transfer_mean_us) ||
              cli_json_add_num(o, "sram_hit_rate", r->sram_hit_rate) ||
              cli_json_add_num(o, "memory_efficiency", r->memory_efficiency) ||
              cli_json_add_num(o, "sram_probe_latency_ns", r->sram_probe_latency_ns) ||
              cli_json_add_num(o, "dram_probe_latency_ns", r->dram_probe_latency_ns) ||
              cli_json_add_num(o, "tokens_per_s", r->tokens_per_s) ||
              cli_json_add_num(o, "gflops", r->gflops) ||
              cli_json_add_num(o, "gemm_peak_gflops", r->gemm_peak_gflops) ||
              cli_json_add_num(o, "gemm_peak_fraction", r->gemm_peak_fraction);
    if (!bad && r->has_parts) {
        cJSON *parts = cJSON_AddObjectToObject(o, "step_parts_ms");
        bad = !parts;
        for (int p = 0; !bad && p < HRMT_PART_COUNT; p++)
            bad = cli_json_add_num(parts, hrmt_step_part_name((hrmt_step_part)p), r->part_ms[p]);
    }
    if (!bad && r->has_speedup)
        bad = cli_json_add_num(o, "speedup_vs_baseline", r->speedup_vs_baseline);
    if (!bad && r->outputs_checked)
        bad = !cJSON_AddBoolToObject(o, "outputs_identical", r->outputs_identical);
    if (!bad)
        bad = !cJSON_AddStringToObject(o, "dtype", dtype) ||
              !cJSON_AddStringToObject(o, "isa", isa) || cli_json_add_num(o, "threads", threads);
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *cli_bench_json(const cli_bench_row *rows, size_t n, const char *dtype, const char *isa,
                      int threads) {
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *o = row_json(&rows[i], dtype, isa, threads);
        if (!o) {
            cJSON_Delete(arr);
            return NULL;
        }
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

#define NCELL 16
#define CELL 32

static void print_latency(const cli_bench_row *rows, size_t n, FILE *f) {
    static const char *const h[] = {"mode",       "batch",  "seq",     "L-level us",
                                    "H-level us", "H/L",    "step ms", "median ms",
                                    "min ms",     "max ms", "speedup"};
    static const cli_align al[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT};
    cli_table *t = cli_table_create(11, h, al);
    char c[NCELL][CELL];
    for (size_t i = 0; t && i < n; i++) {
        const cli_bench_row *r = &rows[i];
        snprintf(c[0], CELL, "%s", cli_bench_mode_name(r->mode));
        snprintf(c[1], CELL, "%d", r->batch_size);
        snprintf(c[2], CELL, "%d", r->seq_len);
        snprintf(c[3], CELL, "%.1f ± %.1f", r->l_level_latency_us.mean, r->l_level_latency_us.std);
        snprintf(c[4], CELL, "%.1f ± %.1f", r->h_level_latency_us.mean, r->h_level_latency_us.std);
        snprintf(c[5], CELL, "%.2f", r->h_over_l_latency_ratio);
        snprintf(c[6], CELL, "%.2f ± %.2f", r->total_inference_latency_ms.mean,
                 r->total_inference_latency_ms.std);
        snprintf(c[7], CELL, "%.2f", r->total_inference_latency_ms.median);
        snprintf(c[8], CELL, "%.2f", r->total_inference_latency_ms.min);
        snprintf(c[9], CELL, "%.2f", r->total_inference_latency_ms.max);
        if (r->has_speedup)
            snprintf(c[10], CELL, "%.2fx", r->speedup_vs_baseline);
        else
            snprintf(c[10], CELL, "-");
        const char *row[11];
        for (int k = 0; k < 11; k++) row[k] = c[k];
        cli_table_add_row(t, row);
    }
    if (t) cli_table_print(t, f);
    cli_table_destroy(t);
}

static void print_memory(const cli_bench_row *rows, size_t n, FILE *f) {
    static const char *const h[] = {"mode",    "batch",   "seq",     "tokens/s", "GFLOP/s",
                                    "of peak", "SRAM MB", "DRAM MB", "total MB", "SRAM hit",
                                    "H->L us", "L->H us", "mem eff"};
    cli_align al[13];
    for (int k = 0; k < 13; k++) al[k] = k ? CLI_ALIGN_RIGHT : CLI_ALIGN_LEFT;
    cli_table *t = cli_table_create(13, h, al);
    char c[NCELL][CELL];
    for (size_t i = 0; t && i < n; i++) {
        const cli_bench_row *r = &rows[i];
        snprintf(c[0], CELL, "%s", cli_bench_mode_name(r->mode));
        snprintf(c[1], CELL, "%d", r->batch_size);
        snprintf(c[2], CELL, "%d", r->seq_len);
        snprintf(c[3], CELL, "%.0f", r->tokens_per_s);
        snprintf(c[4], CELL, "%.1f", r->gflops);
        if (r->gemm_peak_gflops > 0) /* no host GEMM peak on a CUDA context */
            snprintf(c[5], CELL, "%.0f%%", 100.0 * r->gemm_peak_fraction);
        else
            snprintf(c[5], CELL, "-");
        snprintf(c[6], CELL, "%.2f", r->sram_peak_mb);
        snprintf(c[7], CELL, "%.2f", r->dram_peak_mb);
        snprintf(c[8], CELL, "%.2f", r->total_memory_mb);
        snprintf(c[9], CELL, "%.2f", r->sram_hit_rate);
        snprintf(c[10], CELL, "%.1f", r->h_l_transfer_mean_us);
        snprintf(c[11], CELL, "%.1f", r->l_h_transfer_mean_us);
        snprintf(c[12], CELL, "%.0f%%", 100.0 * r->memory_efficiency);
        const char *row[13];
        for (int k = 0; k < 13; k++) row[k] = c[k];
        cli_table_add_row(t, row);
    }
    if (t) cli_table_print(t, f);
    cli_table_destroy(t);
}

void cli_bench_print(const cli_bench_row *rows, size_t n, const cli_bench_machine *mach,
                     const char *dtype, const char *isa, int threads, const char *gpu, FILE *f) {
    char a[32], b[32];
    if (gpu) /* no host GEMM peak on a CUDA context (bench_run.c) */
        fprintf(f, "hrmt bench: %s, %s; probe latency %.2f ns at %s, %.1f ns at %s\n\n", gpu, dtype,
                mach->sram_probe_ns, cli_format_bytes(mach->sram_probe_bytes, a, 32),
                mach->dram_probe_ns, cli_format_bytes(mach->dram_probe_bytes, b, 32));
    else
        fprintf(f,
                "hrmt bench: ISA %s, %d thread%s, %s; GEMM peak %.1f GFLOP/s (%dx%dx%d); "
                "probe latency %.2f ns at %s, %.1f ns at %s\n\n",
                isa, threads, threads == 1 ? "" : "s", dtype, mach->gemm_peak_gflops, mach->gemm_m,
                mach->gemm_n, mach->gemm_k, mach->sram_probe_ns,
                cli_format_bytes(mach->sram_probe_bytes, a, 32), mach->dram_probe_ns,
                cli_format_bytes(mach->dram_probe_bytes, b, 32));
    fprintf(f, "Latency (mean ± std over iterations; L/H: one level call, step: one ACT step)\n");
    print_latency(rows, n, f);
    fprintf(f, "\nThroughput and memory tiers\n");
    print_memory(rows, n, f);
    size_t checked = 0, same = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].outputs_checked && rows[i].mode == CLI_MODE_TIERED) {
            checked++;
            same += rows[i].outputs_identical != 0;
        }
    if (checked == 0) return;
    if (same == checked)
        fprintf(f,
                "\ntiered vs baseline outputs (logits, q, z_H, z_L): byte-identical in all %zu "
                "configurations\n",
                checked);
    else
        fprintf(f, "\ntiered vs baseline outputs: DIFFERENT in %zu of %zu configurations\n",
                checked - same, checked);
}

void cli_bench_print_parts(const cli_bench_row *rows, size_t n, FILE *f) {
    enum { NC = 3 + HRMT_PART_COUNT + 1 };
    const char *h[NC];
    cli_align al[NC];
    h[0] = "mode", h[1] = "batch", h[2] = "step ms";
    for (int p = 0; p < HRMT_PART_COUNT; p++) h[3 + p] = hrmt_step_part_name((hrmt_step_part)p);
    h[NC - 1] = "rest";
    for (int k = 0; k < NC; k++) al[k] = k ? CLI_ALIGN_RIGHT : CLI_ALIGN_LEFT;
    size_t with = 0;
    for (size_t i = 0; i < n; i++) with += rows[i].has_parts != 0;
    if (with == 0) { /* CUDA: kernels run asynchronously to the host's clock */
        fprintf(f,
                "\nWhere the step goes: per-part timing is measured on CPU contexts only; on "
                "the GPU, bench/gpu_profile.sh times every kernel (ncu)\n");
        return;
    }
    cli_table *t = cli_table_create(NC, h, al);
    char c[NC][CELL];
    for (size_t i = 0; t && i < n; i++) {
        const cli_bench_row *r = &rows[i];
        if (!r->has_parts) continue;
        const double step = r->total_inference_latency_ms.mean;
        double left = step;
        snprintf(c[0], CELL, "%s", cli_bench_mode_name(r->mode));
        snprintf(c[1], CELL, "%d", r->batch_size);
        snprintf(c[2], CELL, "%.2f", step);
        for (int p = 0; p < HRMT_PART_COUNT; p++) {
            snprintf(c[3 + p], CELL, "%.2f %2.0f%%", r->part_ms[p],
                     step > 0 ? 100.0 * r->part_ms[p] / step : 0.0);
            left -= r->part_ms[p];
        }
        snprintf(c[NC - 1], CELL, "%.2f %2.0f%%", left, step > 0 ? 100.0 * left / step : 0.0);
        const char *row[NC];
        for (int k = 0; k < NC; k++) row[k] = c[k];
        cli_table_add_row(t, row);
    }
    fprintf(f,
            "\nWhere the step goes (ms per step and share; parts of tiles that run in parallel "
            "scaled to wall time; rest: copies, bookkeeping, waiting)\n");
    if (t) cli_table_print(t, f);
    cli_table_destroy(t);
}

void cli_bench_print_gemm_trace(const cli_bench_row *rows, size_t n, FILE *f) {
    enum { NC = 11 };
    static const char *const h[NC] = {"mode",    "batch",    "calls/step", "threads",
                                      "wall us", "wake us",  "pack us",    "units us",
                                      "tail us", "in units", "spread us"};
    cli_align al[NC];
    for (int k = 0; k < NC; k++) al[k] = k ? CLI_ALIGN_RIGHT : CLI_ALIGN_LEFT;
    cli_table *t = NULL;
    char c[NC][CELL];
    for (size_t i = 0; i < n; i++) {
        const cli_bench_row *r = &rows[i];
        const hrmt_gemm_trace_sums *g = &r->gemm_trace;
        if (!r->has_gemm_trace || !g->calls || !g->thread_slots || r->iterations < 1) continue;
        if (!t && !(t = cli_table_create(NC, h, al))) return;
        const double calls = (double)g->calls, slots = (double)g->thread_slots;
        snprintf(c[0], CELL, "%s", cli_bench_mode_name(r->mode));
        snprintf(c[1], CELL, "%d", r->batch_size);
        snprintf(c[2], CELL, "%.0f", calls / r->iterations);
        snprintf(c[3], CELL, "%.1f", slots / calls);
        snprintf(c[4], CELL, "%.1f", g->wall_us / calls);
        snprintf(c[5], CELL, "%.1f", g->wake_us / slots);
        snprintf(c[6], CELL, "%.1f", g->pack_us / slots);
        snprintf(c[7], CELL, "%.1f", g->busy_us / slots);
        snprintf(c[8], CELL, "%.1f", g->tail_us / slots);
        snprintf(c[9], CELL, "%.0f%%",
                 g->wall_us > 0 ? 100.0 * g->busy_us / (g->wall_us * slots / calls) : 0.0);
        snprintf(c[10], CELL, "%.1f", g->spread_us / calls);
        const char *row[NC];
        for (int k = 0; k < NC; k++) row[k] = c[k];
        cli_table_add_row(t, row);
    }
    if (!t) return;
    fprintf(f,
            "\nParallel GEMM calls (HRMT_GEMM_TRACE=1; per call: wall; per thread with units: "
            "waking, packing A with the team, inside units, idle at the end; in units: share "
            "of the threads' wall time; spread: last thread's finish minus the first's)\n");
    cli_table_print(t, f);
    cli_table_destroy(t);
}
