/* Status checks of the hand-built GPU check programs in bench/ (each built
 * with nvcc alone, outside CMake): a failed CUDA or cuBLASLt call prints
 * where and why, and the program exits 2. */
#ifndef HRMT_BENCH_CUDA_CHECK_CUH
#define HRMT_BENCH_CUDA_CHECK_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(2);                                                                           \
        }                                                                                      \
    } while (0)
#define LT(x)                                                         \
    do {                                                              \
        cublasStatus_t s_ = (x);                                      \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                            \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, \
                    cublasLtGetStatusString(s_));                     \
            exit(2);                                                  \
        }                                                             \
    } while (0)

#endif
