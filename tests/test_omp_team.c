/* OpenMP team sizes: every parallel region asks for the context's whole team
 * (core/gemm.c's run_units says why). When a region asks for fewer threads
 * than the one before, libgomp lets the pool's surplus threads exit and a
 * later, larger region creates new ones; on the 16-core AMX host that thread
 * churn made a batch-1 step 13x slower on 16 threads than on 2. Checked here
 * through the process's thread ids (/proc/self/task): an op that feeds fewer
 * threads than the context has, between two ops that feed all of them, must
 * leave the same threads alive. Skipped where /proc/self/task is missing. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "support/test_common.h"

#define MAX_TIDS 256

/* The process's thread ids, sorted; -1 when they cannot be read. */
static int thread_ids(long *ids) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_TIDS) {
        char *end = NULL;
        long v = strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0') ids[n++] = v;
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* insertion sort: a handful of ids */
        for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            long t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    return n;
}

/* rmsnorm over rows x cols F32 (no weight), in place. */
static void norm(hrmt_context *ctx, float *x, size_t rows, size_t cols) {
    hrmt_tensor t;
    size_t shape[2] = {rows, cols};
    cr_assert_eq(hrmt_tensor_init(&t, x, HRMT_F32, 2, shape), HRMT_OK);
    cr_assert_eq(hrmt_rmsnorm(ctx, &t, NULL, 1e-5f, &t), HRMT_OK, "%s", hrmt_last_error(ctx));
}

/* C[m, n] = A[m, k] W[n, k]^T, F32, filled with small integers. */
static void gemm(hrmt_context *ctx, size_t m, size_t n, size_t k) {
    float *a = calloc(m * k, sizeof(float)), *w = calloc(n * k, sizeof(float)),
          *c = calloc(m * n, sizeof(float));
    cr_assert(a && w && c);
    for (size_t i = 0; i < m * k; i++) a[i] = (float)(i % 3) - 1.0f;
    for (size_t i = 0; i < n * k; i++) w[i] = (float)(i % 5) - 2.0f;
    hrmt_tensor ta, tw, tc;
    size_t sa[2] = {m, k}, sw[2] = {n, k}, sc[2] = {m, n};
    cr_assert_eq(hrmt_tensor_init(&ta, a, HRMT_F32, 2, sa), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&tw, w, HRMT_F32, 2, sw), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&tc, c, HRMT_F32, 2, sc), HRMT_OK);
    cr_assert_eq(hrmt_gemm(ctx, &ta, &tw, &tc, 0), HRMT_OK, "%s", hrmt_last_error(ctx));
    free(a);
    free(w);
    free(c);
}

/* The GEMM driver gives a small product fewer threads with units (4M
 * multiply-adds: 2 of 4) than a large one (16.7M: all 4). */
Test(omp_team, small_gemms_keep_the_pool) {
    long before[MAX_TIDS], after[MAX_TIDS];
    if (thread_ids(before) < 0) cr_skip_test("no /proc/self/task on this system");
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = 4;
    hrmt_context *ctx = hrmt_test_context_opts(&o);
    gemm(ctx, 256, 256, 256);
    const int n0 = thread_ids(before);
    gemm(ctx, 16, 256, 1024);
    gemm(ctx, 256, 256, 256);
    const int n1 = thread_ids(after);
    cr_expect_eq(n1, n0, "%d threads after the small GEMM, %d before", n1, n0);
    cr_expect(n0 == n1 && !memcmp(before, after, (size_t)n0 * sizeof(long)),
              "the pool's threads were replaced by the small GEMM (thread churn)");
    hrmt_context_destroy(ctx);
}

Test(omp_team, small_ops_keep_the_pool) {
    long before[MAX_TIDS], after[MAX_TIDS];
    if (thread_ids(before) < 0) cr_skip_test("no /proc/self/task on this system");
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = 4;
    hrmt_context *ctx = hrmt_test_context_opts(&o);
    /* 64 x 4096 F32: 2 MiB of traffic, enough for all 4 threads; 4 x 8192:
     * 256 KiB, which feeds 2 (ops_util.c: 128 KiB a thread at least). */
    float *big = calloc(64 * 4096, sizeof(float)), *small = calloc(4 * 8192, sizeof(float));
    cr_assert(big && small);
    for (size_t i = 0; i < 64 * 4096; i++) big[i] = (float)(i % 7) - 3.0f;
    for (size_t i = 0; i < 4 * 8192; i++) small[i] = (float)(i % 5) - 2.0f;
    norm(ctx, big, 64, 4096);
    const int n0 = thread_ids(before);
    norm(ctx, small, 4, 8192);
    norm(ctx, big, 64, 4096);
    const int n1 = thread_ids(after);
    cr_expect_eq(n1, n0, "%d threads after the small op, %d before", n1, n0);
    cr_expect(n0 == n1 && !memcmp(before, after, (size_t)n0 * sizeof(long)),
              "the pool's threads were replaced by the small op (thread churn)");
    free(big);
    free(small);
    hrmt_context_destroy(ctx);
}
