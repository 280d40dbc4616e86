/* Summary statistics on inputs whose answers are worked out by hand. */
#include <criterion/criterion.h>
#include <math.h>

#include "cli/stats.h"

Test(stats, odd_count) {
    /* {4, 1, 3, 2, 5}: sorted 1..5, mean 3, median 3,
     * population variance (4+1+0+1+4)/5 = 2 -> std sqrt(2). */
    const double x[] = {4, 1, 3, 2, 5};
    cli_stats s;
    cr_assert_eq(cli_stats_compute(x, 5, &s), 0);
    cr_expect_float_eq(s.min, 1.0, 0);
    cr_expect_float_eq(s.max, 5.0, 0);
    cr_expect_float_eq(s.mean, 3.0, 1e-15);
    cr_expect_float_eq(s.median, 3.0, 0);
    cr_expect_float_eq(s.std, sqrt(2.0), 1e-15);
    cr_expect_float_eq(x[0], 4.0, 0, "input left unsorted");
}

Test(stats, even_count_median_is_mean_of_middle_pair) {
    /* {10, 2, 8, 4}: sorted 2 4 8 10, median (4+8)/2 = 6, mean 6,
     * deviations -4 -2 2 4 -> variance (16+4+4+16)/4 = 10. */
    const double x[] = {10, 2, 8, 4};
    cli_stats s;
    cr_assert_eq(cli_stats_compute(x, 4, &s), 0);
    cr_expect_float_eq(s.min, 2.0, 0);
    cr_expect_float_eq(s.max, 10.0, 0);
    cr_expect_float_eq(s.median, 6.0, 0);
    cr_expect_float_eq(s.mean, 6.0, 1e-15);
    cr_expect_float_eq(s.std, sqrt(10.0), 1e-14);
}

Test(stats, skewed_sample_median_differs_from_mean) {
    /* {1, 1, 1, 9}: median 1, mean 3, deviations -2 -2 -2 6 -> var (4*3+36)/4 = 12. */
    const double x[] = {1, 9, 1, 1};
    cli_stats s;
    cr_assert_eq(cli_stats_compute(x, 4, &s), 0);
    cr_expect_float_eq(s.median, 1.0, 0);
    cr_expect_float_eq(s.mean, 3.0, 1e-15);
    cr_expect_float_eq(s.std, sqrt(12.0), 1e-14);
}

Test(stats, single_sample) {
    const double x[] = {42.5};
    cli_stats s;
    cr_assert_eq(cli_stats_compute(x, 1, &s), 0);
    cr_expect(s.min == 42.5 && s.max == 42.5 && s.mean == 42.5 && s.median == 42.5);
    cr_expect_float_eq(s.std, 0.0, 0);
}

Test(stats, large_offset_keeps_its_digits) {
    /* 1e9 + {1, 2, 3}: a one-pass sum-of-squares formula loses the variance
     * (2/3) entirely at this offset; the two-pass one keeps it. */
    const double x[] = {1e9 + 1, 1e9 + 2, 1e9 + 3};
    cli_stats s;
    cr_assert_eq(cli_stats_compute(x, 3, &s), 0);
    cr_expect_float_eq(s.mean, 1e9 + 2, 1e-6);
    cr_expect_float_eq(s.std, sqrt(2.0 / 3.0), 1e-9);
}

Test(stats, constant_sample_keeps_min_le_mean_le_max) {
    double x[7];
    for (int i = 0; i < 7; i++) x[i] = 0.1;
    cli_stats s;
    cr_assert_eq(cli_stats_compute(x, 7, &s), 0);
    cr_expect(s.min <= s.mean && s.mean <= s.max);
    cr_expect(s.min <= s.median && s.median <= s.max);
    cr_expect(s.std < 1e-16);
}

Test(stats, rejects_empty_and_nonfinite) {
    cli_stats s = {7, 7, 7, 7, 7};
    const double x[] = {1, NAN, 3};
    const double y[] = {1, INFINITY};
    cr_expect_eq(cli_stats_compute(x, 0, &s), -1);
    cr_expect_eq(cli_stats_compute(NULL, 3, &s), -1);
    cr_expect_eq(cli_stats_compute(x, 3, &s), -1);
    cr_expect_eq(cli_stats_compute(y, 2, &s), -1);
    cr_expect_float_eq(s.mean, 7.0, 0, "output untouched on failure");
}
