/* Replays inputs through a fuzz target without libFuzzer, so the seed corpus
 * and every saved crash (tests/fuzz/regressions/<harness>/) run as ordinary
 * tests, under ASan + UBSan in CI. Arguments: files or directories (every
 * regular file in them, in name order; a missing path is skipped).
 * Exit 0 when every input ran (a crash aborts the process), 1 when no input
 * was found at all, so a test that replays nothing cannot pass. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int run_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: %s: out of memory\n", path);
            fclose(fp);
            return -1;
        }
        len += fread(buf + len, 1, cap - len, fp);
        if (len < cap) break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        fprintf(stderr, "replay: %s: read error\n", path);
        free(buf);
        return -1;
    }
    /* A copy of exactly len bytes, so ASan sees any read past the input. */
    uint8_t *exact = malloc(len ? len : 1);
    if (!exact) abort();
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir; the number run, or -1 on an error. */
static int run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char **nn = realloc(names, (n + 1) * sizeof *names);
        if (!nn || !(nn[n] = strdup(e->d_name))) abort();
        names = nn;
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int ran = 0, rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && strcmp(names[i], "README.md") != 0) {
            if (run_file(path) != 0) rc = -1;
            ran++;
        }
        free(names[i]);
    }
    free(names);
    return rc ? -1 : ran;
}

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int r = -1;
        if (stat(argv[i], &st) != 0)
            r = errno == ENOENT ? 0 : -1; /* no saved crashes yet */
        else if (S_ISDIR(st.st_mode))
            r = run_dir(argv[i]);
        else
            r = run_file(argv[i]) ? -1 : 1;
        if (r < 0) {
            fprintf(stderr, "replay: %s failed\n", argv[i]);
            return 1;
        }
        total += r;
    }
    printf("replayed %d inputs\n", total);
    if (total == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    return 0;
}
