/* JSON writer: what it writes is valid JSON that cJSON's parser reads back
 * with the same keys and values; non-finite numbers are refused. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/json_out.h"
#include "cli/stats.h"

/* Writes root through cli_json_write_file and parses the file back. */
static cJSON *round_trip(const cJSON *root) {
    char path[] = "/tmp/hrmt_test_json_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    char err[256] = "";
    cr_assert_eq(cli_json_write_file(root, path, err, sizeof err), 0, "%s", err);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    char buf[1 << 14];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    unlink(path);
    buf[n] = 0;
    cr_expect(n > 0 && buf[n - 1] == '\n', "file ends with a newline");
    cJSON *back = cJSON_Parse(buf);
    cr_assert_not_null(back, "not valid JSON: %s", buf);
    return back;
}

Test(json, stats_object_round_trips) {
    const double x[] = {3.25, 1.5, 2.0};
    cli_stats s;
    cr_assert_eq(cli_stats_compute(x, 3, &s), 0);
    cJSON *o = cli_json_stats(&s);
    cr_assert_not_null(o);
    cJSON *back = round_trip(o);
    static const char *const keys[] = {"min", "max", "mean", "std", "median"};
    const double want[] = {s.min, s.max, s.mean, s.std, s.median};
    for (int i = 0; i < 5; i++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(back, keys[i]);
        cr_assert(cJSON_IsNumber(v), "key %s", keys[i]);
        /* cJSON prints 17 significant digits when 15 do not round-trip. */
        cr_expect_eq(v->valuedouble, want[i], "key %s: %.17g vs %.17g", keys[i], v->valuedouble,
                     want[i]);
    }
    cr_expect_eq(cJSON_GetArraySize(back), 5);
    cJSON_Delete(o);
    cJSON_Delete(back);
}

Test(json, array_of_rows_like_the_bench_output) {
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < 3; i++) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "mode", i % 2 ? "baseline" : "tiered");
        cli_json_add_num(row, "batch_size", i + 1);
        cli_json_add_num(row, "h_over_l_latency_ratio", 1.0 / (i + 3));
        cJSON_AddBoolToObject(row, "outputs_identical", 1);
        cJSON_AddItemToArray(arr, row);
    }
    cJSON *back = round_trip(arr);
    cr_assert(cJSON_IsArray(back));
    cr_assert_eq(cJSON_GetArraySize(back), 3);
    for (int i = 0; i < 3; i++) {
        cJSON *row = cJSON_GetArrayItem(back, i);
        cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(row, "mode")->valuestring,
                         i % 2 ? "baseline" : "tiered");
        cr_expect_eq(cJSON_GetObjectItemCaseSensitive(row, "batch_size")->valuedouble, i + 1);
        cr_expect_eq(cJSON_GetObjectItemCaseSensitive(row, "h_over_l_latency_ratio")->valuedouble,
                     1.0 / (i + 3));
        cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(row, "outputs_identical")));
    }
    cJSON_Delete(arr);
    cJSON_Delete(back);
}

Test(json, strings_are_escaped) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", "a \"quoted\"\\path\n\t");
    cJSON *back = round_trip(o);
    cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(back, "path")->valuestring,
                     "a \"quoted\"\\path\n\t");
    cJSON_Delete(o);
    cJSON_Delete(back);
}

Test(json, nonfinite_numbers_are_refused) {
    cJSON *o = cJSON_CreateObject();
    cJSON *inner = cJSON_AddObjectToObject(o, "l_level_latency_us");
    cli_json_add_num(inner, "mean", 1.0);
    cr_expect(cli_json_all_finite(o));
    cli_json_add_num(inner, "std", NAN);
    cr_expect(!cli_json_all_finite(o), "a NaN nested one level down is found");
    char err[256] = "";
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cr_expect_eq(cli_json_write(o, f, err, sizeof err), -1);
    cr_expect(strstr(err, "NaN"), "%s", err);
    cr_expect_eq(ftell(f), 0, "nothing written");
    fclose(f);
    cJSON_Delete(o);
    cJSON *p = cJSON_CreateArray();
    cJSON_AddItemToArray(p, cJSON_CreateNumber(INFINITY));
    cr_expect(!cli_json_all_finite(p));
    cJSON_Delete(p);
}

Test(json, unwritable_path_is_an_error) {
    cJSON *o = cJSON_CreateObject();
    char err[256] = "";
    cr_expect_eq(cli_json_write_file(o, "/nonexistent-dir/x.json", err, sizeof err), -1);
    cr_expect(strstr(err, "/nonexistent-dir/x.json"), "%s", err);
    cJSON_Delete(o);
}
