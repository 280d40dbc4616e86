/* safetensors I/O: a validating reader (pread, no mapping) and a small writer.
 *
 * File layout: u64 little-endian header length N, N bytes of JSON header
 * ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
 *   optional "__metadata__": {string: string}}), then the data section;
 * offsets are relative to the start of the data section.
 *
 * The reader checks everything before handing out a tensor, and each kind of
 * malformation has its own status code:
 *   FILE_TRUNCATED   file shorter than 8 bytes, or the tensors form one gapless
 *                    layout that runs past the end of the file (a cut-off file),
 *                    or the file shrank while it was being read
 *   HEADER_SIZE      header length beyond the file or above the context's
 *                    hrmt_limits.header_bytes
 *   LIMIT            more tensors (or __metadata__ entries) than hrmt_limits.tensors
 *   BAD_JSON         header not a JSON object, an entry lacking dtype/shape/
 *                    data_offsets or repeating one, non-integer numbers,
 *                    duplicate names or metadata keys
 *   BAD_DTYPE        dtype other than F32, BF16, I32
 *   OVERFLOW         shape product * element size overflows
 *   BAD_OFFSETS      begin > end, span != shape bytes, or a range outside the
 *                    data section that is not explained by truncation
 *   OVERLAP          two tensors share bytes
 * Messages name the file, the tensor and the limit, with untrusted bytes
 * escaped (core/text_escape.h). Allocations before validation are bounded by
 * the file's size and the header limit; duplicate names are found through a
 * hash index (core/name_index.h), so a header of many names parses in linear
 * time.
 *
 * Why pread and not mmap: a mapped file that another process truncates turns
 * the next access into SIGBUS, which a library cannot report as an error. A
 * read() that comes up short is an ordinary error (FILE_TRUNCATED). */
#ifndef HRMT_CORE_SAFETENSORS_H
#define HRMT_CORE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

#define HRMT_ST_MAX_DIMS 8
/* The reference implementation refuses headers above 100 MB; this is also the
 * ceiling of hrmt_limits.header_bytes (a writer staying below it writes a
 * file every reader with the default limits accepts). */
#define HRMT_ST_MAX_HEADER ((uint64_t)100 * 1000 * 1000)

typedef struct hrmt_st_tensor {
    const char *name;
    hrmt_dtype dtype;
    int ndim; /* 0 for a scalar */
    size_t shape[HRMT_ST_MAX_DIMS];
    size_t numel;
    const void *data; /* in the file's bytes (possibly unaligned); NULL for a lazy file */
    size_t nbytes;
    size_t begin, end; /* offsets in the data section */
} hrmt_st_tensor;

typedef struct hrmt_st_file hrmt_st_file;

/* Reads the whole of `path` into memory and validates it; tensor data is
 * readable through t->data. IO when it cannot be opened or read (a FIFO,
 * directory or device is refused without blocking: core/open_regular.h). */
hrmt_status hrmt_st_open(hrmt_context *ctx, const char *path, hrmt_st_file **out);
/* Reads and validates the header only; the file stays open until
 * hrmt_st_close and tensor bytes are read on demand by hrmt_st_read_f32
 * (t->data is NULL). What the model loader uses: memory is the header, not
 * the file. */
hrmt_status hrmt_st_open_lazy(hrmt_context *ctx, const char *path, hrmt_st_file **out);
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

/* Copies tensor `t` of `f` into `dst` as F32 (from F32, BF16 or I32
 * exact-to-float). A lazy file is read with pread: FILE_TRUNCATED when the
 * file has shrunk since it was opened, IO on a read error. ctx may be NULL;
 * f may be NULL for a tensor of hrmt_st_open or hrmt_st_open_memory (t->data
 * set), which cannot fail. */
hrmt_status hrmt_st_read_f32(hrmt_context *ctx, const hrmt_st_file *f, const hrmt_st_tensor *t,
                             float *dst);

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
