/* Tile plan (src/core/tile_plan.c): the analytical blocking of Low et al.
 * checked against values worked out by hand from the formulas, for invented
 * topologies; monotonic behaviour; bad input. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_common.h"

static hrmt_topology topo3(size_t l1, int w1, size_t l2, int w2, int s2, size_t l3, int w3,
                           int s3) {
    hrmt_topology t = {0};
    t.num_levels = 3;
    t.caches[0] = (hrmt_cache_level){
        .level = 1, .size_bytes = l1, .line_bytes = 64, .ways = w1, .shared_by_cores = 1};
    t.caches[1] = (hrmt_cache_level){
        .level = 2, .size_bytes = l2, .line_bytes = 64, .ways = w2, .shared_by_cores = s2};
    t.caches[2] = (hrmt_cache_level){
        .level = 3, .size_bytes = l3, .line_bytes = 64, .ways = w3, .shared_by_cores = s3};
    t.num_cores = s3;
    t.source = "test";
    return t;
}

/* The plan's GEMM blocking is KC x MC x NC (a macro: failures name the test's line). */
#define EXPECT_BLOCKS(p, kc, mc, nc)     \
    do {                                 \
        cr_expect_eq((p).gemm_kc, (kc)); \
        cr_expect_eq((p).gemm_mc, (mc)); \
        cr_expect_eq((p).gemm_nc, (nc)); \
    } while (0)

static hrmt_tile_plan plan_of(const hrmt_topology *t, size_t mr, size_t nr, size_t s) {
    hrmt_tile_plan p;
    cr_assert_eq(hrmt_tile_plan_compute(t, mr, nr, s, &p), HRMT_OK);
    return p;
}

/* 32K/8-way L1, 1M/8-way L2, 32M/16-way L3 shared by 2; 14x32 F32 tile.
 *  L1: B1 = 32768/8 = 4096; C_Ar = 7*14/46 = 2; KC = 2*4096/(14*4) = 146.
 *  L2: B2 = 131072; B micro-panel 146*32*4 = 18688 -> 1 way; C_Ac = 8-1-1 = 6;
 *      MC = 6*131072/(146*4) = 1346 -> multiple of 14: 1344.
 *  L3: share 16M, B3 = 1048576; A block 1344*584 = 784896 -> 1 way;
 *      C_Bc = 16-1-1 = 14; NC = 14*1048576/584 = 25137 -> multiple of 32: 25120. */
Test(tile_plan, zen4_like_f32_14x32) {
    hrmt_topology t = topo3(32768, 8, 1048576, 8, 1, 33554432, 16, 2);
    t.caches[2].measured_bytes = 33554432; /* calibrated: the whole claim is real */
    hrmt_tile_plan p = plan_of(&t, 14, 32, 4);
    EXPECT_BLOCKS(p, 146, 1344, 25120);
    cr_expect_eq(p.gemm_mr, 14);
    cr_expect_eq(p.gemm_nr, 32);
    cr_expect_eq(p.sram_tier_bytes, 1048576);
    cr_expect_eq(p.l_tile_bytes, 524288);
}

/* The same caches with 2-byte elements: KC = 2*4096/(14*2) = 292;
 * B panel 292*32*2 = 18688 -> 1 way, MC = 6*131072/584 -> 1344; NC 25120. */
Test(tile_plan, zen4_like_bf16_doubles_kc) {
    hrmt_topology t = topo3(32768, 8, 1048576, 8, 1, 33554432, 16, 2);
    t.caches[2].measured_bytes = 33554432; /* calibrated: the whole claim is real */
    hrmt_tile_plan p = plan_of(&t, 14, 32, 2);
    EXPECT_BLOCKS(p, 292, 1344, 25120);
}

/* 48K/12-way L1, 2M/16-way L2, 8M/16-way L3 shared by 4; 6x16 tile.
 *  L1: B1 = 4096; C_Ar = 11*6/22 = 3; KC = 3*4096/24 = 512.
 *  L2: B2 = 131072; B panel 512*16*4 = 32768 -> 1 way; C_Ac = 14;
 *      MC = 14*131072/2048 = 896 -> multiple of 6: 894.
 *  L3: share 2M, B3 = 131072; A block 894*2048 = 1830912 -> 14 ways;
 *      C_Bc = max(1, 16-1-14) = 1; NC = 131072/2048 = 64. */
Test(tile_plan, intel_like_avx2_6x16) {
    hrmt_topology t = topo3(49152, 12, 2097152, 16, 1, 8388608, 16, 4);
    hrmt_tile_plan p = plan_of(&t, 6, 16, 4);
    EXPECT_BLOCKS(p, 512, 894, 64);
    cr_expect_eq(p.sram_tier_bytes, 2097152);
    cr_expect_eq(p.l_tile_bytes, 1048576);
}

/* L2 shared by 2 cores (per-core share 512K), 4-way L1.
 *  L1 32K/4: B1 = 8192; C_Ar = 3*8/24 = 1; KC = 8192/32 = 256 (8x16 tile).
 *  L2 1M/16 shared by 2: B2 = 524288/16 = 32768; B panel 256*64 = 16384 ->
 *      1 way; C_Ac = 14; MC = 14*32768/1024 = 448 (multiple of 8).
 *  L3 4M/8 shared by 1: B3 = 524288; A block 448*1024 = 458752 -> 1 way;
 *      C_Bc = 6; NC = 6*524288/1024 = 3072. */
Test(tile_plan, shared_l2_and_low_associativity) {
    hrmt_topology t = topo3(32768, 4, 1048576, 16, 2, 4194304, 8, 1);
    hrmt_tile_plan p = plan_of(&t, 8, 16, 4);
    EXPECT_BLOCKS(p, 256, 448, 3072);
    cr_expect_eq(p.sram_tier_bytes, 524288);
}

/* Unknown ways count as 8; fully associative as size/line ways of a line.
 *  L1 32K fully associative: W = 512, B1 = 64; C_Ar = 511*14/46 = 155;
 *  KC = 155*64/56 = 177. */
Test(tile_plan, unknown_and_fully_associative) {
    hrmt_topology known = topo3(32768, 8, 1048576, 8, 1, 33554432, 8, 2);
    hrmt_topology unknown = topo3(32768, 0, 1048576, 0, 1, 33554432, 0, 2);
    hrmt_tile_plan a = plan_of(&known, 14, 32, 4), b = plan_of(&unknown, 14, 32, 4);
    EXPECT_BLOCKS(a, b.gemm_kc, b.gemm_mc, b.gemm_nc);
    hrmt_topology full = topo3(32768, -1, 1048576, 8, 1, 33554432, 16, 2);
    cr_expect_eq(plan_of(&full, 14, 32, 4).gemm_kc, 177);
}

/* Without L3 the W panel is sized against L2:
 *  B = 131072, A block 1344*584 = 784896 -> 6 ways; C_Bc = 8-1-6 = 1;
 *  NC = 131072/584 = 224 (multiple of 32). */
Test(tile_plan, missing_l3_uses_l2) {
    hrmt_topology t = topo3(32768, 8, 1048576, 8, 1, 33554432, 16, 2);
    t.num_levels = 2;
    hrmt_tile_plan p = plan_of(&t, 14, 32, 4);
    EXPECT_BLOCKS(p, 146, 1344, 224);
}

Test(tile_plan, monotonic_in_cache_sizes) {
    hrmt_tile_plan prev = {0};
    for (size_t l1 = 16384; l1 <= 262144; l1 *= 2) {
        hrmt_topology t = topo3(l1, 8, 1048576, 8, 1, 33554432, 16, 2);
        hrmt_tile_plan p = plan_of(&t, 14, 32, 4);
        cr_expect_geq(p.gemm_kc, prev.gemm_kc, "KC shrank when L1 grew to %zu", l1);
        prev = p;
    }
    prev = (hrmt_tile_plan){0};
    for (size_t l2 = 262144; l2 <= 8388608; l2 *= 2) {
        hrmt_topology t = topo3(32768, 8, l2, 8, 1, 33554432, 16, 2);
        hrmt_tile_plan p = plan_of(&t, 14, 32, 4);
        cr_expect_geq(p.gemm_mc, prev.gemm_mc, "MC shrank when L2 grew to %zu", l2);
        cr_expect_geq(p.sram_tier_bytes, prev.sram_tier_bytes);
        prev = p;
    }
    prev = (hrmt_tile_plan){0};
    for (size_t l3 = 4194304; l3 <= 268435456; l3 *= 2) {
        hrmt_topology t = topo3(32768, 8, 1048576, 8, 1, l3, 16, 2);
        hrmt_tile_plan p = plan_of(&t, 14, 32, 4);
        cr_expect_geq(p.gemm_nc, prev.gemm_nc, "NC shrank when L3 grew to %zu", l3);
        prev = p;
    }
    /* More cores sharing L3 leave each a smaller panel. */
    size_t last = SIZE_MAX;
    for (int share = 1; share <= 64; share *= 2) {
        hrmt_topology t = topo3(32768, 8, 1048576, 8, 1, 33554432, 16, share);
        hrmt_tile_plan p = plan_of(&t, 14, 32, 4);
        cr_expect_leq(p.gemm_nc, last, "NC grew when %d cores share L3", share);
        cr_expect_geq(p.gemm_nc, 32);
        last = p.gemm_nc;
    }
}

/* A pure function: same input, same output, input untouched. */
Test(tile_plan, pure) {
    hrmt_topology t = topo3(49152, 12, 2097152, 16, 1, 8388608, 16, 4), copy = t;
    hrmt_tile_plan a = plan_of(&t, 6, 16, 4), b = plan_of(&t, 6, 16, 4);
    cr_expect_eq(memcmp(&a, &b, sizeof a), 0);
    cr_expect_eq(memcmp(&t, &copy, sizeof t), 0);
}

Test(tile_plan, bad_inputs) {
    hrmt_topology good = topo3(32768, 8, 1048576, 8, 1, 33554432, 16, 2), t;
    hrmt_tile_plan p = {0};
    cr_expect_eq(hrmt_tile_plan_compute(NULL, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tile_plan_compute(&good, 14, 32, 4, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tile_plan_compute(&good, 0, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tile_plan_compute(&good, 14, 0, 4, &p), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tile_plan_compute(&good, 14, 32, 0, &p), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tile_plan_compute(&good, SIZE_MAX / 2, 32, 4, &p), HRMT_ERR_OVERFLOW);
    t = good;
    t.num_levels = 0;
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    t.num_levels = HRMT_MAX_CACHE_LEVELS + 1;
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    t = good;
    t.caches[0].level = 4; /* no L1 */
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    t = good;
    t.caches[1].size_bytes = 0;
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    t = good;
    t.caches[0].line_bytes = 0;
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    t = good;
    t.caches[2].ways = -2;
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    t = good;
    t.caches[2].shared_by_cores = -1;
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    t = good;
    t.caches[0].size_bytes = 32; /* smaller than a line */
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(p.gemm_kc, 0, "output untouched on failure");
}

/* The context applies HRMT_GEMM_KC/MC/NC on top of the computed plan. */
Test(tile_plan, context_overrides) {
    setenv("HRMT_GEMM_KC", "100", 1);
    setenv("HRMT_GEMM_MC", "200", 1);
    setenv("HRMT_GEMM_NC", "300", 1);
    hrmt_context *ctx = hrmt_test_context();
    const hrmt_tile_plan *p = hrmt_context_tile_plan(ctx);
    EXPECT_BLOCKS(*p, 100, 200, 300);
    hrmt_context_destroy(ctx);
}

/* A VM's claim: hwloc reports the host's 480 MiB L3 as shared by the guest's
 * 2 cores. 240 MiB per core is not plausible next to a 2 MiB L2, so the plan
 * sizes NC from the capped share (max(8 x 2 MiB, 8 MiB) = 16 MiB), and the
 * KC x NC panel of W stays within it; a calibrated plateau caps it further. */
Test(tile_plan, vm_claiming_480mib_l3_stays_within_effective_share) {
    hrmt_topology t = topo3(49152, 12, 2097152, 16, 1, (size_t)480 << 20, 15, 2);
    const size_t s = 4;
    hrmt_tile_plan p = plan_of(&t, 14, 32, s); /* effective not derived: the planner applies it */
    cr_assert_eq(hrmt_topology_effective(&t, 2), HRMT_OK);
    const hrmt_cache_level *l3 = &t.caches[2];
    cr_expect_eq(l3->effective_bytes, (size_t)16 << 20);
    cr_expect_str_eq(l3->effective_source, "plausibility cap");
    cr_expect(p.gemm_kc * p.gemm_nc * s <= l3->effective_bytes, "KC %zu x NC %zu x %zu > %zu",
              p.gemm_kc, p.gemm_nc, s, l3->effective_bytes);
    cr_expect(p.gemm_nc * p.gemm_kc * s > l3->effective_bytes / 2, "uses most of it");
    hrmt_tile_plan q = plan_of(&t, 14, 32, s);
    cr_expect_eq(q.gemm_nc, p.gemm_nc, "same plan once the effective sizes are derived");

    /* Calibration measured a 24 MiB plateau for the instance: 12 MiB per core. */
    t.caches[2].measured_bytes = (size_t)24 << 20;
    cr_assert_eq(hrmt_topology_effective(&t, 2), HRMT_OK);
    cr_expect_eq(l3->effective_bytes, (size_t)12 << 20);
    cr_expect_str_eq(l3->effective_source, "calibrated");
    hrmt_tile_plan c = plan_of(&t, 14, 32, s);
    cr_expect(c.gemm_kc * c.gemm_nc * s <= l3->effective_bytes);
    cr_expect(c.gemm_nc < p.gemm_nc);
    /* L1/L2 blocking does not depend on L3. */
    cr_expect_eq(c.gemm_kc, p.gemm_kc);
    cr_expect_eq(c.gemm_mc, p.gemm_mc);
    cr_expect_eq(c.sram_tier_bytes, (size_t)2 << 20);
}

/* An effective share larger than the claim is refused, not used. */
Test(tile_plan, effective_above_claim_is_invalid) {
    hrmt_topology t = topo3(32768, 8, 1048576, 8, 1, 33554432, 16, 2);
    hrmt_tile_plan p;
    t.caches[2].effective_bytes = 33554432; /* the whole instance, but shared by 2 */
    cr_expect_eq(hrmt_tile_plan_compute(&t, 14, 32, 4, &p), HRMT_ERR_INVALID_ARG);
}
