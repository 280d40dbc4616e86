/* `hrmt probe` table, JSON and tier comparison (see probe_report.h). */
#include "cli/probe_report.h"

#include "cli/json_out.h"
#include "cli/table.h"

static cJSON *point_json(const cli_probe_result *r, const hrmt_topology *topo,
                         const cli_probe_point *p, int bandwidth) {
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
          !cJSON_AddStringToObject(o, "tier", cli_probe_tier_of(topo, p->bytes));
    if (bad) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *cli_probe_json(const cli_probe_result *r, const hrmt_topology *topo) {
    cJSON *root = cJSON_CreateObject();
    cJSON *lat = cJSON_AddArrayToObject(root, "latency");
    cJSON *bw = cJSON_AddArrayToObject(root, "bandwidth");
    cJSON *lv = cJSON_AddArrayToObject(root, "levels");
    if (!root || !lat || !bw || !lv || !cJSON_AddStringToObject(root, "device", r->device))
        goto oom;
    for (size_t i = 0; i < r->n_points; i++) {
        cJSON *a = point_json(r, topo, &r->points[i], 0);
        cJSON *b = point_json(r, topo, &r->points[i], 1);
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
            cli_json_add_num(o, "level", t->level) ||
            cli_json_add_num(o, "size_bytes", (double)t->size_bytes) ||
            cli_json_add_num(o, "probe_bytes", (double)t->probe_bytes) ||
            !cJSON_AddBoolToObject(o, "measured", t->measured) ||
            (t->measured ? cli_json_add_num(o, "ns", t->ns) : !cJSON_AddNullToObject(o, "ns")))
            goto oom;
        if (t->level > 0 && cli_json_add_num(o, "effective_bytes", (double)t->effective_bytes))
            goto oom;
        if (t->plateau_end_bytes &&
            cli_json_add_num(o, "plateau_end_bytes", (double)t->plateau_end_bytes))
            goto oom;
        if (t->level == 0 && !cJSON_AddBoolToObject(o, "beyond_2x_largest_cache", !t->capped))
            goto oom;
    }
    return root;
oom:
    cJSON_Delete(root);
    return NULL;
}

void cli_probe_print(const cli_probe_result *r, const hrmt_topology *topo, FILE *f) {
    static const char *const h[] = {"device",    "working set", "tier",     "latency ns",
                                    "read GB/s", "write GB/s",  "copy GB/s"};
    static const cli_align al[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_RIGHT, CLI_ALIGN_LEFT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT};
    cli_table *t = cli_table_create(7, h, al);
    char c[7][32];
    for (size_t i = 0; t && i < r->n_points; i++) {
        const cli_probe_point *p = &r->points[i];
        snprintf(c[0], 32, "%s", r->device);
        cli_format_bytes(p->bytes, c[1], 32);
        snprintf(c[2], 32, "%s", cli_probe_tier_of(topo, p->bytes));
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

    static const char *const h2[] = {"device",      "tier",       "capacity",  "effective",
                                     "measured at", "latency ns", "plateau to"};
    static const cli_align al2[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_LEFT,  CLI_ALIGN_RIGHT,
                                    CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT, CLI_ALIGN_RIGHT,
                                    CLI_ALIGN_RIGHT};
    t = cli_table_create(7, h2, al2);
    int capped = 0;
    for (size_t i = 0; t && i < r->n_tiers; i++) {
        const cli_probe_tier *tr = &r->tiers[i];
        snprintf(c[0], 32, "%s", r->device);
        snprintf(c[1], 32, "%s", tr->name);
        cli_format_bytes(tr->size_bytes, c[2], 32);
        if (tr->level > 0)
            cli_format_bytes(tr->effective_bytes, c[3], 32);
        else
            snprintf(c[3], 32, "-");
        cli_format_bytes(tr->probe_bytes, c[4], 32);
        if (tr->measured)
            snprintf(c[5], 32, "%.2f", tr->ns);
        else
            snprintf(c[5], 32, "not measured");
        if (tr->plateau_end_bytes)
            cli_format_bytes(tr->plateau_end_bytes, c[6], 32);
        else
            snprintf(c[6], 32, "-");
        capped |= tr->capped;
        const char *row[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
        cli_table_add_row(t, row);
    }
    if (t) cli_table_print(t, f);
    cli_table_destroy(t);
    fprintf(f,
            "(cache sizes from %s; effective = this core's usable share, see `hrmt info`; tier =\n"
            " smallest level the working set fits; plateau to = last size whose latency stays\n"
            " nearer this level's than the next's; not measured = beyond --max-bytes)\n",
            topo->source ? topo->source : "?");
    if (capped)
        fprintf(f,
                "main memory was probed below 2x the largest cache: free memory does not "
                "allow more\n");
}

void cli_probe_print_compare(const cli_probe_result *cpu, const cli_probe_result *gpu,
                             const char *gpu_note, FILE *f) {
    static const char *const h[] = {"tier", "CPU",          "CPU capacity", "CPU ns",
                                    "GPU",  "GPU capacity", "GPU ns"};
    static const cli_align al[] = {CLI_ALIGN_LEFT,  CLI_ALIGN_LEFT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT, CLI_ALIGN_LEFT, CLI_ALIGN_RIGHT,
                                   CLI_ALIGN_RIGHT};
    /* Rows pair tiers by rank: fastest with fastest (L1 ~ SMEM), last with main memory. */
    static const char *const gpu_names[] = {"SMEM/L1", "L2", "-", "-", "HBM"};
    cli_table *t = cli_table_create(7, h, al);
    size_t n = cpu->n_tiers;
    if (gpu && gpu->n_tiers > n) n = gpu->n_tiers;
    char c[7][32];
    for (size_t i = 0; t && i < n; i++) {
        const cli_probe_tier *a = i < cpu->n_tiers ? &cpu->tiers[i] : NULL;
        const cli_probe_tier *b = gpu && i < gpu->n_tiers ? &gpu->tiers[i] : NULL;
        int last = i + 1 == n;
        snprintf(c[0], 32, "%s", last ? "main memory" : i == 0 ? "fastest" : "cache");
        snprintf(c[1], 32, "%s", a ? a->name : "-");
        if (a)
            cli_format_bytes(a->size_bytes, c[2], 32);
        else
            snprintf(c[2], 32, "-");
        if (a && a->measured)
            snprintf(c[3], 32, "%.2f", a->ns);
        else if (a)
            snprintf(c[3], 32, "not measured");
        else
            snprintf(c[3], 32, "-");
        if (b) {
            snprintf(c[4], 32, "%s", b->name);
            cli_format_bytes(b->size_bytes, c[5], 32);
            snprintf(c[6], 32, "%.2f", b->ns);
        } else {
            snprintf(c[4], 32, "%s", last ? gpu_names[4] : i < 2 ? gpu_names[i] : "-");
            snprintf(c[5], 32, "unavailable");
            snprintf(c[6], 32, "unavailable");
        }
        const char *row[7] = {c[0], c[1], c[2], c[3], c[4], c[5], c[6]};
        cli_table_add_row(t, row);
    }
    if (t) cli_table_print(t, f);
    cli_table_destroy(t);
    if (!gpu && gpu_note) fprintf(f, "GPU column unavailable: %s\n", gpu_note);
}
