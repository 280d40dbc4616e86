/* The HRM model on a CUDA context (src/cuda/model_*.cu). model/ calls these
 * only when ctx->backend_kind == HRMT_BACKEND_CUDA, in builds with
 * HRMT_HAVE_CUDA; everything else about the model stays in model/.
 *
 * Weights live on the device in the forward dtype (W [n, k] row-major, no
 * packing); the carry's state and scratch live on the device, with host
 * mirrors of `steps` and `halted` (the ACT bookkeeping reads them). A step
 * uploads the inputs once and downloads the requested outputs once. */
#ifndef HRMT_CUDA_MODEL_CUDA_H
#define HRMT_CUDA_MODEL_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif

/* model.h is a C header without its own extern "C". */
#include "hrmt.h"
#include "model/model.h"

/* Converts an F32 [n, k] weight to the forward dtype and uploads it (l->dev). */
hrmt_status hrmt_cuda_model_linear(hrmt_model *m, const float *w, size_t n, size_t k,
                                   hrmt_linear *out);
void hrmt_cuda_linear_free(hrmt_model *m, hrmt_linear *l);
/* Uploads the embeddings, initial states and RoPE tables once they are filled. */
hrmt_status hrmt_cuda_model_upload(hrmt_model *m);
/* Frees what hrmt_cuda_model_upload made (the linears go with linear_free). */
void hrmt_cuda_model_free(hrmt_model *m);

/* hrmt_model_uses for a model with device tables (model_settings.cu). */
int hrmt_cuda_model_uses(const hrmt_model *m, hrmt_model_path p);

hrmt_status hrmt_cuda_carry_create(hrmt_model *m, int batch, hrmt_carry **out);
void hrmt_cuda_carry_destroy(hrmt_carry *c);

/* hrmt_act_step after its argument checks (hrmt_act_step made them). */
hrmt_status hrmt_cuda_act_step(hrmt_model *m, hrmt_carry *c, const int32_t *inputs,
                               const int32_t *puzzle_ids, const hrmt_step_options *o,
                               hrmt_step_outputs *outs, hrmt_step_timing *timing);

#ifdef __cplusplus
}
#endif
#endif
