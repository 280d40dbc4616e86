/* safetensors I/O: a validating, mmap-based reader and a small writer.
 *
 * File layout: u64 little-endian header length N, N bytes of JSON header
 * ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 *   optional "__metadata__": {string: string}}), then the data section;
 * offsets are relative to the start of the data section.
 *
 * The reader checks everything before handing out a pointer, and each kind of
 * malformation has its own status code:
 *   FILE_TRUNCATED   file shorter than 8 bytes, or the tensors form one gapless
 *                    layout that runs past the end of the file (a cut-off file)
 *   HEADER_SIZE      header length beyond the file or above HRMT_ST_MAX_HEADER
 *   BAD_JSON         header not a JSON object, an entry lacking dtype/shape/
 *                    data_offsets, non-integer numbers, duplicate names
 *   BAD_DTYPE        dtype other than F32, BF16, I32
 *   OVERFLOW         shape product * element size overflows
 *   BAD_OFFSETS      begin > end, span != shape bytes, or a range outside the
 *                    data section that is not explained by truncation
 *   OVERLAP          two tensors share bytes
 * Tensor data may be unaligned (the data section starts at 8 + N): read it with
 * memcpy or convert it (the model copies every tensor at load time). */
#ifndef HRMT_CORE_SAFETENSORS_H
#define HRMT_CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

#define HRMT_ST_MAX_DIMS 8
/* The reference implementation refuses headers above 100 MB; so do we. */
#define HRMT_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

typedef struct hrmt_st_tensor {
    const char *name;
    hrmt_dtype dtype;
    int ndim; /* 0 for a scalar */
    size_t shape[HRMT_ST_MAX_DIMS];
    size_t numel;
    const void *data; /* inside the mapping; possibly unaligned */
    size_t nbytes;
    size_t begin, end; /* offsets in the data section */
} hrmt_st_tensor;

typedef struct hrmt_st_file hrmt_st_file;

/* Maps and validates `path`. IO when it cannot be opened or mapped. */
hrmt_status hrmt_st_open(hrmt_context *ctx, const char *path, hrmt_st_file **out);
/* Validates an in-memory image (not copied; must outlive the handle). */
hrmt_status hrmt_st_open_memory(hrmt_context *ctx, const void *buf, size_t len, hrmt_st_file **out);
void hrmt_st_close(hrmt_st_file *f);

size_t hrmt_st_count(const hrmt_st_file *f);
/* i-th tensor in header order. */
const hrmt_st_tensor *hrmt_st_at(const hrmt_st_file *f, size_t i);
/* NULL when absent. */
const hrmt_st_tensor *hrmt_st_find(const hrmt_st_file *f, const char *name);
/* __metadata__ value for `key`, NULL when absent. */
const char *hrmt_st_metadata(const hrmt_st_file *f, const char *key);

/* Copies tensor `t` into `dst` as F32 (from F32, BF16 or I32 exact-to-float). */
void hrmt_st_read_f32(const hrmt_st_tensor *t, float *dst);

/* ---- writer ------------------------------------------------------------- */

typedef struct hrmt_st_writer hrmt_st_writer;

hrmt_status hrmt_st_writer_create(hrmt_st_writer **out);
void hrmt_st_writer_destroy(hrmt_st_writer *w);
/* Adds a tensor; `data` (numel * dtype size bytes) is copied. ndim 0..8.
 * EXISTS when the name is taken. */
hrmt_status hrmt_st_writer_add(hrmt_st_writer *w, const char *name, hrmt_dtype dtype, int ndim,
                               const size_t *shape, const void *data);
hrmt_status hrmt_st_writer_set_metadata(hrmt_st_writer *w, const char *key, const char *value);
/* Writes the file (header padded with spaces to a multiple of 8 bytes). */
hrmt_status hrmt_st_writer_save(hrmt_context *ctx, const hrmt_st_writer *w, const char *path);

#endif
