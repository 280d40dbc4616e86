/* Output of `hrmt probe`: table, JSON, tier comparison and gnuplot chart. */
#ifndef HRMT_CLI_PROBE_REPORT_H
#define HRMT_CLI_PROBE_REPORT_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "cli/probe_opts.h"
#include "cli/probe_sweep.h"
#include "cli/user_files.h"

/* {"device", ["device_name" (GPU)], "latency":[{"bytes","ns","device","tier"}...],
 *  "bandwidth":[{"bytes","read_gbps","write_gbps","copy_gbps","device","tier"}...],
 *  "levels":[{"name","device","kind" (cache|shared|main),"level","size_bytes",
 *             "probe_bytes","measured","ns","bandwidth_probe_bytes",
 *             "bandwidth_measured","read_gbps","write_gbps","copy_gbps",...}...]}
 * (unmeasured values are null). topo is unused (the result has its tiers). */
cJSON *cli_probe_json(const cli_probe_result *r, const hrmt_topology *topo);
/* Reads cli_probe_json's output back into r (for --input); -1 with a message
 * naming the missing or malformed field. */
int cli_probe_from_json(const cJSON *j, cli_probe_result *r, char *err, size_t errlen);
/* --compare --json: {"cpu": {...}, "gpu": {...} or null, "gpu_unavailable": why}. */
cJSON *cli_probe_compare_json(const cli_probe_result *cpu, const hrmt_topology *topo,
                              const cli_probe_result *gpu, const char *gpu_note);

/* The sweep table (one row per working set) and the tier table. */
void cli_probe_print(const cli_probe_result *r, const hrmt_topology *topo, FILE *f);

/* CPU tiers beside GPU tiers (name, capacity, latency, read GB/s of each),
 * caches paired rank by rank from the fastest, main memory in the last row;
 * gpu NULL prints the GPU column as unavailable with `gpu_note` saying why. */
void cli_probe_print_compare(const cli_probe_result *cpu, const cli_probe_result *gpu,
                             const char *gpu_note, FILE *f);

/* 0 when gnuplot is on PATH; else -1 with what to do in err. */
int cli_probe_plot_available(char *err, size_t errlen);

/* Renders latency and bandwidth against working-set size with gnuplot (found on
 * PATH) into `out` (opened by cli_output_open; ended here, and removed when
 * the plot fails). -1 with a message in err when gnuplot is missing or fails. */
int cli_probe_plot(const cli_probe_result *r, const hrmt_topology *topo, cli_output *out,
                   cli_plot_format fmt, char *err, size_t errlen);
/* Both devices' latency and bandwidth curves in one chart (GPU shared memory
 * as a marked point); gpu NULL plots the CPU alone, `gpu_note` in the title. */
int cli_probe_plot_compare(const cli_probe_result *cpu, const cli_probe_result *gpu,
                           const char *gpu_note, cli_output *out, cli_plot_format fmt, char *err,
                           size_t errlen);

#endif
