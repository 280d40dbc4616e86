/* Software prefetch into L2 a fixed distance ahead of a streaming read.
 * The hardware prefetchers stop at 4 KiB page ends and retrain on every new
 * stream, so kernels that hop between rows (engram: x, k and v rows of
 * 8 KiB; swiglu: the gate and up halves of a row) leave too few reads in
 * flight for one core to stream from DRAM; prefetching 32 KiB ahead lifted
 * engram's one-thread DRAM bandwidth from ~0.70 to ~1.0 of a copy's
 * (bench/hrmt-bench-ops). The address may lie past the array: a prefetch
 * never faults, and it is formed as an integer so no pointer leaves its
 * object. x86 only (SSE). */
#ifndef HRMT_CPU_PREFETCH_X86_H
#define HRMT_CPU_PREFETCH_X86_H

#include <stddef.h>
#include <stdint.h>
#include <xmmintrin.h>

#define HRMT_PF_AHEAD ((size_t)32768) /* bytes */

static inline __attribute__((always_inline)) void hrmt_prefetch_l2(const void *p, size_t ahead) {
    _mm_prefetch((const char *)(uintptr_t)((uintptr_t)p + ahead), _MM_HINT_T1);
}

#endif
