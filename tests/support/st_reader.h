/* Minimal test-only safetensors reader (the library has its own loader):
 * reads a whole file, parses the JSON header, finds F32/BF16/I32 tensors. */
#ifndef HRMT_TEST_ST_READER_H
#define HRMT_TEST_ST_READER_H

#include <stddef.h>

#include "hrmt.h"

typedef struct st_file {
    unsigned char *buf;
    size_t len;
    void *header; /* cJSON object */
    size_t data_off;
} st_file;

typedef struct st_tensor {
    hrmt_dtype dtype;
    int ndim;
    size_t shape[HRMT_MAX_DIMS];
    const void *data; /* inside the file buffer; may be unaligned for F32 */
    size_t nbytes;
} st_tensor;

/* 0 on success; on failure prints why to stderr. */
int st_open(const char *path, st_file *f);
void st_close(st_file *f);
/* 0 when `name` exists and is well formed. */
int st_get(const st_file *f, const char *name, st_tensor *t);
/* String value in __metadata__, or NULL. */
const char *st_meta(const st_file *f, const char *key);

#endif
