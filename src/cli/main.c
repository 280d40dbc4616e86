/* hrmt — command-line entry point: dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

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
        if (!strcmp(cmd, table[i].name)) return table[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "hrmt: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
