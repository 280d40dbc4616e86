/* JSON output helpers on top of cJSON. */
#ifndef HRMT_CLI_JSON_OUT_H
#define HRMT_CLI_JSON_OUT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "cli/stats.h"

/* {"min":..,"max":..,"mean":..,"std":..,"median":..}; NULL on OOM. */
cJSON *cli_json_stats(const cli_stats *s);

/* Adds name: value to obj; -1 on OOM. */
int cli_json_add_num(cJSON *obj, const char *name, double value);

/* 1 when every number in the tree is finite (JSON cannot carry NaN or Inf;
 * cJSON would silently print them as null). */
int cli_json_all_finite(const cJSON *node);

/* Writes the tree, formatted, with a final newline to `f`. Refuses (-1, message
 * in err) trees with non-finite numbers. */
int cli_json_write(const cJSON *root, FILE *f, char *err, size_t errlen);
/* The same into the file at `path` (created or truncated). */
int cli_json_write_file(const cJSON *root, const char *path, char *err, size_t errlen);

#endif
