/* The pointer chase behind hrmt_probe_latency, without a context, for the
 * topology calibration. */
#ifndef HRMT_CORE_PROBE_CHASE_H
#define HRMT_CORE_PROBE_CHASE_H

#include <stddef.h>

#include "hrmt.h"

/* ns per dependent load over `bytes` (fastest of two short trials, ~10 ms
 * each at most). Errors: INVALID_ARG (NULL, below two 64-byte nodes),
 * OUT_OF_MEMORY. */
hrmt_status hrmt_chase_ns(size_t bytes, double *ns);

#endif
