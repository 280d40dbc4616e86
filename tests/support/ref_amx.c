#include "support/ref_amx.h"

#include <math.h>
#include <string.h>

/* Denormals are zero (inputs) and flushed to zero (results), sign kept. */
static float flush(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }

/* A chain step's denormal result becomes +0 whatever its sign (measured on
 * Sapphire/Emerald Rapids: the signed flush gives -0 where the tiles hold +0;
 * the adds after the chains keep the sign). */
static float flush_step(float x) { return fpclassify(x) == FP_SUBNORMAL ? 0.0f : x; }

static float bf16_in(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return flush(f);
}

float ref_amx_dot(size_t K, const uint16_t *a, const uint16_t *w) {
    float acc = 0.0f;
    for (size_t k0 = 0; k0 < K; k0 += 32) {
        float even = 0.0f, odd = 0.0f;
        for (size_t p = 0; p < 16; p++) {
            const size_t k = k0 + 2 * p;
            /* libm's fmaf: one rounding of the exact a * b + c. */
            if (k < K) even = flush_step(fmaf(bf16_in(a[k]), bf16_in(w[k]), even));
            if (k + 1 < K) odd = flush_step(fmaf(bf16_in(a[k + 1]), bf16_in(w[k + 1]), odd));
        }
        const float block = flush(even + odd);
        acc = flush(acc + block);
    }
    return acc;
}

void ref_amx_gemm(size_t M, size_t N, size_t K, const uint16_t *a, size_t lda, const uint16_t *w,
                  size_t ldw, float *c, size_t ldc) {
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) c[i * ldc + j] = ref_amx_dot(K, a + i * lda, w + j * ldw);
}
