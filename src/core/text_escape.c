/* See text_escape.h. */
#include "core/text_escape.h"

#include <string.h>

/* The printable form of byte c: its length, written into out[0..3]. */
static size_t escape_byte(unsigned char c, char out[4]) {
    static const char hex[] = "0123456789abcdef";
    if (c == '\\') {
        out[0] = '\\';
        out[1] = '\\';
        return 2;
    }
    if (c >= 0x20 && c < 0x7f) {
        out[0] = (char)c;
        return 1;
    }
    out[0] = '\\';
    out[1] = 'x';
    out[2] = hex[c >> 4];
    out[3] = hex[c & 15];
    return 4;
}

char *hrmt_text_escape(char *dst, size_t dstlen, const void *src, size_t len) {
    if (!dst || dstlen == 0) return dst;
    const unsigned char *p = src;
    if (!p) len = 0;
    /* Does everything fit? Stop counting as soon as it does not. */
    size_t need = 0, i = 0;
    char e[4];
    for (; i < len && need < dstlen; i++) need += escape_byte(p[i], e);
    int cut = i < len || need >= dstlen;
    size_t room = dstlen - 1; /* characters, the NUL aside */
    if (cut) room = room > 3 ? room - 3 : 0;
    size_t pos = 0;
    for (i = 0; i < len; i++) {
        size_t n = escape_byte(p[i], e);
        if (pos + n > room) break;
        memcpy(dst + pos, e, n);
        pos += n;
    }
    if (cut) {
        const char dots[] = "...";
        size_t n = dstlen - 1 - pos < 3 ? dstlen - 1 - pos : 3;
        memcpy(dst + pos, dots, n);
        pos += n;
    }
    dst[pos] = '\0';
    return dst;
}

char *hrmt_text_escape_str(char *dst, size_t dstlen, const char *s) {
    if (!s) s = "(null)";
    return hrmt_text_escape(dst, dstlen, s, strlen(s));
}
