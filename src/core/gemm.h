/* Internal GEMM entry points for the model and other library code:
 *     C[M,N] (+)= A[M,K] * W[N,K]^T
 * on raw pointers (leading dimensions in elements), with W packed once by
 * hrmt_gemm_pack_w / hrmt_gemm_pack_w_raw. The public tensor API in hrmt.h
 * validates descriptors and lands here.
 *
 * Bits: every C element is the same F32 chain over k (in increasing order
 * for F32 W, in odd-first pairs for BF16 W) whatever M, N, the M split
 * across calls, the thread count or the blocking (see core/gemm_kernels.h),
 * so any two schedules that feed the same rows get the same bytes. BF16 A x
 * BF16 W gives the same bits on every ISA; other combinations round per ISA
 * (fused or not), each deterministic. */
#ifndef HRMT_CORE_GEMM_H
#define HRMT_CORE_GEMM_H

#include <stddef.h>

#include "core/gemm_kernels.h"
#include "hrmt.h"

/* Layout of a packed W (see core/gemm_pack.c). */
typedef enum hrmt_gemm_pack_fmt {
    HRMT_GEMM_PACK_F32 = 0,    /* F32, per k NR columns */
    HRMT_GEMM_PACK_BF16X2 = 1, /* BF16, per k pair NR columns x 2 (for vdpbf16ps) */
} hrmt_gemm_pack_fmt;

struct hrmt_packed_w {
    size_t n, k;         /* W is [n, k] */
    size_t nr;           /* panel width (the ISA's NR) */
    size_t k_unit;       /* 1 (F32 W) or 2 (BF16 W): K padded to and blocked in multiples */
    size_t kc;           /* K block; the last block holds the rest */
    size_t n_pad, k_pad; /* n rounded up to nr, k rounded up to k_unit */
    size_t nblk;         /* number of K blocks */
    size_t esz;          /* bytes per packed element (4 or 2) */
    hrmt_gemm_pack_fmt fmt;
    hrmt_dtype src_dtype; /* dtype W had */
    hrmt_isa isa;         /* table it was packed for */
    void *data;           /* 64-byte aligned, zero padded */
    size_t bytes;
};

/* Packed panel j (NR columns from j*nr) of K block p, and that block's depth. */
const void *hrmt_gemm_packed_panel(const hrmt_packed_w *w, size_t p, size_t j, size_t *kc_p);

/* Packs W [n, k] (row stride ldw elements, F32 or BF16) for ctx's ISA. */
hrmt_status hrmt_gemm_pack_w_raw(hrmt_context *ctx, size_t n, size_t k, const void *w,
                                 hrmt_dtype w_dt, size_t ldw, hrmt_packed_w **out);

/* Shape of a packed W. */
void hrmt_packed_w_shape(const hrmt_packed_w *w, size_t *n, size_t *k);

/* C = A * W^T (accumulate: C += A * W^T, BF16 C: bf16(f32(C) + sum)) with
 * ctx->threads OpenMP threads. A, C F32 or BF16; lda >= K, ldc >= N. */
hrmt_status hrmt_gemm_raw(hrmt_context *ctx, size_t M, size_t N, size_t K, const void *A,
                          hrmt_dtype a_dt, size_t lda, const hrmt_packed_w *W, void *C,
                          hrmt_dtype c_dt, size_t ldc, int accumulate);

/* The same with an explicit thread count. threads == 1 runs on the calling
 * thread without an OpenMP region, so a caller that parallelises outside can
 * call it from its own threads (each with its own C rows; the same ctx may be
 * shared: only failures write to it). `scratch` (64-byte aligned, may be NULL:
 * then it is malloc'ed) must hold hrmt_gemm_scratch_bytes(...) bytes. */
hrmt_status hrmt_gemm_raw_ex(hrmt_context *ctx, int threads, size_t M, size_t N, size_t K,
                             const void *A, hrmt_dtype a_dt, size_t lda, const hrmt_packed_w *W,
                             void *C, hrmt_dtype c_dt, size_t ldc, int accumulate, void *scratch,
                             size_t scratch_bytes);

/* Scratch hrmt_gemm_raw_ex needs for this problem and thread count (packed A
 * block, partial sums, converted W panel, for every thread); 0 on bad input. */
size_t hrmt_gemm_scratch_bytes(const hrmt_context *ctx, int threads, size_t M, size_t N, size_t K,
                               hrmt_dtype a_dt, const hrmt_packed_w *W, hrmt_dtype c_dt,
                               int accumulate);

#endif
