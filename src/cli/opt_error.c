/* getopt_long failure messages (see opt_error.h). */
#define _GNU_SOURCE /* getopt_long */
#include "cli/opt_error.h"

#include <stdio.h>
#include <string.h>

#include "core/text_escape.h"

const char *cli_flag_name(const struct option *opts, int c, char *buf, size_t len) {
    for (const struct option *o = opts; o->name; o++)
        if (o->val == c) {
            snprintf(buf, len, "--%s", o->name);
            return buf;
        }
    /* A short option: any byte the user typed, so escaped. */
    const char opt[2] = {'-', (char)c};
    return hrmt_text_escape(buf, len, opt, 2);
}

void cli_getopt_reset(void) {
    optind = 0;
    opterr = 0;
}

int cli_getopt_leftover(int argc, char **argv, char *err, size_t errlen) {
    if (optind >= argc) return 0;
    char e[HRMT_ESCAPED_MAX];
    snprintf(err, errlen, "unexpected argument '%s' (see --help)",
             hrmt_text_escape_str(e, sizeof e, argv[optind]));
    return -1;
}

int cli_getopt_error(int c, int argc, char **argv, const struct option *opts, char *err,
                     size_t errlen) {
    char fb[64], e[HRMT_ESCAPED_MAX];
    /* optopt is a long option's val when that option was misused (a value
     * it does not take), the character of an unknown short option (also
     * inside a cluster such as -xy), and 0 for an unknown long option. */
    int known = 0;
    for (const struct option *o = opts; optopt && o->name; o++) known |= o->val == optopt;
    if (c == ':') {
        snprintf(err, errlen, "%s: missing value", cli_flag_name(opts, optopt, fb, sizeof fb));
    } else if (known) {
        snprintf(err, errlen, "%s: takes no value", cli_flag_name(opts, optopt, fb, sizeof fb));
    } else if (optopt) {
        snprintf(err, errlen, "unknown option '%s' (see --help)",
                 cli_flag_name(opts, optopt, fb, sizeof fb));
    } else {
        /* getopt has already stepped past the unknown long option. */
        const char *word = optind >= 1 && optind - 1 < argc ? argv[optind - 1] : "?";
        snprintf(err, errlen, "unknown or ambiguous option '%s' (see --help)",
                 hrmt_text_escape_str(e, sizeof e, word));
    }
    return -1;
}
