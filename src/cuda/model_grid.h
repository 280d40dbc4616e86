/* The grid-wide persistent level kernel (model_grid.cu): one cooperative
 * launch per reasoning level instead of ~35 launches. */
#ifndef HRMT_CUDA_MODEL_GRID_H
#define HRMT_CUDA_MODEL_GRID_H

#include <stddef.h>

#include "cuda/model_internal.cuh"

/* Whether the kernel serves this model on this device: BF16, head_dim 64,
 * hidden a multiple of 128 up to 512, inter a multiple of 128, T <= 96, at
 * most 8 layers per level, its shared memory fits a block and the device
 * has cooperative launches. */
int cu_grid_applies(const hrmt_model *m);
/* Whether the baseline step runs it (HRMT_CUDA_GRID=1 and it applies). */
int cu_grid_use(const hrmt_model *m);
/* One level on B samples: z = level(z + inj), inj = a (+ b when not NULL),
 * the L level's (high 0) or the H level's (high 1) layers; ws and h
 * ([B*T, hidden]) are scratch; *bar must be 0 (one counter per launch). */
hrmt_status cu_grid_level(const hrmt_model *m, int high, void *z, const void *a, const void *b,
                          size_t B, const cu_level_ws *ws, void *h, unsigned *bar);
/* Reads HRMT_CUDA_GRID (0: the default, or 1; opt-in because on the H200 it
 * is slower than launch by launch at every batch, docs/CUDA-KERNELS.md),
 * HRMT_CUDA_GRID_TILE (auto, s or l: the GEMM unit size) and
 * HRMT_CUDA_GRID_TRACE (0 or 1: per-stage times printed by the device) at
 * model load; anything else is INVALID_ARG. */
hrmt_status cu_grid_setting(hrmt_model *m);

#endif
