/* Files named on the command line (see user_files.h). */
#define _POSIX_C_SOURCE 200809L /* fdopen, O_CLOEXEC */
#include "cli/user_files.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/open_regular.h"
#include "core/text_escape.h"

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
        char e[256];
        snprintf(err, errlen, "%s: %s", hrmt_text_escape_str(e, sizeof e, path), why);
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

static void output_fail(const cli_output *o, char *err, size_t errlen, const char *why) {
    char e[256];
    snprintf(err, errlen, "%s %s: %s", o->flag, hrmt_text_escape_str(e, sizeof e, o->path), why);
}

/* Removes the file when it is regular, ours (created or truncated by this
 * run) and the path still names it. */
static void remove_partial(const cli_output *o) {
    struct stat st;
    if (o->regular && (o->created || o->begun) && stat(o->path, &st) == 0 && st.st_dev == o->dev &&
        st.st_ino == o->ino)
        unlink(o->path);
}

int cli_output_open(cli_output *o, const char *flag, const char *path, const cli_named_file *inputs,
                    size_t n_inputs, char *err, size_t errlen) {
    memset(o, 0, sizeof *o);
    o->flag = flag;
    o->path = path;
    o->fd = -1;
    /* Exclusive first, to know whether this run created the file. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NONBLOCK, 0666);
    if (fd >= 0) {
        o->created = 1;
    } else if (errno == EEXIST) {
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    }
    if (fd < 0) {
        output_fail(o, err, errlen,
                    errno == ENXIO ? "a FIFO that no process is reading" : strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    int flags = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) != 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        why = strerror(errno);
    o->fd = fd;
    if (!why) {
        o->dev = st.st_dev;
        o->ino = st.st_ino;
        o->regular = S_ISREG(st.st_mode);
    }
    for (size_t i = 0; !why && i < n_inputs; i++) {
        struct stat si;
        if (!inputs[i].path || stat(inputs[i].path, &si) != 0) continue;
        if (si.st_dev == st.st_dev && si.st_ino == st.st_ino) {
            char e[256], msg[400];
            snprintf(msg, sizeof msg, "is the same file as %s %s; refusing to overwrite it",
                     inputs[i].flag, hrmt_text_escape_str(e, sizeof e, inputs[i].path));
            output_fail(o, err, errlen, msg);
            cli_output_end(o, NULL, 0, NULL, 0);
            return -1;
        }
    }
    if (why) {
        output_fail(o, err, errlen, why);
        cli_output_end(o, NULL, 0, NULL, 0);
        return -1;
    }
    return 0;
}

FILE *cli_output_begin(cli_output *o, char *err, size_t errlen) {
    if (o->fd < 0) {
        snprintf(err, errlen, "not open");
        return NULL;
    }
    if (o->regular && ftruncate(o->fd, 0) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return NULL;
    }
    o->begun = 1;
    FILE *fp = fdopen(o->fd, "wb");
    if (!fp) {
        snprintf(err, errlen, "%s", strerror(errno));
        return NULL;
    }
    o->fd = -1; /* fp owns it now */
    return fp;
}

int cli_output_end(cli_output *o, FILE *fp, int ok, char *err, size_t errlen) {
    int rc = 0;
    if (fp) {
        errno = 0;
        int bad = fflush(fp) != 0 || ferror(fp);
        int e = errno;
        if (fclose(fp) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        if (bad && ok) {
            rc = -1;
            if (err) snprintf(err, errlen, "%s", e ? strerror(e) : "write error");
        }
    }
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    if (!ok || rc) remove_partial(o);
    return rc;
}
