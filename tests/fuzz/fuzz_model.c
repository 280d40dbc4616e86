/* Fuzz target: loading a model file as `hrmt run --model FILE` does without
 * --config (hrmt_model_load with the architecture from the file's
 * __metadata__ "arch"): reader, config, limits, tensor lookup, shapes,
 * conversion. A loaded model's config must validate, and every weight it took
 * (found here by the official names and prefix order) must be finite, and
 * within bfloat16's range for a bfloat16 model (NaN/Inf refused at load). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/safetensors.h"
#include "fuzz_common.h"

/* Largest float that rounds to a finite bfloat16 (0x7f7f8000 rounds to Inf). */
#define BF16_FINITE_MAX 3.3895313892515355e38f

static void check_weight(const hrmt_st_file *f, const char *name, int bf16) {
    static const char *const prefixes[] = {"model.inner.", "_orig_mod.model.inner.", "_orig_mod.",
                                           ""};
    const hrmt_st_tensor *t = NULL;
    char full[256];
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !t; i++) {
        snprintf(full, sizeof full, "%s%s", prefixes[i], name);
        t = hrmt_st_find(f, full);
    }
    if (!t) fuzz_fail("model", "loaded a model without one of its weights");
    if (t->dtype != HRMT_F32 && t->dtype != HRMT_BF16)
        fuzz_fail("model", "loaded a weight that is neither F32 nor BF16");
    const uint8_t *p = t->data;
    for (size_t i = 0; i < t->numel; i++) {
        uint32_t u = t->dtype == HRMT_BF16
                         ? (uint32_t)p[2 * i] << 16 | (uint32_t)p[2 * i + 1] << 24
                         : (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                               (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
        float v;
        memcpy(&v, &u, 4);
        if (!isfinite(v)) fuzz_fail("model", "loaded a NaN or Inf weight");
        if (bf16 && fabsf(v) > BF16_FINITE_MAX)
            fuzz_fail("model", "loaded a weight that overflows bfloat16");
    }
}

static void check_weights(const hrmt_model_config *c, const uint8_t *data, size_t size) {
    hrmt_st_file *f = NULL;
    if (hrmt_st_open_memory(NULL, data, size, &f) != HRMT_OK)
        fuzz_fail("model", "loaded a file the safetensors reader refuses");
    int bf16 = c->forward_dtype == HRMT_BF16;
    static const char *const always[] = {"embed_tokens.embedding_weight",
                                         "H_init",
                                         "L_init",
                                         "q_head.weight",
                                         "q_head.bias",
                                         "lm_head.weight"};
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++) check_weight(f, always[i], bf16);
    if (c->puzzle_emb_ndim > 0) check_weight(f, "puzzle_emb.weights", bf16);
    if (c->pos_encodings == HRMT_POS_LEARNED) check_weight(f, "embed_pos.embedding_weight", bf16);
    static const char *const block[] = {"self_attn.qkv_proj.weight", "self_attn.o_proj.weight",
                                        "mlp.gate_up_proj.weight", "mlp.down_proj.weight"};
    for (int level = 0; level < 2; level++) {
        int layers = level ? c->L_layers : c->H_layers;
        for (int l = 0; l < layers; l++)
            for (size_t k = 0; k < sizeof block / sizeof block[0]; k++) {
                char name[128];
                snprintf(name, sizeof name, "%s.layers.%d.%s", level ? "L_level" : "H_level", l,
                         block[k]);
                check_weight(f, name, bf16);
            }
    }
    hrmt_st_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hrmt_context *ctx = fuzz_context();
    hrmt_model *m = NULL;
    hrmt_status s = hrmt_model_load(ctx, fuzz_input_path(data, size), NULL, &m);
    if (s == HRMT_OK) {
        const hrmt_model_config *c = hrmt_model_get_config(m);
        if (!c || hrmt_model_config_validate(NULL, c) != HRMT_OK)
            fuzz_fail("model", "loaded a model whose config does not validate");
        check_weights(c, data, size);
        hrmt_model_destroy(m);
    } else {
        if (m) fuzz_fail("model", "a failed load returned a model");
        fuzz_check_error("model", ctx);
    }
    return 0;
}
