/* See open_regular.h. */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC */
#include "core/open_regular.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int hrmt_open_regular(const char *path, struct stat *st, const char **why, int *opened) {
    struct stat local;
    if (!st) st = &local;
    *opened = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        *why = strerror(errno);
        return -1;
    }
    *opened = 1;
    *why = NULL;
    if (fstat(fd, st) != 0) {
        *why = strerror(errno);
    } else if (!S_ISREG(st->st_mode)) {
        *why = "not a regular file";
    } else {
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) *why = strerror(errno);
    }
    if (*why) {
        close(fd);
        return -1;
    }
    return fd;
}
