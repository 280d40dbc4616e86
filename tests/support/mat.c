#include "support/mat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/ref_bf16.h"

tmat tmat_new(hrmt_dtype dt, size_t rows, size_t cols, size_t ld) {
    tmat m = {dt, rows, cols, ld, hrmt_dtype_size(dt), NULL};
    m.p = malloc(rows * ld * m.es);
    if (!m.p) {
        fprintf(stderr, "tmat_new: out of memory\n");
        exit(1);
    }
    memset(m.p, (int)TMAT_GUARD, rows * ld * m.es);
    return m;
}

void tmat_free(tmat *m) {
    free(m->p);
    m->p = NULL;
}

float tmat_get(const tmat *m, size_t r, size_t j) {
    const size_t i = r * m->ld + j;
    return m->dt == HRMT_BF16 ? ref_bf16_to_f32(((const uint16_t *)m->p)[i])
                              : ((const float *)m->p)[i];
}

void tmat_set(tmat *m, size_t r, size_t j, float v) {
    const size_t i = r * m->ld + j;
    if (m->dt == HRMT_BF16)
        ((uint16_t *)m->p)[i] = ref_f32_to_bf16(v);
    else
        ((float *)m->p)[i] = v;
}

void tmat_fill(tmat *m, hrmt_test_rng *rng, float scale) {
    for (size_t r = 0; r < m->rows; r++)
        for (size_t j = 0; j < m->cols; j++) tmat_set(m, r, j, scale * hrmt_test_uniform(rng));
}

hrmt_tensor tmat_tensor(const tmat *m) {
    hrmt_tensor t;
    const size_t shape[2] = {m->rows, m->cols};
    hrmt_tensor_init(&t, m->p, m->dt, 2, shape);
    t.stride[0] = m->ld;
    return t;
}

void tmat_copy(tmat *dst, const tmat *src) {
    memcpy(dst->p, src->p, src->rows * src->ld * src->es);
}

size_t tmat_guard_damage(const tmat *m) {
    size_t bad = 0;
    const unsigned char *b = m->p;
    for (size_t r = 0; r < m->rows; r++)
        for (size_t k = m->cols * m->es; k < m->ld * m->es; k++)
            bad += b[r * m->ld * m->es + k] != TMAT_GUARD;
    return bad;
}

size_t tmat_compare(const tmat *got, const tmat *want, double rel, double abs, int ulps,
                    const char *what) {
    size_t bad = 0;
    for (size_t r = 0; r < want->rows; r++) {
        for (size_t j = 0; j < want->cols; j++) {
            const size_t i = r * want->ld + j, gi = r * got->ld + j;
            int ok;
            double g, w;
            if (want->dt == HRMT_BF16) {
                const uint16_t gb = ((const uint16_t *)got->p)[gi],
                               wb = ((const uint16_t *)want->p)[i];
                g = ref_bf16_to_f32(gb);
                w = ref_bf16_to_f32(wb);
                if (ref_isnan_bf16(wb) || ref_isnan_bf16(gb))
                    ok = ref_isnan_bf16(wb) && ref_isnan_bf16(gb);
                else
                    ok = llabs(ref_ord_bf16(gb) - ref_ord_bf16(wb)) <= ulps;
            } else {
                g = ((const float *)got->p)[gi];
                w = ((const float *)want->p)[i];
                if (isnan(w) || isnan(g))
                    ok = isnan(w) && isnan(g);
                else if (isinf(w) || isinf(g))
                    ok = g == w;
                else
                    ok = fabs(g - w) <= rel * fabs(w) + abs;
            }
            if (!ok && bad++ < 5)
                fprintf(stderr, "%s: [%zu,%zu] got %.9g want %.9g\n", what, r, j, g, w);
        }
    }
    return bad;
}
