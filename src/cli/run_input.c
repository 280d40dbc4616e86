/* `hrmt run` input files (see run_input.h). */
#include "cli/run_input.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/user_files.h"
#include "core/text_escape.h"

void cli_run_batch_free(cli_run_batch *b) {
    if (!b) return;
    free(b->tokens);
    free(b->line);
    memset(b, 0, sizeof *b);
}

/* What a line reader needs for its messages: the escaped path and the line. */
typedef struct where {
    char path[256];
    int line;
} where;

/* Appends one empty sample row; NULL on overflow of the sample cap or OOM. */
static int32_t *grow(cli_run_batch *b, const where *w, char *err, size_t errlen) {
    if (b->n >= CLI_RUN_MAX_SAMPLES) {
        snprintf(err, errlen, "%s:%d: more than %d samples in one run; split the file", w->path,
                 w->line, CLI_RUN_MAX_SAMPLES);
        return NULL;
    }
    int32_t *t = realloc(b->tokens, (size_t)(b->n + 1) * (size_t)b->seq_len * sizeof *t);
    if (t) b->tokens = t;
    int *l = realloc(b->line, (size_t)(b->n + 1) * sizeof *l);
    if (l) b->line = l;
    if (!t || !l) {
        snprintf(err, errlen, "%s:%d: out of memory holding %d samples of %d tokens", w->path,
                 w->line, b->n + 1, b->seq_len);
        return NULL;
    }
    b->line[b->n] = w->line;
    return b->tokens + (size_t)b->n++ * (size_t)b->seq_len;
}

enum { LINE_EOF, LINE_OK, LINE_LONG, LINE_NOMEM };

/* Reads one line without its '\n' into *buf (NUL-terminated after *len
 * bytes), growing it up to max + 1 bytes. LINE_LONG: max bytes were read and
 * the line goes on (the rest is still in the stream). */
static int read_line(FILE *fp, char **buf, size_t *cap, size_t max, size_t *len) {
    size_t n = 0;
    int c = 0;
    while ((c = getc(fp)) != EOF && c != '\n') {
        if (n == max) {
            ungetc(c, fp);
            (*buf)[n] = '\0';
            *len = n;
            return LINE_LONG;
        }
        if (n + 1 >= *cap) {
            size_t nc = *cap * 2 < max + 1 ? *cap * 2 : max + 1;
            char *nb = realloc(*buf, nc);
            if (!nb) return LINE_NOMEM;
            *buf = nb;
            *cap = nc;
        }
        (*buf)[n++] = (char)c;
    }
    (*buf)[n] = '\0';
    *len = n;
    return c == EOF && n == 0 ? LINE_EOF : LINE_OK;
}

static void skip_rest_of_line(FILE *fp) {
    int c = 0;
    while ((c = getc(fp)) != EOF && c != '\n') {
    }
}

enum { KIND_BLANK, KIND_COMMENT, KIND_CONTENT };

/* Blank, a comment (first non-blank byte '#'), or content. */
static int line_kind(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    return i == n ? KIND_BLANK : s[i] == '#' ? KIND_COMMENT : KIND_CONTENT;
}

/* The rest of an over-long line whose start is blank: reads it to its end
 * and says whether it stays blank or turns into a comment (1), or holds
 * content (0: the caller stops reading). */
static int rest_is_skippable(FILE *fp) {
    int c = 0;
    while ((c = getc(fp)) != EOF && c != '\n') {
        if (isspace(c)) continue;
        if (c != '#') return 0;
        skip_rest_of_line(fp);
        return 1;
    }
    return 1;
}

typedef int (*line_fn)(const where *w, const char *line, int32_t *row, int seq_len, int vocab,
                       char *err, size_t errlen);

static int read_lines(const char *path, int seq_len, int vocab, size_t max_line, line_fn fn,
                      cli_run_batch *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->seq_len = seq_len;
    if (max_line == 0) max_line = CLI_RUN_MAX_LINE;
    where w;
    hrmt_text_escape_str(w.path, sizeof w.path, path);
    w.line = 0;
    FILE *fp = cli_fopen_regular(path, err, errlen);
    if (!fp) return -1;
    size_t cap = 256, len = 0;
    char *line = malloc(cap);
    int rc = line ? 0 : -1, got = LINE_EOF;
    if (!line) snprintf(err, errlen, "%s: out of memory", w.path);
    while (rc == 0 && (got = read_line(fp, &line, &cap, max_line, &len)) != LINE_EOF) {
        if (w.line == INT_MAX) {
            snprintf(err, errlen, "%s: more than %d lines", w.path, INT_MAX);
            rc = -1;
            break;
        }
        w.line++;
        const int kind = got == LINE_NOMEM ? KIND_CONTENT : line_kind(line, len);
        if (got == LINE_NOMEM) {
            snprintf(err, errlen, "%s:%d: out of memory reading a line of %zu+ bytes", w.path,
                     w.line, cap);
            rc = -1;
        } else if (kind == KIND_COMMENT || (got == LINE_OK && kind == KIND_BLANK)) {
            if (got == LINE_LONG) skip_rest_of_line(fp); /* a long comment is still a comment */
        } else if (got == LINE_LONG && (kind == KIND_CONTENT || !rest_is_skippable(fp))) {
            snprintf(err, errlen,
                     "%s:%d: line longer than %zu bytes (the limit; --max-line-bytes raises it)",
                     w.path, w.line, max_line);
            rc = -1;
        } else if (got == LINE_LONG) {
            /* blank past the limit, then blank or a comment to its end: skipped */
        } else if (memchr(line, '\0', len)) {
            snprintf(err, errlen,
                     "%s:%d: column %zu: NUL byte; puzzle and token files must be text", w.path,
                     w.line, (size_t)((const char *)memchr(line, '\0', len) - line) + 1);
            rc = -1;
        } else {
            while (len && isspace((unsigned char)line[len - 1])) line[--len] = '\0';
            int32_t *row = grow(out, &w, err, errlen);
            if (!row || fn(&w, line, row, seq_len, vocab, err, errlen) != 0) rc = -1;
        }
    }
    if (rc == 0 && ferror(fp)) {
        snprintf(err, errlen, "%s: read error after line %d: %s", w.path, w.line, strerror(errno));
        rc = -1;
    }
    if (rc == 0 && out->n == 0) {
        snprintf(err, errlen, "%s: no samples (every line is blank or a # comment)", w.path);
        rc = -1;
    }
    free(line);
    fclose(fp);
    if (rc) cli_run_batch_free(out);
    return rc;
}

static int puzzle_line(const where *w, const char *line, int32_t *row, int seq_len, int vocab,
                       char *err, size_t errlen) {
    (void)vocab;
    const char *p = line;
    while (isspace((unsigned char)*p)) p++;
    size_t n = strlen(p);
    if (n != (size_t)seq_len) {
        snprintf(err, errlen, "%s:%d: a puzzle line needs %d characters, this one has %zu", w->path,
                 w->line, seq_len, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (ch == '.' || ch == '0') {
            row[i] = 1;
        } else if (ch >= '1' && ch <= '9') {
            row[i] = ch - '1' + 2;
        } else {
            char e[8];
            snprintf(err, errlen, "%s:%d: column %zu: '%s' is not '.', '0' or a digit 1-9", w->path,
                     w->line, (size_t)(p - line) + i + 1, hrmt_text_escape(e, sizeof e, &p[i], 1));
            return -1;
        }
    }
    return 0;
}

static int is_sep(char c) { return c == ' ' || c == '\t' || c == ','; }

static int token_line(const where *w, const char *line, int32_t *row, int seq_len, int vocab,
                      char *err, size_t errlen) {
    int count = 0;
    const char *p = line;
    for (;;) {
        while (is_sep(*p)) p++;
        if (!*p) break;
        size_t k = 0;
        while (p[k] && !is_sep(p[k])) k++;
        char word[64];
        hrmt_text_escape(word, sizeof word, p, k);
        char *end = NULL;
        errno = 0;
        long v = strtol(p, &end, 10);
        /* strtol alone would skip leading blanks such as '\f' inside the word. */
        if (!strchr("+-0123456789", p[0]) || end != p + k) {
            snprintf(err, errlen, "%s:%d: token %d: '%s' is not an integer", w->path, w->line,
                     count + 1, word);
            return -1;
        }
        if (errno == ERANGE || v < 0 || v >= vocab) {
            /* As written: strtol's clamped value would name another number. */
            snprintf(err, errlen, "%s:%d: token %d: %s is outside the vocabulary 0..%d", w->path,
                     w->line, count + 1, word, vocab - 1);
            return -1;
        }
        if (count == seq_len) {
            snprintf(err, errlen, "%s:%d: more than %d tokens, the model needs %d", w->path,
                     w->line, seq_len, seq_len);
            return -1;
        }
        row[count++] = (int32_t)v;
        p += k;
    }
    if (count != seq_len) {
        snprintf(err, errlen, "%s:%d: %d tokens, the model needs %d", w->path, w->line, count,
                 seq_len);
        return -1;
    }
    return 0;
}

int cli_run_read(const char *path, cli_run_input_kind kind, int seq_len, int vocab, size_t max_line,
                 cli_run_batch *out, char *err, size_t errlen) {
    if (kind == CLI_RUN_PUZZLES)
        return read_lines(path, seq_len, 11, max_line, puzzle_line, out, err, errlen);
    return read_lines(path, seq_len, vocab, max_line, token_line, out, err, errlen);
}

int cli_run_read_puzzles(const char *path, int seq_len, cli_run_batch *out, char *err,
                         size_t errlen) {
    return cli_run_read(path, CLI_RUN_PUZZLES, seq_len, 11, 0, out, err, errlen);
}

int cli_run_read_tokens(const char *path, int seq_len, int vocab, cli_run_batch *out, char *err,
                        size_t errlen) {
    return cli_run_read(path, CLI_RUN_TOKENS, seq_len, vocab, 0, out, err, errlen);
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
