/* hrmt-mpi run against hrmt run: 3 ranks over a 10-puzzle file (10 does not
 * divide by 3) give the same bytes as one process for the text output, --json
 * and --dump (the text's ms/step and the JSON's mean_step_ms are timings,
 * which differ between any two runs, and are cut from both sides); a
 * malformed line in the last rank's shard, and a model missing on one rank
 * only, each stop the whole job with a non-zero exit and one message that
 * names the line (or the rank), without a hang; ranks given different
 * options are refused. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/run_cmd.h"

#define HRMT_BIN HRMT_TEST_BINARY_DIR "/hrmt"
#define HRMT_MPI_BIN HRMT_TEST_BINARY_DIR "/hrmt-mpi"
#define GOLDEN HRMT_TEST_DATA_DIR "/golden/hrm/tiny-rope/"
/* A hang fails the test instead of the suite's 15-minute limit. */
#define LIMIT "timeout -k 10 120 "
/* CI runs as root; single-copy shared memory (CMA) is refused in some
 * containers and only costs speed here. */
#define MPIRUN                                        \
    LIMIT HRMT_TEST_MPIEXEC                           \
        " --allow-run-as-root --oversubscribe --mca " \
        "btl_vader_single_copy_mechanism none"

static char g_dir[256];

static void setup(void) { hrmt_test_mkdtemp(g_dir, sizeof g_dir, "mpi"); }

static void teardown(void) { hrmt_test_rmtree(g_dir); }

TestSuite(mpi, .init = setup, .fini = teardown, .timeout = 600);

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s missing", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    cr_assert_geq(n, 0);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    *len = (size_t)n;
    return b;
}

/* Ten puzzles (a comment and a blank line among them, so sample and line
 * numbers differ), or with `bad_line` replaced by a 79-character line. */
static void write_puzzles(const char *path, int bad_line) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    int line = 0;
    unsigned x = 12345u;
    fprintf(f, "# ten puzzles\n");
    line++;
    for (int p = 0; p < 10; p++) {
        if (p == 4) {
            fprintf(f, "\n");
            line++;
        }
        line++;
        int len = line == bad_line ? 79 : 81;
        for (int i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            unsigned d = (x >> 16) % 18u; /* half blanks */
            fputc(d < 9 ? '.' : (int)('1' + d - 9), f);
        }
        fputc('\n', f);
    }
    fclose(f);
}

/* Cuts the first match of `from` up to (not including) `to` after it;
 * asserts the timing field is there, so a format change shows up here. */
static void cut(char *s, const char *from, const char *to) {
    char *a = strstr(s, from);
    cr_assert_not_null(a, "no '%s' in output: %s", from, s);
    char *b = strstr(a, to);
    cr_assert_not_null(b);
    memmove(a, b, strlen(b) + 1);
}

static const char *model_args(void) {
    return "--model '" GOLDEN "model.safetensors' --config '" GOLDEN "case.json'";
}

Test(mpi, three_ranks_give_the_bytes_of_one_process) {
    char puz[512], cmd[4096], dump1[512], dump3[512];
    snprintf(puz, sizeof puz, "%s/puzzles.txt", g_dir);
    snprintf(dump1, sizeof dump1, "%s/one.safetensors", g_dir);
    snprintf(dump3, sizeof dump3, "%s/three.safetensors", g_dir);
    write_puzzles(puz, 0);
    char *one = NULL, *three = NULL, *one_json = NULL, *three_json = NULL;

    snprintf(cmd, sizeof cmd, "%s run %s --puzzles '%s' --dump '%s' 2>/dev/null", HRMT_BIN,
             model_args(), puz, dump1);
    cr_assert_eq(hrmt_test_sh(cmd, &one), 0, "hrmt run: %s", one);
    snprintf(cmd, sizeof cmd, "%s -np 3 %s run %s --puzzles '%s' --dump '%s' 2>/dev/null", MPIRUN,
             HRMT_MPI_BIN, model_args(), puz, dump3);
    cr_assert_eq(hrmt_test_sh(cmd, &three), 0, "hrmt-mpi run: %s", three);
    cr_expect(strstr(three, "puzzle 10 (line 12)") != NULL, "%s", three);
    cut(one, ", ", " ms/step\n");
    cut(three, ", ", " ms/step\n");
    cr_expect_str_eq(three, one, "text output differs");

    size_t n1 = 0, n3 = 0;
    char *d1 = slurp(dump1, &n1), *d3 = slurp(dump3, &n3);
    cr_expect_gt(n1, 10000u);
    cr_expect(n1 == n3 && memcmp(d1, d3, n1) == 0, "--dump differs (%zu vs %zu bytes)", n1, n3);

    snprintf(cmd, sizeof cmd, "%s run %s --puzzles '%s' --json 2>/dev/null", HRMT_BIN, model_args(),
             puz);
    cr_assert_eq(hrmt_test_sh(cmd, &one_json), 0, "%s", one_json);
    snprintf(cmd, sizeof cmd, "%s -np 3 %s run %s --puzzles '%s' --json 2>/dev/null", MPIRUN,
             HRMT_MPI_BIN, model_args(), puz);
    cr_assert_eq(hrmt_test_sh(cmd, &three_json), 0, "%s", three_json);
    cut(one_json, "\"mean_step_ms\"", "\n");
    cut(three_json, "\"mean_step_ms\"", "\n");
    cr_expect_str_eq(three_json, one_json, "--json output differs");
    free(one);
    free(three);
    free(one_json);
    free(three_json);
    free(d1);
    free(d3);
}

/* Occurrences of needle in s. */
static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

Test(mpi, malformed_line_in_a_shard_stops_every_rank) {
    char puz[512], cmd[4096];
    snprintf(puz, sizeof puz, "%s/bad.txt", g_dir);
    write_puzzles(puz, 11); /* puzzle 9: the last rank's shard is puzzles 7-10 */
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "%s -np 3 %s run %s --puzzles '%s' 2>&1", MPIRUN, HRMT_MPI_BIN,
             model_args(), puz);
    int rc = hrmt_test_sh(cmd, &out);
    cr_expect(rc != 0 && rc != 124 && rc != 137, "exit %d: %s", rc, out);
    cr_expect_eq(count(out, "bad.txt:11: a puzzle line needs 81 characters"), 1, "%s", out);
    cr_expect(strstr(out, "puzzle 1 ") == NULL, "output despite the error: %s", out);
    free(out);
}

Test(mpi, failure_on_one_rank_stops_every_rank) {
    char puz[512], with[512], without[512], link[600], cmd[8192], args[2048];
    snprintf(puz, sizeof puz, "%s/puzzles.txt", g_dir);
    write_puzzles(puz, 0);
    /* The same command line everywhere; the relative --model exists in the
     * working directory of ranks 0 and 1 only, as on a host that lacks it. */
    snprintf(with, sizeof with, "%s/with", g_dir);
    snprintf(without, sizeof without, "%s/without", g_dir);
    cr_assert_eq(mkdir(with, 0700), 0);
    cr_assert_eq(mkdir(without, 0700), 0);
    snprintf(link, sizeof link, "%s/model.safetensors", with);
    cr_assert_eq(symlink(GOLDEN "model.safetensors", link), 0);
    snprintf(args, sizeof args,
             "run --model model.safetensors --config '" GOLDEN "case.json' --puzzles '%s'", puz);
    char *out = NULL;
    snprintf(cmd, sizeof cmd, "%s -np 2 -wdir '%s' %s %s : -np 1 -wdir '%s' %s %s 2>&1", MPIRUN,
             with, HRMT_MPI_BIN, args, without, HRMT_MPI_BIN, args);
    int rc = hrmt_test_sh(cmd, &out);
    cr_expect(rc != 0 && rc != 124 && rc != 137, "exit %d: %s", rc, out);
    cr_expect_eq(count(out, "hrmt run: --model"), 1, "%s", out);
    cr_expect(strstr(out, "rank 2 (") != NULL, "the failing rank is not named: %s", out);
    cr_expect(strstr(out, "puzzle 1 ") == NULL, "output despite the error: %s", out);
    free(out);
}

Test(mpi, different_options_on_one_rank_are_refused) {
    char cmd[4096];
    char *out = NULL;
    /* --steps differs: the ranks would run different numbers of steps. */
    snprintf(
        cmd, sizeof cmd,
        "%s -np 2 %s run %s --puzzles x --steps 2 : -np 1 %s run %s --puzzles x --steps 3 2>&1",
        MPIRUN, HRMT_MPI_BIN, model_args(), HRMT_MPI_BIN, model_args());
    int rc = hrmt_test_sh(cmd, &out);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "rank 2 (") != NULL && strstr(out, "differs from rank 0") != NULL, "%s",
              out);
    free(out);
}
