/* The CUDA row ops' expf (src/cuda/rowops_common.cuh, expf_fma) against the
 * scalar table's hrmt_expf_fma (src/cpu/expf_fma.h), on every one of the 2^32
 * f32 inputs, and softmax's expf_fma_nonpos on every input <= 0 and NaN: bit
 * for bit, NaN for NaN. The device formulation leaves out the
 * reference's range cases (its arithmetic gives 0 and +inf there by itself)
 * and keeps NaN through a NaN-propagating clamp; this is the proof that the
 * bits did not move. It runs the header's host path, which is the device
 * path's arithmetic op for op (one IEEE rounding each, RNE rint, the same
 * NaN-propagating min/max); no GPU needed. A change to expf_fma must keep
 * this at zero. About 5-9 minutes on 2 cores:
 *
 *   nvcc -O2 -std=c++17 -Isrc -Iinclude -Xcompiler -fopenmp,-ffp-contract=off \
 *        tools/cuda_expf_check.cu -o /tmp/cuda-expf-check && /tmp/cuda-expf-check
 *
 * exit 0: identical; 1: some inputs differ (the first few are printed). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cpu/expf_fma.h"
#include "cuda/rowops_common.cuh"

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

int main(void) {
    unsigned long long bad = 0;
#pragma omp parallel for schedule(static, 64) reduction(+ : bad)
    for (long long hi = 0; hi < 65536; hi++) {
        for (uint32_t lo = 0; lo < 65536; lo++) {
            const uint32_t b = (uint32_t)hi << 16 | lo;
            float x;
            memcpy(&x, &b, sizeof x);
            const float want = hrmt_expf_fma(x), got = hrmt_rowops_cuda::expf_fma(x);
            /* The softmax form: every x <= 0 (sign bit set, or +0) and NaN. */
            const int neg = (b >> 31) || b == 0 || x != x;
            const float got2 = neg ? hrmt_rowops_cuda::expf_fma_nonpos(x) : want;
            const int ok = (bits_of(want) == bits_of(got) || (want != want && got != got)) &&
                           (bits_of(want) == bits_of(got2) || (want != want && got2 != got2));
            if (ok) continue;
            if (bad++ < 8)
#pragma omp critical
                printf("x = %a (0x%08x): want %a, got %a, nonpos %a\n", (double)x, b, (double)want,
                       (double)got, (double)got2);
        }
    }
    printf(
        "cuda expf_fma (all inputs) and expf_fma_nonpos (x <= 0, NaN) vs hrmt_expf_fma: "
        "%llu of 2^32 inputs differ\n",
        bad);
    return bad != 0;
}
