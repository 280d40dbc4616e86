/* Memory-tier sweep (see probe_sweep.h). */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "cli/probe_sweep.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

size_t cli_probe_sizes(size_t min_bytes, size_t max_bytes, int quick, size_t *out, size_t cap) {
    size_t n = 0;
    if (min_bytes == 0 || max_bytes < min_bytes) return 0;
    int k = 0;
    for (size_t p = 1; p && n < cap; p <<= 1, k++) {
        if (p >= min_bytes && p <= max_bytes && (!quick || k % 2 == 0 || p == max_bytes))
            out[n++] = p;
        size_t mid = p + p / 2;
        if (!quick && p >= 2 && mid >= min_bytes && mid <= max_bytes && n < cap) out[n++] = mid;
        if (p > max_bytes / 2) break;
    }
    /* --quick ends at the maximum itself (the main-memory point) even between powers. */
    if (quick && n > 0 && n < cap && out[n - 1] < max_bytes) out[n++] = max_bytes;
    return n;
}

static size_t phys_mem_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return 0;
    return (size_t)pages * (size_t)page;
}

/* Memory this probe may take for one working set: a quarter of what the
 * kernel says is available (MemAvailable; free pages where that is missing). */
static size_t probe_allowance(void) {
    size_t avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[128];
        unsigned long long kib;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
                avail = (size_t)kib * 1024;
                break;
            }
        fclose(f);
    }
    if (!avail) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = (size_t)pages * (size_t)page;
    }
    return avail ? avail / 4 : 256 * MIB;
}

static size_t largest_cache(const hrmt_topology *topo) {
    size_t largest = 0;
    for (int i = 0; i < topo->num_levels; i++)
        if (topo->caches[i].size_bytes > largest) largest = topo->caches[i].size_bytes;
    return largest;
}

/* Main memory: 2.25x the largest claimed cache (beyond any cache by
 * construction, whatever a VM claims), at least 64 MiB, at most the allowance. */
static size_t dram_point(const hrmt_topology *topo, int *capped) {
    const size_t largest = largest_cache(topo);
    size_t p = 2 * largest + largest / 4;
    if (p < 64 * MIB) p = 64 * MIB;
    const size_t allow = probe_allowance() & ~(MIB - 1);
    *capped = 0;
    if (p > allow && allow >= 64 * MIB) {
        p = allow;
        *capped = p <= 2 * largest;
    }
    return (p + MIB - 1) & ~(MIB - 1);
}

int cli_probe_dram_capped(const hrmt_topology *topo) {
    int capped;
    (void)dram_point(topo, &capped);
    return capped;
}

size_t cli_probe_tier_point(const hrmt_topology *topo, int tier_index) {
    int i = tier_index;
    int n = topo->num_levels;
    if (i == 0 && n > 0) return topo->caches[0].size_bytes / 2;
    if (i < n) {
        size_t prev = topo->caches[i - 1].size_bytes, size = topo->caches[i].size_bytes;
        size_t p = prev + prev / 2;
        return (p < size ? p : size) & ~(size_t)63; /* whole cache lines */
    }
    int capped;
    return dram_point(topo, &capped);
}

const char *cli_probe_tier_of(const hrmt_topology *topo, size_t bytes) {
    static const char *const names[] = {"L1", "L2", "L3", "L4"};
    for (int i = 0; i < topo->num_levels; i++)
        if (bytes <= topo->caches[i].size_bytes) {
            int lv = topo->caches[i].level;
            return lv >= 1 && lv <= 4 ? names[lv - 1] : "cache";
        }
    return "DRAM";
}

/* The fastest of a few trials: another process can only slow a trial down
 * (evicting our lines, taking the core), so the minimum is the machine's own. */
static hrmt_status latency_min(hrmt_context *ctx, size_t bytes, double *ns) {
    double best = 0.0;
    for (int t = 0; t < CLI_PROBE_TIER_TRIALS; t++) {
        double v;
        hrmt_status s = hrmt_probe_latency(ctx, bytes, &v);
        if (s != HRMT_OK) return s;
        if (t == 0 || v < best) best = v;
    }
    *ns = best;
    return HRMT_OK;
}

hrmt_status cli_probe_tier_latency(hrmt_context *ctx, int tier_index, size_t *bytes, double *ns) {
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    *bytes = cli_probe_tier_point(topo, tier_index);
    return latency_min(ctx, *bytes, ns);
}

/* Where each measured plateau ends in the sweep: the largest size whose
 * latency is below the geometric midpoint to the next measured plateau. */
static void plateau_ends(cli_probe_result *r) {
    for (size_t i = 0; i + 1 < r->n_tiers; i++) {
        cli_probe_tier *t = &r->tiers[i];
        const cli_probe_tier *next = &r->tiers[i + 1];
        if (!t->measured || !next->measured || next->ns <= t->ns) continue;
        const double mid = sqrt(t->ns * next->ns);
        for (size_t k = 0; k < r->n_points; k++)
            if (r->points[k].bytes >= t->probe_bytes && r->points[k].ns <= mid)
                t->plateau_end_bytes = r->points[k].bytes;
    }
}

hrmt_status cli_probe_run(hrmt_context *ctx, const size_t *sizes, size_t n_sizes, int trials,
                          size_t max_tier_bytes, cli_progress *progress, cli_probe_result *r) {
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    memset(r, 0, sizeof *r);
    r->device = hrmt_context_backend(ctx) == HRMT_BACKEND_CUDA ? "cuda" : "cpu";
    if (n_sizes > CLI_PROBE_MAX_POINTS) n_sizes = CLI_PROBE_MAX_POINTS;
    char label[64];
    /* An untimed first probe: the first one otherwise pays for waking the core. */
    double discard;
    if (n_sizes > 0) {
        hrmt_status s = hrmt_probe_latency(ctx, sizes[0], &discard);
        if (s != HRMT_OK) return s;
    }
    for (size_t i = 0; i < n_sizes; i++) {
        cli_probe_point *pt = &r->points[i];
        pt->bytes = sizes[i];
        snprintf(label, sizeof label, "sweep %zu KiB", sizes[i] >> 10);
        cli_progress_advance(progress, 0, label);
        /* Best of `trials`: interference only ever makes a trial slower. */
        for (int t = 0; t < trials; t++) {
            double ns;
            hrmt_bandwidth bw;
            hrmt_status s = hrmt_probe_latency(ctx, sizes[i], &ns);
            if (s == HRMT_OK) s = hrmt_probe_bandwidth(ctx, sizes[i], &bw);
            if (s != HRMT_OK) return s;
            if (t == 0 || ns < pt->ns) pt->ns = ns;
            if (t == 0 || bw.read_gbps > pt->bw.read_gbps) pt->bw.read_gbps = bw.read_gbps;
            if (t == 0 || bw.write_gbps > pt->bw.write_gbps) pt->bw.write_gbps = bw.write_gbps;
            if (t == 0 || bw.copy_gbps > pt->bw.copy_gbps) pt->bw.copy_gbps = bw.copy_gbps;
        }
        r->n_points = i + 1;
        cli_progress_advance(progress, 1, label);
    }
    int n_tiers = topo->num_levels + 1;
    if (n_tiers > CLI_PROBE_MAX_TIERS) n_tiers = CLI_PROBE_MAX_TIERS;
    for (int i = 0; i < n_tiers; i++) {
        size_t at = cli_probe_tier_point(topo, i);
        if (at == 0) continue;
        cli_probe_tier *t = &r->tiers[r->n_tiers];
        if (i < topo->num_levels) {
            t->level = topo->caches[i].level;
            t->size_bytes = topo->caches[i].size_bytes;
            t->effective_bytes = topo->caches[i].effective_bytes;
            snprintf(t->name, sizeof t->name, "L%d", t->level);
        } else {
            t->level = 0;
            t->size_bytes = phys_mem_bytes();
            t->capped = cli_probe_dram_capped(topo);
            snprintf(t->name, sizeof t->name, "DRAM");
        }
        t->probe_bytes = at;
        r->n_tiers++;
        /* Beyond an explicit --max-bytes the level is listed, marked unmeasured. */
        if (at > max_tier_bytes) continue;
        snprintf(label, sizeof label, "plateau %s", t->name);
        cli_progress_advance(progress, 0, label);
        hrmt_status s = latency_min(ctx, at, &t->ns);
        if (s != HRMT_OK) return s;
        t->measured = 1;
        cli_progress_advance(progress, 1, label);
    }
    plateau_ends(r);
    return HRMT_OK;
}
