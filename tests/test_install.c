/* `cmake --install` into a fresh prefix, then an outside program
 * (tests/install/consumer.c) is built against the INSTALLED static library
 * twice — through `pkg-config --static` and through find_package(hrmt) — and
 * both binaries must print what the library reports in-process. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "support/run_cmd.h"
#include "support/test_common.h"

static char g_tmp[64];

/* Reads a whole file (or "" when missing); caller frees. */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        char *e = malloc(1);
        cr_assert_not_null(e);
        e[0] = '\0';
        return e;
    }
    char *buf = hrmt_test_read_all(f);
    fclose(f);
    return buf;
}

/* Runs `cmd` with stdout+stderr to <tmp>/<log>.log; on failure the test
 * fails showing the command and the log. */
static void run_step(const char *log, const char *cmd) {
    char path[256], full[8192];
    snprintf(path, sizeof path, "%s/%s.log", g_tmp, log);
    int n = snprintf(full, sizeof full, "%s > '%s' 2>&1", cmd, path);
    cr_assert(n > 0 && (size_t)n < sizeof full, "command too long");
    int st = system(full);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char *text = slurp(path);
        cr_assert_fail("step '%s' failed (status %d)\n$ %s\n%s", log, st, cmd, text);
    }
}

/* Output of a step's log, trailing newlines removed; caller frees. */
static char *step_output(const char *log) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s.log", g_tmp, log);
    char *s = slurp(path);
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

static void expect_file(const char *rel) {
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/prefix/%s", g_tmp, rel);
    cr_expect_eq(stat(path, &st), 0, "installed file missing: %s", rel);
}

static void cleanup(void) {
    if (!g_tmp[0]) return;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_tmp);
}

Test(install, consumer_builds_against_installed_library, .fini = cleanup) {
    strcpy(g_tmp, "/tmp/hrmt-install-XXXXXX");
    cr_assert_not_null(mkdtemp(g_tmp));
    char cmd[4096];

    /* What the consumers must print: the library's own answers here. */
    hrmt_context *ctx = hrmt_test_context();
    char want[256];
    snprintf(want, sizeof want, "isa=%s l1d=%zu version=%d.%d.%d json=ok copy=ok",
             hrmt_isa_name(hrmt_context_isa(ctx)), hrmt_context_topology(ctx)->caches[0].size_bytes,
             HRMT_VERSION_MAJOR, HRMT_VERSION_MINOR, HRMT_VERSION_PATCH);
    hrmt_context_destroy(ctx);

    /* 1. Install. */
    snprintf(cmd, sizeof cmd, "'%s' --install '%s' --prefix '%s/prefix'", HRMT_TEST_CMAKE,
             HRMT_TEST_BINARY_DIR, g_tmp);
    run_step("install", cmd);
    expect_file("include/hrmt.h");
    expect_file(HRMT_TEST_INSTALL_LIBDIR "/libhrmt.a");
    expect_file(HRMT_TEST_INSTALL_LIBDIR "/pkgconfig/hrmt.pc");
    expect_file(HRMT_TEST_INSTALL_LIBDIR "/cmake/hrmt/hrmtConfig.cmake");
    expect_file(HRMT_TEST_INSTALL_LIBDIR "/cmake/hrmt/hrmtTargets.cmake");
    expect_file(HRMT_TEST_INSTALL_BINDIR "/hrmt");

    /* Nothing installed may point back into the build or source tree. */
    snprintf(cmd, sizeof cmd,
             "! grep -rlF -e '%s' -e '%s' '%s/prefix/%s/pkgconfig' '%s/prefix/%s/cmake'",
             HRMT_TEST_BINARY_DIR, HRMT_TEST_SOURCE_DIR, g_tmp, HRMT_TEST_INSTALL_LIBDIR, g_tmp,
             HRMT_TEST_INSTALL_LIBDIR);
    run_step("no-build-paths", cmd);

    /* The installed command runs on its own. */
    snprintf(cmd, sizeof cmd, "'%s/prefix/%s/hrmt' info --json", g_tmp, HRMT_TEST_INSTALL_BINDIR);
    run_step("installed-cli", cmd);

    /* 2. pkg-config --static. */
    snprintf(cmd, sizeof cmd,
             "PKG_CONFIG_PATH='%s/prefix/%s/pkgconfig' '%s' --static --cflags --libs hrmt", g_tmp,
             HRMT_TEST_INSTALL_LIBDIR, HRMT_TEST_PKG_CONFIG);
    run_step("pkg-config", cmd);
    char *flags = step_output("pkg-config");
    cr_expect_not_null(strstr(flags, "-lhrmt"), "pkg-config flags: %s", flags);
    cr_expect_not_null(strstr(flags, "-lhwloc"), "static link lists private libs: %s", flags);
    snprintf(cmd, sizeof cmd, "'%s' -std=c11 '%s/tests/install/consumer.c' -o '%s/consumer_pc' %s",
             HRMT_TEST_C_COMPILER, HRMT_TEST_SOURCE_DIR, g_tmp, flags);
    free(flags);
    run_step("pc-build", cmd);
    snprintf(cmd, sizeof cmd, "'%s/consumer_pc'", g_tmp);
    run_step("pc-run", cmd);
    char *out = step_output("pc-run");
    cr_expect_str_eq(out, want, "pkg-config consumer printed '%s'", out);
    free(out);

    /* 3. find_package(hrmt) -> hrmt::hrmt. */
    snprintf(cmd, sizeof cmd,
             "'%s' -S '%s/tests/install' -B '%s/cmake-build' -DCMAKE_PREFIX_PATH='%s/prefix' "
             "-DCMAKE_C_COMPILER='%s' -DCMAKE_BUILD_TYPE=Release",
             HRMT_TEST_CMAKE, HRMT_TEST_SOURCE_DIR, g_tmp, g_tmp, HRMT_TEST_C_COMPILER);
    run_step("cmake-configure", cmd);
    snprintf(cmd, sizeof cmd, "'%s' --build '%s/cmake-build'", HRMT_TEST_CMAKE, g_tmp);
    run_step("cmake-build", cmd);
    snprintf(cmd, sizeof cmd, "'%s/cmake-build/hrmt_consumer'", g_tmp);
    run_step("cmake-run", cmd);
    out = step_output("cmake-run");
    cr_expect_str_eq(out, want, "find_package consumer printed '%s'", out);
    free(out);
}
