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
    snprintf(buf, len, "-%c", c);
    return buf;
}

int cli_getopt_error(int c, int argc, char **argv, const struct option *opts, char *err,
                     size_t errlen) {
    /* getopt has already stepped past the offending word. */
    const char *word = optind >= 1 && optind - 1 < argc ? argv[optind - 1] : "?";
    int is_long = word[0] == '-' && word[1] == '-';
    char fb[64], e[HRMT_ESCAPED_MAX];
    if (c == ':')
        snprintf(err, errlen, "%s: missing value", cli_flag_name(opts, optopt, fb, sizeof fb));
    else if (is_long && optopt)
        snprintf(err, errlen, "%s: takes no value", cli_flag_name(opts, optopt, fb, sizeof fb));
    else if (is_long)
        snprintf(err, errlen, "unknown or ambiguous option '%s' (see --help)",
                 hrmt_text_escape_str(e, sizeof e, word));
    else {
        const char opt[2] = {'-', (char)(optopt ? optopt : '?')};
        snprintf(err, errlen, "unknown option '%s' (see --help)",
                 hrmt_text_escape(e, sizeof e, opt, 2));
    }
    return -1;
}
