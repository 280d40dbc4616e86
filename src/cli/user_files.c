/* Files named on the command line (see user_files.h). */
#define _POSIX_C_SOURCE 200809L /* fdopen, O_CLOEXEC */
#include "cli/user_files.h"

#include "core/open_regular.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *cli_fopen_regular(const char *path, char *err, size_t errlen) {
    const char *why;
    int opened;
    int fd = hrmt_open_regular(path, NULL, &why, &opened);
    FILE *fp = fd < 0 ? NULL : fdopen(fd, "r");
    if (!fp) {
        if (fd >= 0) {
            why = strerror(errno);
            close(fd);
        }
        snprintf(err, errlen, "%s: %s", path, why);
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
