/* Summary statistics of a sample of timings. */
#ifndef HRMT_CLI_STATS_H
#define HRMT_CLI_STATS_H

#include <stddef.h>

typedef struct cli_stats {
    double min, max, mean;
    double std;    /* population standard deviation (divide by n, as numpy.std) */
    double median; /* middle value; mean of the two middle values for even n */
} cli_stats;

/* Computes the summary of x[0..n-1]. Returns -1 (out untouched) when n is 0,
 * a value is not finite, or memory runs out. x is not modified. */
int cli_stats_compute(const double *x, size_t n, cli_stats *out);

#endif
