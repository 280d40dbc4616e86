/* Layout of struct hrmt_cuda, shared by runtime.cu and gemm_cublaslt.cu only
 * (CUDA C++; core/ sees the type as opaque). */
#ifndef HRMT_CUDA_INTERNAL_CUH
#define HRMT_CUDA_INTERNAL_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cuda/cuda_backend.h"

/* One cached cuBLASLt plan per GEMM problem shape (see gemm_cublaslt.cu). */
#define HRMT_CUDA_GEMM_CACHE 32

typedef struct hrmt_gemm_key {
    size_t m, n, k, lda, ldw, ldc;
    int adt, cdt;                       /* storage dtypes after any widening */
    unsigned align_a, align_w, align_c; /* pointer alignments the algo may assume */
} hrmt_gemm_key;

typedef struct hrmt_gemm_plan {
    int used;
    hrmt_gemm_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    size_t ws_needed;
} hrmt_gemm_plan;

struct hrmt_cuda {
    int device;
    cudaDeviceProp prop;
    cublasLtHandle_t lt;
    void *workspace; /* cuBLASLt workspace, ws_bytes */
    size_t ws_bytes;
    void *scratch; /* GEMM staging (widened operands, F32 C for BF16 outputs), grow-only */
    size_t scratch_bytes;
    void *ids_scratch;   /* one unsigned long long for hrmt_cuda_check_ids */
    uint16_t *silu_bf16; /* HRMT_CUDA_SILU_ENTRIES: BF16 SwiGLU's s(g) */
    hrmt_gemm_plan plans[HRMT_CUDA_GEMM_CACHE];
    unsigned next_plan; /* round-robin replacement */
};

/* cudaError_t -> hrmt_status, message "<what>: <text> (<name>)". */
hrmt_status hrmt_cuda_map(cudaError_t e, const char *what, char *err, size_t errlen);
/* printf-style message into err (NULL or errlen 0: nothing). */
void hrmt_cuda_put_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* cuBLASLt handle and workspace of a new context / their release. */
hrmt_status hrmt_cuda_gemm_init(hrmt_cuda *c, char *err, size_t errlen);
void hrmt_cuda_gemm_fini(hrmt_cuda *c);

#endif
