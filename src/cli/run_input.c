/* `hrmt run` input files (see run_input.h). */
#define _POSIX_C_SOURCE 200809L /* getline */
#include "cli/run_input.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/user_files.h"

void cli_run_batch_free(cli_run_batch *b) {
    if (!b) return;
    free(b->tokens);
    free(b->line);
    memset(b, 0, sizeof *b);
}

/* Appends one empty sample row; -1 on overflow of the sample cap or OOM. */
static int32_t *grow(cli_run_batch *b, int lineno, const char *path, char *err, size_t errlen) {
    if (b->n >= CLI_RUN_MAX_SAMPLES) {
        snprintf(err, errlen, "%s:%d: more than %d samples in one run", path, lineno,
                 CLI_RUN_MAX_SAMPLES);
        return NULL;
    }
    int32_t *t = realloc(b->tokens, (size_t)(b->n + 1) * (size_t)b->seq_len * sizeof *t);
    if (t) b->tokens = t;
    int *l = realloc(b->line, (size_t)(b->n + 1) * sizeof *l);
    if (l) b->line = l;
    if (!t || !l) {
        snprintf(err, errlen, "%s:%d: out of memory", path, lineno);
        return NULL;
    }
    b->line[b->n] = lineno;
    return b->tokens + (size_t)b->n++ * (size_t)b->seq_len;
}

/* Strips trailing whitespace (CR LF included); 1 when the line is to be skipped. */
static int trim_skip(char *s) {
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    return *p == '\0' || *p == '#';
}

typedef int (*line_fn)(const char *path, int lineno, char *line, int32_t *row, int seq_len,
                       int vocab, char *err, size_t errlen);

static int read_lines(const char *path, int seq_len, int vocab, line_fn fn, cli_run_batch *out,
                      char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->seq_len = seq_len;
    FILE *fp = cli_fopen_regular(path, err, errlen);
    if (!fp) return -1;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0;
    while (getline(&line, &cap, fp) >= 0) {
        lineno++;
        if (trim_skip(line)) continue;
        int32_t *row = grow(out, lineno, path, err, errlen);
        if (!row || fn(path, lineno, line, row, seq_len, vocab, err, errlen) != 0) {
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(fp)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = -1;
    }
    if (rc == 0 && out->n == 0) {
        snprintf(err, errlen, "%s: no samples (every line is blank or a # comment)", path);
        rc = -1;
    }
    free(line);
    fclose(fp);
    if (rc) cli_run_batch_free(out);
    return rc;
}

static int puzzle_line(const char *path, int lineno, char *line, int32_t *row, int seq_len,
                       int vocab, char *err, size_t errlen) {
    (void)vocab;
    char *p = line;
    while (isspace((unsigned char)*p)) p++;
    size_t n = strlen(p);
    if (n != (size_t)seq_len) {
        snprintf(err, errlen, "%s:%d: a puzzle line needs %d characters, this one has %zu", path,
                 lineno, seq_len, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (ch == '.' || ch == '0') {
            row[i] = 1;
        } else if (ch >= '1' && ch <= '9') {
            row[i] = ch - '1' + 2;
        } else {
            snprintf(err, errlen, "%s:%d: column %zu: '%c' is not '.', '0' or a digit 1-9", path,
                     lineno, i + 1, isprint((unsigned char)ch) ? ch : '?');
            return -1;
        }
    }
    return 0;
}

static int token_line(const char *path, int lineno, char *line, int32_t *row, int seq_len,
                      int vocab, char *err, size_t errlen) {
    int count = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) break;
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || (*end && *end != ' ' && *end != '\t' && *end != ',')) {
            char word[32];
            size_t k = 0;
            while (p[k] && p[k] != ' ' && p[k] != '\t' && p[k] != ',' && k < sizeof word - 1) k++;
            memcpy(word, p, k);
            word[k] = '\0';
            snprintf(err, errlen, "%s:%d: token %d: '%s' is not an integer", path, lineno,
                     count + 1, word);
            return -1;
        }
        if (errno || v < 0 || v >= vocab) {
            snprintf(err, errlen, "%s:%d: token %d: %ld is outside the vocabulary 0..%d", path,
                     lineno, count + 1, v, vocab - 1);
            return -1;
        }
        if (count == seq_len) {
            snprintf(err, errlen, "%s:%d: more than %d tokens", path, lineno, seq_len);
            return -1;
        }
        row[count++] = (int32_t)v;
        p = end;
    }
    if (count != seq_len) {
        snprintf(err, errlen, "%s:%d: %d tokens, the model needs %d", path, lineno, count, seq_len);
        return -1;
    }
    return 0;
}

int cli_run_read_puzzles(const char *path, int seq_len, cli_run_batch *out, char *err,
                         size_t errlen) {
    return read_lines(path, seq_len, 11, puzzle_line, out, err, errlen);
}

int cli_run_read_tokens(const char *path, int seq_len, int vocab, cli_run_batch *out, char *err,
                        size_t errlen) {
    return read_lines(path, seq_len, vocab, token_line, out, err, errlen);
}

void cli_run_tokens_to_text(const int32_t *tokens, int seq_len, char *out) {
    for (int i = 0; i < seq_len; i++) {
        static const char text[] = "..123456789"; /* tokens 0 and 1, then digits */
        int32_t t = tokens[i];
        out[i] = '?';
        if (t >= 0 && t <= 10) out[i] = text[t];
    }
    out[seq_len] = '\0';
}
