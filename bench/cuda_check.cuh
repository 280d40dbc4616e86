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

/* The device's clock in ns (%globaltimer), for the programs' timelines and
 * spins. */
__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Whether device 0 is compute capability 9.0, which the sm_90a programs are
 * built for (the property in *prop); says so when not. */
inline bool sm90_device(cudaDeviceProp *prop) {
    CK(cudaGetDeviceProperties(prop, 0));
    if (prop->major == 9 && prop->minor == 0) return true;
    printf("%s: compute capability %d.%d; this program is built for 9.0 (sm_90a)\n", prop->name,
           prop->major, prop->minor);
    return false;
}

/* Graph replays (the chains of bench/cuda_link_latency.cu and
 * cuda_handoff_latency.cu): `warm` launches, then ms per launch over `reps`
 * launches, best of `rounds`. */
inline double graph_best_ms(cudaGraphExec_t ge, cudaStream_t st, int warm, int reps, int rounds) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < warm; i++) CK(cudaGraphLaunch(ge, st));
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < reps; i++) CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        const double per = (double)ms / reps;
        best = per < best ? per : best;
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return best;
}

#endif
