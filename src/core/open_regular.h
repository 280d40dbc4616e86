/* Opening a user-named input file safely, for every reader of the library
 * and the CLI. */
#ifndef HRMT_CORE_OPEN_REGULAR_H
#define HRMT_CORE_OPEN_REGULAR_H

#include <sys/stat.h>

/* Opens `path` read-only without blocking on a FIFO and refuses anything but
 * a regular file (fstat of the opened fd, so no race with a swapped path);
 * reads on the returned fd block again. On failure returns -1 with *why a
 * static reason ("not a regular file" or strerror) and *opened 1 when the
 * open itself succeeded. `st` (may be NULL) receives the fstat. */
int hrmt_open_regular(const char *path, struct stat *st, const char **why, int *opened);

#endif
