/* The GEMM tuner's pick file: reading, writing (model_gemm_tune_cache.cuh).
 * Nothing read here serves before model_gemm_tune.cu has checked its bits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/model_gemm_tune_cache.cuh"

namespace {

const char MAGIC[] = "hrmt-gemm-tune 1\n";
const char FAMILY[] = "hrmt-gemm-tune "; /* any version of the format: ours to rewrite */
constexpr int LINE = 1024;               /* longer lines: not a record of this format */
constexpr int MAX_LINES = 8192;          /* a file of more is not read */
constexpr int ALGO_HEX = 2 * (int)sizeof(cublasLtMatmulAlgo_t);

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* 1: `s` was exactly ALGO_HEX lower-case hex digits, decoded into *a. */
int parse_algo(const char *s, cublasLtMatmulAlgo_t *a) {
    if ((int)strlen(s) != ALGO_HEX) return 0;
    unsigned char *b = (unsigned char *)a;
    for (int i = 0; i < ALGO_HEX / 2; i++) {
        const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return 0;
        b[i] = (unsigned char)(hi << 4 | lo);
    }
    return 1;
}

void put_algo(FILE *f, const cublasLtMatmulAlgo_t *a) {
    const unsigned char *b = (const unsigned char *)a;
    for (size_t i = 0; i < sizeof *a; i++) fprintf(f, "%02x", b[i]);
}

/* A whole number in [lo, hi] spelled in decimal digits only; 1: it was. */
int parse_num(const char *s, long long lo, long long hi, long long *v) {
    if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18) return 0;
    *v = strtoll(s, NULL, 10);
    return *v >= lo && *v <= hi;
}

/* Per exact entry: which of its lines the file had. */
struct exact_seen {
    unsigned slots;
    int glu;
};

/* The index of rows' entry among c's, adding one when new (-1: full). */
int exact_slot(cu_tune_cache *c, exact_seen *seen, size_t rows) {
    for (unsigned i = 0; i < c->nexact; i++)
        if (c->exact[i].rows == rows) return (int)i;
    if (c->nexact == CU_TUNE_CACHE_EXACT) return -1;
    cu_exact_pick *p = &c->exact[c->nexact];
    memset(p, 0, sizeof *p);
    memset(&seen[c->nexact], 0, sizeof seen[0]);
    p->rows = rows;
    return (int)c->nexact++;
}

/* One record line (newline stripped) into c; 0: malformed. */
int parse_record(cu_tune_cache *c, char *line, int nlt, unsigned *bucket_seen, unsigned *glu_seen,
                 exact_seen *seen) {
    char *tok[6];
    int n = 0;
    for (char *save = NULL, *p = strtok_r(line, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
        if (n == 6) return 0;
        tok[n++] = p;
    }
    long long a = 0, b = 0, o = 0;
    if (n == 5 && !strcmp(tok[0], "bucket")) {
        cublasLtMatmulAlgo_t al;
        if (!parse_num(tok[1], 0, nlt - 1, &a) || !parse_num(tok[2], 0, CU_LT_BUCKETS - 1, &b) ||
            !parse_num(tok[3], 0, 127, &o) || !parse_algo(tok[4], &al))
            return 0;
        c->small[a][b] = al;
        c->own[a][b] = (signed char)o;
        bucket_seen[a] |= 1u << b;
        return 1;
    }
    if (n == 3 && !strcmp(tok[0], "glu")) {
        if (!parse_num(tok[1], 0, CU_LT_BUCKETS - 1, &b) || !parse_num(tok[2], 0, 127, &o))
            return 0;
        c->glu_shape[b] = (signed char)o;
        *glu_seen |= 1u << b;
        return 1;
    }
    if (n == 5 && !strcmp(tok[0], "exact")) {
        cublasLtMatmulAlgo_t al;
        if (!parse_num(tok[1], 1, (long long)1 << 40, &a) || !parse_num(tok[2], 0, nlt - 1, &b) ||
            !parse_num(tok[3], 0, 127, &o) || !parse_algo(tok[4], &al))
            return 0;
        const int e = exact_slot(c, seen, (size_t)a);
        if (e < 0) return 0;
        c->exact[e].algo[b] = al;
        c->exact[e].own[b] = (signed char)o;
        seen[e].slots |= 1u << b;
        return 1;
    }
    if (n == 3 && !strcmp(tok[0], "exact_glu")) {
        if (!parse_num(tok[1], 1, (long long)1 << 40, &a) || !parse_num(tok[2], 0, 127, &o))
            return 0;
        const int e = exact_slot(c, seen, (size_t)a);
        if (e < 0) return 0;
        c->exact[e].glu_shape = (signed char)o;
        seen[e].glu = 1;
        return 1;
    }
    return 0;
}

/* Reads f (its first line already matched MAGIC) into c; 0: not a cache of
 * c's key with well-formed records (c then holds nothing). */
int read_records(cu_tune_cache *c, FILE *f, int nlt) {
    char line[LINE];
    unsigned bucket_seen[CU_LT_SLOTS] = {0}, glu_seen = 0;
    exact_seen seen[CU_TUNE_CACHE_EXACT];
    int ok = 1, lines = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "key ", 4) != 0 ||
        strlen(line) != 4 + strlen(c->key) + 1 || strncmp(line + 4, c->key, strlen(c->key)) != 0)
        return 0;
    while (ok && fgets(line, sizeof line, f)) {
        const size_t len = strlen(line);
        ok = ++lines <= MAX_LINES && len > 0 && line[len - 1] == '\n';
        if (ok) {
            line[len - 1] = '\0';
            ok = parse_record(c, line, nlt, bucket_seen, &glu_seen, seen);
        }
    }
    if (!ok || ferror(f)) return 0;
    const unsigned all = (1u << CU_LT_BUCKETS) - 1;
    c->have_buckets = 1;
    for (int i = 0; i < nlt; i++) c->have_buckets &= bucket_seen[i] == all;
    if (c->glu_lines) c->have_buckets &= glu_seen == all;
    /* Only complete exact entries stay. */
    unsigned kept = 0;
    for (unsigned i = 0; i < c->nexact; i++) {
        if (seen[i].slots != (1u << nlt) - 1 || (c->glu_lines && !seen[i].glu)) continue;
        c->exact[kept] = c->exact[i];
        c->exact[kept++].tuned = 1;
    }
    c->nexact = kept;
    return 1;
}

void clear_picks(cu_tune_cache *c) {
    c->have_buckets = 0;
    c->nexact = 0;
}

} // namespace

hrmt_status cu_tune_cache_open(hrmt_model *m, const char *key, int nlt, int glu_lines,
                               cu_tune_cache **out) {
    *out = NULL;
    const char *path = getenv("HRMT_CUDA_GEMM_TUNE_CACHE");
    if (!path || !*path) return HRMT_OK;
    if (strlen(key) >= CU_TUNE_CACHE_KEY || strchr(key, '\n'))
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "cuda gemm tuning: cache key too long");
    cu_tune_cache *c = (cu_tune_cache *)calloc(1, sizeof *c);
    if (c) c->path = strdup(path);
    if (!c || !c->path) {
        cu_tune_cache_free(c);
        return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "HRMT_CUDA_GEMM_TUNE_CACHE: %s", path);
    }
    strcpy(c->key, key);
    c->glu_lines = glu_lines;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT) { /* written at the first tuning */
            *out = c;
            return HRMT_OK;
        }
        const int e = errno;
        cu_tune_cache_free(c);
        return hrmt_fail(m->ctx, HRMT_ERR_IO, "HRMT_CUDA_GEMM_TUNE_CACHE '%s': %s", path,
                         strerror(e));
    }
    char first[LINE];
    const int got = fgets(first, sizeof first, f) != NULL;
    hrmt_status s = HRMT_OK;
    if (ferror(f)) { /* a directory, for one */
        s = hrmt_fail(m->ctx, HRMT_ERR_IO, "HRMT_CUDA_GEMM_TUNE_CACHE '%s': cannot be read", path);
    } else if (got && strncmp(first, FAMILY, sizeof FAMILY - 1) != 0) {
        s = hrmt_fail(m->ctx, HRMT_ERR_IO,
                      "HRMT_CUDA_GEMM_TUNE_CACHE '%s' is not an hrmt GEMM tuning cache "
                      "(left as it is: name another file)",
                      path);
    } else if (got && !strcmp(first, MAGIC) && !read_records(c, f, nlt)) {
        clear_picks(c); /* another key or bad records: tuned and rewritten */
    }
    fclose(f);
    if (s != HRMT_OK) {
        cu_tune_cache_free(c);
        return s;
    }
    *out = c;
    return HRMT_OK;
}

const cu_exact_pick *cu_tune_cache_exact(const cu_tune_cache *c, size_t rows) {
    for (unsigned i = 0; c && i < c->nexact; i++)
        if (c->exact[i].rows == rows) return &c->exact[i];
    return NULL;
}

void cu_tune_cache_put_exact(cu_tune_cache *c, const cu_exact_pick *p) {
    unsigned i = 0;
    while (i < c->nexact && c->exact[i].rows != p->rows) i++;
    if (i == CU_TUNE_CACHE_EXACT) { /* full: the oldest goes */
        memmove(&c->exact[0], &c->exact[1], (CU_TUNE_CACHE_EXACT - 1) * sizeof c->exact[0]);
        i = CU_TUNE_CACHE_EXACT - 1;
    } else if (i == c->nexact) {
        c->nexact++;
    }
    c->exact[i] = *p;
    c->exact[i].tuned = 1;
}

hrmt_status cu_tune_cache_write(hrmt_model *m, const cu_tune_cache *c, int nlt) {
    const size_t plen = strlen(c->path);
    char *tmp = (char *)malloc(plen + 32);
    if (!tmp) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "HRMT_CUDA_GEMM_TUNE_CACHE");
    /* A temporary file renamed over the path: a reader (another process)
     * sees the old file or the new one, never half of one. */
    snprintf(tmp, plen + 32, "%s.tmp.%ld", c->path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    int e = f ? 0 : errno;
    if (f) {
        fputs(MAGIC, f);
        fprintf(f, "key %s\n", c->key);
        for (int i = 0; i < nlt && c->have_buckets; i++)
            for (int b = 0; b < CU_LT_BUCKETS; b++) {
                fprintf(f, "bucket %d %d %d ", i, b, c->own[i][b]);
                put_algo(f, &c->small[i][b]);
                fputc('\n', f);
            }
        for (int b = 0; b < CU_LT_BUCKETS && c->have_buckets && c->glu_lines; b++)
            fprintf(f, "glu %d %d\n", b, c->glu_shape[b]);
        for (unsigned x = 0; x < c->nexact; x++) {
            const cu_exact_pick *p = &c->exact[x];
            for (int i = 0; i < nlt; i++) {
                fprintf(f, "exact %zu %d %d ", p->rows, i, p->own[i]);
                put_algo(f, &p->algo[i]);
                fputc('\n', f);
            }
            if (c->glu_lines) fprintf(f, "exact_glu %zu %d\n", p->rows, p->glu_shape);
        }
        if (ferror(f)) e = errno ? errno : EIO;
        if (fclose(f) != 0 && !e) e = errno;
        if (!e && rename(tmp, c->path) != 0) e = errno;
        if (e) (void)remove(tmp);
    }
    free(tmp);
    if (e)
        return hrmt_fail(m->ctx, HRMT_ERR_IO, "HRMT_CUDA_GEMM_TUNE_CACHE '%s': cannot write: %s",
                         c->path, strerror(e));
    return HRMT_OK;
}

void cu_tune_cache_free(cu_tune_cache *c) {
    if (!c) return;
    free(c->path);
    free(c);
}
