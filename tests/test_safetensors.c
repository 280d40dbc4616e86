/* safetensors reader/writer: round trip, the golden files, and one malformed
 * file per error code (each file is written here, byte by byte). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/name_index.h"
#include "core/safetensors.h"
#include "support/test_common.h"

static char g_path[256];

/* Writes u64 header length + header text + `data_len` bytes of data to a temp file. */
static const char *write_raw(uint64_t hlen, const char *hdr, size_t data_len) {
    snprintf(g_path, sizeof g_path, "/tmp/hrmt_st_test_%d_XXXXXX", (int)getpid());
    int fd = mkstemp(g_path);
    cr_assert(fd >= 0);
    FILE *fp = fdopen(fd, "wb");
    cr_assert(fp);
    for (int i = 0; i < 8; i++) fputc((int)((hlen >> (8 * i)) & 0xff), fp);
    fwrite(hdr, 1, strlen(hdr), fp);
    for (size_t i = 0; i < data_len; i++) fputc((int)(i * 7u & 0xff), fp);
    fclose(fp);
    return g_path;
}

static const char *write_file(const char *hdr, size_t data_len) {
    return write_raw(strlen(hdr), hdr, data_len);
}

static hrmt_status open_status(const char *path, char *msg, size_t msglen) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_file *f = NULL;
    hrmt_status s = hrmt_st_open(ctx, path, &f);
    if (msg) snprintf(msg, msglen, "%s", hrmt_last_error(ctx));
    if (s == HRMT_OK)
        cr_assert_not_null(f);
    else
        cr_assert_null(f);
    hrmt_st_close(f);
    hrmt_context_destroy(ctx);
    unlink(path);
    return s;
}

#define EXPECT_STATUS(hdr, data_len, want)                                                \
    do {                                                                                  \
        char msg_[512];                                                                   \
        hrmt_status got_ = open_status(write_file((hdr), (data_len)), msg_, sizeof msg_); \
        cr_expect_eq(got_, (want), "header %s: got %s (%s), want %s", (hdr),              \
                     hrmt_status_str(got_), msg_, hrmt_status_str(want));                 \
        cr_expect(got_ == HRMT_OK || msg_[0] != '\0', "no message for %s", (hdr));        \
    } while (0)

Test(safetensors, round_trip_all_dtypes) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_writer *w = NULL;
    cr_assert_eq(hrmt_st_writer_create(&w), HRMT_OK);
    float f[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
    uint16_t b[3] = {0x3f80, 0xc000, 0x7f80};
    int32_t i32[4] = {-1, 0, 7, 2147483647};
    size_t sf[2] = {2, 3}, sb[1] = {3}, si[3] = {2, 1, 2};
    cr_assert_eq(hrmt_st_writer_add(w, "a.f", HRMT_F32, 2, sf, f), HRMT_OK);
    cr_assert_eq(hrmt_st_writer_add(w, "b", HRMT_BF16, 1, sb, b), HRMT_OK);
    cr_assert_eq(hrmt_st_writer_add(w, "c", HRMT_I32, 3, si, i32), HRMT_OK);
    cr_assert_eq(hrmt_st_writer_add(w, "scalar", HRMT_F32, 0, NULL, f), HRMT_OK);
    cr_assert_eq(hrmt_st_writer_add(w, "b", HRMT_F32, 1, sb, f), HRMT_ERR_EXISTS);
    cr_assert_eq(hrmt_st_writer_set_metadata(w, "format", "pt"), HRMT_OK);
    cr_assert_eq(hrmt_st_writer_set_metadata(w, "arch", "{\"x\": 1}"), HRMT_OK);
    snprintf(g_path, sizeof g_path, "/tmp/hrmt_st_rt_%d.safetensors", (int)getpid());
    cr_assert_eq(hrmt_st_writer_save(ctx, w, g_path), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_st_writer_destroy(w);

    hrmt_st_file *r = NULL;
    cr_assert_eq(hrmt_st_open(ctx, g_path, &r), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_assert_eq(hrmt_st_count(r), 4);
    const hrmt_st_tensor *t = hrmt_st_find(r, "a.f");
    cr_assert_not_null(t);
    cr_assert_eq(t->dtype, HRMT_F32);
    cr_assert_eq(t->ndim, 2);
    cr_assert_eq(t->shape[0], 2);
    cr_assert_eq(t->shape[1], 3);
    cr_assert_eq(memcmp(t->data, f, sizeof f), 0);
    t = hrmt_st_find(r, "b");
    cr_assert_eq(t->dtype, HRMT_BF16);
    cr_assert_eq(memcmp(t->data, b, sizeof b), 0);
    float bf[3];
    cr_assert_eq(hrmt_st_read_f32(ctx, r, t, bf), HRMT_OK);
    cr_assert_eq(bf[0], 1.0f);
    cr_assert_eq(bf[1], -2.0f);
    t = hrmt_st_find(r, "c");
    cr_assert_eq(t->dtype, HRMT_I32);
    cr_assert_eq(t->numel, 4);
    cr_assert_eq(memcmp(t->data, i32, sizeof i32), 0);
    t = hrmt_st_find(r, "scalar");
    cr_assert_eq(t->ndim, 0);
    cr_assert_eq(t->numel, 1);
    cr_assert_eq(t->nbytes, 4);
    cr_assert_null(hrmt_st_find(r, "missing"));
    cr_assert_str_eq(hrmt_st_metadata(r, "format"), "pt");
    cr_assert_str_eq(hrmt_st_metadata(r, "arch"), "{\"x\": 1}");
    cr_assert_null(hrmt_st_metadata(r, "nope"));
    hrmt_st_close(r);
    unlink(g_path);
    hrmt_context_destroy(ctx);
}

Test(safetensors, golden_files_open) {
    static const char *files[] = {"golden/hrm/tiny-rope/model.safetensors",
                                  "golden/hrm/tiny-rope/expected-bf16.safetensors",
                                  "golden/hrm/small-learned/model.safetensors",
                                  "golden/hrm/small-learned/expected-f32.safetensors",
                                  "golden/engram/engram-gate.safetensors"};
    hrmt_context *ctx = hrmt_test_context();
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        hrmt_st_file *f = NULL;
        cr_assert_eq(hrmt_st_open(ctx, hrmt_test_data(files[i]), &f), HRMT_OK, "%s: %s", files[i],
                     hrmt_last_error(ctx));
        cr_assert_gt(hrmt_st_count(f), 0);
        hrmt_st_close(f);
    }
    hrmt_context_destroy(ctx);
}

Test(safetensors, valid_variants) {
    /* Padding after the object, empty header object, zero-sized tensor, holes
     * inside the data section and trailing data bytes are all accepted. */
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}     ", 8,
                  HRMT_OK);
    EXPECT_STATUS("{}", 0, HRMT_OK);
    EXPECT_STATUS(
        "{\"e\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0,0]},"
        "\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}",
        8, HRMT_OK);
    EXPECT_STATUS("{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 16, HRMT_OK);
    EXPECT_STATUS("{\"__metadata__\":{\"k\":\"v\"}}", 0, HRMT_OK);
}

Test(safetensors, truncated) {
    /* Shorter than the length field. */
    snprintf(g_path, sizeof g_path, "/tmp/hrmt_st_short_%d", (int)getpid());
    FILE *fp = fopen(g_path, "wb");
    fwrite("\x10\0\0", 1, 3, fp);
    fclose(fp);
    cr_expect_eq(open_status(g_path, NULL, 0), HRMT_ERR_FILE_TRUNCATED);
    /* Empty file. */
    fp = fopen(g_path, "wb");
    fclose(fp);
    cr_expect_eq(open_status(g_path, NULL, 0), HRMT_ERR_FILE_TRUNCATED);
    /* A consistent two-tensor layout cut 5 bytes before its end. */
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[8],\"data_offsets\":[16,32]}}",
        27, HRMT_ERR_FILE_TRUNCATED);
    /* A real file cut in its data section. */
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_writer *w = NULL;
    cr_assert_eq(hrmt_st_writer_create(&w), HRMT_OK);
    float v[64] = {0};
    size_t sh[1] = {64};
    cr_assert_eq(hrmt_st_writer_add(w, "x", HRMT_F32, 1, sh, v), HRMT_OK);
    cr_assert_eq(hrmt_st_writer_add(w, "y", HRMT_F32, 1, sh, v), HRMT_OK);
    cr_assert_eq(hrmt_st_writer_save(ctx, w, g_path), HRMT_OK);
    hrmt_st_writer_destroy(w);
    hrmt_context_destroy(ctx);
    cr_assert_eq(truncate(g_path, 200), 0);
    cr_expect_eq(open_status(g_path, NULL, 0), HRMT_ERR_FILE_TRUNCATED);
}

Test(safetensors, header_size) {
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    /* Header length runs past the end of the file. */
    cr_expect_eq(open_status(write_raw(strlen(hdr) + 100, hdr, 4), NULL, 0), HRMT_ERR_HEADER_SIZE);
    /* Absurd length (1 TiB): refused before any allocation or parse. */
    cr_expect_eq(open_status(write_raw((uint64_t)1 << 40, hdr, 4), NULL, 0), HRMT_ERR_HEADER_SIZE);
    /* All bits set: must not wrap around in the 8 + N arithmetic. */
    cr_expect_eq(open_status(write_raw(UINT64_MAX, hdr, 4), NULL, 0), HRMT_ERR_HEADER_SIZE);
}

Test(safetensors, bad_json) {
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],", 4, HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("not json at all", 4, HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("[1, 2, 3]", 4, HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("{} trailing", 0, HRMT_ERR_BAD_JSON);
    /* Structure errors inside a well-formed JSON object. */
    EXPECT_STATUS("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
                  HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
                  HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
                  HRMT_ERR_BAD_JSON);
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        8, HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("{\"__metadata__\":{\"k\":1}}", 0, HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("{\"a\":7}", 0, HRMT_ERR_BAD_JSON);
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
        HRMT_ERR_BAD_JSON);
}

Test(safetensors, bad_dtype) {
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
                  HRMT_ERR_BAD_DTYPE);
    EXPECT_STATUS("{\"a\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                  HRMT_ERR_BAD_DTYPE);
    EXPECT_STATUS("{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8,
                  HRMT_ERR_BAD_DTYPE);
}

Test(safetensors, bad_offsets) {
    /* Span does not match the shape. */
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 12,
                  HRMT_ERR_BAD_OFFSETS);
    /* begin > end. */
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 12,
                  HRMT_ERR_BAD_OFFSETS);
    /* Out of range, far beyond the data section (not a cut-off layout). */
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1000,1004]}}",
        8, HRMT_ERR_BAD_OFFSETS);
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 8,
                  HRMT_ERR_BAD_OFFSETS);
    /* An offset past 2^53 cannot be represented exactly in JSON: rejected as such. */
    EXPECT_STATUS("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1e300,1e300]}}", 8,
                  HRMT_ERR_BAD_JSON);
}

Test(safetensors, overlap) {
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
        16, HRMT_ERR_OVERLAP);
    EXPECT_STATUS(
        "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
        20, HRMT_ERR_OVERLAP);
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
        8, HRMT_ERR_OVERLAP);
}

Test(safetensors, size_overflow) {
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
        "\"data_offsets\":[0,4]}}",
        4, HRMT_ERR_OVERFLOW);
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
        "\"data_offsets\":[0,4]}}",
        4, HRMT_ERR_BAD_JSON);
}

Test(safetensors, memory_image_and_io_error) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_st_file *f = NULL;
    cr_expect_eq(hrmt_st_open(ctx, "/nonexistent/dir/x.safetensors", &f), HRMT_ERR_IO);
    cr_expect_null(f);
    static const char img[] = "\x02\0\0\0\0\0\0\0{}";
    cr_expect_eq(hrmt_st_open_memory(ctx, img, sizeof img - 1, &f), HRMT_OK);
    hrmt_st_close(f);
    f = NULL;
    cr_expect_eq(hrmt_st_open_memory(ctx, img, 5, &f), HRMT_ERR_FILE_TRUNCATED);
    cr_expect_null(f);
    hrmt_context_destroy(ctx);
}

/* ---- hostile headers ---------------------------------------------------------- */

/* A header of `n` F32 [1] tensors "t<i>" laid out back to back, plus, when
 * dup, one more entry reusing the name "t<n/2>". Caller frees. */
static char *many_tensors_header(size_t n, int dup, size_t *data_len) {
    size_t cap = n * 96 + 256, len = 0; /* an entry takes < 90 bytes */
    char *h = malloc(cap);
    cr_assert_not_null(h);
    h[len++] = '{';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(
            h + len, cap - len,
            "%s\"t%zu\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}", i ? "," : "",
            i, 4 * i, 4 * i + 4);
    if (dup)
        len += (size_t)snprintf(
            h + len, cap - len,
            ",\"t%zu\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}", n / 2, 4 * n,
            4 * n + 4);
    cr_assert_lt(len + 2, cap);
    snprintf(h + len, cap - len, "}");
    *data_len = 4 * n + (dup ? 4 : 0);
    return h;
}

Test(safetensors, tensor_count_limit_names_the_limit) {
    size_t dl;
    char *h = many_tensors_header(100000, 0, &dl);
    char msg[512];
    hrmt_status s = open_status(write_file(h, dl), msg, sizeof msg);
    free(h);
    cr_expect_eq(s, HRMT_ERR_LIMIT, "got %s (%s)", hrmt_status_str(s), msg);
    cr_expect(strstr(msg, "tensor count = 100000 exceeds the limit of 16384") &&
                  strstr(msg, "HRMT_LIMIT_TENSORS"),
              "%s", msg);
}

/* With the limits raised, 100k tensors are accepted and a repeated name
 * among 200k is found, by the hash index in linear time (~0.3 s here; the
 * pairwise scan this replaced needed ~19 s for 100k, so ~76 s for 200k): the
 * timeout turns a quadratic regression into a failure. */
Test(safetensors, many_tensors_parse_in_linear_time, .timeout = 60) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_limits lim = hrmt_limits_default();
    lim.tensors = 1 << 20;
    cr_assert_eq(hrmt_context_set_limits(ctx, &lim), HRMT_OK);
    for (int dup = 0; dup < 2; dup++) {
        size_t dl;
        char *h = many_tensors_header(dup ? 200000 : 100000, dup, &dl);
        const char *p = write_file(h, dl);
        free(h);
        hrmt_st_file *f = NULL;
        hrmt_status s = hrmt_st_open_lazy(ctx, p, &f);
        unlink(p);
        if (!dup) {
            cr_assert_eq(s, HRMT_OK, "%s", hrmt_last_error(ctx));
            cr_expect_eq(hrmt_st_count(f), 100000);
            const hrmt_st_tensor *t = hrmt_st_find(f, "t12345");
            cr_assert_not_null(t);
            cr_expect_eq(t->begin, 4 * 12345);
            cr_expect_null(hrmt_st_find(f, "t100000"));
        } else {
            cr_expect_eq(s, HRMT_ERR_BAD_JSON);
            cr_expect(strstr(hrmt_last_error(ctx), "'t100000' appears twice") != NULL, "%s",
                      hrmt_last_error(ctx));
        }
        hrmt_st_close(f);
    }
    hrmt_context_destroy(ctx);
}

Test(safetensors, header_limit_names_the_limit) {
    hrmt_context *ctx = hrmt_test_context();
    hrmt_limits lim = hrmt_limits_default();
    lim.header_bytes = 64;
    cr_assert_eq(hrmt_context_set_limits(ctx, &lim), HRMT_OK);
    const char *hdr =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    const char *p = write_file(hdr, 8);
    hrmt_st_file *f = NULL;
    cr_expect_eq(hrmt_st_open(ctx, p, &f), HRMT_ERR_HEADER_SIZE);
    cr_expect(strstr(hrmt_last_error(ctx), "exceeds the limit of 64 (hrmt_limits.header_bytes)") &&
                  strstr(hrmt_last_error(ctx), "HRMT_LIMIT_HEADER_BYTES"),
              "%s", hrmt_last_error(ctx));
    /* The same file within the default limit. */
    cr_assert_eq(hrmt_context_set_limits(ctx, hrmt_context_limits(NULL)), HRMT_OK);
    cr_expect_eq(hrmt_st_open(ctx, p, &f), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_st_close(f);
    unlink(p);
    /* The default is the reference's 100 MB, which is also the ceiling. */
    lim.header_bytes = 100000001;
    cr_expect_eq(hrmt_context_set_limits(ctx, &lim), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "header_bytes") != NULL, "%s", hrmt_last_error(ctx));
    hrmt_context_destroy(ctx);
}

Test(safetensors, repeated_keys_are_refused) {
    /* Two "arch" metadata entries: which one counts would be up to the reader. */
    EXPECT_STATUS("{\"__metadata__\":{\"arch\":\"{}\",\"arch\":\"{\\\"x\\\":1}\"}}", 0,
                  HRMT_ERR_BAD_JSON);
    EXPECT_STATUS("{\"__metadata__\":{},\"__metadata__\":{}}", 0, HRMT_ERR_BAD_JSON);
    /* A field given twice inside one entry. */
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"dtype\":\"BF16\",\"data_offsets\":[0,4]}}", 4,
        HRMT_ERR_BAD_JSON);
    EXPECT_STATUS(
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],"
        "\"data_offsets\":[0,4]}}",
        4, HRMT_ERR_BAD_JSON);
}

Test(safetensors, untrusted_bytes_are_escaped_in_messages) {
    char msg[512];
    hrmt_status s =
        open_status(write_file("{\"a\\u001b[31m\\n\":{\"dtype\":\"F\\u0007\\u00ff\",\"shape\":[1],"
                               "\"data_offsets\":[0,4]}}",
                               4),
                    msg, sizeof msg);
    cr_expect_eq(s, HRMT_ERR_BAD_DTYPE);
    cr_expect(strstr(msg, "'a\\x1b[31m\\x0a'") && strstr(msg, "'F\\x07\\xc3\\xbf'"),
              "message '%s' not escaped", msg);
    for (const char *c = msg; *c; c++) cr_expect((unsigned char)*c >= 0x20 && *c != 0x7f);
}

/* A lazily opened file cut after the header was read: the next tensor read
 * is an error, not SIGBUS (the reader uses pread, not a mapping). */
Test(safetensors, file_cut_while_open_is_an_error) {
    hrmt_context *ctx = hrmt_test_context();
    const char *hdr =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1024],\"data_offsets\":[0,4096]},"
        "\"b\":{\"dtype\":\"BF16\",\"shape\":[4096],\"data_offsets\":[4096,12288]}}";
    const char *p = write_file(hdr, 12288);
    hrmt_st_file *f = NULL;
    cr_assert_eq(hrmt_st_open_lazy(ctx, p, &f), HRMT_OK, "%s", hrmt_last_error(ctx));
    const hrmt_st_tensor *a = hrmt_st_find(f, "a"), *b = hrmt_st_find(f, "b");
    cr_assert(a && b);
    cr_expect_null(a->data);
    float *v = malloc(4096 * sizeof(float));
    /* Before the cut: the bytes the test wrote (byte i of the data is i * 7). */
    cr_assert_eq(hrmt_st_read_f32(ctx, f, a, v), HRMT_OK, "%s", hrmt_last_error(ctx));
    unsigned char want[4];
    for (int i = 0; i < 4; i++) want[i] = (unsigned char)((4 * 5 + i) * 7u & 0xff);
    cr_expect_eq(memcmp(&v[5], want, 4), 0);
    cr_assert_eq(truncate(p, 8 + (off_t)strlen(hdr) + 5000), 0);
    cr_expect_eq(hrmt_st_read_f32(ctx, f, a, v), HRMT_OK, "a lies before the cut");
    cr_expect_eq(hrmt_st_read_f32(ctx, f, b, v), HRMT_ERR_FILE_TRUNCATED);
    cr_expect(strstr(hrmt_last_error(ctx), "tensor 'b'") &&
                  strstr(hrmt_last_error(ctx), "truncated or replaced"),
              "%s", hrmt_last_error(ctx));
    free(v);
    hrmt_st_close(f);
    unlink(p);
    hrmt_context_destroy(ctx);
}

/* ---- name index ------------------------------------------------------------- */

/* SipHash-2-4 of the paper's key 00..0f over messages 00..(n-1): the
 * reference implementation's vectors for n = 0, 1, 7, 8, 15, 63. */
Test(name_index, siphash_reference_vectors) {
    unsigned char msg[64];
    for (int i = 0; i < 64; i++) msg[i] = (unsigned char)i;
    const uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
    cr_expect_eq(hrmt_siphash(2, 4, k0, k1, msg, 0), 0x726fdb47dd0e0e31ull);
    cr_expect_eq(hrmt_siphash(2, 4, k0, k1, msg, 1), 0x74f839c593dc67fdull);
    cr_expect_eq(hrmt_siphash(2, 4, k0, k1, msg, 7), 0xab0200f58b01d137ull);
    cr_expect_eq(hrmt_siphash(2, 4, k0, k1, msg, 8), 0x93f5f5799a932462ull);
    cr_expect_eq(hrmt_siphash(2, 4, k0, k1, msg, 15), 0xa129ca6149be45e5ull);
    cr_expect_eq(hrmt_siphash(2, 4, k0, k1, msg, 63), 0x958a324ceb064572ull);
}

Test(name_index, add_find_duplicates_and_growth) {
    enum { N = 5000 };
    static char names[N][16];
    hrmt_name_index ix;
    cr_assert_eq(hrmt_name_index_init(&ix, 4), 0); /* grows well past its hint */
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "n%d", i);
        cr_assert_eq(hrmt_name_index_add(&ix, names[i], (size_t)i, NULL), 0);
    }
    for (int i = 0; i < N; i++) {
        const hrmt_name_slot *s = hrmt_name_index_find(&ix, names[i]);
        cr_assert_not_null(s, "%s lost", names[i]);
        cr_expect_eq(s->value, (size_t)i);
    }
    const hrmt_name_slot *d = NULL;
    char again[16] = "n4321";
    cr_expect_eq(hrmt_name_index_add(&ix, again, 99, &d), 1);
    cr_assert_not_null(d);
    cr_expect_eq(d->value, 4321);
    cr_expect_null(hrmt_name_index_find(&ix, "n5000"));
    cr_expect_null(hrmt_name_index_find(&ix, ""));
    cr_expect_eq(ix.count, N);
    hrmt_name_index_free(&ix);
}
