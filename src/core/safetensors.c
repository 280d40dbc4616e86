/* safetensors reader: pread, cJSON header, full validation (see safetensors.h). */
#define _POSIX_C_SOURCE 200809L
#include "core/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/context.h"
#include "core/limits.h"
#include "core/name_index.h"
#include "core/open_regular.h"
#include "core/text_escape.h"

struct hrmt_st_file {
    int fd;              /* lazy files: open until close; -1 otherwise */
    unsigned char *own;  /* owned bytes: the whole file (hrmt_st_open); NULL otherwise */
    uint64_t data_start; /* file offset of the data section: 8 + header length */
    size_t count;
    hrmt_st_tensor *tensors;
    char *names; /* all names, NUL-separated */
    hrmt_name_index by_name;
    size_t nmeta;
    char **meta_keys, **meta_vals;
    hrmt_name_index meta_by_key;
    char where[HRMT_ESCAPED_MAX + 16]; /* "safetensors 'path'" for messages */
};

/* One escaped copy of an untrusted string for a message. */
typedef struct esc {
    char s[HRMT_ESCAPED_MAX];
} esc;
static esc escape(const char *s) {
    esc e = {""};
    hrmt_text_escape_str(e.s, sizeof e.s, s);
    return e;
}

size_t hrmt_st_count(const hrmt_st_file *f) { return f ? f->count : 0; }

const hrmt_st_tensor *hrmt_st_at(const hrmt_st_file *f, size_t i) {
    return f && i < f->count ? &f->tensors[i] : NULL;
}

const hrmt_st_tensor *hrmt_st_find(const hrmt_st_file *f, const char *name) {
    if (!f || !name) return NULL;
    const hrmt_name_slot *s = hrmt_name_index_find(&f->by_name, name);
    return s ? &f->tensors[s->value] : NULL;
}

const char *hrmt_st_metadata(const hrmt_st_file *f, const char *key) {
    if (!f || !key) return NULL;
    const hrmt_name_slot *s = hrmt_name_index_find(&f->meta_by_key, key);
    return s ? f->meta_vals[s->value] : NULL;
}

void hrmt_st_close(hrmt_st_file *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    free(f->own);
    for (size_t i = 0; i < f->nmeta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_vals[i]);
    }
    free(f->meta_keys);
    free(f->meta_vals);
    hrmt_name_index_free(&f->meta_by_key);
    hrmt_name_index_free(&f->by_name);
    free(f->tensors);
    free(f->names);
    free(f);
}

/* ---- reading bytes ------------------------------------------------------ */

/* pread exactly `len` bytes at `off`. A short count means the file is shorter
 * than when it was opened (truncated or replaced): FILE_TRUNCATED. */
static hrmt_status read_exact(hrmt_context *ctx, const hrmt_st_file *f, uint64_t off, void *dst,
                              size_t len, const char *what) {
    unsigned char *p = dst;
    while (len > 0) {
        size_t chunk = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
        ssize_t got = pread(f->fd, p, chunk, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            return hrmt_fail(ctx, HRMT_ERR_IO, "%s: reading %s at byte %" PRIu64 ": %s", f->where,
                             what, off, strerror(errno));
        if (got == 0)
            return hrmt_fail(ctx, HRMT_ERR_FILE_TRUNCATED,
                             "%s: the file ended at byte %" PRIu64
                             " while reading %s: it was "
                             "truncated or replaced after it was opened; load it again once it "
                             "is complete",
                             f->where, off, what);
        p += got;
        off += (uint64_t)got;
        len -= (size_t)got;
    }
    return HRMT_OK;
}

static void to_f32(hrmt_dtype dt, const unsigned char *p, size_t n, float *dst) {
    for (size_t i = 0; i < n; i++) {
        if (dt == HRMT_F32) {
            memcpy(&dst[i], p + 4 * i, 4);
        } else if (dt == HRMT_BF16) {
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

hrmt_status hrmt_st_read_f32(hrmt_context *ctx, const hrmt_st_file *f, const hrmt_st_tensor *t,
                             float *dst) {
    if (!t || (!dst && t->numel) || (!t->data && !f))
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "safetensors: NULL argument");
    if (t->data) {
        to_f32(t->dtype, t->data, t->numel, dst);
        return HRMT_OK;
    }
    /* Lazy file: chunks through a small buffer, so memory is the caller's F32
     * output and nothing else. */
    unsigned char buf[16384];
    size_t es = hrmt_dtype_size(t->dtype), per = sizeof buf / es;
    char what[HRMT_ESCAPED_MAX + 16];
    snprintf(what, sizeof what, "tensor '%s'", escape(t->name).s);
    for (size_t i = 0; i < t->numel; i += per) {
        size_t k = t->numel - i < per ? t->numel - i : per;
        hrmt_status s = read_exact(ctx, f, f->data_start + t->begin + i * es, buf, k * es, what);
        if (s != HRMT_OK) return s;
        to_f32(t->dtype, buf, k, dst + i);
    }
    return HRMT_OK;
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
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: __metadata__ is not an object", f->where);
    size_t n = (size_t)cJSON_GetArraySize(meta);
    if (n > (size_t)hrmt_limits_of(ctx)->tensors) {
        char what[HRMT_ESCAPED_MAX + 64];
        snprintf(what, sizeof what, "%s: __metadata__ entries", f->where);
        return hrmt_limit_fail(ctx, HRMT_ERR_LIMIT, HRMT_LIMIT_TENSORS, what, (int64_t)n);
    }
    f->meta_keys = calloc(n ? n : 1, sizeof *f->meta_keys);
    f->meta_vals = calloc(n ? n : 1, sizeof *f->meta_vals);
    if (!f->meta_keys || !f->meta_vals || hrmt_name_index_init(&f->meta_by_key, n) != 0)
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: no memory for %zu metadata entries",
                         f->where, n);
    const cJSON *it;
    cJSON_ArrayForEach(it, meta) {
        if (!cJSON_IsString(it))
            return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                             "%s: __metadata__ value of '%s' is not a string", f->where,
                             escape(it->string).s);
        f->meta_keys[f->nmeta] = strdup(it->string);
        f->meta_vals[f->nmeta] = strdup(it->valuestring);
        f->nmeta++;
        if (!f->meta_keys[f->nmeta - 1] || !f->meta_vals[f->nmeta - 1])
            return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: no memory for metadata", f->where);
        /* cJSON keeps both copies of a repeated key; which one counts would
         * be up to the reader, so a repeat is an error. */
        int r =
            hrmt_name_index_add(&f->meta_by_key, f->meta_keys[f->nmeta - 1], f->nmeta - 1, NULL);
        if (r < 0) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: metadata index", f->where);
        if (r > 0)
            return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: __metadata__ key '%s' appears twice",
                             f->where, escape(it->string).s);
    }
    return HRMT_OK;
}

/* The entry's dtype, shape and data_offsets, each exactly once (a repeated key
 * would make cJSON's first-match lookup decide silently). */
static hrmt_status entry_fields(hrmt_context *ctx, const hrmt_st_file *f, const cJSON *e,
                                const cJSON *out[3]) {
    static const char *const keys[3] = {"dtype", "shape", "data_offsets"};
    out[0] = out[1] = out[2] = NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, e) {
        for (int k = 0; k < 3; k++) {
            if (!it->string || strcmp(it->string, keys[k]) != 0) continue;
            if (out[k])
                return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: tensor '%s' has '%s' twice", f->where,
                                 escape(e->string).s, keys[k]);
            out[k] = it;
        }
    }
    return HRMT_OK;
}

/* Fills one tensor from its header entry (range checks against the data
 * section happen later, after sorting). */
static hrmt_status parse_entry(hrmt_context *ctx, const hrmt_st_file *f, const cJSON *e,
                               hrmt_st_tensor *t) {
    const esc nm = escape(e->string);
    if (!cJSON_IsObject(e))
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: entry '%s' is not an object", f->where, nm.s);
    const cJSON *fld[3];
    hrmt_status s = entry_fields(ctx, f, e, fld);
    if (s != HRMT_OK) return s;
    const cJSON *dt = fld[0], *sh = fld[1], *off = fld[2];
    if (!dt || !sh || !off || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off))
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                         "%s: entry '%s' needs a string dtype, an array shape and an array "
                         "data_offsets",
                         f->where, nm.s);
    if (!parse_dtype(dt->valuestring, &t->dtype))
        return hrmt_fail(ctx, HRMT_ERR_BAD_DTYPE,
                         "%s: tensor '%s' has dtype '%s' (accepted: F32, BF16, I32)", f->where,
                         nm.s, escape(dt->valuestring).s);
    int nd = cJSON_GetArraySize(sh);
    if (nd > HRMT_ST_MAX_DIMS)
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: tensor '%s' has %d dims (at most %d)",
                         f->where, nm.s, nd, HRMT_ST_MAX_DIMS);
    t->ndim = nd;
    size_t numel = 1;
    int i = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh) {
        if (!json_size(d, &t->shape[i]))
            return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                             "%s: tensor '%s' shape[%d] is not a non-negative integer", f->where,
                             nm.s, i);
        if (!hrmt_mul_ok(numel, t->shape[i], &numel))
            return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: tensor '%s' shape overflows", f->where,
                             nm.s);
        i++;
    }
    t->numel = numel;
    if (!hrmt_mul_ok(numel, hrmt_dtype_size(t->dtype), &t->nbytes))
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: tensor '%s' byte size overflows", f->where,
                         nm.s);
    if (cJSON_GetArraySize(off) != 2 || !off->child || !off->child->next ||
        !json_size(off->child, &t->begin) || !json_size(off->child->next, &t->end))
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                         "%s: tensor '%s' data_offsets is not [begin, end] of integers", f->where,
                         nm.s);
    if (t->begin > t->end || t->end - t->begin != t->nbytes)
        return hrmt_fail(ctx, HRMT_ERR_BAD_OFFSETS,
                         "%s: tensor '%s' data_offsets [%zu, %zu] do not span its %zu bytes",
                         f->where, nm.s, t->begin, t->end, t->nbytes);
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
    if (!order) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: sort buffer", f->where);
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
                          "%s: tensors '%s' [%zu, %zu) and '%s' [%zu, %zu) overlap", f->where,
                          escape(last->name).s, last->begin, last->end, escape(t->name).s, t->begin,
                          t->end);
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
                      gapless ? "%s: file truncated: tensor '%s' ends at data offset %zu but the "
                                "data section has %zu bytes"
                              : "%s: tensor '%s' data_offsets end %zu lies outside the %zu-byte "
                                "data section",
                      f->where, escape(bad->name).s, bad->end, data_len);
    }
done:
    free(order);
    return s;
}

/* Header length from the first 8 bytes, checked against the limit and the
 * file's size before anything is allocated for it. */
static hrmt_status header_length(hrmt_context *ctx, const hrmt_st_file *f, const unsigned char b[8],
                                 size_t file_len, uint64_t *out) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | b[i];
    int64_t lim = hrmt_limits_of(ctx)->header_bytes;
    if (n > (uint64_t)lim) {
        char what[HRMT_ESCAPED_MAX + 64];
        snprintf(what, sizeof what, "%s: header length", f->where);
        /* Lengths beyond int64 are absurd either way; report them at the ceiling's side. */
        return hrmt_limit_fail(ctx, HRMT_ERR_HEADER_SIZE, HRMT_LIMIT_HEADER_BYTES, what,
                               n > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)n);
    }
    if (n > (uint64_t)(file_len - 8))
        return hrmt_fail(ctx, HRMT_ERR_HEADER_SIZE,
                         "%s: header length %" PRIu64 " runs beyond the %zu-byte file", f->where, n,
                         file_len);
    if (n < 2)
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                         "%s: header of %" PRIu64 " bytes cannot be a JSON object", f->where, n);
    *out = n;
    return HRMT_OK;
}

/* Tensor table and name index for `items` root entries, after the limit. */
static hrmt_status alloc_tables(hrmt_context *ctx, hrmt_st_file *f, const cJSON *root,
                                size_t items) {
    size_t tensors = items;
    if (cJSON_GetObjectItemCaseSensitive(root, "__metadata__")) tensors--;
    if (tensors > (size_t)hrmt_limits_of(ctx)->tensors) {
        char what[HRMT_ESCAPED_MAX + 64];
        snprintf(what, sizeof what, "%s: tensor count", f->where);
        return hrmt_limit_fail(ctx, HRMT_ERR_LIMIT, HRMT_LIMIT_TENSORS, what, (int64_t)tensors);
    }
    size_t names_len = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) names_len += strlen(e->string) + 1;
    f->tensors = calloc(items ? items : 1, sizeof *f->tensors);
    f->names = malloc(names_len ? names_len : 1);
    if (!f->tensors || !f->names || hrmt_name_index_init(&f->by_name, items) != 0)
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: no memory for %zu tensor entries",
                         f->where, items);
    return HRMT_OK;
}

/* Parses and validates the `n`-byte header at `hdr`; the data section has
 * `data_len` bytes at `data` (NULL for a lazy file). */
static hrmt_status parse_header(hrmt_context *ctx, const char *hdr, uint64_t n,
                                const unsigned char *data, size_t data_len, hrmt_st_file *f) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)n, &end, 0);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        size_t pos = (at && at >= hdr && at <= hdr + n) ? (size_t)(at - hdr) : 0;
        return hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: header is not valid JSON (near byte %zu)",
                         f->where, pos + 8);
    }
    hrmt_status s = HRMT_OK;
    /* Writers may pad the header with spaces; anything else after the object is an error. */
    for (const char *p = end; p && p < hdr + n; p++) {
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
            s = hrmt_fail(ctx, HRMT_ERR_BAD_JSON,
                          "%s: bytes after the header's JSON object (at byte %zu)", f->where,
                          (size_t)(p - hdr) + 8);
            goto out;
        }
    }
    if (!cJSON_IsObject(root)) {
        s = hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: header is not a JSON object", f->where);
        goto out;
    }
    if ((s = alloc_tables(ctx, f, root, (size_t)cJSON_GetArraySize(root))) != HRMT_OK) goto out;
    char *np = f->names;
    int seen_meta = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, root) {
        if (strcmp(e->string, "__metadata__") == 0) {
            if (seen_meta++) {
                s = hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: __metadata__ appears twice", f->where);
                goto out;
            }
            if ((s = parse_metadata(ctx, e, f)) != HRMT_OK) goto out;
            continue;
        }
        hrmt_st_tensor *t = &f->tensors[f->count];
        size_t l = strlen(e->string) + 1;
        memcpy(np, e->string, l);
        t->name = np;
        np += l;
        int r = hrmt_name_index_add(&f->by_name, t->name, f->count, NULL);
        if (r != 0) {
            s = r < 0 ? hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: name index", f->where)
                      : hrmt_fail(ctx, HRMT_ERR_BAD_JSON, "%s: tensor '%s' appears twice", f->where,
                                  escape(t->name).s);
            goto out;
        }
        f->count++;
        if ((s = parse_entry(ctx, f, e, t)) != HRMT_OK) goto out;
        t->data = data ? data + (t->begin <= data_len ? t->begin : 0) : NULL;
    }
    s = check_layout(ctx, f, data_len);
out:
    cJSON_Delete(root);
    return s;
}

static hrmt_st_file *new_file(const char *label) {
    hrmt_st_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->fd = -1;
    snprintf(f->where, sizeof f->where, "safetensors '%s'", escape(label).s);
    return f;
}

static hrmt_status finish(hrmt_st_file *f, hrmt_status s, hrmt_st_file **out) {
    if (s != HRMT_OK) {
        hrmt_st_close(f);
        return s;
    }
    *out = f;
    return HRMT_OK;
}

hrmt_status hrmt_st_open_memory(hrmt_context *ctx, const void *buf, size_t len,
                                hrmt_st_file **out) {
    if (!out || (!buf && len))
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "safetensors: NULL argument");
    hrmt_st_file *f = new_file("(memory image)");
    if (!f) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: handle");
    if (len < 8)
        return finish(
            f,
            hrmt_fail(ctx, HRMT_ERR_FILE_TRUNCATED,
                      "%s: %zu bytes, shorter than the 8-byte header length", f->where, len),
            out);
    const unsigned char *b = buf;
    uint64_t n = 0;
    hrmt_status s = header_length(ctx, f, b, len, &n);
    if (s == HRMT_OK)
        s = parse_header(ctx, (const char *)b + 8, n, b + 8 + n, len - 8 - (size_t)n, f);
    return finish(f, s, out);
}

/* Opens `path`; reads the whole file (lazy = 0) or only its header. */
static hrmt_status open_file(hrmt_context *ctx, const char *path, int lazy, hrmt_st_file **out) {
    if (!path || !out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "safetensors: NULL argument");
    hrmt_st_file *f = new_file(path);
    if (!f) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "safetensors: handle");
    struct stat st;
    const char *why;
    int opened;
    f->fd = hrmt_open_regular(path, &st, &why, &opened);
    if (f->fd < 0)
        return finish(
            f,
            hrmt_fail(ctx, HRMT_ERR_IO, opened ? "%s: %s" : "%s: cannot open: %s", f->where, why),
            out);
    if (st.st_size < 8)
        return finish(f,
                      hrmt_fail(ctx, HRMT_ERR_FILE_TRUNCATED,
                                "%s: the file has %lld bytes, shorter than the 8-byte header "
                                "length",
                                f->where, (long long)st.st_size),
                      out);
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX)
        return finish(f, hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "%s: file too large", f->where), out);
    size_t len = (size_t)st.st_size;
    unsigned char lenbuf[8];
    uint64_t n = 0;
    hrmt_status s = read_exact(ctx, f, 0, lenbuf, 8, "the header length");
    if (s == HRMT_OK) s = header_length(ctx, f, lenbuf, len, &n);
    if (s != HRMT_OK) return finish(f, s, out);
    f->data_start = 8 + n;
    /* Both sizes are bounded by the file's size (and the header by its limit). */
    size_t want = lazy ? (size_t)n : len;
    unsigned char *bytes = malloc(want ? want : 1);
    if (!bytes)
        return finish(
            f,
            hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: no memory for %zu bytes", f->where, want),
            out);
    s = read_exact(ctx, f, lazy ? 8 : 0, bytes, want, lazy ? "the header" : "the file");
    if (s == HRMT_OK && lazy) s = parse_header(ctx, (const char *)bytes, n, NULL, len - 8 - n, f);
    if (s == HRMT_OK && !lazy)
        s = parse_header(ctx, (const char *)bytes + 8, n, bytes + 8 + n, len - 8 - n, f);
    if (lazy) {
        free(bytes); /* names and metadata were copied */
    } else {
        f->own = bytes;
        close(f->fd); /* everything is in memory */
        f->fd = -1;
    }
    return finish(f, s, out);
}

hrmt_status hrmt_st_open(hrmt_context *ctx, const char *path, hrmt_st_file **out) {
    return open_file(ctx, path, 0, out);
}

hrmt_status hrmt_st_open_lazy(hrmt_context *ctx, const char *path, hrmt_st_file **out) {
    return open_file(ctx, path, 1, out);
}
