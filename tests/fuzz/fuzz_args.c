/* Fuzz target: the command-line parsers of `hrmt run`, `bench` and `probe`
 * (getopt_long plus the value parsers of cli/args.c), as main() hands them
 * argv. Input: one selector byte (run, bench, probe), then the arguments
 * separated by NUL bytes. Every argument is also given to the integer, byte
 * size and list parsers and checked against an independent reading of their
 * documented grammar. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench_opts.h"
#include "cli/probe_opts.h"
#include "cli/run_opts.h"
#include "fuzz_common.h"

#define MAX_ARGS 64

static int digit(char c) { return c >= '0' && c <= '9'; }

/* Digits of s[0..n) as a value, saturating at 2^62 (beyond any bound here). */
static long long digits_value(const char *s, size_t n) {
    long long v = 0;
    for (size_t i = 0; i < n; i++) v = v > (1LL << 58) ? (1LL << 62) : v * 10 + (s[i] - '0');
    return v;
}

/* "[-]digits" in [lo, hi]: 1 and *v, or 0. */
static int ref_int(const char *s, size_t n, long lo, long hi, long long *v) {
    size_t i = n > 0 && s[0] == '-';
    if (i == n) return 0;
    for (size_t k = i; k < n; k++)
        if (!digit(s[k])) return 0;
    *v = digits_value(s + i, n - i) * (i ? -1 : 1);
    return *v >= lo && *v <= hi;
}

static void check_int(const char *a) {
    static const long lo = -5, hi = 1000;
    int got = 0;
    char err[256] = "";
    long long want = 0;
    int ok = ref_int(a, strlen(a), lo, hi, &want);
    int rc = cli_parse_int("--n", a, lo, hi, &got, err, sizeof err);
    if ((rc == 0) != ok) fuzz_fail("args", "cli_parse_int accepts other text than documented");
    if (rc == 0 && got != want) fuzz_fail("args", "cli_parse_int got another value");
    if (rc != 0) fuzz_check_message("args", err, sizeof err);
}

static void check_list(const char *a) {
    enum { CAP = 8 };
    int got[CAP], want[CAP];
    size_t n = 0, count = 0;
    char err[256] = "";
    int ok = *a != '\0';
    for (const char *p = a; ok;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        long long v = 0;
        ok = count < CAP && ref_int(p, len, 1, 100, &v);
        for (size_t i = 0; ok && i < count; i++) ok = want[i] != (int)v;
        if (ok) want[count++] = (int)v;
        if (!comma) break;
        p = comma + 1;
    }
    int rc = cli_parse_int_list("--l", a, 1, 100, got, CAP, &n, err, sizeof err);
    if ((rc == 0) != ok) fuzz_fail("args", "cli_parse_int_list accepts other text than documented");
    if (rc == 0 && (n != count || memcmp(got, want, n * sizeof *got) != 0))
        fuzz_fail("args", "cli_parse_int_list got other values");
    if (rc != 0) fuzz_check_message("args", err, sizeof err);
}

/* Digits with K, M, G (KiB, MiB, GiB) in [64, 2^40]. Other spellings of the
 * suffix ("kb", "KIB") may be taken as the same unit or refused. */
static void check_bytes(const char *a) {
    const size_t lo = 64, hi = (size_t)1 << 40;
    size_t nd = 0, got = 0;
    char err[256] = "";
    while (digit(a[nd])) nd++;
    const char *suf = a + nd;
    int shift = -1, strict = 1;
    char u = (char)(*suf | 0x20);
    if (!*suf)
        shift = 0;
    else if (u == 'k' || u == 'm' || u == 'g') {
        shift = u == 'k' ? 10 : u == 'm' ? 20 : 30;
        const char *rest = suf + 1;
        int lenient = !*rest || !strcmp(rest, "iB") || ((rest[0] | 0x20) == 'b' && !rest[1]) ||
                      ((rest[0] | 0x20) == 'i' && (rest[1] | 0x20) == 'b' && !rest[2]);
        strict = !*rest || !strcmp(rest, "iB");
        if (!lenient) shift = -1;
    }
    long long v = nd ? digits_value(a, nd) : 0;
    int ok = nd > 0 && shift >= 0 && (size_t)v <= (hi >> shift) && ((size_t)v << shift) >= lo;
    int rc = cli_parse_bytes("--b", a, lo, hi, &got, err, sizeof err);
    if (rc == 0 && !ok) fuzz_fail("args", "cli_parse_bytes accepted a malformed size");
    if (rc != 0 && ok && strict) fuzz_fail("args", "cli_parse_bytes refused a valid size");
    if (rc == 0 && got != (size_t)v << shift) fuzz_fail("args", "cli_parse_bytes got another size");
    if (rc != 0) fuzz_check_message("args", err, sizeof err);
}

static void check_double(const char *a) {
    double v = 0;
    char err[256] = "";
    if (cli_parse_double("--x", a, 0.0, 64.0, &v, err, sizeof err) == 0) {
        if (!isfinite(v) || !(v > 0.0) || v > 64.0)
            fuzz_fail("args", "cli_parse_double accepted a value out of range");
        for (const char *p = a; *p; p++)
            if (!digit(*p) && !strchr(".eE+-", *p))
                fuzz_fail("args", "cli_parse_double accepted a character outside a decimal");
    } else {
        fuzz_check_message("args", err, sizeof err);
    }
}

static void check_run(int argc, char **argv) {
    cli_run_opts o;
    char err[512] = "";
    if (cli_run_opts_parse(argc, argv, &o, err, sizeof err) != 0) {
        fuzz_check_message("args", err, sizeof err);
        return;
    }
    if (o.help) return;
    if (!o.puzzles_path == !o.tokens_path) fuzz_fail("args", "run: not exactly one input file");
    if (o.steps < 0 || o.steps > 1000000 || o.threads < 0 || o.threads > 4096 || o.puzzle_id < 0)
        fuzz_fail("args", "run: a value outside its documented range");
    const char *paths[] = {o.model_path, o.config_path, o.puzzles_path, o.tokens_path, o.dump_path};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (paths[i] && !*paths[i]) fuzz_fail("args", "run: accepted an empty file name");
}

static void check_bench(int argc, char **argv) {
    cli_bench_opts o;
    char err[512] = "";
    if (cli_bench_opts_parse(argc, argv, &o, err, sizeof err) != 0) {
        fuzz_check_message("args", err, sizeof err);
        return;
    }
    if (o.n_batch < 1 || o.n_batch > CLI_BENCH_MAX_LIST || o.n_seq < 1 ||
        o.n_seq > CLI_BENCH_MAX_LIST)
        fuzz_fail("args", "bench: list length outside 1..32");
    for (size_t i = 0; i < o.n_batch; i++)
        if (o.batch_sizes[i] < 1) fuzz_fail("args", "bench: batch size below 1");
    if (o.hidden_size && o.num_heads && o.hidden_size % o.num_heads)
        fuzz_fail("args", "bench: hidden size not divisible by the heads");
    /* The check against a config, as cmd_bench runs it on the built-in one. */
    hrmt_model_config cfg = hrmt_model_config_default();
    if (o.hidden_size) cfg.hidden_size = o.hidden_size;
    if (o.num_heads) cfg.num_heads = o.num_heads;
    if (cli_bench_check_config(&o, &cfg, 1, err, sizeof err) != 0)
        fuzz_check_message("args", err, sizeof err);
}

static void check_probe(int argc, char **argv) {
    cli_probe_opts o;
    char err[512] = "";
    if (cli_probe_opts_parse(argc, argv, &o, err, sizeof err) != 0) {
        fuzz_check_message("args", err, sizeof err);
        return;
    }
    if (o.min_bytes < 64 || o.min_bytes > o.max_bytes)
        fuzz_fail("args", "probe: working-set bounds out of order");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const char *const names[] = {"run", "bench", "probe"};
    int cmd = data[0] % 3;
    /* argv strings live in one NUL-terminated copy of the input. */
    char *buf = malloc(size + 1);
    if (!buf) abort();
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)names[cmd];
    for (size_t i = 0; i < size - 1 && argc <= MAX_ARGS; i += strlen(buf + i) + 1)
        argv[argc++] = buf + i;
    argv[argc] = NULL;
    for (int i = 1; i < argc; i++) {
        check_int(argv[i]);
        check_list(argv[i]);
        check_bytes(argv[i]);
        check_double(argv[i]);
    }
    if (cmd == 0) check_run(argc, argv);
    if (cmd == 1) check_bench(argc, argv);
    if (cmd == 2) check_probe(argc, argv);
    free(buf);
    return 0;
}
