/* hrmt-bench-amx-ukr: the amx table's 32 x 32 GEMM micro-kernel alone, on one
 * A sliver and one W panel that stay in L1, to see what a call costs beyond
 * its tile products (docs/AMX.md):
 *
 *   partial    the sums go back to the partial tile (a K block that is not
 *              the last): products, tile loads, four tile stores;
 *   final      the last K block, the finished tile written to BF16 C before
 *              the call returns;
 *   deferred   the same, but the write waits for the next call and runs under
 *              its products (what the GEMM driver does);
 *   a_from_l2  partial, each call on the next of 24 A slivers (24 x 32 x kc
 *              BF16: 384 KiB at kc 256, out of L1, in L2), W in L1;
 *   w_from_l2  partial, A in L1, each call on the next of 24 W panels: as the
 *              driver's loops feed the kernel, one operand always comes from
 *              L2; these two say what that costs.
 *
 * The three alternate in rounds (a busy or throttled machine hits all alike);
 * per variant the best and the median round are printed, ns per call and
 * GFLOP/s. kc is 256 (the driver's K block on 48 KiB of L1) unless given.
 *
 * --threads N runs every round on N threads at once, each on operands of its
 * own (a round's time: the threads' mean): what one core's TMUL sustains
 * while N cores use theirs, the ceiling a parallel GEMM's per-core rate
 * meets (docs/AMX.md). The default, 1, is the single-thread table.
 *
 * Usage: hrmt-bench-amx-ukr [--kc N] [--rounds R] [--ms T] [--threads N]
 * Exit 0; 77 where the amx table is not in use (no AMX, or not allowed). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "core/context.h"
#include "core/gemm_kernels.h"
#include "hrmt.h"

enum { V_PARTIAL, V_FINAL, V_DEFERRED, V_A_L2, V_W_L2, NV };
static const char *const k_names[NV] = {"partial", "final", "deferred", "a_from_l2", "w_from_l2"};
#define L2_SET 24 /* slivers or panels cycled through by a_from_l2 / w_from_l2 */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ns per call of variant v, timed over >= ms milliseconds. */
static double time_variant(const hrmt_gemm_kernels *t, int v, size_t kc, const void *a,
                           const void *b, float *partial, uint16_t *c, hrmt_gemm_deferred *deferred,
                           double ms) {
    hrmt_gemm_ukr_out o;
    memset(&o, 0, sizeof o);
    o.partial = partial;
    o.ld_partial = 32;
    o.final = v == V_FINAL || v == V_DEFERRED;
    o.c = c;
    o.ldc = 32;
    o.c_dt = HRMT_BF16;
    o.m = 32;
    o.n = 32;
    deferred->next = 2;
    o.deferred = v == V_DEFERRED ? deferred : NULL;
    t->tile_begin();
    long calls = 0;
    const double t0 = now_s();
    double t1;
    const size_t step = (size_t)32 * kc * 2; /* bytes of one sliver or panel */
    const size_t a_step = v == V_A_L2 ? step : 0, b_step = v == V_W_L2 ? step : 0;
    do {
        for (int r = 0; r < 256; r++)
            t->bf16_tile.run(kc, (const char *)a + (size_t)(r % L2_SET) * a_step,
                             (const char *)b + (size_t)(r % L2_SET) * b_step, &o);
        calls += 256;
        t1 = now_s();
    } while (t1 - t0 < ms * 1e-3);
    t->tile_end(deferred);
    return (t1 - t0) / (double)calls * 1e9;
}

int main(int argc, char **argv) {
    size_t kc = 256;
    int rounds = 9, threads = 1;
    double ms = 100.0;
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--kc"))
            kc = (size_t)strtoul(v, &end, 10);
        else if (!strcmp(a, "--rounds"))
            rounds = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--ms"))
            ms = strtod(v, &end);
        else if (!strcmp(a, "--threads"))
            threads = (int)strtol(v, &end, 10);
        if (!end || end == v || *end) {
            fprintf(stderr,
                    "usage: hrmt-bench-amx-ukr [--kc N] [--rounds R] [--ms T] [--threads N]\n");
            return 2;
        }
        i++;
    }
    if (kc < 32 || kc > 4096 || kc % 32 || rounds < 1 || rounds > 1000 || !(ms > 0 && ms < 1e5) ||
        threads < 1 || threads > 1024) {
        fprintf(stderr,
                "hrmt-bench-amx-ukr: kc a multiple of 32 in [32, 4096], rounds in "
                "[1, 1000], ms in (0, 1e5), threads in [1, 1024]\n");
        return 2;
    }
    hrmt_context *ctx = NULL;
    hrmt_context_options opts = hrmt_context_default_options();
    opts.num_threads = 1;
    char err[256];
    if (hrmt_context_create(&opts, &ctx, err, sizeof err) != HRMT_OK) {
        fprintf(stderr, "hrmt-bench-amx-ukr: %s\n", err);
        return 1;
    }
    const hrmt_gemm_kernels *t = &ctx->be->gemm;
    if (!t->bf16_tile.run) {
        printf("hrmt-bench-amx-ukr: table %s has no AMX kernel: nothing to measure\n",
               hrmt_isa_name(hrmt_context_isa(ctx)));
        hrmt_context_destroy(ctx);
        return 77;
    }
    /* Per thread: a sliver and W panel of kc (any bf16 values: the time does
     * not depend on them), room for the L2 variants' sets; the partial tile,
     * C and the deferred tile. Each piece a multiple of 64 bytes. */
    const size_t bytes = 32 * kc * 2 * L2_SET;
    const size_t tile_f32 = (size_t)32 * 32 * sizeof(float),
                 tile_bf16 = (size_t)32 * 32 * sizeof(uint16_t);
    const size_t per = 2 * bytes + tile_f32 + tile_bf16 + sizeof(hrmt_gemm_deferred);
    if (per * (size_t)threads > ((size_t)1 << 30)) {
        fprintf(stderr, "hrmt-bench-amx-ukr: %d threads at kc %zu need %zu MiB; at most 1024\n",
                threads, kc, per * (size_t)threads >> 20);
        hrmt_context_destroy(ctx);
        return 2;
    }
    char *mem = aligned_alloc(64, per * (size_t)threads);
    double *ns = calloc((size_t)rounds * NV, sizeof *ns);
    if (!mem || !ns) {
        fprintf(stderr, "hrmt-bench-amx-ukr: out of memory\n");
        free(mem);
        free(ns);
        hrmt_context_destroy(ctx);
        return 1;
    }
    int ran = 1;
#pragma omp parallel num_threads(threads)
    {
        char *my = mem + per * (size_t)omp_get_thread_num();
        uint16_t *a = (uint16_t *)(void *)my, *b = (uint16_t *)(void *)(my + bytes);
        float *partial = (float *)(void *)(my + 2 * bytes);
        uint16_t *c = (uint16_t *)(void *)(my + 2 * bytes + tile_f32);
        hrmt_gemm_deferred *d =
            (hrmt_gemm_deferred *)(void *)(my + 2 * bytes + tile_f32 + tile_bf16);
        for (size_t i = 0; i < bytes / 2; i++) {
            a[i] = (uint16_t)(0x3f80u + i % 97);
            b[i] = (uint16_t)(0x3f00u + i % 89);
        }
#pragma omp single
        ran = omp_get_num_threads();
        for (int r = 0; r < rounds; r++)
            for (int v = 0; v < NV; v++) {
                /* The threads start each round together; its time is their mean. */
#pragma omp barrier
                const double x = time_variant(t, v, kc, a, b, partial, c, d, ms);
#pragma omp atomic
                ns[v * rounds + r] += x;
            }
    }
    for (size_t i = 0; i < (size_t)rounds * NV; i++) ns[i] /= ran;
    printf("hrmt-bench-amx-ukr: %s, kc %zu, %d rounds of >= %.0f ms per variant, %d thread%s\n",
           t->bf16_tile.name, kc, rounds, ms, ran,
           ran == 1 ? "" : "s at once (each on its own operands; ns: their mean)");
    printf("%-10s %10s %10s %12s\n", "variant", "best ns", "median ns",
           ran == 1 ? "best GFLOP/s" : "GFLOP/s/thr");
    const double flop = 2.0 * 32 * 32 * (double)kc;
    for (int v = 0; v < NV; v++) {
        double *x = ns + (size_t)v * (size_t)rounds;
        qsort(x, (size_t)rounds, sizeof *x, cmp_dbl);
        printf("%-10s %10.1f %10.1f %12.0f\n", k_names[v], x[0], x[rounds / 2], flop / x[0]);
    }
    free(ns);
    free(mem);
    hrmt_context_destroy(ctx);
    return 0;
}
