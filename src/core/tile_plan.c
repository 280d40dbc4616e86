/* PLACEHOLDER until the foundation work lands. */
#include "hrmt.h"

hrmt_status hrmt_tile_plan_compute(const hrmt_topology *topo, size_t mr, size_t nr,
                                   size_t elem_bytes, hrmt_tile_plan *out) {
    if (!topo || !out || !mr || !nr || !elem_bytes) return HRMT_ERR_INVALID_ARG;
    out->sram_tier_bytes = topo->caches[1].size_bytes;
    out->l_tile_bytes = topo->caches[1].size_bytes / 2;
    out->gemm_mr = mr;
    out->gemm_nr = nr;
    out->gemm_kc = 256;
    out->gemm_mc = 128;
    out->gemm_nc = 4096;
    return HRMT_OK;
}
