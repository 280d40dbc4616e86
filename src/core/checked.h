/* Overflow-checked size arithmetic. */
#ifndef HRMT_CORE_CHECKED_H
#define HRMT_CORE_CHECKED_H

#include <stddef.h>

/* *out = a * b; returns 0 on overflow. */
static inline int hrmt_mul_ok(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline int hrmt_add_ok(size_t a, size_t b, size_t *out) {
    return !__builtin_add_overflow(a, b, out);
}

#endif
