/* A plain-text table: columns sized to their widest cell, text left-aligned,
 * numbers right-aligned, a rule under the header. */
#ifndef HRMT_CLI_TABLE_H
#define HRMT_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

typedef struct cli_table cli_table;

typedef enum cli_align { CLI_ALIGN_LEFT = 0, CLI_ALIGN_RIGHT = 1 } cli_align;

/* A table with `ncols` columns titled `headers` (copied). NULL when out of memory. */
cli_table *cli_table_create(size_t ncols, const char *const *headers, const cli_align *align);
void cli_table_destroy(cli_table *t);

/* Appends a row; cells are printf-formatted by the caller and copied. -1 on OOM. */
int cli_table_add_row(cli_table *t, const char *const *cells);
/* Sets cell (row, col) of an existing row; -1 when out of range or OOM. */
int cli_table_set(cli_table *t, size_t row, size_t col, const char *text);
size_t cli_table_rows(const cli_table *t);

/* Prints the table; two spaces between columns. */
void cli_table_print(const cli_table *t, FILE *f);

/* "512 B", "32 KiB", "1.5 MiB", "1 GiB" into buf; returns buf. */
const char *cli_format_bytes(size_t bytes, char *buf, size_t len);

#endif
