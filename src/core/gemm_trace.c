/* HRMT_GEMM_TRACE=1: the GEMM driver's per-thread timings (core/gemm_trace.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "core/gemm_trace.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/context.h"

/* Atomic: a traced call may come from any thread (a GEMM inside another
 * op's parallel region adds from that thread). */
struct hrmt_gemm_trace {
    atomic_uint_fast64_t calls, thread_slots, units;
    atomic_uint_fast64_t wall_ns, wake_ns, pack_ns, busy_ns, tail_ns, spread_ns;
};

hrmt_status hrmt_gemm_trace_from_env(hrmt_gemm_trace **out, char *errbuf, size_t errlen) {
    const char *v = getenv("HRMT_GEMM_TRACE");
    *out = NULL;
    if (!v || !strcmp(v, "0")) return HRMT_OK;
    if (strcmp(v, "1") != 0) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "HRMT_GEMM_TRACE='%s' is not 0 or 1", v);
        return HRMT_ERR_INVALID_ARG;
    }
    hrmt_gemm_trace *t = calloc(1, sizeof *t);
    if (!t) {
        if (errbuf && errlen) snprintf(errbuf, errlen, "out of memory for the GEMM trace");
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    *out = t;
    return HRMT_OK;
}

void hrmt_gemm_trace_destroy(hrmt_gemm_trace *t) { free(t); }

uint64_t hrmt_gemm_trace_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t gap(uint64_t a, uint64_t b) { return b > a ? b - a : 0; }

void hrmt_gemm_trace_add(hrmt_gemm_trace *t, uint64_t t0, uint64_t t1,
                         const hrmt_gemm_trace_thread *th, int n) {
    uint64_t wake = 0, pack = 0, busy = 0, tail = 0, units = 0, first = UINT64_MAX, last = 0;
    for (int i = 0; i < n; i++) {
        wake += gap(t0, th[i].in);
        pack += gap(th[i].in, th[i].packed) + th[i].waited;
        busy += th[i].busy;
        tail += gap(th[i].out, t1);
        units += th[i].units;
        if (th[i].out < first) first = th[i].out;
        if (th[i].out > last) last = th[i].out;
    }
    atomic_fetch_add(&t->calls, 1);
    atomic_fetch_add(&t->thread_slots, (uint64_t)n);
    atomic_fetch_add(&t->units, units);
    atomic_fetch_add(&t->wall_ns, gap(t0, t1));
    atomic_fetch_add(&t->wake_ns, wake);
    atomic_fetch_add(&t->pack_ns, pack);
    atomic_fetch_add(&t->busy_ns, busy);
    atomic_fetch_add(&t->tail_ns, tail);
    atomic_fetch_add(&t->spread_ns, n ? gap(first, last) : 0);
}

int hrmt_gemm_trace_read(hrmt_context *ctx, hrmt_gemm_trace_sums *out, int reset) {
    hrmt_gemm_trace *t = ctx ? ctx->gemm_trace : NULL;
    if (!t) return 0;
    if (out) {
        out->calls = atomic_load(&t->calls);
        out->thread_slots = atomic_load(&t->thread_slots);
        out->units = atomic_load(&t->units);
        out->wall_us = (double)atomic_load(&t->wall_ns) / 1e3;
        out->wake_us = (double)atomic_load(&t->wake_ns) / 1e3;
        out->pack_us = (double)atomic_load(&t->pack_ns) / 1e3;
        out->busy_us = (double)atomic_load(&t->busy_ns) / 1e3;
        out->tail_us = (double)atomic_load(&t->tail_ns) / 1e3;
        out->spread_us = (double)atomic_load(&t->spread_ns) / 1e3;
    }
    if (reset) {
        atomic_uint_fast64_t *f[] = {&t->calls,   &t->thread_slots, &t->units,
                                     &t->wall_ns, &t->wake_ns,      &t->pack_ns,
                                     &t->busy_ns, &t->tail_ns,      &t->spread_ns};
        for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) atomic_store(f[i], 0);
    }
    return 1;
}
