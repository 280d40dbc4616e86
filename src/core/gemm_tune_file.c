/* See gemm_tune_file.h. Nothing read here serves before the tuner has
 * checked its bits: a malformed file costs a tuning, never an answer. */
#define _POSIX_C_SOURCE 200809L /* strdup, strtok_r, fdopen */
#include "core/gemm_tune_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/open_regular.h"

static const char MAGIC[] = "hrmt-gemm-tune 1\n";
static const char FAMILY[] = "hrmt-gemm-tune "; /* any version of the format: ours to rewrite */
enum {
    LINE = 1024,      /* a longer line is no record of this format */
    MAX_LINES = 8192, /* a file of more is not read */
    ALGO_HEX = 2 * HRMT_TUNE_ALGO_BYTES,
    MAX_ROWS_DIGITS = 12,
};

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* 1: `s` was exactly ALGO_HEX lower-case hex digits, decoded into algo. */
static int parse_algo(const char *s, unsigned char *algo) {
    if (strlen(s) != ALGO_HEX) return 0;
    for (size_t i = 0; i < HRMT_TUNE_ALGO_BYTES; i++) {
        const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return 0;
        algo[i] = (unsigned char)(hi << 4 | lo);
    }
    return 1;
}

/* A whole number in [lo, hi] spelled in at most MAX_ROWS_DIGITS decimal
 * digits; 1: it was. */
static int parse_num(const char *s, long long lo, long long hi, long long *v) {
    const size_t n = strlen(s);
    if (!n || n > MAX_ROWS_DIGITS || strspn(s, "0123456789") != n) return 0;
    *v = strtoll(s, NULL, 10);
    return *v >= lo && *v <= hi;
}

/* Which lines the file had, per bucket slot and per exact entry. */
typedef struct seen {
    unsigned bucket[HRMT_TUNE_SLOTS], glu;
    unsigned exact_slots[HRMT_TUNE_EXACT];
    int exact_glu[HRMT_TUNE_EXACT];
} seen;

/* rows' entry among f's, a new one when absent (-1: full). */
static int exact_index(hrmt_tune_file *f, seen *sn, size_t rows) {
    for (unsigned i = 0; i < f->nexact; i++)
        if (f->exact[i].rows == rows) return (int)i;
    if (f->nexact == HRMT_TUNE_EXACT) return -1;
    memset(&f->exact[f->nexact], 0, sizeof f->exact[0]);
    f->exact[f->nexact].rows = rows;
    sn->exact_slots[f->nexact] = 0;
    sn->exact_glu[f->nexact] = 0;
    return (int)f->nexact++;
}

/* One record (newline stripped) into f; 0: malformed. */
static int parse_record(hrmt_tune_file *f, char *line, seen *sn) {
    char *tok[6], *save = NULL;
    int n = 0;
    for (char *p = strtok_r(line, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
        if (n == 6) return 0;
        tok[n++] = p;
    }
    const long long max_rows = (long long)1 << 40;
    long long a = 0, b = 0, o = 0;
    unsigned char algo[HRMT_TUNE_ALGO_BYTES];
    if (n == 5 && !strcmp(tok[0], "bucket")) {
        if (!parse_num(tok[1], 0, f->nslots - 1, &a) ||
            !parse_num(tok[2], 0, HRMT_TUNE_BUCKETS - 1, &b) || !parse_num(tok[3], 0, 127, &o) ||
            !parse_algo(tok[4], algo))
            return 0;
        memcpy(f->bucket[a][b].algo, algo, sizeof algo);
        f->bucket[a][b].own = (signed char)o;
        sn->bucket[a] |= 1u << b;
        return 1;
    }
    if (n == 3 && !strcmp(tok[0], "glu")) {
        if (!parse_num(tok[1], 0, HRMT_TUNE_BUCKETS - 1, &b) || !parse_num(tok[2], 0, 127, &o))
            return 0;
        f->glu_shape[b] = (signed char)o;
        sn->glu |= 1u << b;
        return 1;
    }
    if (n == 5 && !strcmp(tok[0], "exact")) {
        if (!parse_num(tok[1], 1, max_rows, &a) || !parse_num(tok[2], 0, f->nslots - 1, &b) ||
            !parse_num(tok[3], 0, 127, &o) || !parse_algo(tok[4], algo))
            return 0;
        const int e = exact_index(f, sn, (size_t)a);
        if (e < 0) return 0;
        memcpy(f->exact[e].slot[b].algo, algo, sizeof algo);
        f->exact[e].slot[b].own = (signed char)o;
        sn->exact_slots[e] |= 1u << b;
        return 1;
    }
    if (n == 3 && !strcmp(tok[0], "exact_glu")) {
        if (!parse_num(tok[1], 1, max_rows, &a) || !parse_num(tok[2], 0, 127, &o)) return 0;
        const int e = exact_index(f, sn, (size_t)a);
        if (e < 0) return 0;
        f->exact[e].glu_shape = (signed char)o;
        sn->exact_glu[e] = 1;
        return 1;
    }
    return 0;
}

/* The records after the magic line into f; 0: another key, or a malformed
 * or too long file (f then holds nothing). */
static int read_records(hrmt_tune_file *f, FILE *in) {
    char line[LINE];
    seen *sn = calloc(1, sizeof *sn);
    if (!sn) return 0;
    const size_t klen = strlen(f->key);
    int ok = fgets(line, sizeof line, in) && !strncmp(line, "key ", 4) &&
             strlen(line) == 4 + klen + 1 && !strncmp(line + 4, f->key, klen);
    for (int lines = 0; ok && fgets(line, sizeof line, in);) {
        const size_t len = strlen(line);
        ok = ++lines <= MAX_LINES && len > 0 && line[len - 1] == '\n';
        if (ok) {
            line[len - 1] = '\0';
            ok = parse_record(f, line, sn);
        }
    }
    if (ok && !ferror(in)) {
        const unsigned all = (1u << HRMT_TUNE_BUCKETS) - 1, slots = (1u << f->nslots) - 1;
        f->have_buckets = 1;
        for (int i = 0; i < f->nslots; i++) f->have_buckets &= sn->bucket[i] == all;
        if (f->glu_lines) f->have_buckets &= sn->glu == all;
        unsigned kept = 0; /* only complete exact entries stay */
        for (unsigned i = 0; i < f->nexact; i++)
            if (sn->exact_slots[i] == slots && (!f->glu_lines || sn->exact_glu[i]))
                f->exact[kept++] = f->exact[i];
        f->nexact = kept;
    } else {
        ok = 0;
        f->have_buckets = 0;
        f->nexact = 0;
    }
    free(sn);
    return ok;
}

hrmt_status hrmt_tune_file_open(hrmt_context *ctx, const char *path, const char *key, int nslots,
                                int glu_lines, hrmt_tune_file **out) {
    *out = NULL;
    if (!path || !*path || !key || nslots < 1 || nslots > HRMT_TUNE_SLOTS ||
        strlen(key) >= HRMT_TUNE_KEY || strpbrk(key, " \n"))
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "HRMT_CUDA_GEMM_TUNE_CACHE: bad path or key");
    hrmt_tune_file *f = calloc(1, sizeof *f);
    if (f) f->path = strdup(path);
    if (!f || !f->path) {
        hrmt_tune_file_free(f);
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "HRMT_CUDA_GEMM_TUNE_CACHE '%s'", path);
    }
    memcpy(f->key, key, strlen(key) + 1); /* fits: checked above */
    f->nslots = nslots;
    f->glu_lines = glu_lines;
    const char *why = NULL;
    int opened = 0;
    const int fd = hrmt_open_regular(path, NULL, &why, &opened);
    if (fd < 0 && !opened && errno == ENOENT) { /* written at the first tuning */
        *out = f;
        return HRMT_OK;
    }
    FILE *in = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!in) {
        if (fd >= 0) {
            why = strerror(errno);
            close(fd);
        }
        hrmt_tune_file_free(f);
        return hrmt_fail(ctx, HRMT_ERR_IO, "HRMT_CUDA_GEMM_TUNE_CACHE '%s': %s", path, why);
    }
    char first[LINE];
    const int got = fgets(first, sizeof first, in) != NULL;
    hrmt_status s = HRMT_OK;
    if (ferror(in))
        s = hrmt_fail(ctx, HRMT_ERR_IO, "HRMT_CUDA_GEMM_TUNE_CACHE '%s': cannot be read", path);
    else if (got && strncmp(first, FAMILY, sizeof FAMILY - 1) != 0)
        s = hrmt_fail(ctx, HRMT_ERR_IO,
                      "HRMT_CUDA_GEMM_TUNE_CACHE '%s' is not an hrmt GEMM tuning cache (left as "
                      "it is: name another file)",
                      path);
    else if (got && !strcmp(first, MAGIC))
        (void)read_records(f, in); /* nothing kept when it fails: tuned and rewritten */
    fclose(in);
    if (s != HRMT_OK) {
        hrmt_tune_file_free(f);
        return s;
    }
    *out = f;
    return HRMT_OK;
}

const hrmt_tune_exact *hrmt_tune_file_exact(const hrmt_tune_file *f, size_t rows) {
    for (unsigned i = 0; f && i < f->nexact; i++)
        if (f->exact[i].rows == rows) return &f->exact[i];
    return NULL;
}

void hrmt_tune_file_put_exact(hrmt_tune_file *f, const hrmt_tune_exact *e) {
    unsigned i = 0;
    while (i < f->nexact && f->exact[i].rows != e->rows) i++;
    if (i == HRMT_TUNE_EXACT) { /* full: the oldest goes */
        memmove(&f->exact[0], &f->exact[1], (HRMT_TUNE_EXACT - 1) * sizeof f->exact[0]);
        i = HRMT_TUNE_EXACT - 1;
    } else if (i == f->nexact) {
        f->nexact++;
    }
    f->exact[i] = *e;
}

static void put_pick(FILE *out, const hrmt_tune_pick *p) {
    fprintf(out, "%d ", p->own);
    for (int i = 0; i < HRMT_TUNE_ALGO_BYTES; i++) fprintf(out, "%02x", p->algo[i]);
    fputc('\n', out);
}

hrmt_status hrmt_tune_file_write(hrmt_context *ctx, const hrmt_tune_file *f) {
    const size_t tlen = strlen(f->path) + 32;
    char *tmp = malloc(tlen);
    if (!tmp) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "HRMT_CUDA_GEMM_TUNE_CACHE");
    snprintf(tmp, tlen, "%s.tmp.%ld", f->path, (long)getpid());
    FILE *out = fopen(tmp, "w");
    int e = out ? 0 : errno;
    if (out) {
        fputs(MAGIC, out);
        fprintf(out, "key %s\n", f->key);
        for (int i = 0; i < f->nslots && f->have_buckets; i++)
            for (int b = 0; b < HRMT_TUNE_BUCKETS; b++) {
                fprintf(out, "bucket %d %d ", i, b);
                put_pick(out, &f->bucket[i][b]);
            }
        for (int b = 0; b < HRMT_TUNE_BUCKETS && f->have_buckets && f->glu_lines; b++)
            fprintf(out, "glu %d %d\n", b, f->glu_shape[b]);
        for (unsigned x = 0; x < f->nexact; x++) {
            const hrmt_tune_exact *p = &f->exact[x];
            for (int i = 0; i < f->nslots; i++) {
                fprintf(out, "exact %zu %d ", p->rows, i);
                put_pick(out, &p->slot[i]);
            }
            if (f->glu_lines) fprintf(out, "exact_glu %zu %d\n", p->rows, p->glu_shape);
        }
        if (fflush(out) != 0 || ferror(out)) e = errno ? errno : EIO;
        if (fclose(out) != 0 && !e) e = errno;
        if (!e && rename(tmp, f->path) != 0) e = errno;
        if (e) (void)remove(tmp);
    }
    free(tmp);
    if (e)
        return hrmt_fail(ctx, HRMT_ERR_IO, "HRMT_CUDA_GEMM_TUNE_CACHE '%s': cannot write: %s",
                         f->path, strerror(e));
    return HRMT_OK;
}

void hrmt_tune_file_free(hrmt_tune_file *f) {
    if (!f) return;
    free(f->path);
    free(f);
}
