/* For the tests that run programs: a scratch directory per suite, and shell
 * commands whose output and exit status the test checks. Failures here fail
 * the calling test (Criterion asserts). */
#ifndef HRMT_TEST_RUN_CMD_H
#define HRMT_TEST_RUN_CMD_H

#include <stddef.h>
#include <stdio.h>

/* Creates a fresh directory /tmp/hrmt_<tag>_<pid>_XXXXXX; its path goes to
 * dir (len bytes). */
void hrmt_test_mkdtemp(char *dir, size_t len, const char *tag);
/* Removes dir and everything in it. */
void hrmt_test_rmtree(const char *dir);

/* Everything left in f, NUL-terminated (caller frees). */
char *hrmt_test_read_all(FILE *f);

/* Runs cmd in the shell (popen); *out (caller frees) receives what reached
 * the pipe, NUL-terminated. Returns pclose's wait status. */
int hrmt_test_popen(const char *cmd, char **out);
/* The same, returning cmd's exit status, or 128 when it did not exit
 * normally. */
int hrmt_test_sh(const char *cmd, char **out);

#endif
