/* Files named on the command line: opening inputs safely, and opening
 * outputs before the work starts, never onto an input. */
#ifndef HRMT_CLI_USER_FILES_H
#define HRMT_CLI_USER_FILES_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Opens an input file for reading, refusing (without blocking on a FIFO)
 * anything but a regular file; NULL with "PATH: reason" in err (the path
 * escaped by hrmt_text_escape). */
FILE *cli_fopen_regular(const char *path, char *err, size_t errlen);

/* 1 when a and b name the same file: the same device and inode when both
 * exist, else the same path text; 0 otherwise or when either is NULL. */
int cli_same_file(const char *a, const char *b);

/* An input of the command, for the "same file" check of an output. */
typedef struct cli_named_file {
    const char *flag; /* "--model" */
    const char *path; /* NULL: not given */
} cli_named_file;

/* An output file, opened when the command starts so that a bad path fails
 * before minutes of work, and written at the end. */
typedef struct cli_output {
    const char *flag, *path;
    int fd;      /* -1: not open */
    int created; /* the file did not exist before this run */
    int begun;   /* cli_output_begin truncated it */
    dev_t dev;
    ino_t ino;
    int regular;
} cli_output;

/* Opens `path` for writing, creating it (mode 0666 & ~umask) but not yet
 * truncating it, and without blocking on a FIFO that has no reader. Refuses,
 * by device and inode of the opened file, to be any of inputs[0..n_inputs)
 * (entries with a NULL path are skipped). Returns 0, or -1 with
 * "FLAG PATH: reason" in err; on failure nothing is left behind. */
int cli_output_open(cli_output *o, const char *flag, const char *path, const cli_named_file *inputs,
                    size_t n_inputs, char *err, size_t errlen);

/* Truncates a regular file and hands the descriptor over to a FILE (which
 * cli_output_end closes). NULL with the reason in err (the caller names the
 * flag and path). */
FILE *cli_output_begin(cli_output *o, char *err, size_t errlen);

/* Finishes the output: flushes and closes fp (may be NULL when begin was not
 * called). ok == 0 (the command failed) or a failed close removes a regular
 * file this run created or truncated, so no partial output looks complete.
 * Returns 0, or -1 with the reason in err (may be NULL) when closing failed. */
int cli_output_end(cli_output *o, FILE *fp, int ok, char *err, size_t errlen);

#endif
