/* Fuzz target: loading a model file as `hrmt run --model FILE` does without
 * --config (hrmt_model_load with the architecture from the file's
 * __metadata__ "arch"): reader, config, tensor lookup, shapes, conversion. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hrmt_context *ctx = fuzz_context();
    hrmt_model *m = NULL;
    hrmt_status s = hrmt_model_load(ctx, fuzz_input_path(data, size), NULL, &m);
    if (s == HRMT_OK) {
        const hrmt_model_config *c = hrmt_model_get_config(m);
        if (!c || hrmt_model_config_validate(NULL, c) != HRMT_OK)
            fuzz_fail("model", "loaded a model whose config does not validate");
        hrmt_model_destroy(m);
    } else {
        if (m) fuzz_fail("model", "a failed load returned a model");
        fuzz_check_error("model", ctx);
    }
    return 0;
}
