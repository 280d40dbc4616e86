/* PLACEHOLDER: `hrmt probe` is not built yet. */
#include <stdio.h>

#include "cli/commands.h"

int hrmt_cmd_probe(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "hrmt probe: not available in this build yet\n");
    return 1;
}
