/* What one OpenMP parallel region costs on this machine, per thread count:
 *
 *     hrmt-bench-omp [--threads N] [--regions R]
 *
 * hrmt runs each op of a step as a parallel region (a batch-1 step: ~200
 * of them), so a region's fixed cost bounds how many threads pay at small
 * batches. For t = 1, 2, 4, ... N (and N) threads, the median over 5
 * repetitions of:
 *   back-to-back  R empty regions in a row, per region (the threads are
 *                 still spinning from the previous one: ops inside a step);
 *   after idle    one empty region after 2 ms asleep (the threads may have
 *                 gone to sleep: the first op after a pause, or any op under
 *                 OMP_WAIT_POLICY=passive or a small GOMP_SPINCOUNT).
 * Read it against an op's work per thread: an M = 82 GEMM slice on one AMX
 * core is ~2-10 us. Prints the OpenMP wait settings in force; no library
 * call, nothing written. Exit 0, or 2 on bad arguments. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 5

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static void sleep_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Every thread touches its own slot, so that the region is not optimised
 * away and each thread really ran. */
static void region(int t, volatile int *sink) {
#pragma omp parallel num_threads(t)
    sink[omp_get_thread_num()]++;
}

static double back_to_back(int t, long regions, volatile int *sink) {
    double v[REPS];
    region(t, sink); /* threads created and spinning */
    for (int r = 0; r < REPS; r++) {
        const double t0 = now_us();
        for (long i = 0; i < regions; i++) region(t, sink);
        v[r] = (now_us() - t0) / (double)regions;
    }
    return median(v, REPS);
}

static double after_idle(int t, volatile int *sink) {
    double v[REPS];
    region(t, sink);
    for (int r = 0; r < REPS; r++) {
        sleep_us(2000);
        const double t0 = now_us();
        region(t, sink);
        v[r] = now_us() - t0;
    }
    return median(v, REPS);
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end = NULL;
    const long v = strtol(s, &end, 10);
    if (!s[0] || !end || *end || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int main(int argc, char **argv) {
    long threads = omp_get_max_threads(), regions = 2000;
    for (int i = 1; i < argc; i += 2) {
        long *dst = !strcmp(argv[i], "--threads")   ? &threads
                    : !strcmp(argv[i], "--regions") ? &regions
                                                    : NULL;
        const long hi = dst == &threads ? 1024 : 10000000;
        if (!dst || i + 1 >= argc || !parse_long(argv[i + 1], 1, hi, dst)) {
            fprintf(stderr, "usage: %s [--threads N (1..1024)] [--regions R (1..10^7)]\n", argv[0]);
            return 2;
        }
    }
    volatile int *sink = calloc((size_t)threads, sizeof *sink);
    if (!sink) {
        fprintf(stderr, "hrmt-bench-omp: out of memory\n");
        return 2;
    }
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT");
    printf(
        "hrmt-bench-omp: %d CPUs, OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s, %ld regions, median of "
        "%d\n",
        omp_get_num_procs(), wp ? wp : "(unset)", sc ? sc : "(unset)", regions, REPS);
    printf("%8s %18s %15s\n", "threads", "back-to-back us", "after idle us");
    for (long t = 1;; t = t * 2 < threads ? t * 2 : threads) {
        const double b = back_to_back((int)t, regions, sink), a = after_idle((int)t, sink);
        printf("%8ld %18.2f %15.1f\n", t, b, a);
        if (t == threads) break;
    }
    free((void *)sink);
    return 0;
}
