/* Status code names. */
#include "hrmt.h"

static const char *const g_status_text[HRMT_STATUS_COUNT] = {
    [HRMT_OK] = "ok",
    [HRMT_ERR_INVALID_ARG] = "invalid argument",
    [HRMT_ERR_OUT_OF_MEMORY] = "out of memory",
    [HRMT_ERR_OVERFLOW] = "size arithmetic overflow",
    [HRMT_ERR_SHAPE] = "tensor shapes do not agree",
    [HRMT_ERR_DTYPE] = "dtype not accepted by this operation",
    [HRMT_ERR_UNSUPPORTED] = "operation not supported by this backend",
    [HRMT_ERR_ISA] = "ISA unknown or not supported by this CPU",
    [HRMT_ERR_NOT_FOUND] = "not found",
    [HRMT_ERR_EXISTS] = "already exists",
    [HRMT_ERR_IO] = "I/O error",
    [HRMT_ERR_NONFINITE] = "NaN or Inf where a finite value is required",
    [HRMT_ERR_CONFIG] = "invalid model configuration",
    [HRMT_ERR_FILE_TRUNCATED] = "safetensors: file truncated",
    [HRMT_ERR_HEADER_SIZE] = "safetensors: header length beyond file or absurd",
    [HRMT_ERR_BAD_JSON] = "safetensors: header is not valid JSON",
    [HRMT_ERR_BAD_DTYPE] = "safetensors: unknown tensor dtype",
    [HRMT_ERR_BAD_OFFSETS] = "safetensors: data offsets out of range or inconsistent",
    [HRMT_ERR_OVERLAP] = "safetensors: tensor data overlaps",
    [HRMT_ERR_MISSING_TENSOR] = "model: required tensor missing",
    [HRMT_ERR_TENSOR_SHAPE] = "model: tensor shape does not match the config",
    [HRMT_ERR_CUDA] = "CUDA call failed",
    [HRMT_ERR_NO_DEVICE] = "no CUDA backend or device",
    [HRMT_ERR_LIMIT] = "a size above its limit (hrmt_limits, docs/LIMITS.md)",
};

const char *hrmt_status_str(hrmt_status s) {
    if ((unsigned)s >= HRMT_STATUS_COUNT || !g_status_text[s]) return "unknown status";
    return g_status_text[s];
}
