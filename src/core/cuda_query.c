/* CUDA availability when the CUDA backend is not compiled in. */
#include <string.h>

#include "hrmt.h"

#if !defined(HRMT_HAVE_CUDA)
hrmt_status hrmt_cuda_query(hrmt_cuda_info *out) {
    if (!out) return HRMT_ERR_INVALID_ARG;
    memset(out, 0, sizeof *out);
    return HRMT_OK;
}
#endif
