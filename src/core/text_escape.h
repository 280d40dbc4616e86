/* Untrusted bytes (from input files, paths, options) made safe to print in
 * an error message: no control bytes reach the terminal, and the length is
 * bounded. */
#ifndef HRMT_CORE_TEXT_ESCAPE_H
#define HRMT_CORE_TEXT_ESCAPE_H

#include <stddef.h>

/* A buffer size that keeps an escaped value readable inside one message. */
#define HRMT_ESCAPED_MAX 160

/* Writes the `len` bytes at `src` into `dst` (capacity `dstlen` including the
 * terminating NUL) as printable ASCII: bytes 0x20..0x7e stay as they are
 * except the backslash, written "\\"; every other byte (controls, DEL, NUL,
 * non-ASCII) is written "\xNN" with two lowercase hex digits. When the result
 * does not fit, it is cut at a whole escape and ends with "...". Always
 * NUL-terminates when dstlen > 0. Returns dst, so the call can be an argument
 * of printf. */
char *hrmt_text_escape(char *dst, size_t dstlen, const void *src, size_t len);

/* hrmt_text_escape of a NUL-terminated string (NULL is written "(null)"). */
char *hrmt_text_escape_str(char *dst, size_t dstlen, const char *s);

#endif
