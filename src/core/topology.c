/* Cache topology: hwloc, else sysfs, else defaults; then HRMT_CACHE_* overrides. */
#include "core/topology.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void hrmt_topology_defaults(hrmt_topology *out) {
    memset(out, 0, sizeof *out);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = n > 0 && n < 1 << 20 ? (int)n : 1;
    out->num_levels = 3;
    out->caches[0] = (hrmt_cache_level){
        .level = 1, .size_bytes = 32768, .line_bytes = 64, .ways = 0, .shared_by_cores = 1};
    out->caches[1] = (hrmt_cache_level){
        .level = 2, .size_bytes = 524288, .line_bytes = 64, .ways = 0, .shared_by_cores = 1};
    out->caches[2] = (hrmt_cache_level){
        .level = 3, .size_bytes = 8388608, .line_bytes = 64, .ways = 0, .shared_by_cores = cores};
    out->num_cores = cores;
    out->source = "default";
}

/* Parses a positive decimal byte count; digits only, so "32K", "-1", " 8"
 * and "0" are all rejected rather than half-read. */
static int parse_bytes(const char *v, size_t *out) {
    size_t x = 0;
    if (!*v) return 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9') return 0;
        if (__builtin_mul_overflow(x, (size_t)10, &x) ||
            __builtin_add_overflow(x, (size_t)(*p - '0'), &x))
            return 0;
    }
    if (x == 0) return 0;
    *out = x;
    return 1;
}

/* Sets level `level` to `bytes`, inserting it in level order when absent. */
static void override_level(hrmt_topology *t, int level, size_t bytes) {
    int i = 0;
    while (i < t->num_levels && t->caches[i].level < level) i++;
    if (i < t->num_levels && t->caches[i].level == level) {
        t->caches[i].size_bytes = bytes;
        t->caches[i].effective_source = "env"; /* the user's word: no cap */
        return;
    }
    if (t->num_levels >= HRMT_MAX_CACHE_LEVELS) return; /* levels 1..3 always fit */
    /* A new level borrows the line size of a neighbour; its associativity is unknown. */
    size_t line = 64;
    if (i > 0)
        line = t->caches[i - 1].line_bytes;
    else if (i < t->num_levels)
        line = t->caches[i].line_bytes;
    memmove(&t->caches[i + 1], &t->caches[i], (size_t)(t->num_levels - i) * sizeof t->caches[0]);
    t->caches[i] =
        (hrmt_cache_level){.level = level,
                           .size_bytes = bytes,
                           .line_bytes = line,
                           .ways = 0,
                           .shared_by_cores = level >= 3 && t->num_cores > 0 ? t->num_cores : 1};
    t->caches[i].effective_source = "env";
    t->num_levels++;
}

static const char *with_env(const char *source) {
    if (!strcmp(source, "hwloc")) return "hwloc+env";
    if (!strcmp(source, "sysfs")) return "sysfs+env";
    if (!strcmp(source, "default")) return "default+env";
    return source; /* already noted */
}

hrmt_status hrmt_topology_apply_env(hrmt_topology *t) {
    static const char *const names[3] = {"HRMT_CACHE_L1D", "HRMT_CACHE_L2", "HRMT_CACHE_L3"};
    size_t bytes[3] = {0, 0, 0};
    int any = 0;
    /* Validate all three before touching `t`, so a bad one changes nothing. */
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(names[i]);
        if (!v || !*v) continue; /* empty counts as unset, as for HRMT_ISA */
        if (!parse_bytes(v, &bytes[i])) return HRMT_ERR_INVALID_ARG;
        any = 1;
    }
    if (!any) return HRMT_OK;
    for (int i = 0; i < 3; i++)
        if (bytes[i]) override_level(t, i + 1, bytes[i]);
    t->source = with_env(t->source ? t->source : "default");
    return HRMT_OK;
}

hrmt_status hrmt_topology_detect(hrmt_topology *out) {
    if (!out) return HRMT_ERR_INVALID_ARG;
    hrmt_topology t;
    if (hrmt_topology_from_hwloc(&t) != HRMT_OK &&
        hrmt_topology_from_sysfs("/sys/devices/system/cpu", &t) != HRMT_OK)
        hrmt_topology_defaults(&t);
    hrmt_status s = hrmt_topology_apply_env(&t);
    if (s != HRMT_OK) return s;
    s = hrmt_topology_effective(&t, hrmt_usable_cores());
    if (s != HRMT_OK) return s;
    *out = t;
    return HRMT_OK;
}
