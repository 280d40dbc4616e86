/* Small-M algorithms for the pinned block GEMMs (model_gemm.cu).
 *
 * The pinned algorithm is chosen for large M (whole batches): at one or a
 * few samples its big tiles cover a handful of SMs (at batch 1 the down
 * projection ran on 4 CTAs of 132). cuBLASLt has algorithms with smaller
 * tiles that compute every output with the same MMA sequence over k, so the
 * same bits; others (other kernels, other k chunking) do not. So, at model
 * load, for each shape and each row bucket (rows <= 128 << b, the last
 * bucket also serving every larger M, as the pinned algorithm was chosen
 * there):
 *  - the heuristic's candidates at the bucket's top M, split-K excluded;
 *  - a candidate is kept only when it reproduces the pinned algorithm's bits
 *    on a random product, at the bucket's M and at one sample's rows (so a
 *    row's bits stay the same whatever M and whatever tile of samples: the
 *    tiered == baseline guarantee);
 *  - the fastest kept one (the pinned one included) serves the bucket.
 * Bits are checked, not assumed: a cuBLASLt that ships different kernels can
 * only lose speed here, never change an answer. HRMT_CUDA_GEMM_TUNE=0 skips
 * all this (the pinned algorithm for every M). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "hrmt_cuda_source_id.h" /* generated: HRMT_CUDA_SOURCE_ID (src/CMakeLists.txt) */

extern "C" {
#include "core/gemm_tune_file.h"
}

static_assert(sizeof(cublasLtMatmulAlgo_t) == HRMT_TUNE_ALGO_BYTES, "pick file's algorithm size");
static_assert(CU_LT_SLOTS == HRMT_TUNE_SLOTS && CU_LT_BUCKETS == HRMT_TUNE_BUCKETS,
              "pick file's slots and buckets");

#define TRY(expr)                     \
    do {                              \
        hrmt_status s_ = (expr);      \
        if (s_ != HRMT_OK) return s_; \
    } while (0)

namespace {

constexpr int CANDIDATES = 8;
constexpr int TIMED_RUNS = 20, TIMED_REPLAYS = 3;
constexpr uint64_t PROBE_ROWS = 1024; /* bits compared on at most this many rows */
/* The own narrow tiles are tried up to rows <= 128 << OWN_MAX_BUCKET (batch
 * 12 of HRM's 82 rows): above, cuBLASLt's larger tiles fill the SMs, and
 * timing them costs load time. */
constexpr int OWN_MAX_BUCKET = 3;
constexpr size_t OWN_MAX_ROWS = (size_t)128 << OWN_MAX_BUCKET;
/* The step's own M is tuned (cu_gemm_tune_rows) where a bucket's pick, timed
 * at the bucket's top M, can lose to tile quantisation at the step's M: above
 * the first bucket (its 128 rows make as many 64- and 128-row tiles as one
 * sample's 82) up to EXACT_MAX_ROWS, which bounds the scratch (~300 MB at
 * HRM's width). H200, HRM: 0.892 / 0.931 / 0.930 / 0.980 of the step at
 * batch 32 / 64 / 128 / 256; H100: 0.971 / 0.979 at batch 2 / 12, where the
 * fused gate_up at 164 rows and the block GEMMs at 984 take other tiles
 * than at 256 and 1024 rows (docs/CUDA-KERNELS.md, session 46). */
constexpr size_t EXACT_MIN_ROWS = 128, EXACT_MAX_ROWS = (size_t)1 << 15;

struct tune_ctx {
    hrmt_model *m;
    int own_shapes;                 /* gemm_wgmma.cu's tile shapes on this device */
    int verbose;                    /* HRMT_CUDA_GEMM_TUNE_LOG=1: each bucket's pick on stderr */
    uint16_t *a, *w, *c0, *c1, *c2; /* device: random A and W, three outputs */
    unsigned char *h0, *h1, *h2;    /* host copies of c0..c2 */
    cudaEvent_t ev0, ev1;
};

/* C [M, n] = A [M, k] W^T with algorithm `al` on the probe's buffers (rows
 * strided as the slot's, so the layouts are the model's own). 1: it ran. */
int run_lt(const tune_ctx *t, cu_lt_slot *sl, const cublasLtMatmulAlgo_t *al, uint64_t M, void *c) {
    hrmt_cuda *cu = t->m->ctx->cuda;
    cublasLtMatrixLayoutOpaque_t la, lc;
    cublasStatus_t st = cu_lt_layouts(sl, M, &la, &lc);
    const float one = 1.0f, zero = 0.0f;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmul(cu->lt, &sl->desc, &one, t->w, &sl->lw, t->a, &la, &zero, c, &lc, c,
                            &lc, al, cu->workspace, cu->ws_bytes, cu_stream(t->m));
    return st == CUBLAS_STATUS_SUCCESS;
}

/* An own kernel's launch that fails is no candidate: not an error of the
 * load (a sticky device error shows at the next synchronisation). */
int own_ran(const tune_ctx *t, hrmt_status s) {
    if (s == HRMT_OK) return 1;
    t->m->ctx->err[0] = '\0';
    (void)cudaGetLastError();
    return 0;
}

/* The same with sm90a/gemm_wgmma.cu's tile shape `shape`. */
int run_own(const tune_ctx *t, cu_lt_slot *sl, int shape, uint64_t M, void *c) {
    int done = 0;
    const hrmt_status s =
        cu_wgemm(t->m, shape, M, sl->n, sl->k, t->a, sl->lda, t->w, c, sl->ldc, &done);
    return own_ran(t, s) && done;
}

hrmt_status cuda_err(const tune_ctx *t, cudaError_t e, const char *what) {
    return e == cudaSuccess ? HRMT_OK : cu_fail(t->m->ctx, e, what);
}

/* *same = 1 when `cand(M, out)` writes what `ref(M, out)` does, rows of
 * `row` bytes, at M rows and at one sample's rows. A candidate that does not
 * run is not the same. */
template <class R, class F>
hrmt_status same_bits(tune_ctx *t, R &&ref, F &&cand, uint64_t M, size_t row, int *same) {
    *same = 0;
    const uint64_t T = t->m->T, mp = M < PROBE_ROWS ? M : PROBE_ROWS;
    if (!ref(mp, t->c0) || !cand(mp, t->c1) || !cand(T, t->c2)) return HRMT_OK;
    cudaStream_t st = cu_stream(t->m);
    const char *what = "cuda gemm tuning: probe download";
    TRY(cuda_err(t, cudaMemcpyAsync(t->h0, t->c0, mp * row, cudaMemcpyDeviceToHost, st), what));
    TRY(cuda_err(t, cudaMemcpyAsync(t->h1, t->c1, mp * row, cudaMemcpyDeviceToHost, st), what));
    TRY(cuda_err(t, cudaMemcpyAsync(t->h2, t->c2, T * row, cudaMemcpyDeviceToHost, st), what));
    TRY(cuda_err(t, cudaStreamSynchronize(st), what));
    const uint64_t cmp = T < mp ? T : mp;
    *same = !memcmp(t->h0, t->h1, mp * row) && !memcmp(t->h0, t->h2, cmp * row);
    return HRMT_OK;
}

/* Microseconds of `call()` (1: it ran): the best of TIMED_REPLAYS replays of
 * a graph of TIMED_RUNS calls, after one warm-up replay. Timed as a graph,
 * as the step runs: calls timed from the host measured the host's launch
 * rate at small M (~5-10 us a cublasLtMatmul call against kernels of a few
 * us), so the pick was noise and two processes could differ by 0.2 ms a step. */
template <class F>
hrmt_status time_us(tune_ctx *t, F &&call, float *us) {
    cudaStream_t st = cu_stream(t->m);
    const char *what = "cuda gemm tuning: timing";
    *us = INFINITY;
    /* One call outside the capture, so that whatever cuBLASLt sets up on an
     * algorithm's first use is not an API call inside it. */
    if (!call()) return HRMT_OK;
    TRY(cuda_err(t, cudaStreamSynchronize(st), what));
    TRY(cuda_err(t, cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal), what));
    int ok = 1;
    for (int i = 0; i < TIMED_RUNS && ok; i++) ok = call();
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(st, &graph);
    cudaGraphExec_t exec = NULL;
    if (e == cudaSuccess && ok) e = cudaGraphInstantiate(&exec, graph, 0);
    if (graph) (void)cudaGraphDestroy(graph);
    if (e != cudaSuccess || !ok) {
        (void)cudaGetLastError(); /* a call that cannot be captured: not a candidate */
        return HRMT_OK;
    }
    float best = INFINITY;
    e = cudaGraphLaunch(exec, st);
    for (int r = 0; r < TIMED_REPLAYS && e == cudaSuccess; r++) {
        float ms = 0.0f;
        e = cudaEventRecord(t->ev0, st);
        if (e == cudaSuccess) e = cudaGraphLaunch(exec, st);
        if (e == cudaSuccess) e = cudaEventRecord(t->ev1, st);
        if (e == cudaSuccess) e = cudaEventSynchronize(t->ev1);
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, t->ev0, t->ev1);
        if (e == cudaSuccess && ms < best) best = ms;
    }
    const cudaError_t e2 = cudaGraphExecDestroy(exec);
    TRY(cuda_err(t, e, what));
    TRY(cuda_err(t, e2, what));
    *us = best * 1000.0f / TIMED_RUNS;
    return HRMT_OK;
}

/* *us: cand's time at M rows when it gives ref's bytes (same_bits), else
 * infinity. */
template <class R, class F>
hrmt_status checked_time(tune_ctx *t, R &&ref, F &&cand, uint64_t M, size_t row, float *us) {
    int same = 0;
    *us = INFINITY;
    TRY(same_bits(t, ref, cand, M, row, &same));
    if (same)
        TRY(time_us(
            t, [&] { return cand(M, t->c1); }, us));
    return HRMT_OK;
}

/* "id I tile T stages S cluster C swizzle W custom O" of a cuBLASLt algorithm, for
 * the log: which of the candidates won, so that two processes' (or a plain
 * and an ncu run's) picks can be compared. */
void algo_desc(const cublasLtMatmulAlgo_t *a, char *buf, size_t len) {
    /* Each attribute's width is cublasLt.h's: a get of another size fails. */
    const struct {
        cublasLtMatmulAlgoConfigAttributes_t at;
        const char *name;
        size_t bytes;
    } f[] = {{CUBLASLT_ALGO_CONFIG_ID, "id", 4},
             {CUBLASLT_ALGO_CONFIG_TILE_ID, "tile", 4},
             {CUBLASLT_ALGO_CONFIG_STAGES_ID, "stages", 4},
             {CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, "cluster", 2},
             {CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, "swizzle", 4},
             {CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, "custom", 4}};
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof f / sizeof f[0] && used < len; i++) {
        uint32_t v32 = 0;
        uint16_t v16 = 0;
        size_t wr = 0;
        void *dst = f[i].bytes == 2 ? (void *)&v16 : (void *)&v32;
        if (cublasLtMatmulAlgoConfigGetAttribute(a, f[i].at, dst, f[i].bytes, &wr) !=
            CUBLAS_STATUS_SUCCESS)
            continue;
        const unsigned v = f[i].bytes == 2 ? v16 : v32;
        const int n = snprintf(buf + used, len - used, "%s%s %u", used ? " " : "", f[i].name, v);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* The fastest at M rows ("rows <= M" for a bucket, "rows = M" for an exact
 * M in the log) of the pinned algorithm, the heuristic's candidates that
 * give its bits and, when own_ok, the own tile shapes: into *algo and *own
 * (1 + the shape; 0: cuBLASLt). */
hrmt_status tune_m(tune_ctx *t, cu_lt_slot *sl, uint64_t M, int own_ok, const char *le,
                   cublasLtMatmulAlgo_t *algo, signed char *own) {
    hrmt_cuda *cu = t->m->ctx->cuda;
    const size_t row = sl->ldc * 2;
    auto pinned = [&](uint64_t rows, void *c) { return run_lt(t, sl, &sl->algo, rows, c); };
    *algo = sl->algo;
    *own = 0;
    float best = 0.0f;
    TRY(time_us(
        t, [&] { return pinned(M, t->c1); }, &best));
    if (t->verbose)
        fprintf(stderr, "hrmt gemm tuning: %zux%zu pinned, rows %s %llu: %.2f us\n", sl->n, sl->k,
                le, (unsigned long long)M, best);
    cublasLtMatrixLayoutOpaque_t la, lc;
    cublasLtMatmulPreference_t pref = NULL;
    cublasStatus_t st = cu_lt_layouts(sl, M, &la, &lc);
    const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &cu->ws_bytes, sizeof cu->ws_bytes);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                  &no_reduction, sizeof no_reduction);
    cublasLtMatmulHeuristicResult_t res[CANDIDATES];
    int got = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(cu->lt, &sl->desc, &sl->lw, &la, &lc, &lc, pref,
                                            CANDIDATES, res, &got);
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS) got = 0; /* no candidates: the pinned one serves */
    for (int i = 0; i < got; i++) {
        int32_t splitk = 1;
        size_t wr = 0;
        if (cublasLtMatmulAlgoConfigGetAttribute(&res[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                 &splitk, sizeof splitk,
                                                 &wr) != CUBLAS_STATUS_SUCCESS ||
            splitk > 1)
            continue;
        const cublasLtMatmulAlgo_t *al = &res[i].algo;
        auto cand = [&](uint64_t rows, void *c) { return run_lt(t, sl, al, rows, c); };
        float us = 0.0f;
        TRY(checked_time(t, pinned, cand, M, row, &us));
        if (t->verbose) {
            /* Each candidate's time, so that two runs' picks can be told apart
             * from noise: the line ends in "us", not in the pick lines' ")". */
            char desc[128];
            algo_desc(al, desc, sizeof desc);
            fprintf(stderr, "hrmt gemm tuning: %zux%zu candidate %d [%s], rows %s %llu: %.2f us\n",
                    sl->n, sl->k, i, desc, le, (unsigned long long)M, us);
        }
        if (us < best) {
            best = us;
            *algo = res[i].algo;
        }
    }
    /* The own narrow tiles, where few rows leave cuBLASLt's tiles short of SMs. */
    const float best_lt = best;
    const int shapes = own_ok ? t->own_shapes : 0;
    for (int i = 0; i < shapes; i++) {
        auto cand = [&](uint64_t rows, void *c) { return run_own(t, sl, i, rows, c); };
        float us = 0.0f;
        TRY(checked_time(t, pinned, cand, M, row, &us));
        if (t->verbose)
            fprintf(stderr, "hrmt gemm tuning: %zux%zu shape %s, rows %s %llu: %.2f us\n", sl->n,
                    sl->k, cu_wgemm_name(i), le, (unsigned long long)M, us);
        if (us < best) {
            best = us;
            *own = (signed char)(i + 1);
        }
    }
    if (t->verbose) {
        char desc[128];
        algo_desc(algo, desc, sizeof desc);
        fprintf(stderr,
                "hrmt gemm tuning: %zux%zu, rows %s %llu: %s (%.2f us; cuBLASLt %.2f: %s)\n", sl->n,
                sl->k, le, (unsigned long long)M, *own ? cu_wgemm_name(*own - 1) : "cuBLASLt", best,
                best_lt, desc);
    }
    return HRMT_OK;
}

hrmt_status tune_bucket(tune_ctx *t, cu_lt_slot *sl, int b) {
    return tune_m(t, sl, (uint64_t)128 << b, b <= OWN_MAX_BUCKET, "<=", &sl->small[b], &sl->own[b]);
}

/* The unfused gate_up GEMM (pinned) and SwiGLU launches at `rows` rows into
 * c: the bytes every fused gate_up shape must give. 1: they ran. */
int glu_launches(const tune_ctx *t, cu_lt_slot *gu, uint64_t rows, void *c) {
    hrmt_model *m = t->m;
    const size_t I = m->inter;
    if (!run_lt(t, gu, &gu->algo, rows, t->c2)) return 0;
    hrmt_cuda_swiglu(m->ctx->cuda, m->dt, rows, I, t->c2, 2 * I, c, I, 0);
    return own_ran(t, cu_check(m->ctx, "cuda swiglu"));
}

/* The fused gate_up + SwiGLU's tile shapes at M rows: each must give the
 * launches' bytes (the pinned gate_up GEMM, then the SwiGLU table kernel);
 * the fastest (1 + its index) into *shape. */
hrmt_status tune_glu_m(tune_ctx *t, cu_lt_slot *gu, uint64_t M, const char *le,
                       signed char *shape) {
    hrmt_model *m = t->m;
    const size_t row = m->inter * 2;
    auto launches = [&](uint64_t rows, void *c) { return glu_launches(t, gu, rows, c); };
    float best = INFINITY;
    *shape = 0;
    const int shapes = cu_glu_shapes(m); /* image checks: once, not per shape */
    for (int i = 0; i < shapes; i++) {
        if (!cu_glu_shape_tuned(m, i)) continue;
        auto cand = [&](uint64_t rows, void *c) {
            return own_ran(t, cu_glu_shape(m, i, rows, t->a, t->w, c));
        };
        float us = 0.0f;
        TRY(checked_time(t, launches, cand, M, row, &us));
        if (t->verbose)
            fprintf(stderr, "hrmt gemm tuning: fused gate_up shape %d, rows %s %llu: %.2f us\n", i,
                    le, (unsigned long long)M, us);
        if (us < best) {
            best = us;
            *shape = (signed char)(i + 1);
        }
    }
    if (t->verbose)
        fprintf(stderr, "hrmt gemm tuning: fused gate_up, rows %s %llu: shape %d (%.2f us)\n", le,
                (unsigned long long)M, *shape - 1, best);
    return HRMT_OK;
}

void fill_random(uint16_t *h, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* bf16 in [-1, 1): sign, exponent 119..126, 7 random mantissa bits */
        const uint32_t r = (uint32_t)(seed >> 33);
        h[i] = (uint16_t)((r & 0x8000u) | ((119u + (r >> 7) % 8u) << 7) | (r & 0x7fu));
    }
}

/* HRMT_CUDA_WGEMM_SHAPE / HRMT_CUDA_GLU_SHAPE = i (tests, development):
 * that tile shape serves every bucket instead of the tuner's pick, so that
 * each shape's bits can be checked whatever the timing. *shape -1: unset. */
hrmt_status forced_shape(hrmt_model *m, const char *name, int count, int *shape) {
    *shape = -1;
    const char *env = getenv(name);
    if (!env) return HRMT_OK;
    char *end = NULL;
    const long v = strtol(env, &end, 10);
    if (end == env || *end || v < 0 || v >= count)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                         "%s='%s' is not a tile shape of this model and device (0..%d)", name, env,
                         count - 1);
    *shape = (int)v;
    return HRMT_OK;
}

/* Scratch and events for tuning at up to `rows` rows: random A and W, the
 * outputs. *skip: the device cannot spare the scratch (not an error: the
 * pinned algorithm, or the buckets, serve). tune_close frees what it made. */
hrmt_status tune_open(hrmt_model *m, size_t rows, tune_ctx *t, int *skip) {
    struct hrmt_model_cuda *g = cu_model(m);
    memset(t, 0, sizeof *t);
    t->m = m;
    *skip = 0;
    size_t maxn = 0, maxk = 0, maxw = 0; /* widest C and A rows, largest W */
    for (int i = 0; i < g->nlt; i++) {
        maxn = g->lt[i].ldc > maxn ? g->lt[i].ldc : maxn;
        maxk = g->lt[i].lda > maxk ? g->lt[i].lda : maxk;
        maxw = g->lt[i].n * g->lt[i].k > maxw ? g->lt[i].n * g->lt[i].k : maxw;
    }
    const size_t probe = PROBE_ROWS > m->T ? PROBE_ROWS : m->T;
    const size_t a_el = rows * maxk, w_el = maxw, c_el = rows * maxn;
    const char *log = getenv("HRMT_CUDA_GEMM_TUNE_LOG");
    t->verbose = log && !strcmp(log, "1");
    hrmt_status s = HRMT_OK;
    uint16_t *host = (uint16_t *)malloc((a_el > w_el ? a_el : w_el) * 2);
    t->h0 = (unsigned char *)malloc(probe * maxn * 2);
    t->h1 = (unsigned char *)malloc(probe * maxn * 2);
    t->h2 = (unsigned char *)malloc(probe * maxn * 2);
    if (!host || !t->h0 || !t->h1 || !t->h2)
        s = hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "cuda gemm tuning: host buffers");
    hrmt_cuda *cu = m->ctx->cuda;
    char *err = m->ctx->err;
    const size_t el = sizeof m->ctx->err;
    /* The reference output only ever holds a probe's rows (same_bits). */
    if (s == HRMT_OK) s = hrmt_cuda_malloc(cu, a_el * 2, (void **)&t->a, err, el);
    if (s == HRMT_OK) s = hrmt_cuda_malloc(cu, w_el * 2, (void **)&t->w, err, el);
    if (s == HRMT_OK) s = hrmt_cuda_malloc(cu, probe * maxn * 2, (void **)&t->c0, err, el);
    if (s == HRMT_OK) s = hrmt_cuda_malloc(cu, c_el * 2, (void **)&t->c1, err, el);
    if (s == HRMT_OK) s = hrmt_cuda_malloc(cu, probe * maxn * 2, (void **)&t->c2, err, el);
    if (s == HRMT_ERR_OUT_OF_MEMORY) {
        *skip = 1;
        s = HRMT_OK;
        m->ctx->err[0] = '\0'; /* not an error of the load or the step */
    }
    if (s == HRMT_OK && !*skip) {
        fill_random(host, a_el, 0x5eed);
        s = hrmt_cuda_memcpy(cu, t->a, host, a_el * 2, 0, err, el);
    }
    if (s == HRMT_OK && !*skip) {
        fill_random(host, w_el, 0xbeef);
        s = hrmt_cuda_memcpy(cu, t->w, host, w_el * 2, 0, err, el);
    }
    free(host);
    if (s == HRMT_OK && !*skip)
        s = cuda_err(t, cudaEventCreate(&t->ev0), "cuda gemm tuning: event");
    if (s == HRMT_OK && !*skip)
        s = cuda_err(t, cudaEventCreate(&t->ev1), "cuda gemm tuning: event");
    return s;
}

/* The own shapes slot i may take of own_shapes: none for the gate_up GEMM
 * when the fused MLP serves it (the step never calls that GEMM). */
int slot_own_shapes(const struct hrmt_model_cuda *g, int i, int own_shapes) {
    return g->glu && i == CU_LT_GATE_UP ? 0 : own_shapes;
}

/* The pick file written (the log says so). */
hrmt_status write_picks(hrmt_model *m, int verbose) {
    const hrmt_tune_file *c = cu_model(m)->tcache;
    TRY(hrmt_tune_file_write(m->ctx, c));
    if (verbose) fprintf(stderr, "hrmt gemm tuning: cache '%s': written\n", c->path);
    return HRMT_OK;
}

/* What the picks depend on, for the pick file's key: the device, the
 * libraries, the slots' shapes and the options that change which candidates
 * are timed or how (a file made under other ones is tuned again). */
void tune_key(hrmt_model *m, int lt_only, char *key, size_t len) {
    const struct hrmt_model_cuda *g = cu_model(m);
    const cudaDeviceProp *p = &m->ctx->cuda->prop;
    int rt = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) rt = -1;
    unsigned glu_mask = 0;
    const int glu_shapes = g->glu && !lt_only ? cu_glu_shapes(m) : 0;
    for (int i = 0; i < glu_shapes && i < 32; i++)
        if (cu_glu_shape_tuned(m, i)) glu_mask |= 1u << i;
    int n = snprintf(
        key, len, "%s|sm %d.%d|sms %d|cublasLt %zu|cudart %d|hrmt %d.%d.%d|src %s|T %zu", p->name,
        p->major, p->minor, p->multiProcessorCount, cublasLtGetVersion(), rt, HRMT_VERSION_MAJOR,
        HRMT_VERSION_MINOR, HRMT_VERSION_PATCH, HRMT_CUDA_SOURCE_ID, m->T);
    for (int i = 0; i < g->nlt && n > 0 && (size_t)n < len; i++)
        n += snprintf(key + n, len - n, "|%zux%zu/%zu/%zu", g->lt[i].n, g->lt[i].k, g->lt[i].lda,
                      g->lt[i].ldc);
    if (n > 0 && (size_t)n < len)
        snprintf(key + n, len - n, "|lt %d|own %d|glu %d %x", lt_only,
                 lt_only ? 0 : cu_wgemm_shapes(m), g->glu, glu_mask);
    for (char *c = key; *c; c++)
        if (*c == '\n' || *c == ' ') *c = '_'; /* one line, one token */
}

/* *ok = 1 when a cuBLASLt algorithm and own shape (1 + it; 0: none) read
 * from the pick file may serve slot sl at M rows: cuBLASLt accepts the
 * algorithm, the own shape is one the tuner would try there (below
 * own_shapes), and both give the pinned algorithm's bits. */
hrmt_status cached_gemm_ok(tune_ctx *t, cu_lt_slot *sl, const cublasLtMatmulAlgo_t *al, int own,
                           int own_shapes, uint64_t M, int *ok) {
    *ok = 0;
    hrmt_cuda *cu = t->m->ctx->cuda;
    cublasLtMatrixLayoutOpaque_t la, lc;
    cublasLtMatmulHeuristicResult_t res;
    if (own < 0 || own > own_shapes || cu_lt_layouts(sl, M, &la, &lc) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulAlgoCheck(cu->lt, &sl->desc, &sl->lw, &la, &lc, &lc, al, &res) !=
            CUBLAS_STATUS_SUCCESS ||
        res.workspaceSize > cu->ws_bytes)
        return HRMT_OK;
    const size_t row = sl->ldc * 2;
    auto pinned = [&](uint64_t rows, void *c) { return run_lt(t, sl, &sl->algo, rows, c); };
    auto lt = [&](uint64_t rows, void *c) { return run_lt(t, sl, al, rows, c); };
    auto mine = [&](uint64_t rows, void *c) { return run_own(t, sl, own - 1, rows, c); };
    TRY(same_bits(t, pinned, lt, M, row, ok));
    if (*ok && own) TRY(same_bits(t, pinned, mine, M, row, ok));
    return HRMT_OK;
}

/* The same for a fused gate_up shape (1 + it; 0: untuned, the launches). */
hrmt_status cached_glu_ok(tune_ctx *t, cu_lt_slot *gu, int shape, uint64_t M, int *ok) {
    hrmt_model *m = t->m;
    *ok = shape == 0;
    if (shape <= 0 || shape > cu_glu_shapes(m) || !cu_glu_shape_tuned(m, shape - 1)) return HRMT_OK;
    auto launches = [&](uint64_t rows, void *c) { return glu_launches(t, gu, rows, c); };
    auto cand = [&](uint64_t rows, void *c) {
        return own_ran(t, cu_glu_shape(m, shape - 1, rows, t->a, t->w, c));
    };
    return same_bits(t, launches, cand, M, m->inter * 2, ok);
}

/* The buckets' picks from the pick file, each checked (cached_gemm_ok,
 * cached_glu_ok): *used 1 when all passed and now serve; 0 leaves the model
 * untouched (the tuner then times the candidates). */
hrmt_status cached_buckets(tune_ctx *t, int own_shapes, int lt_only, int *used) {
    struct hrmt_model_cuda *g = cu_model(t->m);
    const hrmt_tune_file *c = g->tcache;
    *used = 0;
    int ok = 1;
    for (int i = 0; i < g->nlt && ok; i++)
        for (int b = 0; b < CU_LT_BUCKETS && ok; b++) {
            const int own = slot_own_shapes(g, i, own_shapes);
            cublasLtMatmulAlgo_t al; /* copied: the file's bytes are not aligned for it */
            memcpy(&al, c->bucket[i][b].algo, sizeof al);
            TRY(cached_gemm_ok(t, &g->lt[i], &al, c->bucket[i][b].own,
                               b <= OWN_MAX_BUCKET ? own : 0, (uint64_t)128 << b, &ok));
        }
    for (int b = 0; b < CU_LT_BUCKETS && ok && g->glu && !lt_only; b++)
        TRY(cached_glu_ok(t, &g->lt[CU_LT_GATE_UP], c->glu_shape[b], (uint64_t)128 << b, &ok));
    if (t->verbose)
        fprintf(stderr, "hrmt gemm tuning: cache '%s': buckets %s\n", c->path,
                ok ? "read and checked" : "fail their check: tuned again");
    if (!ok) return HRMT_OK;
    for (int i = 0; i < g->nlt; i++) {
        for (int b = 0; b < CU_LT_BUCKETS; b++) {
            memcpy(&g->lt[i].small[b], c->bucket[i][b].algo, HRMT_TUNE_ALGO_BYTES);
            g->lt[i].own[b] = c->bucket[i][b].own;
        }
        g->lt[i].nsmall = CU_LT_BUCKETS;
    }
    if (g->glu && !lt_only) memcpy(g->glu_shape, c->glu_shape, sizeof g->glu_shape);
    *used = 1;
    return HRMT_OK;
}

/* The tuned buckets into the pick file and the file written. */
hrmt_status store_buckets(tune_ctx *t, int lt_only) {
    struct hrmt_model_cuda *g = cu_model(t->m);
    hrmt_tune_file *c = g->tcache;
    for (int i = 0; i < g->nlt; i++)
        for (int b = 0; b < CU_LT_BUCKETS; b++) {
            memcpy(c->bucket[i][b].algo, &g->lt[i].small[b], HRMT_TUNE_ALGO_BYTES);
            c->bucket[i][b].own = g->lt[i].own[b];
        }
    if (g->glu && !lt_only) memcpy(c->glu_shape, g->glu_shape, sizeof c->glu_shape);
    c->have_buckets = 1;
    return write_picks(t->m, t->verbose);
}

/* An exact entry from the pick file checked at its rows as cached_buckets
 * checks the buckets: *used 1 when every pick passed, *p then filled. */
hrmt_status cached_exact(tune_ctx *t, const hrmt_tune_exact *e, int own_shapes, cu_exact_pick *p,
                         int *used) {
    struct hrmt_model_cuda *g = cu_model(t->m);
    int ok = 1;
    for (int i = 0; i < g->nlt && ok; i++) {
        const int own = slot_own_shapes(g, i, own_shapes);
        cublasLtMatmulAlgo_t al;
        memcpy(&al, e->slot[i].algo, sizeof al);
        TRY(cached_gemm_ok(t, &g->lt[i], &al, e->slot[i].own, own, e->rows, &ok));
    }
    if (ok && g->glu) TRY(cached_glu_ok(t, &g->lt[CU_LT_GATE_UP], e->glu_shape, e->rows, &ok));
    if (t->verbose)
        fprintf(stderr, "hrmt gemm tuning: cache '%s': rows = %zu %s\n", g->tcache->path, e->rows,
                ok ? "read and checked" : "fail their check: tuned again");
    *used = ok;
    if (!ok) return HRMT_OK;
    for (int i = 0; i < g->nlt; i++) {
        memcpy(&p->algo[i], e->slot[i].algo, HRMT_TUNE_ALGO_BYTES);
        p->own[i] = e->slot[i].own;
    }
    p->glu_shape = e->glu_shape;
    return HRMT_OK;
}

/* An exact pick into the pick file's form. */
hrmt_tune_exact to_file_entry(const struct hrmt_model_cuda *g, const cu_exact_pick *p) {
    hrmt_tune_exact e;
    memset(&e, 0, sizeof e);
    e.rows = p->rows;
    for (int i = 0; i < g->nlt; i++) {
        memcpy(e.slot[i].algo, &p->algo[i], HRMT_TUNE_ALGO_BYTES);
        e.slot[i].own = p->own[i];
    }
    e.glu_shape = p->glu_shape;
    return e;
}

void tune_close(tune_ctx *t) {
    hrmt_cuda *cu = t->m->ctx->cuda;
    if (t->ev0) (void)cudaEventDestroy(t->ev0);
    if (t->ev1) (void)cudaEventDestroy(t->ev1);
    void *dev[5] = {t->a, t->w, t->c0, t->c1, t->c2};
    for (int i = 0; i < 5; i++)
        if (dev[i]) hrmt_cuda_free(cu, dev[i]);
    free(t->h0);
    free(t->h1);
    free(t->h2);
}

} // namespace

hrmt_status cu_gemm_tune(hrmt_model *m) {
    struct hrmt_model_cuda *g = cu_model(m);
    int fw = -1, fg = -1, exact = 1;
    TRY(cu_env_switch(m, "HRMT_CUDA_GEMM_TUNE_EXACT", 1, &exact));
    g->tune_exact = 0;
    TRY(forced_shape(m, "HRMT_CUDA_WGEMM_SHAPE", g->nlt ? cu_wgemm_shapes(m) : 0, &fw));
    TRY(forced_shape(m, "HRMT_CUDA_GLU_SHAPE", g->glu ? cu_glu_shapes(m) : 0, &fg));
    if (fw >= 0 || fg >= 0) {
        for (int b = 0; b < CU_LT_BUCKETS; b++) {
            for (int i = 0; i < g->nlt && fw >= 0; i++) g->lt[i].own[b] = (signed char)(fw + 1);
            if (fg >= 0) g->glu_shape[b] = (signed char)(fg + 1);
        }
        /* No tuning: the pinned algorithm for what a shape cannot take. */
        for (int i = 0; i < g->nlt && fw >= 0; i++) {
            for (int b = 0; b < CU_LT_BUCKETS; b++) g->lt[i].small[b] = g->lt[i].algo;
            g->lt[i].nsmall = CU_LT_BUCKETS;
        }
        return HRMT_OK;
    }
    const char *env = getenv("HRMT_CUDA_GEMM_TUNE");
    if (env && strcmp(env, "0") != 0 && strcmp(env, "1") != 0 && strcmp(env, "lt") != 0)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "HRMT_CUDA_GEMM_TUNE='%s' is not 0, 1 or lt",
                         env);
    const int lt_only = env && !strcmp(env, "lt");
    if (g->nlt == 0 || (env && !strcmp(env, "0"))) return HRMT_OK;
    const size_t rows = (size_t)128 << (CU_LT_BUCKETS - 1);
    if (m->T > rows) return HRMT_OK; /* one sample fills the buckets: the pinned one serves */
    const char *cache = getenv("HRMT_CUDA_GEMM_TUNE_CACHE");
    if (cache && *cache) {
        char key[HRMT_TUNE_KEY];
        tune_key(m, lt_only, key, sizeof key);
        TRY(hrmt_tune_file_open(m->ctx, cache, key, g->nlt, g->glu && !lt_only, &g->tcache));
    }
    tune_ctx t;
    int skip = 0, cached = 0;
    hrmt_status s = tune_open(m, rows, &t, &skip);
    if (s == HRMT_OK && !skip) t.own_shapes = lt_only ? 0 : cu_wgemm_shapes(m);
    const int own_shapes = t.own_shapes;
    if (s == HRMT_OK && !skip && g->tcache && g->tcache->have_buckets)
        s = cached_buckets(&t, own_shapes, lt_only, &cached);
    for (int i = 0; i < g->nlt && s == HRMT_OK && !skip && !cached; i++) {
        t.own_shapes = slot_own_shapes(g, i, own_shapes);
        for (int b = 0; b < CU_LT_BUCKETS && s == HRMT_OK; b++) s = tune_bucket(&t, &g->lt[i], b);
        if (s == HRMT_OK) g->lt[i].nsmall = CU_LT_BUCKETS;
    }
    for (int b = 0; b < CU_LT_BUCKETS && s == HRMT_OK && !skip && !cached && g->glu && !lt_only;
         b++)
        s = tune_glu_m(&t, &g->lt[CU_LT_GATE_UP], (uint64_t)128 << b, "<=", &g->glu_shape[b]);
    if (s == HRMT_OK && !skip && !cached && g->tcache) s = store_buckets(&t, lt_only);
    if (s != HRMT_OK) {
        for (int i = 0; i < g->nlt; i++) {
            g->lt[i].nsmall = 0;
            memset(g->lt[i].own, 0, sizeof g->lt[i].own);
        }
        memset(g->glu_shape, 0, sizeof g->glu_shape);
    }
    tune_close(&t);
    /* The step's own M tuned at its first step (cu_gemm_tune_rows) where the
     * buckets were; off with HRMT_CUDA_GEMM_TUNE_EXACT=0. */
    g->tune_exact = s == HRMT_OK && !skip && !lt_only && exact;
    return s;
}

/* The entry made for these rows, tuned or not; NULL: none yet. */
static const cu_exact_pick *exact_entry(const struct hrmt_model_cuda *g, size_t rows) {
    const unsigned n = g->exact_made < CU_EXACT ? g->exact_made : CU_EXACT;
    for (unsigned i = 0; i < n; i++)
        if (g->exact[i].rows == rows) return &g->exact[i];
    return NULL;
}

const cu_exact_pick *cu_exact_for(const hrmt_model *m, size_t rows) {
    const cu_exact_pick *e = exact_entry(cu_model(m), rows);
    return e && e->tuned ? e : NULL;
}

hrmt_status cu_gemm_tune_rows(hrmt_model *m, size_t rows) {
    struct hrmt_model_cuda *g = cu_model(m);
    if (!g->tune_exact || rows <= EXACT_MIN_ROWS || rows > EXACT_MAX_ROWS) return HRMT_OK;
    /* A bucket's own M was tuned at load. */
    if ((rows & (rows - 1)) == 0 && rows <= (size_t)128 << (CU_LT_BUCKETS - 1)) return HRMT_OK;
    if (exact_entry(g, rows)) return HRMT_OK;
    cu_exact_pick p;
    memset(&p, 0, sizeof p);
    p.rows = rows;
    tune_ctx t;
    int skip = 0;
    hrmt_status s = tune_open(m, rows, &t, &skip);
    /* The own narrow tiles where the buckets try them; never for the gate_up
     * GEMM when the fused MLP serves it (slot_own_shapes). */
    const int own_ok = rows <= OWN_MAX_ROWS;
    const int own_shapes = s == HRMT_OK && !skip && own_ok ? cu_wgemm_shapes(m) : 0;
    /* A pick from the pick file serves once its bits are checked. */
    const hrmt_tune_exact *from = hrmt_tune_file_exact(g->tcache, rows);
    int cached = 0;
    if (s == HRMT_OK && !skip && from) s = cached_exact(&t, from, own_shapes, &p, &cached);
    for (int i = 0; i < g->nlt && s == HRMT_OK && !skip && !cached; i++) {
        t.own_shapes = slot_own_shapes(g, i, own_shapes);
        s = tune_m(&t, &g->lt[i], rows, own_ok, "=", &p.algo[i], &p.own[i]);
    }
    if (s == HRMT_OK && !skip && !cached && g->glu)
        s = tune_glu_m(&t, &g->lt[CU_LT_GATE_UP], rows, "=", &p.glu_shape);
    const int verbose = t.verbose;
    tune_close(&t);
    if (s != HRMT_OK) return s;
    /* Scratch the device cannot spare: the buckets serve these rows (and
     * the entry says so, so that the next step does not try again). */
    p.tuned = !skip;
    g->exact[g->exact_made++ % CU_EXACT] = p;
    if (g->tcache && p.tuned && !cached) {
        const hrmt_tune_exact e = to_file_entry(g, &p);
        hrmt_tune_file_put_exact(g->tcache, &e);
        TRY(write_picks(m, verbose));
    }
    return HRMT_OK;
}
