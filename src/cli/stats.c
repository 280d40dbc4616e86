/* Summary statistics (see stats.h). Two-pass mean/variance, so a sample with a
 * large common offset (timings in microseconds since boot) loses no digits. */
#include "cli/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cli_stats_compute(const double *x, size_t n, cli_stats *out) {
    if (!x || !out || n == 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return -1;
    double *sorted = malloc(n * sizeof *sorted);
    if (!sorted) return -1;
    memcpy(sorted, x, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);

    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += x[i];
    double mean = sum / (double)n;
    double ss = 0.0;
    for (size_t i = 0; i < n; i++) ss += (x[i] - mean) * (x[i] - mean);

    cli_stats s;
    s.min = sorted[0];
    s.max = sorted[n - 1];
    /* Rounding can put the mean a hair outside [min, max] for constant samples. */
    s.mean = mean < s.min ? s.min : mean > s.max ? s.max : mean;
    s.std = sqrt(ss / (double)n);
    s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    free(sorted);
    *out = s;
    return 0;
}
