/* Names of the step parts of hrmt_step_timing.part_us. */
#include "hrmt.h"

const char *hrmt_step_part_name(hrmt_step_part p) {
    static const char *const names[HRMT_PART_COUNT] = {
        "embed", "add", "qkv", "attention", "o_proj", "norm", "gate_up", "swiglu", "down", "heads"};
    return (unsigned)p < HRMT_PART_COUNT ? names[p] : NULL;
}
