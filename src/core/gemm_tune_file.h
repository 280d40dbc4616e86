/* The CUDA GEMM tuner's picks kept in a file between processes
 * (HRMT_CUDA_GEMM_TUNE_CACHE=PATH; src/cuda/model_gemm_tune.cu uses it). Plain
 * C with no CUDA types, so that the reader and writer are tested on any
 * host: an algorithm is cuBLASLt's opaque cublasLtMatmulAlgo_t as bytes.
 * The file only names picks; the tuner checks each one against the pinned
 * algorithm's bits before it serves.
 *
 * Format (text, one record a line):
 *   hrmt-gemm-tune 1
 *   key <what the picks depend on: device, libraries, shapes, options>
 *   bucket <slot> <bucket> <own shape + 1> <algorithm: 128 hex digits>
 *   glu <bucket> <fused gate_up shape + 1>
 *   exact <rows> <slot> <own shape + 1> <algorithm>
 *   exact_glu <rows> <shape + 1>
 */
#ifndef HRMT_CORE_GEMM_TUNE_FILE_H
#define HRMT_CORE_GEMM_TUNE_FILE_H

#include <stddef.h>

#include "hrmt.h"

#define HRMT_TUNE_ALGO_BYTES 64 /* sizeof(cublasLtMatmulAlgo_t) */
#define HRMT_TUNE_SLOTS 4       /* block GEMMs: qkv, o, gate_up, down */
#define HRMT_TUNE_BUCKETS 8     /* row buckets: rows <= 128 << b */
/* Exact-rows entries a file holds (a step's B T each); past it the oldest
 * goes; a file naming more is not read. */
#define HRMT_TUNE_EXACT 64
#define HRMT_TUNE_KEY 512 /* longest key, its NUL included */

typedef struct hrmt_tune_pick {
    unsigned char algo[HRMT_TUNE_ALGO_BYTES];
    signed char own; /* 1 + the own GEMM shape; 0: the cuBLASLt algorithm */
} hrmt_tune_pick;

typedef struct hrmt_tune_exact {
    size_t rows;
    hrmt_tune_pick slot[HRMT_TUNE_SLOTS];
    signed char glu_shape; /* 1 + the fused gate_up's shape; 0: untuned */
} hrmt_tune_exact;

typedef struct hrmt_tune_file {
    char *path;
    char key[HRMT_TUNE_KEY];
    int nslots;    /* slots a record may name and a write writes */
    int glu_lines; /* the fused gate_up is tuned: its lines are expected */
    /* The buckets' picks: complete (every slot's and, where glu_lines, every
     * bucket's fused shape) or have_buckets 0. */
    int have_buckets;
    hrmt_tune_pick bucket[HRMT_TUNE_SLOTS][HRMT_TUNE_BUCKETS];
    signed char glu_shape[HRMT_TUNE_BUCKETS];
    unsigned nexact; /* complete exact entries, oldest first */
    hrmt_tune_exact exact[HRMT_TUNE_EXACT];
} hrmt_tune_file;

/* A cache for `path` and `key` (one line; a space or a newline in it is
 * INVALID_ARG), nslots 1..HRMT_TUNE_SLOTS, holding the file's picks when
 * the file exists, is a tuning cache and has this key. A path that is not
 * a regular file (a directory, a FIFO: never blocks), cannot be read, or is
 * a file of another kind is HRMT_ERR_IO, the file left as it is (a write
 * would replace it); a missing file, a tuning cache of another key or
 * version, or one with any malformed record holds nothing (the tuner then
 * tunes and rewrites it). Messages name HRMT_CUDA_GEMM_TUNE_CACHE. */
hrmt_status hrmt_tune_file_open(hrmt_context *ctx, const char *path, const char *key, int nslots,
                                int glu_lines, hrmt_tune_file **out);
/* The entry for `rows`, or NULL (f may be NULL). */
const hrmt_tune_exact *hrmt_tune_file_exact(const hrmt_tune_file *f, size_t rows);
/* Adds or replaces rows' entry; when full the oldest goes. */
void hrmt_tune_file_put_exact(hrmt_tune_file *f, const hrmt_tune_exact *e);
/* Writes the whole cache to a temporary file beside the path and renames it
 * over the path (a reader sees the old file or the new, never half of one);
 * HRMT_ERR_IO naming the path when that fails. */
hrmt_status hrmt_tune_file_write(hrmt_context *ctx, const hrmt_tune_file *f);
void hrmt_tune_file_free(hrmt_tune_file *f);

#endif
