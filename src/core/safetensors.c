/* safetensors reader: mmap, cJSON header, full validation (see safetensors.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/safetensors.h"

#include "core/open_regular.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/context.h"

struct hrmt_st_file {
    void *map; /* owned mapping (NULL for in-memory images) */
    size_t map_len;
    size_t count;
    hrmt_st_tensor *tensors;
    char *names; /* all names, NUL-separated */
    size_t nmeta;
    char **meta_keys, **meta_vals;
};

size_t hrmt_st_count(const hrmt_st_file *f) { return f ? f->count : 0; }

const hrmt_st_tensor *hrmt_st_at(const hrmt_st_file *f, size_t i) {
    return f && i < f->count ? &f->tensors[i] : NULL;
}

const hrmt_st_tensor *hrmt_st_find(const hrmt_st_file *f, const char *name) {
    if (!f || !name) return NULL;
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const char *hrmt_st_metadata(const hrmt_st_file *f, const char *key) {
    if (!f || !key) return NULL;
    for (size_t i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_vals[i];
    return NULL;
}

void hrmt_st_close(hrmt_st_file *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->map_len);
    for (size_t i = 0; i < f->nmeta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_vals[i]);
    }
    free(f->meta_keys);
    free(f->meta_vals);
    free(f->tensors);
    free(f->names);
    free(f);
}

void hrmt_st_read_f32(const hrmt_st_tensor *t, float *dst) {
    const unsigned char *p = t->data;
    for (size_t i = 0; i < t->numel; i++) {
        if (t->dtype == HRMT_F32) {
            memcpy(&dst[i], p + 4 * i, 4);
        } else if (t->dtype == HRMT_BF16) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            uint32_t u = (uint32_t)h << 16;
            memcpy(&dst[i], &u, 4);
        } else {
            int32_t v;
            memcpy(&v, p + 4 * i, 4);
            dst[i] = (float)v;
        }
    }
}

/* ---- header validation -------------------------------------------------- */

/* JSON numbers are doubles: accept only exact non-negative integers below 2^53. */
static int json_size(const cJSON *it, size_t *out) {
    if (!cJSON_IsNumber(it)) return 0;
    double d = it->valuedouble;
    if (!(d >= 0.0) || d > 9007199254740992.0 || d != (double)(uint64_t)d) return 0;
    uint64_t u = (uint64_t)d;
    if (u > (uint64_t)SIZE_MAX) return 0;
    *out = (size_t)u;
    return 1;
}

static int parse_dtype(const char *s, hrmt_dtype *out) {
    static const struct {
        const char *name;
        hrmt_dtype dt;
    } known[] = {{"F32", HRMT_F32}, {"BF16", HRMT_BF16}, {"I32", HRMT_I32}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strcmp(s, known[i].name) == 0) {
            *out = known[i].dt;
            return 1;
        }
    }
    return 0;
}

static hrmt_status parse_metadata(hrmt_context *ctx, const cJSON *meta, hrmt_st_file *f) {
    if (!cJSON_IsObject(meta))
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "safetensors: __metadata__ is not an object");
    size_t n = (size_t)cJSON_GetArraySize(meta);
    f->meta_keys = calloc(n ? n : 1, sizeof *f->meta_keys);
    f->meta_vals = calloc(n ? n : 1, sizeof *f->meta_vals);
    if (!f->meta_keys || !f->meta_vals)
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: metadata");
    const cJSON *it;
    cJSON_ArrayForEach(it, meta) {
        if (!cJSON_IsString(it))
            return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                             "safetensors: __metadata__ value of '%s' is not a string", it->string);
        f->meta_keys[f->nmeta] = strdup(it->string);
        f->meta_vals[f->nmeta] = strdup(it->valuestring);
        if (!f->meta_keys[f->nmeta] || !f->meta_vals[f->nmeta]) {
            f->nmeta++;
            return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: metadata");
        }
        f->nmeta++;
    }
    return HRMT_OK;
}

/* Fills one tensor from its header entry; `data_len` is the data section size
 * (range checks against it happen later, after sorting). */
static hrmt_status parse_entry(hrmt_context *ctx, const cJSON *e, hrmt_st_tensor *t) {
    const char *nm = e->string;
    if (!cJSON_IsObject(e))
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "safetensors: entry '%s' is not an object", nm);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off))
        return hrmt_fail(
            ctx, HRMT_ERR_BAD_JSON,
            "safetensors: entry '%s' needs string dtype, array shape, array data_offsets", nm);
    if (!parse_dtype(dt->valuestring, &t->dtype))
        return hrmt_fail(ctx, HRMT_ERR_BAD_DTYPE,
                         "safetensors: tensor '%s' has dtype '%s' (accepted: F32, BF16, I32)", nm,
                         dt->valuestring);
    int nd = cJSON_GetArraySize(sh);
    if (nd > HRMT_ST_MAX_DIMS)
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "safetensors: tensor '%s' has %d dims (max %d)",
                         nm, nd, HRMT_ST_MAX_DIMS);
    t->ndim = nd;
    size_t numel = 1;
    for (int i = 0; i < nd; i++) {
        if (!json_size(cJSON_GetArrayItem(sh, i), &t->shape[i]))
            return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                             "safetensors: tensor '%s' shape[%d] is not a non-negative integer", nm,
                             i);
        if (!hrmt_mul_ok(numel, t->shape[i], &numel))
            return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "safetensors: tensor '%s' shape overflows",
                             nm);
    }
    t->numel = numel;
    if (!hrmt_mul_ok(numel, hrmt_dtype_size(t->dtype), &t->nbytes))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "safetensors: tensor '%s' byte size overflows",
                         nm);
    if (cJSON_GetArraySize(off) != 2 || !json_size(cJSON_GetArrayItem(off, 0), &t->begin) ||
        !json_size(cJSON_GetArrayItem(off, 1), &t->end))
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                         "safetensors: tensor '%s' data_offsets is not [begin, end]", nm);
    if (t->begin > t->end || t->end - t->begin != t->nbytes)
        return hrmt_fail(
            ctx, HRMT_ERR_BAD_OFFSETS,
            "safetensors: tensor '%s' data_offsets [%zu, %zu] do not span its %zu bytes", nm,
            t->begin, t->end, t->nbytes);
    return HRMT_OK;
}

static int cmp_begin(const void *a, const void *b) {
    const hrmt_st_tensor *x = *(const hrmt_st_tensor *const *)a;
    const hrmt_st_tensor *y = *(const hrmt_st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* Overlaps, then ranges against the data section. */
static hrmt_status check_layout(hrmt_context *ctx, hrmt_st_file *f, size_t data_len) {
    if (f->count == 0) return HRMT_OK;
    typedef const hrmt_st_tensor *tensor_ref;
    tensor_ref *order = malloc(f->count * sizeof(tensor_ref));
    if (!order) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: sort buffer");
    for (size_t i = 0; i < f->count; i++) order[i] = &f->tensors[i];
    qsort(order, f->count, sizeof(tensor_ref), cmp_begin);
    hrmt_status s = HRMT_OK;
    int gapless = order[0]->begin == 0;
    size_t max_end = order[0]->end;
    const hrmt_st_tensor *last = order[0];
    for (size_t i = 1; i < f->count; i++) {
        const hrmt_st_tensor *t = order[i];
        /* Zero-byte tensors occupy nothing and cannot overlap. */
        if (t->begin < max_end && t->nbytes > 0) {
            s = hrmt_fail(ctx, HRMT_ERR_OVERLAP,
                          "safetensors: tensors '%s' [%zu, %zu) and '%s' [%zu, %zu) overlap",
                          last->name, last->begin, last->end, t->name, t->begin, t->end);
            goto done;
        }
        if (t->begin != max_end) gapless = 0;
        if (t->end > max_end) {
            max_end = t->end;
            last = t;
        }
    }
    if (max_end > data_len) {
        const hrmt_st_tensor *bad = NULL;
        for (size_t i = 0; i < f->count && !bad; i++)
            if (order[i]->end > data_len) bad = order[i];
        /* A consistent gapless layout that merely runs past the end is a cut-off
         * file; anything else points outside the data it describes. */
        s = hrmt_fail(ctx, gapless ? HRMT_ERR_FILE_TRUNCATED : HRMT_ERR_BAD_OFFSETS,
                      gapless ? "safetensors: file truncated: tensor '%s' ends at data offset %zu "
                                "but the data section has %zu bytes"
                              : "safetensors: tensor '%s' data_offsets end %zu lies outside the "
                                "%zu-byte data section",
                      bad->name, bad->end, data_len);
    }
done:
    free(order);
    return s;
}

/* Parses and validates the header of an image of `len` bytes. */
static hrmt_status parse_image(hrmt_context *ctx, const unsigned char *buf, size_t len,
                               hrmt_st_file *f) {
    if (len < 8)
        return hrmt_fail(ctx, HRMT_ERR_FILE_TRUNCATED,
                         "safetensors: file has %zu bytes, shorter than the 8-byte header length",
                         len);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | buf[i];
    if (n > HRMT_ST_MAX_HEADER)
        return hrmt_fail(ctx, HRMT_ERR_HEADER_SIZE,
                         "safetensors: header length %llu is absurd (limit %llu)",
                         (unsigned long long)n, (unsigned long long)HRMT_ST_MAX_HEADER);
    if (n > (uint64_t)(len - 8))
        return hrmt_fail(ctx, HRMT_ERR_HEADER_SIZE,
                         "safetensors: header length %llu runs beyond the %zu-byte file",
                         (unsigned long long)n, len);
    if (n < 2)
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                         "safetensors: header of %llu bytes cannot be a JSON object",
                         (unsigned long long)n);
    const char *hdr = (const char *)buf + 8;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)n, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t pos = (at && at >= hdr && at <= hdr + n) ? (size_t)(at - hdr) : 0;
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                         "safetensors: header is not valid JSON (near byte %zu)", pos);
    }
    hrmt_status s = HRMT_OK;
    /* Writers may pad the header with spaces; anything else after the object is an error. */
    for (const char *p = end; p && p < hdr + n; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
            s = hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                          "safetensors: trailing bytes after the header object");
            goto out;
        }
    }
    if (!cJSON_IsObject(root)) {
        s = hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "safetensors: header is not a JSON object");
        goto out;
    }
    size_t items = (size_t)cJSON_GetArraySize(root);
    f->tensors = calloc(items ? items : 1, sizeof *f->tensors);
    size_t names_len = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) names_len += strlen(e->string) + 1;
    f->names = malloc(names_len ? names_len : 1);
    if (!f->tensors || !f->names) {
        s = hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: header tables");
        goto out;
    }
    const unsigned char *data = buf + 8 + n;
    size_t data_len = len - 8 - (size_t)n;
    char *np = f->names;
    int seen_meta = 0;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (seen_meta++) {
                s = hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "safetensors: __metadata__ appears twice");
                goto out;
            }
            if ((s = parse_metadata(ctx, e, f)) != HRMT_OK) goto out;
            continue;
        }
        for (size_t j = 0; j < f->count; j++) {
            if (strcmp(f->tensors[j].name, e->string) == 0) {
                s = hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "safetensors: tensor '%s' appears twice",
                              e->string);
                goto out;
            }
        }
        hrmt_st_tensor *t = &f->tensors[f->count];
        size_t l = strlen(e->string) + 1;
        memcpy(np, e->string, l);
        t->name = np;
        np += l;
        f->count++;
        if ((s = parse_entry(ctx, e, t)) != HRMT_OK) goto out;
        t->data = data + (t->begin <= data_len ? t->begin : 0);
    }
    s = check_layout(ctx, f, data_len);
out:
    cJSON_Delete(root);
    return s;
}

hrmt_status hrmt_st_open_memory(hrmt_context *ctx, const void *buf, size_t len,
                                hrmt_st_file **out) {
    if (!out || (!buf && len))
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "safetensors: NULL argument");
    hrmt_st_file *f = calloc(1, sizeof *f);
    if (!f) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: handle");
    hrmt_status s = parse_image(ctx, buf, len, f);
    if (s != HRMT_OK) {
        hrmt_st_close(f);
        return s;
    }
    *out = f;
    return HRMT_OK;
}

hrmt_status hrmt_st_open(hrmt_context *ctx, const char *path, hrmt_st_file **out) {
    if (!path || !out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "safetensors: NULL argument");
    struct stat st;
    const char *why;
    int opened;
    int fd = hrmt_open_regular(path, &st, &why, &opened);
    if (fd < 0) {
        if (opened) return hrmt_fail(ctx, HRMT_ERR_IO, "'%s': %s", path, why);
        return hrmt_fail(ctx, HRMT_ERR_IO, "cannot open '%s': %s", path, why);
    }
    size_t len = (size_t)st.st_size;
    if (len < 8) {
        close(fd);
        return hrmt_fail(ctx, HRMT_ERR_FILE_TRUNCATED,
                         "safetensors: '%s' has %zu bytes, shorter than the 8-byte header length",
                         path, len);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return hrmt_fail(ctx, HRMT_ERR_IO, "cannot map '%s': %s", path, strerror(errno));
    hrmt_st_file *f = calloc(1, sizeof *f);
    if (!f) {
        munmap(map, len);
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: handle");
    }
    f->map = map;
    f->map_len = len;
    hrmt_status s = parse_image(ctx, map, len, f);
    if (s != HRMT_OK) {
        hrmt_st_close(f);
        return s;
    }
    *out = f;
    return HRMT_OK;
}
