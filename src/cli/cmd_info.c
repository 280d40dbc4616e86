/* PLACEHOLDER: `hrmt info` is not built yet. */
#include <stdio.h>

#include "cli/commands.h"

int hrmt_cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hrmt info: not available in this build yet\n");
    return 1;
}
