/* The grid-wide persistent level kernel (model_grid.cu): one cooperative
 * launch per reasoning level instead of ~35 launches, for small batches. */
#ifndef HRMT_CUDA_MODEL_GRID_H
#define HRMT_CUDA_MODEL_GRID_H

#include <stddef.h>

#include "cuda/model_internal.cuh"

/* HRMT_CUDA_GRID=auto runs the kernel up to this batch (where it was faster
 * than the launch-by-launch step on the H200: docs/BENCHMARKS.md). */
#define HRMT_CUDA_GRID_AUTO_MAX_BATCH 16

/* Whether the kernel serves this model on this device: BF16, head_dim 64,
 * hidden a multiple of 128 up to 512, inter a multiple of 128, T <= 96, at
 * most 8 layers per level, its shared memory fits a block and the device
 * has cooperative launches. */
int cu_grid_applies(const hrmt_model *m);
/* Whether the baseline step of batch B runs it (setting and batch). */
int cu_grid_use(const hrmt_model *m, size_t B);
/* One level on B samples: z = level(z + inj), inj = a (+ b when not NULL),
 * the L level's (high 0) or the H level's (high 1) layers; ws and h
 * ([B*T, hidden]) are scratch; *bar must be 0 (one counter per launch). */
hrmt_status cu_grid_level(const hrmt_model *m, int high, void *z, const void *a, const void *b,
                          size_t B, const cu_level_ws *ws, void *h, unsigned *bar);
/* Reads HRMT_CUDA_GRID (0, 1 or auto: the default) and HRMT_CUDA_GRID_TILE
 * (auto, s or l: the GEMM unit size) at model load; anything else is
 * INVALID_ARG. */
hrmt_status cu_grid_setting(hrmt_model *m);

#endif
