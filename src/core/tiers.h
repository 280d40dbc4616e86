/* Tier-manager internals shared with the context, the model and the JSON
 * writer (the public part is in hrmt.h). */
#ifndef HRMT_CORE_TIERS_H
#define HRMT_CORE_TIERS_H

#include <stdint.h>

#include "hrmt.h"

/* OpenMP team size that hrmt_tiers_scope_begin(tm, tier) selects for the
 * calling thread (omp_set_num_threads) until the matching scope_end restores
 * the previous value. 0 (the default) leaves the team size alone. On CPU this
 * is the whole "SRAM/DRAM context": the L-level can run with one team size
 * and the H-level with another. Negative n is INVALID_ARG. */
hrmt_status hrmt_tiers_set_scope_threads(hrmt_tiers *tm, hrmt_tier tier, int n);
int hrmt_tiers_scope_threads(const hrmt_tiers *tm, hrmt_tier tier);

typedef struct hrmt_tiers_log_info {
    int enabled;
    size_t cap;       /* ring capacity */
    size_t held;      /* events in the ring now */
    uint64_t dropped; /* events overwritten since the last reset */
    size_t num_tensors;
} hrmt_tiers_log_info;
void hrmt_tiers_log_info_get(hrmt_tiers *tm, hrmt_tiers_log_info *out);

#endif
