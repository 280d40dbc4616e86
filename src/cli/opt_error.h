/* Messages for getopt_long's own failures, naming the flag as --help spells it. */
#ifndef HRMT_CLI_OPT_ERROR_H
#define HRMT_CLI_OPT_ERROR_H

#include <getopt.h>
#include <stddef.h>

/* c is getopt_long's return ('?' unknown option / value given to a flag that
 * takes none, ':' missing value; the optstring must start with ':'). Always -1. */
int cli_getopt_error(int c, int argc, char **argv, const struct option *opts, char *err,
                     size_t errlen);

/* "--<long name>" of the option whose val is `c`, else "-c" (escaped). */
const char *cli_flag_name(const struct option *opts, int c, char *buf, size_t len);

#endif
