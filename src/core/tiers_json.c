/* Tier-manager statistics as one JSON object. Keys follow the seed's
 * get_stats() (peak_mb, current_mb, hit_rate, avg_*_us ...) plus exact byte
 * counts and counters. */
#include <cjson/cJSON.h>

#include "core/tiers.h"

static int add_tier(cJSON *root, const char *key, hrmt_tiers *tm, hrmt_tier tier) {
    hrmt_tier_stats s;
    if (hrmt_tiers_stats(tm, tier, &s) != HRMT_OK) return 0;
    cJSON *o = cJSON_AddObjectToObject(root, key);
    if (!o) return 0;
    const double mb = 1024.0 * 1024.0;
    struct {
        const char *k;
        double v;
    } f[] = {
        {"total_alloc_bytes", (double)s.total_alloc_bytes},
        {"peak_alloc_bytes", (double)s.peak_alloc_bytes},
        {"current_alloc_bytes", (double)s.current_alloc_bytes},
        {"peak_mb", (double)s.peak_alloc_bytes / mb},
        {"current_mb", (double)s.current_alloc_bytes / mb},
        {"num_loads", (double)s.num_loads},
        {"num_stores", (double)s.num_stores},
        {"num_transfers", (double)s.num_transfers},
        {"total_load_us", s.total_load_us},
        {"total_store_us", s.total_store_us},
        {"total_transfer_us", s.total_transfer_us},
        {"avg_load_us", s.mean_load_us},
        {"avg_store_us", s.mean_store_us},
        {"avg_transfer_us", s.mean_transfer_us},
        {"hit_count", (double)s.hit_count},
        {"miss_count", (double)s.miss_count},
        {"hit_rate", s.hit_rate},
        {"scope_time_us", hrmt_tiers_scope_time_us(tm, tier)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!cJSON_AddNumberToObject(o, f[i].k, f[i].v)) return 0;
    return 1;
}

hrmt_status hrmt_tiers_stats_json(hrmt_tiers *tm, char **out_json) {
    if (!tm || !out_json) return HRMT_ERR_INVALID_ARG;
    cJSON *root = cJSON_CreateObject();
    hrmt_tiers_log_info li;
    hrmt_tiers_log_info_get(tm, &li);
    int ok = root && add_tier(root, "sram", tm, HRMT_TIER_SRAM) &&
             add_tier(root, "dram", tm, HRMT_TIER_DRAM) &&
             cJSON_AddNumberToObject(root, "sram_capacity_bytes",
                                     (double)hrmt_tiers_sram_capacity(tm)) &&
             cJSON_AddNumberToObject(root, "num_tensors", (double)li.num_tensors) &&
             cJSON_AddNumberToObject(root, "num_events", (double)li.held) &&
             cJSON_AddNumberToObject(root, "events_dropped", (double)li.dropped) &&
             cJSON_AddNumberToObject(root, "event_log_cap", (double)li.cap) &&
             cJSON_AddBoolToObject(root, "event_log_enabled", li.enabled);
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) return HRMT_ERR_OUT_OF_MEMORY;
    *out_json = text;
    return HRMT_OK;
}
