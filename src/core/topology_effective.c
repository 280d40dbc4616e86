/* Effective cache sizes: what one core of this process can really use of
 * each claimed level (the rule is documented at hrmt_topology_effective). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <string.h>

#include "core/probe_chase.h"
#include "hrmt.h"

#define MIB ((size_t)1 << 20)
#define PLAUSIBLE_L2_MULT 8
#define PLAUSIBLE_MIN (8 * MIB)
#define CALIBRATE_MAX (32 * MIB)
/* The plateau ends where latency passes this multiple of the first point's. */
#define PLATEAU_FACTOR 2.0

int hrmt_usable_cores(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

static size_t per_core(const hrmt_cache_level *c) {
    return c->size_bytes / (c->shared_by_cores > 1 ? (size_t)c->shared_by_cores : 1);
}

static const hrmt_cache_level *level_of(const hrmt_topology *t, int level) {
    for (int i = 0; i < t->num_levels; i++)
        if (t->caches[i].level == level) return &t->caches[i];
    return NULL;
}

/* max(8 x this core's L2, 8 MiB): no real CPU gives one core more of a shared
 * cache than that (Zen 4: 4 MiB per core at 1 MiB L2; Sapphire Rapids ~2 MiB at
 * 2 MiB L2; X3D parts 12 MiB, which calibration then confirms). */
static size_t plausible_bound(const hrmt_topology *t) {
    const hrmt_cache_level *l2 = level_of(t, 2);
    size_t b = l2 ? per_core(l2) * PLAUSIBLE_L2_MULT : 0;
    return b > PLAUSIBLE_MIN ? b : PLAUSIBLE_MIN;
}

static int is_shared_outer(const hrmt_cache_level *c) {
    return c->level >= 3 && c->shared_by_cores > 1;
}

int hrmt_topology_needs_calibration(const hrmt_topology *t) {
    if (!t) return 0;
    const size_t bound = plausible_bound(t);
    for (int i = 0; i < t->num_levels; i++) {
        const hrmt_cache_level *c = &t->caches[i];
        if (is_shared_outer(c) && !(c->effective_source && !strcmp(c->effective_source, "env")) &&
            per_core(c) > bound)
            return 1;
    }
    return 0;
}

hrmt_status hrmt_topology_effective(hrmt_topology *t, int usable_cores) {
    if (!t) return HRMT_ERR_INVALID_ARG;
    const size_t bound = plausible_bound(t);
    for (int i = 0; i < t->num_levels && i < HRMT_MAX_CACHE_LEVELS; i++) {
        hrmt_cache_level *c = &t->caches[i];
        if (c->effective_source && !strcmp(c->effective_source, "env")) {
            c->effective_bytes = per_core(c);
            continue;
        }
        c->effective_bytes = per_core(c);
        c->effective_source = c->shared_by_cores > 1 ? "per-core share" : "private";
        if (!is_shared_outer(c)) continue;
        if (c->measured_bytes > 0) {
            size_t users = (size_t)c->shared_by_cores;
            if (usable_cores > 0 && (size_t)usable_cores < users) users = (size_t)usable_cores;
            size_t cap = c->measured_bytes / users;
            if (cap < c->effective_bytes) {
                c->effective_bytes = cap;
                c->effective_source = "calibrated";
            }
        } else if (c->effective_bytes > bound) {
            c->effective_bytes = bound;
            c->effective_source = "plausibility cap";
        }
    }
    return HRMT_OK;
}

hrmt_status hrmt_topology_calibrate(hrmt_topology *t, int usable_cores) {
    if (!t || t->num_levels < 1) return HRMT_ERR_INVALID_ARG;
    hrmt_cache_level *outer = &t->caches[t->num_levels - 1];
    const hrmt_cache_level *l2 = level_of(t, 2);
    if (outer->level < 3 || !l2) return hrmt_topology_effective(t, usable_cores);
    /* 3x L2: clear of L2 (a point at 2x is still a third L2 hits), so the
     * reference is L3's own latency. */
    size_t start = 3 * l2->size_bytes;
    size_t limit = outer->size_bytes < CALIBRATE_MAX ? outer->size_bytes : CALIBRATE_MAX;
    if (start > limit) return hrmt_topology_effective(t, usable_cores);
    double ref;
    hrmt_status s = hrmt_chase_ns(start, &ref);
    if (s != HRMT_OK) return s;
    size_t plateau = start;
    for (size_t sz = 2 * start; sz <= limit && sz > start; sz *= 2) {
        double ns;
        if ((s = hrmt_chase_ns(sz, &ns)) != HRMT_OK) return s;
        if (ns > PLATEAU_FACTOR * ref) break;
        plateau = sz;
    }
    outer->measured_bytes = plateau;
    return hrmt_topology_effective(t, usable_cores);
}
