/* The model's step clock (hrmt_step_timing) and per-part step timing
 * (part_us): a clock read before and after each part of the forward, only
 * while a step is being timed. The including file defines _POSIX_C_SOURCE
 * (clock_gettime) before any header. */
#ifndef HRMT_MODEL_PART_CLOCK_H
#define HRMT_MODEL_PART_CLOCK_H

#include <time.h>

#include "model/model.h"

/* Monotonic microseconds. */
static inline double hrmt_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* 0 when the step is not timed (no clock read). */
static inline double hrmt_part_begin(const hrmt_level_ws *ws) {
    return ws->part_us ? hrmt_now_us() : 0.0;
}

/* Adds the time since t0 to part p. Atomic: the tiered schedule's tiles run
 * on several threads that share one step's counters. */
static inline void hrmt_part_end(const hrmt_level_ws *ws, hrmt_step_part p, double t0) {
    if (!ws->part_us) return;
    const double d = hrmt_now_us() - t0;
    double *slot = &ws->part_us[p];
#pragma omp atomic
    *slot += d;
}

#endif
