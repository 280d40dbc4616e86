/* Plain-text tables (see table.h). */
#include "cli/table.h"

#include <stdlib.h>
#include <string.h>

struct cli_table {
    size_t ncols, nrows, cap;
    char **cells; /* (nrows + 1) x ncols, row 0 is the header */
    cli_align *align;
};

static char *dup_str(const char *s) {
    size_t n = strlen(s ? s : "") + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s ? s : "", n);
    return d;
}

/* Grows the cell array to hold `rows` rows (header included). */
static int reserve(cli_table *t, size_t rows) {
    if (rows <= t->cap) return 0;
    size_t cap = t->cap ? t->cap * 2 : 8;
    while (cap < rows) cap *= 2;
    char **c = realloc(t->cells, cap * t->ncols * sizeof *c);
    if (!c) return -1;
    memset(c + t->cap * t->ncols, 0, (cap - t->cap) * t->ncols * sizeof *c);
    t->cells = c;
    t->cap = cap;
    return 0;
}

static int fill_row(cli_table *t, size_t row, const char *const *cells) {
    for (size_t j = 0; j < t->ncols; j++) {
        char *d = dup_str(cells[j]);
        if (!d) return -1;
        free(t->cells[row * t->ncols + j]);
        t->cells[row * t->ncols + j] = d;
    }
    return 0;
}

cli_table *cli_table_create(size_t ncols, const char *const *headers, const cli_align *align) {
    if (ncols == 0 || !headers) return NULL;
    cli_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->ncols = ncols;
    t->align = calloc(ncols, sizeof *t->align);
    if (!t->align || reserve(t, 1) || fill_row(t, 0, headers)) {
        cli_table_destroy(t);
        return NULL;
    }
    if (align) memcpy(t->align, align, ncols * sizeof *align);
    return t;
}

void cli_table_destroy(cli_table *t) {
    if (!t) return;
    for (size_t i = 0; i < t->cap * t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    free(t->align);
    free(t);
}

int cli_table_add_row(cli_table *t, const char *const *cells) {
    if (!t || !cells || reserve(t, t->nrows + 2)) return -1;
    if (fill_row(t, t->nrows + 1, cells)) return -1;
    t->nrows++;
    return 0;
}

int cli_table_set(cli_table *t, size_t row, size_t col, const char *text) {
    if (!t || row >= t->nrows || col >= t->ncols) return -1;
    char *d = dup_str(text);
    if (!d) return -1;
    size_t k = (row + 1) * t->ncols + col;
    free(t->cells[k]);
    t->cells[k] = d;
    return 0;
}

size_t cli_table_rows(const cli_table *t) { return t ? t->nrows : 0; }

void cli_table_print(const cli_table *t, FILE *f) {
    if (!t) return;
    size_t width[64] = {0};
    size_t nc = t->ncols < 64 ? t->ncols : 64;
    for (size_t i = 0; i <= t->nrows; i++)
        for (size_t j = 0; j < nc; j++) {
            size_t w = strlen(t->cells[i * t->ncols + j]);
            if (w > width[j]) width[j] = w;
        }
    for (size_t i = 0; i <= t->nrows; i++) {
        for (size_t j = 0; j < nc; j++) {
            const char *c = t->cells[i * t->ncols + j];
            int w = (int)width[j];
            const char *sep = j + 1 < nc ? "  " : "";
            if (t->align[j] == CLI_ALIGN_RIGHT)
                fprintf(f, "%*s%s", w, c, sep);
            else if (j + 1 < nc)
                fprintf(f, "%-*s%s", w, c, sep);
            else
                fputs(c, f); /* no trailing blanks */
        }
        fputc('\n', f);
        if (i == 0) {
            size_t total = 0;
            for (size_t j = 0; j < nc; j++) total += width[j] + (j + 1 < nc ? 2 : 0);
            for (size_t k = 0; k < total; k++) fputc('-', f);
            fputc('\n', f);
        }
    }
}

const char *cli_format_bytes(size_t bytes, char *buf, size_t len) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (v == (double)(size_t)v)
        snprintf(buf, len, "%zu %s", (size_t)v, units[u]);
    else
        snprintf(buf, len, "%.3g %s", v, units[u]);
    return buf;
}
