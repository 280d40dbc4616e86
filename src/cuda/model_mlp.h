/* The block's MLP half (model_mlp.cu) in row chunks sized so that a chunk's
 * gate_up output stays in L2 between its GEMM and the SwiGLU that reads it. */
#ifndef HRMT_CUDA_MODEL_MLP_H
#define HRMT_CUDA_MODEL_MLP_H

#include <stddef.h>

#include "cuda/model_internal.cuh"

/* h = rmsnorm(h + r) over `rows` rows (sram: the row-op table's on-chip
 * variant, same bits). */
hrmt_status cu_resnorm(const hrmt_model *m, void *h, const void *r, size_t rows, int sram);
/* h = rmsnorm(h + SwiGLU(h W_gate_up^T) W_down^T): chunk by chunk (each
 * chunk's gate_up rows written over the start of ws->gu, so they are still
 * in L2 when SwiGLU reads them); every kernel is row-independent, so the
 * bytes are those of one call over all rows. */
hrmt_status cu_mlp(const hrmt_model *m, const hrmt_block_weights *b, void *h, size_t rows,
                   const cu_level_ws *ws, int sram);
/* Reads HRMT_CUDA_MLP_CHUNK at model load: "auto" (the default: rows of a
 * third of L2), "0" (no chunks) or a row count; HRMT_CUDA_MLP_SPAN: "up"
 * (the default: gate_up + SwiGLU chunked, down_proj over all rows) or "mlp"
 * (down_proj and its residual + RMSNorm in the chunks too). Anything else is
 * INVALID_ARG. */
hrmt_status cu_mlp_setting(hrmt_model *m);

#endif
