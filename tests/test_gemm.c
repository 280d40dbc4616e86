/* GEMM C[M,N] (+)= A[M,K] * W[N,K]^T on the ISA in HRMT_ISA.
 *
 * References (never the code under test):
 *  - F32: a float64 recomputation. Each element is one F32 chain of K
 *    products, so |C - ref| <= gamma_(K+1) * sum_k |a_k w_k|, gamma_n = n u /
 *    (1 - n u), u = 2^-24: a bound proportional to K. BF16 C adds one
 *    rounding: + 2^-8 * |C|.
 *  - BF16 A and W: the scalar table's result, bit for bit, and an F32
 *    emulation of the promised chain (k = 1, 0, 3, 2, ...). Products of two
 *    bf16 are exact in F32, so a chain of fused multiply-adds (AVX2, AVX-512
 *    F32 kernels, on pair-swapped panels and slivers) equals the scalar
 *    table's multiply then add; the AVX512_BF16 kernel's vdpbf16ps adds the
 *    two products of a pair one after the other, each rounded, the odd k
 *    first: the same chain again. (vdpbf16ps flushes denormal inputs
 *    and results to zero, so the bound there is "identical for data whose
 *    products and partial sums stay normal", which the test data does: bf16
 *    inputs in [-1, 1) give products >= 2^-46 or zero.) Each result is also
 *    checked against float64 with the bound above.
 *
 * Shapes: every M in {1, 3, 17, 82, 656}, N in {1, 11, 512, 1536, 3072} and
 * K in {1, 63, 512, 1536} appears with every N and every K. The full cross
 * product is taken for M <= 17; M = 82 takes every (N, K) with N*K <= 1536*512
 * (so N = 3072 with K <= 63 and K = 1536 with N <= 512); M = 656 takes
 * N in {1, 11, 512} x K in {1, 63} plus (11, 1536), (512, 512), (1536, 63)
 * and (3072, 1). The largest products would make the float64 reference and
 * the scalar table under ASan dominate the run time (ctest runs this binary
 * once per ISA) without reaching code the smaller ones miss: several K blocks,
 * several N units and MC splits (the blocking test shrinks MC), and every
 * edge are already crossed. Leading dimensions are never the row length. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/bf16.h"
#include "core/gemm.h"
#include "core/gemm_trace.h"
#include "support/test_common.h"

#define U32 (1.0 / 16777216.0)

typedef struct mat {
    size_t rows, cols, ld;
    hrmt_dtype dt;
    void *data;
} mat;

static mat mat_new(size_t rows, size_t cols, size_t pad, hrmt_dtype dt) {
    mat m = {rows, cols, cols + pad, dt, NULL};
    m.data = calloc(rows * m.ld, hrmt_dtype_size(dt));
    cr_assert_not_null(m.data);
    return m;
}

static double mat_get(const mat *m, size_t i, size_t j) {
    size_t idx = i * m->ld + j;
    return m->dt == HRMT_F32 ? ((const float *)m->data)[idx]
                             : hrmt_bf16_to_f32(((const uint16_t *)m->data)[idx]);
}

static void mat_set(mat *m, size_t i, size_t j, float v) {
    size_t idx = i * m->ld + j;
    if (m->dt == HRMT_F32)
        ((float *)m->data)[idx] = v;
    else
        ((uint16_t *)m->data)[idx] = hrmt_f32_to_bf16(v);
}

/* Random values in [-1, 1); the padding between rows gets NaN so a kernel
 * that reads past a row shows up in the result. */
static void mat_fill(mat *m, uint64_t seed) {
    hrmt_test_rng r = {seed};
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->ld; j++)
            mat_set(m, i, j, j < m->cols ? hrmt_test_uniform(&r) : NAN);
}

static hrmt_tensor mat_tensor(const mat *m) {
    hrmt_tensor t;
    size_t shape[2] = {m->rows, m->cols};
    cr_assert_eq(hrmt_tensor_init(&t, m->data, m->dt, 2, shape), HRMT_OK);
    t.stride[0] = m->ld;
    return t;
}

static size_t mat_bytes(const mat *m) { return m->rows * m->ld * hrmt_dtype_size(m->dt); }

static hrmt_context *ctx_with(const char *isa, int threads) {
    hrmt_context_options o = hrmt_context_default_options();
    o.isa = isa;
    o.num_threads = threads;
    o.event_log_enabled = 0;
    return hrmt_test_context_opts(&o);
}

/* The ISA under test (HRMT_ISA or the best) with `threads` threads. */
static hrmt_context *ctx_threads(int threads) { return ctx_with(NULL, threads); }

static hrmt_packed_w *pack(hrmt_context *ctx, const mat *w) {
    hrmt_tensor t = mat_tensor(w);
    hrmt_packed_w *pw = NULL;
    cr_assert_eq(hrmt_gemm_pack_w(ctx, &t, &pw), HRMT_OK, "%s", hrmt_last_error(ctx));
    return pw;
}

static void gemm_packed(hrmt_context *ctx, const mat *a, const hrmt_packed_w *pw, mat *c, int acc) {
    hrmt_tensor ta = mat_tensor(a), tc = mat_tensor(c);
    cr_assert_eq(hrmt_gemm_packed(ctx, &ta, pw, &tc, acc), HRMT_OK, "%s", hrmt_last_error(ctx));
}

/* float64 reference: ref[i*N+j] = sum_k a_ik w_jk and mag = sum_k |a_ik w_jk|.
 * Four columns at a time so the independent chains overlap. */
static void ref_f64(const mat *a, const mat *w, double *ref, double *mag) {
    const size_t M = a->rows, N = w->rows, K = a->cols;
    double *at = malloc(M * K * sizeof(double)), *wt = malloc((N + 3) * K * sizeof(double));
    cr_assert(at && wt);
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < K; k++) at[i * K + k] = mat_get(a, i, k);
    for (size_t j = 0; j < N + 3; j++)
        for (size_t k = 0; k < K; k++) wt[j * K + k] = j < N ? mat_get(w, j, k) : 0.0;
    for (size_t i = 0; i < M; i++) {
        const double *ar = at + i * K;
        for (size_t j = 0; j < N; j += 4) {
            const double *w0 = wt + j * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
            double r0 = 0, r1 = 0, r2 = 0, r3 = 0, m0 = 0, m1 = 0, m2 = 0, m3 = 0;
            for (size_t k = 0; k < K; k++) {
                double x = ar[k], p0 = x * w0[k], p1 = x * w1[k], p2 = x * w2[k], p3 = x * w3[k];
                r0 += p0;
                r1 += p1;
                r2 += p2;
                r3 += p3;
                m0 += fabs(p0);
                m1 += fabs(p1);
                m2 += fabs(p2);
                m3 += fabs(p3);
            }
            double rs[4] = {r0, r1, r2, r3}, ms[4] = {m0, m1, m2, m3};
            for (size_t q = 0; q < 4 && j + q < N; q++) {
                ref[i * N + j + q] = rs[q];
                mag[i * N + j + q] = ms[q];
            }
        }
    }
    free(at);
    free(wt);
}

/* gamma_(K+1): the F32 chain bound per unit of sum |a w|. */
static double gamma_k(size_t K) { return (double)(K + 1) * U32 / (1.0 - (double)(K + 1) * U32); }

/* Checks C against float64 (see the bound at the top). */
static void check_f64(const mat *a, const mat *w, const mat *c, const char *what) {
    const size_t M = a->rows, N = w->rows, K = a->cols;
    double *ref = malloc(M * N * sizeof(double)), *mag = malloc(M * N * sizeof(double));
    cr_assert(ref && mag);
    ref_f64(a, w, ref, mag);
    size_t bad = 0;
    for (size_t i = 0; i < M && bad < 5; i++)
        for (size_t j = 0; j < N; j++) {
            double got = mat_get(c, i, j), r = ref[i * N + j];
            double tol = gamma_k(K) * mag[i * N + j] +
                         (c->dt == HRMT_BF16 ? 0x1p-8 * fabs(got) : 0.0) + 1e-30;
            if (!(fabs(got - r) <= tol)) {
                cr_expect(0, "%s M%zu N%zu K%zu: C[%zu][%zu] = %.9g, float64 %.9g, bound %.3g",
                          what, M, N, K, i, j, got, r, tol);
                bad++;
            }
        }
    free(ref);
    free(mag);
}

/* Checks that padding columns of C were not written (they start as 0). */
static void check_pad_untouched(const mat *c) {
    for (size_t i = 0; i < c->rows; i++)
        for (size_t j = c->cols; j < c->ld; j++)
            cr_assert_eq(mat_get(c, i, j), 0.0, "C padding [%zu][%zu] written", i, j);
}

static void run_f32_shape(hrmt_context *ctx, size_t M, size_t N, size_t K) {
    mat a = mat_new(M, K, 3, HRMT_F32), w = mat_new(N, K, 5, HRMT_F32),
        c = mat_new(M, N, 7, HRMT_F32);
    mat_fill(&a, 11 + M * 7 + K);
    mat_fill(&w, 23 + N * 13 + K);
    hrmt_packed_w *pw = pack(ctx, &w);
    gemm_packed(ctx, &a, pw, &c, 0);
    check_f64(&a, &w, &c, "f32");
    check_pad_untouched(&c);
    hrmt_packed_w_destroy(pw);
    free(a.data);
    free(w.data);
    free(c.data);
}

static const size_t k_N[] = {1, 11, 512, 1536, 3072};
static const size_t k_K[] = {1, 63, 512, 1536};

Test(gemm, f32_small_m_every_n_k) {
    hrmt_context *ctx = hrmt_test_context();
    static const size_t Ms[] = {1, 3, 17};
    for (size_t mi = 0; mi < 3; mi++)
        for (size_t ni = 0; ni < 5; ni++)
            for (size_t ki = 0; ki < 4; ki++) run_f32_shape(ctx, Ms[mi], k_N[ni], k_K[ki]);
    hrmt_context_destroy(ctx);
}

Test(gemm, f32_m82) {
    hrmt_context *ctx = hrmt_test_context();
    for (size_t ni = 0; ni < 5; ni++)
        for (size_t ki = 0; ki < 4; ki++)
            if (k_N[ni] * k_K[ki] <= 1536 * 512) run_f32_shape(ctx, 82, k_N[ni], k_K[ki]);
    hrmt_context_destroy(ctx);
}

Test(gemm, f32_m656) {
    hrmt_context *ctx = hrmt_test_context();
    static const size_t Ns[] = {1, 11, 512}, Ks[] = {1, 63};
    for (size_t ni = 0; ni < 3; ni++)
        for (size_t ki = 0; ki < 2; ki++) run_f32_shape(ctx, 656, Ns[ni], Ks[ki]);
    run_f32_shape(ctx, 656, 11, 1536);
    run_f32_shape(ctx, 656, 512, 512);
    run_f32_shape(ctx, 656, 1536, 63);
    run_f32_shape(ctx, 656, 3072, 1);
    hrmt_context_destroy(ctx);
}

/* A and W in BF16 (C in c_dt) against the scalar table and float64. */
static void run_bf16_shape(hrmt_context *ctx, hrmt_context *ref, size_t M, size_t N, size_t K,
                           hrmt_dtype c_dt) {
    mat a = mat_new(M, K, 2, HRMT_BF16), w = mat_new(N, K, 6, HRMT_BF16),
        c = mat_new(M, N, 3, c_dt), r = mat_new(M, N, 3, c_dt);
    mat_fill(&a, 5 + M + K);
    mat_fill(&w, 7 + N + K);
    hrmt_packed_w *pw = pack(ctx, &w), *pr = pack(ref, &w);
    gemm_packed(ctx, &a, pw, &c, 0);
    gemm_packed(ref, &a, pr, &r, 0);
    check_f64(&a, &w, &c, "bf16");
    check_pad_untouched(&c);
    cr_expect_eq(memcmp(c.data, r.data, mat_bytes(&c)), 0,
                 "bf16 M%zu N%zu K%zu: not bit-identical to the scalar table", M, N, K);
    hrmt_packed_w_destroy(pw);
    hrmt_packed_w_destroy(pr);
    free(a.data);
    free(w.data);
    free(c.data);
    free(r.data);
}

Test(gemm, bf16_against_scalar) {
    hrmt_context *ctx = hrmt_test_context(), *ref = ctx_with("scalar", 1);
    static const size_t shapes[][3] = {{1, 1, 1},       {3, 11, 63},     {17, 512, 63},
                                       {17, 11, 1536},  {82, 1536, 512}, {82, 3072, 63},
                                       {656, 256, 512}, {3, 3072, 1536}, {656, 11, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        run_bf16_shape(ctx, ref, shapes[s][0], shapes[s][1], shapes[s][2], HRMT_F32);
        if (s % 2 == 0)
            run_bf16_shape(ctx, ref, shapes[s][0], shapes[s][1], shapes[s][2], HRMT_BF16);
    }
    hrmt_context_destroy(ctx);
    hrmt_context_destroy(ref);
}

/* Every height of a last sliver (M mod 14 = 1..13: the AVX-512 kernels
 * compute only those rows), BF16 with BF16 and F32 C and F32, in one K block
 * and, with small blocks (KC 37, MC 50: pair blocks of 28), in several, where
 * the partial sums of the short tile go to memory between blocks. */
Test(gemm, every_edge_height) {
    hrmt_context *ctx = hrmt_test_context(), *ref = ctx_with("scalar", 1);
    setenv("HRMT_GEMM_KC", "37", 1);
    setenv("HRMT_GEMM_MC", "50", 1);
    hrmt_context *small = ctx_threads(1);
    for (size_t M = 1; M <= 15; M++) {
        run_bf16_shape(ctx, ref, M, 45, 77, M % 2 ? HRMT_BF16 : HRMT_F32);
        run_bf16_shape(small, ref, M, 45, 77, M % 2 ? HRMT_F32 : HRMT_BF16);
        run_f32_shape(ctx, M, 45, 77);
        run_f32_shape(small, M, 45, 300);
    }
    hrmt_context_destroy(small);
    hrmt_context_destroy(ctx);
    hrmt_context_destroy(ref);
}

/* BF16 A x BF16 W against the order every table promises (core/gemm_kernels.h),
 * emulated in F32 without any wider type: per output one F32 accumulator from
 * 0, k visited 1, 0, 3, 2, ... (an odd K's last k alone), each bf16 x bf16
 * product exact in F32, one add per k; C rounded to bf16 once. Odd and even
 * K, one and several K blocks, M and N edges. */
Test(gemm, bf16_pair_order_emulation) {
    hrmt_context *ctx = hrmt_test_context();
    static const size_t shapes[][3] = {{1, 1, 1}, {3, 11, 63}, {17, 40, 512}, {5, 33, 1101}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        mat a = mat_new(M, K, 3, HRMT_BF16), w = mat_new(N, K, 1, HRMT_BF16);
        mat cf = mat_new(M, N, 2, HRMT_F32), cb = mat_new(M, N, 0, HRMT_BF16);
        mat_fill(&a, 41 + s);
        mat_fill(&w, 43 + s);
        hrmt_packed_w *pw = pack(ctx, &w);
        gemm_packed(ctx, &a, pw, &cf, 0);
        gemm_packed(ctx, &a, pw, &cb, 0);
        size_t bad = 0;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++) {
                float acc = 0.0f;
                for (size_t k = 0; k < K; k++) {
                    const size_t kk = (k ^ 1) < K ? k ^ 1 : k;
                    const float p = (float)mat_get(&a, i, kk) * (float)mat_get(&w, j, kk);
                    acc = acc + p;
                }
                const float got = ((const float *)cf.data)[i * cf.ld + j];
                const uint16_t gotb = ((const uint16_t *)cb.data)[i * cb.ld + j];
                if (memcmp(&got, &acc, sizeof acc) != 0 || gotb != hrmt_f32_to_bf16(acc)) {
                    if (bad++ < 3)
                        cr_log_error("M%zu N%zu K%zu [%zu,%zu]: %.9g / bf16 %04x, want %.9g", M, N,
                                     K, i, j, (double)got, gotb, (double)acc);
                }
            }
        cr_expect_eq(bad, 0, "M%zu N%zu K%zu: %zu outputs off the odd-first pair chain", M, N, K,
                     bad);
        hrmt_packed_w_destroy(pw);
        free(a.data);
        free(w.data);
        free(cf.data);
        free(cb.data);
    }
    hrmt_context_destroy(ctx);
}

/* Mixed dtypes (F32 A with BF16 W and the reverse), F32 and BF16 C. */
Test(gemm, mixed_dtypes_against_f64) {
    hrmt_context *ctx = hrmt_test_context();
    static const size_t shapes[][3] = {{3, 11, 63}, {17, 512, 512}, {82, 1536, 63}, {1, 11, 1536}};
    for (size_t s = 0; s < 4; s++)
        for (int combo = 0; combo < 4; combo++) {
            size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            hrmt_dtype adt = combo & 1 ? HRMT_BF16 : HRMT_F32;
            hrmt_dtype wdt = combo & 1 ? HRMT_F32 : HRMT_BF16;
            hrmt_dtype cdt = combo & 2 ? HRMT_BF16 : HRMT_F32;
            mat a = mat_new(M, K, 1, adt), w = mat_new(N, K, 1, wdt), c = mat_new(M, N, 1, cdt);
            mat_fill(&a, 99 + s);
            mat_fill(&w, 77 + s);
            hrmt_packed_w *pw = pack(ctx, &w);
            gemm_packed(ctx, &a, pw, &c, 0);
            check_f64(&a, &w, &c, "mixed");
            hrmt_packed_w_destroy(pw);
            free(a.data);
            free(w.data);
            free(c.data);
        }
    hrmt_context_destroy(ctx);
}

/* ---- bit identity -------------------------------------------------------- */

typedef struct case_dt {
    hrmt_dtype a, w, c;
    int acc;
} case_dt;

static const case_dt k_cases[] = {
    {HRMT_F32, HRMT_F32, HRMT_F32, 0},
    {HRMT_BF16, HRMT_BF16, HRMT_BF16, 0},
    {HRMT_BF16, HRMT_BF16, HRMT_F32, 1},
    {HRMT_F32, HRMT_BF16, HRMT_BF16, 1},
};

/* Small enough for the scalar table under ASan, large enough to cross every
 * blocking decision: several K blocks on every ISA (K = 1100 > any KC here),
 * several M and N units shared by the threads, M and N edges. (The last two
 * are below the size at which the GEMM uses threads at all; they check the
 * serial path against itself across contexts.) */
static const size_t k_bit_shapes[][3] = {
    {150, 300, 333}, {82, 260, 1100}, {17, 11, 1536}, {3, 512, 63}};

/* Runs one case on ctx, C starting from a fixed fill; returns C. */
static mat run_case(hrmt_context *ctx, const case_dt *cd, size_t M, size_t N, size_t K) {
    mat a = mat_new(M, K, 4, cd->a), w = mat_new(N, K, 2, cd->w), c = mat_new(M, N, 5, cd->c);
    mat_fill(&a, 3 * M + K);
    mat_fill(&w, 5 * N + K);
    mat_fill(&c, 7);
    hrmt_packed_w *pw = pack(ctx, &w);
    gemm_packed(ctx, &a, pw, &c, cd->acc);
    hrmt_packed_w_destroy(pw);
    free(a.data);
    free(w.data);
    return c;
}

Test(gemm, same_bits_for_any_thread_count) {
    static const int threads[] = {2, 3, 5};
    hrmt_context *one = ctx_threads(1);
    hrmt_context *many[3];
    for (int t = 0; t < 3; t++) many[t] = ctx_threads(threads[t]);
    for (size_t s = 0; s < sizeof k_bit_shapes / sizeof k_bit_shapes[0]; s++)
        for (size_t ci = 0; ci < sizeof k_cases / sizeof k_cases[0]; ci++) {
            size_t M = k_bit_shapes[s][0], N = k_bit_shapes[s][1], K = k_bit_shapes[s][2];
            mat r = run_case(one, &k_cases[ci], M, N, K);
            for (int t = 0; t < 3; t++) {
                mat c = run_case(many[t], &k_cases[ci], M, N, K);
                cr_expect_eq(memcmp(c.data, r.data, mat_bytes(&r)), 0,
                             "M%zu N%zu K%zu case %zu: %d threads differ from 1", M, N, K, ci,
                             threads[t]);
                free(c.data);
            }
            free(r.data);
        }
    hrmt_context_destroy(one);
    for (int t = 0; t < 3; t++) hrmt_context_destroy(many[t]);
}

/* The blocking (KC, MC, NC) changes speed only: chains continue across K
 * blocks, so even a different KC gives the same bits. */
Test(gemm, same_bits_for_any_blocking) {
    hrmt_context *base = ctx_threads(2);
    setenv("HRMT_GEMM_KC", "37", 1);
    setenv("HRMT_GEMM_MC", "50", 1);
    setenv("HRMT_GEMM_NC", "100", 1);
    hrmt_context *odd = ctx_threads(3);
    cr_assert_eq(hrmt_context_tile_plan(odd)->gemm_kc, 37);
    for (size_t s = 0; s < sizeof k_bit_shapes / sizeof k_bit_shapes[0]; s++)
        for (size_t ci = 0; ci < sizeof k_cases / sizeof k_cases[0]; ci++) {
            size_t M = k_bit_shapes[s][0], N = k_bit_shapes[s][1], K = k_bit_shapes[s][2];
            mat r = run_case(base, &k_cases[ci], M, N, K);
            mat c = run_case(odd, &k_cases[ci], M, N, K);
            cr_expect_eq(memcmp(c.data, r.data, mat_bytes(&r)), 0,
                         "M%zu N%zu K%zu case %zu: KC/MC/NC 37/50/100 changed bits", M, N, K, ci);
            free(c.data);
            free(r.data);
        }
    hrmt_context_destroy(base);
    hrmt_context_destroy(odd);
}

/* HRMT_GEMM_TRACE=1: a parallel call's thread times add up (each thread's
 * waking, packing, units and idle tail lie inside the call's wall time on one
 * clock), the units counted are the plan's, the bits are the untraced ones;
 * off by default; a bad value is refused by name. */
Test(gemm, trace_accounts_for_each_parallel_call) {
    hrmt_context *plain = ctx_threads(3);
    setenv("HRMT_GEMM_TRACE", "1", 1);
    hrmt_context *tr = ctx_threads(3);
    unsetenv("HRMT_GEMM_TRACE");
    cr_expect_eq(hrmt_gemm_trace_read(plain, NULL, 0), 0, "tracing is off by default");
    const size_t M = 300, N = 700, K = 96; /* 20M MACs: a parallel call */
    for (size_t ci = 0; ci < sizeof k_cases / sizeof k_cases[0]; ci++) {
        hrmt_gemm_trace_sums t;
        cr_assert_eq(hrmt_gemm_trace_read(tr, NULL, 1), 1);
        mat r = run_case(plain, &k_cases[ci], M, N, K);
        mat c = run_case(tr, &k_cases[ci], M, N, K);
        cr_expect_eq(memcmp(c.data, r.data, mat_bytes(&r)), 0, "case %zu: tracing changed bits",
                     ci);
        cr_assert_eq(hrmt_gemm_trace_read(tr, &t, 0), 1);
        cr_expect_eq(t.calls, 1, "case %zu: %llu calls traced", ci, (unsigned long long)t.calls);
        cr_expect(t.thread_slots >= 2 && t.thread_slots <= 3, "case %zu: %llu threads", ci,
                  (unsigned long long)t.thread_slots);
        cr_expect(t.units >= t.thread_slots, "case %zu: %llu units", ci,
                  (unsigned long long)t.units);
        const double parts = t.wake_us + t.pack_us + t.busy_us + t.tail_us;
        cr_expect(t.busy_us > 0.0 && parts <= t.wall_us * (double)t.thread_slots + 1e-3,
                  "case %zu: thread parts %.3f us over %.3f us x %llu threads", ci, parts,
                  t.wall_us, (unsigned long long)t.thread_slots);
        cr_expect(t.spread_us <= t.wall_us, "case %zu", ci);
        free(c.data);
        free(r.data);
    }
    hrmt_context_destroy(plain);
    hrmt_context_destroy(tr);
    setenv("HRMT_GEMM_TRACE", "yes", 1);
    hrmt_context *bad = NULL;
    char err[256] = "";
    cr_expect_eq(hrmt_context_create(NULL, &bad, err, sizeof err), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(err, "HRMT_GEMM_TRACE"), "%s", err);
    unsetenv("HRMT_GEMM_TRACE");
    hrmt_context_destroy(bad);
}

Test(gemm, same_bits_when_m_is_split_across_calls) {
    hrmt_context *ctx = ctx_threads(2);
    const size_t M = 150, N = 300, K = 1100;
    static const size_t cuts[] = {0, 1, 18, 100, 101, 150};
    for (size_t ci = 0; ci < sizeof k_cases / sizeof k_cases[0]; ci++) {
        const case_dt *cd = &k_cases[ci];
        mat a = mat_new(M, K, 4, cd->a), w = mat_new(N, K, 2, cd->w);
        mat c = mat_new(M, N, 5, cd->c), d = mat_new(M, N, 5, cd->c);
        mat_fill(&a, 1);
        mat_fill(&w, 2);
        mat_fill(&c, 3);
        memcpy(d.data, c.data, mat_bytes(&c));
        hrmt_packed_w *pw = pack(ctx, &w);
        gemm_packed(ctx, &a, pw, &c, cd->acc);
        for (size_t p = 0; p + 1 < sizeof cuts / sizeof cuts[0]; p++) {
            size_t m0 = cuts[p], m1 = cuts[p + 1];
            const char *ap = (const char *)a.data + m0 * a.ld * hrmt_dtype_size(cd->a);
            char *dp = (char *)d.data + m0 * d.ld * hrmt_dtype_size(cd->c);
            cr_assert_eq(hrmt_gemm_raw_ex(ctx, 1 + (int)(p % 2), m1 - m0, N, K, ap, cd->a, a.ld, pw,
                                          dp, cd->c, d.ld, cd->acc, NULL, 0),
                         HRMT_OK);
        }
        cr_expect_eq(memcmp(c.data, d.data, mat_bytes(&c)), 0, "case %zu: split M differs", ci);
        hrmt_packed_w_destroy(pw);
        free(a.data);
        free(w.data);
        free(c.data);
        free(d.data);
    }
    hrmt_context_destroy(ctx);
}

Test(gemm, packed_and_unpacked_are_identical) {
    hrmt_context *ctx = hrmt_test_context();
    for (size_t ci = 0; ci < sizeof k_cases / sizeof k_cases[0]; ci++) {
        const case_dt *cd = &k_cases[ci];
        mat a = mat_new(82, 512, 1, cd->a), w = mat_new(600, 512, 3, cd->w);
        mat c = mat_new(82, 600, 0, cd->c), d = mat_new(82, 600, 0, cd->c);
        mat_fill(&a, 10);
        mat_fill(&w, 20);
        mat_fill(&c, 30);
        memcpy(d.data, c.data, mat_bytes(&c));
        hrmt_packed_w *pw = pack(ctx, &w);
        gemm_packed(ctx, &a, pw, &c, cd->acc);
        hrmt_tensor ta = mat_tensor(&a), tw = mat_tensor(&w), td = mat_tensor(&d);
        cr_assert_eq(hrmt_gemm(ctx, &ta, &tw, &td, cd->acc), HRMT_OK);
        cr_expect_eq(memcmp(c.data, d.data, mat_bytes(&c)), 0, "case %zu", ci);
        hrmt_packed_w_destroy(pw);
        free(a.data);
        free(w.data);
        free(c.data);
        free(d.data);
    }
    hrmt_context_destroy(ctx);
}

/* The same scratch given by the caller, and refusal of one too small. */
Test(gemm, caller_scratch) {
    hrmt_context *ctx = ctx_threads(2);
    const size_t M = 82, N = 512, K = 1536;
    mat a = mat_new(M, K, 0, HRMT_BF16), w = mat_new(N, K, 0, HRMT_BF16);
    mat c = mat_new(M, N, 0, HRMT_BF16), d = mat_new(M, N, 0, HRMT_BF16);
    mat_fill(&a, 4);
    mat_fill(&w, 5);
    hrmt_packed_w *pw = pack(ctx, &w);
    size_t need = hrmt_gemm_scratch_bytes(ctx, 2, M, N, K, HRMT_BF16, pw, HRMT_BF16, 0);
    cr_assert_gt(need, 0);
    void *scr = aligned_alloc(64, (need + 63) / 64 * 64);
    cr_assert_eq(hrmt_gemm_raw_ex(ctx, 2, M, N, K, a.data, HRMT_BF16, K, pw, c.data, HRMT_BF16, N,
                                  0, scr, need),
                 HRMT_OK);
    cr_assert_eq(hrmt_gemm_raw(ctx, M, N, K, a.data, HRMT_BF16, K, pw, d.data, HRMT_BF16, N, 0),
                 HRMT_OK);
    cr_expect_eq(memcmp(c.data, d.data, mat_bytes(&c)), 0);
    cr_expect_eq(hrmt_gemm_raw_ex(ctx, 2, M, N, K, a.data, HRMT_BF16, K, pw, c.data, HRMT_BF16, N,
                                  0, scr, need - 1),
                 HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "scratch") != NULL);
    free(scr);
    hrmt_packed_w_destroy(pw);
    free(a.data);
    free(w.data);
    free(c.data);
    free(d.data);
    hrmt_context_destroy(ctx);
}

/* ---- accumulate and BF16 rounding ---------------------------------------- */

/* C += A W^T is C + (A W^T): the product's F32 sum, then one add (and for
 * BF16 C one rounding of f32(C) + sum). Checked bit for bit against the
 * product computed separately into F32. */
Test(gemm, accumulate_adds_the_finished_sum) {
    hrmt_context *ctx = hrmt_test_context();
    static const size_t shapes[][3] = {{17, 11, 1536}, {82, 512, 512}, {3, 1, 63}};
    for (size_t s = 0; s < 3; s++)
        for (int cb = 0; cb < 2; cb++)
            for (int ab = 0; ab < 2; ab++) {
                size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                hrmt_dtype dt = ab ? HRMT_BF16 : HRMT_F32, cdt = cb ? HRMT_BF16 : HRMT_F32;
                mat a = mat_new(M, K, 2, dt), w = mat_new(N, K, 2, dt);
                mat p = mat_new(M, N, 1, HRMT_F32), c = mat_new(M, N, 1, cdt),
                    c0 = mat_new(M, N, 1, cdt);
                mat_fill(&a, 40 + s);
                mat_fill(&w, 50 + s);
                mat_fill(&c, 60 + s);
                memcpy(c0.data, c.data, mat_bytes(&c));
                hrmt_packed_w *pw = pack(ctx, &w);
                gemm_packed(ctx, &a, pw, &p, 0);
                gemm_packed(ctx, &a, pw, &c, 1);
                for (size_t i = 0; i < M; i++)
                    for (size_t j = 0; j < N; j++) {
                        float sum = ((const float *)p.data)[i * p.ld + j];
                        float want = (float)mat_get(&c0, i, j) + sum;
                        if (cdt == HRMT_BF16) want = hrmt_round_bf16(want);
                        cr_assert_eq(hrmt_f32_bits((float)mat_get(&c, i, j)), hrmt_f32_bits(want),
                                     "shape %zu c%d a%d [%zu][%zu]", s, cb, ab, i, j);
                    }
                hrmt_packed_w_destroy(pw);
                free(a.data);
                free(w.data);
                free(p.data);
                free(c.data);
                free(c0.data);
            }
    hrmt_context_destroy(ctx);
}

/* BF16 C is the F32 result rounded once (nearest, ties to even). */
Test(gemm, bf16_c_is_the_f32_result_rounded_once) {
    hrmt_context *ctx = hrmt_test_context();
    mat a = mat_new(82, 1536, 0, HRMT_BF16), w = mat_new(512, 1536, 0, HRMT_BF16);
    mat cf = mat_new(82, 512, 0, HRMT_F32), ch = mat_new(82, 512, 0, HRMT_BF16);
    mat_fill(&a, 8);
    mat_fill(&w, 9);
    hrmt_packed_w *pw = pack(ctx, &w);
    gemm_packed(ctx, &a, pw, &cf, 0);
    gemm_packed(ctx, &a, pw, &ch, 0);
    for (size_t i = 0; i < 82 * 512; i++)
        cr_assert_eq(((uint16_t *)ch.data)[i], hrmt_f32_to_bf16(((float *)cf.data)[i]), "[%zu]", i);
    hrmt_packed_w_destroy(pw);
    free(a.data);
    free(w.data);
    free(cf.data);
    free(ch.data);
    hrmt_context_destroy(ctx);
}

/* Ties: with K = 1 and A = 1 the sum is W exactly; values halfway between
 * two bf16 go to the even one. Expected bits written out by hand. */
Test(gemm, bf16_c_ties_to_even) {
    hrmt_context *ctx = hrmt_test_context();
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3f808000u, 0x3f80}, /* 1 + 2^-8: halfway 1 .. 1+2^-7, even is 1 */
        {0x3f818000u, 0x3f82}, /* 1 + 3*2^-8: halfway, even is 1 + 2^-6 */
        {0x3f808001u, 0x3f81}, /* just above halfway: up */
        {0xbf818000u, 0xbf82}, /* negative tie */
        {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to Inf */
    };
    const size_t n = sizeof cases / sizeof cases[0];
    mat a = mat_new(1, 1, 0, HRMT_F32), w = mat_new(n, 1, 0, HRMT_F32),
        c = mat_new(1, n, 0, HRMT_BF16);
    ((float *)a.data)[0] = 1.0f;
    for (size_t j = 0; j < n; j++) ((float *)w.data)[j] = hrmt_f32_from_bits(cases[j].in);
    hrmt_packed_w *pw = pack(ctx, &w);
    gemm_packed(ctx, &a, pw, &c, 0);
    for (size_t j = 0; j < n; j++)
        cr_expect_eq(((uint16_t *)c.data)[j], cases[j].out, "case %zu: got %#x want %#x", j,
                     ((uint16_t *)c.data)[j], cases[j].out);
    hrmt_packed_w_destroy(pw);
    free(a.data);
    free(w.data);
    free(c.data);
    hrmt_context_destroy(ctx);
}

/* ---- errors -------------------------------------------------------------- */

Test(gemm, errors) {
    hrmt_context *ctx = hrmt_test_context();
    mat a = mat_new(4, 8, 0, HRMT_F32), w = mat_new(5, 8, 0, HRMT_F32),
        c = mat_new(4, 5, 0, HRMT_F32);
    mat_fill(&a, 1);
    mat_fill(&w, 2);
    hrmt_tensor ta = mat_tensor(&a), tw = mat_tensor(&w), tc = mat_tensor(&c), t;
    hrmt_packed_w *pw = pack(ctx, &w);

    cr_expect_eq(hrmt_gemm(NULL, &ta, &tw, &tc, 0), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_gemm(ctx, NULL, &tw, &tc, 0), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "a is NULL"));
    cr_expect_eq(hrmt_gemm(ctx, &ta, NULL, &tc, 0), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_gemm(ctx, &ta, &tw, NULL, 0), HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_gemm_packed(ctx, &ta, NULL, &tc, 0), HRMT_ERR_INVALID_ARG);
    t = ta;
    t.data = NULL;
    cr_expect_eq(hrmt_gemm(ctx, &t, &tw, &tc, 0), HRMT_ERR_INVALID_ARG);

    /* Shape mismatches: K, N, M. */
    t = tw;
    t.shape[1] = 7;
    cr_expect_eq(hrmt_gemm(ctx, &ta, &t, &tc, 0), HRMT_ERR_SHAPE);
    cr_expect(strstr(hrmt_last_error(ctx), "does not give"), "%s", hrmt_last_error(ctx));
    t = tc;
    t.shape[1] = 4;
    cr_expect_eq(hrmt_gemm(ctx, &ta, &tw, &t, 0), HRMT_ERR_SHAPE);
    cr_expect_eq(hrmt_gemm_packed(ctx, &ta, pw, &t, 0), HRMT_ERR_SHAPE);
    t = tc;
    t.shape[0] = 3;
    cr_expect_eq(hrmt_gemm_packed(ctx, &ta, pw, &t, 0), HRMT_ERR_SHAPE);
    t = ta;
    t.stride[1] = 2;
    cr_expect_eq(hrmt_gemm(ctx, &t, &tw, &tc, 0), HRMT_ERR_SHAPE);
    t = ta;
    t.stride[0] = 7;
    cr_expect_eq(hrmt_gemm(ctx, &t, &tw, &tc, 0), HRMT_ERR_SHAPE);
    t = ta;
    t.ndim = 3;
    t.shape[2] = 1;
    t.stride[2] = 1;
    cr_expect_eq(hrmt_gemm(ctx, &t, &tw, &tc, 0), HRMT_ERR_SHAPE);

    /* Zero dims. */
    t = ta;
    t.shape[0] = 0;
    cr_expect_eq(hrmt_gemm(ctx, &t, &tw, &tc, 0), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "zero"));
    cr_expect_eq(hrmt_gemm_raw(ctx, 0, 5, 8, a.data, HRMT_F32, 8, pw, c.data, HRMT_F32, 5, 0),
                 HRMT_ERR_INVALID_ARG);
    hrmt_packed_w *none = (hrmt_packed_w *)0x1;
    cr_expect_eq(hrmt_gemm_pack_w_raw(ctx, 0, 8, w.data, HRMT_F32, 8, &none), HRMT_ERR_INVALID_ARG);
    cr_expect_null(none);

    /* Bad dtypes. */
    t = ta;
    t.dtype = HRMT_I32;
    cr_expect_eq(hrmt_gemm(ctx, &t, &tw, &tc, 0), HRMT_ERR_DTYPE);
    cr_expect(strstr(hrmt_last_error(ctx), "I32"));
    t = tc;
    t.dtype = HRMT_I32;
    cr_expect_eq(hrmt_gemm_packed(ctx, &ta, pw, &t, 0), HRMT_ERR_DTYPE);
    t = tw;
    t.dtype = HRMT_I32;
    cr_expect_eq(hrmt_gemm_pack_w(ctx, &t, &none), HRMT_ERR_DTYPE);
    cr_expect_eq(hrmt_gemm_raw(ctx, 4, 5, 8, a.data, (hrmt_dtype)7, 8, pw, c.data, HRMT_F32, 5, 0),
                 HRMT_ERR_DTYPE);

    /* Raw entry: leading dims, packed W of another shape, thread count. */
    cr_expect_eq(hrmt_gemm_raw(ctx, 4, 5, 8, a.data, HRMT_F32, 7, pw, c.data, HRMT_F32, 5, 0),
                 HRMT_ERR_SHAPE);
    cr_expect_eq(hrmt_gemm_raw(ctx, 4, 5, 8, a.data, HRMT_F32, 8, pw, c.data, HRMT_F32, 4, 0),
                 HRMT_ERR_SHAPE);
    cr_expect_eq(hrmt_gemm_raw(ctx, 4, 6, 8, a.data, HRMT_F32, 8, pw, c.data, HRMT_F32, 6, 0),
                 HRMT_ERR_SHAPE);
    cr_expect_eq(
        hrmt_gemm_raw_ex(ctx, 0, 4, 5, 8, a.data, HRMT_F32, 8, pw, c.data, HRMT_F32, 5, 0, NULL, 0),
        HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_gemm_raw(ctx, 4, 5, 8, NULL, HRMT_F32, 8, pw, c.data, HRMT_F32, 5, 0),
                 HRMT_ERR_INVALID_ARG);
    cr_expect_eq(hrmt_gemm_scratch_bytes(ctx, 1, 4, 6, 8, HRMT_F32, pw, HRMT_F32, 0), 0);

    /* A W packed for another ISA is refused. */
    hrmt_isa mine = hrmt_context_isa(ctx);
    hrmt_context *other =
        ctx_with(mine == HRMT_ISA_SCALAR ? hrmt_isa_name(hrmt_backend_best_isa()) : "scalar", 1);
    if (hrmt_context_isa(other) != mine) {
        hrmt_packed_w *po = pack(other, &w);
        cr_expect_eq(hrmt_gemm_packed(ctx, &ta, po, &tc, 0), HRMT_ERR_INVALID_ARG);
        cr_expect(strstr(hrmt_last_error(ctx), "packed for"));
        hrmt_packed_w_destroy(po);
    }
    hrmt_context_destroy(other);

    /* Nothing was written by any failing call. */
    for (size_t i = 0; i < 20; i++) cr_expect_eq(((float *)c.data)[i], 0.0f);
    cr_expect_eq(hrmt_supports(ctx, HRMT_OP_GEMM, HRMT_F32), 1);
    cr_expect_eq(hrmt_supports(ctx, HRMT_OP_GEMM, HRMT_BF16), 1);
    cr_expect_eq(hrmt_supports(ctx, HRMT_OP_GEMM, HRMT_I32), 0);
    hrmt_packed_w_destroy(pw);
    hrmt_packed_w_destroy(NULL);
    free(a.data);
    free(w.data);
    free(c.data);
    hrmt_context_destroy(ctx);
}
