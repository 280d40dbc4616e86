/* See run_cmd.h. */
#define _POSIX_C_SOURCE 200809L /* popen, mkdtemp */
#include "support/run_cmd.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void hrmt_test_mkdtemp(char *dir, size_t len, const char *tag) {
    int k = snprintf(dir, len, "/tmp/hrmt_%s_%d_XXXXXX", tag, (int)getpid());
    cr_assert(k > 0 && (size_t)k < len, "directory name too long");
    cr_assert_not_null(mkdtemp(dir));
}

void hrmt_test_rmtree(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

char *hrmt_test_read_all(FILE *f) {
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (n + 1 == cap) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
    }
    buf[n] = '\0';
    return buf;
}

int hrmt_test_popen(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    *out = hrmt_test_read_all(p);
    return pclose(p);
}

int hrmt_test_sh(const char *cmd, char **out) {
    int st = hrmt_test_popen(cmd, out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}
