/* Tile plan: GEMM blocking and SRAM-tier sizes as a pure function of the
 * cache topology (the analytical model of Low, Igual, Smith, Quintana-Orti,
 * "Analytical Modeling Is Enough for High-Performance BLIS", TOMS 43(2), 2016).
 *
 * Notation per cache level Lx: W = ways, B = bytes per way of this core's
 * effective share (effective_bytes / W; see hrmt_topology_effective: the
 * per-core share, capped where a claimed shared cache is implausible), S = element bytes, mr x nr =
 * register tile. All divisions floor unless written ceil.
 *
 *   KC (L1). The kc x nr micro-panel of W stays in L1 while mr x kc slivers of
 *   A stream through it. Keeping one way free for the streams of C, the
 *   remaining W1-1 ways are split between A and B in proportion mr : nr, so A
 *   gets C_Ar = max(1, (W1-1) * mr / (mr+nr)) ways [= (W1-1)/(1+nr/mr)] and
 *       KC = max(1, C_Ar * B1 / (mr * S)).
 *   (The B micro-panel then takes ceil(KC*nr*S/B1) <= W1-1-C_Ar ways.)
 *
 *   MC (L2). The mc x kc block of A lives in L2 next to one B micro-panel
 *   (C_Br2 = ceil(KC*nr*S / B2) ways) and one way for C:
 *       C_Ac = max(1, W2 - 1 - C_Br2),  MC = C_Ac * B2 / (KC * S),
 *   rounded down to a multiple of mr (at least mr).
 *
 *   NC (L3, this core's share). The kc x nc panel of W lives in L3 next to the
 *   A block (C_Ac3 = ceil(MC*KC*S / B3) ways) and one way for C:
 *       C_Bc = max(1, W3 - 1 - C_Ac3),  NC = C_Bc * B3 / (KC * S),
 *   rounded down to a multiple of nr (at least nr).
 *
 * Unknown associativity (ways == 0) is taken as 8; fully associative (-1) as
 * size/line ways of one line each. A missing L2 borrows L1, a missing L3
 * borrows L2. shared_by_cores 0 (unknown) counts as 1.
 *
 * SRAM tier (CPU): this core's share of L2, the largest private level whose
 * latency the L-level loop can live in; the L-level tile budget is half of it
 * (the other half stays for the GEMM A block and streams). */
#include "core/checked.h"
#include "hrmt.h"

#define ASSUMED_WAYS 8

typedef struct level_model {
    size_t ways;        /* W */
    size_t way_bytes;   /* B: bytes per way of this core's share */
    size_t share_bytes; /* size / shared_by_cores */
} level_model;

static const hrmt_cache_level *find_level(const hrmt_topology *t, int level) {
    for (int i = 0; i < t->num_levels; i++)
        if (t->caches[i].level == level) return &t->caches[i];
    return NULL;
}

static hrmt_status model_of(const hrmt_cache_level *c, level_model *out) {
    if (c->size_bytes == 0 || c->line_bytes == 0 || c->size_bytes < c->line_bytes || c->ways < -1 ||
        c->shared_by_cores < 0)
        return HRMT_ERR_INVALID_ARG;
    size_t shared = c->shared_by_cores > 0 ? (size_t)c->shared_by_cores : 1;
    if (c->effective_bytes > c->size_bytes / shared || c->effective_bytes > c->size_bytes)
        return HRMT_ERR_INVALID_ARG; /* an effective share never exceeds the claim */
    size_t ways = c->ways == 0    ? ASSUMED_WAYS
                  : c->ways == -1 ? c->size_bytes / c->line_bytes
                                  : (size_t)c->ways;
    out->ways = ways;
    out->share_bytes = c->effective_bytes ? c->effective_bytes : c->size_bytes / shared;
    out->way_bytes = out->share_bytes / ways;
    if (out->way_bytes == 0) return HRMT_ERR_INVALID_ARG;
    return HRMT_OK;
}

static size_t ceil_div(size_t a, size_t b) { return a / b + (a % b != 0); }

/* Ways of a level taken by `bytes` (ceil). */
static size_t ways_for(size_t bytes, size_t way_bytes) { return ceil_div(bytes, way_bytes); }

/* max(1, ways - 1 - taken): ways left for the block being sized. */
static size_t ways_left(size_t ways, size_t taken) {
    return ways > taken + 1 ? ways - 1 - taken : 1;
}

hrmt_status hrmt_tile_plan_compute(const hrmt_topology *topo, size_t mr, size_t nr,
                                   size_t elem_bytes, hrmt_tile_plan *out) {
    if (!topo || !out || mr == 0 || nr == 0 || elem_bytes == 0) return HRMT_ERR_INVALID_ARG;
    if (topo->num_levels < 1 || topo->num_levels > HRMT_MAX_CACHE_LEVELS)
        return HRMT_ERR_INVALID_ARG;
    /* Levels without an effective size get hrmt_topology_effective's rule
     * (no calibration: this stays a pure function). */
    hrmt_topology eff = *topo, derived = *topo;
    (void)hrmt_topology_effective(&derived, 0);
    for (int i = 0; i < eff.num_levels; i++)
        if (eff.caches[i].effective_bytes == 0)
            eff.caches[i].effective_bytes = derived.caches[i].effective_bytes;
    topo = &eff;
    const hrmt_cache_level *c1 = find_level(topo, 1);
    if (!c1) return HRMT_ERR_INVALID_ARG;
    const hrmt_cache_level *c2 = find_level(topo, 2);
    if (!c2) c2 = c1;
    const hrmt_cache_level *c3 = find_level(topo, 3);
    if (!c3) c3 = c2;

    level_model l1, l2, l3;
    hrmt_status s;
    if ((s = model_of(c1, &l1)) != HRMT_OK || (s = model_of(c2, &l2)) != HRMT_OK ||
        (s = model_of(c3, &l3)) != HRMT_OK)
        return s;

    size_t t, mrs, nrs;
    if (!hrmt_mul_ok(mr, elem_bytes, &mrs) || !hrmt_mul_ok(nr, elem_bytes, &nrs) ||
        !hrmt_add_ok(mr, nr, &t))
        return HRMT_ERR_OVERFLOW;

    /* KC from L1. */
    size_t c_ar, mnr = t;
    if (!hrmt_mul_ok(l1.ways - 1, mr, &c_ar)) return HRMT_ERR_OVERFLOW;
    c_ar /= mnr;
    if (c_ar == 0) c_ar = 1;
    size_t kc;
    if (!hrmt_mul_ok(c_ar, l1.way_bytes, &t)) return HRMT_ERR_OVERFLOW;
    kc = t / mrs;
    if (kc == 0) kc = 1;

    /* MC from L2. */
    size_t kcs, b_panel;
    if (!hrmt_mul_ok(kc, elem_bytes, &kcs) || !hrmt_mul_ok(kc, nrs, &b_panel))
        return HRMT_ERR_OVERFLOW;
    size_t c_ac = ways_left(l2.ways, ways_for(b_panel, l2.way_bytes));
    if (!hrmt_mul_ok(c_ac, l2.way_bytes, &t)) return HRMT_ERR_OVERFLOW;
    size_t mc = t / kcs / mr * mr;
    if (mc == 0) mc = mr;

    /* NC from this core's share of L3. */
    size_t a_block;
    if (!hrmt_mul_ok(mc, kcs, &a_block)) return HRMT_ERR_OVERFLOW;
    size_t c_bc = ways_left(l3.ways, ways_for(a_block, l3.way_bytes));
    if (!hrmt_mul_ok(c_bc, l3.way_bytes, &t)) return HRMT_ERR_OVERFLOW;
    size_t nc = t / kcs / nr * nr;
    if (nc == 0) nc = nr;

    out->sram_tier_bytes = l2.share_bytes;
    out->l_tile_bytes = l2.share_bytes / 2;
    out->gemm_mr = mr;
    out->gemm_nr = nr;
    out->gemm_kc = kc;
    out->gemm_mc = mc;
    out->gemm_nc = nc;
    return HRMT_OK;
}
