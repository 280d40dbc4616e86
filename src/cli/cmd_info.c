/* `hrmt info`: chosen ISA and those available, caches, tile plan, threads, CUDA. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/text_escape.h"
#include "hrmt.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: hrmt info [--json] [--help]\n"
            "Prints the chosen ISA and every ISA this CPU runs, the cache levels (size,\n"
            "line, associativity, sharing), the tile plan derived from them, the thread\n"
            "count and CUDA availability.\n"
            "  --json   one JSON object instead of text\n"
            "Each cache shows its claimed size and the effective per-core share the tile\n"
            "plan uses, with where it came from (see README, \"Cache topology\").\n"
            "Environment: HRMT_ISA=scalar|avx2|avx512|neon|amx, HRMT_CACHE_L1D/L2/L3 (bytes),\n"
            "HRMT_CALIBRATE=0 (skip the cache calibration), "
            "HRMT_GEMM_KC/MC/NC, OMP_NUM_THREADS.\n");
}

static const char *cuda_status(const hrmt_cuda_info *ci) {
    if (!ci->built) return "not built";
    if (ci->device_count == 0) return "no device";
    return "available";
}

static const char *level_name(int level) {
    switch (level) {
    case 1: return "L1d";
    case 2: return "L2";
    case 3: return "L3";
    default: return "L4";
    }
}

static void print_bytes(size_t b) {
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        printf("%zu MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        printf("%zu KiB", b >> 10);
    else
        printf("%zu B", b);
}

static void print_text(hrmt_context *ctx, const hrmt_cuda_info *ci) {
    unsigned avail = hrmt_isas_available();
    printf("hrmt %d.%d.%d\n", HRMT_VERSION_MAJOR, HRMT_VERSION_MINOR, HRMT_VERSION_PATCH);
    printf("isa:          %s (available:", hrmt_isa_name(hrmt_context_isa(ctx)));
    for (int i = 0; i < HRMT_ISA_COUNT; i++)
        if (avail & (1u << i)) printf(" %s", hrmt_isa_name((hrmt_isa)i));
    printf(")\nthreads:      %d\n", hrmt_context_threads(ctx));

    const hrmt_topology *t = hrmt_context_topology(ctx);
    printf("caches:       %d cores, detected by %s\n", t->num_cores, t->source);
    for (int i = 0; i < t->num_levels; i++) {
        const hrmt_cache_level *c = &t->caches[i];
        printf("  %-4s %10zu bytes (", level_name(c->level), c->size_bytes);
        print_bytes(c->size_bytes);
        printf("), line %zu B, ", c->line_bytes);
        if (c->ways > 0)
            printf("%d-way", c->ways);
        else
            printf("%s", c->ways < 0 ? "fully associative" : "ways unknown");
        printf(", shared by %d core%s\n", c->shared_by_cores, c->shared_by_cores == 1 ? "" : "s");
        printf("       effective %zu bytes (", c->effective_bytes);
        print_bytes(c->effective_bytes);
        printf(") per core: %s", c->effective_source ? c->effective_source : "?");
        if (c->measured_bytes) {
            printf(", plateau measured to ");
            print_bytes(c->measured_bytes);
        }
        printf("\n");
    }

    const hrmt_tile_plan *p = hrmt_context_tile_plan(ctx);
    printf("tile plan:\n");
    printf("  sram tier    %zu bytes\n", p->sram_tier_bytes);
    printf("  L-level tile %zu bytes\n", p->l_tile_bytes);
    printf("  gemm         MR x NR = %zu x %zu, KC %zu, MC %zu, NC %zu\n", p->gemm_mr, p->gemm_nr,
           p->gemm_kc, p->gemm_mc, p->gemm_nc);

    printf("cuda:         %s", cuda_status(ci));
    if (ci->built && ci->device_count > 0)
        printf(
            " (%d device%s): device %d %s, sm_%d%d, %d SMs, SMEM %zu bytes per SM (%zu per "
            "block), L2 %zu bytes, memory %zu bytes, driver %d, runtime %d",
            ci->device_count, ci->device_count == 1 ? "" : "s", ci->device, ci->name, ci->cc_major,
            ci->cc_minor, ci->sm_count, ci->smem_per_sm, ci->smem_per_block, ci->l2_bytes,
            ci->global_mem_bytes, ci->driver_version, ci->runtime_version);
    printf("\n");
}

/* Builds the --json object; NULL when cJSON runs out of memory. */
static cJSON *build_json(hrmt_context *ctx, const hrmt_cuda_info *ci) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    int ok = 1;
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", HRMT_VERSION_MAJOR, HRMT_VERSION_MINOR,
             HRMT_VERSION_PATCH);
    ok &= cJSON_AddStringToObject(root, "version", version) != NULL;
    ok &= cJSON_AddStringToObject(root, "isa", hrmt_isa_name(hrmt_context_isa(ctx))) != NULL;
    cJSON *isas = cJSON_AddArrayToObject(root, "isas_available");
    ok &= isas != NULL;
    unsigned avail = hrmt_isas_available();
    for (int i = 0; ok && i < HRMT_ISA_COUNT; i++)
        if (avail & (1u << i))
            ok &= cJSON_AddItemToArray(isas, cJSON_CreateString(hrmt_isa_name((hrmt_isa)i)));
    ok &= cJSON_AddNumberToObject(root, "threads", hrmt_context_threads(ctx)) != NULL;

    const hrmt_topology *t = hrmt_context_topology(ctx);
    ok &= cJSON_AddNumberToObject(root, "cores", t->num_cores) != NULL;
    ok &= cJSON_AddStringToObject(root, "topology_source", t->source) != NULL;
    cJSON *caches = cJSON_AddArrayToObject(root, "caches");
    ok &= caches != NULL;
    for (int i = 0; ok && i < t->num_levels; i++) {
        const hrmt_cache_level *c = &t->caches[i];
        cJSON *o = cJSON_CreateObject();
        ok &= cJSON_AddItemToArray(caches, o);
        ok = ok && cJSON_AddNumberToObject(o, "level", c->level) &&
             cJSON_AddNumberToObject(o, "size_bytes", (double)c->size_bytes) &&
             cJSON_AddNumberToObject(o, "line_bytes", (double)c->line_bytes) &&
             cJSON_AddNumberToObject(o, "ways", c->ways) &&
             cJSON_AddNumberToObject(o, "shared_by_cores", c->shared_by_cores) &&
             cJSON_AddNumberToObject(o, "effective_bytes", (double)c->effective_bytes) &&
             cJSON_AddStringToObject(o, "effective_source",
                                     c->effective_source ? c->effective_source : "?") &&
             cJSON_AddNumberToObject(o, "measured_bytes", (double)c->measured_bytes);
    }

    const hrmt_tile_plan *p = hrmt_context_tile_plan(ctx);
    cJSON *tp = cJSON_AddObjectToObject(root, "tile_plan");
    ok = ok && tp && cJSON_AddNumberToObject(tp, "sram_tier_bytes", (double)p->sram_tier_bytes) &&
         cJSON_AddNumberToObject(tp, "l_tile_bytes", (double)p->l_tile_bytes) &&
         cJSON_AddNumberToObject(tp, "gemm_mr", (double)p->gemm_mr) &&
         cJSON_AddNumberToObject(tp, "gemm_nr", (double)p->gemm_nr) &&
         cJSON_AddNumberToObject(tp, "gemm_kc", (double)p->gemm_kc) &&
         cJSON_AddNumberToObject(tp, "gemm_mc", (double)p->gemm_mc) &&
         cJSON_AddNumberToObject(tp, "gemm_nc", (double)p->gemm_nc);

    cJSON *cu = cJSON_AddObjectToObject(root, "cuda");
    ok = ok && cu && cJSON_AddBoolToObject(cu, "built", ci->built) &&
         cJSON_AddStringToObject(cu, "status", cuda_status(ci)) &&
         cJSON_AddNumberToObject(cu, "device_count", ci->device_count);
    if (ok && ci->built && ci->device_count > 0)
        ok = cJSON_AddStringToObject(cu, "name", ci->name) &&
             cJSON_AddNumberToObject(cu, "smem_per_block", (double)ci->smem_per_block) &&
             cJSON_AddNumberToObject(cu, "l2_bytes", (double)ci->l2_bytes) &&
             cJSON_AddNumberToObject(cu, "global_mem_bytes", (double)ci->global_mem_bytes) &&
             cJSON_AddNumberToObject(cu, "device", ci->device) &&
             cJSON_AddNumberToObject(cu, "compute_capability", ci->cc_major * 10 + ci->cc_minor) &&
             cJSON_AddNumberToObject(cu, "sm_count", ci->sm_count) &&
             cJSON_AddNumberToObject(cu, "smem_per_sm", (double)ci->smem_per_sm) &&
             cJSON_AddNumberToObject(cu, "driver_version", ci->driver_version) &&
             cJSON_AddNumberToObject(cu, "runtime_version", ci->runtime_version);
    if (!ok) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int hrmt_cmd_info(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            char e[HRMT_ESCAPED_MAX];
            fprintf(stderr, "hrmt info: unknown option '%s'\n",
                    hrmt_text_escape_str(e, sizeof e, argv[i]));
            usage(stderr);
            return 2;
        }
    }

    char err[512] = "";
    hrmt_context *ctx = NULL;
    hrmt_status s = hrmt_context_create(NULL, &ctx, err, sizeof err);
    if (s != HRMT_OK) {
        fprintf(stderr, "hrmt info: %s: %s\n", hrmt_status_str(s), err[0] ? err : "no detail");
        return 1;
    }
    hrmt_cuda_info ci;
    if (hrmt_cuda_query(&ci) != HRMT_OK) memset(&ci, 0, sizeof ci);

    int rc = 0;
    if (json) {
        cJSON *root = build_json(ctx, &ci);
        char *text = root ? cJSON_Print(root) : NULL;
        if (text) {
            printf("%s\n", text);
            cJSON_free(text);
        } else {
            fprintf(stderr, "hrmt info: out of memory building JSON\n");
            rc = 1;
        }
        cJSON_Delete(root);
    } else {
        print_text(ctx, &ci);
    }
    hrmt_context_destroy(ctx);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
