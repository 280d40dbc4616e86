/* Measurements behind `hrmt bench`: one row per (schedule, batch, seq). */
#ifndef HRMT_CLI_BENCH_RUN_H
#define HRMT_CLI_BENCH_RUN_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/bench_opts.h"
#include "cli/progress.h"
#include "cli/stats.h"
#include "core/gemm_trace.h"
#include "hrmt.h"

/* Measured once per run. */
typedef struct cli_bench_machine {
    double sram_probe_ns, dram_probe_ns;       /* pointer-chase latency */
    size_t sram_probe_bytes, dram_probe_bytes; /* working sets they were taken at */
    double gemm_peak_gflops;                   /* best hrmt_gemm rate, forward dtype */
    int gemm_m, gemm_n, gemm_k;
} cli_bench_machine;

typedef struct cli_bench_row {
    cli_bench_mode mode; /* TIERED or BASELINE */
    int batch_size, seq_len;
    cli_stats l_level_latency_us;         /* per iteration: mean time of one L-level call */
    cli_stats h_level_latency_us;         /* per iteration: mean time of one H-level call */
    cli_stats total_inference_latency_ms; /* wall time of one ACT step */
    double h_over_l_latency_ratio;        /* mean H-level / mean L-level */
    double sram_peak_mb, dram_peak_mb, total_memory_mb;
    double h_l_transfer_mean_us, l_h_transfer_mean_us;
    double sram_hit_rate;
    double memory_efficiency;
    double sram_probe_latency_ns, dram_probe_latency_ns;
    double tokens_per_s, gflops, gemm_peak_gflops, gemm_peak_fraction;
    int has_speedup;
    double speedup_vs_baseline; /* baseline mean step / tiered mean step */
    int outputs_checked, outputs_identical;
    int has_parts;                   /* CPU contexts: part_ms measured (CUDA: none) */
    double part_ms[HRMT_PART_COUNT]; /* mean per step (hrmt_step_timing.part_us) */
    int has_gemm_trace;              /* HRMT_GEMM_TRACE=1: the timed steps' GEMM thread times */
    hrmt_gemm_trace_sums gemm_trace; /* sums over the timed steps (iterations of them) */
    int iterations;
} cli_bench_row;

/* Probes the SRAM-tier (L1-sized) and beyond-L3 latencies and the GEMM peak
 * (M=656, N=1536, K=512: a batch-8 Sudoku activation times the MLP weights). */
hrmt_status cli_bench_measure_machine(hrmt_context *ctx, hrmt_dtype dtype, cli_bench_machine *out);

/* One schedule's timed steps over one or more runs (--rounds): the samples
 * and the sums a row is made from. Each run has its own carry, warm-up and
 * tier statistics, so that two schedules' runs may alternate (compare mode)
 * without one's tier traffic counted as the other's. */
typedef struct cli_bench_acc {
    hrmt_schedule schedule;
    size_t n, cap; /* samples so far, room */
    double *l_us, *h_us, *t_ms;
    double level_us, wall_us, part_us[HRMT_PART_COUNT];
    size_t sram_peak, dram_peak;
    uint64_t sram_transfers, dram_transfers, hits, misses;
    double sram_transfer_us, dram_transfer_us;
    int has_gemm_trace;
    hrmt_gemm_trace_sums gemm_trace;
} cli_bench_acc;

/* Room for `samples` timed steps of `schedule`. Errors: OUT_OF_MEMORY (with
 * a message in ctx). cli_bench_acc_free releases it (a zeroed acc too). */
hrmt_status cli_bench_acc_init(hrmt_context *ctx, cli_bench_acc *a, hrmt_schedule schedule,
                               size_t samples);
void cli_bench_acc_free(cli_bench_acc *a);

/* One run: a new carry warmed up `warmup` steps, the tier statistics reset,
 * then `iterations` timed ACT steps of `batch` samples with a->schedule,
 * appended to a (which must have room). */
hrmt_status cli_bench_run(hrmt_context *ctx, hrmt_model *m, int batch, int warmup, int iterations,
                          cli_progress *bar, cli_bench_acc *a);

/* The row of a's samples (at least one). */
hrmt_status cli_bench_row_of(hrmt_context *ctx, hrmt_model *m, int batch,
                             const cli_bench_machine *mach, const cli_bench_acc *a,
                             cli_bench_row *row);

/* Runs one ACT step of each schedule on the same inputs and compares logits,
 * q values, z_H and z_L byte for byte. *identical = 1 when all agree; else
 * `detail` says what differed first. Failures leave a message in ctx. */
hrmt_status cli_bench_check_identical(hrmt_context *ctx, hrmt_model *m, int batch, int *identical,
                                      char *detail, size_t detail_len);

/* The JSON array of rows (the seed's results.json shape). */
cJSON *cli_bench_json(const cli_bench_row *rows, size_t n, const char *dtype, const char *isa,
                      int threads);
/* The human-readable tables. gpu: NULL on the CPU (the header names the ISA,
 * threads and GEMM peak), else what the header says of the GPU run instead. */
void cli_bench_print(const cli_bench_row *rows, size_t n, const cli_bench_machine *mach,
                     const char *dtype, const char *isa, int threads, const char *gpu, FILE *f);
/* Where the step goes: ms per step of each hrmt_step_part, its share, and
 * what is left of the step (copies, bookkeeping, waiting). */
void cli_bench_print_parts(const cli_bench_row *rows, size_t n, FILE *f);
/* With HRMT_GEMM_TRACE=1: per row, where the parallel GEMM calls' time goes
 * across their threads (nothing when no row traced). */
void cli_bench_print_gemm_trace(const cli_bench_row *rows, size_t n, FILE *f);

#endif
