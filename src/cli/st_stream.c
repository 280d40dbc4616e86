/* Streaming safetensors writer (see st_stream.h). */
#include "cli/st_stream.h"

#include <errno.h>
#include <string.h>

/* cJSON, which hrmt_st_writer_save prints with, writes integers below 1e15
 * as plain digits; offsets stay below that so the two agree byte for byte. */
#define MAX_OFFSET 1000000000000000ull

static size_t desc_bytes(const cli_st_desc *d, int *ok) {
    size_t b = hrmt_dtype_size(d->dtype);
    *ok = b != 0 && d->ndim >= 0 && d->ndim <= HRMT_ST_MAX_DIMS;
    for (int k = 0; *ok && k < d->ndim; k++) {
        if (d->shape[k] && b > MAX_OFFSET / d->shape[k]) *ok = 0;
        b *= d->shape[k];
    }
    return *ok ? b : 0;
}

static int name_ok(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e || *s == '"' || *s == '\\')
            return 0;
    return 1;
}

/* Emits the JSON header text: counts its length, and writes it when fp is
 * not NULL. 0 on an invalid entry or a write error; counting stops past
 * `cap` bytes (so a refused header costs no more than the limit). */
static uint64_t emit_header(FILE *fp, size_t n, cli_st_describe_fn describe, const void *user,
                            uint64_t cap) {
    uint64_t len = 0, off = 0;
    char num[48];
    int ok = 1;
#define PUT(str)                                            \
    do {                                                    \
        size_t l_ = strlen(str);                            \
        len += l_;                                          \
        if (fp && fwrite((str), 1, l_, fp) != l_) return 0; \
    } while (0)
    PUT("{");
    for (size_t i = 0; i < n && len <= cap; i++) {
        cli_st_desc d;
        memset(&d, 0, sizeof d);
        describe(user, i, &d);
        size_t bytes = desc_bytes(&d, &ok);
        if (!ok || !name_ok(d.name) || off + bytes > MAX_OFFSET) return 0;
        PUT(i ? ",\"" : "\"");
        PUT(d.name);
        PUT("\":{\"dtype\":\"");
        PUT(hrmt_dtype_name(d.dtype));
        PUT("\",\"shape\":[");
        for (int k = 0; k < d.ndim; k++) {
            snprintf(num, sizeof num, "%s%zu", k ? "," : "", d.shape[k]);
            PUT(num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,", (unsigned long long)off);
        PUT(num);
        off += bytes;
        snprintf(num, sizeof num, "%llu]}", (unsigned long long)off);
        PUT(num);
    }
    PUT("}");
#undef PUT
    return len;
}

uint64_t cli_st_header_bytes(size_t n, cli_st_describe_fn describe, const void *user) {
    uint64_t len = emit_header(NULL, n, describe, user, HRMT_ST_MAX_HEADER);
    return (len + 7) / 8 * 8; /* spaces keep the data section 8-byte aligned */
}

int cli_st_stream_start(cli_st_stream *s, FILE *fp, size_t n, cli_st_describe_fn describe,
                        const void *user, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    uint64_t raw = emit_header(NULL, n, describe, user, HRMT_ST_MAX_HEADER);
    if (raw == 0) {
        snprintf(err, errlen, "invalid tensor name or size (data above %llu bytes)",
                 (unsigned long long)MAX_OFFSET);
        return -1;
    }
    uint64_t padded = (raw + 7) / 8 * 8;
    if (padded > HRMT_ST_MAX_HEADER) {
        snprintf(err, errlen,
                 "the header of %zu tensors would take %llu bytes, above the safetensors limit "
                 "of %llu that readers enforce",
                 n, (unsigned long long)padded, (unsigned long long)HRMT_ST_MAX_HEADER);
        return -1;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(padded >> (8 * i));
    int ok = fwrite(len8, 1, 8, fp) == 8 && emit_header(fp, n, describe, user, raw) == raw;
    for (uint64_t i = raw; ok && i < padded; i++) ok = fputc(' ', fp) != EOF;
    if (!ok) {
        snprintf(err, errlen, "writing the header failed: %s", strerror(errno));
        return -1;
    }
    s->fp = fp;
    s->describe = describe;
    s->user = user;
    s->n = n;
    s->header_bytes = padded;
    return 0;
}

int cli_st_stream_put(cli_st_stream *s, const void *data, size_t nbytes, char *err, size_t errlen) {
    if (!s->fp || s->next >= s->n) {
        snprintf(err, errlen, "internal error: tensor %zu of %zu written", s->next + 1, s->n);
        return -1;
    }
    cli_st_desc d;
    memset(&d, 0, sizeof d);
    s->describe(s->user, s->next, &d);
    int ok = 1;
    size_t want = desc_bytes(&d, &ok);
    if (nbytes != want) {
        snprintf(err, errlen, "internal error: %s has %zu bytes, the header says %zu", d.name,
                 nbytes, want);
        return -1;
    }
    if (nbytes && fwrite(data, 1, nbytes, s->fp) != nbytes) {
        snprintf(err, errlen, "writing %s failed: %s", d.name, strerror(errno));
        return -1;
    }
    s->next++;
    return 0;
}
