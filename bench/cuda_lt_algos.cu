/* Do cuBLASLt algorithms that do not split K give bitwise identical outputs, and which is
 * fastest at small M? For each HRM shape (n, k) and each M this program runs the "pinned"
 * algorithm (heuristic result[0] at M=16384 with split-K reductions excluded, as the model would
 * pin it) as the reference, then every no-split-K candidate cuBLASLt offers at that M: the
 * heuristic's list ("heur", up to 32) and configurations enumerated by hand ("enum":
 * cublasLtMatmulAlgoGetIds x CUBLASLT_ALGO_CAP_TILE_IDS with split-K 1, no reduction, stages
 * auto; where cublasLtMatmulAlgoCheck refuses that, the first accepted stages id / cluster shape
 * (auto, 1x1x1) / custom option 0..7), at most 80 candidates per (shape, M). Each candidate is
 * compared bit for bit with the pinned output (SAME/DIFF) and timed: 10 warm-up runs, median of
 * 50 cudaEvent-timed runs (2 + 5 when a run takes over 1 ms). Last, per shape: are rows
 * 0..Mmin-1 of the fastest SAME candidate at the smallest M the bits of the pinned algorithm at
 * the largest M? C[m, n] = A[m, k] W[n, k]^T, bf16 in/out, F32 compute. Tile names are read from
 * ${CUDA_HOME:-/usr/local/cuda}/include/cublasLt.h when it is there. Not part of CMake.
 * On the GPU machine, from the repository root:
 *   nvcc -std=c++17 -O3 -arch=sm_90 -I include -I src bench/cuda_lt_algos.cu \
 *        -lcublasLt -o /tmp/lt_algos && /tmp/lt_algos [M1,M2,...]
 * (default M list 82,656,5248,20992). Exit status 0. */
#include <cublasLt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_check.cuh"

static cublasLtHandle_t g_lt;
static void *g_ws;
static const size_t WS = 32u << 20;
static const int MAX_CAND = 80, PIN_M = 16384;
static cudaEvent_t g_ev0, g_ev1;

/* C[m, n] (row-major, bf16) = A[m, k] W[n, k]^T; column-major: C^T = W A^T. */
struct lt_plan {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
};

static lt_plan make_plan(int m, int n, int k) {
    lt_plan p;
    LT(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
    LT(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
    LT(cublasLtMatrixLayoutCreate(&p.la, CUDA_R_16BF, k, n, k));
    LT(cublasLtMatrixLayoutCreate(&p.lb, CUDA_R_16BF, k, m, k));
    LT(cublasLtMatrixLayoutCreate(&p.lc, CUDA_R_16BF, n, m, n));
    return p;
}

static void free_plan(lt_plan &p) {
    LT(cublasLtMatrixLayoutDestroy(p.la));
    LT(cublasLtMatrixLayoutDestroy(p.lb));
    LT(cublasLtMatrixLayoutDestroy(p.lc));
    LT(cublasLtMatmulDescDestroy(p.desc));
}

/* Returns the matmul's status so that a failing candidate can be skipped. */
static cublasStatus_t run_lt(const lt_plan &p, const cublasLtMatmulAlgo_t &algo, const uint16_t *A,
                             const uint16_t *W, uint16_t *C) {
    const float one = 1.0f, zero = 0.0f;
    return cublasLtMatmul(g_lt, p.desc, &one, W, p.la, A, p.lb, &zero, C, p.lc, C, p.lc, &algo,
                          g_ws, WS, 0);
}

/* Runs algo into C (pre-filled with 0xff) and fetches C[0..mn) into out; false (with the reason
 * printed) when the matmul fails. */
static bool run_fetch(const lt_plan &p, const cublasLtMatmulAlgo_t &a, const uint16_t *A,
                      const uint16_t *W, uint16_t *C, size_t mn, uint16_t *out) {
    CK(cudaMemset(C, 0xff, mn * 2));
    const cublasStatus_t st = run_lt(p, a, A, W, C);
    if (st != CUBLAS_STATUS_SUCCESS) {
        printf("  matmul failed: %s, skipped\n", cublasLtGetStatusString(st));
        return false;
    }
    CK(cudaMemcpy(out, C, mn * 2, cudaMemcpyDeviceToHost));
    return true;
}

/* Valid for plan p (cublasLtMatmulAlgoCheck) and within the 32 MiB workspace. */
static bool check_algo(const lt_plan &p, const cublasLtMatmulAlgo_t &algo) {
    cublasLtMatmulHeuristicResult_t r{};
    return cublasLtMatmulAlgoCheck(g_lt, p.desc, p.la, p.lb, p.lc, p.lc, &algo, &r) ==
               CUBLAS_STATUS_SUCCESS &&
           r.workspaceSize <= WS;
}

/* Median time in microseconds of f: 10 warm-up runs, then 50 timed runs (2 + 5 when the first
 * run takes over 1 ms); -1 when a run fails. */
static float median_us(const std::function<cublasStatus_t()> &f) {
    std::vector<float> t;
    for (int i = 0, warm = 10, reps = 50; i < warm + reps; i++) {
        CK(cudaEventRecord(g_ev0));
        if (f() != CUBLAS_STATUS_SUCCESS) return -1.0f;
        CK(cudaEventRecord(g_ev1));
        CK(cudaEventSynchronize(g_ev1));
        float ms;
        CK(cudaEventElapsedTime(&ms, g_ev0, g_ev1));
        if (i == 0 && ms > 1.0f) warm = 2, reps = 5;
        if (i >= warm) t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* cublasLtMatmulTile_t names ("CUBLASLT_MATMUL_TILE_<RxC> = id") from cublasLt.h. */
static std::vector<std::string> g_tiles;

static void load_tile_names() {
    const char *home = getenv("CUDA_HOME");
    const std::string path = std::string(home ? home : "/usr/local/cuda") + "/include/cublasLt.h";
    FILE *f = fopen(path.c_str(), "r");
    char line[256], name[32];
    unsigned id;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, " CUBLASLT_MATMUL_TILE_%31[0-9x] = %u", name, &id) == 2 && id < 4096) {
            if (g_tiles.size() <= id) g_tiles.resize(id + 1);
            g_tiles[id] = name;
        }
    if (f) fclose(f);
    printf("tile names: %zu ids from %s\n", g_tiles.size(), path.c_str());
}

static const char *tile_name(uint32_t t) {
    return t < g_tiles.size() && !g_tiles[t].empty() ? g_tiles[t].c_str() : t ? "?" : "undef";
}

template <typename T>
static void get_cfg(const cublasLtMatmulAlgo_t &a, cublasLtMatmulAlgoConfigAttributes_t at, T *v) {
    size_t w = 0;
    LT(cublasLtMatmulAlgoConfigGetAttribute(&a, at, v, sizeof *v, &w));
}

template <typename T>
static void set_cfg(cublasLtMatmulAlgo_t &a, cublasLtMatmulAlgoConfigAttributes_t at, T v) {
    LT(cublasLtMatmulAlgoConfigSetAttribute(&a, at, &v, sizeof v));
}

/* One-line description of an algo's configuration; returns its CUBLASLT_ALGO_CONFIG_SPLITK_NUM. */
static int32_t describe(const cublasLtMatmulAlgo_t &a, char *buf, size_t len) {
    int32_t id = 0, splitk = 0;
    uint32_t tile = 0, stages = 0, red = 0, swz = 0, custom = 0;
    int cluster = -1; /* -1: no cluster shape attribute in this cuBLAS version */
    get_cfg(a, CUBLASLT_ALGO_CONFIG_ID, &id);
    get_cfg(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile);
    get_cfg(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages);
    get_cfg(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk);
    get_cfg(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red);
    get_cfg(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swz);
    get_cfg(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom);
#if CUBLAS_VER_MAJOR >= 12
    uint16_t cl = 0;
    get_cfg(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cl);
    cluster = cl;
#endif
    snprintf(buf, len,
             "algo %3d tile %3u %-7s stages %2u splitK %d red %u swz %u custom %2u cluster %2d", id,
             tile, tile_name(tile), stages, splitk, red, swz, custom, cluster);
    return splitk;
}

/* A capability's id list (tile or stages ids); {0} (UNDEFINED) when it lists none. */
static std::vector<uint32_t> cap_ids(const cublasLtMatmulAlgo_t &a,
                                     cublasLtMatmulAlgoCapAttributes_t at) {
    size_t need = 0;
    LT(cublasLtMatmulAlgoCapGetAttribute(&a, at, nullptr, 0, &need));
    std::vector<uint32_t> v(std::max<size_t>(need / sizeof(uint32_t), 1), 0);
    if (need) LT(cublasLtMatmulAlgoCapGetAttribute(&a, at, v.data(), need, &need));
    return v;
}

static cublasLtMatmulAlgo_t init_algo(int id) {
    cublasLtMatmulAlgo_t a;
    LT(cublasLtMatmulAlgoInit(g_lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF,
                              CUDA_R_16BF, CUDA_R_16BF, id, &a));
    return a;
}

/* Algo id with the given tile, split-K 1 and no reduction; stages auto, cluster auto and custom
 * option 0 if cublasLtMatmulAlgoCheck accepts that at plan p, else the first accepted stages id
 * (from the algo's list), cluster shape (auto, 1x1x1) and custom option (0..7). */
static bool enum_algo(const lt_plan &p, int id, uint32_t tile, cublasLtMatmulAlgo_t *out) {
    cublasLtMatmulAlgo_t a = init_algo(id);
    set_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID, tile);
    set_cfg<int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, 1);
    set_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, CUBLASLT_REDUCTION_SCHEME_NONE);
    std::vector<uint32_t> stages = cap_ids(a, CUBLASLT_ALGO_CAP_STAGES_IDS);
    if (stages[0] != 0) stages.insert(stages.begin(), 0);
    int32_t cmax = 0;
    size_t w = 0;
    LT(cublasLtMatmulAlgoCapGetAttribute(&a, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, &cmax,
                                         sizeof cmax, &w));
    for (int cl = 0; cl < 2; cl++) { /* cluster shape auto, then 1x1x1 */
#if CUBLAS_VER_MAJOR >= 12
        set_cfg<uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID,
                          cl ? CUBLASLT_CLUSTER_SHAPE_1x1x1 : CUBLASLT_CLUSTER_SHAPE_AUTO);
#endif
        for (uint32_t st : stages)
            for (int32_t cu = 0; cu <= std::min(cmax, 7); cu++) {
                set_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, st);
                set_cfg<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, (uint32_t)cu);
                if (check_algo(p, a)) return *out = a, true;
            }
    }
    return false;
}

static size_t count_diffs(const uint16_t *a, const uint16_t *b, size_t n) {
    return std::inner_product(a, a + n, b, (size_t)0, std::plus<>(), std::not_equal_to<>());
}

static uint16_t f2bf(float f) { /* round to nearest even; no NaNs here */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

struct cand {
    cublasLtMatmulAlgo_t algo;
    const char *src;
};

int main(int argc, char **argv) {
    std::vector<int> Ms; /* argv[1]: comma-separated M list */
    for (char *p = argc > 1 ? argv[1] : nullptr, *e = nullptr; p && *p; p = *e ? e + 1 : e) {
        const long v = strtol(p, &e, 10);
        if (e == p || v <= 0 || v > (1 << 20) || (*e && *e != ',')) {
            fprintf(stderr, "usage: %s [M1,M2,...] (positive integers)\n", argv[0]);
            return 2;
        }
        Ms.push_back((int)v);
    }
    if (Ms.empty()) Ms = {82, 656, 5248, 20992};
    const int Mmin = *std::min_element(Ms.begin(), Ms.end());
    const int Mmax = *std::max_element(Ms.begin(), Ms.end());
    LT(cublasLtCreate(&g_lt));
    CK(cudaMalloc(&g_ws, WS));
    CK(cudaEventCreate(&g_ev0));
    CK(cudaEventCreate(&g_ev1));
    const int shapes[][2] = {{1536, 512}, {512, 512}, {3072, 512}, {512, 1536}};
    const size_t KX = 1536, NX = 3072;
    std::vector<uint16_t> ha((size_t)Mmax * KX), hw(NX * KX);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (auto *v : {&ha, &hw})
        for (auto &x : *v) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            x = f2bf((float)((s >> 40) & 0xffffff) / 8388608.0f - 1.0f); /* [-1, 1) */
        }
    uint16_t *A, *W, *C;
    CK(cudaMalloc(&A, ha.size() * 2));
    CK(cudaMalloc(&W, hw.size() * 2));
    CK(cudaMalloc(&C, (size_t)Mmax * NX * 2));
    CK(cudaMemcpy(A, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(W, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
    std::vector<uint16_t> ref((size_t)Mmax * NX), out((size_t)Mmax * NX);

    cublasLtMatmulPreference_t pref;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WS,
                                            sizeof WS));
    const uint32_t no_splitk = CUBLASLT_REDUCTION_SCHEME_NONE;
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                            &no_splitk, sizeof no_splitk));
    int ids[256], nids = 0;
    LT(cublasLtMatmulAlgoGetIds(g_lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF,
                                CUDA_R_16BF, CUDA_R_16BF, 256, ids, &nids));
    /* Each algo id's tile ids; enumerated round-robin over the ids so that all get a turn. */
    std::vector<std::vector<uint32_t>> tiles(nids);
    size_t max_tiles = 0;
    printf("cuBLASLt %zu; M:", cublasLtGetVersion());
    for (int m : Ms) printf(" %d", m);
    printf("\nalgo ids (tile count):");
    for (int i = 0; i < nids; i++) {
        tiles[i] = cap_ids(init_algo(ids[i]), CUBLASLT_ALGO_CAP_TILE_IDS);
        max_tiles = std::max(max_tiles, tiles[i].size());
        printf(" %d(%zu)", ids[i], tiles[i].size());
    }
    printf("\n");
    load_tile_names();
    char desc[160], pin_desc[160];

    for (auto &sh : shapes) {
        const int N = sh[0], K = sh[1];
        lt_plan pp = make_plan(PIN_M, N, K);
        cublasLtMatmulHeuristicResult_t hres[32];
        int got = 0;
        LT(cublasLtMatmulAlgoGetHeuristic(g_lt, pp.desc, pp.la, pp.lb, pp.lc, pp.lc, pref, 1, hres,
                                          &got));
        free_plan(pp);
        if (got < 1) {
            printf("n %d k %d: no heuristic result at M=%d, shape skipped\n", N, K, PIN_M);
            continue;
        }
        const cublasLtMatmulAlgo_t pinned = hres[0].algo;
        const int32_t pin_splitk = describe(pinned, pin_desc, sizeof pin_desc);
        printf("\n== n %d k %d: pinned = heuristic[0] at M=%d: %s (ws %zu) %s\n", N, K, PIN_M,
               pin_desc, hres[0].workspaceSize,
               pin_splitk == 1 ? "splitK 1 OK" : "WARNING: splitK != 1");
        printf("%5s %5s %6s %-4s %-80s %9s %9s\n", "n", "k", "M", "src", "config", "time_us",
               "diffs");
        bool have_best_min = false;
        cublasLtMatmulAlgo_t best_min{};

        for (int M : Ms) {
            const size_t MN = (size_t)M * N;
            lt_plan p = make_plan(M, N, K);
            float t_pin = -1.0f;
            const bool pin_ok =
                check_algo(p, pinned) && run_fetch(p, pinned, A, W, C, MN, ref.data());
            if (pin_ok) {
                t_pin = median_us([&] { return run_lt(p, pinned, A, W, C); });
                printf("%5d %5d %6d %-4s %-80s %9.2f %9s\n", N, K, M, "pin", pin_desc, t_pin, "-");
            } else {
                printf("%5d %5d %6d pinned algo not usable at this M: no reference\n", N, K, M);
            }
            /* Candidates: the heuristic's list, then enumerated (algo id, tile) pairs. */
            std::vector<cand> cands;
            auto known = [&](const cublasLtMatmulAlgo_t &a) {
                return std::any_of(cands.begin(), cands.end(),
                                   [&](const cand &c) { return !memcmp(&c.algo, &a, sizeof a); });
            };
            got = 0;
            LT(cublasLtMatmulAlgoGetHeuristic(g_lt, p.desc, p.la, p.lb, p.lc, p.lc, pref, 32, hres,
                                              &got));
            for (int i = 0; i < got; i++)
                if (hres[i].state == CUBLAS_STATUS_SUCCESS && hres[i].workspaceSize <= WS &&
                    !known(hres[i].algo))
                    cands.push_back({hres[i].algo, "heur"});
            const size_t n_heur = cands.size();
            int refused = 0;
            for (size_t t = 0; t < max_tiles && (int)cands.size() < MAX_CAND; t++)
                for (int i = 0; i < nids && (int)cands.size() < MAX_CAND; i++) {
                    cublasLtMatmulAlgo_t a;
                    if (t >= tiles[i].size()) continue;
                    if (!enum_algo(p, ids[i], tiles[i][t], &a))
                        refused++;
                    else if (!known(a))
                        cands.push_back({a, "enum"});
                }

            float best_same = -1.0f, best_all = -1.0f;
            bool best_all_same = false;
            char best_same_desc[200] = "none", best_all_desc[200] = "none";
            for (const cand &c : cands) {
                describe(c.algo, desc, sizeof desc);
                printf("%5d %5d %6d %-4s %-80s", N, K, M, c.src, desc);
                if (!run_fetch(p, c.algo, A, W, C, MN, out.data())) continue;
                const size_t d = pin_ok ? count_diffs(out.data(), ref.data(), MN) : 0;
                const float us = median_us([&] { return run_lt(p, c.algo, A, W, C); });
                if (us < 0) {
                    printf("  matmul failed while timing, skipped\n");
                    continue;
                }
                printf(" %9.2f %9zu %s\n", us, d, !pin_ok ? "n/a" : d ? "DIFF" : "SAME");
                if (pin_ok && !d && (best_same < 0 || us < best_same)) {
                    best_same = us;
                    snprintf(best_same_desc, sizeof best_same_desc, "%s %s", c.src, desc);
                    if (M == Mmin) have_best_min = true, best_min = c.algo;
                }
                if (best_all < 0 || us < best_all) {
                    best_all = us, best_all_same = pin_ok && !d;
                    snprintf(best_all_desc, sizeof best_all_desc, "%s %s", c.src, desc);
                }
            }
            const char *verdict = best_all < 0 ? "-" : best_all_same ? "SAME" : "DIFF";
            printf(
                "SUMMARY n %d k %d M %d: %zu heur + %zu enum candidates (%d enum refused); "
                "pinned %.2f us; fastest SAME %.2f us [%s]; fastest overall %.2f us %s [%s]\n",
                N, K, M, n_heur, cands.size() - n_heur, refused, t_pin, best_same, best_same_desc,
                best_all, verdict, best_all_desc);
            fflush(stdout);
            free_plan(p);
        }

        /* M-independence: rows 0..Mmin-1 at Mmin (pinned, fastest SAME) vs pinned at Mmax. */
        const size_t rows = (size_t)Mmin * N;
        lt_plan pmax = make_plan(Mmax, N, K), pmin = make_plan(Mmin, N, K);
        const bool max_ok = check_algo(pmax, pinned) &&
                            run_fetch(pmax, pinned, A, W, C, (size_t)Mmax * N, ref.data());
        const cublasLtMatmulAlgo_t *who[2] = {&pinned, have_best_min ? &best_min : nullptr};
        const char *what[2] = {"pinned", "fastest SAME"};
        for (int w = 0; w < 2; w++) {
            printf("M-INDEP n %d k %d: %s at M=%d vs pinned at M=%d, rows 0..%d:", N, K, what[w],
                   Mmin, Mmax, Mmin - 1);
            if (!max_ok || !who[w] || !check_algo(pmin, *who[w])) {
                printf(" not available\n");
                continue;
            }
            if (!run_fetch(pmin, *who[w], A, W, C, rows, out.data())) continue;
            const size_t d = count_diffs(out.data(), ref.data(), rows);
            describe(*who[w], desc, sizeof desc);
            printf(" %zu diffs %s [%s]\n", d, d ? "DIFF" : "SAME", desc);
        }
        free_plan(pmax);
        free_plan(pmin);
        fflush(stdout);
    }

    CK(cudaGetLastError());
    LT(cublasLtMatmulPreferenceDestroy(pref));
    CK(cudaFree(A));
    CK(cudaFree(W));
    CK(cudaFree(C));
    CK(cudaFree(g_ws));
    CK(cudaEventDestroy(g_ev0));
    CK(cudaEventDestroy(g_ev1));
    LT(cublasLtDestroy(g_lt));
    return 0;
}
