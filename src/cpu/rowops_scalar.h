/* Scalar reference kernels: the per-file fill functions that together build
 * the scalar row-op table (each lives in a *_scalar.c file). */
#ifndef HRMT_CPU_ROWOPS_SCALAR_H
#define HRMT_CPU_ROWOPS_SCALAR_H

#include <stddef.h>
#include <stdint.h>

#include "core/bf16.h"
#include "core/rowops.h"

void hrmt_norm_fill_scalar(hrmt_rowops *t);
void hrmt_act_fill_scalar(hrmt_rowops *t);
void hrmt_softmax_fill_scalar(hrmt_rowops *t);
void hrmt_rope_fill_scalar(hrmt_rowops *t);
void hrmt_engram_fill_scalar(hrmt_rowops *t);

/* Element access for the dtype-generic reference loops; `bf` is a
 * compile-time constant at every call site, so the branch folds away. */
static inline float hrmt_ld(const void *p, size_t i, int bf) {
    return bf ? hrmt_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static inline void hrmt_st(void *p, size_t i, float v, int bf) {
    if (bf)
        ((uint16_t *)p)[i] = hrmt_f32_to_bf16(v);
    else
        ((float *)p)[i] = v;
}
/* Row r of a matrix with leading dim ld (elements) and element size es. */
static inline const void *hrmt_row_c(const void *p, size_t r, size_t ld, size_t es) {
    return (const char *)p + r * ld * es;
}
static inline void *hrmt_row(void *p, size_t r, size_t ld, size_t es) {
    return (char *)p + r * ld * es;
}

#endif
