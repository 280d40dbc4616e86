/* The last step of the softmax sum every table shares. The sum runs in 8 lane
 * accumulators (element j into lane j % 8, in increasing j), which PyTorch
 * 1.13's vec::reduce_all (AVX2 Vectorized<float>) then folds by halves,
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)); a row shorter than one
 * vector it sums left to right (tests/test_torch_rowops.c checks the bits
 * against PyTorch's own softmax). */
#ifndef HRMT_CPU_SOFTMAX_ORDER_H
#define HRMT_CPU_SOFTMAX_ORDER_H

#include <stddef.h>

static inline float hrmt_softmax_fold8(const float l[8], size_t cols) {
    if (cols < 8) {
        float s = l[0];
        for (size_t j = 1; j < cols; j++) s += l[j];
        return s;
    }
    const float h0 = l[0] + l[4], h1 = l[1] + l[5], h2 = l[2] + l[6], h3 = l[3] + l[7];
    return (h0 + h2) + (h1 + h3);
}

#endif
