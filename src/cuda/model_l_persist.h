/* The tiered schedule's persistent L-level kernel (model_l_persist.cu). */
#ifndef HRMT_CUDA_MODEL_L_PERSIST_H
#define HRMT_CUDA_MODEL_L_PERSIST_H

#include <stddef.h>

#include "model/model.h"

/* Whether the kernel serves this model on this device: BF16, head_dim 64,
 * hidden a multiple of 128 up to 512, inter a multiple of 64, T <= 96, at
 * most 8 L layers, and its shared memory fits a block. */
int cu_l_persist_applies(const hrmt_model *m);
/* All L_cycles x L_layers of one H cycle for samples 0..B-1: z_L [B*T, H]
 * updated in place from zH and x (the injection zH + x); qkv_scratch holds
 * at least min(B, SMs) x T x 3H elements, act_scratch min(B, SMs) x T x I. */
hrmt_status cu_l_persist(const hrmt_model *m, void *zL, const void *zH, const void *x, size_t B,
                         void *qkv_scratch, void *act_scratch);

/* Reads HRMT_CUDA_L_PERSIST at model load (1: the kernel where it applies;
 * unset or 0: the tile-by-tile schedule; anything else: INVALID_ARG). */
hrmt_status cu_l_persist_setting(hrmt_model *m);

#endif
