/* Every f32 bit pattern (all 2^32, NaNs and Infs included) through the
 * inline exps of src/cpu/expf_avx512.h and src/cpu/expf_avx2.h against
 * SLEEF's Sleef_expf16_u10avx512f and Sleef_expf8_u10avx2, bit for bit, and
 * the scalar table's portable hrmt_expf_fma (src/cpu/expf_fma.h; NaN in, NaN
 * out). Needs an AVX-512 CPU. From the repository root (~2 min on 2 cores):
 *   cc -O2 -std=c11 -fopenmp -mavx512f -mavx512bw -mavx512dq -mavx512vl -mfma -mavx2 \
 *      -Isrc tools/investigate/expf_simd_exhaustive.c -lsleef -lm -o /tmp/expsx && /tmp/expsx */
#include <math.h>
#include <sleef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu/expf_avx2.h"
#include "cpu/expf_avx512.h"
#include "cpu/expf_fma.h"

int main(void) {
    unsigned long bad512 = 0, bad2 = 0, bad1 = 0;
#pragma omp parallel for reduction(+ : bad512, bad2, bad1) schedule(static, 1)
    for (uint32_t hi = 0; hi < 65536; hi++) {
        for (uint32_t lo = 0; lo < 65536; lo += 16) {
            const __m512i b = _mm512_add_epi32(
                _mm512_set1_epi32((int)(hi << 16 | lo)),
                _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
            const __m512 x = _mm512_castsi512_ps(b);
            const __m512i r = _mm512_castps_si512(Sleef_expf16_u10avx512f(x));
            const __m512i o = _mm512_castps_si512(hrmt_expf16_fma(x));
            bad512 += (unsigned)__builtin_popcount(_mm512_cmpneq_epi32_mask(r, o));
            float xs[16], rs[16];
            _mm512_storeu_ps(xs, x);
            _mm512_storeu_ps(rs, _mm512_castsi512_ps(r));
            for (int l = 0; l < 16; l++) {
                const float e = hrmt_expf_fma(xs[l]);
                bad1 += e != e ? rs[l] == rs[l] : memcmp(&e, &rs[l], sizeof e) != 0;
            }
            for (int h = 0; h < 2; h++) {
                const __m256 x8 = h ? _mm512_extractf32x8_ps(x, 1) : _mm512_castps512_ps256(x);
                const __m256i r8 = _mm256_castps_si256(Sleef_expf8_u10avx2(x8));
                const __m256i o8 = _mm256_castps_si256(hrmt_expf8_fma(x8));
                bad2 += (unsigned)__builtin_popcount(_mm256_movemask_ps(_mm256_castsi256_ps(
                    _mm256_xor_si256(_mm256_cmpeq_epi32(r8, o8), _mm256_set1_epi32(-1)))));
            }
        }
    }
    printf("2^32 inputs: avx512 %lu differ, avx2 %lu differ (bit patterns, NaNs included), "
           "scalar %lu differ\n",
           bad512, bad2, bad1);
    return bad512 != 0 || bad2 != 0 || bad1 != 0;
}
