/* Fuzz target: the architecture JSON reader (hrmt_model_config_load_json on a
 * file, as --config is read); an accepted config must pass validation. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hrmt_context *ctx = fuzz_context();
    hrmt_model_config cfg;
    hrmt_status s = hrmt_model_config_load_json(ctx, fuzz_input_path(data, size), &cfg);
    if (s == HRMT_OK) {
        if (hrmt_model_config_validate(NULL, &cfg) != HRMT_OK)
            fuzz_fail("config", "accepted a config that does not validate");
    } else {
        fuzz_check_error("config", ctx);
    }
    return 0;
}
