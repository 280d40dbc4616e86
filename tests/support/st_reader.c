#include "support/st_reader.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_open(const char *path, st_file *f) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "st_open: cannot open %s\n", path);
        return -1;
    }
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    if (len < 8) {
        fclose(fp);
        fprintf(stderr, "st_open: %s is too short\n", path);
        return -1;
    }
    f->len = (size_t)len;
    f->buf = malloc(f->len);
    if (!f->buf || fread(f->buf, 1, f->len, fp) != f->len) {
        fclose(fp);
        st_close(f);
        fprintf(stderr, "st_open: cannot read %s\n", path);
        return -1;
    }
    fclose(fp);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | f->buf[i];
    if (hlen > f->len - 8) {
        st_close(f);
        fprintf(stderr, "st_open: bad header length in %s\n", path);
        return -1;
    }
    f->header = cJSON_ParseWithLength((const char *)f->buf + 8, (size_t)hlen);
    if (!f->header) {
        st_close(f);
        fprintf(stderr, "st_open: bad JSON header in %s\n", path);
        return -1;
    }
    f->data_off = 8 + (size_t)hlen;
    return 0;
}

void st_close(st_file *f) {
    cJSON_Delete(f->header);
    free(f->buf);
    memset(f, 0, sizeof *f);
}

int st_get(const st_file *f, const char *name, st_tensor *t) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(f->header, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
        cJSON_GetArraySize(off) != 2 || cJSON_GetArraySize(sh) > HRMT_MAX_DIMS) {
        fprintf(stderr, "st_get: %s missing or malformed\n", name);
        return -1;
    }
    memset(t, 0, sizeof *t);
    size_t es;
    if (strcmp(dt->valuestring, "F32") == 0)
        t->dtype = HRMT_F32, es = 4;
    else if (strcmp(dt->valuestring, "BF16") == 0)
        t->dtype = HRMT_BF16, es = 2;
    else if (strcmp(dt->valuestring, "I32") == 0)
        t->dtype = HRMT_I32, es = 4;
    else {
        fprintf(stderr, "st_get: %s has dtype %s\n", name, dt->valuestring);
        return -1;
    }
    size_t n = 1;
    t->ndim = cJSON_GetArraySize(sh);
    for (int i = 0; i < t->ndim; i++) {
        t->shape[i] = (size_t)cJSON_GetArrayItem(sh, i)->valuedouble;
        n *= t->shape[i];
    }
    const size_t b = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
    const size_t e2 = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
    if (e2 < b || e2 - b != n * es || f->data_off + e2 > f->len) {
        fprintf(stderr, "st_get: %s has bad offsets\n", name);
        return -1;
    }
    t->data = f->buf + f->data_off + b;
    t->nbytes = e2 - b;
    return 0;
}

const char *st_meta(const st_file *f, const char *key) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(f->header, "__metadata__");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
