/* Internal C interface of the CUDA backend: the .cu files in src/cuda implement it, core/
 * model/ and cli/ call it. Compiled into builds with HRMT_HAVE_CUDA only.
 *
 * Conventions
 *  - Every launch and CUDA call of one context goes to that context's stream
 *    (hrmt_cuda_stream); the row-op launchers of hrmt_rowops_fill_cuda keep the
 *    CPU signatures of core/rowops.h, so they use cudaStreamPerThread, the
 *    calling host thread's stream, which is also what hrmt_cuda_stream returns.
 *  - All pointers passed to launchers are device pointers. A launcher covers
 *    the whole row range in one call (core/ops.c calls it once, not per thread).
 *  - Errors: launchers return void; callers check with hrmt_cuda_check() after
 *    them. Functions returning hrmt_status write a message into err/errlen
 *    (may be NULL/0). Every CUDA status is checked and mapped: allocation
 *    failure -> OUT_OF_MEMORY, no device -> NO_DEVICE, anything else -> CUDA.
 *  - Row ops give the same bits as the CPU scalar table (src/cpu/<family>_scalar.c):
 *    same F32 operation order, SLEEF's expf_u10 algorithm for exp, RNE bf16. */
#ifndef HRMT_CUDA_BACKEND_H
#define HRMT_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "core/rowops.h"
#include "hrmt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Per-context CUDA state: device ordinal, cuBLASLt handle, workspace, props. */
typedef struct hrmt_cuda hrmt_cuda;

/* Opens `device` (ordinal; HRMT_CUDA_DEVICE env var is read by the caller). */
hrmt_status hrmt_cuda_create(int device, hrmt_cuda **out, char *err, size_t errlen);
void hrmt_cuda_destroy(hrmt_cuda *c);
/* The stream every op of this context runs on (cudaStreamPerThread). */
void *hrmt_cuda_stream(const hrmt_cuda *c);
/* Whether the device runs cooperative launches (grid-wide barriers). */
int hrmt_cuda_cooperative(const hrmt_cuda *c);
/* Shared memory per block (opt-in max), per SM, SM count, L2 bytes. */
void hrmt_cuda_limits(const hrmt_cuda *c, size_t *smem_per_block, size_t *smem_per_sm, int *sms,
                      size_t *l2_bytes);

/* Pending launch error (cudaGetLastError) -> status + message "<what>: <cuda text>". */
hrmt_status hrmt_cuda_check(const char *what, char *err, size_t errlen);
/* Waits for the stream; reports asynchronous faults. */
hrmt_status hrmt_cuda_sync(hrmt_cuda *c, char *err, size_t errlen);

/* Device memory (cudaMalloc, 256-byte aligned). */
hrmt_status hrmt_cuda_malloc(hrmt_cuda *c, size_t nbytes, void **out, char *err, size_t errlen);
void hrmt_cuda_free(hrmt_cuda *c, void *p);
/* Copies on the stream and waits: kind 0 host->device, 1 device->host, 2 device->device. */
hrmt_status hrmt_cuda_memcpy(hrmt_cuda *c, void *dst, const void *src, size_t nbytes, int kind,
                             char *err, size_t errlen);

/* Fills every entry of `t` with device launchers (core/rowops.h signatures). */
void hrmt_rowops_fill_cuda(hrmt_rowops *t);

/* BF16 SwiGLU by table (rowops_elem.cu): s(g) = bf16(g / bf16(1 + bf16(exp(-g))))
 * for each of the 65536 BF16 gates, computed on the device by the rowops
 * kernel's own arithmetic when a context is created; the op then looks s up
 * and rounds s * u, which gives the rowops kernel's bits for every input.
 * The launch is asynchronous (errors pending for hrmt_cuda_check). */
#define HRMT_CUDA_SILU_ENTRIES 65536
hrmt_status hrmt_cuda_silu_table_fill(uint16_t *table, char *err, size_t errlen);
/* SwiGLU on c's device, the row-op signature plus the dtype: BF16 through
 * c's table, F32 by the row-op kernel. hrmt_swiglu and the model call this. */
void hrmt_cuda_swiglu(const hrmt_cuda *c, hrmt_dtype dt, size_t rows, size_t inter, const void *gu,
                      size_t ldg, void *out, size_t ldo, int nt);

/* C = A * W^T (accumulate: C += A * W^T) through cuBLASLt: A [m,k] row-major
 * lda, W [n,k] row-major ldw, C [m,n] ldc; F32 (TF32 off) or BF16 tensor
 * cores with F32 accumulation; C F32 or BF16 (rounded once). */
hrmt_status hrmt_cuda_gemm(hrmt_cuda *c, size_t m, size_t n, size_t k, const void *a,
                           hrmt_dtype adt, size_t lda, const void *w, hrmt_dtype wdt, size_t ldw,
                           void *cc, hrmt_dtype cdt, size_t ldc, int accumulate, char *err,
                           size_t errlen);

/* ---- Additions (core/ops*.c, gemm.c and context.c use them) ---------------- */

/* Makes c's device current on the calling thread (cudaSetDevice); every
 * public entry point on a CUDA context calls it first, so contexts on
 * different devices can share a thread. */
hrmt_status hrmt_cuda_activate(hrmt_cuda *c, char *err, size_t errlen);
/* Ordinal and name of c's device (name: static for the context's life). */
int hrmt_cuda_device(const hrmt_cuda *c);
const char *hrmt_cuda_name(const hrmt_cuda *c);
/* 1 when p is memory the device can address (cudaMalloc'ed or managed),
 * 0 when it is not (plain host memory), -1 when the query failed. */
int hrmt_cuda_is_device_ptr(const void *p);
/* Device-to-device copy of nbytes on the stream (asynchronous): a vectorised
 * kernel when both ends and the size are 16-byte multiples, else cudaMemcpyAsync. */
hrmt_status hrmt_cuda_copy_bytes(void *dst, const void *src, size_t nbytes, char *err,
                                 size_t errlen);
/* Device-to-device 2-D copy on the stream (asynchronous): rows of width
 * bytes, pitches in bytes (one contiguous copy when the rows touch). */
hrmt_status hrmt_cuda_memcpy2d(hrmt_cuda *c, void *dst, size_t dpitch, const void *src,
                               size_t spitch, size_t width, size_t rows, char *err, size_t errlen);
/* Sets nbytes at p to `value` on the stream (asynchronous). */
hrmt_status hrmt_cuda_memset(hrmt_cuda *c, void *p, int value, size_t nbytes, char *err,
                             size_t errlen);
/* Embedding ids on the device: *bad = index of the first id outside
 * [0, vocab), or n when all are inside; *bad_value = that id. One check
 * kernel plus a copy of 12 bytes back; waits for the stream. */
hrmt_status hrmt_cuda_check_ids(hrmt_cuda *c, const int32_t *ids, size_t n, size_t vocab,
                                size_t *bad, int32_t *bad_value, char *err, size_t errlen);
/* out[i] = sum over c < nchunks, in increasing c, of partial[c * width + i]
 * (F32, the CPU's chunk reduction order, so the same bits). Asynchronous. */
hrmt_status hrmt_cuda_sum_chunks_f32(hrmt_cuda *c, const float *partial, size_t nchunks,
                                     size_t width, float *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
