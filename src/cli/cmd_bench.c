/* PLACEHOLDER: `hrmt bench` is not built yet. */
#include <stdio.h>

#include "cli/commands.h"

int hrmt_cmd_bench(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hrmt bench: not available in this build yet\n");
    return 1;
}
