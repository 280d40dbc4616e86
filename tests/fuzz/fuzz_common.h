/* Shared pieces of the libFuzzer harnesses in tests/fuzz/ (see docs/FUZZING.md).
 *
 * Each fuzz_<name>.c defines LLVMFuzzerTestOneInput and nothing else; it is
 * linked either with libFuzzer (-DHRMT_FUZZ=ON, clang) or with replay_main.c,
 * which feeds it the seed corpus and tests/fuzz/regressions/<name>/ in the
 * ordinary build, so every crash that was found stays a test under ASan. */
#ifndef HRMT_FUZZ_COMMON_H
#define HRMT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The readers under test take a path, as the tool does: the input is written
 * to an anonymous in-memory file (memfd) and named by its /proc/self/fd path,
 * so no disk is touched and nothing is left behind. The path stays valid for
 * the process's lifetime; each call replaces the file's contents. */
const char *fuzz_input_path(const uint8_t *data, size_t size);

/* One CPU context per process (scalar kernels, 1 thread, no calibration):
 * creating one per input would spend the run in topology detection. */
hrmt_context *fuzz_context(void);

/* Invariant violated by an accepted input: prints `what` and aborts, which
 * libFuzzer and the replay test report as a crash. */
void fuzz_fail(const char *harness, const char *what);

/* Checks that an error message is a non-empty, NUL-terminated string within
 * `cap` bytes of printable ASCII (untrusted bytes escaped); aborts through
 * fuzz_fail otherwise. */
void fuzz_check_message(const char *harness, const char *msg, size_t cap);

/* Line oracle for the text readers: the next line of data[*pos..] without
 * its '\n' (a last line without one counts, as getline reads it); 0 at the
 * end. *pos advances past the line. */
int fuzz_next_line(const uint8_t *data, size_t size, size_t *pos, const uint8_t **line,
                   size_t *len);
/* isspace() of the C locale, on a byte. */
int fuzz_is_space(uint8_t c);

/* The same for the context's last error (hrmt_last_error). */
void fuzz_check_error(const char *harness, const hrmt_context *ctx);

#endif
