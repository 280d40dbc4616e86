/* `hrmt probe` table, JSON and tier comparison (see probe_report.h). */
#include "cli/probe_report.h"

#include <string.h>

#include "cli/json_out.h"
#include "cli/table.h"
#include "core/text_escape.h"

static cJSON *point_json(const cli_probe_result *r, const cli_probe_point *p, int bandwidth) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int bad = cli_json_add_num(o, "bytes", (double)p->bytes);
    if (bandwidth)
        bad = bad || cli_json_add_num(o, "read_gbps", p->bw.read_gbps) ||
              cli_json_add_num(o, "write_gbps", p->bw.write_gbps) ||
              cli_json_add_num(o, "copy_gbps", p->bw.copy_gbps);
    else
        bad = bad || cli_json_add_num(o, "ns", p->ns);
    bad = bad || !cJSON_AddStringToObject(o, "device", r->device) ||
          !cJSON_AddStringToObject(o, "tier", cli_probe_point_tier(r, p->bytes));
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A tier's bandwidth fields: GB/s when measured, else nulls. */
static int tier_bw_json(cJSON *o, const cli_probe_tier *t) {
    static const char *const k[3] = {"read_gbps", "write_gbps", "copy_gbps"};
    const double v[3] = {t->bw.read_gbps, t->bw.write_gbps, t->bw.copy_gbps};
    if (cli_json_add_num(o, "bandwidth_probe_bytes", (double)t->bw_probe_bytes) ||
        !cJSON_AddBoolToObject(o, "bandwidth_measured", t->bw_measured))
        return -1;
    for (int i = 0; i < 3; i++)
        if (t->bw_measured ? cli_json_add_num(o, k[i], v[i]) : !cJSON_AddNullToObject(o, k[i]))
            return -1;
    return 0;
}

static const char *tier_kind(const cli_probe_tier *t) {
    return t->shared ? "shared" : t->level == 0 ? "main" : "cache";
}

cJSON *cli_probe_json(const cli_probe_result *r, const hrmt_topology *topo) {
    (void)topo; /* the result carries its own tiers (either device) */
    cJSON *root = cJSON_CreateObject();
    cJSON *lat = cJSON_AddArrayToObject(root, "latency");
    cJSON *bw = cJSON_AddArrayToObject(root, "bandwidth");
    cJSON *lv = cJSON_AddArrayToObject(root, "levels");
    if (!root || !lat || !bw || !lv || !cJSON_AddStringToObject(root, "device", r->device))
        goto oom;
    if (r->device_name[0] && !cJSON_AddStringToObject(root, "device_name", r->device_name))
        goto oom;
    for (size_t i = 0; i < r->n_points; i++) {
        cJSON *a = point_json(r, &r->points[i], 0);
        cJSON *b = point_json(r, &r->points[i], 1);
        if (!a || !b) {
            cJSON_Delete(a);
            cJSON_Delete(b);
            goto oom;
        }
        cJSON_AddItemToArray(lat, a);
        cJSON_AddItemToArray(bw, b);
    }
    for (size_t i = 0; i < r->n_tiers; i++) {
        const cli_probe_tier *t = &r->tiers[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) goto oom;
        cJSON_AddItemToArray(lv, o);
        if (!cJSON_AddStringToObject(o, "name", t->name) ||
            !cJSON_AddStringToObject(o, "device", r->device) ||
            !cJSON_AddStringToObject(o, "kind", tier_kind(t)) ||
            cli_json_add_num(o, "level", t->level) ||
            cli_json_add_num(o, "size_bytes", (double)t->size_bytes) ||
            cli_json_add_num(o, "probe_bytes", (double)t->probe_bytes) ||
            !cJSON_AddBoolToObject(o, "measured", t->measured) ||
            (t->measured ? cli_json_add_num(o, "ns", t->ns) : !cJSON_AddNullToObject(o, "ns")) ||
            tier_bw_json(o, t))
            goto oom;
        if (t->effective_bytes &&
            cli_json_add_num(o, "effective_bytes", (double)t->effective_bytes))
            goto oom;
        if (t->plateau_end_bytes &&
            cli_json_add_num(o, "plateau_end_bytes", (double)t->plateau_end_bytes))
            goto oom;
        const int main_mem = t->level == 0 && !t->shared;
        if (main_mem && !strcmp(r->device, "cpu") &&
            !cJSON_AddBoolToObject(o, "beyond_2x_largest_cache", !t->capped))
            goto oom;
        if (main_mem && strcmp(r->device, "cpu") != 0 &&
            !cJSON_AddBoolToObject(o, "beyond_4x_l2", !t->capped))
            goto oom;
    }
    return root;
oom:
    cJSON_Delete(root);
    return NULL;
}

/* "%.2f" / "%.1f" of a measured value, else `missing`. */
static void fmt_val(char *c, size_t n, int ok, double v, const char *fmt, const char *missing) {
    if (ok)
        snprintf(c, n, fmt, v);
    else
        snprintf(c, n, "%s", missing);
}

void cli_probe_print(const cli_probe_result *r, const hrmt_topology *topo, FILE *f) {
    (void)topo; /* the result carries its own tiers (either device) */
    static const char *const h[] = {"device",    "working set", "tier",     "latency ns",
                                    "read GB/s", "write GB/s",  "copy GB/s"};
    static const cli_align al[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_RIGHT, CLI_ALIGN_LEFT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT};
    cli_table *t = cli_table_create(7, h, al);
    char c[11][32];
    for (size_t i = 0; t && i < r->n_points; i++) {
        const cli_probe_point *p = &r->points[i];
        snprintf(c[0], 32, "%s", r->device);
        cli_format_bytes(p->bytes, c[1], 32);
        snprintf(c[2], 32, "%s", cli_probe_point_tier(r, p->bytes));
        snprintf(c[3], 32, "%.2f", p->ns);
        snprintf(c[4], 32, "%.1f", p->bw.read_gbps);
        snprintf(c[5], 32, "%.1f", p->bw.write_gbps);
        snprintf(c[6], 32, "%.1f", p->bw.copy_gbps);
        const char *row[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
        cli_table_add_row(t, row);
    }
    if (t && r->n_points) {
        cli_table_print(t, f);
        fputc('\n', f);
    }
    cli_table_destroy(t);

    static const char *const h2[] = {"device",     "tier",       "capacity",   "effective",
                                     "latency at", "latency ns", "plateau to", "bandwidth at",
                                     "read GB/s",  "write GB/s", "copy GB/s"};
    static const cli_align al2[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_LEFT,  CLI_ALIGN_RIGHT,
                                    CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                    CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                    CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT};
    t = cli_table_create(11, h2, al2);
    int capped = 0;
    for (size_t i = 0; t && i < r->n_tiers; i++) {
        const cli_probe_tier *tr = &r->tiers[i];
        snprintf(c[0], 32, "%s", r->device);
        snprintf(c[1], 32, "%s", tr->name);
        cli_format_bytes(tr->size_bytes, c[2], 32);
        if (tr->effective_bytes)
            cli_format_bytes(tr->effective_bytes, c[3], 32);
        else
            snprintf(c[3], 32, "-");
        cli_format_bytes(tr->probe_bytes, c[4], 32);
        fmt_val(c[5], 32, tr->measured, tr->ns, "%.2f", "not measured");
        if (tr->plateau_end_bytes)
            cli_format_bytes(tr->plateau_end_bytes, c[6], 32);
        else
            snprintf(c[6], 32, "-");
        cli_format_bytes(tr->bw_probe_bytes, c[7], 32);
        fmt_val(c[8], 32, tr->bw_measured, tr->bw.read_gbps, "%.1f", "-");
        fmt_val(c[9], 32, tr->bw_measured, tr->bw.write_gbps, "%.1f", "-");
        fmt_val(c[10], 32, tr->bw_measured, tr->bw.copy_gbps, "%.1f", "-");
        capped |= tr->capped;
        const char *row[11] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]};
        cli_table_add_row(t, row);
    }
    if (t) cli_table_print(t, f);
    cli_table_destroy(t);
    if (!strcmp(r->device, "cpu")) {
        fprintf(
            f,
            "(cache sizes from %s; effective = this core's usable share, see `hrmt info`; tier =\n"
            " smallest level the working set fits; plateau to = last size whose latency stays\n"
            " nearer this level's than the next's; bandwidth: the set split over the threads;\n"
            " not measured / - = beyond --max-bytes)\n",
            r->source ? r->source : "?");
        if (capped)
            fprintf(f,
                    "main memory was probed below 2x the largest cache: free memory does not "
                    "allow more\n");
        return;
    }
    fprintf(f,
            "(%s; capacities from %s: SMEM = shared memory per SM, L1 = the unified\n"
            " L1/shared array per SM, L2, HBM = device memory; latency = one thread's pointer\n"
            " chase (SMEM: in one block's shared memory); bandwidth = every SM streaming its\n"
            " share of the set (SMEM: each SM its own shared memory); not measured / - =\n"
            " beyond --max-bytes)\n",
            r->device_name[0] ? r->device_name : "GPU", r->source ? r->source : "?");
    if (capped) fprintf(f, "HBM was probed below 4x L2: free device memory does not allow more\n");
}

/* Rows of the comparison: caches rank by rank from the top, main memory last. */
static const cli_probe_tier *compare_tier(const cli_probe_result *r, size_t row, size_t rows) {
    if (!r || r->n_tiers == 0) return NULL;
    if (row + 1 == rows) return &r->tiers[r->n_tiers - 1];
    return row + 1 < r->n_tiers ? &r->tiers[row] : NULL;
}

/* name, capacity, latency, read bandwidth of one side of a comparison row. */
static void compare_cells(const cli_probe_tier *t, char c[4][32]) {
    if (!t) {
        for (int k = 0; k < 4; k++) snprintf(c[k], 32, "-");
        return;
    }
    snprintf(c[0], 32, "%s", t->name);
    cli_format_bytes(t->size_bytes, c[1], 32);
    fmt_val(c[2], 32, t->measured, t->ns, "%.2f", "not measured");
    fmt_val(c[3], 32, t->bw_measured, t->bw.read_gbps, "%.1f", "not measured");
}

void cli_probe_print_compare(const cli_probe_result *cpu, const cli_probe_result *gpu,
                             const char *gpu_note, FILE *f) {
    static const char *const h[] = {"tier",         "CPU",           "CPU capacity",
                                    "CPU ns",       "CPU read GB/s", "GPU",
                                    "GPU capacity", "GPU ns",        "GPU read GB/s"};
    static const cli_align al[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_LEFT,  CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_LEFT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT};
    /* Rows pair tiers by rank: fastest with fastest (CPU L1 ~ GPU SMEM), last
     * with main memory; without a GPU its column names the tiers it would show. */
    static const char *const gpu_names[] = {"SMEM", "L1", "L2"};
    cli_table *t = cli_table_create(9, h, al);
    size_t n = cpu->n_tiers;
    if (gpu && gpu->n_tiers > n) n = gpu->n_tiers;
    if (!gpu && n < 4) n = 4;
    char a[4][32], b[4][32], lab[32];
    for (size_t i = 0; t && i < n; i++) {
        const int last = i + 1 == n;
        snprintf(lab, 32, "%s", last ? "main memory" : i == 0 ? "fastest" : "cache");
        compare_cells(compare_tier(cpu, i, n), a);
        if (gpu) {
            compare_cells(compare_tier(gpu, i, n), b);
        } else {
            snprintf(b[0], 32, "%s", last ? "HBM" : i < 3 ? gpu_names[i] : "-");
            for (int k = 1; k < 4; k++) snprintf(b[k], 32, "unavailable");
        }
        const char *row[9] = {lab, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]};
        cli_table_add_row(t, row);
    }
    if (t) cli_table_print(t, f);
    cli_table_destroy(t);
    if (gpu)
        fprintf(f,
                "(GPU: %s; latency = one thread's dependent loads on either device; read GB/s =\n"
                " all threads / all SMs streaming a set of the tier's size (see `hrmt probe\n"
                " --backend cuda` for the measured-at sizes))\n",
                gpu->device_name[0] ? gpu->device_name : "CUDA device");
    if (!gpu && gpu_note) fprintf(f, "GPU column unavailable: %s\n", gpu_note);
}

cJSON *cli_probe_compare_json(const cli_probe_result *cpu, const hrmt_topology *topo,
                              const cli_probe_result *gpu, const char *gpu_note) {
    cJSON *root = cJSON_CreateObject();
    cJSON *c = cli_probe_json(cpu, topo);
    cJSON *g = gpu ? cli_probe_json(gpu, NULL) : cJSON_CreateNull();
    if (!root || !c || !g) {
        cJSON_Delete(root);
        cJSON_Delete(c);
        cJSON_Delete(g);
        return NULL;
    }
    cJSON_AddItemToObject(root, "cpu", c);
    cJSON_AddItemToObject(root, "gpu", g);
    if (!gpu && gpu_note && !cJSON_AddStringToObject(root, "gpu_unavailable", gpu_note)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* ---- reading a saved --json back (--input) --------------------------------- */

static int get_num(const cJSON *o, const char *key, double *v) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x)) return -1;
    *v = x->valuedouble;
    return 0;
}

static size_t get_size(const cJSON *o, const char *key) {
    double v = 0;
    return get_num(o, key, &v) == 0 && v > 0 && v < 1.8e19 ? (size_t)v : 0;
}

static int get_flag(const cJSON *o, const char *key) {
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* The result's bound names are static strings (results may be copied). */
static const char *static_name(const char *name) {
    static const char *const names[] = {"L1", "L2", "L3", "L4"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, names[i])) return names[i];
    return "cache";
}

static int json_tier(const cJSON *e, cli_probe_tier *t) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "kind");
    double level = 0;
    if (!cJSON_IsString(name) || get_num(e, "level", &level)) return -1;
    /* Names from a file are printed and plotted: only printable bytes. */
    hrmt_text_escape_str(t->name, sizeof t->name, name->valuestring);
    t->level = (int)level;
    t->shared = cJSON_IsString(kind) && !strcmp(kind->valuestring, "shared");
    t->size_bytes = get_size(e, "size_bytes");
    t->probe_bytes = get_size(e, "probe_bytes");
    t->effective_bytes = get_size(e, "effective_bytes");
    t->plateau_end_bytes = get_size(e, "plateau_end_bytes");
    t->measured = get_flag(e, "measured") && get_num(e, "ns", &t->ns) == 0;
    t->bw_probe_bytes = get_size(e, "bandwidth_probe_bytes");
    t->bw_measured = get_flag(e, "bandwidth_measured") &&
                     get_num(e, "read_gbps", &t->bw.read_gbps) == 0 &&
                     get_num(e, "write_gbps", &t->bw.write_gbps) == 0 &&
                     get_num(e, "copy_gbps", &t->bw.copy_gbps) == 0;
    const cJSON *b2 = cJSON_GetObjectItemCaseSensitive(e, "beyond_2x_largest_cache");
    const cJSON *b4 = cJSON_GetObjectItemCaseSensitive(e, "beyond_4x_l2");
    t->capped = cJSON_IsFalse(b2) || cJSON_IsFalse(b4);
    return 0;
}

int cli_probe_from_json(const cJSON *j, cli_probe_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(j, "device");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "device_name");
    const cJSON *lat = cJSON_GetObjectItemCaseSensitive(j, "latency");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(j, "bandwidth");
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(j, "levels");
    if (!cJSON_IsString(dev) ||
        (strcmp(dev->valuestring, "cpu") != 0 && strcmp(dev->valuestring, "cuda") != 0)) {
        snprintf(err, errlen, "\"device\" is missing or neither \"cpu\" nor \"cuda\"");
        return -1;
    }
    if (!cJSON_IsArray(lat) || !cJSON_IsArray(bw) || !cJSON_IsArray(lv) ||
        cJSON_GetArraySize(lat) != cJSON_GetArraySize(bw)) {
        snprintf(
            err, errlen,
            "\"latency\", \"bandwidth\" and \"levels\" must be arrays, the first two of one length");
        return -1;
    }
    const int gpu = !strcmp(dev->valuestring, "cuda");
    r->device = gpu ? "cuda" : "cpu";
    if (cJSON_IsString(name))
        hrmt_text_escape_str(r->device_name, sizeof r->device_name, name->valuestring);
    r->source = "a saved --json output";
    const cJSON *e;
    size_t i = 0;
    cJSON_ArrayForEach(e, lat) {
        if (i == CLI_PROBE_MAX_POINTS) break;
        const cJSON *b = cJSON_GetArrayItem(bw, (int)i);
        cli_probe_point *p = &r->points[i];
        p->bytes = get_size(e, "bytes");
        if (!p->bytes || get_num(e, "ns", &p->ns) || get_num(b, "read_gbps", &p->bw.read_gbps) ||
            get_num(b, "write_gbps", &p->bw.write_gbps) ||
            get_num(b, "copy_gbps", &p->bw.copy_gbps)) {
            snprintf(err, errlen, "sweep point %zu lacks bytes, ns or a bandwidth", i);
            return -1;
        }
        r->n_points = ++i;
    }
    cJSON_ArrayForEach(e, lv) {
        if (r->n_tiers == CLI_PROBE_MAX_TIERS) break;
        cli_probe_tier *t = &r->tiers[r->n_tiers];
        if (json_tier(e, t)) {
            snprintf(err, errlen, "level %zu lacks \"name\" or \"level\"", r->n_tiers);
            return -1;
        }
        r->n_tiers++;
        /* Sweep points are named by the caches (not SMEM) in order, then main memory. */
        if (t->level > 0 && !t->shared && r->n_bounds < CLI_PROBE_MAX_TIERS) {
            r->bounds[r->n_bounds] = t->size_bytes;
            r->bound_names[r->n_bounds++] = static_name(t->name);
        }
    }
    r->main_name = gpu ? "HBM" : "DRAM";
    return 0;
}
