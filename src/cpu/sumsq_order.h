/* The order of rmsnorm's sum of squares, shared by every table: that of the
 * reference PyTorch (1.13), whose h.square().mean(-1) sums each row with
 * SumKernel.cpp's row_sum over 8-lane vectors (tests/test_torch_rowops.c
 * checks the bits against PyTorch's own rms_norm at 25 row lengths):
 *  - the row is cut into groups of 4 vectors (32 elements); vector k of each
 *    group adds into accumulator k (8 lanes each);
 *  - multi_row_sum's cascade: after every `step` groups (step = 2^power,
 *    power = max(4, ceil(log2(groups)) / 4)), level 0 is added into level 1
 *    and cleared, and further up while the group count is a multiple of the
 *    next level's span; at the end the levels are added back into level 0;
 *  - leftover whole vectors (at most 3) add into accumulator 0, then
 *    ((a0 + a1) + a2) + a3;
 *  - the sum is 0 + each leftover element (at most 7) + lane 0 .. lane 7;
 *  - a row shorter than one vector takes PyTorch's scalar path instead:
 *    elements 4i + k into scalar accumulator k, the rest into the first,
 *    then ((a0 + a1) + a2) + a3.
 * The squares themselves are rounded to F32 before any add (no FMA).
 * Each table computes the squares with its own vectors, 32 at a time, and
 * feeds them here; the adds below are lane-wise loops the compiler turns
 * into that table's vector instructions. */
#ifndef HRMT_CPU_SUMSQ_ORDER_H
#define HRMT_CPU_SUMSQ_ORDER_H

#include <stddef.h>
#include <string.h>

#define HRMT_SUMSQ_LEVELS 4
#define HRMT_SUMSQ_GROUP 32

typedef struct hrmt_sumsq {
    float acc[HRMT_SUMSQ_LEVELS][HRMT_SUMSQ_GROUP];
    size_t done;    /* whole groups added */
    unsigned power; /* the cascade runs every 2^power groups */
} hrmt_sumsq;

/* ceil(log2(n)) as PyTorch's CeilLog2 (1 for n <= 2). */
static inline unsigned hrmt_ceil_log2(size_t n) {
    unsigned k = 1;
    while (k < 63 && ((size_t)1 << k) < n) k++;
    return k;
}

static inline void hrmt_sumsq_init(hrmt_sumsq *s, size_t cols) {
    const size_t groups = cols / HRMT_SUMSQ_GROUP;
    const unsigned p = hrmt_ceil_log2(groups) / HRMT_SUMSQ_LEVELS;
    memset(s->acc, 0, sizeof s->acc);
    s->done = 0;
    s->power = p > 4 ? p : 4;
}

/* Counts a group whose squares are already in level 0 (vector tables may
 * keep level 0 in registers: they store it to acc[0] before calling this
 * when it returns 1, and reload it after hrmt_sumsq_cascade). 1 when the
 * cascade is due. */
static inline int hrmt_sumsq_tick(hrmt_sumsq *s) {
    return (++s->done & (((size_t)1 << s->power) - 1)) == 0;
}

/* The cascade after a multiple of 2^power groups (level 0 cleared). */
static inline void hrmt_sumsq_cascade(hrmt_sumsq *s) {
    const size_t mask = ((size_t)1 << s->power) - 1;
    for (unsigned j = 1; j < HRMT_SUMSQ_LEVELS; j++) {
        for (size_t l = 0; l < HRMT_SUMSQ_GROUP; l++) {
            s->acc[j][l] += s->acc[j - 1][l];
            s->acc[j - 1][l] = 0.0f;
        }
        if (s->done & (mask << (j * s->power))) break;
    }
}

/* Adds the squares of one whole group, in row order. */
static inline void hrmt_sumsq_group(hrmt_sumsq *s, const float sq[HRMT_SUMSQ_GROUP]) {
    for (size_t l = 0; l < HRMT_SUMSQ_GROUP; l++) s->acc[0][l] += sq[l];
    if (hrmt_sumsq_tick(s)) hrmt_sumsq_cascade(s);
}

/* The row's sum, given the squares of what follows the whole groups:
 * `rest` holds its `nrest` (< 32) squares in row order. */
static inline float hrmt_sumsq_finish(hrmt_sumsq *s, const float *rest, size_t nrest) {
    if (s->done == 0 && nrest < 8) {
        float a4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        const size_t whole = nrest / 4 * 4;
        for (size_t t = 0; t < whole; t++) a4[t % 4] += rest[t];
        for (size_t t = whole; t < nrest; t++) a4[0] += rest[t];
        return ((a4[0] + a4[1]) + a4[2]) + a4[3];
    }
    float *a = s->acc[0];
    for (unsigned j = 1; j < HRMT_SUMSQ_LEVELS; j++)
        for (size_t l = 0; l < HRMT_SUMSQ_GROUP; l++) a[l] += s->acc[j][l];
    const size_t nvec = nrest / 8;
    for (size_t v = 0; v < nvec; v++)
        for (size_t l = 0; l < 8; l++) a[l] += rest[v * 8 + l];
    for (size_t k = 1; k < 4; k++)
        for (size_t l = 0; l < 8; l++) a[l] += a[k * 8 + l];
    float sum = 0.0f;
    for (size_t t = nvec * 8; t < nrest; t++) sum += rest[t];
    for (size_t l = 0; l < 8; l++) sum += a[l];
    return sum;
}

#endif
