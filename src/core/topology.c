/* PLACEHOLDER until the foundation work lands: fixed defaults. */
#include <string.h>

#include "hrmt.h"

hrmt_status hrmt_topology_detect(hrmt_topology *out) {
    if (!out) return HRMT_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    out->num_levels = 3;
    out->caches[0] = (hrmt_cache_level){1, 32768, 64, 8, 1};
    out->caches[1] = (hrmt_cache_level){2, 1048576, 64, 8, 1};
    out->caches[2] = (hrmt_cache_level){3, 33554432, 64, 16, 2};
    out->num_cores = 2;
    out->source = "default";
    return HRMT_OK;
}
