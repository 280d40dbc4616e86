/* The memory-tier map behind `hrmt probe`: latency and bandwidth over a range
 * of working-set sizes, and one latency "plateau" (plus the bandwidth) per
 * tier. Rows carry a device name so GPU tiers (shared memory, L1, L2, HBM) can
 * sit beside the CPU's in the same table and JSON.
 *
 * On a CUDA context the sweep runs hrmt_probe_latency / hrmt_probe_bandwidth
 * on the device (one thread's chase; every SM streaming its share of the set)
 * and the tiers are SMEM, L1, L2, HBM from the device's own capacities
 * (core/probe_gpu.h); SMEM is measured by its own kernels, outside the sweep. */
#ifndef HRMT_CLI_PROBE_SWEEP_H
#define HRMT_CLI_PROBE_SWEEP_H

#include <stddef.h>

#include "cli/progress.h"
#include "hrmt.h"

#define CLI_PROBE_MAX_POINTS 128
#define CLI_PROBE_MAX_TIERS (HRMT_MAX_CACHE_LEVELS + 1)
#define CLI_PROBE_TIER_TRIALS 3 /* plateau latency = fastest of this many */

typedef struct cli_probe_point {
    size_t bytes;
    double ns;         /* latency per dependent load */
    hrmt_bandwidth bw; /* GB/s */
} cli_probe_point;

typedef struct cli_probe_tier {
    char name[8];           /* "L1", "L2", "L3", "DRAM"; GPU: "SMEM", "L1", "L2", "HBM" */
    int level;              /* cache level; 0 for main memory (GPU SMEM: 1, beside L1) */
    size_t size_bytes;      /* capacity (main memory: physical RAM / device memory;
                               SMEM: shared memory per SM; GPU L1: the unified array per SM) */
    size_t probe_bytes;     /* working set at which the plateau was measured */
    double ns;              /* plateau latency (valid when measured) */
    int measured;           /* 0: its point lies beyond --max-bytes, so it was not timed */
    size_t effective_bytes; /* caches: this core's effective share (hrmt_topology_effective) */
    /* Largest sweep size whose latency is nearer this plateau than the next
     * one (geometric midpoint); 0 when the sweep cannot tell. */
    size_t plateau_end_bytes;
    int capped; /* main memory: the point was held below 2x the largest cache
                   (GPU: 4x L2) by free memory */
    int shared; /* GPU shared memory: its own kernels, not part of the sweep */
    /* Bandwidth at bw_probe_bytes (CPU: the latency point, split over the
     * threads; GPU: a set whose per-SM share sits in this tier; SMEM: every
     * SM's shared memory); bw_measured 0 when beyond --max-bytes. */
    size_t bw_probe_bytes;
    hrmt_bandwidth bw;
    int bw_measured;
} cli_probe_tier;

typedef struct cli_probe_result {
    const char *device;    /* "cpu" or "cuda" */
    char device_name[256]; /* GPU: the device's name; CPU: "" */
    cli_probe_point points[CLI_PROBE_MAX_POINTS];
    size_t n_points;
    cli_probe_tier tiers[CLI_PROBE_MAX_TIERS];
    size_t n_tiers;
    /* A sweep size's tier: the first bound_names[i] with bytes <= bounds[i],
     * else main_name (see cli_probe_point_tier). */
    size_t bounds[CLI_PROBE_MAX_TIERS];
    const char *bound_names[CLI_PROBE_MAX_TIERS];
    size_t n_bounds;
    const char *main_name;
    const char *source; /* where the capacities come from (for the table's note) */
} cli_probe_result;

/* Working-set sizes in [min_bytes, max_bytes]: powers of two and their
 * midpoints (1.5 * 2^k), or in quick mode every second power of two (plus
 * max_bytes itself when it would be skipped). Returns the count. */
size_t cli_probe_sizes(size_t min_bytes, size_t max_bytes, int quick, size_t *out, size_t cap);

/* Working set at which a tier's plateau is measured. L1: half its capacity.
 * Other caches: 1.5x the previous level's capacity (capped at the tier's own),
 * the smallest size that no longer stays in the level above. Not deeper: under
 * a VM or cache partitioning a process may get far less L3 than the topology
 * reports, and a point deep in the nominal L3 then measures main memory. Main
 * memory: 2.25x the largest claimed cache (beyond any cache, whatever a VM
 * claims), at least 64 MiB, at most a quarter of the available memory. */
size_t cli_probe_tier_point(const hrmt_topology *topo, int tier_index);
/* 1 when the main-memory point had to stay below 2x the largest claimed cache
 * because this machine's free memory does not allow more. */
int cli_probe_dram_capped(const hrmt_topology *topo);

/* Name of the tier a working set of `bytes` fits in ("L1".."L3", "DRAM"). */
const char *cli_probe_tier_of(const hrmt_topology *topo, size_t bytes);
/* The same for either device, from a result's own bounds (GPU: "L1", "L2",
 * "HBM" by the one-thread chase's view: the per-SM L1 and the whole L2). */
const char *cli_probe_point_tier(const cli_probe_result *r, size_t bytes);

/* The main-memory working set of ctx's device: CPU cli_probe_tier_point(topo,
 * num_levels); CUDA max(16x L2, 256 MiB), at most a quarter of the free device
 * memory. The default end of the sweep. 0 when the device cannot be asked. */
size_t cli_probe_main_point(hrmt_context *ctx);

/* Fills r: the sweep over `sizes` (per size the lowest latency and highest
 * bandwidths of `trials` runs) and every tier whose plateau point is <=
 * max_tier_bytes. On failure returns the status; the context holds the message. */
hrmt_status cli_probe_run(hrmt_context *ctx, const size_t *sizes, size_t n_sizes, int trials,
                          size_t max_tier_bytes, cli_progress *progress, cli_probe_result *r);

/* Latency at one tier's plateau point, fastest of CLI_PROBE_TIER_TRIALS (the
 * bench's SRAM/DRAM probes use it too). tier_index counts the device's tiers:
 * CPU caches then DRAM (index num_levels); CUDA 0 SMEM, 1 L1, 2 L2, 3 and
 * beyond HBM, and the CPU topology's num_levels also means HBM, so a caller
 * asking for "the fastest and main memory" gets both on either device. */
hrmt_status cli_probe_tier_latency(hrmt_context *ctx, int tier_index, size_t *bytes, double *ns);

#endif
