/* core/text_escape: untrusted bytes printed in error messages. Expected
 * strings are written out by hand. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/text_escape.h"

static const char *esc(char *buf, size_t cap, const char *s, size_t n) {
    return hrmt_text_escape(buf, cap, s, n);
}

Test(escape, printable_ascii_unchanged) {
    char b[64];
    cr_assert_str_eq(esc(b, sizeof b, "a-Z 9~!", 7), "a-Z 9~!");
}

Test(escape, controls_nul_high_bytes_and_backslash) {
    char b[64];
    cr_assert_str_eq(esc(b, sizeof b, "a\nb\0c\x1b[1m\x7f\xff\\", 12),
                     "a\\x0ab\\x00c\\x1b[1m\\x7f\\xff\\\\");
}

Test(escape, utf8_is_escaped_bytewise) {
    char b[64];
    cr_assert_str_eq(hrmt_text_escape_str(b, sizeof b, "\xc3\xa9"), "\\xc3\\xa9");
}

Test(escape, exact_fit_has_no_ellipsis) {
    char b[6];
    cr_assert_str_eq(esc(b, sizeof b, "abcde", 5), "abcde");
}

Test(escape, cut_ends_with_ellipsis) {
    char b[8];
    cr_assert_str_eq(esc(b, sizeof b, "abcdefghij", 10), "abcd...");
}

Test(escape, cut_never_splits_an_escape) {
    char b[9]; /* 8 characters: "a" + "\x01" is 5, a second "\x01" would not fit before "..." */
    cr_assert_str_eq(esc(b, sizeof b, "a\x01\x01\x01", 4), "a\\x01...");
    char c[8];
    cr_assert_str_eq(esc(c, sizeof c, "a\x01\x01", 3), "a...");
}

Test(escape, tiny_buffers) {
    char b[4] = "zzz";
    cr_assert_str_eq(esc(b, 1, "abc", 3), "");
    cr_assert_str_eq(esc(b, 3, "abc", 3), "..");
    cr_assert_str_eq(esc(b, 4, "abc", 3), "abc");
    cr_assert_str_eq(esc(b, 4, "abcd", 4), "...");
    cr_assert_null(hrmt_text_escape(NULL, 0, "a", 1));
}

Test(escape, long_input_is_bounded) {
    static char big[1 << 20];
    memset(big, '\n', sizeof big);
    char b[HRMT_ESCAPED_MAX];
    esc(b, sizeof b, big, sizeof big);
    cr_assert_eq(strlen(b), 39 * 4 + 3, "len %zu", strlen(b)); /* 159 characters */
    cr_assert_str_eq(b + strlen(b) - 3, "...");
}

Test(escape, null_string) {
    char b[16];
    cr_assert_str_eq(hrmt_text_escape_str(b, sizeof b, NULL), "(null)");
    cr_assert_str_eq(esc(b, sizeof b, NULL, 5), "");
}
