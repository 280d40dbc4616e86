/* Thread timings of the CPU GEMM driver's parallel calls (HRMT_GEMM_TRACE=1):
 * where a call's wall time goes across its team, to see why a GEMM scales
 * poorly on many cores (waking threads, packing A, the units themselves, or
 * threads idle at the end while a slower one finishes). A diagnostic: off by
 * default, and nothing is timed when off. */
#ifndef HRMT_CORE_GEMM_TRACE_H
#define HRMT_CORE_GEMM_TRACE_H

#include <stdint.h>

#include "hrmt.h"

typedef struct hrmt_gemm_trace hrmt_gemm_trace; /* the context's accumulator */

/* Sums over the traced calls since the last reset. Per thread slot (a thread
 * that had units in a call): wake = region start to the thread's entry, pack
 * = packing A with the team and waiting for a unit's rows to be packed,
 * busy = inside its units,
 * tail = its last unit's end to the region's end. wall and spread (the last
 * thread's finish minus the first's) are per call. Microseconds. */
typedef struct hrmt_gemm_trace_sums {
    uint64_t calls, thread_slots, units;
    double wall_us, wake_us, pack_us, busy_us, tail_us, spread_us;
} hrmt_gemm_trace_sums;

/* One thread's times in one call, on CLOCK_MONOTONIC (ns). */
typedef struct hrmt_gemm_trace_thread {
    uint64_t in, packed, out, busy, units, waited; /* waited: for packed rows */
} hrmt_gemm_trace_thread;

/* HRMT_GEMM_TRACE ("0", unset: *out = NULL; "1": a new accumulator; anything
 * else: INVALID_ARG with the message in errbuf). */
hrmt_status hrmt_gemm_trace_from_env(hrmt_gemm_trace **out, char *errbuf, size_t errlen);
void hrmt_gemm_trace_destroy(hrmt_gemm_trace *t);
uint64_t hrmt_gemm_trace_now_ns(void);
/* Adds one parallel call: region from t0 to t1, th[0..n) its threads with units. */
void hrmt_gemm_trace_add(hrmt_gemm_trace *t, uint64_t t0, uint64_t t1,
                         const hrmt_gemm_trace_thread *th, int n);
/* 0 when ctx does not trace; else 1 with the sums in *out (may be NULL), then
 * zeroed when reset is set. One caller at a time per context, like its ops. */
int hrmt_gemm_trace_read(hrmt_context *ctx, hrmt_gemm_trace_sums *out, int reset);

#endif
