/* Test-only row-major matrices with a row stride and guarded padding, for
 * building op inputs and comparing op outputs. */
#ifndef HRMT_TEST_MAT_H
#define HRMT_TEST_MAT_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"
#include "support/test_common.h"

typedef struct {
    hrmt_dtype dt;
    size_t rows, cols, ld, es;
    void *p;
} tmat;

/* Padding between cols and ld is filled with this bit pattern and must stay. */
#define TMAT_GUARD 0xA5u

tmat tmat_new(hrmt_dtype dt, size_t rows, size_t cols, size_t ld);
void tmat_free(tmat *m);
/* Uniform in [-scale, scale), rounded to the storage dtype. */
void tmat_fill(tmat *m, hrmt_test_rng *rng, float scale);
float tmat_get(const tmat *m, size_t r, size_t j);
void tmat_set(tmat *m, size_t r, size_t j, float v);
hrmt_tensor tmat_tensor(const tmat *m);
/* Copies values and padding of src (same geometry). */
void tmat_copy(tmat *dst, const tmat *src);
/* Number of padding bytes that are no longer TMAT_GUARD. */
size_t tmat_guard_damage(const tmat *m);

/* Compares got against want element by element: NaN must match NaN, an
 * infinity must match exactly, other F32 values within rel*|want| + abs, BF16
 * values within `ulps` bf16 ulps. Prints up to 5 mismatches tagged `what`;
 * returns the mismatch count. */
size_t tmat_compare(const tmat *got, const tmat *want, double rel, double abs, int ulps,
                    const char *what);

#endif
