/* The CLI's own helpers: strict value parsing, the `bench` / `probe` option parsers
 * (every bad value of every flag is rejected with a message naming the flag), tables,
 * the progress bar and the probe's size lists. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench_opts.h"
#include "cli/probe_opts.h"
#include "cli/probe_sweep.h"
#include "cli/progress.h"
#include "cli/table.h"

static char err[512];

Test(cli_args, int_accepts_plain_decimals) {
    int v = 0;
    cr_expect_eq(cli_parse_int("--n", "1", 1, 100, &v, err, sizeof err), 0);
    cr_expect_eq(v, 1);
    cr_expect_eq(cli_parse_int("--n", "100", 1, 100, &v, err, sizeof err), 0);
    cr_expect_eq(v, 100);
    cr_expect_eq(cli_parse_int("--n", "0", 0, 5, &v, err, sizeof err), 0);
    cr_expect_eq(v, 0);
    cr_expect_eq(cli_parse_int("--n", "2147483647", 1, INT_MAX, &v, err, sizeof err), 0);
    cr_expect_eq(v, INT_MAX);
}

Test(cli_args, int_rejects_every_bad_form) {
    const char *bad[] = {"0",
                         "-1",
                         "-0",
                         "abc",
                         "12abc",
                         " 12",
                         "12 ",
                         "+5",
                         "",
                         "1.5",
                         "0x10",
                         "1e3",
                         "101",
                         "99999999999999999999",
                         "-99999999999999999999",
                         "2147483648"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int v = 77;
        err[0] = 0;
        cr_expect_eq(cli_parse_int("--iterations", bad[i], 1, 100, &v, err, sizeof err), -1,
                     "'%s' accepted", bad[i]);
        cr_expect_eq(v, 77, "output touched for '%s'", bad[i]);
        cr_expect(strstr(err, "--iterations") == err, "message for '%s' names the flag: %s", bad[i],
                  err);
    }
    cr_expect_eq(cli_parse_int("--n", NULL, 1, 5, &(int){0}, err, sizeof err), -1);
}

Test(cli_args, int_messages_say_what_is_wrong) {
    int v;
    cli_parse_int("--warmup", "-3", 0, 10, &v, err, sizeof err);
    cr_expect(strstr(err, "below the minimum 0"), "%s", err);
    cli_parse_int("--threads", "0", 1, 10, &v, err, sizeof err);
    cr_expect(strstr(err, "positive integer"), "%s", err);
    cli_parse_int("--threads", "11", 1, 10, &v, err, sizeof err);
    cr_expect(strstr(err, "out of range"), "%s", err);
    cli_parse_int("--threads", "4x", 1, 10, &v, err, sizeof err);
    cr_expect(strstr(err, "not an integer"), "%s", err);
}

Test(cli_args, double_strict) {
    double d = 0;
    cr_expect_eq(cli_parse_double("--expansion", "4", 0, 64, &d, err, sizeof err), 0);
    cr_expect_float_eq(d, 4.0, 0);
    cr_expect_eq(cli_parse_double("--expansion", "2.5", 0, 64, &d, err, sizeof err), 0);
    cr_expect_float_eq(d, 2.5, 0);
    cr_expect_eq(cli_parse_double("--expansion", "1e1", 0, 64, &d, err, sizeof err), 0);
    cr_expect_float_eq(d, 10.0, 0);
    const char *bad[] = {"0",   "-1",   "0.0",   "abc", "4x",  "",     " 4", "nan",
                         "inf", "-inf", "1e999", "65",  "0x4", "4..0", "."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d = 77;
        cr_expect_eq(cli_parse_double("--expansion", bad[i], 0, 64, &d, err, sizeof err), -1,
                     "'%s' accepted", bad[i]);
        cr_expect_float_eq(d, 77.0, 0);
        cr_expect(strstr(err, "--expansion") == err, "%s", err);
    }
}

Test(cli_args, bytes_with_suffixes) {
    size_t b = 0;
    struct {
        const char *in;
        size_t want;
    } ok[] = {{"4096", 4096},   {"4K", 4096},     {"4k", 4096},       {"4KiB", 4096}, {"4KB", 4096},
              {"3M", 3u << 20}, {"1G", 1u << 30}, {"1GiB", 1u << 30}, {"64", 64}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        cr_expect_eq(
            cli_parse_bytes("--max-bytes", ok[i].in, 64, (size_t)1 << 36, &b, err, sizeof err), 0,
            "'%s': %s", ok[i].in, err);
        cr_expect_eq(b, ok[i].want, "'%s'", ok[i].in);
    }
    const char *bad[] = {"0",
                         "0K",
                         "-4K",
                         "abc",
                         "4X",
                         "K",
                         "4KiBx",
                         "",
                         " 4K",
                         "63",
                         "128G",
                         "99999999999999999999",
                         "18014398509481984K",
                         "4.5K",
                         "4 K"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = 77;
        cr_expect_eq(
            cli_parse_bytes("--max-bytes", bad[i], 64, (size_t)1 << 36, &b, err, sizeof err), -1,
            "'%s' accepted", bad[i]);
        cr_expect_eq(b, 77);
        cr_expect(strstr(err, "--max-bytes") == err, "%s", err);
    }
}

Test(cli_args, int_lists) {
    int v[4];
    size_t n = 0;
    cr_expect_eq(cli_parse_int_list("--batch-sizes", "1,8,32", 1, 1000, v, 4, &n, err, sizeof err),
                 0);
    cr_expect_eq(n, 3);
    cr_expect(v[0] == 1 && v[1] == 8 && v[2] == 32);
    cr_expect_eq(cli_parse_int_list("--batch-sizes", "7", 1, 1000, v, 4, &n, err, sizeof err), 0);
    cr_expect(n == 1 && v[0] == 7);
    const char *bad[] = {"",    ",",   "1,",        ",1",     "1,,2",
                         "1,0", "0",   "1,-2",      "1,x",    "1, 2",
                         "1;2", "1,1", "1,2,3,4,5", "1,1001", "1,99999999999999999999",
                         "8a"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        n = 99;
        cr_expect_eq(
            cli_parse_int_list("--batch-sizes", bad[i], 1, 1000, v, 4, &n, err, sizeof err), -1,
            "'%s' accepted", bad[i]);
        cr_expect_eq(n, 99);
        cr_expect(strstr(err, "--batch-sizes") == err, "%s", err);
    }
}

Test(cli_args, choices_list_valid_values) {
    static const char *const names[] = {"tiered", "baseline", "compare"};
    int k = -1;
    cr_expect_eq(cli_parse_choice("--mode", "baseline", names, 3, &k, err, sizeof err), 0);
    cr_expect_eq(k, 1);
    const char *bad[] = {"", "Tiered", "tier", "compare ", "bogus"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(cli_parse_choice("--mode", bad[i], names, 3, &k, err, sizeof err), -1);
        cr_expect(strstr(err, "--mode") == err && strstr(err, "tiered, baseline, compare"), "%s",
                  err);
    }
}

/* ---- hrmt bench ---------------------------------------------------------- */

static int bench_parse(cli_bench_opts *o, const char *a1, const char *a2, const char *a3,
                       const char *a4) {
    char *argv[6] = {"bench", (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
    int argc = 1;
    while (argc < 5 && argv[argc]) argc++;
    err[0] = 0;
    return cli_bench_opts_parse(argc, argv, o, err, sizeof err);
}

Test(cli_bench_opts, defaults_are_a_compare_run) {
    cli_bench_opts o;
    cr_assert_eq(bench_parse(&o, NULL, NULL, NULL, NULL), 0, "%s", err);
    cr_expect_eq(o.mode, CLI_MODE_COMPARE);
    cr_expect(o.n_batch >= 1 && o.n_seq == 1 && o.seq_lens[0] == 81);
    cr_expect(o.iterations >= 1 && o.warmup >= 0);
    cr_expect(!o.seq_lens_given && !o.hidden_size && o.dtype == -1 && !o.quiet);
}

Test(cli_bench_opts, every_flag_is_read) {
    char *argv[] = {"bench",
                    "--mode",
                    "tiered",
                    "--batch-sizes",
                    "2,4",
                    "--seq-lens=16,32",
                    "--hidden-size",
                    "64",
                    "--num-heads",
                    "4",
                    "--expansion",
                    "2.5",
                    "--H-cycles",
                    "3",
                    "--L-cycles",
                    "5",
                    "--H-layers",
                    "1",
                    "--L-layers",
                    "2",
                    "--dtype",
                    "f32",
                    "--warmup",
                    "0",
                    "--iterations",
                    "7",
                    "--rounds",
                    "3",
                    "--threads",
                    "2",
                    "--backend",
                    "cuda",
                    "--model",
                    "m.safetensors",
                    "--config",
                    "a.json",
                    "--output",
                    "r.json",
                    "--quiet",
                    "--help",
                    NULL};
    int argc = (int)(sizeof argv / sizeof argv[0]) - 1;
    cli_bench_opts o;
    cr_assert_eq(cli_bench_opts_parse(argc, argv, &o, err, sizeof err), 0, "%s", err);
    cr_expect_eq(o.mode, CLI_MODE_TIERED);
    cr_expect(o.n_batch == 2 && o.batch_sizes[0] == 2 && o.batch_sizes[1] == 4);
    cr_expect(o.n_seq == 2 && o.seq_lens[0] == 16 && o.seq_lens[1] == 32 && o.seq_lens_given);
    cr_expect(o.hidden_size == 64 && o.num_heads == 4);
    cr_expect_float_eq(o.expansion, 2.5, 0);
    cr_expect(o.H_cycles == 3 && o.L_cycles == 5 && o.H_layers == 1 && o.L_layers == 2);
    cr_expect(o.dtype == HRMT_F32 && o.warmup == 0 && o.iterations == 7 && o.threads == 2);
    cr_expect_eq(o.rounds, 3);
    cr_expect_eq(o.backend, HRMT_BACKEND_CUDA);
    cr_expect_str_eq(o.model_path, "m.safetensors");
    cr_expect_str_eq(o.config_path, "a.json");
    cr_expect_str_eq(o.output_path, "r.json");
    cr_expect(o.quiet && o.help);
    cr_expect_eq(bench_parse(&o, "--dtype", "bf16", "--mode", "baseline"), 0);
    cr_expect(o.dtype == HRMT_BF16 && o.mode == CLI_MODE_BASELINE);
}

/* Each (flag, bad value) must fail with a message starting with the flag. */
Test(cli_bench_opts, every_bad_value_names_its_flag) {
    static const char *const positive_flags[] = {"--hidden-size", "--num-heads", "--H-cycles",
                                                 "--L-cycles",    "--H-layers",  "--L-layers",
                                                 "--iterations",  "--threads",   "--rounds"};
    static const char *const bad_ints[] = {
        "0", "-1", "abc", "12x", "", "1.5", "99999999999999999999", " 3"};
    cli_bench_opts o;
    for (size_t f = 0; f < sizeof positive_flags / sizeof positive_flags[0]; f++)
        for (size_t v = 0; v < sizeof bad_ints / sizeof bad_ints[0]; v++) {
            cr_expect_eq(bench_parse(&o, positive_flags[f], bad_ints[v], NULL, NULL), -1,
                         "%s '%s' accepted", positive_flags[f], bad_ints[v]);
            cr_expect(strstr(err, positive_flags[f]) == err, "%s '%s': %s", positive_flags[f],
                      bad_ints[v], err);
        }
    static const char *const bad_warmup[] = {"-1", "abc", "3x", "", "99999999999999999999"};
    for (size_t v = 0; v < sizeof bad_warmup / sizeof bad_warmup[0]; v++) {
        cr_expect_eq(bench_parse(&o, "--warmup", bad_warmup[v], NULL, NULL), -1);
        cr_expect(strstr(err, "--warmup") == err, "%s", err);
    }
    static const char *const list_flags[] = {"--batch-sizes", "--seq-lens"};
    static const char *const bad_lists[] = {"0", "1,0", "-8", "1,,8", "1,",
                                            "x", "8,8", "",   "1;8",  "99999999999999999999"};
    for (size_t f = 0; f < 2; f++)
        for (size_t v = 0; v < sizeof bad_lists / sizeof bad_lists[0]; v++) {
            cr_expect_eq(bench_parse(&o, list_flags[f], bad_lists[v], NULL, NULL), -1,
                         "%s '%s' accepted", list_flags[f], bad_lists[v]);
            cr_expect(strstr(err, list_flags[f]) == err, "%s", err);
        }
    static const char *const bad_exp[] = {"0", "-2", "abc", "nan", "inf", "4x", ""};
    for (size_t v = 0; v < sizeof bad_exp / sizeof bad_exp[0]; v++) {
        cr_expect_eq(bench_parse(&o, "--expansion", bad_exp[v], NULL, NULL), -1);
        cr_expect(strstr(err, "--expansion") == err, "%s", err);
    }
    struct {
        const char *flag, *value;
    } choice[] = {{"--mode", "fast"}, {"--mode", ""},      {"--mode", "TIERED"},
                  {"--dtype", "f16"}, {"--dtype", "BF16"}, {"--backend", "gpu"},
                  {"--backend", ""},  {"--output", ""},    {"--model", ""},
                  {"--config", ""}};
    for (size_t i = 0; i < sizeof choice / sizeof choice[0]; i++) {
        cr_expect_eq(bench_parse(&o, choice[i].flag, choice[i].value, NULL, NULL), -1,
                     "%s '%s' accepted", choice[i].flag, choice[i].value);
        cr_expect(strstr(err, choice[i].flag) == err, "%s", err);
    }
}

/* Every timed step's times are kept: rounds x iterations is bounded, with
 * the message on --rounds; one round is the default. */
Test(cli_bench_opts, rounds_times_iterations_is_bounded) {
    cli_bench_opts o;
    cr_assert_eq(bench_parse(&o, NULL, NULL, NULL, NULL), 0, "%s", err);
    cr_expect_eq(o.rounds, 1);
    cr_expect_eq(bench_parse(&o, "--rounds", "1000", "--iterations", "1000"), 0, "%s", err);
    cr_expect_eq(bench_parse(&o, "--rounds", "1000", "--iterations", "1001"), -1);
    cr_expect(strstr(err, "--rounds") == err, "%s", err);
    cr_expect_eq(bench_parse(&o, "--rounds", "1001", NULL, NULL), -1);
    cr_expect(strstr(err, "--rounds") == err, "%s", err);
}

Test(cli_bench_opts, hidden_must_divide_by_heads) {
    cli_bench_opts o;
    cr_expect_eq(bench_parse(&o, "--hidden-size", "100", "--num-heads", "8"), -1);
    cr_expect(strstr(err, "--hidden-size") && strstr(err, "--num-heads"), "%s", err);
    cr_expect_eq(bench_parse(&o, "--hidden-size", "96", "--num-heads", "8"), 0, "%s", err);
    /* One side from the default config: checked once the config is known. */
    cr_assert_eq(bench_parse(&o, "--hidden-size", "100", NULL, NULL), 0);
    hrmt_model_config cfg = hrmt_model_config_default();
    cfg.hidden_size = 100;
    cr_expect_eq(cli_bench_check_config(&o, &cfg, 0, err, sizeof err), -1);
    cr_expect(strstr(err, "--hidden-size") == err, "%s", err);
    cr_assert_eq(bench_parse(&o, "--num-heads", "7", NULL, NULL), 0);
    cfg = hrmt_model_config_default();
    cfg.num_heads = 7;
    cr_expect_eq(cli_bench_check_config(&o, &cfg, 0, err, sizeof err), -1);
    cr_expect(strstr(err, "--num-heads") == err, "%s", err);
}

Test(cli_bench_opts, model_seq_len_must_match) {
    cli_bench_opts o;
    hrmt_model_config cfg = hrmt_model_config_default(); /* seq_len 81 */
    cr_assert_eq(bench_parse(&o, "--seq-lens", "81,64", NULL, NULL), 0);
    cr_expect_eq(cli_bench_check_config(&o, &cfg, 0, err, sizeof err), 0,
                 "built-in model takes any seq-len: %s", err);
    cr_expect_eq(cli_bench_check_config(&o, &cfg, 1, err, sizeof err), -1);
    cr_expect(strstr(err, "--seq-lens") == err && strstr(err, "81"), "%s", err);
    cr_assert_eq(bench_parse(&o, "--seq-lens", "81", NULL, NULL), 0);
    cr_expect_eq(cli_bench_check_config(&o, &cfg, 1, err, sizeof err), 0);
}

Test(cli_bench_opts, getopt_failures_are_reported) {
    cli_bench_opts o;
    cr_expect_eq(bench_parse(&o, "--iterations", NULL, NULL, NULL), -1);
    cr_expect(strstr(err, "--iterations: missing value"), "%s", err);
    cr_expect_eq(bench_parse(&o, "-o", NULL, NULL, NULL), -1);
    cr_expect(strstr(err, "--output: missing value"), "%s", err);
    cr_expect_eq(bench_parse(&o, "--bogus", NULL, NULL, NULL), -1);
    cr_expect(strstr(err, "--bogus"), "%s", err);
    cr_expect_eq(bench_parse(&o, "-x", NULL, NULL, NULL), -1);
    cr_expect(strstr(err, "-x"), "%s", err);
    cr_expect_eq(bench_parse(&o, "--quiet=yes", NULL, NULL, NULL), -1);
    cr_expect(strstr(err, "--quiet: takes no value"), "%s", err);
    cr_expect_eq(bench_parse(&o, "extra", NULL, NULL, NULL), -1);
    cr_expect(strstr(err, "extra"), "%s", err);
    /* A later good parse is not disturbed by the failures before it. */
    cr_expect_eq(bench_parse(&o, "--iterations", "4", NULL, NULL), 0, "%s", err);
    cr_expect_eq(o.iterations, 4);
}

/* ---- hrmt probe ---------------------------------------------------------- */

static int probe_parse(cli_probe_opts *o, const char *a1, const char *a2, const char *a3) {
    char *argv[5] = {"probe", (char *)a1, (char *)a2, (char *)a3, NULL};
    int argc = 1;
    while (argc < 4 && argv[argc]) argc++;
    err[0] = 0;
    return cli_probe_opts_parse(argc, argv, o, err, sizeof err);
}

Test(cli_probe_opts, defaults_and_flags) {
    cli_probe_opts o;
    cr_assert_eq(probe_parse(&o, NULL, NULL, NULL), 0);
    cr_expect(o.min_bytes == 4096 && o.max_bytes == ((size_t)1 << 30) && !o.quick && !o.json);
    cr_assert_eq(probe_parse(&o, "--quick", "--json", NULL), 0);
    cr_expect(o.quick && o.json && o.max_bytes == ((size_t)1 << 28));
    cr_assert_eq(probe_parse(&o, "--min-bytes", "8K", "--compare"), 0);
    cr_expect(o.min_bytes == 8192 && o.compare);
    cr_assert_eq(probe_parse(&o, "--plot", "x.svg", NULL), 0);
    cr_expect(o.plot_format == CLI_PLOT_SVG && !strcmp(o.plot_path, "x.svg"));
    cr_assert_eq(probe_parse(&o, "--plot", "x.png", "--quiet"), 0);
    cr_expect(o.plot_format == CLI_PLOT_PNG && o.quiet);
}

Test(cli_probe_opts, every_bad_value_names_its_flag) {
    struct {
        const char *flag, *value;
    } bad[] = {{"--min-bytes", "0"},    {"--min-bytes", "-4K"},
               {"--min-bytes", "abc"},  {"--min-bytes", "4X"},
               {"--min-bytes", ""},     {"--max-bytes", "0"},
               {"--max-bytes", "1T"},   {"--max-bytes", "99999999999999999999"},
               {"--max-bytes", "1.5G"}, {"--plot", "x.pdf"},
               {"--plot", ""},          {"--plot", ".svg"},
               {"--backend", "gpu"},    {"--threads", "0"},
               {"--threads", "-2"},     {"--threads", "two"}};
    cli_probe_opts o;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(probe_parse(&o, bad[i].flag, bad[i].value, NULL), -1, "%s '%s' accepted",
                     bad[i].flag, bad[i].value);
        cr_expect(strstr(err, bad[i].flag) == err, "%s", err);
    }
    cr_expect_eq(probe_parse(&o, "--min-bytes", "1M", "--max-bytes=64K"), -1);
    cr_expect(strstr(err, "--min-bytes") == err, "%s", err);
    cr_expect_eq(probe_parse(&o, "--json=1", NULL, NULL), -1);
    cr_expect(strstr(err, "--json"), "%s", err);
    cr_expect_eq(probe_parse(&o, "--plot", NULL, NULL), -1);
    cr_expect(strstr(err, "--plot: missing value"), "%s", err);
}

/* ---- output helpers: tables, sizes, progress, probe sizes ------------------ */

static char *slurp(FILE *f) {
    static char buf[4096];
    fflush(f);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    return buf;
}

Test(cli_table, columns_sized_and_aligned) {
    static const char *const h[] = {"a", "num"};
    static const cli_align al[] = {CLI_ALIGN_LEFT, CLI_ALIGN_RIGHT};
    cli_table *t = cli_table_create(2, h, al);
    cr_assert_not_null(t);
    const char *r1[] = {"x", "1"}, *r2[] = {"yy", "100"};
    cr_assert_eq(cli_table_add_row(t, r1), 0);
    cr_assert_eq(cli_table_add_row(t, r2), 0);
    cr_expect_eq(cli_table_rows(t), 2);
    cr_expect_eq(cli_table_set(t, 5, 0, "z"), -1, "row out of range");
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cli_table_print(t, f);
    /* Widths 2 and 3, two spaces between: worked out by hand. */
    cr_expect_str_eq(slurp(f), "a   num\n-------\nx     1\nyy  100\n");
    cr_assert_eq(cli_table_set(t, 0, 1, "12345"), 0);
    FILE *g = tmpfile();
    cli_table_print(t, g);
    cr_expect_str_eq(slurp(g), "a     num\n---------\nx   12345\nyy    100\n");
    fclose(f);
    fclose(g);
    cli_table_destroy(t);
}

Test(cli_table, format_bytes) {
    char b[32];
    cr_expect_str_eq(cli_format_bytes(512, b, sizeof b), "512 B");
    cr_expect_str_eq(cli_format_bytes(32768, b, sizeof b), "32 KiB");
    cr_expect_str_eq(cli_format_bytes(3u << 19, b, sizeof b), "1.5 MiB");
    cr_expect_str_eq(cli_format_bytes((size_t)1 << 30, b, sizeof b), "1 GiB");
}

Test(cli_progress, draws_only_when_enabled) {
    cli_progress p;
    cli_progress_init(&p, NULL, 4);
    cli_progress_advance(&p, 1, "x"); /* disabled: must not crash or write */
    cli_progress_finish(&p);
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    cli_progress_init(&p, f, 4);
    cli_progress_advance(&p, 1, "tiered b=1");
    const char *s = slurp(f);
    cr_expect(s[0] == '\r' && s[1] == '[', "%s", s);
    cr_expect(strstr(s, " 25% tiered b=1"), "%s", s);
    cr_expect(!strchr(s, '\n'), "one line, redrawn in place");
    fseek(f, 0, SEEK_END);
    cli_progress_advance(&p, 10, "done"); /* clamps at 100% */
    cli_progress_finish(&p);
    s = slurp(f);
    cr_expect(strstr(s, "100% done"), "%s", s);
    size_t n = strlen(s);
    cr_expect(n > 0 && s[n - 1] == '\r', "finish leaves the cursor at column 0");
    fclose(f);
}

Test(cli_probe_sizes, powers_of_two_and_midpoints) {
    size_t v[128];
    size_t n = cli_probe_sizes(4096, (size_t)1 << 30, 0, v, 128);
    /* 2^12 .. 2^30 (19 sizes) and 1.5 * 2^12 .. 1.5 * 2^29 (18 midpoints). */
    cr_assert_eq(n, 37);
    cr_expect_eq(v[0], 4096);
    cr_expect_eq(v[1], 6144);
    cr_expect_eq(v[2], 8192);
    cr_expect_eq(v[n - 1], (size_t)1 << 30);
    for (size_t i = 1; i < n; i++) cr_expect(v[i] > v[i - 1]);
    n = cli_probe_sizes(4096, (size_t)1 << 30, 1, v, 128);
    cr_assert_eq(n, 10, "4K, 16K, ..., 1G");
    for (size_t i = 0; i < n; i++) cr_expect_eq(v[i], (size_t)4096 << (2 * i));
    n = cli_probe_sizes(4096, (size_t)1 << 27, 1, v, 128);
    cr_expect_eq(v[n - 1], (size_t)1 << 27, "the maximum itself is kept");
    n = cli_probe_sizes(4096, (size_t)675 << 20, 1, v, 128);
    cr_expect_eq(v[n - 1], (size_t)675 << 20, "quick: a maximum between powers is the last point");
    cr_expect_eq(v[n - 2], (size_t)256 << 20);
    cr_expect_eq(cli_probe_sizes(8192, 4096, 0, v, 128), 0);
    cr_expect_eq(cli_probe_sizes(4096, (size_t)1 << 30, 0, v, 5), 5, "capped");
}

Test(cli_probe_sizes, tier_points) {
    hrmt_topology t;
    memset(&t, 0, sizeof t);
    t.num_levels = 3;
    t.caches[0].level = 1;
    t.caches[0].size_bytes = 32 << 10;
    t.caches[1].level = 2;
    t.caches[1].size_bytes = 1 << 20;
    t.caches[2].level = 3;
    t.caches[2].size_bytes = 32 << 20;
    cr_expect_eq(cli_probe_tier_point(&t, 0), 16 << 10, "half of L1");
    cr_expect_eq(cli_probe_tier_point(&t, 1), 48 << 10, "1.5x L1");
    cr_expect_eq(cli_probe_tier_point(&t, 2), 3 << 19, "1.5x L2");
    cr_expect_eq(cli_probe_tier_point(&t, 3), (size_t)72 << 20, "2.25x L3");
    t.caches[1].size_bytes = 40 << 10;
    cr_expect_eq(cli_probe_tier_point(&t, 1), 40 << 10, "capped at the level's capacity");
    t.num_levels = 1;
    cr_expect_eq(cli_probe_tier_point(&t, 1), (size_t)64 << 20, "main memory at least 64 MiB");
    t.num_levels = 3;
    t.caches[1].size_bytes = 1 << 20;
    /* A VM's claimed 480 MiB L3: main memory is probed beyond twice that
     * (this host has far more than 4x 1080 MiB available, else it says capped). */
    t.caches[2].size_bytes = (size_t)480 << 20;
    if (!cli_probe_dram_capped(&t))
        cr_expect_eq(cli_probe_tier_point(&t, 3), (size_t)1080 << 20, "2.25x a 480 MiB L3");
    else
        cr_expect(cli_probe_tier_point(&t, 3) >= (size_t)64 << 20);
    t.caches[2].size_bytes = 32 << 20;
    cr_expect_str_eq(cli_probe_tier_of(&t, 4096), "L1");
    cr_expect_str_eq(cli_probe_tier_of(&t, 32 << 10), "L1");
    cr_expect_str_eq(cli_probe_tier_of(&t, (32 << 10) + 64), "L2");
    cr_expect_str_eq(cli_probe_tier_of(&t, 32 << 20), "L3");
    cr_expect_str_eq(cli_probe_tier_of(&t, (size_t)64 << 20), "DRAM");
}
