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

/* Before a getopt_long loop: a full re-initialisation (glibc's optind = 0), so
 * repeated parses work, and getopt's own messages off (the caller reports
 * errors, naming the flag). */
void cli_getopt_reset(void);

/* After the loop: 0 when no argument is left, else -1 with "unexpected
 * argument '<the first>' (see --help)" (escaped) in err. */
int cli_getopt_leftover(int argc, char **argv, char *err, size_t errlen);

#endif
