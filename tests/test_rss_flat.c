/* Memory stays flat over many ACT steps: the tiny model (the architecture of
 * tests/fixtures/hrm-tiny, random weights) at batch 8 on 2 threads, both
 * schedules, every output requested, new inputs and puzzle ids taken as
 * samples halt (every 2 steps). After a warm-up, the resident set
 * (/proc/self/statm) must stay within 1% of its post-warm-up value, and the
 * live heap (mallinfo2's main arena; ASan's allocator count under ASan) must
 * not grow by a single byte. Both catch what a leak checker cannot: memory
 * that grows with the steps and is freed only at the end.
 *
 * Transparent huge pages are turned off for the process (PR_SET_THP_DISABLE):
 * the library asks for them on its large buffers (core/huge_alloc.c), and
 * khugepaged, every 10 s or so in the background, then turns a partly
 * touched 2 MiB range into a fully resident one; that step in RSS is the
 * kernel's page-size choice, not memory the program uses.
 *
 * ASan keeps freed blocks in a quarantine (up to 256 MB), so under ASan the
 * resident set grows with every free by design, and under qemu-user it is the
 * emulator's; there the RSS bound is not asserted and the exact heap count
 * carries the check.
 *
 * HRMT_RSS_STEPS / HRMT_RSS_WARMUP change the number of steps per schedule
 * (default 100 after 20 of warm-up, about a second; 30 after 10 under ASan
 * or 8 after 6 under qemu, where the heap check needs no more); the figure is
 *   HRMT_RSS_STEPS=10000 HRMT_RSS_WARMUP=500 build/tests/test_rss_flat --verbose --jobs 1
 * which prints the measured figures. */
#define _GNU_SOURCE /* mallinfo2 */
#include <criterion/criterion.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "support/test_common.h"

#if defined(__SANITIZE_ADDRESS__)
#define HRMT_RSS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HRMT_RSS_ASAN 1
#endif
#endif
#ifndef HRMT_RSS_ASAN
#define HRMT_RSS_ASAN 0
#endif
#if HRMT_RSS_ASAN
/* From the ASan runtime (sanitizer/allocator_interface.h, which gcc's
 * packages do not ship). */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

enum { BATCH = 8 };

/* Resident set in bytes, from /proc/self/statm (its second field, pages). */
static size_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    cr_assert_not_null(f, "cannot read /proc/self/statm");
    unsigned long size = 0, resident = 0;
    cr_assert_eq(fscanf(f, "%lu %lu", &size, &resident), 2);
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* Bytes of live heap blocks. */
static size_t heap_bytes(void) {
#if HRMT_RSS_ASAN
    return __sanitizer_get_current_allocated_bytes();
#else
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#endif
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

/* The architecture of tests/fixtures/hrm-tiny (hidden 64, 4 heads, expansion
 * 2, 1+2 layers, 2x2 cycles, learned positions, 16 tokens + 2 puzzle
 * positions, 3 puzzle ids, halt after 2 steps). */
static hrmt_model_config hrm_tiny(void) {
    hrmt_model_config c = hrmt_model_config_default();
    c.hidden_size = 64;
    c.num_heads = 4;
    c.expansion = 2.0;
    c.H_layers = 1;
    c.L_layers = 2;
    c.seq_len = 16;
    c.vocab_size = 7;
    c.puzzle_emb_ndim = 96;
    c.num_puzzle_identifiers = 3;
    c.pos_encodings = HRMT_POS_LEARNED;
    c.halt_max_steps = 2;
    return c;
}

static void run(hrmt_schedule sched) {
    /* Under qemu-user (cross builds) RSS is the emulator's, and the prctl is
     * not passed through: the heap check stands alone there, as under ASan. */
    const int emulated = getenv("HRMT_TEST_EMULATED") != NULL;
    const int check_rss = !HRMT_RSS_ASAN && !emulated;
    /* qemu runs a step ~100x slower: fewer steps there (the heap count is exact). */
    const int steps = env_int("HRMT_RSS_STEPS", check_rss ? 100 : emulated ? 8 : 30);
    const int warmup = env_int("HRMT_RSS_WARMUP", check_rss ? 20 : emulated ? 6 : 10);
    cr_assert(steps >= 1 && warmup >= 1, "HRMT_RSS_STEPS and HRMT_RSS_WARMUP must be >= 1");
    if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
        cr_assert(!check_rss, "PR_SET_THP_DISABLE failed: RSS would include khugepaged's work");
    /* Two threads on any host: the tiles of the tiered schedule run one per
     * thread, each with its own scratch. */
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = 2;
    hrmt_context *ctx = hrmt_test_context_opts(&o);
    hrmt_model_config cfg = hrm_tiny();
    hrmt_model *m = NULL;
    hrmt_carry *carry = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 7, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_assert_eq(hrmt_carry_create(m, BATCH, &carry), HRMT_OK, "%s", hrmt_last_error(ctx));
    const size_t T = (size_t)cfg.seq_len + (size_t)hrmt_model_puzzle_len(m);
    const size_t H = (size_t)cfg.hidden_size;
    int32_t *inputs = malloc(sizeof(int32_t) * BATCH * (size_t)cfg.seq_len);
    int32_t ids[BATCH] = {0}, halted[BATCH];
    float *logits = malloc(sizeof(float) * BATCH * (size_t)cfg.seq_len * (size_t)cfg.vocab_size);
    float *z_H = malloc(sizeof(float) * BATCH * T * H),
          *z_L = malloc(sizeof(float) * BATCH * T * H);
    float qh[BATCH], qc[BATCH];
    cr_assert(inputs && logits && z_H && z_L);
    hrmt_step_outputs outs = {logits, qh, qc, z_H, z_L, halted};
    hrmt_step_options opts = {sched, 0};
    hrmt_step_timing timing;
    hrmt_test_rng rng = {42};

    size_t rss0 = 0, heap0 = 0, rss_min = 0, rss_max = 0, heap_max = 0;
    int worst_step = 0;
    for (int s = 0; s < warmup + steps; s++) {
        /* New data every step: halted samples take it. */
        for (size_t i = 0; i < (size_t)BATCH * (size_t)cfg.seq_len; i++)
            inputs[i] = (int32_t)((hrmt_test_uniform(&rng) + 1.0f) * 3.49f); /* 0..6 */
        for (int b = 0; b < BATCH; b++) ids[b] = (s + b) % 3;
        cr_assert_eq(hrmt_act_step(m, carry, inputs, ids, &opts, &outs, &timing), HRMT_OK,
                     "step %d: %s", s, hrmt_last_error(ctx));
        if (s + 1 < warmup) continue;
        size_t rss = rss_bytes(), heap = heap_bytes();
        if (s + 1 == warmup) {
            rss0 = rss_min = rss_max = rss;
            heap0 = heap_max = heap;
            continue;
        }
        if (rss < rss_min) rss_min = rss;
        if (rss > rss_max) rss_max = rss, worst_step = s + 1;
        if (heap > heap_max) heap_max = heap;
    }
    double up = 100.0 * ((double)rss_max - (double)rss0) / (double)rss0;
    double down = 100.0 * ((double)rss0 - (double)rss_min) / (double)rss0;
    cr_log_info(
        "%s: %d steps at batch %d after %d warm-up: RSS %.3f MiB after warm-up, "
        "min %.3f, max %.3f (+%.3f%% at step %d, -%.3f%%); live heap %zu -> max %zu bytes",
        sched == HRMT_SCHEDULE_TIERED ? "tiered" : "baseline", steps, BATCH, warmup,
        (double)rss0 / 1048576.0, (double)rss_min / 1048576.0, (double)rss_max / 1048576.0, up,
        worst_step, down, heap0, heap_max);
    cr_expect_eq(heap_max, heap0, "live heap grew from %zu to %zu bytes over %d steps", heap0,
                 heap_max, steps);
    if (check_rss)
        cr_expect(up <= 1.0 && down <= 1.0,
                  "RSS left the 1%% band around %zu bytes: min %zu, max %zu (step %d)", rss0,
                  rss_min, rss_max, worst_step);
    free(inputs);
    free(logits);
    free(z_H);
    free(z_L);
    hrmt_carry_destroy(carry);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

Test(rss, flat_tiered) { run(HRMT_SCHEDULE_TIERED); }
Test(rss, flat_baseline) { run(HRMT_SCHEDULE_BASELINE); }
