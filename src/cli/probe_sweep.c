/* Memory-tier sweep (see probe_sweep.h). */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "cli/probe_sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/probe_gpu.h"

#define MIB ((size_t)1 << 20)
#define GPU_TIERS 4 /* SMEM, L1, L2, HBM */

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
        static const char key[] = "MemAvailable:";
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, key, sizeof key - 1)) {
                char *end = NULL;
                unsigned long long kib = strtoull(line + sizeof key - 1, &end, 10);
                if (end && end != line + sizeof key - 1) avail = (size_t)kib * 1024;
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

const char *cli_probe_point_tier(const cli_probe_result *r, size_t bytes) {
    for (size_t i = 0; i < r->n_bounds; i++)
        if (bytes <= r->bounds[i]) return r->bound_names[i];
    return r->main_name ? r->main_name : "?";
}

/* ---- GPU tiers --------------------------------------------------------------- */

/* Capacities and probe points of the GPU tiers (index: SMEM, L1, L2, HBM). */
typedef struct gpu_plan {
    hrmt_gpu_caps caps;
    size_t cap[GPU_TIERS]; /* capacity shown */
    size_t lat[GPU_TIERS]; /* latency working set (SMEM: one block's shared memory) */
    size_t bw[GPU_TIERS];  /* bandwidth working set (SMEM: bytes per block) */
    int hbm_capped;        /* HBM point held below 4x L2 by free device memory */
} gpu_plan;

static size_t at_least(size_t v, size_t lo) { return v > lo ? v : lo; }

/* Latency points: a quarter of L1 (the driver may keep part of the unified
 * array as shared memory even for a kernel that asks for none); L2 at 16x L1
 * (a random chase then hits L1 about 1 time in 16) but at most half of L2;
 * HBM at 16x L2 (L2 hits about 1 in 16), at least 256 MiB, at most a quarter
 * of the free device memory. Bandwidth points (the set is split over all
 * SMs): L1 a quarter of L1 per SM; L2 a share of 1.25x L1 per SM (beyond L1
 * for a streaming pass), at least half of L2, at most 7/8 of it; HBM as its
 * latency point. */
static hrmt_status gpu_plan_make(hrmt_context *ctx, gpu_plan *g) {
    memset(g, 0, sizeof *g);
    hrmt_status s = hrmt_probe_gpu_caps(ctx, &g->caps);
    if (s != HRMT_OK) return s;
    const hrmt_gpu_caps *c = &g->caps;
    const size_t sms = c->sms > 0 ? (size_t)c->sms : 1, l1 = c->l1_per_sm, l2 = c->l2_bytes;
    g->cap[0] = c->smem_per_sm;
    g->lat[0] = at_least(c->smem_per_block / 1024 * 1024, 128);
    g->bw[0] = c->smem_per_block / 32 * 32;
    g->cap[1] = l1;
    g->lat[1] = at_least(l1 / 4 / 64 * 64, 128);
    g->bw[1] = at_least(sms * (l1 / 4) / 64 * 64, 128);
    g->cap[2] = l2;
    size_t lat2 = 16 * l1 < l2 / 2 ? 16 * l1 : l2 / 2;
    g->lat[2] = at_least(lat2 / 64 * 64, 128);
    size_t bw2 = at_least(sms * l1 / 4 * 5, l2 / 2);
    if (bw2 > l2 / 8 * 7) bw2 = l2 / 8 * 7;
    g->bw[2] = at_least(bw2 / 64 * 64, 128);
    size_t hbm = at_least(16 * l2, 256 * MIB);
    const size_t allow = c->free_bytes / 4 & ~(MIB - 1);
    if (hbm > allow && allow >= 64 * MIB) {
        hbm = allow;
        g->hbm_capped = hbm < 4 * l2;
    }
    g->cap[3] = c->global_bytes;
    g->lat[3] = g->bw[3] = (hbm + MIB - 1) & ~(MIB - 1);
    return HRMT_OK;
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

static hrmt_status smem_latency_min(hrmt_context *ctx, size_t bytes, double *ns) {
    double best = 0.0;
    for (int t = 0; t < CLI_PROBE_TIER_TRIALS; t++) {
        double v;
        hrmt_status s = hrmt_probe_smem_latency(ctx, bytes, &v);
        if (s != HRMT_OK) return s;
        if (t == 0 || v < best) best = v;
    }
    *ns = best;
    return HRMT_OK;
}

hrmt_status cli_probe_tier_latency(hrmt_context *ctx, int tier_index, size_t *bytes, double *ns) {
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    if (hrmt_context_backend(ctx) != HRMT_BACKEND_CUDA) {
        *bytes = cli_probe_tier_point(topo, tier_index);
        return latency_min(ctx, *bytes, ns);
    }
    gpu_plan g;
    hrmt_status s = gpu_plan_make(ctx, &g);
    if (s != HRMT_OK) return s;
    int i = tier_index < 0 ? 0 : tier_index;
    if (i >= GPU_TIERS || i == topo->num_levels) i = GPU_TIERS - 1;
    *bytes = g.lat[i];
    return i == 0 ? smem_latency_min(ctx, *bytes, ns) : latency_min(ctx, *bytes, ns);
}

size_t cli_probe_main_point(hrmt_context *ctx) {
    if (hrmt_context_backend(ctx) != HRMT_BACKEND_CUDA) {
        const hrmt_topology *topo = hrmt_context_topology(ctx);
        return cli_probe_tier_point(topo, topo->num_levels);
    }
    gpu_plan g;
    return gpu_plan_make(ctx, &g) == HRMT_OK ? g.lat[GPU_TIERS - 1] : 0;
}

/* Where each measured plateau ends in the sweep: the largest size whose
 * latency is below the geometric midpoint to the next measured plateau. */
static void plateau_ends(cli_probe_result *r) {
    for (size_t i = 0; i + 1 < r->n_tiers; i++) {
        cli_probe_tier *t = &r->tiers[i];
        const cli_probe_tier *next = &r->tiers[i + 1];
        if (t->shared || !t->measured || !next->measured || next->ns <= t->ns) continue;
        const double mid = sqrt(t->ns * next->ns);
        for (size_t k = 0; k < r->n_points; k++)
            if (r->points[k].bytes >= t->probe_bytes && r->points[k].ns <= mid)
                t->plateau_end_bytes = r->points[k].bytes;
    }
}

/* Bandwidth of one tier at t->bw_probe_bytes, unless beyond the limit. */
static hrmt_status tier_bandwidth(hrmt_context *ctx, cli_probe_tier *t, size_t max_tier_bytes,
                                  cli_progress *progress) {
    if (t->bw_probe_bytes > max_tier_bytes) return HRMT_OK;
    char label[64];
    snprintf(label, sizeof label, "bandwidth %s", t->name);
    cli_progress_advance(progress, 0, label);
    hrmt_status s = hrmt_probe_bandwidth(ctx, t->bw_probe_bytes, &t->bw);
    if (s != HRMT_OK) return s;
    t->bw_measured = 1;
    cli_progress_advance(progress, 1, label);
    return HRMT_OK;
}

/* The sweep itself: per size the best of `trials`. */
static hrmt_status sweep_points(hrmt_context *ctx, const size_t *sizes, size_t n_sizes, int trials,
                                cli_progress *progress, cli_probe_result *r) {
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
    return HRMT_OK;
}

/* GPU tiers: SMEM by its own kernels (always: it is no global-memory working
 * set, so --max-bytes does not bound it), L1 / L2 / HBM by the device probes. */
static hrmt_status gpu_tiers(hrmt_context *ctx, const gpu_plan *g, size_t max_tier_bytes,
                             cli_progress *progress, cli_probe_result *r) {
    static const char *const names[GPU_TIERS] = {"SMEM", "L1", "L2", "HBM"};
    static const int levels[GPU_TIERS] = {1, 1, 2, 0};
    char label[64];
    for (int i = 0; i < GPU_TIERS; i++) {
        cli_probe_tier *t = &r->tiers[r->n_tiers++];
        snprintf(t->name, sizeof t->name, "%s", names[i]);
        t->level = levels[i];
        t->size_bytes = g->cap[i];
        t->probe_bytes = g->lat[i];
        t->bw_probe_bytes = g->bw[i];
        t->shared = i == 0;
        t->capped = i == GPU_TIERS - 1 && g->hbm_capped;
        hrmt_status s = HRMT_OK;
        snprintf(label, sizeof label, "plateau %s", t->name);
        if (i == 0) {
            size_t total = 0;
            cli_progress_advance(progress, 0, label);
            s = smem_latency_min(ctx, t->probe_bytes, &t->ns);
            if (s == HRMT_OK) s = hrmt_probe_smem_bandwidth(ctx, g->bw[0], &t->bw, &total);
            if (s != HRMT_OK) return s;
            t->measured = t->bw_measured = 1;
            t->bw_probe_bytes = total;
            cli_progress_advance(progress, 2, label);
            continue;
        }
        if (t->probe_bytes <= max_tier_bytes) {
            cli_progress_advance(progress, 0, label);
            s = latency_min(ctx, t->probe_bytes, &t->ns);
            if (s != HRMT_OK) return s;
            t->measured = 1;
            cli_progress_advance(progress, 1, label);
        }
        s = tier_bandwidth(ctx, t, max_tier_bytes, progress);
        if (s != HRMT_OK) return s;
    }
    return HRMT_OK;
}

static hrmt_status cpu_tiers(hrmt_context *ctx, size_t max_tier_bytes, cli_progress *progress,
                             cli_probe_result *r) {
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    char label[64];
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
        t->probe_bytes = t->bw_probe_bytes = at;
        r->n_tiers++;
        /* Beyond an explicit --max-bytes the level is listed, marked unmeasured. */
        if (at > max_tier_bytes) continue;
        snprintf(label, sizeof label, "plateau %s", t->name);
        cli_progress_advance(progress, 0, label);
        hrmt_status s = latency_min(ctx, at, &t->ns);
        if (s != HRMT_OK) return s;
        t->measured = 1;
        cli_progress_advance(progress, 1, label);
        /* The CPU probe needs 128 bytes per thread; a smaller point has no bandwidth. */
        if (at >= (size_t)128 * (size_t)hrmt_context_threads(ctx)) {
            s = tier_bandwidth(ctx, t, max_tier_bytes, progress);
            if (s != HRMT_OK) return s;
        }
    }
    return HRMT_OK;
}

hrmt_status cli_probe_run(hrmt_context *ctx, const size_t *sizes, size_t n_sizes, int trials,
                          size_t max_tier_bytes, cli_progress *progress, cli_probe_result *r) {
    const hrmt_topology *topo = hrmt_context_topology(ctx);
    memset(r, 0, sizeof *r);
    const int gpu = hrmt_context_backend(ctx) == HRMT_BACKEND_CUDA;
    r->device = gpu ? "cuda" : "cpu";
    gpu_plan g;
    if (gpu) {
        hrmt_status s = gpu_plan_make(ctx, &g);
        if (s != HRMT_OK) return s;
        snprintf(r->device_name, sizeof r->device_name, "%s", g.caps.name);
        r->bounds[0] = g.cap[1];
        r->bound_names[0] = "L1";
        r->bounds[1] = g.cap[2];
        r->bound_names[1] = "L2";
        r->n_bounds = 2;
        r->main_name = "HBM";
        r->source = "the CUDA device attributes";
    } else {
        static const char *const names[] = {"L1", "L2", "L3", "L4"};
        for (int i = 0; i < topo->num_levels && r->n_bounds < CLI_PROBE_MAX_TIERS; i++) {
            const int lv = topo->caches[i].level;
            r->bounds[r->n_bounds] = topo->caches[i].size_bytes;
            r->bound_names[r->n_bounds++] = lv >= 1 && lv <= 4 ? names[lv - 1] : "cache";
        }
        r->main_name = "DRAM";
        r->source = topo->source ? topo->source : "?";
    }
    hrmt_status s = sweep_points(ctx, sizes, n_sizes, trials, progress, r);
    if (s == HRMT_OK)
        s = gpu ? gpu_tiers(ctx, &g, max_tier_bytes, progress, r)
                : cpu_tiers(ctx, max_tier_bytes, progress, r);
    if (s != HRMT_OK) return s;
    plateau_ends(r);
    return HRMT_OK;
}
