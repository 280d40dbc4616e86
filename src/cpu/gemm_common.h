/* Portable pieces shared by the GEMM kernel files. static inline, so every
 * src/cpu/gemm_<isa>.c gets its own copy compiled with its own flags. */
#ifndef HRMT_CPU_GEMM_COMMON_H
#define HRMT_CPU_GEMM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "core/bf16.h"
#include "core/gemm_kernels.h"

/* Packs an F32-kernel sliver: dst[k*mr + i] = A[i][k] widened to F32, rows
 * m..mr-1 zero. Reads each row of A contiguously. */
static inline void hrmt_gemm_pack_a_f32_generic(size_t mr, size_t m, size_t kc, const void *a,
                                                hrmt_dtype a_dt, size_t lda, float *dst) {
    for (size_t i = 0; i < mr; i++) {
        float *d = dst + i;
        if (i >= m) {
            for (size_t k = 0; k < kc; k++) d[k * mr] = 0.0f;
        } else if (a_dt == HRMT_F32) {
            const float *r = (const float *)a + i * lda;
            for (size_t k = 0; k < kc; k++) d[k * mr] = r[k];
        } else {
            const uint16_t *r = (const uint16_t *)a + i * lda;
            for (size_t k = 0; k < kc; k++) d[k * mr] = hrmt_bf16_to_f32(r[k]);
        }
    }
}

/* Writes a tile of finished sums t (row stride ldt) to C per `o`: plain
 * store, or C + sum, in F32 or rounded once to BF16. Only o->m x o->n. */
static inline void hrmt_gemm_store_tile_generic(const float *t, size_t ldt,
                                                const hrmt_gemm_ukr_out *o) {
    for (size_t i = 0; i < o->m; i++) {
        const float *s = t + i * ldt;
        if (o->c_dt == HRMT_F32) {
            float *c = (float *)o->c + i * o->ldc;
            if (o->accumulate)
                for (size_t j = 0; j < o->n; j++) c[j] = c[j] + s[j];
            else
                for (size_t j = 0; j < o->n; j++) c[j] = s[j];
        } else {
            uint16_t *c = (uint16_t *)o->c + i * o->ldc;
            if (o->accumulate)
                for (size_t j = 0; j < o->n; j++)
                    c[j] = hrmt_f32_to_bf16(hrmt_bf16_to_f32(c[j]) + s[j]);
            else
                for (size_t j = 0; j < o->n; j++) c[j] = hrmt_f32_to_bf16(s[j]);
        }
    }
}

#endif
