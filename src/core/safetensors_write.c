/* safetensors writer: tensors laid out back to back in insertion order. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/context.h"
#include "core/safetensors.h"

typedef struct st_entry {
    char *name;
    hrmt_dtype dtype;
    int ndim;
    size_t shape[HRMT_ST_MAX_DIMS];
    void *data;
    size_t nbytes;
} st_entry;

struct hrmt_st_writer {
    st_entry *e;
    size_t n, cap;
    cJSON *meta; /* object of strings, NULL until the first key */
};

hrmt_status hrmt_st_writer_create(hrmt_st_writer **out) {
    if (!out) return HRMT_ERR_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? HRMT_OK : HRMT_ERR_OUT_OF_MEMORY;
}

void hrmt_st_writer_destroy(hrmt_st_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n; i++) {
        free(w->e[i].name);
        free(w->e[i].data);
    }
    free(w->e);
    cJSON_Delete(w->meta);
    free(w);
}

hrmt_status hrmt_st_writer_add(hrmt_st_writer *w, const char *name, hrmt_dtype dtype, int ndim,
                               const size_t *shape, const void *data) {
    if (!w || !name || !*name || ndim < 0 || ndim > HRMT_ST_MAX_DIMS || (ndim && !shape) ||
        hrmt_dtype_size(dtype) == 0 || strcmp(name, "__metadata__") == 0)
        return HRMT_ERR_INVALID_ARG;
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->e[i].name, name) == 0) return HRMT_ERR_EXISTS;
    size_t bytes = hrmt_dtype_size(dtype);
    for (int i = 0; i < ndim; i++)
        if (!hrmt_mul_ok(bytes, shape[i], &bytes)) return HRMT_ERR_OVERFLOW;
    if (bytes && !data) return HRMT_ERR_INVALID_ARG;
    if (w->n == w->cap) {
        size_t nc = w->cap ? 2 * w->cap : 16;
        st_entry *ne = realloc(w->e, nc * sizeof *ne);
        if (!ne) return HRMT_ERR_OUT_OF_MEMORY;
        w->e = ne;
        w->cap = nc;
    }
    st_entry *e = &w->e[w->n];
    memset(e, 0, sizeof *e);
    e->name = strdup(name);
    e->data = malloc(bytes ? bytes : 1);
    if (!e->name || !e->data) {
        free(e->name);
        free(e->data);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    if (bytes) memcpy(e->data, data, bytes);
    e->dtype = dtype;
    e->ndim = ndim;
    for (int i = 0; i < ndim; i++) e->shape[i] = shape[i];
    e->nbytes = bytes;
    w->n++;
    return HRMT_OK;
}

hrmt_status hrmt_st_writer_set_metadata(hrmt_st_writer *w, const char *key, const char *value) {
    if (!w || !key || !value) return HRMT_ERR_INVALID_ARG;
    if (!w->meta && !(w->meta = cJSON_CreateObject())) return HRMT_ERR_OUT_OF_MEMORY;
    cJSON *v = cJSON_CreateString(value);
    if (!v) return HRMT_ERR_OUT_OF_MEMORY;
    if (cJSON_GetObjectItemCaseSensitive(w->meta, key)) {
        cJSON_ReplaceItemInObjectCaseSensitive(w->meta, key, v);
    } else if (!cJSON_AddItemToObject(w->meta, key, v)) {
        cJSON_Delete(v);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    return HRMT_OK;
}

/* Header JSON text (caller frees with cJSON_free). */
static char *build_header(const hrmt_st_writer *w) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    if (w->meta) {
        cJSON *m = cJSON_Duplicate(w->meta, 1);
        if (!m || !cJSON_AddItemToObject(root, "__metadata__", m)) goto fail;
    }
    size_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        const st_entry *e = &w->e[i];
        cJSON *o = cJSON_AddObjectToObject(root, e->name);
        if (!o || !cJSON_AddStringToObject(o, "dtype", hrmt_dtype_name(e->dtype))) goto fail;
        cJSON *sh = cJSON_AddArrayToObject(o, "shape");
        if (!sh) goto fail;
        for (int d = 0; d < e->ndim; d++)
            if (!cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)e->shape[d]))) goto fail;
        cJSON *of = cJSON_AddArrayToObject(o, "data_offsets");
        if (!of || !cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off)) ||
            !cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(off + e->nbytes))))
            goto fail;
        off += e->nbytes;
    }
    char *txt = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return txt;
fail:
    cJSON_Delete(root);
    return NULL;
}

hrmt_status hrmt_st_writer_save(hrmt_context *ctx, const hrmt_st_writer *w, const char *path) {
    if (!w || !path)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "safetensors writer: NULL argument");
    char *hdr = build_header(w);
    if (!hdr) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors writer: header");
    size_t hlen = strlen(hdr);
    size_t padded = (hlen + 7) / 8 * 8; /* keeps the data section 8-byte aligned */
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        hrmt_status s =
            hrmt_fail(ctx, HRMT_ERR_IO, "cannot create '%s': %s", path, strerror(errno));
        cJSON_free(hdr);
        return s;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    int ok = fwrite(len8, 1, 8, fp) == 8 && fwrite(hdr, 1, hlen, fp) == hlen;
    for (size_t i = hlen; ok && i < padded; i++) ok = fputc(' ', fp) != EOF;
    for (size_t i = 0; ok && i < w->n; i++)
        ok = w->e[i].nbytes == 0 || fwrite(w->e[i].data, 1, w->e[i].nbytes, fp) == w->e[i].nbytes;
    cJSON_free(hdr);
    if (fclose(fp) != 0) ok = 0;
    if (!ok) return hrmt_fail(ctx, HRMT_ERR_IO, "writing '%s' failed: %s", path, strerror(errno));
    return HRMT_OK;
}
