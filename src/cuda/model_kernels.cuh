/* The step's small kernels (model_kernels.cu). */
#ifndef HRMT_CUDA_MODEL_KERNELS_CUH
#define HRMT_CUDA_MODEL_KERNELS_CUH

#include "cuda/model_internal.cuh"

/* Halted samples: z = inits, steps = 0, new inputs / puzzle ids taken. */
hrmt_status cu_reset(const hrmt_model *m, const hrmt_carry *c, int has_pids);
/* x = input embeddings of the carry's current inputs. */
hrmt_status cu_embed(const hrmt_model *m, const hrmt_carry *c);
/* cu_reset then cu_embed as one kernel, same values (*done = 1), where the
 * eight-wide kernels apply; else nothing is launched (*done = 0). inject
 * (BF16 models only): the first L level's injection z_L = z_L + (z_H + x)
 * too. */
hrmt_status cu_reset_embed(const hrmt_model *m, const hrmt_carry *c, int has_pids, int inject,
                           int *done);
/* q += bias (rounded to the forward dtype), steps += 1, halting rule. */
hrmt_status cu_finish(const hrmt_model *m, const hrmt_carry *c, int early_halt);

#endif
