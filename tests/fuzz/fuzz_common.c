/* See fuzz_common.h. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_common.h"

#include "core/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *fuzz_input_path(const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("hrmt-fuzz-input", MFD_CLOEXEC);
        if (fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) {
        perror("ftruncate");
        abort();
    }
    size_t done = 0;
    while (done < size) {
        ssize_t w = pwrite(fd, data + done, size - done, (off_t)done);
        if (w <= 0) {
            perror("pwrite");
            abort();
        }
        done += (size_t)w;
    }
    return path;
}

hrmt_context *fuzz_context(void) {
    static hrmt_context *ctx = NULL;
    if (!ctx) {
        /* Calibration would time cache sweeps in every fresh process. */
        setenv("HRMT_CALIBRATE", "0", 1);
        hrmt_context_options o = hrmt_context_default_options();
        /* The scalar table: the only kernels built with the sanitizers and
         * coverage under HRMT_FUZZ (tests/fuzz/CMakeLists.txt), and the same
         * on every host. */
        o.isa = "scalar";
        o.num_threads = 1;
        o.event_log_enabled = 0;
        char err[256] = "";
        if (hrmt_context_create(&o, &ctx, err, sizeof err) != HRMT_OK) {
            fprintf(stderr, "fuzz: context creation failed: %s\n", err);
            abort();
        }
    }
    return ctx;
}

void fuzz_fail(const char *harness, const char *what) {
    fprintf(stderr, "fuzz_%s: invariant violated: %s\n", harness, what);
    abort();
}

void fuzz_check_message(const char *harness, const char *msg, size_t cap) {
    if (!msg || memchr(msg, '\0', cap) == NULL) fuzz_fail(harness, "error message not terminated");
    if (msg[0] == '\0') fuzz_fail(harness, "failure without a message");
    /* Untrusted bytes are escaped before they reach a terminal: a message is
     * printable ASCII only (core/text_escape.h). */
    for (const char *p = msg; *p; p++)
        if (*p < 0x20 || *p > 0x7e) fuzz_fail(harness, "control or non-ASCII byte in a message");
}

void fuzz_check_error(const char *harness, const hrmt_context *ctx) {
    fuzz_check_message(harness, hrmt_last_error(ctx), HRMT_ERRMSG_LEN);
}

int fuzz_next_line(const uint8_t *data, size_t size, size_t *pos, const uint8_t **line,
                   size_t *len) {
    if (*pos >= size) return 0;
    const uint8_t *start = data + *pos;
    const uint8_t *nl = memchr(start, '\n', size - *pos);
    *line = start;
    *len = nl ? (size_t)(nl - start) : size - *pos;
    *pos += *len + (nl ? 1 : 0);
    return 1;
}

int fuzz_is_space(uint8_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
