/* JSON output helpers (see json_out.h). */
#include "cli/json_out.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_escape.h"

cJSON *cli_json_stats(const cli_stats *s) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if (cli_json_add_num(o, "min", s->min) || cli_json_add_num(o, "max", s->max) ||
        cli_json_add_num(o, "mean", s->mean) || cli_json_add_num(o, "std", s->std) ||
        cli_json_add_num(o, "median", s->median)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

int cli_json_add_num(cJSON *obj, const char *name, double value) {
    return cJSON_AddNumberToObject(obj, name, value) ? 0 : -1;
}

int cli_json_all_finite(const cJSON *node) {
    for (; node; node = node->next) {
        if (cJSON_IsNumber(node) && !isfinite(node->valuedouble)) return 0;
        if (node->child && !cli_json_all_finite(node->child)) return 0;
    }
    return 1;
}

int cli_json_write(const cJSON *root, FILE *f, char *err, size_t errlen) {
    if (!root || !cli_json_all_finite(root)) {
        snprintf(err, errlen, "refusing to write JSON with a NaN or infinite value");
        return -1;
    }
    char *text = cJSON_Print(root);
    if (!text) {
        snprintf(err, errlen, "out of memory formatting JSON");
        return -1;
    }
    int bad = fputs(text, f) < 0 || fputc('\n', f) == EOF;
    cJSON_free(text);
    if (bad) {
        snprintf(err, errlen, "write failed: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int cli_json_write_file(const cJSON *root, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        char e[256];
        snprintf(err, errlen, "cannot open '%s' for writing: %s",
                 hrmt_text_escape_str(e, sizeof e, path), strerror(errno));
        return -1;
    }
    int r = cli_json_write(root, f, err, errlen);
    if (fclose(f) != 0 && r == 0) {
        char e[256];
        snprintf(err, errlen, "cannot write '%s': %s", hrmt_text_escape_str(e, sizeof e, path),
                 strerror(errno));
        r = -1;
    }
    return r;
}
