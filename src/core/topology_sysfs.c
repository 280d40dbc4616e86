/* Cache topology from Linux sysfs (cpu0's cache/index* directories). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/topology.h"

/* Reads the first line of root/rel into buf (newline stripped); 0 on failure. */
static int read_line(const char *root, const char *rel, char *buf, size_t len) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", root, rel) >= (int)sizeof path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (ok) buf[strcspn(buf, "\r\n")] = '\0';
    return ok;
}

/* Unsigned decimal with an optional K/M/G suffix (sysfs writes "32K"). */
static int parse_size(const char *s, size_t *out) {
    size_t x = 0;
    const char *p = s;
    if (*p < '0' || *p > '9') return 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if (__builtin_mul_overflow(x, (size_t)10, &x) ||
            __builtin_add_overflow(x, (size_t)(*p - '0'), &x))
            return 0;
    size_t mul = 1;
    if (*p == 'K')
        mul = (size_t)1 << 10;
    else if (*p == 'M')
        mul = (size_t)1 << 20;
    else if (*p == 'G')
        mul = (size_t)1 << 30;
    if (mul != 1) p++;
    if (*p != '\0' || __builtin_mul_overflow(x, mul, &x)) return 0;
    *out = x;
    return 1;
}

/* Number of CPUs in a list such as "0-3,8,10-11"; 0 when malformed. */
static int count_cpu_list(const char *s) {
    int n = 0;
    while (*s) {
        char *end;
        unsigned long a = strtoul(s, &end, 10), b = a;
        if (end == s) return 0;
        s = end;
        if (*s == '-') {
            const char *q = s + 1;
            b = strtoul(q, &end, 10);
            if (end == q || b < a) return 0;
            s = end;
        }
        if (b - a >= 1u << 20) return 0;
        n += (int)(b - a + 1);
        if (*s == ',')
            s++;
        else if (*s)
            return 0;
    }
    return n;
}

/* Fills `c` from one cacheN/indexK directory; 0 when it is not a data/unified cache. */
static int read_index(const char *dir, hrmt_cache_level *c, int *cpus) {
    char buf[256];
    size_t v;
    if (!read_line(dir, "type", buf, sizeof buf)) return 0;
    if (strcmp(buf, "Data") != 0 && strcmp(buf, "Unified") != 0) return 0;
    if (!read_line(dir, "level", buf, sizeof buf) || !parse_size(buf, &v) || v < 1 ||
        v > HRMT_MAX_CACHE_LEVELS)
        return 0;
    c->level = (int)v;
    if (!read_line(dir, "size", buf, sizeof buf) || !parse_size(buf, &c->size_bytes) ||
        c->size_bytes == 0)
        return 0;
    c->line_bytes = 64;
    if (read_line(dir, "coherency_line_size", buf, sizeof buf) && parse_size(buf, &v) && v > 0)
        c->line_bytes = v;
    c->ways = 0;
    if (read_line(dir, "ways_of_associativity", buf, sizeof buf) && parse_size(buf, &v) &&
        v < 1u << 16)
        c->ways = (int)v;
    *cpus = 1;
    if (read_line(dir, "shared_cpu_list", buf, sizeof buf)) {
        int n = count_cpu_list(buf);
        if (n > 0) *cpus = n;
    }
    return 1;
}

hrmt_status hrmt_topology_from_sysfs(const char *cpu_root, hrmt_topology *out) {
    if (!cpu_root || !out) return HRMT_ERR_INVALID_ARG;
    char cache_dir[4096], buf[256];
    if (snprintf(cache_dir, sizeof cache_dir, "%s/cpu0/cache", cpu_root) >= (int)sizeof cache_dir)
        return HRMT_ERR_INVALID_ARG;
    DIR *d = opendir(cache_dir);
    if (!d) return HRMT_ERR_IO;

    /* CPU counts become core counts by dividing by the SMT width. */
    int smt = 1;
    if (read_line(cpu_root, "cpu0/topology/thread_siblings_list", buf, sizeof buf)) {
        int n = count_cpu_list(buf);
        if (n > 0) smt = n;
    }
    hrmt_topology t;
    memset(&t, 0, sizeof t);
    int have[HRMT_MAX_CACHE_LEVELS + 1] = {0};
    hrmt_cache_level found[HRMT_MAX_CACHE_LEVELS + 1];
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "index", 5) != 0) continue;
        char dir[4096 + 300];
        snprintf(dir, sizeof dir, "%s/%s", cache_dir, e->d_name);
        hrmt_cache_level c;
        int cpus;
        if (!read_index(dir, &c, &cpus) || have[c.level]) continue;
        c.shared_by_cores = cpus / smt > 0 ? cpus / smt : 1;
        found[c.level] = c;
        have[c.level] = 1;
    }
    closedir(d);
    for (int lvl = 1; lvl <= HRMT_MAX_CACHE_LEVELS; lvl++)
        if (have[lvl]) t.caches[t.num_levels++] = found[lvl];
    if (!have[1]) return HRMT_ERR_NOT_FOUND;

    int cpus = 0;
    if (read_line(cpu_root, "online", buf, sizeof buf)) cpus = count_cpu_list(buf);
    t.num_cores = cpus / smt > 0 ? cpus / smt : 1;
    t.source = "sysfs";
    *out = t;
    return HRMT_OK;
}
