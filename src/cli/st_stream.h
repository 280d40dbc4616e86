/* A safetensors file written as the data is produced: every tensor's name,
 * dtype and shape are known up front, so the header goes first and each
 * tensor's bytes follow in order, without holding them. The bytes are those
 * of hrmt_st_writer_save for the same tensors (no metadata). */
#ifndef HRMT_CLI_ST_STREAM_H
#define HRMT_CLI_ST_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/safetensors.h"
#include "hrmt.h"

typedef struct cli_st_desc {
    char name[64]; /* printable ASCII without '"' or '\\' */
    hrmt_dtype dtype;
    int ndim; /* 0..HRMT_ST_MAX_DIMS */
    size_t shape[HRMT_ST_MAX_DIMS];
} cli_st_desc;

/* Describes tensor i (0-based, in file order). */
typedef void (*cli_st_describe_fn)(const void *user, size_t i, cli_st_desc *d);

typedef struct cli_st_stream {
    FILE *fp;
    cli_st_describe_fn describe;
    const void *user;
    size_t n, next;        /* tensors in all, and the next one to write */
    uint64_t header_bytes; /* padded JSON header length */
} cli_st_stream;

/* Writes the 8-byte length and the header of n tensors to fp. Refuses (before
 * writing) a header above HRMT_ST_MAX_HEADER, which the reader would refuse,
 * and a data section whose offsets would not print as exact integers.
 * Returns 0, or -1 with a message in err. */
int cli_st_stream_start(cli_st_stream *s, FILE *fp, size_t n, cli_st_describe_fn describe,
                        const void *user, char *err, size_t errlen);

/* Writes the next tensor's bytes; nbytes must be its size. 0 or -1 with a
 * message in err. */
int cli_st_stream_put(cli_st_stream *s, const void *data, size_t nbytes, char *err, size_t errlen);

/* Header length (8-byte length field excluded, padding included) that
 * cli_st_stream_start would write, or some length above HRMT_ST_MAX_HEADER
 * when it is larger; 0 when a name or size is invalid. */
uint64_t cli_st_header_bytes(size_t n, cli_st_describe_fn describe, const void *user);

#endif
