/* PLACEHOLDER: `hrmt run` is not built yet. */
#include <stdio.h>

#include "cli/commands.h"

int hrmt_cmd_run(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hrmt run: not available in this build yet\n");
    return 1;
}
