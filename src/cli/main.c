/* hrmt — command-line entry point: dispatches to subcommands. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/text_escape.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: hrmt <command> [options]\n"
            "commands:\n"
            "  info    detected ISA, caches, tile plan, threads, CUDA\n"
            "  run     run HRM (ACT) on puzzles or token files\n"
            "  bench   tiered-vs-baseline benchmark of the HRM model\n"
            "  probe   memory latency/bandwidth sweep (cache tiers)\n"
            "Run 'hrmt <command> --help' for its options.\n");
}

/* A full disk or closed pipe on stdout must not look like success: the
 * buffered tail is only written here, and an earlier failed write leaves
 * the error flag set. Returns the command's status, or 1. */
static int finish(const char *cmd, int rc) {
    int prior = errno; /* an earlier failed flush's reason, if that is all there is */
    errno = 0;
    int bad = fflush(stdout) != 0;
    int e = errno;
    bad |= ferror(stdout) != 0;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad) return rc;
    if (!e) e = prior ? prior : EIO;
    fprintf(stderr, "hrmt %s: writing standard output: %s\n", cmd, strerror(e));
    return rc ? rc : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } table[] = {{"info", hrmt_cmd_info},
                 {"run", hrmt_cmd_run},
                 {"bench", hrmt_cmd_bench},
                 {"probe", hrmt_cmd_probe}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(cmd, table[i].name)) return finish(cmd, table[i].fn(argc - 1, argv + 1));
    char e[HRMT_ESCAPED_MAX];
    fprintf(stderr, "hrmt: unknown command '%s'\n", hrmt_text_escape_str(e, sizeof e, cmd));
    usage(stderr);
    return 2;
}
