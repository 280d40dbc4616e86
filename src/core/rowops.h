/* Row-wise kernel family (element-wise and per-row fused ops), one table per
 * backend/ISA. Conventions for every kernel below:
 *  - A kernel processes a range of rows single-threaded; src/core/ops.c splits
 *    rows over OpenMP. The result for a row never depends on which other rows
 *    are in the same call (the model's two schedules must be bit-identical).
 *  - Per-dtype families are arrays indexed by the STORAGE dtype
 *    (HRMT_F32 = 0, HRMT_BF16 = 1); BF16 is passed as uint16_t bit patterns.
 *    Arithmetic is F32; BF16 results are rounded to nearest even (core/bf16.h).
 *  - Leading dims (ld*) are in elements; the last dim is contiguous. Outputs
 *    may alias the inputs of the same shape exactly (in place), never partially.
 *  - `nt` = 1 asks for non-temporal (streaming) stores: the output will not be
 *    read again soon (beyond-cache working sets). Results are the same bits.
 *  - A NULL entry means "not supported" (hrmt_rowops_supports).
 * The scalar table (src/cpu/..._scalar.c, -ffp-contract=off) is the reference;
 * exp is hrmt_expf_fma there (SLEEF's FMA expf bits, portable: softmax, SiLU)
 * and SLEEF's Sleef_expf_u10 for the Engram gate; SIMD and CUDA tables match
 * those bits. */
#ifndef HRMT_CORE_ROWOPS_H
#define HRMT_CORE_ROWOPS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

#define HRMT_ROWOPS_NDT 2 /* storage dtypes with kernels: F32, BF16 */

/* dst = src, n bytes (no overlap). */
typedef void (*hrmt_copy_fn)(void *dst, const void *src, size_t nbytes);
/* Contiguous conversions of n elements (RNE, NaN stays quiet NaN). */
typedef void (*hrmt_cvt_f32_bf16_fn)(uint16_t *dst, const float *src, size_t n);
typedef void (*hrmt_cvt_bf16_f32_fn)(float *dst, const uint16_t *src, size_t n);

/* out = a + b (BF16: bf16(f32(a) + f32(b))). */
typedef void (*hrmt_add_fn)(size_t rows, size_t cols, const void *a, size_t lda, const void *b,
                            size_t ldb, void *out, size_t ldo);

/* out = h * rsqrt(sum(h*h)/cols + eps) [* w], h = f32(x); w F32 [cols] or NULL. */
typedef void (*hrmt_rmsnorm_fn)(size_t rows, size_t cols, const void *x, size_t ldx, const float *w,
                                float eps, void *out, size_t ldo);

/* out = rmsnorm(h), h = x + r (BF16: h = bf16(x + r) first, as PyTorch's add).
 * SRAM form: one pass over memory per row (h is parked in `out`, which stays
 * in L1/L2, then scaled in place). DRAM form: streaming, inputs re-read for the
 * scale pass, optional non-temporal stores. Both give identical bits. */
typedef void (*hrmt_residual_rmsnorm_fn)(size_t rows, size_t cols, const void *x, size_t ldx,
                                         const void *r, size_t ldr, float eps, void *out,
                                         size_t ldo);
typedef void (*hrmt_residual_rmsnorm_stream_fn)(size_t rows, size_t cols, const void *x, size_t ldx,
                                                const void *r, size_t ldr, float eps, void *out,
                                                size_t ldo, int nt);

/* gu [rows, 2*inter] (gate | up) -> out [rows, inter]. F32: g*sigmoid(g)*u.
 * BF16: s = bf16(g*sigmoid(g)), out = bf16(s*u) (PyTorch's bf16 silu, mul). */
typedef void (*hrmt_swiglu_fn)(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                               size_t ldo, int nt);

/* out = exp(scale*x - max(scale*x)) / sum(...), per row. */
typedef void (*hrmt_softmax_fn)(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                void *out, size_t ldo);

/* In-place half-split RoPE on `tokens` rows of x; row t holds `heads` vectors
 * of head_dim at x + t*ld_tok + h*ld_head. cos/sin F32, row t at t*ld_cs
 * (head_dim wide, HF half-duplicated layout). y = x*cos + rotate_half(x)*sin
 * in F32 with rotate_half(x) = cat(-x2, x1), rounded to the storage dtype. */
typedef void (*hrmt_rope_fn)(size_t tokens, size_t heads, size_t head_dim, void *x, size_t ld_tok,
                             size_t ld_head, const float *cos_t, const float *sin_t, size_t ld_cs);

/* The same over `batch` groups of `tokens` rows, group b at x + b*ld_b, all
 * using cos/sin rows 0..tokens-1: device tables only (one launch for a 4-D x;
 * NULL in the CPU tables, whose threads cut the rows at group boundaries). */
typedef void (*hrmt_rope_batched_fn)(size_t batch, size_t tokens, size_t heads, size_t head_dim,
                                     void *x, size_t ld_b, size_t ld_tok, size_t ld_head,
                                     const float *cos_t, const float *sin_t, size_t ld_cs);

/* out[i] = convert(table[ids[i]]) for i < n; ids are already range-checked. */
typedef void (*hrmt_embedding_fn)(size_t n, size_t cols, const void *table, size_t ldt,
                                  const int32_t *ids, void *out, size_t ldo);

/* Engram gate forward over `tokens` tokens, all contiguous: x [T,hc,H],
 * kv [T,hc+1,H] (BF16), wf [hc,H] F32, out [T,hc,H] BF16; dot (raw),
 * gate, rstd_x, rstd_k [T,hc] F32 each optional (NULL). */
typedef void (*hrmt_engram_fwd_fn)(size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                                   const uint16_t *kv, const float *wf, float eps, float clamp,
                                   uint16_t *out, float *dot, float *gate, float *rstd_x,
                                   float *rstd_k, int nt);
/* Engram gate backward over `tokens` tokens (same layouts): writes grad_x
 * [T,hc,H] and grad_kv [T,hc+1,H] (BF16) and ADDS this range's weight
 * gradient into gw [hc,H] F32, tokens in ascending order. */
typedef void (*hrmt_engram_bwd_fn)(size_t tokens, size_t hc, size_t hidden,
                                   const uint16_t *grad_out, const uint16_t *x, const uint16_t *kv,
                                   const float *wf, const float *dot, const float *gate,
                                   const float *rstd_x, const float *rstd_k, float clamp,
                                   uint16_t *grad_x, uint16_t *grad_kv, float *gw);

/* Memory probes: read every byte of [p, p+n) (returns a value that depends on
 * the data so the loads cannot be elided); write every byte with `v`. */
typedef uint64_t (*hrmt_stream_read_fn)(const void *p, size_t nbytes);
typedef void (*hrmt_stream_write_fn)(void *p, size_t nbytes, uint8_t v);

typedef struct hrmt_rowops {
    hrmt_copy_fn copy;
    hrmt_cvt_f32_bf16_fn cvt_f32_bf16;
    hrmt_cvt_bf16_f32_fn cvt_bf16_f32;
    hrmt_add_fn add[HRMT_ROWOPS_NDT];
    hrmt_rmsnorm_fn rmsnorm[HRMT_ROWOPS_NDT];
    hrmt_residual_rmsnorm_fn residual_rmsnorm_sram[HRMT_ROWOPS_NDT];
    hrmt_residual_rmsnorm_stream_fn residual_rmsnorm_dram[HRMT_ROWOPS_NDT];
    hrmt_swiglu_fn swiglu[HRMT_ROWOPS_NDT];
    hrmt_softmax_fn softmax[HRMT_ROWOPS_NDT];
    hrmt_rope_fn rope[HRMT_ROWOPS_NDT];
    hrmt_rope_batched_fn rope_batched[HRMT_ROWOPS_NDT];            /* device tables; may be NULL */
    hrmt_embedding_fn embedding[HRMT_ROWOPS_NDT][HRMT_ROWOPS_NDT]; /* [table dt][out dt] */
    hrmt_engram_fwd_fn engram_fwd;                                 /* BF16 storage only */
    hrmt_engram_bwd_fn engram_bwd;
    hrmt_stream_read_fn stream_read;
    hrmt_stream_write_fn stream_write;
} hrmt_rowops;

int hrmt_rowops_supports(const hrmt_rowops *t, hrmt_op op, hrmt_dtype dtype);

/* 1/sqrt(sumsq/cols + eps) with IEEE sqrt and division, shared by every ISA so
 * that a row's scale factor depends only on its sum of squares. */
static inline float hrmt_rms_inv(float sumsq, size_t cols, float eps) {
    return 1.0f / sqrtf(sumsq / (float)cols + eps);
}

#endif
