/* Tier manager: capacity, spill and hit rate, peak/current after free, arena
 * reuse and coalescing, transfers, copies, the event ring, reset, free_all,
 * JSON, scopes, concurrent use from OpenMP threads, and error paths. Expected
 * numbers come from the sizes the tests choose, never from the code under test. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/tiers.h"
#include "support/test_common.h"

/* Huge-allocation tests expect NULL from the allocator, not an ASan abort. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static hrmt_tiers *make(size_t cap, size_t events) {
    hrmt_tiers *tm = NULL;
    cr_assert_eq(hrmt_tiers_create(cap, events, &tm), HRMT_OK);
    cr_assert_not_null(tm);
    return tm;
}

static hrmt_tier_stats stats(hrmt_tiers *tm, hrmt_tier t) {
    hrmt_tier_stats s;
    cr_assert_eq(hrmt_tiers_stats(tm, t, &s), HRMT_OK);
    return s;
}

/* An F32 vector of n floats (4n bytes). */
static hrmt_status alloc_f32(hrmt_tiers *tm, int sram, const char *name, size_t n,
                             hrmt_tensor *out) {
    size_t shape[1] = {n};
    return sram ? hrmt_tiers_alloc_sram(tm, name, 1, shape, HRMT_F32, out)
                : hrmt_tiers_alloc_dram(tm, name, 1, shape, HRMT_F32, out);
}

static int all_zero(const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

Test(tiers, capacity_spill_and_hit_rate) {
    hrmt_tiers *tm = make(4096, 0);
    hrmt_tensor a, b, c;
    cr_assert_eq(alloc_f32(tm, 1, "a", 256, &a), HRMT_OK); /* 1024 B */
    cr_assert_eq(alloc_f32(tm, 1, "b", 512, &b), HRMT_OK); /* 2048 B, 3072 total */
    cr_assert_eq(alloc_f32(tm, 1, "c", 512, &c), HRMT_OK); /* 5120 > 4096: spills */
    cr_expect_eq(a.tier, HRMT_TIER_SRAM);
    cr_expect_eq(b.tier, HRMT_TIER_SRAM);
    cr_expect_eq(c.tier, HRMT_TIER_DRAM);
    hrmt_tensor *all[3] = {&a, &b, &c};
    size_t bytes[3] = {1024, 2048, 2048};
    for (int i = 0; i < 3; i++) {
        cr_expect_eq((uintptr_t)all[i]->data % 64, 0, "64-byte aligned");
        cr_expect(all_zero(all[i]->data, bytes[i]), "zeroed");
        cr_expect_eq(all[i]->device, HRMT_DEVICE_HOST);
        cr_expect_eq(all[i]->dtype, HRMT_F32);
        cr_expect_eq(all[i]->ndim, 1);
    }
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM), d = stats(tm, HRMT_TIER_DRAM);
    cr_expect_eq(s.hit_count, 2);
    cr_expect_eq(s.miss_count, 1);
    cr_expect_float_eq(s.hit_rate, 2.0 / 3.0, 1e-12);
    cr_expect_eq(s.current_alloc_bytes, 3072);
    cr_expect_eq(s.peak_alloc_bytes, 3072);
    cr_expect_eq(s.total_alloc_bytes, 3072);
    cr_expect_eq(d.current_alloc_bytes, 2048, "the spilled tensor counts in DRAM");
    cr_expect_eq(d.hit_count + d.miss_count, 0, "DRAM has no hits or misses");
    cr_expect_float_eq(d.hit_rate, 0.0, 0.0);
    /* get returns the same descriptor. */
    hrmt_tensor g;
    cr_assert_eq(hrmt_tiers_get(tm, "c", &g), HRMT_OK);
    cr_expect_eq(g.data, c.data);
    cr_expect_eq(g.tier, HRMT_TIER_DRAM);
    hrmt_tiers_destroy(tm);
}

Test(tiers, exact_fit_is_a_hit_one_more_element_spills) {
    hrmt_tiers *tm = make(1024, 0);
    hrmt_tensor t;
    cr_assert_eq(alloc_f32(tm, 1, "full", 256, &t), HRMT_OK);
    cr_expect_eq(t.tier, HRMT_TIER_SRAM);
    cr_assert_eq(hrmt_tiers_free(tm, "full"), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "over", 257, &t), HRMT_OK);
    cr_expect_eq(t.tier, HRMT_TIER_DRAM);
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM);
    cr_expect_eq(s.hit_count, 1);
    cr_expect_eq(s.miss_count, 1);
    cr_expect_float_eq(s.hit_rate, 0.5, 1e-12);
    hrmt_tiers_destroy(tm);
}

Test(tiers, multi_dim_bf16_sizes) {
    hrmt_tiers *tm = make(1 << 20, 0);
    size_t shape[4] = {2, 3, 5, 7};
    hrmt_tensor t;
    cr_assert_eq(hrmt_tiers_alloc_sram(tm, "x", 4, shape, HRMT_BF16, &t), HRMT_OK);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).current_alloc_bytes, 2 * 3 * 5 * 7 * 2);
    cr_expect_eq(t.stride[0], 105);
    cr_expect_eq(t.stride[3], 1);
    hrmt_tiers_destroy(tm);
}

Test(tiers, peak_and_current_after_free) {
    hrmt_tiers *tm = make(8192, 0);
    hrmt_tensor t;
    cr_assert_eq(alloc_f32(tm, 1, "a", 512, &t), HRMT_OK);  /* 2048 */
    cr_assert_eq(alloc_f32(tm, 1, "b", 1024, &t), HRMT_OK); /* 4096 */
    cr_assert_eq(alloc_f32(tm, 0, "d", 100, &t), HRMT_OK);  /* 400 DRAM */
    cr_assert_eq(hrmt_tiers_free(tm, "a"), HRMT_OK);
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM);
    cr_expect_eq(s.current_alloc_bytes, 4096);
    cr_expect_eq(s.peak_alloc_bytes, 6144);
    cr_expect_eq(s.total_alloc_bytes, 6144);
    cr_assert_eq(hrmt_tiers_free(tm, "d"), HRMT_OK);
    hrmt_tier_stats d = stats(tm, HRMT_TIER_DRAM);
    cr_expect_eq(d.current_alloc_bytes, 0);
    cr_expect_eq(d.peak_alloc_bytes, 400);
    cr_expect_eq(hrmt_tiers_get(tm, "a", &t), HRMT_ERR_NOT_FOUND);
    cr_expect_eq(hrmt_tiers_free(tm, "a"), HRMT_ERR_NOT_FOUND, "double free");
    /* a's space is usable again (without the free, 2048 + 6144 would not fit). */
    hrmt_tensor c;
    cr_assert_eq(alloc_f32(tm, 1, "c", 512, &c), HRMT_OK);
    cr_expect_eq(c.tier, HRMT_TIER_SRAM);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).current_alloc_bytes, 6144);
    hrmt_tiers_destroy(tm);
}

Test(tiers, arena_reuses_and_coalesces_freed_space) {
    hrmt_tiers *tm = make(4096, 0);
    hrmt_tensor a, b, c, d, e, f;
    cr_assert_eq(alloc_f32(tm, 1, "a", 256, &a), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "b", 256, &b), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "c", 256, &c), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "d", 256, &d), HRMT_OK);
    hrmt_tensor *q[4] = {&a, &b, &c, &d};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(q[i]->tier, HRMT_TIER_SRAM);
        memset(q[i]->data, 0x10 + i, 1024);
    }
    /* Blocks do not overlap: each still holds its own pattern. */
    for (int i = 0; i < 4; i++) {
        unsigned char want[1024];
        memset(want, 0x10 + i, sizeof want);
        cr_expect_eq(memcmp(q[i]->data, want, 1024), 0, "block %d intact", i);
    }
    /* b and c are adjacent: freeing both leaves one 2048-byte hole. */
    cr_assert_eq(hrmt_tiers_free(tm, "b"), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "c"), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "e", 512, &e), HRMT_OK);
    cr_expect_eq(e.tier, HRMT_TIER_SRAM);
    cr_expect_eq(e.data, b.data, "first fit reuses the coalesced hole");
    cr_expect(all_zero(e.data, 2048), "reused memory is zeroed again");
    /* Freeing everything gives back one extent spanning the arena. */
    cr_assert_eq(hrmt_tiers_free(tm, "a"), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "e"), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "d"), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "f", 1024, &f), HRMT_OK);
    cr_expect_eq(f.tier, HRMT_TIER_SRAM);
    cr_expect_eq(f.data, a.data);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).miss_count, 0);
    hrmt_tiers_destroy(tm);
}

Test(tiers, fragmented_arena_spills) {
    hrmt_tiers *tm = make(4096, 0);
    hrmt_tensor t;
    const char *names[4] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) cr_assert_eq(alloc_f32(tm, 1, names[i], 256, &t), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "a"), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "c"), HRMT_OK);
    /* 2048 + 2048 <= 4096, but the free space is two separate 1024-byte holes. */
    cr_assert_eq(alloc_f32(tm, 1, "big", 512, &t), HRMT_OK);
    cr_expect_eq(t.tier, HRMT_TIER_DRAM);
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM);
    cr_expect_eq(s.miss_count, 1);
    cr_expect_eq(s.current_alloc_bytes, 2048);
    cr_expect_eq(stats(tm, HRMT_TIER_DRAM).current_alloc_bytes, 2048);
    hrmt_tiers_destroy(tm);
}

static void fill_pattern(hrmt_tensor *t, size_t n, float base) {
    float *p = t->data;
    for (size_t i = 0; i < n; i++) p[i] = base + (float)i;
}

Test(tiers, transfers_copy_time_and_count) {
    hrmt_tiers *tm = make(1 << 16, 0);
    hrmt_tensor s, d, out;
    cr_assert_eq(alloc_f32(tm, 1, "zl", 1000, &s), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 0, "zh", 600, &d), HRMT_OK);
    fill_pattern(&s, 1000, 1.0f);
    fill_pattern(&d, 600, -5.0f);

    cr_assert_eq(hrmt_tiers_transfer_sram_to_dram(tm, "zl", &out), HRMT_OK);
    cr_expect_eq(out.tier, HRMT_TIER_DRAM);
    cr_expect_neq(out.data, s.data);
    cr_expect_eq(memcmp(out.data, s.data, 4000), 0);
    hrmt_tensor g;
    cr_assert_eq(hrmt_tiers_get(tm, "zl_from_sram", &g), HRMT_OK);
    cr_expect_eq(g.data, out.data);

    cr_assert_eq(hrmt_tiers_transfer_dram_to_sram(tm, "zh", &out), HRMT_OK);
    cr_expect_eq(out.tier, HRMT_TIER_SRAM);
    cr_expect_eq(memcmp(out.data, d.data, 2400), 0);
    cr_assert_eq(hrmt_tiers_get(tm, "zh_from_dram", &g), HRMT_OK);

    hrmt_tier_stats ss = stats(tm, HRMT_TIER_SRAM), ds = stats(tm, HRMT_TIER_DRAM);
    cr_expect_eq(ss.num_transfers, 1);
    cr_expect_eq(ds.num_transfers, 1);
    cr_expect_geq(ss.total_transfer_us, 0.0);
    cr_expect_float_eq(ss.mean_transfer_us, ss.total_transfer_us, 1e-12);
    /* Destinations are allocations of their tier. */
    cr_expect_eq(ss.current_alloc_bytes, 4000 + 2400);
    cr_expect_eq(ds.current_alloc_bytes, 2400 + 4000);
    cr_expect_eq(ss.hit_count, 2, "zl and zh_from_dram");

    cr_expect_eq(hrmt_tiers_transfer_sram_to_dram(tm, "zl", &out), HRMT_ERR_EXISTS,
                 "destination name taken");
    cr_expect_eq(hrmt_tiers_transfer_sram_to_dram(tm, "nope", &out), HRMT_ERR_NOT_FOUND);
    cr_expect_eq(hrmt_tiers_transfer_dram_to_sram(tm, "nope", &out), HRMT_ERR_NOT_FOUND);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).num_transfers, 1, "failures are not counted");
    hrmt_tiers_destroy(tm);
}

Test(tiers, transfer_into_full_sram_spills) {
    hrmt_tiers *tm = make(4096, 0);
    hrmt_tensor t, out;
    cr_assert_eq(alloc_f32(tm, 1, "fill", 1024, &t), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 0, "h", 16, &t), HRMT_OK);
    cr_assert_eq(hrmt_tiers_transfer_dram_to_sram(tm, "h", &out), HRMT_OK);
    cr_expect_eq(out.tier, HRMT_TIER_DRAM);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).miss_count, 1);
    cr_expect_eq(stats(tm, HRMT_TIER_DRAM).num_transfers, 1);
    hrmt_tiers_destroy(tm);
}

/* Tensors over the caller's memory (a CUDA tile's device buffers): placed
 * and counted by the capacity rule (4096 bytes here: 1024 floats fit, the
 * next 16 spill), the caller's bytes untouched (no zeroing), never freed by
 * the manager (ASan: no free of a stack buffer), refused by the transfers. */
Test(tiers, registered_tensors_count_without_host_memory) {
    hrmt_tiers *tm = make(4096, 8);
    float a[1024], b[16];
    for (int i = 0; i < 1024; i++) a[i] = 7.0f;
    for (int i = 0; i < 16; i++) b[i] = 9.0f;
    size_t sa[1] = {1024}, sb[1] = {16};
    hrmt_tensor t;
    cr_assert_eq(hrmt_tiers_register_sram(tm, "a", 1, sa, HRMT_F32, a, HRMT_DEVICE_CUDA, &t),
                 HRMT_OK);
    cr_expect_eq(t.data, (void *)a);
    cr_expect_eq(t.device, HRMT_DEVICE_CUDA);
    cr_expect_eq(t.tier, HRMT_TIER_SRAM, "4096 bytes fit the 4096-byte tier");
    cr_assert_eq(hrmt_tiers_register_sram(tm, "b", 1, sb, HRMT_F32, b, HRMT_DEVICE_HOST, NULL),
                 HRMT_OK);
    hrmt_tensor g;
    cr_assert_eq(hrmt_tiers_get(tm, "b", &g), HRMT_OK);
    cr_expect_eq(g.data, (void *)b);
    cr_expect_eq(g.tier, HRMT_TIER_DRAM, "the next 64 bytes spill");
    hrmt_tier_stats ss = stats(tm, HRMT_TIER_SRAM), ds = stats(tm, HRMT_TIER_DRAM);
    cr_expect_eq(ss.hit_count, 1);
    cr_expect_eq(ss.miss_count, 1);
    cr_expect_eq(ss.current_alloc_bytes, 4096);
    cr_expect_eq(ds.current_alloc_bytes, 64);
    cr_expect_eq(a[0], 7.0f, "not zeroed");
    cr_expect_eq(b[15], 9.0f, "not zeroed");
    hrmt_tensor out;
    cr_expect_eq(hrmt_tiers_transfer_sram_to_dram(tm, "a", &out), HRMT_ERR_UNSUPPORTED);
    cr_expect_eq(hrmt_tiers_register_sram(tm, "a", 1, sa, HRMT_F32, a, HRMT_DEVICE_CUDA, NULL),
                 HRMT_ERR_EXISTS);
    cr_expect_eq(hrmt_tiers_register_sram(tm, "n", 1, sa, HRMT_F32, NULL, HRMT_DEVICE_CUDA, NULL),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_register_sram(tm, "d", 1, sa, HRMT_F32, a, (hrmt_device)7, NULL),
                 HRMT_ERR_INVALID_ARG);
    cr_assert_eq(hrmt_tiers_free(tm, "a"), HRMT_OK);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).current_alloc_bytes, 0);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).peak_alloc_bytes, 4096);
    cr_expect_eq(a[1023], 7.0f, "the caller's memory survives the free");
    hrmt_tiers_free_all(tm); /* "b" is registered: only forgotten */
    cr_expect_eq(b[0], 9.0f);
    hrmt_tiers_destroy(tm);
}

Test(tiers, copy_between_existing_tensors) {
    hrmt_tiers *tm = make(1 << 16, 0);
    hrmt_tensor s, d, other;
    cr_assert_eq(alloc_f32(tm, 1, "s", 64, &s), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 0, "d", 64, &d), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 0, "o", 65, &other), HRMT_OK);
    fill_pattern(&s, 64, 3.0f);
    cr_assert_eq(hrmt_tiers_copy(tm, &d, &s), HRMT_OK);
    cr_expect_eq(memcmp(d.data, s.data, 256), 0);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).num_transfers, 1, "counted on src's tier");
    cr_assert_eq(hrmt_tiers_copy(tm, &s, &d), HRMT_OK);
    cr_expect_eq(stats(tm, HRMT_TIER_DRAM).num_transfers, 1);

    cr_expect_eq(hrmt_tiers_copy(tm, &other, &s), HRMT_ERR_SHAPE);
    size_t shape[1] = {128};
    hrmt_tensor bf;
    cr_assert_eq(hrmt_tiers_alloc_dram(tm, "bf", 1, shape, HRMT_BF16, &bf), HRMT_OK);
    cr_expect_eq(hrmt_tiers_copy(tm, &bf, &s), HRMT_ERR_DTYPE, "same bytes, other dtype");
    cr_expect_eq(hrmt_tiers_copy(tm, NULL, &s), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_copy(tm, &d, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_copy(NULL, &d, &s), HRMT_ERR_INVALID_ARG);
    hrmt_tensor nodata = d;
    nodata.data = NULL;
    cr_expect_eq(hrmt_tiers_copy(tm, &nodata, &s), HRMT_ERR_INVALID_ARG);
    hrmt_tensor strided = d;
    size_t sh2[2] = {8, 8};
    cr_assert_eq(hrmt_tensor_init(&strided, d.data, HRMT_F32, 2, sh2), HRMT_OK);
    strided.shape[1] = 4; /* a column slice of the rows: not contiguous */
    strided.shape[0] = 16;
    cr_expect_eq(hrmt_tiers_copy(tm, &strided, &s), HRMT_ERR_SHAPE);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).num_transfers, 1, "failed copies not counted");
    hrmt_tiers_destroy(tm);
}

Test(tiers, record_loads_stores_transfers) {
    hrmt_tiers *tm = make(4096, 0);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 100, 2.0), HRMT_OK);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 100, 4.0), HRMT_OK);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_DRAM, HRMT_TIER_OP_STORE, 64, 10.0), HRMT_OK);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_DRAM, HRMT_TIER_OP_TRANSFER, 64, 1.5), HRMT_OK);
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM), d = stats(tm, HRMT_TIER_DRAM);
    cr_expect_eq(s.num_loads, 2);
    cr_expect_float_eq(s.total_load_us, 6.0, 1e-12);
    cr_expect_float_eq(s.mean_load_us, 3.0, 1e-12);
    cr_expect_eq(s.num_stores, 0);
    cr_expect_float_eq(s.mean_store_us, 0.0, 0.0);
    cr_expect_eq(d.num_stores, 1);
    cr_expect_float_eq(d.mean_store_us, 10.0, 1e-12);
    cr_expect_eq(d.num_transfers, 1);
    cr_expect_float_eq(d.total_transfer_us, 1.5, 1e-12);

    cr_expect_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_ALLOC, 1, 1.0),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_FREE, 1, 1.0),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, (hrmt_tier_op)99, 1, 1.0),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_record(tm, (hrmt_tier)7, HRMT_TIER_OP_LOAD, 1, 1.0),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 1, -1.0),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 1, NAN),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 1, INFINITY),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_record(NULL, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 1, 1.0),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).num_loads, 2, "rejected records not counted");
    hrmt_tiers_destroy(tm);
}

Test(tiers, event_log_contents) {
    hrmt_tiers *tm = make(4096, 16);
    hrmt_tensor t;
    cr_assert_eq(alloc_f32(tm, 1, "a", 64, &t), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "big", 4096, &t), HRMT_OK); /* spills */
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_STORE, 7, 1.25), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "a"), HRMT_OK);
    hrmt_tier_event ev[16];
    size_t n = 0;
    cr_assert_eq(hrmt_tiers_events(tm, ev, 16, &n), HRMT_OK);
    cr_assert_eq(n, 4);
    cr_expect(ev[0].tier == HRMT_TIER_SRAM && ev[0].op == HRMT_TIER_OP_ALLOC && ev[0].bytes == 256);
    cr_expect(ev[1].tier == HRMT_TIER_DRAM && ev[1].op == HRMT_TIER_OP_ALLOC &&
              ev[1].bytes == 16384);
    cr_expect(ev[2].tier == HRMT_TIER_SRAM && ev[2].op == HRMT_TIER_OP_STORE && ev[2].bytes == 7);
    cr_expect_float_eq(ev[2].duration_us, 1.25, 1e-12);
    cr_expect(ev[3].tier == HRMT_TIER_SRAM && ev[3].op == HRMT_TIER_OP_FREE && ev[3].bytes == 256);
    for (size_t i = 0; i < n; i++) {
        cr_expect_geq(ev[i].timestamp_s, 0.0);
        cr_expect_geq(ev[i].duration_us, 0.0);
        if (i) cr_expect_geq(ev[i].timestamp_s, ev[i - 1].timestamp_s, "monotonic");
    }
    cr_expect_eq(hrmt_tiers_events(tm, NULL, 4, &n), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_events(tm, ev, 4, NULL), HRMT_ERR_INVALID_ARG);
    cr_assert_eq(hrmt_tiers_events(tm, NULL, 0, &n), HRMT_OK);
    cr_expect_eq(n, 0);
    hrmt_tiers_destroy(tm);
}

Test(tiers, event_ring_is_bounded_and_can_be_disabled) {
    hrmt_tiers *tm = make(4096, 8);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_DRAM, HRMT_TIER_OP_LOAD, 1, (double)i),
                     HRMT_OK);
    hrmt_tier_event ev[32];
    size_t n = 0;
    cr_assert_eq(hrmt_tiers_events(tm, ev, 32, &n), HRMT_OK);
    cr_assert_eq(n, 8, "the ring keeps only its capacity");
    for (size_t i = 0; i < n; i++) cr_expect_float_eq(ev[i].duration_us, 12.0 + (double)i, 0.0);
    cr_assert_eq(hrmt_tiers_events(tm, ev, 3, &n), HRMT_OK);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) cr_expect_float_eq(ev[i].duration_us, 17.0 + (double)i, 0.0);

    /* Disabled: stats still count, the log does not grow. */
    cr_assert_eq(hrmt_tiers_set_event_log(tm, 0, 0), HRMT_OK);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_DRAM, HRMT_TIER_OP_LOAD, 1, 100.0), HRMT_OK);
    cr_assert_eq(hrmt_tiers_events(tm, ev, 32, &n), HRMT_OK);
    cr_expect_eq(n, 8);
    cr_expect_float_eq(ev[7].duration_us, 19.0, 0.0);
    cr_expect_eq(stats(tm, HRMT_TIER_DRAM).num_loads, 21);

    /* Re-enabled with a smaller ring: the most recent events survive. */
    cr_assert_eq(hrmt_tiers_set_event_log(tm, 1, 4), HRMT_OK);
    cr_assert_eq(hrmt_tiers_events(tm, ev, 32, &n), HRMT_OK);
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < n; i++) cr_expect_float_eq(ev[i].duration_us, 16.0 + (double)i, 0.0);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_DRAM, HRMT_TIER_OP_LOAD, 1, 200.0), HRMT_OK);
    cr_assert_eq(hrmt_tiers_events(tm, ev, 32, &n), HRMT_OK);
    cr_assert_eq(n, 4);
    cr_expect_float_eq(ev[0].duration_us, 17.0, 0.0);
    cr_expect_float_eq(ev[3].duration_us, 200.0, 0.0);
    /* Growing keeps everything held. */
    cr_assert_eq(hrmt_tiers_set_event_log(tm, 1, 100), HRMT_OK);
    cr_assert_eq(hrmt_tiers_events(tm, ev, 32, &n), HRMT_OK);
    cr_expect_eq(n, 4);
    cr_expect_eq(hrmt_tiers_set_event_log(NULL, 1, 4), HRMT_ERR_INVALID_ARG);
    hrmt_tiers_destroy(tm);
}

Test(tiers, reset_stats_keeps_live_bytes) {
    hrmt_tiers *tm = make(4096, 0);
    hrmt_tensor t;
    cr_assert_eq(alloc_f32(tm, 1, "a", 256, &t), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "b", 256, &t), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "x", 2048, &t), HRMT_OK); /* miss */
    cr_assert_eq(hrmt_tiers_free(tm, "b"), HRMT_OK);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 1, 5.0), HRMT_OK);
    cr_assert_eq(hrmt_tiers_scope_begin(tm, HRMT_TIER_SRAM), HRMT_OK);
    cr_assert_eq(hrmt_tiers_scope_end(tm, HRMT_TIER_SRAM), HRMT_OK);
    hrmt_tiers_reset_stats(tm);
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM), d = stats(tm, HRMT_TIER_DRAM);
    cr_expect_eq(s.hit_count + s.miss_count + s.num_loads + s.num_stores + s.num_transfers, 0);
    cr_expect_eq(s.total_alloc_bytes, 0);
    cr_expect_float_eq(s.total_load_us, 0.0, 0.0);
    cr_expect_eq(s.current_alloc_bytes, 1024, "a is still allocated");
    cr_expect_eq(s.peak_alloc_bytes, 1024, "peak restarts at current");
    cr_expect_eq(d.current_alloc_bytes, 8192);
    cr_expect_float_eq(hrmt_tiers_scope_time_us(tm, HRMT_TIER_SRAM), 0.0, 0.0);
    size_t n = 1;
    hrmt_tier_event ev[4];
    cr_assert_eq(hrmt_tiers_events(tm, ev, 4, &n), HRMT_OK);
    cr_expect_eq(n, 0, "log cleared");
    /* Freeing what was live before the reset brings current to exactly zero. */
    cr_assert_eq(hrmt_tiers_free(tm, "a"), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "x"), HRMT_OK);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).current_alloc_bytes, 0);
    cr_expect_eq(stats(tm, HRMT_TIER_DRAM).current_alloc_bytes, 0);
    hrmt_tiers_destroy(tm);
}

Test(tiers, free_all_releases_everything) {
    hrmt_tiers *tm = make(4096, 0);
    hrmt_tensor t;
    char name[32];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "t%d", i);
        cr_assert_eq(alloc_f32(tm, i % 2, name, 200, &t), HRMT_OK);
    }
    hrmt_tiers_free_all(tm);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).current_alloc_bytes, 0);
    cr_expect_eq(stats(tm, HRMT_TIER_DRAM).current_alloc_bytes, 0);
    /* Five 800-byte SRAM requests fit 4096 by bytes, but each arena block takes
     * 832, so the fifth spilled: peak is four of them. */
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).peak_alloc_bytes, 4 * 800, "peak is history");
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).miss_count, 1);
    cr_expect_eq(hrmt_tiers_get(tm, "t3", &t), HRMT_ERR_NOT_FOUND);
    /* Names and the whole arena are available again. */
    cr_assert_eq(alloc_f32(tm, 1, "t3", 1024, &t), HRMT_OK);
    cr_expect_eq(t.tier, HRMT_TIER_SRAM);
    hrmt_tiers_free_all(tm);
    hrmt_tiers_free_all(NULL);
    hrmt_tiers_destroy(tm);
    hrmt_tiers_destroy(NULL);
}

static double json_num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert(cJSON_IsNumber(v), "key %s", k);
    return v->valuedouble;
}

Test(tiers, stats_json_round_trips) {
    hrmt_tiers *tm = make(4096, 5);
    hrmt_tensor t, out;
    cr_assert_eq(alloc_f32(tm, 1, "a", 256, &t), HRMT_OK);
    cr_assert_eq(alloc_f32(tm, 1, "b", 2048, &t), HRMT_OK);
    cr_assert_eq(hrmt_tiers_transfer_sram_to_dram(tm, "a", &out), HRMT_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 8, 2.0), HRMT_OK);
    char *js = NULL;
    cr_assert_eq(hrmt_tiers_stats_json(tm, &js), HRMT_OK);
    cJSON *root = cJSON_Parse(js);
    cr_assert_not_null(root, "valid JSON: %s", js);
    const cJSON *sr = cJSON_GetObjectItemCaseSensitive(root, "sram");
    const cJSON *dr = cJSON_GetObjectItemCaseSensitive(root, "dram");
    cr_assert(cJSON_IsObject(sr) && cJSON_IsObject(dr));
    cr_expect_float_eq(json_num(sr, "hit_count"), 1.0, 0.0);
    cr_expect_float_eq(json_num(sr, "miss_count"), 1.0, 0.0);
    cr_expect_float_eq(json_num(sr, "hit_rate"), 0.5, 1e-12);
    cr_expect_float_eq(json_num(sr, "current_alloc_bytes"), 1024.0, 0.0);
    cr_expect_float_eq(json_num(sr, "current_mb"), 1024.0 / 1048576.0, 1e-15);
    cr_expect_float_eq(json_num(sr, "num_loads"), 4.0, 0.0);
    cr_expect_float_eq(json_num(sr, "avg_load_us"), 2.0, 1e-12);
    cr_expect_float_eq(json_num(sr, "num_transfers"), 1.0, 0.0);
    cr_expect_float_eq(json_num(dr, "current_alloc_bytes"), 8192.0 + 1024.0, 0.0);
    cr_expect_float_eq(json_num(dr, "peak_alloc_bytes"), 9216.0, 0.0);
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM);
    cr_expect_float_eq(json_num(sr, "total_transfer_us"), s.total_transfer_us,
                       1e-9 + 1e-12 * s.total_transfer_us);
    cr_expect_float_eq(json_num(root, "sram_capacity_bytes"), 4096.0, 0.0);
    cr_expect_float_eq(json_num(root, "num_tensors"), 3.0, 0.0);
    /* 3 allocs + 1 transfer + 4 loads = 8 events in a ring of 5. */
    cr_expect_float_eq(json_num(root, "num_events"), 5.0, 0.0);
    cr_expect_float_eq(json_num(root, "events_dropped"), 3.0, 0.0);
    cr_expect_float_eq(json_num(root, "event_log_cap"), 5.0, 0.0);
    cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "event_log_enabled")));
    cJSON_Delete(root);
    hrmt_free(js);
    cr_expect_eq(hrmt_tiers_stats_json(NULL, &js), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_stats_json(tm, NULL), HRMT_ERR_INVALID_ARG);
    hrmt_tiers_destroy(tm);
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

Test(tiers, scopes_accumulate_exclusive_time_and_select_threads) {
    hrmt_tiers *tm = make(4096, 0);
    int outer_threads = omp_get_max_threads();
    cr_assert_eq(hrmt_tiers_set_scope_threads(tm, HRMT_TIER_SRAM, 1), HRMT_OK);
    cr_expect_eq(hrmt_tiers_scope_threads(tm, HRMT_TIER_SRAM), 1);
    cr_expect_eq(hrmt_tiers_scope_threads(tm, HRMT_TIER_DRAM), 0);

    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    cr_assert_eq(hrmt_tiers_scope_begin(tm, HRMT_TIER_DRAM), HRMT_OK);
    sleep_us(3000);
    cr_assert_eq(hrmt_tiers_scope_begin(tm, HRMT_TIER_SRAM), HRMT_OK);
    cr_expect_eq(omp_get_max_threads(), 1, "the SRAM scope selects its team size");
    sleep_us(5000);
    cr_assert_eq(hrmt_tiers_scope_end(tm, HRMT_TIER_SRAM), HRMT_OK);
    cr_expect_eq(omp_get_max_threads(), outer_threads, "restored after the scope");
    sleep_us(2000);
    cr_assert_eq(hrmt_tiers_scope_end(tm, HRMT_TIER_DRAM), HRMT_OK);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double wall_us = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) * 1e-3;

    double s_us = hrmt_tiers_scope_time_us(tm, HRMT_TIER_SRAM);
    double d_us = hrmt_tiers_scope_time_us(tm, HRMT_TIER_DRAM);
    cr_expect_geq(s_us, 5000.0, "SRAM %g us", s_us);
    cr_expect_geq(d_us, 5000.0, "DRAM %g us (3 ms + 2 ms outside the SRAM scope)", d_us);
    cr_expect_leq(s_us + d_us, wall_us, "exclusive: %g + %g <= %g", s_us, d_us, wall_us);

    /* Mismatched or unopened ends are errors and change nothing. */
    cr_expect_eq(hrmt_tiers_scope_end(tm, HRMT_TIER_SRAM), HRMT_ERR_INVALID_ARG);
    cr_assert_eq(hrmt_tiers_scope_begin(tm, HRMT_TIER_SRAM), HRMT_OK);
    cr_expect_eq(hrmt_tiers_scope_end(tm, HRMT_TIER_DRAM), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_scope_end(tm, HRMT_TIER_SRAM), HRMT_OK);
    cr_expect_eq(hrmt_tiers_scope_begin(tm, (hrmt_tier)5), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_scope_begin(NULL, HRMT_TIER_SRAM), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_set_scope_threads(tm, HRMT_TIER_SRAM, -1), HRMT_ERR_INVALID_ARG);
    cr_expect_float_eq(hrmt_tiers_scope_time_us(NULL, HRMT_TIER_SRAM), 0.0, 0.0);
    hrmt_tiers_destroy(tm);
}

/* Scopes are per calling thread: each OpenMP thread opens and closes its own. */
Test(tiers, scopes_nest_per_thread) {
    hrmt_tiers *tm = make(4096, 0);
    int errors = 0;
#pragma omp parallel num_threads(4) reduction(+ : errors)
    {
        hrmt_tier mine = omp_get_thread_num() % 2 ? HRMT_TIER_SRAM : HRMT_TIER_DRAM;
        for (int i = 0; i < 50; i++) {
            errors += hrmt_tiers_scope_begin(tm, mine) != HRMT_OK;
            errors += hrmt_tiers_scope_end(tm, mine) != HRMT_OK;
        }
    }
    cr_expect_eq(errors, 0);
    cr_expect_eq(hrmt_tiers_scope_end(tm, HRMT_TIER_SRAM), HRMT_ERR_INVALID_ARG,
                 "nothing left open");
    hrmt_tiers_destroy(tm);
}

/* 8 threads allocate, fill, free and record at once. Every live tensor must
 * keep its own bytes (no two allocations overlap) and the counters must add
 * up exactly. */
Test(tiers, concurrent_alloc_free_record_from_8_threads) {
    enum { T = 8, N = 120 };
    const size_t elems = 100; /* 400 bytes, 448 in the arena */
    hrmt_tiers *tm = make(64 * 1024, 256);
    int errors = 0;
#pragma omp parallel num_threads(T) reduction(+ : errors)
    {
        int id = omp_get_thread_num();
        char name[32];
        for (int i = 0; i < N; i++) {
            hrmt_tensor t;
            snprintf(name, sizeof name, "t%d_%d", id, i);
            if (alloc_f32(tm, i % 3 != 0, name, elems, &t) != HRMT_OK) {
                errors++;
                continue;
            }
            memset(t.data, id * N + i, 4 * elems);
            errors += hrmt_tiers_record(tm, t.tier, HRMT_TIER_OP_LOAD, 4 * elems, 1.0) != HRMT_OK;
            /* Free every other tensor of the previous round. */
            if (i % 2 == 1) {
                snprintf(name, sizeof name, "t%d_%d", id, i - 1);
                errors += hrmt_tiers_free(tm, name) != HRMT_OK;
            }
        }
    }
    cr_assert_eq(errors, 0);
    /* Survivors: odd i of every thread, each still holding its pattern. */
    size_t live_sram = 0, live_dram = 0;
    for (int id = 0; id < T; id++) {
        for (int i = 1; i < N; i += 2) {
            char name[32];
            hrmt_tensor t;
            snprintf(name, sizeof name, "t%d_%d", id, i);
            cr_assert_eq(hrmt_tiers_get(tm, name, &t), HRMT_OK, "%s", name);
            unsigned char want = (unsigned char)(id * N + i);
            const unsigned char *p = t.data;
            int intact = 1;
            for (size_t k = 0; k < 4 * elems; k++) intact &= p[k] == want;
            cr_expect(intact, "%s overwritten by another allocation", name);
            if (t.tier == HRMT_TIER_SRAM)
                live_sram += 4 * elems;
            else
                live_dram += 4 * elems;
        }
    }
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM), d = stats(tm, HRMT_TIER_DRAM);
    int sram_requests = 0;
    for (int i = 0; i < N; i++) sram_requests += i % 3 != 0;
    cr_expect_eq(s.hit_count + s.miss_count, (uint64_t)(T * sram_requests));
    cr_expect_gt(s.hit_count, 0);
    cr_expect_eq(s.num_loads + d.num_loads, (uint64_t)(T * N));
    cr_expect_eq(s.current_alloc_bytes, live_sram);
    cr_expect_eq(d.current_alloc_bytes, live_dram);
    cr_expect_eq(s.total_alloc_bytes + d.total_alloc_bytes, (size_t)T * N * 4 * elems);
    cr_expect_leq(s.peak_alloc_bytes, 64 * 1024);
    /* Free the survivors individually: the arena must be whole again. */
    for (int id = 0; id < T; id++)
        for (int i = 1; i < N; i += 2) {
            char name[32];
            snprintf(name, sizeof name, "t%d_%d", id, i);
            cr_assert_eq(hrmt_tiers_free(tm, name), HRMT_OK);
        }
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).current_alloc_bytes, 0);
    cr_expect_eq(stats(tm, HRMT_TIER_DRAM).current_alloc_bytes, 0);
    hrmt_tensor whole;
    cr_assert_eq(alloc_f32(tm, 1, "whole", 16 * 1024, &whole), HRMT_OK);
    cr_expect_eq(whole.tier, HRMT_TIER_SRAM, "all freed blocks coalesced");
    size_t n;
    hrmt_tier_event ev[256];
    cr_assert_eq(hrmt_tiers_events(tm, ev, 256, &n), HRMT_OK);
    cr_expect_eq(n, 256, "ring full, bounded");
    for (size_t i = 1; i < n; i++) cr_expect_geq(ev[i].timestamp_s, ev[i - 1].timestamp_s);
    hrmt_tiers_destroy(tm);
}

Test(tiers, error_paths) {
    hrmt_tiers *tm = NULL;
    cr_expect_eq(hrmt_tiers_create(0, 0, &tm), HRMT_ERR_INVALID_ARG);
    cr_expect_null(tm);
    cr_expect_eq(hrmt_tiers_create(4096, 0, NULL), HRMT_ERR_INVALID_ARG);
    tm = make(4096, 0);
    hrmt_tensor t, keep;
    memset(&keep, 0x77, sizeof keep);
    t = keep;
    size_t zero[2] = {4, 0};
    size_t four[1] = {4};
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "z", 2, zero, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_alloc_dram(tm, "z", 2, zero, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "n0", 0, four, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    size_t five[5] = {1, 1, 1, 1, 1};
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "n5", 5, five, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "dt", 1, four, (hrmt_dtype)9, &t), HRMT_ERR_INVALID_ARG);
    /* Element count overflows, byte count overflows, 64-byte rounding overflows. */
    size_t big_n[2] = {SIZE_MAX / 2, 3};
    size_t big_b[1] = {SIZE_MAX / 2};
    size_t big_r[1] = {SIZE_MAX / 4};
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "o1", 2, big_n, HRMT_F32, &t), HRMT_ERR_OVERFLOW);
    cr_expect_eq(hrmt_tiers_alloc_dram(tm, "o2", 1, big_b, HRMT_F32, &t), HRMT_ERR_OVERFLOW);
    cr_expect_eq(hrmt_tiers_alloc_dram(tm, "o3", 1, big_r, HRMT_I32, &t), HRMT_ERR_OVERFLOW);
    /* Representable but not allocatable (2^62 bytes). */
    size_t huge[1] = {(size_t)1 << 60};
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "huge", 1, huge, HRMT_F32, &t), HRMT_ERR_OUT_OF_MEMORY);
    cr_expect_eq(memcmp(&t, &keep, sizeof t), 0, "output untouched on failure");
    /* NULL and empty arguments. */
    cr_expect_eq(hrmt_tiers_alloc_sram(NULL, "a", 1, four, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, NULL, 1, four, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "", 1, four, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "a", 1, NULL, HRMT_F32, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_alloc_dram(tm, "a", 1, four, HRMT_F32, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_get(NULL, "a", &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_get(tm, NULL, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_get(tm, "a", NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_free(NULL, "a"), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_free(tm, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_transfer_sram_to_dram(tm, NULL, &t), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_transfer_dram_to_sram(tm, "a", NULL), HRMT_ERR_INVALID_ARG);
    hrmt_tier_stats st;
    cr_expect_eq(hrmt_tiers_stats(tm, (hrmt_tier)3, &st), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_stats(tm, HRMT_TIER_SRAM, NULL), HRMT_ERR_INVALID_ARG);
    /* Nothing above counted. */
    hrmt_tier_stats s = stats(tm, HRMT_TIER_SRAM), d = stats(tm, HRMT_TIER_DRAM);
    cr_expect_eq(s.hit_count + s.miss_count + s.total_alloc_bytes + d.total_alloc_bytes, 0);
    /* Unknown and duplicate names, across tiers too. */
    cr_expect_eq(hrmt_tiers_get(tm, "missing", &t), HRMT_ERR_NOT_FOUND);
    cr_expect_eq(hrmt_tiers_free(tm, "missing"), HRMT_ERR_NOT_FOUND);
    cr_assert_eq(hrmt_tiers_alloc_sram(tm, "dup", 1, four, HRMT_F32, &t), HRMT_OK);
    cr_expect_eq(hrmt_tiers_alloc_sram(tm, "dup", 1, four, HRMT_F32, &t), HRMT_ERR_EXISTS);
    cr_expect_eq(hrmt_tiers_alloc_dram(tm, "dup", 1, four, HRMT_F32, &t), HRMT_ERR_EXISTS);
    cr_expect_eq(stats(tm, HRMT_TIER_SRAM).hit_count, 1, "a duplicate is not a hit");
    /* The name is copied: changing the caller's buffer does not rename it. */
    char buf[8] = "mine";
    cr_assert_eq(hrmt_tiers_alloc_dram(tm, buf, 1, four, HRMT_F32, &t), HRMT_OK);
    strcpy(buf, "other");
    cr_expect_eq(hrmt_tiers_get(tm, "mine", &t), HRMT_OK);
    cr_expect_eq(hrmt_tiers_get(tm, "other", &t), HRMT_ERR_NOT_FOUND);
    hrmt_tiers_destroy(tm);
}

Test(tiers, sram_capacity_changes_only_when_empty) {
    hrmt_tiers *tm = make(4096, 0);
    cr_expect_eq(hrmt_tiers_sram_capacity(tm), 4096);
    hrmt_tensor t;
    cr_assert_eq(alloc_f32(tm, 1, "a", 16, &t), HRMT_OK);
    cr_expect_eq(hrmt_tiers_set_sram_capacity(tm, 8192), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_sram_capacity(tm), 4096);
    cr_assert_eq(alloc_f32(tm, 0, "dram_ok", 16, &t), HRMT_OK);
    cr_assert_eq(hrmt_tiers_free(tm, "a"), HRMT_OK);
    cr_assert_eq(hrmt_tiers_set_sram_capacity(tm, 8192), HRMT_OK, "DRAM tensors do not block it");
    cr_expect_eq(hrmt_tiers_sram_capacity(tm), 8192);
    cr_assert_eq(alloc_f32(tm, 1, "fits_now", 2048, &t), HRMT_OK);
    cr_expect_eq(t.tier, HRMT_TIER_SRAM);
    cr_expect_eq(hrmt_tiers_set_sram_capacity(tm, 0), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tiers_sram_capacity(NULL), 0);
    hrmt_tiers_destroy(tm);
}

Test(tiers, context_owns_a_manager_sized_by_the_plan) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_tiers *tm = hrmt_context_tiers(ctx);
    cr_assert_not_null(tm);
    cr_expect_eq(hrmt_tiers_sram_capacity(tm), hrmt_context_tile_plan(ctx)->sram_tier_bytes);
    hrmt_context_destroy(ctx);
    cr_expect_null(hrmt_context_tiers(NULL));

    hrmt_context_options o = hrmt_context_default_options();
    o.sram_tier_bytes = 12345;
    o.event_log_enabled = 0;
    ctx = hrmt_test_context_opts(&o);
    tm = hrmt_context_tiers(ctx);
    cr_expect_eq(hrmt_tiers_sram_capacity(tm), 12345);
    cr_assert_eq(hrmt_tiers_record(tm, HRMT_TIER_SRAM, HRMT_TIER_OP_LOAD, 1, 1.0), HRMT_OK);
    size_t n = 1;
    hrmt_tier_event ev[2];
    cr_assert_eq(hrmt_tiers_events(tm, ev, 2, &n), HRMT_OK);
    cr_expect_eq(n, 0, "event_log_enabled = 0 is honoured");
    hrmt_context_destroy(ctx);
}
