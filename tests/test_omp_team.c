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

/* rmsnorm over rows x cols F32 (no weight), in place on a filled buffer. */
static void norm(hrmt_context *ctx, size_t rows, size_t cols) {
    float *x = calloc(rows * cols, sizeof(float));
    cr_assert(x);
    for (size_t i = 0; i < rows * cols; i++) x[i] = (float)(i % 7) - 3.0f;
    hrmt_tensor t;
    size_t shape[2] = {rows, cols};
    cr_assert_eq(hrmt_tensor_init(&t, x, HRMT_F32, 2, shape), HRMT_OK);
    cr_assert_eq(hrmt_rmsnorm(ctx, &t, NULL, 1e-5f, &t), HRMT_OK, "%s", hrmt_last_error(ctx));
    free(x);
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

/* One op, large (feeds all 4 threads) or small (feeds 2 of them). */
typedef void (*sized_op)(hrmt_context *ctx, int small);

/* 64 x 4096 F32: 2 MiB of traffic, enough for 4 threads; 4 x 8192: 256 KiB,
 * which feeds 2 (ops_util.c: at least 128 KiB a thread). */
static void norm_op(hrmt_context *ctx, int small) {
    if (small)
        norm(ctx, 4, 8192);
    else
        norm(ctx, 64, 4096);
}

/* The GEMM driver gives 4M multiply-adds 2 of 4 threads, 16.7M all 4. */
static void gemm_op(hrmt_context *ctx, int small) {
    if (small)
        gemm(ctx, 16, 256, 1024);
    else
        gemm(ctx, 256, 256, 256);
}

/* Large, small, large on a 4-thread context: the threads alive after the
 * first and after the last are the same ones. */
static void pool_survives(sized_op op, const char *what) {
    long before[MAX_TIDS], after[MAX_TIDS];
    if (thread_ids(before) < 0) cr_skip_test("no /proc/self/task on this system");
    hrmt_context_options o = hrmt_context_default_options();
    o.num_threads = 4;
    hrmt_context *ctx = hrmt_test_context_opts(&o);
    op(ctx, 0);
    const int n0 = thread_ids(before);
    op(ctx, 1);
    op(ctx, 0);
    const int n1 = thread_ids(after);
    cr_expect_eq(n1, n0, "%d threads after the small %s, %d before", n1, what, n0);
    cr_expect(n0 == n1 && !memcmp(before, after, (size_t)n0 * sizeof(long)),
              "the pool's threads were replaced by the small %s (thread churn)", what);
    hrmt_context_destroy(ctx);
}

Test(omp_team, small_ops_keep_the_pool) { pool_survives(norm_op, "row op"); }
Test(omp_team, small_gemms_keep_the_pool) { pool_survives(gemm_op, "GEMM"); }
