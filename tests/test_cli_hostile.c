/* The CLI against hostile and careless input (issue 16): puzzle and token
 * files with over-long lines, NUL bytes, control bytes and overflowing
 * numbers; output paths that cannot be written, name an input or would be
 * read as gnuplot commands; the streamed --dump against the in-memory writer;
 * the progress bar only on a terminal. Every `hrmt` run has an alarm, so a
 * hang is a failure, not a stuck suite. Expected messages are written out by
 * hand. */
#define _GNU_SOURCE /* posix_openpt, ptsname, setenv, mkdtemp */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/run_dump.h"
#include "cli/run_input.h"
#include "core/safetensors.h"
#include "support/run_cmd.h"
#include "support/test_common.h"

#define HRMT_BIN HRMT_TEST_BINARY_DIR "/hrmt"
#define GOLDEN HRMT_TEST_DATA_DIR "/golden/hrm/tiny-rope/"
#define MODEL GOLDEN "model.safetensors"
#define CONFIG GOLDEN "case.json"
#define PUZZLE "..3.2.6..9..3.5..1..18.64....81.29..7.......8..67.82....26.95..8..2.3..9..5.1.3.."

static char g_dir[256];

static void setup(void) { hrmt_test_mkdtemp(g_dir, sizeof g_dir, "hostile"); }

static void teardown(void) { hrmt_test_rmtree(g_dir); }

TestSuite(hostile, .init = setup, .fini = teardown);

static const char *in_dir(char *buf, size_t len, const char *name) {
    int k = snprintf(buf, len, "%s/%s", g_dir, name);
    cr_assert(k > 0 && (size_t)k < len, "path too long");
    return buf;
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void write_text(const char *path, const char *text) {
    write_bytes(path, text, strlen(text));
}

static char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, k;
    char *buf = malloc(cap);
    while ((k = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += k;
        if (len + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[len] = '\0';
    if (n) *n = len;
    return buf;
}

/* No byte below 0x20 but '\n', no DEL: nothing that drives a terminal. */
static int printable(const char *s) {
    for (; *s; s++)
        if (((unsigned char)*s < 0x20 && *s != '\n') || *s == 0x7f) return 0;
    return 1;
}

/* Runs `hrmt args...` (NULL-terminated) without a shell, so any bytes can be
 * passed. stdout and stderr are captured together into *out, unless err_fd
 * >= 0 takes stderr (stdout then goes to /dev/null). path_prefix is put in
 * front of PATH. An alarm turns a hang into a failure (exit 128 + SIGALRM). */
static int hrmt_run(char **out, int err_fd, const char *path_prefix, const char *const *args) {
    const char *argv[64] = {HRMT_BIN};
    size_t n = 1;
    for (; args[n - 1]; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (err_fd >= 0) {
            int dn = open("/dev/null", O_WRONLY);
            dup2(dn, STDOUT_FILENO);
            dup2(err_fd, STDERR_FILENO);
        } else {
            dup2(p[1], STDOUT_FILENO);
            dup2(p[1], STDERR_FILENO);
        }
        close(p[0]);
        close(p[1]);
        if (path_prefix) {
            char path[4096];
            snprintf(path, sizeof path, "%s:%s", path_prefix, getenv("PATH") ? getenv("PATH") : "");
            setenv("PATH", path, 1);
        }
        alarm(120);
        execv(HRMT_BIN, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    size_t cap = 1 << 16, len = 0;
    ssize_t k;
    char *buf = malloc(cap);
    while ((k = read(p[0], buf + len, cap - len - 1)) > 0) {
        len += (size_t)k;
        if (len + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    close(p[0]);
    buf[len] = '\0';
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#define HRMT(out, ...) hrmt_run(out, -1, NULL, (const char *const[]){__VA_ARGS__, NULL})

/* ---- puzzle and token readers ---------------------------------------------- */

static int read_tokens(const char *path, size_t max_line, cli_run_batch *b, char *err) {
    return cli_run_read(path, CLI_RUN_TOKENS, 81, 11, max_line, b, err, 512);
}

static int read_puzzles(const char *path, cli_run_batch *b, char *err) {
    return cli_run_read(path, CLI_RUN_PUZZLES, 81, 11, 0, b, err, 512);
}

/* A huge file without a newline stops at the line limit instead of being
 * read into memory: a 64 GiB sparse file (zeros) and 3 MiB of text. */
Test(hostile, line_limit_stops_reading, .timeout = 60) {
    char path[512], want[1024], err[512];
    cli_run_batch b;
    in_dir(path, sizeof path, "sparse.txt");
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    cr_assert_geq(fd, 0);
    int sparse = ftruncate(fd, (off_t)64 << 30) == 0;
    close(fd);
    snprintf(want, sizeof want,
             "%s:1: line longer than 1048576 bytes (the limit; --max-line-bytes raises it)", path);
    if (sparse) {
        cr_expect_eq(read_tokens(path, 0, &b, err), -1);
        cr_expect_str_eq(err, want);
    }
    unlink(path);
    char *big = malloc(3u << 20);
    memset(big, 'x', 3u << 20);
    write_bytes(path, big, 3u << 20);
    free(big);
    cr_expect_eq(read_puzzles(path, &b, err), -1);
    cr_expect_str_eq(err, want);
}

Test(hostile, long_comments_are_skipped_and_the_limit_can_be_raised) {
    char path[512], err[512];
    cli_run_batch b;
    size_t pad = 3u << 19; /* 1.5 MiB */
    char *text = malloc(pad + 1024);
    memset(text, ' ', pad);
    text[0] = '#';
    size_t n = pad;
    n += (size_t)sprintf(text + n, "\n%s\n", PUZZLE);
    write_bytes(in_dir(path, sizeof path, "comment.txt"), text, n);
    cr_assert_eq(read_puzzles(path, &b, err), 0, "%s", err);
    cr_expect_eq(b.n, 1);
    cr_expect_eq(b.line[0], 2);
    cr_expect_eq(b.tokens[2], 4); /* '3' */
    cli_run_batch_free(&b);
    /* 81 tokens spread over 1.5 MiB of blanks. */
    n = 0;
    for (int i = 0; i < 81; i++) {
        n += (size_t)sprintf(text + n, "%d", i % 11);
        size_t gap = i < 80 ? pad / 80 : 0;
        memset(text + n, ' ', gap);
        n += gap;
    }
    text[n++] = '\n';
    write_bytes(in_dir(path, sizeof path, "spread.txt"), text, n);
    cr_expect_eq(read_tokens(path, 0, &b, err), -1);
    cr_expect(strstr(err, ":1: line longer than 1048576 bytes"), "%s", err);
    cr_assert_eq(read_tokens(path, 2u << 20, &b, err), 0, "%s", err);
    cr_expect_eq(b.n, 1);
    for (int i = 0; i < 81; i++) cr_expect_eq(b.tokens[i], i % 11);
    cli_run_batch_free(&b);
    /* Blank up to the limit: skipped when it stays blank, refused when content follows. */
    memset(text, ' ', pad);
    n = pad;
    n += (size_t)sprintf(text + n, "\n%s\n", PUZZLE);
    write_bytes(path, text, n);
    cr_assert_eq(read_puzzles(path, &b, err), 0, "%s", err);
    cr_expect_eq(b.n, 1);
    cr_expect_eq(b.line[0], 2);
    cli_run_batch_free(&b);
    n = pad + (size_t)sprintf(text + pad, "%s\n", PUZZLE);
    write_bytes(path, text, n);
    cr_expect_eq(read_puzzles(path, &b, err), -1);
    cr_expect(strstr(err, ":1: line longer than 1048576 bytes"), "%s", err);
    free(text);
}

Test(hostile, nul_bytes_are_errors_outside_comments) {
    char path[512], want[600], err[512];
    cli_run_batch b;
    char text[512];
    size_t n = (size_t)sprintf(text, "# comment\n%s\n", PUZZLE);
    text[10 + 4] = '\0'; /* column 5 of line 2 */
    write_bytes(in_dir(path, sizeof path, "nul.txt"), text, n);
    cr_expect_eq(read_puzzles(path, &b, err), -1);
    snprintf(want, sizeof want, "%s:2: column 5: NUL byte; puzzle and token files must be text",
             path);
    cr_expect_str_eq(err, want);
    /* A token line cut by a NUL is not read as a shorter line. */
    n = (size_t)sprintf(text, "1 2 3");
    text[1] = '\0';
    write_bytes(path, text, n);
    cr_expect_eq(read_tokens(path, 0, &b, err), -1);
    snprintf(want, sizeof want, "%s:1: column 2: NUL byte; puzzle and token files must be text",
             path);
    cr_expect_str_eq(err, want);
    /* A comment may hold anything. */
    n = (size_t)sprintf(text, "# a\1b\n%s\n", PUZZLE);
    text[3] = '\0';
    write_bytes(path, text, n);
    cr_assert_eq(read_puzzles(path, &b, err), 0, "%s", err);
    cr_expect_eq(b.n, 1);
    cli_run_batch_free(&b);
}

Test(hostile, overflowing_tokens_are_reported_as_written) {
    char path[512], err[512], text[1024];
    cli_run_batch b;
    in_dir(path, sizeof path, "big.txt");
    const char *cases[][2] = {{"99999999999999999999", "99999999999999999999"},
                              {"-99999999999999999999", "-99999999999999999999"},
                              {"2147483648", "2147483648"}};
    for (size_t i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "1, 2, %s, 4\n", cases[i][0]);
        write_text(path, text);
        cr_expect_eq(read_tokens(path, 0, &b, err), -1);
        char want[700];
        snprintf(want, sizeof want, "%s:1: token 3: %s is outside the vocabulary 0..10", path,
                 cases[i][1]);
        cr_expect_str_eq(err, want);
        cr_expect_null(strstr(err, "9223372036854775807"), "%s", err);
    }
    /* strtol would skip a form feed inside the word. */
    write_text(path, "1 \f5\n");
    cr_expect_eq(read_tokens(path, 0, &b, err), -1);
    cr_expect(strstr(err, ":1: token 2: '\\x0c5' is not an integer"), "%s", err);
}

Test(hostile, control_bytes_are_escaped_in_messages) {
    char path[512], err[512], text[512], want[700];
    cli_run_batch b;
    in_dir(path, sizeof path, "esc.txt");
    snprintf(text, sizeof text, "%s\n", PUZZLE);
    text[2] = '\x1b';
    write_text(path, text);
    cr_expect_eq(read_puzzles(path, &b, err), -1);
    snprintf(want, sizeof want, "%s:1: column 3: '\\x1b' is not '.', '0' or a digit 1-9", path);
    cr_expect_str_eq(err, want);
    write_text(path, "1 2\a\x9b 3\n");
    cr_expect_eq(read_tokens(path, 0, &b, err), -1);
    snprintf(want, sizeof want, "%s:1: token 2: '2\\x07\\x9b' is not an integer", path);
    cr_expect_str_eq(err, want);
    /* The file name itself. */
    char odd[512];
    in_dir(odd, sizeof odd, "a\nb\x1b.txt");
    write_text(odd, "1\n");
    cr_expect_eq(read_tokens(odd, 0, &b, err), -1);
    snprintf(want, sizeof want, "%s/a\\x0ab\\x1b.txt:1: 1 tokens, the model needs 81", g_dir);
    cr_expect_str_eq(err, want);
    cr_expect(printable(err));
}

/* End to end: the limit's message names the option, and the option works. */
Test(hostile, run_line_limit_and_option, .timeout = 120) {
    char path[512], *out = NULL;
    size_t pad = 3u << 19;
    char *text = malloc(pad + 1024);
    size_t n = 0;
    for (int i = 0; i < 81; i++) {
        n += (size_t)sprintf(text + n, "%d", 1 + i % 10);
        size_t gap = i < 80 ? pad / 80 : 0;
        memset(text + n, ' ', gap);
        n += gap;
    }
    text[n++] = '\n';
    write_bytes(in_dir(path, sizeof path, "wide.txt"), text, n);
    free(text);
    int rc =
        HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--tokens", path, "--steps", "1");
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "hrmt run: --tokens: ") && strstr(out, "wide.txt:1: line longer than") &&
                  strstr(out, "--max-line-bytes raises it"),
              "%s", out);
    free(out);
    rc = HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--tokens", path, "--steps", "1",
              "--max-line-bytes", "2M");
    cr_expect_eq(rc, 0, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "sample 1 (line 1)"), "%s", out);
    free(out);
    rc = HRMT(&out, "run", "--tokens", path, "--max-line-bytes", "2G");
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "--max-line-bytes: 2G is above the maximum of 1073741824 bytes"), "%s",
              out);
    free(out);
}

Test(hostile, option_values_and_words_are_escaped) {
    const char *const cases[][3] = {
        {"--steps", "\x1b[2J", "--steps: '\\x1b[2J' is not an integer"},
        {"--schedule", "tiered\n", "--schedule: unknown value 'tiered\\x0a'"},
        {"--max-line-bytes", "1\x07K", "--max-line-bytes: '1\\x07K' is not a size"},
        {"--dtype", "\xff", "--dtype: unknown value '\\xff'"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        int rc = HRMT(&out, "run", "--puzzles", "x", cases[i][0], cases[i][1]);
        cr_expect_eq(rc, 2, "%s: exit %d", cases[i][0], rc);
        cr_expect(strstr(out, cases[i][2]), "%s", out);
        cr_expect(printable(out), "%s: raw control bytes in the message", cases[i][0]);
        free(out);
    }
    char *out = NULL;
    cr_expect_eq(HRMT(&out, "run", "--puzzles", "x", "\x1b]0;title\x07"), 2);
    cr_expect(strstr(out, "unexpected argument '\\x1b]0;title\\x07'"), "%s", out);
    free(out);
    cr_expect_eq(HRMT(&out, "\x1b[31m"), 2);
    cr_expect(strstr(out, "hrmt: unknown command '\\x1b[31m'"), "%s", out);
    cr_expect(printable(out));
    free(out);
}

/* ---- output files ----------------------------------------------------------- */

static void write_puzzles(char *path, size_t len) {
    char text[256];
    snprintf(text, sizeof text, "%s\n%s\n", PUZZLE, PUZZLE);
    write_text(in_dir(path, len, "puzzles.txt"), text);
}

/* A bad output path fails at once: the runs below would take hours (a
 * million steps or iterations) if the work came first. */
Test(hostile, outputs_are_checked_before_the_work, .timeout = 240) {
    char puz[512], fifo[512], *out = NULL;
    write_puzzles(puz, sizeof puz);
    const char *nodir = "/nonexistent-hrmt-dir/out.bin";
    int rc = HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--puzzles", puz, "--steps",
                  "1000000", "--dump", nodir);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "hrmt run: --dump /nonexistent-hrmt-dir/out.bin: No such file"), "%s",
              out);
    free(out);
    in_dir(fifo, sizeof fifo, "fifo");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    rc = HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--puzzles", puz, "--steps", "1",
              "--dump", fifo);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "a FIFO that no process is reading"), "%s", out);
    free(out);
    rc = HRMT(&out, "bench", "--quiet", "--iterations", "1000000", "--batch-sizes", "1", "--output",
              nodir);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "hrmt bench: --output /nonexistent-hrmt-dir/out.bin: No such file"), "%s",
              out);
    free(out);
    rc = HRMT(&out, "bench", "--quiet", "--iterations", "1000000", "--output", g_dir);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "Is a directory"), "%s", out);
    free(out);
}

/* Same inode under another name (a hard link) is still the input. */
Test(hostile, output_onto_an_input_by_inode) {
    char cfg[512], hard[512], model[512], *out = NULL;
    size_t n0 = 0, n1 = 0;
    char *before = read_all(CONFIG, &n0);
    write_bytes(in_dir(cfg, sizeof cfg, "case.json"), before, n0);
    cr_assert_eq(link(cfg, in_dir(hard, sizeof hard, "hard.json")), 0);
    int rc = HRMT(&out, "bench", "--quiet", "--config", cfg, "--output", hard);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "is the same file as --config"), "%s", out);
    free(out);
    char *after = read_all(cfg, &n1);
    cr_expect(n0 == n1 && memcmp(before, after, n0) == 0, "the config was changed");
    free(after);
    free(before);
    char puz[512];
    write_puzzles(puz, sizeof puz);
    cr_assert_eq(link(MODEL, in_dir(model, sizeof model, "model-link.st")) == 0 ||
                     symlink(MODEL, model) == 0,
                 1);
    rc = HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--puzzles", puz, "--dump", model);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "is the same file as --model"), "%s", out);
    free(out);
}

/* A run that fails leaves no dump behind, and a file that was there stays
 * as it was when the failure came before writing. */
Test(hostile, failed_runs_leave_no_partial_dump, .timeout = 120) {
    char bad[512], dump[512], keep[512], puz[512], *out = NULL;
    write_text(in_dir(bad, sizeof bad, "bad.txt"), "not a puzzle\n");
    in_dir(dump, sizeof dump, "new.safetensors");
    int rc =
        HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--puzzles", bad, "--dump", dump);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect_neq(access(dump, F_OK), 0, "a dump file was left behind");
    free(out);
    write_text(in_dir(keep, sizeof keep, "old.safetensors"), "old contents");
    rc = HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--puzzles", bad, "--dump", keep);
    cr_expect_eq(rc, 2);
    free(out);
    char *k = read_all(keep, NULL);
    cr_expect_str_eq(k, "old contents");
    free(k);
    /* Too many steps for a readable header: refused before the first step. */
    write_puzzles(puz, sizeof puz);
    rc = HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--puzzles", puz, "--steps",
              "1000000", "--dump", dump);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "dump fewer --steps"), "%s", out);
    cr_expect_neq(access(dump, F_OK), 0, "a dump file was left behind");
    free(out);
}

typedef struct {
    hrmt_dtype dt;
    size_t n;
    void *data;
} blob;

/* The streamed dump has the bytes of hrmt_st_writer_save for the same tensors. */
Test(hostile, streamed_dump_equals_the_writer) {
    cli_run_dump d;
    char err[512];
    cr_assert_eq(cli_run_dump_init(&d, 3, 5, 7, 6, 4, 3, err, sizeof err), 0, "%s", err);
    size_t count = 2 + 3 * 6;
    hrmt_st_writer *w = NULL;
    cr_assert_eq(hrmt_st_writer_create(&w), HRMT_OK);
    blob *b = calloc(count, sizeof *b);
    hrmt_test_rng rng = {42};
    for (size_t i = 0; i < count; i++) {
        cli_st_desc desc;
        cli_run_dump_describe(&d, i, &desc);
        size_t n = 1;
        for (int k = 0; k < desc.ndim; k++) n *= desc.shape[k];
        b[i].n = n;
        b[i].data = malloc(n * 4);
        for (size_t j = 0; j < n; j++) {
            float f = hrmt_test_uniform(&rng);
            int32_t v = (int32_t)(f * 10);
            memcpy((char *)b[i].data + 4 * j, desc.dtype == HRMT_I32 ? (void *)&v : (void *)&f, 4);
        }
        cr_assert_eq(hrmt_st_writer_add(w, desc.name, desc.dtype, desc.ndim, desc.shape, b[i].data),
                     HRMT_OK, "%s", desc.name);
    }
    char ref[512], got[512];
    hrmt_context *ctx = hrmt_test_context();
    cr_assert_eq(hrmt_st_writer_save(ctx, w, in_dir(ref, sizeof ref, "ref.st")), HRMT_OK);
    FILE *f = fopen(in_dir(got, sizeof got, "got.st"), "wb");
    cr_assert_eq(cli_run_dump_start(&d, f, b[0].data, b[1].data, err, sizeof err), 0, "%s", err);
    for (size_t k = 0; k < 3; k++) {
        blob *s = &b[2 + 6 * k];
        cr_assert_eq(cli_run_dump_step(&d, s[0].data, s[1].data, s[2].data, s[3].data, s[4].data,
                                       s[5].data, err, sizeof err),
                     0, "%s", err);
    }
    cr_assert_eq(fclose(f), 0);
    size_t nr = 0, ng = 0;
    char *x = read_all(ref, &nr), *y = read_all(got, &ng);
    cr_expect_eq(nr, ng);
    cr_expect(nr == ng && memcmp(x, y, nr) == 0, "streamed dump differs from the writer's file");
    free(x);
    free(y);
    for (size_t i = 0; i < count; i++) free(b[i].data);
    free(b);
    hrmt_st_writer_destroy(w);
    hrmt_context_destroy(ctx);
    cr_expect_eq(cli_run_dump_init(&d, 8, 81, 11, 82, 512, 1000000, err, sizeof err), -1);
    cr_expect(strstr(err, "above the 100000000 bytes readers accept; dump fewer --steps"), "%s",
              err);
}

/* ---- probe --plot ----------------------------------------------------------- */

/* A saved probe run (the --json form, written by hand) as an --input file,
 * with a device name chosen by the caller. */
static void saved_probe(const char *path, const char *device_name) {
    cJSON *j = cJSON_Parse(
        "{\"device\": \"cpu\","
        " \"latency\": [{\"bytes\": 4096, \"ns\": 1.2}, {\"bytes\": 65536, \"ns\": 3.5},"
        "             {\"bytes\": 1048576, \"ns\": 12.0}],"
        " \"bandwidth\": [{\"read_gbps\": 100, \"write_gbps\": 80, \"copy_gbps\": 90},"
        "               {\"read_gbps\": 60, \"write_gbps\": 40, \"copy_gbps\": 50},"
        "               {\"read_gbps\": 20, \"write_gbps\": 10, \"copy_gbps\": 15}],"
        " \"levels\": [{\"name\": \"L1\", \"kind\": \"cache\", \"level\": 1, \"size_bytes\": 32768},"
        "            {\"name\": \"DRAM\", \"kind\": \"main\", \"level\": 0}]}");
    cr_assert_not_null(j);
    cJSON_AddStringToObject(j, "device_name", device_name);
    char *text = cJSON_Print(j);
    write_text(path, text);
    cJSON_free(text);
    cJSON_Delete(j);
}

/* A gnuplot stand-in: records its script, prints a fixed picture. */
static void fake_gnuplot(char *bin, size_t len, const char *script) {
    char path[600], text[1024];
    in_dir(bin, len, "bin");
    cr_assert_eq(mkdir(bin, 0700), 0);
    snprintf(path, sizeof path, "%s/gnuplot", bin);
    snprintf(text, sizeof text, "#!/bin/sh\ncat > '%s'\nprintf PICTURE\n", script);
    write_text(path, text);
    cr_assert_eq(chmod(path, 0700), 0);
}

Test(hostile, plot_path_never_reaches_gnuplot, .timeout = 120) {
    char saved[512], bin[512], script[512], *out = NULL;
    in_dir(script, sizeof script, "script.gp");
    fake_gnuplot(bin, sizeof bin, script);
    saved_probe(in_dir(saved, sizeof saved, "saved.json"), "x' ; system('touch PWNED') ; '");
    const char *names[] = {"a\nset output 'b.svg", "q'uote.svg", "|touch PWNED.svg", "\"dq\".png"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char plot[512];
        in_dir(plot, sizeof plot, names[i]);
        int rc = hrmt_run(&out, -1, bin,
                          (const char *const[]){"probe", "--input", saved, "--plot", plot, NULL});
        cr_expect_eq(rc, 0, "%s: exit %d: %s", names[i], rc, out);
        free(out);
        char *pic = read_all(plot, NULL), *gp = read_all(script, NULL);
        cr_assert_not_null(pic, "%s not written", names[i]);
        cr_assert_not_null(gp);
        cr_expect_str_eq(pic, "PICTURE", "%s: the picture is gnuplot's standard output", names[i]);
        cr_expect_null(strstr(gp, names[i]), "%s: the path is in the script", names[i]);
        cr_expect(strstr(gp, "\nset output\n"), "output is gnuplot's standard output");
        /* The device name stays one single-quoted string ('' is one quote). */
        cr_expect(
            strstr(gp, "'hrmt probe: memory tiers (cpu: x'' ; system(''touch PWNED'') ; '')'"),
            "%s", gp);
        free(pic);
        free(gp);
    }
    /* --plot onto --input is refused by inode. */
    char hard[512];
    cr_assert_eq(link(saved, in_dir(hard, sizeof hard, "saved.svg")), 0);
    int rc = hrmt_run(&out, -1, bin,
                      (const char *const[]){"probe", "--input", saved, "--plot", hard, NULL});
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "is the same file as --input"), "%s", out);
    free(out);
    /* An unwritable --plot fails before the sweep (a full one takes minutes). */
    rc = hrmt_run(&out, -1, bin,
                  (const char *const[]){"probe", "--plot", "/nonexistent-hrmt-dir/p.svg", NULL});
    cr_expect_eq(rc, 2, "exit %d: %s", rc, out);
    cr_expect(strstr(out, "hrmt probe: --plot /nonexistent-hrmt-dir/p.svg: No such file"), "%s",
              out);
    free(out);
}

/* With the real gnuplot (when installed): the hostile device name and path
 * run nothing, and the picture is an SVG. */
Test(hostile, real_gnuplot_runs_nothing_from_input, .timeout = 120) {
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) cr_skip_test("gnuplot not installed");
    /* In the test's directory, so a command that ran would leave PWNED here. */
    cr_assert_eq(chdir(g_dir), 0);
    char *out = NULL;
    saved_probe("saved.json", "x' ; system('touch PWNED') ; '");
    /* A newline ending a quoted path, and `set output '|command'`. */
    const char *plots[] = {"p\nsystem('touch PWNED')\n.svg", "|touch PWNED;x.svg"};
    for (int i = 0; i < 2; i++) {
        int rc = HRMT(&out, "probe", "--input", "saved.json", "--plot", plots[i]);
        cr_expect_eq(rc, 0, "exit %d: %s", rc, out);
        free(out);
        cr_expect_neq(access("PWNED", F_OK), 0, "gnuplot ran a command from the input");
        char *svg = read_all(plots[i], NULL);
        cr_assert_not_null(svg);
        cr_expect(strstr(svg, "<svg") && strstr(svg, "</svg>"), "not a whole SVG");
        free(svg);
    }
}

/* ---- progress ------------------------------------------------------------------ */

Test(hostile, run_progress_only_on_a_terminal, .timeout = 120) {
    char puz[512], *out = NULL;
    write_puzzles(puz, sizeof puz);
    int rc =
        HRMT(&out, "run", "--model", MODEL, "--config", CONFIG, "--puzzles", puz, "--steps", "3");
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect_null(strchr(out, '\r'), "progress drawn into a pipe: %s", out);
    free(out);
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) cr_skip_test("no pseudo-terminal");
    int s = open(ptsname(m), O_RDWR | O_NOCTTY);
    cr_assert_geq(s, 0);
    const char *const args[] = {"run",       "--model", MODEL,     "--config", CONFIG,
                                "--puzzles", puz,       "--steps", "3",        NULL};
    rc = hrmt_run(&out, s, NULL, args);
    cr_expect_eq(rc, 0);
    free(out);
    char buf[8192];
    int fl = fcntl(m, F_GETFL);
    fcntl(m, F_SETFL, fl | O_NONBLOCK);
    ssize_t n = read(m, buf, sizeof buf - 1); /* before the slave closes: nothing is lost */
    buf[n > 0 ? n : 0] = '\0';
    close(s);
    cr_expect(strstr(buf, "] 100% ACT step 3 of 3, 2 samples"), "no progress on the terminal: %s",
              buf);
    /* --quiet: nothing. */
    const char *const quiet[] = {"run", "--model", MODEL, "--config", CONFIG, "--puzzles",
                                 puz,   "--steps", "3",   "--quiet",  NULL};
    s = open(ptsname(m), O_RDWR | O_NOCTTY);
    rc = hrmt_run(&out, s, NULL, quiet);
    cr_expect_eq(rc, 0);
    free(out);
    n = read(m, buf, sizeof buf - 1);
    close(s);
    cr_expect(n <= 0, "--quiet drew: %.*s", (int)(n > 0 ? n : 0), buf);
    close(m);
}
