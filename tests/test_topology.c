/* Cache topology: real detection is sane, hwloc agrees with sysfs, the sysfs
 * parser on fake trees, HRMT_CACHE_* overrides (valid, malformed, adding a level). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/topology.h"
#include "support/test_common.h"

static void clear_overrides(void) {
    unsetenv("HRMT_CACHE_L1D");
    unsetenv("HRMT_CACHE_L2");
    unsetenv("HRMT_CACHE_L3");
}

static int is_pow2(size_t x) { return x && !(x & (x - 1)); }

static const hrmt_cache_level *find_level(const hrmt_topology *t, int level) {
    for (int i = 0; i < t->num_levels; i++)
        if (t->caches[i].level == level) return &t->caches[i];
    return NULL;
}

Test(topology, real_detection_is_sane) {
    clear_overrides();
    hrmt_topology t;
    cr_assert_eq(hrmt_topology_detect(&t), HRMT_OK);
    cr_assert(t.num_levels >= 1 && t.num_levels <= HRMT_MAX_CACHE_LEVELS);
    cr_assert_eq(t.caches[0].level, 1, "caches[0] is L1d");
    cr_assert(t.num_cores >= 1);
    cr_assert_not_null(t.source);
    cr_expect_null(strstr(t.source, "env"), "no override set, source %s", t.source);
    for (int i = 0; i < t.num_levels; i++) {
        const hrmt_cache_level *c = &t.caches[i];
        cr_expect(c->size_bytes >= 1024, "L%d size %zu", c->level, c->size_bytes);
        cr_expect(is_pow2(c->line_bytes) && c->line_bytes >= 16 && c->line_bytes <= 1024,
                  "L%d line %zu", c->level, c->line_bytes);
        cr_expect(c->ways >= -1, "L%d ways %d", c->level, c->ways);
        cr_expect(c->shared_by_cores >= 1 && c->shared_by_cores <= t.num_cores,
                  "L%d shared by %d of %d cores", c->level, c->shared_by_cores, t.num_cores);
        if (i > 0) {
            cr_expect_gt(c->level, t.caches[i - 1].level, "levels in order");
            cr_expect_gt(c->size_bytes, t.caches[i - 1].size_bytes, "L%d larger than L%d", c->level,
                         t.caches[i - 1].level);
            cr_expect_geq(c->shared_by_cores, t.caches[i - 1].shared_by_cores);
        }
    }
}

/* Two independent readers of the same hardware must agree on sizes and lines. */
Test(topology, hwloc_agrees_with_sysfs) {
    hrmt_topology h, s;
    hrmt_status hs = hrmt_topology_from_hwloc(&h);
    hrmt_status ss = hrmt_topology_from_sysfs("/sys/devices/system/cpu", &s);
    struct stat st;
    if (stat("/sys/devices/system/cpu/cpu0/cache/index0", &st) == 0)
        cr_assert_eq(ss, HRMT_OK, "sysfs has cache entries, the parser must read them");
    if (hs != HRMT_OK || ss != HRMT_OK) {
        /* Only a machine lacking one of the sources gets here; detection must
         * then have used the other one or the defaults. */
        hrmt_topology t;
        cr_assert_eq(hrmt_topology_detect(&t), HRMT_OK);
        if (hs != HRMT_OK) cr_expect_neq(strncmp(t.source, "hwloc", 5), 0, "%s", t.source);
        return;
    }
    cr_assert_str_eq(h.source, "hwloc");
    cr_assert_str_eq(s.source, "sysfs");
    cr_assert_eq(h.num_levels, s.num_levels);
    for (int i = 0; i < h.num_levels; i++) {
        cr_expect_eq(h.caches[i].level, s.caches[i].level);
        cr_expect_eq(h.caches[i].size_bytes, s.caches[i].size_bytes, "L%d", h.caches[i].level);
        cr_expect_eq(h.caches[i].line_bytes, s.caches[i].line_bytes, "L%d", h.caches[i].level);
        /* hwloc drops CPUs outside our cpuset, sysfs lists them all. */
        cr_expect_leq(h.caches[i].shared_by_cores, s.caches[i].shared_by_cores, "L%d",
                      h.caches[i].level);
    }
    cr_expect_leq(h.num_cores, s.num_cores);
}

/* ---- fake sysfs trees ---------------------------------------------------- */

static char g_root[64];

static void put(const char *rel, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_root, rel);
    /* mkdir -p of the parent */
    for (char *p = path + strlen(g_root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fprintf(f, "%s\n", text);
    fclose(f);
}

static void put_index(int idx, const char *level, const char *type, const char *size,
                      const char *line, const char *ways, const char *shared) {
    char rel[128];
    const char *names[6] = {
        "level", "type", "size", "coherency_line_size", "ways_of_associativity", "shared_cpu_list"};
    const char *vals[6] = {level, type, size, line, ways, shared};
    for (int i = 0; i < 6; i++) {
        if (!vals[i]) continue;
        snprintf(rel, sizeof rel, "cpu0/cache/index%d/%s", idx, names[i]);
        put(rel, vals[i]);
    }
}

static void make_root(void) {
    strcpy(g_root, "/tmp/hrmt-topo-XXXXXX");
    cr_assert_not_null(mkdtemp(g_root));
}

static void remove_root(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    cr_expect_eq(system(cmd), 0);
}

/* An 8-core, 2-way SMT machine: L1d 48K 12-way per core, L2 2M per core,
 * L3 96M shared by all; an instruction cache that must be ignored. */
static void write_fake_machine(void) {
    put_index(0, "1", "Data", "48K", "64", "12", "0,8");
    put_index(1, "1", "Instruction", "32K", "64", "8", "0,8");
    put_index(2, "2", "Unified", "2048K", "64", "16", "0,8");
    put_index(3, "3", "Unified", "96M", "128", "0", "0-15");
    put("cpu0/topology/thread_siblings_list", "0,8");
    put("online", "0-15");
}

Test(topology, sysfs_parser_reads_fake_tree) {
    make_root();
    write_fake_machine();
    hrmt_topology t;
    cr_assert_eq(hrmt_topology_from_sysfs(g_root, &t), HRMT_OK);
    cr_expect_str_eq(t.source, "sysfs");
    cr_assert_eq(t.num_levels, 3);
    cr_expect_eq(t.num_cores, 8);
    const hrmt_cache_level want[3] = {
        {.level = 1, .size_bytes = 48 * 1024, .line_bytes = 64, .ways = 12, .shared_by_cores = 1},
        {.level = 2, .size_bytes = 2048 * 1024, .line_bytes = 64, .ways = 16, .shared_by_cores = 1},
        {.level = 3, .size_bytes = 96u << 20, .line_bytes = 128, .ways = 0, .shared_by_cores = 8}};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(t.caches[i].level, want[i].level);
        cr_expect_eq(t.caches[i].size_bytes, want[i].size_bytes, "L%d", want[i].level);
        cr_expect_eq(t.caches[i].line_bytes, want[i].line_bytes, "L%d", want[i].level);
        cr_expect_eq(t.caches[i].ways, want[i].ways, "L%d", want[i].level);
        cr_expect_eq(t.caches[i].shared_by_cores, want[i].shared_by_cores, "L%d", want[i].level);
    }
    remove_root();
}

Test(topology, sysfs_parser_skips_malformed_and_defaults_missing_fields) {
    make_root();
    /* L1 without line/ways/shared files; L2 with a malformed size (skipped);
     * no topology or online files (SMT 1, one core). */
    put_index(0, "1", "Data", "32K", NULL, NULL, NULL);
    put_index(1, "2", "Unified", "12Q", "64", "8", "0");
    put_index(2, "3", "Unified", "8192K", "64", "16", "0-3");
    hrmt_topology t;
    cr_assert_eq(hrmt_topology_from_sysfs(g_root, &t), HRMT_OK);
    cr_assert_eq(t.num_levels, 2);
    cr_expect_eq(t.caches[0].size_bytes, 32768);
    cr_expect_eq(t.caches[0].line_bytes, 64, "line defaults to 64");
    cr_expect_eq(t.caches[0].ways, 0, "ways unknown");
    cr_expect_eq(t.caches[0].shared_by_cores, 1);
    cr_expect_eq(t.caches[1].level, 3);
    cr_expect_eq(t.caches[1].shared_by_cores, 4);
    cr_expect_eq(t.num_cores, 1);
    remove_root();
}

Test(topology, sysfs_parser_errors) {
    hrmt_topology t;
    memset(&t, 0x5a, sizeof t);
    hrmt_topology before = t;
    cr_expect_eq(hrmt_topology_from_sysfs("/nonexistent/hrmt/cpu", &t), HRMT_ERR_IO);
    cr_expect_eq(hrmt_topology_from_sysfs(NULL, &t), HRMT_ERR_INVALID_ARG);
    make_root();
    put_index(0, "1", "Instruction", "32K", "64", "8", "0");
    put_index(1, "2", "Unified", "1024K", "64", "8", "0");
    cr_expect_eq(hrmt_topology_from_sysfs(g_root, &t), HRMT_ERR_NOT_FOUND, "no L1 data cache");
    cr_expect_eq(memcmp(&t, &before, sizeof t), 0, "output untouched on failure");
    remove_root();
}

Test(topology, defaults_are_sane) {
    hrmt_topology t;
    hrmt_topology_defaults(&t);
    cr_expect_str_eq(t.source, "default");
    cr_assert_eq(t.num_levels, 3);
    for (int i = 0; i < 3; i++) cr_expect_eq(t.caches[i].level, i + 1);
    cr_expect_lt(t.caches[0].size_bytes, t.caches[1].size_bytes);
    cr_expect_lt(t.caches[1].size_bytes, t.caches[2].size_bytes);
    cr_expect_eq(t.caches[2].shared_by_cores, t.num_cores);
}

/* ---- overrides ----------------------------------------------------------- */

Test(topology, override_replaces_one_level) {
    clear_overrides();
    hrmt_topology base, t;
    cr_assert_eq(hrmt_topology_detect(&base), HRMT_OK);
    setenv("HRMT_CACHE_L2", "3145728", 1);
    cr_assert_eq(hrmt_topology_detect(&t), HRMT_OK);
    const hrmt_cache_level *l2 = find_level(&t, 2);
    cr_assert_not_null(l2);
    cr_expect_eq(l2->size_bytes, 3145728);
    cr_expect_eq(l2->line_bytes, find_level(&base, 2) ? find_level(&base, 2)->line_bytes : 64);
    cr_expect_eq(t.caches[0].size_bytes, base.caches[0].size_bytes, "L1d untouched");
    cr_expect_not_null(strstr(t.source, "+env"), "source %s", t.source);
    cr_expect_eq(strncmp(t.source, base.source, strlen(base.source)), 0, "%s vs %s", t.source,
                 base.source);
}

Test(topology, override_all_three_pretends_another_machine) {
    setenv("HRMT_CACHE_L1D", "49152", 1);
    setenv("HRMT_CACHE_L2", "2097152", 1);
    setenv("HRMT_CACHE_L3", "100663296", 1);
    hrmt_topology t;
    cr_assert_eq(hrmt_topology_detect(&t), HRMT_OK);
    cr_expect_eq(find_level(&t, 1)->size_bytes, 49152);
    cr_expect_eq(find_level(&t, 2)->size_bytes, 2097152);
    cr_expect_eq(find_level(&t, 3)->size_bytes, 100663296);
    /* The context sees the same topology. */
    hrmt_context *ctx = hrmt_test_context();
    const hrmt_topology *ct = hrmt_context_topology(ctx);
    cr_expect_eq(find_level(ct, 2)->size_bytes, 2097152);
    hrmt_context_destroy(ctx);
}

Test(topology, malformed_override_is_invalid_arg) {
    const char *bad[] = {
        "abc", "32K", "-5", "0", " 5", "5 ", "1e6", "0x100", "99999999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_overrides();
        setenv(i % 2 ? "HRMT_CACHE_L1D" : "HRMT_CACHE_L3", bad[i], 1);
        hrmt_topology t;
        memset(&t, 0x5a, sizeof t);
        hrmt_topology before = t;
        cr_expect_eq(hrmt_topology_detect(&t), HRMT_ERR_INVALID_ARG, "value '%s'", bad[i]);
        cr_expect_eq(memcmp(&t, &before, sizeof t), 0, "output untouched for '%s'", bad[i]);
    }
    /* A context refuses to start with a malformed override and says why. */
    clear_overrides();
    setenv("HRMT_CACHE_L2", "lots", 1);
    hrmt_context *ctx = NULL;
    char err[256] = "";
    cr_expect_neq(hrmt_context_create(NULL, &ctx, err, sizeof err), HRMT_OK);
    cr_expect_null(ctx);
    cr_expect_not_null(strstr(err, "HRMT_CACHE"), "message: %s", err);
}

Test(topology, empty_override_counts_as_unset) {
    clear_overrides();
    hrmt_topology base, t;
    cr_assert_eq(hrmt_topology_detect(&base), HRMT_OK);
    setenv("HRMT_CACHE_L1D", "", 1);
    cr_assert_eq(hrmt_topology_detect(&t), HRMT_OK);
    cr_expect_eq(t.caches[0].size_bytes, base.caches[0].size_bytes);
    cr_expect_str_eq(t.source, base.source);
}

Test(topology, override_adds_a_missing_level) {
    make_root();
    put_index(0, "1", "Data", "32K", "64", "8", "0");
    put_index(1, "2", "Unified", "512K", "64", "8", "0");
    put("online", "0-3");
    hrmt_topology t;
    cr_assert_eq(hrmt_topology_from_sysfs(g_root, &t), HRMT_OK);
    cr_assert_eq(t.num_levels, 2);
    clear_overrides();
    setenv("HRMT_CACHE_L3", "16777216", 1);
    cr_assert_eq(hrmt_topology_apply_env(&t), HRMT_OK);
    cr_assert_eq(t.num_levels, 3);
    cr_expect_eq(t.caches[2].level, 3);
    cr_expect_eq(t.caches[2].size_bytes, 16777216);
    cr_expect_eq(t.caches[2].line_bytes, 64);
    cr_expect_eq(t.caches[2].shared_by_cores, 4, "a new L3 is shared by all cores");
    cr_expect_str_eq(t.source, "sysfs+env");
    remove_root();
}

Test(topology, override_inserts_a_middle_level_in_order) {
    hrmt_topology t;
    memset(&t, 0, sizeof t);
    t.num_levels = 2;
    t.caches[0] = (hrmt_cache_level){
        .level = 1, .size_bytes = 32768, .line_bytes = 64, .ways = 8, .shared_by_cores = 1};
    t.caches[1] = (hrmt_cache_level){
        .level = 3, .size_bytes = 8 << 20, .line_bytes = 64, .ways = 16, .shared_by_cores = 4};
    t.num_cores = 4;
    t.source = "hwloc";
    clear_overrides();
    setenv("HRMT_CACHE_L2", "1048576", 1);
    cr_assert_eq(hrmt_topology_apply_env(&t), HRMT_OK);
    cr_assert_eq(t.num_levels, 3);
    for (int i = 0; i < 3; i++) cr_expect_eq(t.caches[i].level, i + 1);
    cr_expect_eq(t.caches[1].size_bytes, 1048576);
    cr_expect_eq(t.caches[1].shared_by_cores, 1);
    cr_expect_eq(t.caches[2].size_bytes, 8u << 20, "L3 kept");
    cr_expect_str_eq(t.source, "hwloc+env");
}

Test(topology, null_output_is_invalid_arg) {
    cr_expect_eq(hrmt_topology_detect(NULL), HRMT_ERR_INVALID_ARG);
}

static hrmt_topology three_levels(size_t l2, int l2_shared, size_t l3, int l3_shared) {
    hrmt_topology t;
    memset(&t, 0, sizeof t);
    t.num_levels = 3;
    t.caches[0] = (hrmt_cache_level){
        .level = 1, .size_bytes = 32768, .line_bytes = 64, .ways = 8, .shared_by_cores = 1};
    t.caches[1] = (hrmt_cache_level){
        .level = 2, .size_bytes = l2, .line_bytes = 64, .ways = 8, .shared_by_cores = l2_shared};
    t.caches[2] = (hrmt_cache_level){
        .level = 3, .size_bytes = l3, .line_bytes = 64, .ways = 16, .shared_by_cores = l3_shared};
    t.num_cores = l3_shared;
    t.source = "test";
    return t;
}

/* The rule of hrmt_topology_effective, case by case, with hand-worked values. */
Test(topology, effective_sizes_follow_the_rule) {
    /* Zen 4 like: 32 MiB L3 shared by 8 -> 4 MiB, plausible (bound 8 MiB). */
    hrmt_topology t = three_levels(1 << 20, 1, 32 << 20, 8);
    cr_assert_eq(hrmt_topology_effective(&t, 8), HRMT_OK);
    cr_expect_eq(t.caches[0].effective_bytes, 32768u);
    cr_expect_str_eq(t.caches[0].effective_source, "private");
    cr_expect_eq(t.caches[2].effective_bytes, 4u << 20);
    cr_expect_str_eq(t.caches[2].effective_source, "per-core share");
    cr_expect_eq(hrmt_topology_needs_calibration(&t), 0);

    /* The 16-core GPU host: 300 MiB by 16 = 18.75 MiB > 8 x 2 MiB: capped at 16 MiB. */
    t = three_levels(2 << 20, 1, (size_t)300 << 20, 16);
    cr_expect_eq(hrmt_topology_needs_calibration(&t), 1);
    cr_assert_eq(hrmt_topology_effective(&t, 16), HRMT_OK);
    cr_expect_eq(t.caches[2].effective_bytes, (size_t)16 << 20);
    cr_expect_str_eq(t.caches[2].effective_source, "plausibility cap");

    /* Calibrated: a 40 MiB plateau, but the process may use only 4 of the 16
     * cores: 10 MiB each. */
    t.caches[2].measured_bytes = (size_t)40 << 20;
    cr_assert_eq(hrmt_topology_effective(&t, 4), HRMT_OK);
    cr_expect_eq(t.caches[2].effective_bytes, (size_t)10 << 20);
    cr_expect_str_eq(t.caches[2].effective_source, "calibrated");
    /* A plateau above the claimed share never raises it. */
    t.caches[2].measured_bytes = (size_t)1 << 30;
    cr_assert_eq(hrmt_topology_effective(&t, 16), HRMT_OK);
    cr_expect_eq(t.caches[2].effective_bytes, ((size_t)300 << 20) / 16);
    cr_expect_str_eq(t.caches[2].effective_source, "per-core share");

    /* A shared L2 (two SMT threads' cores) is a per-core share, never capped. */
    t = three_levels(4 << 20, 2, 8 << 20, 2);
    cr_assert_eq(hrmt_topology_effective(&t, 2), HRMT_OK);
    cr_expect_eq(t.caches[1].effective_bytes, 2u << 20);
    cr_expect_str_eq(t.caches[1].effective_source, "per-core share");
    cr_expect_eq(hrmt_topology_effective(NULL, 1), HRMT_ERR_INVALID_ARG);
}

/* An HRMT_CACHE_L3 override is the user's word: no cap, source "env". */
Test(topology, override_is_not_capped) {
    hrmt_topology t = three_levels(2 << 20, 1, (size_t)480 << 20, 2);
    clear_overrides();
    setenv("HRMT_CACHE_L3", "503316480", 1);
    cr_assert_eq(hrmt_topology_apply_env(&t), HRMT_OK);
    cr_assert_eq(hrmt_topology_effective(&t, 2), HRMT_OK);
    cr_expect_eq(t.caches[2].effective_bytes, (size_t)240 << 20);
    cr_expect_str_eq(t.caches[2].effective_source, "env");
    cr_expect_eq(hrmt_topology_needs_calibration(&t), 0);
    clear_overrides();
}

/* The real calibration on this host's own topology: whatever the machine, the
 * measured plateau lies between 3x L2 and min(claimed L3, 32 MiB), and the
 * effective share never exceeds the claimed one. */
Test(topology, calibration_stays_within_its_bounds) {
    clear_overrides();
    hrmt_topology t;
    cr_assert_eq(hrmt_topology_detect(&t), HRMT_OK);
    const hrmt_cache_level *l2 = find_level(&t, 2);
    hrmt_cache_level *last = &t.caches[t.num_levels - 1];
    const size_t claimed_share =
        last->size_bytes / (last->shared_by_cores > 1 ? (size_t)last->shared_by_cores : 1);
    cr_assert_eq(hrmt_topology_calibrate(&t, hrmt_usable_cores()), HRMT_OK);
    const size_t cap = last->size_bytes < ((size_t)32 << 20) ? last->size_bytes : (size_t)32 << 20;
    if (last->level >= 3 && l2 && 3 * l2->size_bytes <= cap) {
        cr_expect(last->measured_bytes >= 3 * l2->size_bytes && last->measured_bytes <= cap,
                  "plateau %zu outside [%zu, %zu]", last->measured_bytes, 3 * l2->size_bytes, cap);
    } else {
        cr_expect_eq(last->measured_bytes, 0u, "nothing to calibrate");
    }
    for (int i = 0; i < t.num_levels; i++) {
        const hrmt_cache_level *c = &t.caches[i];
        cr_expect(c->effective_bytes > 0 && c->effective_source, "L%d derived", c->level);
        cr_expect(c->effective_bytes <= c->size_bytes, "L%d", c->level);
    }
    cr_expect(last->effective_bytes <= claimed_share);
    hrmt_tile_plan p;
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_OK);
    cr_expect_eq(hrmt_topology_calibrate(NULL, 1), HRMT_ERR_INVALID_ARG);
    cr_expect(hrmt_usable_cores() >= 1);
}
