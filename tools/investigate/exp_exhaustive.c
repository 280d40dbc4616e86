/* Every float x in [-105, 0] (and -inf): exp_fma
 * (torch_softmax.h: fmaf emulated in double, branch-free) against SLEEF's
 * Sleef_expf1_u10purecfma (= Sleef_expf8_u10avx2, PyTorch 1.13's exp).
 * From the repository root, on a CPU with FMA:
 *   cc -O2 -std=c11 -fopenmp tools/investigate/exp_exhaustive.c \
 *      -l:libsleef.so.3 -lm -o /tmp/expx && /tmp/expx */
#include "torch_softmax.h"

#include <stdio.h>

float Sleef_expf1_u10purecfma(float);

int main(void) {
    (void)torch_softmax_rows;
    unsigned long n = 0, bad = 0;
    for (uint32_t b = 0x80000000u;; b++) { /* -0 .. -105 */
        float x;
        memcpy(&x, &b, 4);
        if (x < -105.0f) break;
        const float ref = Sleef_expf1_u10purecfma(x), ours = exp_fma(x);
        bad += memcmp(&ours, &ref, 4) != 0;
        n++;
    }
    const float z = exp_fma(-INFINITY), nan = exp_fma(NAN);
    printf("%lu inputs in [-105, 0]: %lu differ; exp(-inf) = %g, exp(nan) = %g\n", n, bad, z, nan);
    return bad != 0 || z != 0.0f || nan == nan;
}
