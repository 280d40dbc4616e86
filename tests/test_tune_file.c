/* The CUDA GEMM tuner's pick file (src/core/gemm_tune_file.c), on any host:
 * what is written reads back byte for byte; a file of another key, version
 * or with any malformed record holds nothing; a file that is not a tuning
 * cache, a directory or a FIFO is refused without touching it or blocking;
 * a write that cannot be made is an IO error naming the path. The bits of
 * the picks themselves are checked on the device (test_cuda_model's
 * gemm_tune_cache_*). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, mkfifo */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/gemm_tune_file.h"
#include "support/run_cmd.h"
#include "support/test_common.h"

static const char KEY[] = "NVIDIA_H200|sm_9.0|sms_132|cublasLt_130000|T_82";

/* Each test (its own process) works in a fresh directory, removed after. */
static char dir[256];
static void make_dir(void) { hrmt_test_mkdtemp(dir, sizeof dir, "tune_file"); }
static void remove_dir(void) { hrmt_test_rmtree(dir); }
TestSuite(tune_file, .init = make_dir, .fini = remove_dir);

static char *slurp(const char *path) {
    char *text = hrmt_test_slurp(path);
    cr_assert_not_null(text, "%s", path);
    return text;
}

/* Picks with every byte spelled out (not the reader's own output): slot i,
 * bucket b, byte j = (31 i + 7 b + j) mod 256, own (i + b) mod 5. */
static void fill_buckets(hrmt_tune_file *f) {
    for (int i = 0; i < f->nslots; i++)
        for (int b = 0; b < HRMT_TUNE_BUCKETS; b++) {
            for (int j = 0; j < HRMT_TUNE_ALGO_BYTES; j++)
                f->bucket[i][b].algo[j] = (unsigned char)((31 * i + 7 * b + j) & 255);
            f->bucket[i][b].own = (signed char)((i + b) % 5);
        }
    for (int b = 0; b < HRMT_TUNE_BUCKETS; b++) f->glu_shape[b] = (signed char)(b % 3);
    f->have_buckets = 1;
}

static hrmt_tune_exact exact_entry(size_t rows) {
    hrmt_tune_exact e;
    memset(&e, 0, sizeof e);
    e.rows = rows;
    for (int i = 0; i < HRMT_TUNE_SLOTS; i++) {
        for (int j = 0; j < HRMT_TUNE_ALGO_BYTES; j++)
            e.slot[i].algo[j] = (unsigned char)((rows * 13 + (size_t)i * 5 + (size_t)j) & 255);
        e.slot[i].own = (signed char)(rows % 4);
    }
    e.glu_shape = (signed char)(rows % 7);
    return e;
}

static void expect_buckets(const hrmt_tune_file *f, int glu) {
    cr_assert_eq(f->have_buckets, 1);
    for (int i = 0; i < f->nslots; i++)
        for (int b = 0; b < HRMT_TUNE_BUCKETS; b++) {
            for (int j = 0; j < HRMT_TUNE_ALGO_BYTES; j++)
                cr_assert_eq(f->bucket[i][b].algo[j], (unsigned char)((31 * i + 7 * b + j) & 255),
                             "slot %d bucket %d byte %d", i, b, j);
            cr_assert_eq(f->bucket[i][b].own, (i + b) % 5);
        }
    for (int b = 0; b < HRMT_TUNE_BUCKETS && glu; b++) cr_assert_eq(f->glu_shape[b], b % 3);
}

static void expect_exact(const hrmt_tune_file *f, size_t rows) {
    const hrmt_tune_exact *e = hrmt_tune_file_exact(f, rows);
    cr_assert_not_null(e, "no entry for %zu rows", rows);
    const hrmt_tune_exact want = exact_entry(rows);
    for (int i = 0; i < f->nslots; i++) {
        cr_assert_eq(memcmp(e->slot[i].algo, want.slot[i].algo, HRMT_TUNE_ALGO_BYTES), 0);
        cr_assert_eq(e->slot[i].own, want.slot[i].own);
    }
    if (f->glu_lines) cr_assert_eq(e->glu_shape, want.glu_shape);
}

/* A cache at the test's dir/picks with the buckets and exact entries at 164, 984 and
 * 20992 rows, written; its text (malloc'd) returned. */
static char *write_full(char *path, size_t plen, int glu) {
    snprintf(path, plen, "%s/picks", dir);
    (void)unlink(path);
    hrmt_tune_file *f = NULL;
    cr_assert_eq(hrmt_tune_file_open(NULL, path, KEY, 4, glu, &f), HRMT_OK);
    cr_assert_not_null(f);
    cr_assert_eq(f->have_buckets, 0, "a missing file held picks");
    cr_assert_eq(f->nexact, 0);
    fill_buckets(f);
    const size_t rows[] = {164, 984, 20992};
    for (int i = 0; i < 3; i++) {
        const hrmt_tune_exact e = exact_entry(rows[i]);
        hrmt_tune_file_put_exact(f, &e);
    }
    cr_assert_eq(hrmt_tune_file_write(NULL, f), HRMT_OK);
    hrmt_tune_file_free(f);
    return slurp(path);
}

/* Opens path with KEY; the cache (caller frees). */
static hrmt_tune_file *reopen(const char *path, int glu) {
    hrmt_tune_file *f = NULL;
    cr_assert_eq(hrmt_tune_file_open(NULL, path, KEY, 4, glu, &f), HRMT_OK);
    cr_assert_not_null(f);
    return f;
}

/* `text` written to path reads as holding nothing; frees text. */
static void expect_nothing_read(const char *path, char *text, int glu, const char *what) {
    hrmt_test_spit(path, text);
    hrmt_tune_file *f = reopen(path, glu);
    cr_expect_eq(f->have_buckets, 0, "%s: buckets read", what);
    cr_expect_eq(f->nexact, 0, "%s: exact entries read", what);
    hrmt_tune_file_free(f);
    free(text);
}

Test(tune_file, round_trip) {
    char path[300];
    for (int glu = 0; glu < 2; glu++) {
        char *text = write_full(path, sizeof path, glu);
        cr_expect_eq(strncmp(text, "hrmt-gemm-tune 1\nkey ", 21), 0, "%.80s", text);
        /* slot 1, bucket 2: bytes 31 + 14 + j = 0x2d, 0x2e, ...; own 3 */
        cr_expect_not_null(strstr(text, "\nbucket 1 2 3 2d2e2f30"), "%.300s", text);
        cr_expect_eq(strstr(text, "\nglu 0 0\n") != NULL, glu);
        cr_expect_eq(strstr(text, "\nexact_glu 164 3\n") != NULL, glu);
        free(text);
        hrmt_tune_file *f = reopen(path, glu);
        expect_buckets(f, glu);
        cr_expect_eq(f->nexact, 3);
        expect_exact(f, 164);
        expect_exact(f, 984);
        expect_exact(f, 20992);
        cr_expect_null(hrmt_tune_file_exact(f, 165));
        hrmt_tune_file_free(f);
    }
    /* Nothing else beside the file (the temporary file was renamed). */
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') files++;
    closedir(d);
    cr_expect_eq(files, 1);
}

/* Another key (device, library, model, options) or another slot count: the
 * file holds nothing for this one; a cache read with the fused gate_up
 * expected lacks its lines: no buckets. */
Test(tune_file, other_key_holds_nothing) {
    char path[300];
    free(write_full(path, sizeof path, 0));
    hrmt_tune_file *f = NULL;
    cr_assert_eq(hrmt_tune_file_open(NULL, path, "NVIDIA_H100|sm_9.0", 4, 0, &f), HRMT_OK);
    cr_expect_eq(f->have_buckets, 0);
    cr_expect_eq(f->nexact, 0);
    hrmt_tune_file_free(f);
    cr_assert_eq(hrmt_tune_file_open(NULL, path, KEY, 3, 0, &f), HRMT_OK);
    cr_expect_eq(f->have_buckets, 0, "slot 3's lines read with three slots");
    hrmt_tune_file_free(f);
    f = reopen(path, 1);
    cr_expect_eq(f->have_buckets, 0, "no glu lines, yet buckets");
    cr_expect_eq(f->nexact, 0, "no exact_glu lines, yet exact entries");
    hrmt_tune_file_free(f);
}

/* Text with the first line starting `prefix` replaced by `with` (NULL:
 * removed), malloc'd. */
static char *edit_line(const char *text, const char *prefix, const char *with) {
    const char *at = strstr(text, prefix);
    cr_assert_not_null(at, "no '%s'", prefix);
    const char *end = strchr(at, '\n');
    cr_assert_not_null(end);
    char *out = malloc(strlen(text) + (with ? strlen(with) : 0) + 2);
    cr_assert_not_null(out);
    sprintf(out, "%.*s%s%s", (int)(at - text), text, with ? with : "", with ? end : end + 1);
    return out;
}

/* path rewritten as `text` without its line starting `prefix`, then
 * opened with the fused gate_up's lines expected (caller frees). */
static hrmt_tune_file *reopen_without(const char *path, const char *text, const char *prefix) {
    char *t = edit_line(text, prefix, NULL);
    hrmt_test_spit(path, t);
    free(t);
    return reopen(path, 1);
}

Test(tune_file, incomplete_parts_dropped) {
    char path[300];
    char *text = write_full(path, sizeof path, 1);
    /* A missing bucket line: no buckets, the exact entries kept. */
    hrmt_tune_file *f = reopen_without(path, text, "bucket 3 7 ");
    cr_expect_eq(f->have_buckets, 0);
    cr_expect_eq(f->nexact, 3);
    expect_exact(f, 984);
    hrmt_tune_file_free(f);
    /* A missing exact line: that entry dropped, the rest kept. */
    f = reopen_without(path, text, "exact 984 2 ");
    expect_buckets(f, 1);
    cr_expect_eq(f->nexact, 2);
    cr_expect_null(hrmt_tune_file_exact(f, 984));
    expect_exact(f, 164);
    expect_exact(f, 20992);
    hrmt_tune_file_free(f);
    f = reopen_without(path, text, "exact_glu 20992 ");
    cr_expect_eq(f->nexact, 2);
    cr_expect_null(hrmt_tune_file_exact(f, 20992));
    hrmt_tune_file_free(f);
    free(text);
}

/* Any malformed record: the whole file holds nothing (and is rewritten). */
Test(tune_file, malformed_holds_nothing) {
    char path[300];
    char *text = write_full(path, sizeof path, 1);
    char hex[2 * HRMT_TUNE_ALGO_BYTES + 1];
    memset(hex, 'a', sizeof hex - 1);
    hex[sizeof hex - 1] = '\0';
    char line[512];
    const char *bad_buckets[] = {
        "bucket 0 0 0 %.127s",        /* short hex */
        "bucket 0 0 0 %.127sA",       /* upper case */
        "bucket 0 0 0 %.127sg",       /* not hex */
        "bucket 0 0 0 %saa",          /* long hex */
        "bucket 4 0 0 %s",            /* slot past nslots */
        "bucket 0 8 0 %s",            /* bucket past the buckets */
        "bucket 0 0 128 %s",          /* own past a signed char */
        "bucket 0 0 -1 %s",           /* negative */
        "bucket 0 0 +1 %s",           /* not digits only */
        "bucket 0 0 0 %s extra",      /* a token too many */
        "bucket 0 0 %s",              /* a token short */
        "bucket  0 0 0 %s x y z",     /* six tokens and more */
        "buckets 0 0 0 %s",           /* unknown record */
        "exact 0 0 0 %s",             /* rows 0 */
        "exact 1234567890123 0 0 %s", /* rows past 2^40 (13 digits) */
    };
    for (size_t i = 0; i < sizeof bad_buckets / sizeof bad_buckets[0]; i++) {
        snprintf(line, sizeof line, bad_buckets[i], hex);
        expect_nothing_read(path, edit_line(text, "bucket 0 0 ", line), 1, line);
    }
    const char *bad_glu[] = {"glu 8 0", "glu 0", "glu 0 0 0", "exact_glu 0 1", "exact_glu 164"};
    for (size_t i = 0; i < sizeof bad_glu / sizeof bad_glu[0]; i++) {
        expect_nothing_read(path, edit_line(text, "glu 0 ", bad_glu[i]), 1, bad_glu[i]);
    }
    /* An empty line, a last line without its newline, a line past the
     * reader's length, a key line with more after it. */
    expect_nothing_read(path, edit_line(text, "glu 3 ", ""), 1, "an empty line");
    char *t = strdup(text);
    cr_assert_not_null(t);
    t[strlen(t) - 1] = '\0';
    expect_nothing_read(path, t, 1, "a last line without its newline");
    char *longl = malloc(5000);
    cr_assert_not_null(longl);
    memset(longl, '7', 4000);
    longl[4000] = '\0';
    expect_nothing_read(path, edit_line(text, "glu 5 ", longl), 1, "a 4000-character line");
    free(longl);
    char keyl[600];
    snprintf(keyl, sizeof keyl, "key %s more", KEY);
    expect_nothing_read(path, edit_line(text, "key ", keyl), 1, "a longer key");
    free(text);
}

/* More distinct exact entries than a file holds, or more lines than the
 * reader takes: nothing held, no overrun. */
Test(tune_file, too_many_holds_nothing) {
    char path[300];
    char *text = write_full(path, sizeof path, 0);
    const size_t cap = strlen(text) + 100000 * 16;
    char *big = malloc(cap);
    cr_assert_not_null(big);
    strcpy(big, text);
    size_t n = strlen(big);
    for (int r = 0; r < HRMT_TUNE_EXACT + 1; r++)
        n += (size_t)sprintf(big + n, "exact %d 0 0 %0128d\n", 200 + r, 0);
    expect_nothing_read(path, strdup(big), 0, "65 new exact entries");
    strcpy(big, text);
    n = strlen(big);
    for (int r = 0; r < 9000; r++) n += (size_t)sprintf(big + n, "glu %d 0\n", r % 8);
    expect_nothing_read(path, big, 0, "9000 more lines");
    free(text);
}

/* An empty file, another version of the format: held nothing, no error
 * (the tuner rewrites them). Another kind of file: IO, left as it was. */
Test(tune_file, foreign_files) {
    char path[300];
    snprintf(path, sizeof path, "%s/picks", dir);
    const char *ours[] = {"", "hrmt-gemm-tune 2\nkey x\n", "hrmt-gemm-tune 1\n"};
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
        expect_nothing_read(path, strdup(ours[i]), 0, ours[i]);
    }
    const char *theirs[] = {"{\"weights\": 1}\n", "hrmt-gemm-tun", "\n"};
    hrmt_context_options o = hrmt_context_default_options();
    hrmt_context *ctx = NULL;
    cr_assert_eq(hrmt_context_create(&o, &ctx, NULL, 0), HRMT_OK);
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++) {
        hrmt_test_spit(path, theirs[i]);
        hrmt_tune_file *f = NULL;
        cr_expect_eq(hrmt_tune_file_open(ctx, path, KEY, 4, 0, &f), HRMT_ERR_IO, "'%s'", theirs[i]);
        cr_expect_null(f);
        cr_expect_not_null(strstr(hrmt_last_error(ctx), path), "%s", hrmt_last_error(ctx));
        cr_expect_not_null(strstr(hrmt_last_error(ctx), "not an hrmt GEMM tuning cache"), "%s",
                           hrmt_last_error(ctx));
        char *now = slurp(path);
        cr_expect_str_eq(now, theirs[i]);
        free(now);
    }
    hrmt_context_destroy(ctx);
}

/* A directory, a FIFO (no writer: a blocking open would hang), a file in a
 * missing directory: IO errors naming the path, at open or at write. */
Test(tune_file, bad_paths, .timeout = 20) {
    char path[300];
    hrmt_context_options o = hrmt_context_default_options();
    hrmt_context *ctx = NULL;
    cr_assert_eq(hrmt_context_create(&o, &ctx, NULL, 0), HRMT_OK);
    hrmt_tune_file *f = NULL;
    cr_expect_eq(hrmt_tune_file_open(ctx, dir, KEY, 4, 0, &f), HRMT_ERR_IO);
    cr_expect_null(f);
    cr_expect_not_null(strstr(hrmt_last_error(ctx), dir), "%s", hrmt_last_error(ctx));
    snprintf(path, sizeof path, "%s/fifo", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_expect_eq(hrmt_tune_file_open(ctx, path, KEY, 4, 0, &f), HRMT_ERR_IO);
    cr_expect_null(f);
    cr_expect_not_null(strstr(hrmt_last_error(ctx), "HRMT_CUDA_GEMM_TUNE_CACHE"), "%s",
                       hrmt_last_error(ctx));
    snprintf(path, sizeof path, "%s/no/such/dir/picks", dir);
    cr_assert_eq(hrmt_tune_file_open(ctx, path, KEY, 4, 0, &f), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    fill_buckets(f);
    cr_expect_eq(hrmt_tune_file_write(ctx, f), HRMT_ERR_IO);
    cr_expect_not_null(strstr(hrmt_last_error(ctx), path), "%s", hrmt_last_error(ctx));
    cr_expect_not_null(strstr(hrmt_last_error(ctx), "cannot write"), "%s", hrmt_last_error(ctx));
    hrmt_tune_file_free(f);
    /* Bad arguments: INVALID_ARG, nothing made. */
    const char *keys[] = {"a key", "a\nkey"};
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(hrmt_tune_file_open(ctx, path, keys[i], 4, 0, &f), HRMT_ERR_INVALID_ARG);
        cr_expect_null(f);
    }
    cr_expect_eq(hrmt_tune_file_open(ctx, path, KEY, 0, 0, &f), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tune_file_open(ctx, path, KEY, HRMT_TUNE_SLOTS + 1, 0, &f),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_tune_file_open(ctx, "", KEY, 4, 0, &f), HRMT_ERR_INVALID_ARG);
    char longkey[HRMT_TUNE_KEY + 1];
    memset(longkey, 'k', HRMT_TUNE_KEY);
    longkey[HRMT_TUNE_KEY] = '\0';
    cr_expect_eq(hrmt_tune_file_open(ctx, path, longkey, 4, 0, &f), HRMT_ERR_INVALID_ARG);
    cr_expect_null(f);
    hrmt_context_destroy(ctx);
}

/* Exact entries: a row count put again replaces its entry; past the cap
 * the oldest goes. */
Test(tune_file, exact_entries_capped) {
    char path[300];
    snprintf(path, sizeof path, "%s/picks", dir);
    hrmt_tune_file *f = reopen(path, 1);
    for (size_t r = 1; r <= HRMT_TUNE_EXACT + 6; r++) {
        const hrmt_tune_exact e = exact_entry(1000 + r);
        hrmt_tune_file_put_exact(f, &e);
    }
    cr_expect_eq(f->nexact, HRMT_TUNE_EXACT);
    for (size_t r = 1; r <= 6; r++) cr_expect_null(hrmt_tune_file_exact(f, 1000 + r));
    for (size_t r = 7; r <= HRMT_TUNE_EXACT + 6; r++) expect_exact(f, 1000 + r);
    hrmt_tune_exact again = exact_entry(1010);
    again.glu_shape = 42;
    hrmt_tune_file_put_exact(f, &again);
    cr_expect_eq(f->nexact, HRMT_TUNE_EXACT);
    cr_expect_eq(hrmt_tune_file_exact(f, 1010)->glu_shape, 42);
    cr_assert_eq(hrmt_tune_file_write(NULL, f), HRMT_OK);
    hrmt_tune_file_free(f);
    f = reopen(path, 1);
    cr_expect_eq(f->nexact, HRMT_TUNE_EXACT);
    cr_expect_eq(f->have_buckets, 0, "no buckets were written");
    expect_exact(f, 1000 + HRMT_TUNE_EXACT + 6);
    cr_expect_eq(hrmt_tune_file_exact(f, 1010)->glu_shape, 42);
    hrmt_tune_file_free(f);
}
