/* Files named on the command line: opening inputs safely, and telling when
 * an output would overwrite an input. */
#ifndef HRMT_CLI_USER_FILES_H
#define HRMT_CLI_USER_FILES_H

#include <stddef.h>
#include <stdio.h>

/* Opens an input file for reading, refusing (without blocking on a FIFO)
 * anything but a regular file; NULL with "PATH: reason" in err. */
FILE *cli_fopen_regular(const char *path, char *err, size_t errlen);

/* 1 when a and b name the same file: the same device and inode when both
 * exist, else the same path text; 0 otherwise or when either is NULL. */
int cli_same_file(const char *a, const char *b);

#endif
