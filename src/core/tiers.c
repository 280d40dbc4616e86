/* PLACEHOLDER until the foundation work lands: creation/destruction only. */
#include <stdlib.h>

#include "hrmt.h"

struct hrmt_tiers {
    size_t cap;
};

hrmt_status hrmt_tiers_create(size_t cap, size_t event_cap, hrmt_tiers **out) {
    (void)event_cap;
    if (!out || !cap) return HRMT_ERR_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    if (!*out) return HRMT_ERR_OUT_OF_MEMORY;
    (*out)->cap = cap;
    return HRMT_OK;
}
void hrmt_tiers_destroy(hrmt_tiers *tm) { free(tm); }
hrmt_status hrmt_tiers_set_event_log(hrmt_tiers *tm, int enabled, size_t cap) {
    (void)tm; (void)enabled; (void)cap;
    return HRMT_OK;
}
