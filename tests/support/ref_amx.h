/* Scalar reference for the amx table's BF16 GEMM order (TDPBF16PS), written
 * from Intel's definition, independent of src/: per output and per 32-wide
 * block of k (from k = 0), two F32 chains from +0, one over the block's even
 * k and one over its odd k, each step one fused multiply-add rounded to
 * nearest even; then even + odd (one rounding), then running sum + that (one
 * rounding). Denormal inputs read as zero; a denormal chain step becomes +0,
 * a denormal sum of the two adds a zero of its sign. k past K count as zero
 * products. */
#ifndef HRMT_TEST_REF_AMX_H
#define HRMT_TEST_REF_AMX_H

#include <stddef.h>
#include <stdint.h>

/* One output: row a (K bf16) times row w (K bf16), the F32 sum in AMX order. */
float ref_amx_dot(size_t K, const uint16_t *a, const uint16_t *w);

/* c[i * ldc + j] = ref_amx_dot(K, a + i * lda, w + j * ldw) for i < M, j < N. */
void ref_amx_gemm(size_t M, size_t N, size_t K, const uint16_t *a, size_t lda, const uint16_t *w,
                  size_t ldw, float *c, size_t ldc);

#endif
