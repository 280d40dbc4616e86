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

/* Registers tensor `name` over memory the caller owns (`data` on `device`,
 * e.g. a CUDA tile's buffer): placed and counted as hrmt_tiers_alloc_sram
 * would place a tensor of its size (an SRAM hit when it fits the tier's
 * capacity, else a miss in DRAM) and logged as an allocation, but no host
 * memory is taken or zeroed; hrmt_tiers_free forgets it without freeing
 * `data`, and the transfers refuse it (UNSUPPORTED: its data need not be the
 * host's). out (may be NULL) gets the descriptor. Errors: INVALID_ARG (NULL
 * tm, name, shape or data; an unknown device), EXISTS, and
 * hrmt_tensor_init's. */
hrmt_status hrmt_tiers_register_sram(hrmt_tiers *tm, const char *name, int ndim,
                                     const size_t *shape, hrmt_dtype dtype, void *data,
                                     hrmt_device device, hrmt_tensor *out);

typedef struct hrmt_tiers_log_info {
    int enabled;
    size_t cap;       /* ring capacity */
    size_t held;      /* events in the ring now */
    uint64_t dropped; /* events overwritten since the last reset */
    size_t num_tensors;
} hrmt_tiers_log_info;
void hrmt_tiers_log_info_get(hrmt_tiers *tm, hrmt_tiers_log_info *out);

#endif
