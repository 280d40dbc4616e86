/* Files named on the command line (see user_files.h). */
#define _POSIX_C_SOURCE 200809L /* fdopen, O_CLOEXEC */
#include "cli/user_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *cli_fopen_regular(const char *path, char *err, size_t errlen) {
    /* O_NONBLOCK: a FIFO must not hang the open; fstat of the opened fd (no
     * race with a swapped path) refuses it, then reads block again. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0) {
        why = strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
        why = "not a regular file";
    } else {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) why = strerror(errno);
    }
    FILE *fp = why ? NULL : fdopen(fd, "r");
    if (!fp) {
        if (!why) why = strerror(errno);
        snprintf(err, errlen, "%s: %s", path, why);
        close(fd);
    }
    return fp;
}

int cli_same_file(const char *a, const char *b) {
    if (!a || !b) return 0;
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return strcmp(a, b) == 0;
}
