/* The HRM model on a CUDA context (src/cuda/model_*.cu):
 *  - F32 within 1e-4 relative L2 of the golden expected-f32, every step and
 *    recorded tensor, halted exact, both golden cases and both schedules;
 *  - BF16 at most 1.5x as far from expected-f32 as PyTorch's BF16 run
 *    (expected-bf16) is;
 *  - tiered == baseline bit for bit, tiles that do and do not divide the batch,
 *    and for BF16 the persistent L-level kernel (model_l_persist.cu) at HRM's
 *    width (hidden 512) and at hidden 256 with a short sequence;
 *  - the grid-wide level kernel (model_grid.cu, HRMT_CUDA_GRID=1) == launch
 *    by launch, bit for bit, at the same widths, each GEMM unit size;
 *  - GPU vs CPU on a random model within the same bounds;
 *  - errors: a carry of another model, a batch too large for the device, bad
 *    settings.
 * Without a CUDA build or device every test is skipped with the reason, or
 * fails when HRMT_TEST_REQUIRE_CUDA is set (bench/gpu.sh sets it), as in
 * test_cuda_ops and test_cuda_probe. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <criterion/criterion.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "model/model.h"
#include "support/run_cmd.h"
#include "support/test_common.h"

/* A case whose kernel hangs (a new kernel's first device run) fails alone
 * after this long instead of taking a whole device call (the whole suite
 * takes ~73 s on the H200, four cases at a time). Criterion 2.4.1's
 * --timeout flag has no effect; the suite's setting does. */
TestSuite(cuda_model, .timeout = 240);

static hrmt_context *cuda_ctx_graphs(int graphs) {
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    hrmt_cuda_query(&ci);
    if (!ci.built || ci.device_count == 0) {
        const char *why = ci.built ? "none found" : "hrmt was built without the CUDA backend";
        cr_assert(!hrmt_test_cuda_required(),
                  "HRMT_TEST_REQUIRE_CUDA is set but there is no CUDA device: %s", why);
        cr_skip_test("no CUDA device: %s", why);
    }
    hrmt_context_options o = hrmt_context_default_options();
    o.backend = HRMT_BACKEND_CUDA;
    o.cuda_graphs = graphs;
    hrmt_context *ctx = NULL;
    char err[256] = "";
    hrmt_status s = hrmt_context_create(&o, &ctx, err, sizeof err);
    cr_assert_eq(s, HRMT_OK, "CUDA context: %s: %s", hrmt_status_str(s), err);
    return ctx;
}

/* The default context: steps replayed as CUDA graphs unless HRMT_CUDA_GRAPHS=0. */
static hrmt_context *cuda_ctx(void) { return cuda_ctx_graphs(0); }

static double rel_l2(const float *x, const float *ref, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* All outputs of one step for batch B, in one allocation. */
typedef struct outs {
    float *buf;
    int32_t *halted;
    size_t n[5]; /* logits, q_halt, q_continue, z_H, z_L */
    size_t w[5]; /* their row widths: vocab, 1, 1, hidden, hidden */
    float *f[5];
    hrmt_step_outputs o;
} outs;

static void outs_init(outs *x, const hrmt_model_config *cfg, int P, int B) {
    size_t z = (size_t)B * (size_t)(cfg->seq_len + P) * (size_t)cfg->hidden_size;
    x->n[0] = (size_t)B * (size_t)cfg->seq_len * (size_t)cfg->vocab_size;
    x->n[1] = x->n[2] = (size_t)B;
    x->n[3] = x->n[4] = z;
    x->w[0] = (size_t)cfg->vocab_size;
    x->w[1] = x->w[2] = 1;
    x->w[3] = x->w[4] = (size_t)cfg->hidden_size;
    size_t tot = 0;
    for (int i = 0; i < 5; i++) tot += x->n[i];
    x->buf = calloc(tot, sizeof(float));
    x->halted = calloc((size_t)B, sizeof(int32_t));
    cr_assert(x->buf && x->halted);
    float *p = x->buf;
    for (int i = 0; i < 5; i++) x->f[i] = p, p += x->n[i];
    hrmt_step_outputs o = {x->f[0], x->f[1], x->f[2], x->f[3], x->f[4], x->halted};
    x->o = o;
}

static void outs_free(outs *x) {
    free(x->buf);
    free(x->halted);
}

/* Where field f of two runs' outputs differs, for a failure message: ""
 * when the bytes are equal, else how many values differ and the first one's
 * row and column (a kernel's wrong tile or column range shows in them).
 * One static buffer: one call per message. */
static const char *diff_note(const outs *x, const outs *y, int f) {
    static char note[192];
    size_t first = 0, count = 0;
    for (size_t i = 0; i < x->n[f]; i++)
        if (memcmp(&x->f[f][i], &y->f[f][i], sizeof(float)) != 0 && count++ == 0) first = i;
    if (count == 0) return "";
    snprintf(note, sizeof note, " (%zu of %zu values; first at row %zu, column %zu: %a vs %a)",
             count, x->n[f], first / x->w[f], first % x->w[f], (double)x->f[f][first],
             (double)y->f[f][first]);
    return note;
}
/* cr_expect that field f of outs x and y has the same bytes; the message
 * (a format and its arguments) gets diff_note's account appended. */
#define EXPECT_SAME_FIELD(x, y, f, ...)             \
    do {                                            \
        const char *dn_ = diff_note((x), (y), (f)); \
        cr_expect(!*dn_, __VA_ARGS__);              \
        if (*dn_) cr_log_error("%s", dn_);          \
    } while (0)

static const char *const k_fields[] = {"logits", "q_halt_logits", "q_continue_logits", "z_H",
                                       "z_L"};

static float *st_f32(const hrmt_st_file *f, const char *name, size_t *n) {
    const hrmt_st_tensor *t = hrmt_st_find(f, name);
    cr_assert_not_null(t, "missing %s", name);
    float *v = malloc(t->numel * sizeof(float) + 4);
    cr_assert_not_null(v);
    cr_assert_eq(hrmt_st_read_f32(NULL, f, t, v), HRMT_OK, "reading %s", name);
    if (n) *n = t->numel;
    return v;
}

static int32_t *st_i32(const hrmt_st_file *f, const char *name, size_t *n) {
    const hrmt_st_tensor *t = hrmt_st_find(f, name);
    cr_assert_not_null(t, "missing %s", name);
    int32_t *v = malloc(t->nbytes + 4);
    cr_assert_not_null(v);
    memcpy(v, t->data, t->nbytes);
    if (n) *n = t->numel;
    return v;
}

/* ---- golden ---------------------------------------------------------------- */

#define BF16_FACTOR 1.5

static void golden(const char *name, hrmt_dtype dt, hrmt_schedule sched) {
    hrmt_context *ctx = cuda_ctx();
    char path[512];
    snprintf(path, sizeof path, "golden/hrm/%s/case.json", name);
    hrmt_model_config cfg;
    cr_assert_eq(hrmt_model_config_load_json(ctx, hrmt_test_data(path), &cfg), HRMT_OK);
    cfg.forward_dtype = dt;
    snprintf(path, sizeof path, "golden/hrm/%s/model.safetensors", name);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_load(ctx, hrmt_test_data(path), &cfg, &m), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    hrmt_st_file *f32 = NULL, *f16 = NULL;
    snprintf(path, sizeof path, "golden/hrm/%s/expected-f32.safetensors", name);
    cr_assert_eq(hrmt_st_open(ctx, hrmt_test_data(path), &f32), HRMT_OK);
    snprintf(path, sizeof path, "golden/hrm/%s/expected-bf16.safetensors", name);
    cr_assert_eq(hrmt_st_open(ctx, hrmt_test_data(path), &f16), HRMT_OK);
    size_t nb;
    int32_t *inputs = st_i32(f32, "inputs", NULL), *pids = st_i32(f32, "puzzle_identifiers", &nb);
    const int B = (int)nb;
    outs x;
    outs_init(&x, &cfg, hrmt_model_puzzle_len(m), B);
    hrmt_carry *c = NULL;
    cr_assert_eq(hrmt_carry_create(m, B, &c), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_step_options opt = {sched, 0};
    int steps = 0;
    for (;; steps++) {
        char key[64];
        snprintf(key, sizeof key, "step%d.logits", steps);
        if (!hrmt_st_find(f32, key)) break;
        hrmt_step_timing tm;
        cr_assert_eq(hrmt_act_step(m, c, inputs, pids, &opt, &x.o, &tm), HRMT_OK, "%s",
                     hrmt_last_error(ctx));
        cr_expect_gt(tm.step_us, 0.0);
        cr_expect_gt(tm.l_level_calls, 0);
        /* Asynchronous kernels: no per-part host timing on CUDA (documented zeros). */
        for (int p = 0; p < HRMT_PART_COUNT; p++) cr_expect_eq(tm.part_us[p], 0.0);
        for (int f = 0; f < 5; f++) {
            size_t n;
            snprintf(key, sizeof key, "step%d.%s", steps, k_fields[f]);
            float *r32 = st_f32(f32, key, &n), *r16 = st_f32(f16, key, NULL);
            cr_assert_eq(n, x.n[f], "%s size", key);
            double e = rel_l2(x.f[f], r32, n);
            if (dt == HRMT_F32) {
                cr_expect_leq(e, 1e-4, "%s %s f32 on GPU: rel L2 %.3g > 1e-4", name, key, e);
            } else {
                double gap = rel_l2(r16, r32, n);
                cr_expect_leq(e, BF16_FACTOR * gap,
                              "%s %s bf16 on GPU: %.3g from expected-f32 > %.1f x PyTorch's %.3g",
                              name, key, e, BF16_FACTOR, gap);
                fprintf(stderr, "%s %s: gpu/torch distance to f32 %.3f\n", name, key,
                        gap > 0 ? e / gap : e);
            }
            free(r32);
            free(r16);
        }
        snprintf(key, sizeof key, "step%d.halted", steps);
        int32_t *rh = st_i32(dt == HRMT_F32 ? f32 : f16, key, NULL);
        for (int i = 0; i < B; i++) cr_expect_eq(x.halted[i], rh[i], "%s %s[%d]", name, key, i);
        free(rh);
    }
    cr_expect_gt(steps, 0);
    hrmt_carry_destroy(c);
    outs_free(&x);
    free(inputs);
    free(pids);
    hrmt_st_close(f32);
    hrmt_st_close(f16);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, golden_tiny_rope_f32) { golden("tiny-rope", HRMT_F32, HRMT_SCHEDULE_TIERED); }
Test(cuda_model, golden_tiny_rope_f32_baseline) {
    golden("tiny-rope", HRMT_F32, HRMT_SCHEDULE_BASELINE);
}
Test(cuda_model, golden_small_learned_f32) {
    golden("small-learned", HRMT_F32, HRMT_SCHEDULE_TIERED);
}
Test(cuda_model, golden_small_learned_f32_baseline) {
    golden("small-learned", HRMT_F32, HRMT_SCHEDULE_BASELINE);
}
Test(cuda_model, golden_tiny_rope_bf16) { golden("tiny-rope", HRMT_BF16, HRMT_SCHEDULE_TIERED); }
Test(cuda_model, golden_small_learned_bf16) {
    golden("small-learned", HRMT_BF16, HRMT_SCHEDULE_TIERED);
}

/* ---- random models: schedules, CPU vs GPU ------------------------------------ */

/* A Sudoku-shaped model, smaller (hidden 128, 2 heads of 64, T = 82). */
static hrmt_model_config small_cfg(hrmt_dtype dt) {
    hrmt_model_config c = hrmt_model_config_default();
    c.hidden_size = 128;
    c.num_heads = 2;
    c.puzzle_emb_ndim = 128;
    c.num_puzzle_identifiers = 3;
    c.H_layers = c.L_layers = 2;
    c.halt_max_steps = 2;
    c.forward_dtype = dt;
    return c;
}

/* small_cfg (BF16) at another width, head count and sequence length. */
static hrmt_model_config sized_cfg(int hidden, int heads, int seq_len) {
    hrmt_model_config c = small_cfg(HRMT_BF16);
    c.hidden_size = c.puzzle_emb_ndim = hidden;
    c.num_heads = heads;
    c.seq_len = seq_len;
    return c;
}

static void make_inputs(const hrmt_model_config *cfg, int B, int step, int32_t *in, int32_t *pid) {
    hrmt_test_rng r = {0x1234u + (uint64_t)step};
    for (size_t i = 0; i < (size_t)B * (size_t)cfg->seq_len; i++)
        in[i] = (int32_t)((hrmt_test_uniform(&r) + 1.0f) * 0.5f * (float)cfg->vocab_size) %
                cfg->vocab_size;
    for (int i = 0; i < B; i++) pid[i] = i % cfg->num_puzzle_identifiers;
}

/* Runs `steps` steps of batch B on m, outputs of each step into xs[step]. */
/* `steps` ACT steps of one carry (early: the early-halt rule on). */
static void run_act(hrmt_model *m, int B, hrmt_schedule sched, int early, int steps, outs *xs) {
    const hrmt_model_config *cfg = hrmt_model_get_config(m);
    int32_t *in = malloc((size_t)B * (size_t)cfg->seq_len * 4), *pid = malloc((size_t)B * 4);
    cr_assert(in && pid);
    hrmt_carry *c = NULL;
    cr_assert_eq(hrmt_carry_create(m, B, &c), HRMT_OK);
    hrmt_step_options opt = {sched, early};
    for (int s = 0; s < steps; s++) {
        make_inputs(cfg, B, s, in, pid);
        outs_init(&xs[s], cfg, hrmt_model_puzzle_len(m), B);
        cr_assert_eq(hrmt_act_step(m, c, in, pid, &opt, &xs[s].o, NULL), HRMT_OK, "step %d", s);
    }
    hrmt_carry_destroy(c);
    free(in);
    free(pid);
}

static void run_steps(hrmt_model *m, int B, hrmt_schedule sched, int steps, outs *xs) {
    run_act(m, B, sched, 0, steps, xs);
}

/* One step's five output fields and halted flags of a batch of B: the same
 * bytes expected; `what` names the comparison in the messages. */
static void expect_same_outs(const outs *x, const outs *y, int B, const char *what) {
    for (int f = 0; f < 5; f++) EXPECT_SAME_FIELD(x, y, f, "%s: %s differ", what, k_fields[f]);
    cr_expect(!memcmp(x->halted, y->halted, (size_t)B * 4), "%s: halted differ", what);
}

/* The tile-by-tile tiered schedule (the persistent kernel needs hidden to be
 * a multiple of 256: not this model). */
static void schedules_equal(hrmt_dtype dt) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(dt);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 7, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    /* Tile of 3 samples: batches 1, 3 (one tile), 5, 13 (ragged), 12 (whole tiles). */
    setenv("HRMT_CUDA_TILE_SAMPLES", "3", 1);
    const int batches[] = {1, 3, 5, 12, 13};
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        outs t[3], bl[3];
        run_steps(m, batches[b], HRMT_SCHEDULE_TIERED, 3, t);
        run_steps(m, batches[b], HRMT_SCHEDULE_BASELINE, 3, bl);
        for (int s = 0; s < 3; s++) {
            for (int f = 0; f < 5; f++)
                EXPECT_SAME_FIELD(&t[s], &bl[s], f, "batch %d step %d %s: tiered != baseline",
                                  batches[b], s, k_fields[f]);
            cr_expect(!memcmp(t[s].halted, bl[s].halted, (size_t)batches[b] * 4));
            outs_free(&t[s]);
            outs_free(&bl[s]);
        }
    }
    unsetenv("HRMT_CUDA_TILE_SAMPLES");
    /* The device-sized default tile against the baseline too. */
    outs t[1], bl[1];
    run_steps(m, 40, HRMT_SCHEDULE_TIERED, 1, t);
    run_steps(m, 40, HRMT_SCHEDULE_BASELINE, 1, bl);
    for (int f = 0; f < 5; f++)
        EXPECT_SAME_FIELD(&t[0], &bl[0], f, "default tile: %s differs", k_fields[f]);
    outs_free(&t[0]);
    outs_free(&bl[0]);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, tiered_equals_baseline_f32) { schedules_equal(HRMT_F32); }
Test(cuda_model, tiered_equals_baseline_bf16) { schedules_equal(HRMT_BF16); }

/* The persistent L-level kernel at HRM's own width (hidden 512, 8 heads of
 * 64, T = 82: the shapes whose GEMM bits bench/cuda_lt_pin_check.cu found
 * equal between cuBLASLt and mma.sync chains), and at T = 61 (attention with
 * key tiles past T): tiered == baseline bytes, with batches below, at and
 * above one sample per SM (140: CTAs then run a second sample). */
static void persistent_equals_baseline(int hidden, int heads, int seq_len, const int *batches,
                                       int nb, const char *persist) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    hrmt_model *m = NULL;
    setenv("HRMT_CUDA_L_PERSIST", persist, 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 11, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_L_PERSIST");
    for (int b = 0; b < nb; b++) {
        outs t[2], bl[2];
        run_steps(m, batches[b], HRMT_SCHEDULE_TIERED, 2, t);
        run_steps(m, batches[b], HRMT_SCHEDULE_BASELINE, 2, bl);
        for (int s = 0; s < 2; s++) {
            for (int f = 0; f < 5; f++)
                EXPECT_SAME_FIELD(&t[s], &bl[s], f,
                                  "hidden %d T %d batch %d step %d %s: tiered (persistent %s) != "
                                  "baseline",
                                  hidden, seq_len + 1, batches[b], s, k_fields[f], persist);
            outs_free(&t[s]);
            outs_free(&bl[s]);
        }
    }
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, persistent_equals_baseline_hrm_width) {
    const int batches[] = {1, 7, 140};
    persistent_equals_baseline(512, 8, 81, batches, 3, "1");
}

/* Small enough for racecheck (bench/gpu.sh runs it there). */
Test(cuda_model, persistent_equals_baseline_short_seq) {
    const int batches[] = {3};
    persistent_equals_baseline(256, 4, 60, batches, 1, "1");
}

/* HRMT_CUDA_L_PERSIST=0 at the same width: the tile-by-tile schedule. */
Test(cuda_model, tiles_equal_baseline_hrm_width) {
    const int batches[] = {3};
    persistent_equals_baseline(512, 8, 81, batches, 1, "0");
}

/* The grid-wide level kernel (model_grid.cu, HRMT_CUDA_GRID=1) against the
 * launch-by-launch baseline (HRMT_CUDA_GRID=0) on two models of one seed:
 * same bytes. Batches whose rows do and do not fill the GEMM units' row
 * blocks (82, 574, 1640 rows), each unit size (tile "s", "l" or "auto"). */
static void grid_equals_launches(int hidden, int heads, int seq_len, const int *batches, int nb,
                                 const char *tile) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    hrmt_model *m[2] = {NULL, NULL};
    setenv("HRMT_CUDA_GRID_TILE", tile, 1);
    for (int k = 0; k < 2; k++) {
        setenv("HRMT_CUDA_GRID", k ? "0" : "1", 1);
        cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 11, &m[k]), HRMT_OK, "%s",
                     hrmt_last_error(ctx));
    }
    unsetenv("HRMT_CUDA_GRID");
    unsetenv("HRMT_CUDA_GRID_TILE");
    for (int b = 0; b < nb; b++) {
        outs gr[2], ln[2];
        run_steps(m[0], batches[b], HRMT_SCHEDULE_BASELINE, 2, gr);
        run_steps(m[1], batches[b], HRMT_SCHEDULE_BASELINE, 2, ln);
        for (int s = 0; s < 2; s++) {
            char what[128];
            snprintf(what, sizeof what, "hidden %d T %d batch %d step %d tile %s: grid kernel",
                     hidden, seq_len + 1, batches[b], s, tile);
            expect_same_outs(&gr[s], &ln[s], batches[b], what);
            outs_free(&gr[s]);
            outs_free(&ln[s]);
        }
    }
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, grid_equals_launches_hrm_width) {
    const int batches[] = {1, 7, 20};
    grid_equals_launches(512, 8, 81, batches, 3, "auto");
}

Test(cuda_model, grid_equals_launches_each_tile) {
    const int batches[] = {1, 7};
    grid_equals_launches(512, 8, 81, batches, 2, "s");
    grid_equals_launches(512, 8, 81, batches, 2, "l");
}

/* Key tiles past T (T = 61), hidden 256; small enough for racecheck. */
Test(cuda_model, grid_equals_launches_short_seq) {
    const int batches[] = {3};
    grid_equals_launches(256, 4, 60, batches, 1, "auto");
}

/* The sm_90a fusions against the launches they replace, on two models of
 * one seed, the cluster projection + norm off in both: same bytes.
 *  - HRMT_CUDA_FUSED_GLU (on by default on compute capability 9.0): gate_up
 *    with SwiGLU in its epilogue (sm90a/glu_wgmma.cu) against cuBLASLt's
 *    GEMM then the table kernel;
 *  - HRMT_CUDA_FUSED_NORM (opt-in): o_proj and down_proj with residual +
 *    RMSNorm in the epilogue over two-CTA clusters (sm90a/proj_norm_wgmma.cu)
 *    against the GEMM then the row kernel, at every batch here.
 * At HRM's width, batches whose rows take the small GLU tiles (82, 574 rows:
 * one and 4.5 projection tiles of 128) and the large ones (1640: 12.8 row
 * blocks of 128, the last ragged), and 140 samples (11480 rows: 90 tiles
 * of 128, more than the clusters that fit, so clusters loop and the rings
 * carry over tiles); at hidden 256 with T = 61 (half-rows of 128 columns;
 * 183 and 9150 rows). */
static void fusion_equals_launches(const char *env, int hidden, int heads, int seq_len,
                                   const int *batches, int nb) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    hrmt_model *m[2] = {NULL, NULL};
    /* The launches' norms are the row kernel's, not the cluster kernel's
     * (on by default at small batches). */
    setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1);
    for (int k = 0; k < 2; k++) {
        setenv(env, k ? "0" : "1", 1);
        cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 13, &m[k]), HRMT_OK, "%s",
                     hrmt_last_error(ctx));
    }
    unsetenv(env);
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
    const int glu = !strcmp(env, "HRMT_CUDA_FUSED_GLU");
    int on[2];
    for (int k = 0; k < 2; k++)
        on[k] = glu ? hrmt_model_uses(m[k], HRMT_PATH_FUSED_GLU)
                    : hrmt_model_uses(m[k], HRMT_PATH_FUSED_NORM);
    cr_assert_eq(on[1], 0, "%s=0 must turn it off", env);
    if (!(ci.cc_major == 9 && ci.cc_minor == 0)) {
        cr_expect_eq(on[0], 0, "sm_90a kernel on cc %d.%d", ci.cc_major, ci.cc_minor);
        hrmt_model_destroy(m[0]);
        hrmt_model_destroy(m[1]);
        hrmt_context_destroy(ctx);
        cr_skip_test("the fused kernels are built for compute capability 9.0; this is %d.%d",
                     ci.cc_major, ci.cc_minor);
    }
    cr_assert_eq(on[0], 1, "%s: the fused kernel must serve cc 9.0", env);
    for (int b = 0; b < nb; b++) {
        outs fu[2], ln[2];
        run_steps(m[0], batches[b], HRMT_SCHEDULE_BASELINE, 2, fu);
        run_steps(m[1], batches[b], HRMT_SCHEDULE_BASELINE, 2, ln);
        for (int s = 0; s < 2; s++) {
            for (int f = 0; f < 5; f++)
                EXPECT_SAME_FIELD(&fu[s], &ln[s], f,
                                  "%s hidden %d T %d batch %d step %d %s: fused != launches", env,
                                  hidden, seq_len + 1, batches[b], s, k_fields[f]);
            cr_expect(!memcmp(fu[s].halted, ln[s].halted, (size_t)batches[b] * 4));
            outs_free(&fu[s]);
            outs_free(&ln[s]);
        }
    }
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, fused_glu_equals_launches_hrm_width) {
    const int batches[] = {1, 7, 20};
    fusion_equals_launches("HRMT_CUDA_FUSED_GLU", 512, 8, 81, batches, 3);
}
Test(cuda_model, fused_glu_equals_launches_short_seq) {
    const int batches[] = {3, 48};
    fusion_equals_launches("HRMT_CUDA_FUSED_GLU", 256, 4, 60, batches, 2);
}
Test(cuda_model, fused_norm_equals_launches_hrm_width) {
    const int batches[] = {1, 7, 140};
    fusion_equals_launches("HRMT_CUDA_FUSED_NORM", 512, 8, 81, batches, 3);
}
Test(cuda_model, fused_norm_equals_launches_short_seq) {
    const int batches[] = {150};
    fusion_equals_launches("HRMT_CUDA_FUSED_NORM", 256, 4, 60, batches, 1);
}
/* Two tiles, the second ragged: small enough for memcheck. */
Test(cuda_model, fused_norm_equals_launches_small) {
    const int batches[] = {3};
    fusion_equals_launches("HRMT_CUDA_FUSED_NORM", 256, 4, 60, batches, 1);
}

/* Skips the test unless there is a device of compute capability 9.0
 * (exact: the sm_90a kernels) or, with any_minor, 9.x and up; `what` says
 * what needs it. */
static void need_cc90(const char *what, int any_minor) {
    hrmt_context_destroy(cuda_ctx()); /* skips without a device */
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    if (any_minor ? ci.cc_major < 9 : !(ci.cc_major == 9 && ci.cc_minor == 0))
        cr_skip_test("%s compute capability 9.0%s; this is %d.%d", what, any_minor ? " and up" : "",
                     ci.cc_major, ci.cc_minor);
}

/* The reference of the own-kernel tests: the launch-by-launch block (pinned
 * cuBLASLt GEMM, SwiGLU table and row kernels: no fused gate_up, no cluster
 * projection + norm, no tuning). */
static hrmt_model *launches_model(hrmt_context *ctx, const hrmt_model_config *cfg, uint64_t seed) {
    hrmt_model *ref = NULL;
    setenv("HRMT_CUDA_FUSED_GLU", "0", 1);
    setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1);
    setenv("HRMT_CUDA_GEMM_TUNE", "0", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, cfg, seed, &ref), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_FUSED_GLU");
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
    unsetenv("HRMT_CUDA_GEMM_TUNE");
    return ref;
}

/* Each tile shape of the own wgmma kernels, forced for every row bucket
 * (HRMT_CUDA_WGEMM_SHAPE / HRMT_CUDA_GLU_SHAPE), against the launches with
 * the pinned cuBLASLt algorithm (HRMT_CUDA_GEMM_TUNE=0, fused gate_up off):
 * the same bytes at HRM's width (82 rows: one sample, two 64-row tiles, the
 * second ragged; 574; 1640) and at hidden 256 with T = 61. The tuner picks
 * among these shapes by speed, so each must be right on its own. */
static void shapes_equal_launches(const char *env, int count, int hidden, int heads, int seq_len,
                                  const int *batches, int nb, const char *off) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    const int glu = !strcmp(env, "HRMT_CUDA_GLU_SHAPE");
    hrmt_model *ref = launches_model(ctx, &cfg, 13), *m = NULL;
    if (!glu) setenv("HRMT_CUDA_FUSED_GLU", "0", 1); /* the own GEMM alone */
    if (off) setenv(off, "0", 1);                    /* a switch of the forced kernels off */
    /* o_proj and down_proj on the forced shape too, not on the cluster kernel. */
    setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1);
    if (!(ci.cc_major == 9 && ci.cc_minor == 0)) {
        setenv(env, "0", 1);
        cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 13, &m), HRMT_ERR_INVALID_ARG,
                     "%s on cc %d.%d: the sm_90a kernels do not serve it", env, ci.cc_major,
                     ci.cc_minor);
        unsetenv(env);
        unsetenv("HRMT_CUDA_FUSED_GLU");
        unsetenv("HRMT_CUDA_CLUSTER_NORM");
        if (off) unsetenv(off);
        hrmt_model_destroy(m);
        hrmt_model_destroy(ref);
        hrmt_context_destroy(ctx);
        cr_skip_test("the wgmma kernels are built for compute capability 9.0; this is %d.%d",
                     ci.cc_major, ci.cc_minor);
    }
    for (int shape = 0; shape <= count; shape++) {
        char v[16];
        snprintf(v, sizeof v, "%d", shape);
        setenv(env, v, 1);
        const hrmt_status st = hrmt_model_create_random(ctx, &cfg, 13, &m);
        unsetenv(env);
        if (shape == count) { /* one past the last shape */
            cr_expect_eq(st, HRMT_ERR_INVALID_ARG, "%s=%d must be refused", env, shape);
            cr_expect_not_null(strstr(hrmt_last_error(ctx), env), "%s", hrmt_last_error(ctx));
            cr_expect_null(m);
            break;
        }
        cr_assert_eq(st, HRMT_OK, "%s=%d: %s", env, shape, hrmt_last_error(ctx));
        cr_assert_eq(hrmt_model_uses(m, HRMT_PATH_FUSED_GLU), glu, "%s=%d", env, shape);
        for (int b = 0; b < nb; b++) {
            outs x[2], y[2];
            run_steps(m, batches[b], HRMT_SCHEDULE_BASELINE, 2, x);
            run_steps(ref, batches[b], HRMT_SCHEDULE_BASELINE, 2, y);
            for (int s2 = 0; s2 < 2; s2++) {
                for (int f = 0; f < 5; f++)
                    EXPECT_SAME_FIELD(&x[s2], &y[s2], f,
                                      "%s=%d hidden %d T %d batch %d step %d %s: != launches", env,
                                      shape, hidden, seq_len + 1, batches[b], s2, k_fields[f]);
                outs_free(&x[s2]);
                outs_free(&y[s2]);
            }
        }
        hrmt_model_destroy(m);
        m = NULL;
    }
    unsetenv("HRMT_CUDA_FUSED_GLU");
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
    if (off) unsetenv(off);
    hrmt_model_destroy(ref);
    hrmt_context_destroy(ctx);
}

/* The shape counts of sm90a/gemm_wgmma.cu and sm90a/glu_wgmma.cu (its
 * seventh, the W-resident one, and its TMA-storing form at hidden <= 512). */
#define WGEMM_SHAPES 6
#define GLU_SHAPES 8
#define GLU_SHAPE_WRES 6
#define GLU_SHAPE_WRES_TS 7

Test(cuda_model, wgemm_shapes_equal_launches_hrm_width) {
    const int batches[] = {1, 7, 20};
    shapes_equal_launches("HRMT_CUDA_WGEMM_SHAPE", WGEMM_SHAPES, 512, 8, 81, batches, 3, NULL);
}
Test(cuda_model, wgemm_shapes_equal_launches_short_seq) {
    const int batches[] = {3};
    shapes_equal_launches("HRMT_CUDA_WGEMM_SHAPE", WGEMM_SHAPES, 256, 4, 60, batches, 1, NULL);
}
Test(cuda_model, glu_shapes_equal_launches_hrm_width) {
    const int batches[] = {1, 7, 20};
    shapes_equal_launches("HRMT_CUDA_GLU_SHAPE", GLU_SHAPES, 512, 8, 81, batches, 3, NULL);
}
/* The same with s(g) looked up in the table (HRMT_CUDA_GLU_FAST_SILU=0):
 * from its shared-memory window, then with every lookup from the global
 * table (the window off: the path the window's outliers take). */
Test(cuda_model, glu_shapes_equal_launches_table_window) {
    const int batches[] = {7};
    setenv("HRMT_CUDA_GLU_FAST_SILU", "0", 1);
    shapes_equal_launches("HRMT_CUDA_GLU_SHAPE", GLU_SHAPES, 512, 8, 81, batches, 1, NULL);
    unsetenv("HRMT_CUDA_GLU_FAST_SILU");
}
Test(cuda_model, glu_shapes_equal_launches_global_table) {
    const int batches[] = {7};
    setenv("HRMT_CUDA_GLU_FAST_SILU", "0", 1);
    shapes_equal_launches("HRMT_CUDA_GLU_SHAPE", GLU_SHAPES, 512, 8, 81, batches, 1,
                          "HRMT_CUDA_GLU_SMEM_TABLE");
    unsetenv("HRMT_CUDA_GLU_FAST_SILU");
}
Test(cuda_model, glu_shapes_equal_launches_short_seq) {
    const int batches[] = {3};
    shapes_equal_launches("HRMT_CUDA_GLU_SHAPE", GLU_SHAPES, 256, 4, 60, batches, 1, NULL);
}
/* Two steps of a and of b at each batch, both schedules: the same bytes
 * expected; `what` names the comparison in the messages. */
static void expect_same_steps(hrmt_model *a, hrmt_model *b, const int *batches, int nb,
                              const char *what) {
    const hrmt_schedule sched[2] = {HRMT_SCHEDULE_BASELINE, HRMT_SCHEDULE_TIERED};
    for (int i = 0; i < nb; i++)
        for (int q = 0; q < 2; q++) {
            outs x[2], y[2];
            run_steps(a, batches[i], sched[q], 2, x);
            run_steps(b, batches[i], sched[q], 2, y);
            for (int s2 = 0; s2 < 2; s2++) {
                for (int f = 0; f < 5; f++)
                    EXPECT_SAME_FIELD(&x[s2], &y[s2], f, "%s: batch %d %s step %d %s differ", what,
                                      batches[i], q ? "tiered" : "baseline", s2, k_fields[f]);
                outs_free(&x[s2]);
                outs_free(&y[s2]);
            }
        }
}

/* m[0] made with `env` = v0, m[1] with it = v1 (same random weights); the
 * variable is unset after. */
static void models_with(hrmt_context *ctx, const hrmt_model_config *cfg, uint64_t seed,
                        const char *env, const char *v0, const char *v1, hrmt_model *m[2]) {
    const char *v[2] = {v0, v1};
    for (int k = 0; k < 2; k++) {
        setenv(env, v[k], 1);
        cr_assert_eq(hrmt_model_create_random(ctx, cfg, seed, &m[k]), HRMT_OK, "%s=%s: %s", env,
                     v[k], hrmt_last_error(ctx));
    }
    unsetenv(env);
}
/* ... with the switch on (m[0]) and off (m[1]). */
static void models_on_off(hrmt_context *ctx, const hrmt_model_config *cfg, uint64_t seed,
                          const char *env, hrmt_model *m[2]) {
    models_with(ctx, cfg, seed, env, "1", "0", m);
}

/* A 0 / 1 switch `env` whose two sides must give the same bytes: models
 * made with it on and off (same random weights), both schedules. */
static void switch_keeps_bits(const char *env, const char *label, int hidden, int heads,
                              int seq_len, uint64_t seed, const int *batches, int nb) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    hrmt_model *m[2] = {NULL, NULL};
    models_on_off(ctx, &cfg, seed, env, m);
    char what[128];
    snprintf(what, sizeof what, "hidden %d T %d, %s", hidden, seq_len + 1, label);
    expect_same_steps(m[0], m[1], batches, nb, what);
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    hrmt_context_destroy(ctx);
}

/* A fused gate_up shape forced at batches whose CTAs take long runs of
 * tiles, against the launches; both schedules. */
static void glu_forced_long_runs(int shape, const int *batches, int nb, const char *what) {
    need_cc90("the fused gate_up is built for", 0);
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(512, 8, 81);
    hrmt_model *ref = launches_model(ctx, &cfg, 13), *m = NULL;
    char v[16];
    snprintf(v, sizeof v, "%d", shape);
    setenv("HRMT_CUDA_GLU_SHAPE", v, 1);
    setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 13, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_GLU_SHAPE");
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
    expect_same_steps(m, ref, batches, nb, what);
    hrmt_model_destroy(m);
    hrmt_model_destroy(ref);
    hrmt_context_destroy(ctx);
}

/* The W-resident shape (sm90a/ring_wres.cuh) at batches whose CTAs take
 * long runs of tiles across W slices (40: 3280 rows, ~5 tiles a CTA on
 * 132 SMs; 100: 8200 rows, ~12); the shape tests above run it at 82 to
 * 1640 rows (a tile or three a CTA, a slice each). */
Test(cuda_model, glu_wres_equals_launches_long_runs) {
    const int batches[] = {40, 100};
    glu_forced_long_runs(GLU_SHAPE_WRES, batches, 2, "W-resident gate_up vs launches");
}

static void expect_bad_values(hrmt_context *ctx, const hrmt_model_config *cfg, const char *env,
                              const char **bad, size_t n);

/* A 0 / 1 switch `env` of the path p at HRM's width: the model says it
 * runs p with =1 and not with =0, and other values are refused. */
static void expect_switch_path(const char *env, hrmt_model_path p) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(512, 8, 81);
    hrmt_model *m[2] = {NULL, NULL};
    models_on_off(ctx, &cfg, 5, env, m);
    cr_expect_eq(hrmt_model_uses(m[0], p), 1, "%s=1: the model runs its path", env);
    cr_expect_eq(hrmt_model_uses(m[1], p), 0, "%s=0: it does not", env);
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    const char *bad[] = {"2", "on"};
    expect_bad_values(ctx, &cfg, env, bad, sizeof bad / sizeof bad[0]);
    hrmt_context_destroy(ctx);
}

/* expect_switch_path, and with env unset the model at HRM's width runs p
 * (on = 1) or does not (on = 0); `what` names the default in the message. */
static void expect_switch_default(const char *env, hrmt_model_path p, int on, const char *what) {
    expect_switch_path(env, p);
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(512, 8, 81);
    hrmt_model *d = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 5, &d), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_model_uses(d, p), on, "%s unset: %s", env, what);
    hrmt_model_destroy(d);
    hrmt_context_destroy(ctx);
}
static void expect_switch_default_on(const char *env, hrmt_model_path p, const char *what) {
    expect_switch_default(env, p, 1, what);
}

/* The W-resident shape's two forms (ring_wres.cuh's WGS): 64-row tiles
 * over three consumer warpgroups by default (HRMT_CUDA_GLU_WRES3, which the
 * shape tests above and glu_wres_equals_launches_long_runs run), 128-row
 * tiles over two with the switch at 0, forced here against the launches: a
 * ragged tile or a few a CTA (1, 7: 82 and 574 rows) and long runs across
 * W slices (40, 100). The model must say which form it runs, or a
 * comparison checked the other. */
Test(cuda_model, glu_wres_forms) {
    need_cc90("the fused gate_up is built for", 0);
    expect_switch_default_on("HRMT_CUDA_GLU_WRES3", HRMT_PATH_GLU_WRES3,
                             "the three-warpgroup form");
    const int batches[] = {1, 7, 40, 100};
    setenv("HRMT_CUDA_GLU_WRES3", "0", 1);
    glu_forced_long_runs(GLU_SHAPE_WRES, batches, 4,
                         "two-warpgroup W-resident gate_up vs launches");
    unsetenv("HRMT_CUDA_GLU_WRES3");
}

/* The W-resident shape's three-warpgroup form writing each act tile by one
 * TMA store from a swizzled shared-memory tile (GLU_SHAPE_WRES_TS,
 * glu_wgmma.cu's glu_epi_ts), forced against the launches: at batch 1 the
 * store clips the 64-row tile's last 46 rows; over long runs each
 * warpgroup's buffer is refilled only after the copy engine has read it.
 * The tuner times it unless HRMT_CUDA_GLU_WRES_TSTORE=0, and the model
 * must say so. */
Test(cuda_model, glu_wres_tstore) {
    need_cc90("the fused gate_up is built for", 0);
    expect_switch_default_on("HRMT_CUDA_GLU_WRES_TSTORE", HRMT_PATH_GLU_WRES_TSTORE,
                             "the tuner times it");
    const int batches[] = {1, 7, 40, 100};
    glu_forced_long_runs(GLU_SHAPE_WRES_TS, batches, 4, "W-resident gate_up, TMA stores");
}

/* The tuner with the W-resident shape among its candidates
 * (HRMT_CUDA_GLU_WRES=1) against without: the same bytes, wherever it was
 * picked (it is kept only where it gives the launches' bytes). */
Test(cuda_model, glu_wres_tuning_keeps_bits) {
    const int batches[] = {8, 64};
    switch_keeps_bits("HRMT_CUDA_GLU_WRES", "W-resident gate_up tuned", 512, 8, 81, 29, batches, 2);
}

/* Attention at small batches with each query tile's O column passes shared
 * by a team of warps (HRMT_CUDA_ATTN_TEAMS, on by default; teams of four at
 * batches up to 6, of two up to 16 on a 132-SM GPU) against one warp per
 * tile: the same bytes, both schedules (the tiered one's tiles take teams
 * where the whole batch does not), head_dim 64 with T = 82 (all key tiles
 * full) and T = 61, head_dim 32 with T = 101. */
static void attn_teams_equal_one_warp(int hidden, int heads, int seq_len) {
    const int batches[] = {1, 5, 8, 13, 40};
    switch_keeps_bits("HRMT_CUDA_ATTN_TEAMS", "attention teams vs one warp", hidden, heads, seq_len,
                      23, batches, 5);
}

Test(cuda_model, attn_teams_equal_one_warp_hrm_width) { attn_teams_equal_one_warp(512, 8, 81); }
Test(cuda_model, attn_teams_equal_one_warp_short_seq) { attn_teams_equal_one_warp(256, 4, 60); }
Test(cuda_model, attn_teams_equal_one_warp_head_dim_32) { attn_teams_equal_one_warp(64, 2, 100); }

/* Each of env's n bad values fails the load with INVALID_ARG naming env. */
static void expect_bad_values(hrmt_context *ctx, const hrmt_model_config *cfg, const char *env,
                              const char **bad, size_t n) {
    for (size_t i = 0; i < n; i++) {
        hrmt_model *m = NULL;
        setenv(env, bad[i], 1);
        cr_expect_eq(hrmt_model_create_random(ctx, cfg, 7, &m), HRMT_ERR_INVALID_ARG, "%s='%s'",
                     env, bad[i]);
        cr_expect(strstr(hrmt_last_error(ctx), env), "%s", hrmt_last_error(ctx));
        unsetenv(env);
        hrmt_model_destroy(m);
    }
}

/* Four ACT steps of m[0] and m[1] give the same bytes (logits, q, z_H, z_L
 * and halted), baseline and tiered, at each batch: with the early-halt rule
 * and a 3-step limit samples halt by either rule and restart with new inputs
 * while others run on. */
static void expect_same_acts(hrmt_model *m[2], const char *label, int hidden, int seq_len,
                             const int *batches, int nb) {
    const hrmt_schedule sched[2] = {HRMT_SCHEDULE_BASELINE, HRMT_SCHEDULE_TIERED};
    for (int i = 0; i < nb; i++)
        for (int q = 0; q < 2; q++) {
            outs x[4], y[4];
            run_act(m[0], batches[i], sched[q], 1, 4, x);
            run_act(m[1], batches[i], sched[q], 1, 4, y);
            for (int s2 = 0; s2 < 4; s2++) {
                char what[128];
                snprintf(what, sizeof what, "hidden %d T %d, %s: batch %d %s step %d", hidden,
                         seq_len + 1, label, batches[i], q ? "tiered" : "baseline", s2);
                expect_same_outs(&x[s2], &y[s2], batches[i], what);
                outs_free(&x[s2]);
                outs_free(&y[s2]);
            }
        }
}

/* A switch whose two sides must give the same bytes over those four steps;
 * m[0] runs `path`, m[1] does not. */
static void early_halt_switch_keeps_bits(const char *env, hrmt_model_path path, const char *label,
                                         int hidden, int heads, int seq_len, const int *batches,
                                         int nb) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    cfg.halt_max_steps = 3;
    hrmt_model *m[2] = {NULL, NULL};
    models_on_off(ctx, &cfg, 37, env, m);
    cr_assert_eq(hrmt_model_uses(m[0], path), 1, "%s=1 runs it (BF16, vocab %d)", env,
                 cfg.vocab_size);
    cr_assert_eq(hrmt_model_uses(m[1], path), 0, "%s=0 turns it off", env);
    expect_same_acts(m, label, hidden, seq_len, batches, nb);
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    hrmt_context_destroy(ctx);
}

/* The same with another switch `with` set to `value` in both models (NULL:
 * none), named in the label. */
static void switch_keeps_bits_with(const char *with, const char *value, const char *env,
                                   hrmt_model_path path, const char *label, int hidden, int heads,
                                   int seq_len, const int *batches, int nb) {
    char what[128];
    if (with) {
        setenv(with, value, 1);
        snprintf(what, sizeof what, "%s, %s=%s", label, with, value);
    }
    early_halt_switch_keeps_bits(env, path, with ? what : label, hidden, heads, seq_len, batches,
                                 nb);
    if (with) unsetenv(with);
}

/* The output heads and the ACT finish as one kernel (HRMT_CUDA_FUSED_HEADS,
 * on by default for BF16 models with vocab + 2 <= 16) against the two GEMMs
 * and the finish kernel; batches whose rows end inside a 16-row tile and one
 * that fills them (T = 64, batch 3: 192 rows). */
static void fused_heads_equal_launches(int hidden, int heads, int seq_len, const int *batches,
                                       int nb) {
    early_halt_switch_keeps_bits("HRMT_CUDA_FUSED_HEADS", HRMT_PATH_FUSED_HEADS, "fused heads",
                                 hidden, heads, seq_len, batches, nb);
}

/* The reset of halted samples and the input embedding as one kernel
 * (HRMT_CUDA_FUSED_RESET, on by default where H % 8 == 0) against the three
 * launches: halted and running samples side by side in one batch. */
Test(cuda_model, fused_reset_equals_launches_hrm_width) {
    const int batches[] = {1, 7, 40};
    early_halt_switch_keeps_bits("HRMT_CUDA_FUSED_RESET", HRMT_PATH_FUSED_RESET, "fused reset", 512,
                                 8, 81, batches, 3);
}
Test(cuda_model, fused_reset_equals_launches_short_seq) {
    const int batches[] = {3, 5};
    early_halt_switch_keeps_bits("HRMT_CUDA_FUSED_RESET", HRMT_PATH_FUSED_RESET, "fused reset", 256,
                                 4, 63, batches, 2);
}

Test(cuda_model, fused_heads_equal_launches_hrm_width) {
    const int batches[] = {1, 7, 40};
    fused_heads_equal_launches(512, 8, 81, batches, 3);
}
Test(cuda_model, fused_heads_equal_launches_short_seq) {
    const int batches[] = {3, 5};
    fused_heads_equal_launches(256, 4, 63, batches, 2);
}

/* Where the fused heads do not serve, the launches do: F32 models and
 * vocabularies past 14 (the kernel's 16 columns hold vocab + 2). */
Test(cuda_model, fused_heads_rules) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_F32);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 5, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_model_uses(m, HRMT_PATH_FUSED_HEADS), 0, "F32 keeps the launches");
    hrmt_model_destroy(m);
    cfg = small_cfg(HRMT_BF16);
    cfg.vocab_size = 15;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 5, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_model_uses(m, HRMT_PATH_FUSED_HEADS), 0, "vocab 15 keeps the launches");
    hrmt_model_destroy(m);
    cfg.vocab_size = 14;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 5, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_model_uses(m, HRMT_PATH_FUSED_HEADS), 1, "vocab 14 fits");
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

/* Each level's input injection folded into the kernel before it
 * (HRMT_CUDA_FOLD_INJECT, on by default for BF16): the level before's last
 * cluster projection + norm (batches 1 and 7 here; batch 40 keeps the
 * injection kernel for those, its rows past the clusters' wave) and, for
 * the step's first, the reset + embedding; against the injection kernel. */
Test(cuda_model, fold_inject_equals_launches_hrm_width) {
    const int batches[] = {1, 7, 40};
    early_halt_switch_keeps_bits("HRMT_CUDA_FOLD_INJECT", HRMT_PATH_FOLD_INJECT, "folded injection",
                                 512, 8, 81, batches, 3);
}
Test(cuda_model, fold_inject_equals_launches_short_seq) {
    const int batches[] = {3, 5};
    early_halt_switch_keeps_bits("HRMT_CUDA_FOLD_INJECT", HRMT_PATH_FOLD_INJECT, "folded injection",
                                 256, 4, 63, batches, 2);
}

/* Attention's K and Q rotated from one RoPE factor load per (row, chunk)
 * (HRMT_CUDA_ATTN_ROPE_ONCE, opt-in; attn_rope.cuh's rope_kq) against
 * a load for each: the same bytes, both schedules, halting samples. The qkv
 * + attention kernels are off, so that every batch runs the register
 * kernel: blocks holding some of a head's query tiles (batches 1 and 5: Q
 * rows from q0 > 0, K's other rows on their own) and all of them (40);
 * head_dim 64 with T = 82 and 61, head_dim 32 with T = 101. */
static void attn_rope_once_equals_twice(int hidden, int heads, int seq_len) {
    const int batches[] = {1, 5, 40};
    setenv("HRMT_CUDA_QKV_ATTN", "0", 1);
    early_halt_switch_keeps_bits("HRMT_CUDA_ATTN_ROPE_ONCE", HRMT_PATH_ATTN_ROPE_ONCE,
                                 "RoPE factors once vs twice", hidden, heads, seq_len, batches, 3);
    unsetenv("HRMT_CUDA_QKV_ATTN");
}
Test(cuda_model, attn_rope_once_equals_twice_hrm_width) { attn_rope_once_equals_twice(512, 8, 81); }
Test(cuda_model, attn_rope_once_equals_twice_short_seq) { attn_rope_once_equals_twice(256, 4, 60); }
Test(cuda_model, attn_rope_once_equals_twice_head_dim_32) {
    attn_rope_once_equals_twice(64, 2, 100);
}

/* early_halt_switch_keeps_bits at batches 1, 5 and 40 with `other` set to
 * 0, so that every batch runs the kernel `env` changes. */
static void off_switch_keeps_bits(const char *other, const char *env, hrmt_model_path p,
                                  const char *label, int hidden, int heads, int seq_len) {
    const int batches[] = {1, 5, 40};
    setenv(other, "0", 1);
    early_halt_switch_keeps_bits(env, p, label, hidden, heads, seq_len, batches, 3);
    unsetenv(other);
}

/* The register attention kernel's blocks taking the samples last first
 * (HRMT_CUDA_ATTN_DESCEND, on by default) against first first: the same bytes,
 * both schedules, halting samples. The qkv + attention kernels are off, so
 * that every batch runs the register kernel: one sample (1), blocks holding
 * some of a head's query tiles (5) and all of them (40); head_dim 64 with
 * T = 82 and 61, head_dim 32 with T = 101. */
static void attn_descend_equals_ascend(int hidden, int heads, int seq_len) {
    off_switch_keeps_bits("HRMT_CUDA_QKV_ATTN", "HRMT_CUDA_ATTN_DESCEND", HRMT_PATH_ATTN_DESCEND,
                          "attention samples last first", hidden, heads, seq_len);
}
Test(cuda_model, attn_descend_equals_ascend_hrm_width) {
    expect_switch_default_on("HRMT_CUDA_ATTN_DESCEND", HRMT_PATH_ATTN_DESCEND,
                             "the samples last first");
    attn_descend_equals_ascend(512, 8, 81);
}
Test(cuda_model, attn_descend_equals_ascend_short_seq) { attn_descend_equals_ascend(256, 4, 60); }
Test(cuda_model, attn_descend_equals_ascend_head_dim_32) { attn_descend_equals_ascend(64, 2, 100); }

/* A switch of a kernel's cache hints (`env`, path p) against plain loads,
 * with that kernel's row order (`order`, on by default) on and off: the
 * same bytes, both schedules, halting samples, batches 1, 5 and 40; `other`
 * set to 0 so that every batch runs that kernel. */
static void hint_keeps_bits(const char *other, const char *order, const char *env,
                            hrmt_model_path p, const char *label, int hidden, int heads,
                            int seq_len) {
    const int batches[] = {1, 5, 40};
    setenv(other, "0", 1);
    switch_keeps_bits_with(NULL, NULL, env, p, label, hidden, heads, seq_len, batches, 3);
    switch_keeps_bits_with(order, "0", env, p, label, hidden, heads, seq_len, batches, 3);
    unsetenv(other);
}

/* The register attention kernel's q, k and v copies evict-first in L2
 * (HRMT_CUDA_ATTN_STREAM, on by default since session 60) against plain
 * copies, the qkv + attention kernels off, as above. */
static void attn_stream_equals_plain(int hidden, int heads, int seq_len) {
    hint_keeps_bits("HRMT_CUDA_QKV_ATTN", "HRMT_CUDA_ATTN_DESCEND", "HRMT_CUDA_ATTN_STREAM",
                    HRMT_PATH_ATTN_STREAM, "attention copies evict-first", hidden, heads, seq_len);
}
Test(cuda_model, attn_stream_equals_plain_hrm_width) {
    expect_switch_default_on("HRMT_CUDA_ATTN_STREAM", HRMT_PATH_ATTN_STREAM,
                             "the attention copies evict-first");
    attn_stream_equals_plain(512, 8, 81);
}
Test(cuda_model, attn_stream_equals_plain_short_seq) { attn_stream_equals_plain(256, 4, 60); }
Test(cuda_model, attn_stream_equals_plain_head_dim_32) { attn_stream_equals_plain(64, 2, 100); }

/* The block's residual + RMSNorm kernel taking the rows last first
 * (HRMT_CUDA_NORM_DESCEND, on by default) against first first: the same bytes,
 * both schedules, halting samples. The cluster projection + norm is off, so
 * that every batch runs the row kernel after o_proj and down_proj: one
 * sample, rows ending inside a block of the kernel (5 x 61) and 40 samples;
 * hidden 512 and 256 (the 16-byte form) and 64 (the 2-byte form). */
static void norm_descend_equals_ascend(int hidden, int heads, int seq_len) {
    off_switch_keeps_bits("HRMT_CUDA_CLUSTER_NORM", "HRMT_CUDA_NORM_DESCEND",
                          HRMT_PATH_NORM_DESCEND, "norm rows last first", hidden, heads, seq_len);
}
Test(cuda_model, norm_descend_equals_ascend_hrm_width) {
    expect_switch_default_on("HRMT_CUDA_NORM_DESCEND", HRMT_PATH_NORM_DESCEND,
                             "the norm's rows last first");
    norm_descend_equals_ascend(512, 8, 81);
}
Test(cuda_model, norm_descend_equals_ascend_short_seq) { norm_descend_equals_ascend(256, 4, 60); }
Test(cuda_model, norm_descend_equals_ascend_narrow) { norm_descend_equals_ascend(64, 2, 100); }

/* The 16-byte norm kernel's loads as streaming data (HRMT_CUDA_NORM_STREAM,
 * on by default) against plain loads, the cluster projection + norm off, as
 * above (hidden 512 and 256: the 16-byte form's widths). */
static void norm_stream_equals_plain(int hidden, int heads, int seq_len) {
    hint_keeps_bits("HRMT_CUDA_CLUSTER_NORM", "HRMT_CUDA_NORM_DESCEND", "HRMT_CUDA_NORM_STREAM",
                    HRMT_PATH_NORM_STREAM, "norm loads streaming", hidden, heads, seq_len);
}
Test(cuda_model, norm_stream_equals_plain_hrm_width) {
    expect_switch_default_on("HRMT_CUDA_NORM_STREAM", HRMT_PATH_NORM_STREAM,
                             "the norm's streaming loads");
    norm_stream_equals_plain(512, 8, 81);
}
Test(cuda_model, norm_stream_equals_plain_short_seq) { norm_stream_equals_plain(256, 4, 60); }

/* The fused gate_up's s(g) by the special-function units
 * (HRMT_CUDA_GLU_FAST_SILU, on where the fused gate_up runs and the model's
 * check of all 65536 gates against the table passed) against the table's
 * lookups: the same bytes, both schedules, halting samples beside running
 * ones. On by default asserts that the check passed on this device (the
 * argument in sm90a/silu_fast.cuh holds on any sm_90; were it to fail, the
 * table would serve, same bytes, and this test says so). Batch 40 runs the
 * 128-row tiles. */
static void glu_fast_silu_equals_table(int hidden, int heads, int seq_len, const int *batches,
                                       int nb) {
    need_cc90("the fused gate_up is built for", 0);
    early_halt_switch_keeps_bits("HRMT_CUDA_GLU_FAST_SILU", HRMT_PATH_GLU_FAST_SILU,
                                 "fast s(g) vs table", hidden, heads, seq_len, batches, nb);
}
Test(cuda_model, glu_fast_silu_equals_table_hrm_width) {
    const int batches[] = {1, 7, 40};
    glu_fast_silu_equals_table(512, 8, 81, batches, 3);
}
Test(cuda_model, glu_fast_silu_equals_table_short_seq) {
    const int batches[] = {3, 5};
    glu_fast_silu_equals_table(256, 4, 63, batches, 2);
}

/* The residual + RMSNorm row kernel with 16-byte accesses
 * (HRMT_CUDA_NORM_VEC, opt-in; rowops_norm.cu's norm_vec_kernel) against the
 * 2-byte register form: the same bytes, both schedules (the tiered one's
 * SRAM form, the baseline's DRAM form), halting samples beside running ones.
 * The cluster projection + norm is off, so that every batch's norms are the
 * row kernel; hidden 512 (two chunks a lane) and 256 (one). The model
 * launches it with PDL, so compute capability 9.0 and up. */
static void norm_vec_equals_reg(int hidden, int heads, int seq_len, const int *batches, int nb) {
    need_cc90("the model's row kernels take PDL from", 1);
    setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1);
    early_halt_switch_keeps_bits("HRMT_CUDA_NORM_VEC", HRMT_PATH_NORM_VEC, "16-byte norm vs 2-byte",
                                 hidden, heads, seq_len, batches, nb);
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
}
Test(cuda_model, norm_vec_equals_reg_hrm_width) {
    const int batches[] = {1, 7, 40};
    norm_vec_equals_reg(512, 8, 81, batches, 3);
}
Test(cuda_model, norm_vec_equals_reg_short_seq) {
    const int batches[] = {3, 5};
    norm_vec_equals_reg(256, 4, 63, batches, 2);
}

/* The fused gate_up's product s(g) u by mul.rn.bf16x2 (HRMT_CUDA_GLU_MUL,
 * opt-in; on only where the model's check of all 2^32 BF16 pairs against
 * the F32 product rounded to BF16 passed) against the F32 form: the same
 * bytes, both schedules, halting samples. On asserts that the check passed
 * on this device (tests/test_silu_fast_lemmas.c says why it should). With
 * s(g) from the table too (the product's inputs differ). Batch 40 runs the
 * 128-row tiles. */
static void glu_mul_equals_f32_product(int hidden, int heads, int seq_len, const int *batches,
                                       int nb, int fast_silu) {
    need_cc90("the fused gate_up is built for", 0);
    switch_keeps_bits_with(fast_silu ? NULL : "HRMT_CUDA_GLU_FAST_SILU", "0", "HRMT_CUDA_GLU_MUL",
                           HRMT_PATH_GLU_MUL, "bf16x2 product vs F32", hidden, heads, seq_len,
                           batches, nb);
}
Test(cuda_model, glu_mul_equals_f32_product_hrm_width) {
    const int batches[] = {1, 7, 40};
    glu_mul_equals_f32_product(512, 8, 81, batches, 3, 1);
}
Test(cuda_model, glu_mul_equals_f32_product_table) {
    const int batches[] = {2, 40};
    glu_mul_equals_f32_product(512, 8, 81, batches, 2, 0);
}
Test(cuda_model, glu_mul_equals_f32_product_short_seq) {
    const int batches[] = {3, 5};
    glu_mul_equals_f32_product(256, 4, 63, batches, 2, 1);
}

/* The cluster projection + norm's exchanges pushed into byte-counted
 * barriers (HRMT_CUDA_CLUSTER_NORM_PUSH, on by default;
 * sm90a/cluster_async.cuh) against the two cluster barriers: the same bytes,
 * both schedules, halting samples. Up to 6 row tiles run clusters of 16 (32
 * columns a CTA at hidden 512, 16 at 256: batches 1 and 2 at T = 82, 1 and 3
 * at T = 64), up to 15 clusters of 8 (64 / 32 columns: batch 7, batch 8),
 * the second tile's rows ending inside a CTA's rows and before some CTAs'
 * rows begin, with the next level's injection folded into the last. */
static void cluster_norm_push_equals_barriers(int hidden, int heads, int seq_len,
                                              const int *batches, int nb) {
    need_cc90("the cluster projection + norm is built for", 0);
    early_halt_switch_keeps_bits("HRMT_CUDA_CLUSTER_NORM_PUSH", HRMT_PATH_CLUSTER_NORM_PUSH,
                                 "pushes vs barriers", hidden, heads, seq_len, batches, nb);
}
Test(cuda_model, cluster_norm_push_equals_barriers_hrm_width) {
    const int batches[] = {1, 2, 7};
    cluster_norm_push_equals_barriers(512, 8, 81, batches, 3);
}
Test(cuda_model, cluster_norm_push_equals_barriers_short_seq) {
    const int batches[] = {1, 3, 8};
    cluster_norm_push_equals_barriers(256, 4, 63, batches, 3);
}

/* The cluster projection + norm's rows normalised and stored by the CTA
 * that computes their inv (HRMT_CUDA_CLUSTER_NORM_OWNER, with the pushes;
 * on by default) against the push form that sends each inv back to the
 * row's CTAs: the same bytes, both schedules, halting samples. Clusters of 16 (batches 1
 * and 2 at T = 82: the second tile's 18 rows end inside owner 4's four;
 * 1 and 3 at T = 64) and of 8 (batch 7: the last tile's 62 rows end inside
 * owner 7's eight; batch 8), the next level's injection folded into the
 * level's last call. */
static void cluster_norm_owner_equals_push(int hidden, int heads, int seq_len, const int *batches,
                                           int nb) {
    need_cc90("the cluster projection + norm is built for", 0);
    expect_switch_default_on("HRMT_CUDA_CLUSTER_NORM_OWNER", HRMT_PATH_CLUSTER_NORM_OWNER,
                             "the owner's stores");
    early_halt_switch_keeps_bits("HRMT_CUDA_CLUSTER_NORM_OWNER", HRMT_PATH_CLUSTER_NORM_OWNER,
                                 "owner's stores vs invs sent back", hidden, heads, seq_len,
                                 batches, nb);
}
Test(cuda_model, cluster_norm_owner_equals_push_hrm_width) {
    const int batches[] = {1, 2, 7};
    cluster_norm_owner_equals_push(512, 8, 81, batches, 3);
}
Test(cuda_model, cluster_norm_owner_equals_push_short_seq) {
    const int batches[] = {1, 3, 8};
    cluster_norm_owner_equals_push(256, 4, 63, batches, 3);
}

/* The owner's rows over all eight warps (HRMT_CUDA_CLUSTER_NORM_OWNER8,
 * on by default since session 56: the producer warpgroup's warps take rows
 * 4-7 of the eight a CTA owns in clusters of 8) against the consumer's four
 * alone: the same bytes, both schedules, halting samples. Clusters of 8
 * (batch 7: the last tile's 62 rows end inside owner 7's eight, row 6 a
 * producer warp's; batches 8 and 11, the latter 15 tiles; 8 at T = 64),
 * the next level's injection folded into the level's last call; clusters
 * of 16 (batch 1 and 2 at T = 82, 1 and 3 at T = 64: four rows a CTA) run
 * the consumer's form either way. */
static void cluster_norm_owner8_equals_owner(int hidden, int heads, int seq_len, const int *batches,
                                             int nb) {
    need_cc90("the cluster projection + norm is built for", 0);
    expect_switch_default_on("HRMT_CUDA_CLUSTER_NORM_OWNER8", HRMT_PATH_CLUSTER_NORM_OWNER8,
                             "on by default");
    early_halt_switch_keeps_bits("HRMT_CUDA_CLUSTER_NORM_OWNER8", HRMT_PATH_CLUSTER_NORM_OWNER8,
                                 "owner's rows over eight warps vs four", hidden, heads, seq_len,
                                 batches, nb);
}
Test(cuda_model, cluster_norm_owner8_equals_owner_hrm_width) {
    const int batches[] = {1, 2, 7, 8, 11};
    cluster_norm_owner8_equals_owner(512, 8, 81, batches, 5);
}
Test(cuda_model, cluster_norm_owner8_equals_owner_short_seq) {
    const int batches[] = {1, 3, 8};
    cluster_norm_owner8_equals_owner(256, 4, 63, batches, 3);
}

/* A level's input injection as one kernel (HRMT_CUDA_FUSED_INJECT, on by
 * default; model_inject.cu) against the row-op adds: the same bytes, both
 * schedules (the tiered one injects a tile's precomputed sum), at HRM's
 * width (batches 1 and 7) and on the small model with T = 61. */
static void fused_inject_equals_adds(int hidden, int heads, int seq_len) {
    const int batches[] = {1, 7};
    switch_keeps_bits("HRMT_CUDA_FUSED_INJECT", "fused injection vs adds", hidden, heads, seq_len,
                      29, batches, 2);
}

Test(cuda_model, fused_inject_equals_adds_hrm_width) { fused_inject_equals_adds(512, 8, 81); }
Test(cuda_model, fused_inject_equals_adds_short_seq) { fused_inject_equals_adds(256, 4, 60); }

/* The tiered schedule's tile links (HRMT_CUDA_TILE_LINKS, opt-in;
 * model_inject.cu: the copy into a tile, its injection and the first L
 * level's injection as one kernel, the copy back with the H level's
 * injection as another) against the copies and separate injections: the
 * same bytes over four early-halt steps, both schedules (the baseline does
 * not use them: its bytes must not move either). One tile (batch 1), one
 * ragged tile of two and three tiles (HRMT_CUDA_TILE_SAMPLES=3 at batches 2
 * and 7: 3 + 3 + 1), and the default tiles at batch 40; off by default. */
static void tile_links_equal_copies(int hidden, int heads, int seq_len) {
    expect_switch_default("HRMT_CUDA_TILE_LINKS", HRMT_PATH_TILE_LINKS, 0, "off by default");
    const int batches[] = {1, 40};
    early_halt_switch_keeps_bits("HRMT_CUDA_TILE_LINKS", HRMT_PATH_TILE_LINKS, "tile links", hidden,
                                 heads, seq_len, batches, 2);
    const int small[] = {2, 7};
    switch_keeps_bits_with("HRMT_CUDA_TILE_SAMPLES", "3", "HRMT_CUDA_TILE_LINKS",
                           HRMT_PATH_TILE_LINKS, "tile links", hidden, heads, seq_len, small, 2);
}
Test(cuda_model, tile_links_equal_copies_hrm_width) { tile_links_equal_copies(512, 8, 81); }
Test(cuda_model, tile_links_equal_copies_short_seq) { tile_links_equal_copies(256, 4, 60); }

/* F32 models keep the copies and adds (the links are BF16 kernels): the
 * switch is accepted and changes nothing. */
Test(cuda_model, tile_links_keep_f32) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_F32);
    setenv("HRMT_CUDA_TILE_LINKS", "1", 1);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 5, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_TILE_LINKS");
    cr_expect_eq(hrmt_model_uses(m, HRMT_PATH_TILE_LINKS), 0, "F32 takes the copies");
    hrmt_model_destroy(m);
    const char *bad[] = {"2", "on", "", "-1"};
    expect_bad_values(ctx, &cfg, "HRMT_CUDA_TILE_LINKS", bad, sizeof bad / sizeof bad[0]);
    hrmt_context_destroy(ctx);
}

/* Off compute capability 9.0 the sm_90a kernels must not serve (on: the
 * path query's answer for m there): then m, ref and ctx are freed and the
 * test is skipped. */
static void skip_off_sm90a(int on, hrmt_model *m, hrmt_model *ref, hrmt_context *ctx) {
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    if (ci.cc_major == 9 && ci.cc_minor == 0) return;
    cr_expect_eq(on, 0, "cc %d.%d: the sm_90a kernels do not serve it", ci.cc_major, ci.cc_minor);
    hrmt_model_destroy(m);
    hrmt_model_destroy(ref);
    hrmt_context_destroy(ctx);
    cr_skip_test("the wgmma kernels are built for compute capability 9.0; this is %d.%d",
                 ci.cc_major, ci.cc_minor);
}

/* o_proj / down_proj + residual + RMSNorm as one kernel over a thread-block
 * cluster (HRMT_CUDA_CLUSTER_NORM, on by default: clusters of 16 up to six
 * 64-row tiles, of 8 up to 15) in the otherwise default (tuned) model against
 * the launch-by-launch block: the same bytes, both schedules, at rows the
 * default gives clusters of 16 (hidden 512: 82 rows, two tiles, the second
 * ragged; 328; hidden 256 with T = 61: 183), clusters of 8 (574) and neither
 * (984, 1066; 976, 1220), per tiered tile too; then clusters of 8 forced
 * (every row count up to one wave of them: 1024 rows). */
static void cluster_norm_equals_launches(int hidden, int heads, int seq_len, const int *batches,
                                         int nb) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    hrmt_model *ref = launches_model(ctx, &cfg, 31), *m = NULL;
    cr_assert_eq(hrmt_model_uses(ref, HRMT_PATH_CLUSTER_NORM), 0,
                 "HRMT_CUDA_CLUSTER_NORM=0 must turn it off");
    unsetenv("HRMT_CUDA_CLUSTER_NORM"); /* the default */
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 31, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    skip_off_sm90a(hrmt_model_uses(m, HRMT_PATH_CLUSTER_NORM), m, ref, ctx);
    cr_assert_eq(hrmt_model_uses(m, HRMT_PATH_CLUSTER_NORM), 1, "on by default on cc 9.0");
    char what[128];
    snprintf(what, sizeof what, "hidden %d T %d, cluster projection + norm vs launches", hidden,
             seq_len + 1);
    expect_same_steps(m, ref, batches, nb, what);
    hrmt_model_destroy(m);
    /* Clusters of 8 at every row count a wave of them holds. */
    setenv("HRMT_CUDA_CLUSTER_NORM", "1", 1);
    setenv("HRMT_CUDA_CLUSTER_NORM_CTAS", "8", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 31, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_CLUSTER_NORM_CTAS");
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
    cr_assert_eq(hrmt_model_uses(m, HRMT_PATH_CLUSTER_NORM), 1, "clusters of 8 on cc 9.0");
    snprintf(what, sizeof what, "hidden %d T %d, cluster (8) projection + norm vs launches", hidden,
             seq_len + 1);
    expect_same_steps(m, ref, batches, nb, what);
    hrmt_model_destroy(m);
    hrmt_model_destroy(ref);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, cluster_norm_equals_launches_hrm_width) {
    const int batches[] = {1, 4, 7, 12, 13};
    cluster_norm_equals_launches(512, 8, 81, batches, 5);
}
Test(cuda_model, cluster_norm_equals_launches_short_seq) {
    const int batches[] = {3, 16, 20};
    cluster_norm_equals_launches(256, 4, 60, batches, 3);
}

/* The two-CTA projection + norm kernel (HRMT_CUDA_FUSED_NORM=1) beside the
 * cluster form, which keeps the batches of its one wave: both in the
 * otherwise default (tuned) model against the launches, both schedules.
 * Batch 1 runs the cluster form (the level's injection folded into it);
 * 20 and 40 (1640 and 3280 rows: 26 and 52 tiles of 64, past the cluster
 * form's 15) the two-CTA kernel, 13 and 26 tiles of 128, the last ragged. */
Test(cuda_model, fused_norm_beside_cluster_norm_equals_launches) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(512, 8, 81);
    hrmt_model *ref = launches_model(ctx, &cfg, 41), *m = NULL;
    setenv("HRMT_CUDA_FUSED_NORM", "1", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 41, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_FUSED_NORM");
    skip_off_sm90a(hrmt_model_uses(m, HRMT_PATH_FUSED_NORM), m, ref, ctx);
    cr_assert_eq(hrmt_model_uses(m, HRMT_PATH_FUSED_NORM), 1, "HRMT_CUDA_FUSED_NORM=1 on cc 9.0");
    cr_assert_eq(hrmt_model_uses(m, HRMT_PATH_CLUSTER_NORM), 1,
                 "the cluster form keeps its batches beside it");
    const int batches[] = {1, 20, 40};
    expect_same_steps(m, ref, batches, 3, "projection + norm beside the cluster form vs launches");
    hrmt_model_destroy(m);
    hrmt_model_destroy(ref);
    hrmt_context_destroy(ctx);
}

/* A sample's bytes do not depend on the batch around it: in the default
 * (tuned) model, sample 0 of batches 8, 40 and 256 (the cluster forms, the
 * CTA forms, GEMMs tuned at the step's exact M and the launches, each at
 * its batches) against the same sample alone, every output of three steps,
 * both schedules. make_inputs draws sample 0's tokens and puzzle id first
 * whatever the batch. */
Test(cuda_model, a_sample_is_the_same_in_any_batch) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(512, 8, 81);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 43, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    const hrmt_schedule sched[2] = {HRMT_SCHEDULE_BASELINE, HRMT_SCHEDULE_TIERED};
    const int batches[] = {8, 40, 256};
    for (int q = 0; q < 2; q++) {
        outs one[3];
        run_steps(m, 1, sched[q], 3, one);
        for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
            const int B = batches[b];
            outs all[3];
            run_steps(m, B, sched[q], 3, all);
            for (int s = 0; s < 3; s++) {
                for (int f = 0; f < 5; f++)
                    cr_expect(!memcmp(one[s].f[f], all[s].f[f], one[s].n[f] * sizeof(float)),
                              "%s step %d %s: sample 0 of batch %d != the sample alone",
                              q ? "tiered" : "baseline", s, k_fields[f], B);
                cr_expect_eq(one[s].halted[0], all[s].halted[0], "step %d halted, batch %d", s, B);
                outs_free(&all[s]);
            }
        }
        for (int s = 0; s < 3; s++) outs_free(&one[s]);
    }
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

/* The block GEMMs and the fused gate_up tuned at a step's exact M
 * (HRMT_CUDA_GEMM_TUNE_EXACT, on by default; rows above 128 that are no
 * bucket's own M: 3, 12, 26 and 40 samples of T = 82, 246, 984, 2132 and
 * 3280 rows, the first two with the own wgmma tiles among the candidates)
 * against the launches with the pinned algorithm: the same bytes, both
 * schedules (the tiered tiles take their buckets' picks). */
Test(cuda_model, exact_m_tuning_keeps_bits) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(512, 8, 81);
    hrmt_model *ref = launches_model(ctx, &cfg, 37), *m = NULL;
    cr_assert_eq(hrmt_model_uses(ref, HRMT_PATH_GEMM_TUNE_EXACT), 0,
                 "HRMT_CUDA_GEMM_TUNE=0: no tuning at all");
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 37, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_assert_eq(hrmt_model_uses(m, HRMT_PATH_GEMM_TUNE_EXACT), 1, "on by default");
    const int batches[] = {3, 12, 26, 40};
    expect_same_steps(m, ref, batches, 4, "GEMMs tuned at the step's M vs launches");
    hrmt_model_destroy(m);
    hrmt_model_destroy(ref);
    hrmt_context_destroy(ctx);
}

/* The block's qkv projection and attention as one kernel (HRMT_CUDA_QKV_ATTN,
 * on by default): over a cluster per (sample, head) while the batch's pairs
 * fit one wave of clusters, then over two CTAs per pair where T > 64
 * (HRMT_CUDA_QKV_ATTN_PAIR), then one CTA per pair while they fit one wave
 * of CTAs (HRMT_CUDA_QKV_ATTN_CTA), in the otherwise default (tuned) model
 * against the qkv GEMM + attention kernel: the same bytes, both schedules,
 * at batches each form serves and one left to the launches (the tiered
 * tiles may take a form there). HRM's width (8 heads on 132 SMs: clusters
 * at batches 1-2, pairs at 7, CTAs at 16, launches at 20) has two 64-row tiles per
 * sample (T = 82, the second ragged: clusters of six); T = 61 (4 heads:
 * clusters at 1 and 3, CTAs at 20, launches at 40) one (clusters of three,
 * a CTA with two query tiles; the CTA form's second half all past T), with
 * RoPE and with learned positions. */
static void qkv_attn_equals_launches(int hidden, int heads, int seq_len, hrmt_pos_encoding pos,
                                     const int *batches, int nb) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    cfg.pos_encodings = pos;
    hrmt_model *m[2] = {NULL, NULL};
    models_on_off(ctx, &cfg, 37, "HRMT_CUDA_QKV_ATTN", m);
    cr_assert_eq(hrmt_model_uses(m[1], HRMT_PATH_QKV_ATTN), 0,
                 "HRMT_CUDA_QKV_ATTN=0 must turn it off");
    skip_off_sm90a(hrmt_model_uses(m[0], HRMT_PATH_QKV_ATTN), m[0], m[1], ctx);
    cr_assert_eq(hrmt_model_uses(m[0], HRMT_PATH_QKV_ATTN), 1, "on by default on cc 9.0");
    char what[128];
    snprintf(what, sizeof what, "hidden %d T %d pos %d, qkv + attention vs launches", hidden,
             seq_len + 1, (int)pos);
    expect_same_steps(m[0], m[1], batches, nb, what);
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, qkv_attn_equals_launches_hrm_width) {
    const int batches[] = {1, 2, 7, 16, 20};
    qkv_attn_equals_launches(512, 8, 81, HRMT_POS_ROPE, batches, 5);
}
Test(cuda_model, qkv_attn_equals_launches_short_seq) {
    const int batches[] = {1, 3, 20, 40};
    qkv_attn_equals_launches(256, 4, 60, HRMT_POS_ROPE, batches, 4);
    qkv_attn_equals_launches(256, 4, 60, HRMT_POS_LEARNED, batches, 3);
}

/* qkv + attention over a pair of CTAs per (sample, head)
 * (HRMT_CUDA_QKV_ATTN_PAIR, on by default where T > 64;
 * sm90a/qkv_attn_pair_wgmma.cu) against the CTA form, which serves the same
 * batches with it off: the same bytes, both schedules, halting samples.
 * On by default (and INVALID_ARG for other values) at HRM's width.
 * The second CTA's query tiles: T = 82 two (a team of two warps a tile),
 * 70 one (a team of four), 100 three (a warp each, KT = 8), 128 four; the
 * first CTA's always four. Batches past the cluster form's wave: 3 and 8 at
 * HRM's width (8 heads), 6 and 16 at hidden 256 (4 heads). */
static void qkv_attn_pair_equals_cta(int hidden, int heads, int seq_len, const int *batches,
                                     int nb) {
    need_cc90("the qkv + attention pair kernel is built for", 0);
    early_halt_switch_keeps_bits("HRMT_CUDA_QKV_ATTN_PAIR", HRMT_PATH_QKV_ATTN_PAIR,
                                 "qkv + attention pairs vs CTAs", hidden, heads, seq_len, batches,
                                 nb);
}
Test(cuda_model, qkv_attn_pair_equals_cta_hrm_width) {
    need_cc90("the qkv + attention pair kernel is built for", 0);
    expect_switch_default_on("HRMT_CUDA_QKV_ATTN_PAIR", HRMT_PATH_QKV_ATTN_PAIR,
                             "pairs while they fit one wave");
    const int batches[] = {3, 8};
    qkv_attn_pair_equals_cta(512, 8, 81, batches, 2);
}
Test(cuda_model, qkv_attn_pair_equals_cta_short_seq) {
    const int batches[] = {6, 16}, seq_lens[] = {69, 99, 127};
    for (int i = 0; i < 3; i++)
        qkv_attn_pair_equals_cta(256, 4, seq_lens[i], batches, i < 2 ? 2 : 1);
}

/* The cluster form's pushes counted in bytes on each receiver's barrier
 * (HRMT_CUDA_QKV_ATTN_PUSH, opt-in; sm90a/cluster_async.cuh) against the
 * cluster barrier after them: the same bytes, both schedules, halting
 * samples, at batches the cluster form serves, for each of its four
 * instances: T = 82 (two row tiles, six query tiles), 61 (one row tile,
 * clusters of three), 70 (two row tiles, five query tiles: a CTA owns
 * none) and 100 (seven query tiles: a CTA owns two). */
static void qkv_attn_push_equals_barrier(int hidden, int heads, int seq_len, const int *batches,
                                         int nb) {
    need_cc90("the qkv + attention cluster kernel is built for", 0);
    early_halt_switch_keeps_bits("HRMT_CUDA_QKV_ATTN_PUSH", HRMT_PATH_QKV_ATTN_PUSH,
                                 "qkv + attention pushes vs barrier", hidden, heads, seq_len,
                                 batches, nb);
}
Test(cuda_model, qkv_attn_push_equals_barrier_hrm_width) {
    const int batches[] = {1, 2};
    qkv_attn_push_equals_barrier(512, 8, 81, batches, 2);
}
Test(cuda_model, qkv_attn_push_equals_barrier_short_seq) {
    const int batches[] = {1, 3};
    qkv_attn_push_equals_barrier(256, 4, 60, batches, 2);
    qkv_attn_push_equals_barrier(256, 4, 69, batches, 2);
    qkv_attn_push_equals_barrier(256, 4, 99, batches, 1);
}

/* The cluster and pair forms' pushes as copy-engine transfers of whole
 * rows (HRMT_CUDA_QKV_ATTN_BULK; sm90a/push_plan.cuh's qa_bulk_copy, the
 * pair's K and V rows) against the 16-byte st.async pushes: the same bytes,
 * both schedules, halting samples, for the cluster form's four instances
 * (T = 82, 61, 70: a CTA owns no query tile, 100: one owns two) and the
 * pair form at T > 64 (batch 8 at 8 heads; 6 and 16 at 4). On by default
 * since session 51 (session 50: these passed, 0.977 / 1.000 / 0.995 of the
 * step at batch 1 / 2 / 8; session 51: the whole device suite with it on). */
static void qkv_attn_bulk_equals_push(int hidden, int heads, int seq_len, const int *batches,
                                      int nb) {
    need_cc90("the qkv + attention cluster kernel is built for", 0);
    early_halt_switch_keeps_bits("HRMT_CUDA_QKV_ATTN_BULK", HRMT_PATH_QKV_ATTN_BULK,
                                 "qkv + attention copies vs pushes", hidden, heads, seq_len,
                                 batches, nb);
}
Test(cuda_model, qkv_attn_bulk_equals_push_hrm_width) {
    need_cc90("the qkv + attention cluster kernel is built for", 0);
    expect_switch_default_on("HRMT_CUDA_QKV_ATTN_BULK", HRMT_PATH_QKV_ATTN_BULK,
                             "copies where the cluster and pair forms run");
    const int batches[] = {1, 2, 8};
    qkv_attn_bulk_equals_push(512, 8, 81, batches, 3);
}
Test(cuda_model, qkv_attn_bulk_equals_push_short_seq) {
    const int batches[] = {1, 3, 6, 16};
    qkv_attn_bulk_equals_push(256, 4, 60, batches, 2);
    qkv_attn_bulk_equals_push(256, 4, 69, batches, 3);
    qkv_attn_bulk_equals_push(256, 4, 99, batches, 1);
    qkv_attn_bulk_equals_push(256, 4, 99, batches + 3, 1);
}

/* Both qkv + attention kernels' RoPE factors loaded before the products
 * (HRMT_CUDA_ROPE_EARLY, opt-in) against after them: the same bytes, both
 * schedules, halting samples, at batches of the cluster form (1, 2) and of
 * the CTA form (7, 16) at HRM's width, and at T = 61 (clusters at 1 and 3,
 * CTAs at 20); and with the cluster form's pushes. */
static void rope_early_equals_late(int hidden, int heads, int seq_len, const int *batches, int nb,
                                   int push) {
    need_cc90("the qkv + attention kernels are built for", 0);
    switch_keeps_bits_with(push ? "HRMT_CUDA_QKV_ATTN_PUSH" : NULL, "1", "HRMT_CUDA_ROPE_EARLY",
                           HRMT_PATH_ROPE_EARLY, "RoPE factors early vs late", hidden, heads,
                           seq_len, batches, nb);
}
Test(cuda_model, rope_early_equals_late_hrm_width) {
    const int batches[] = {1, 2, 7, 16};
    rope_early_equals_late(512, 8, 81, batches, 4, 0);
}
Test(cuda_model, rope_early_equals_late_short_seq) {
    const int batches[] = {1, 3, 20};
    rope_early_equals_late(256, 4, 60, batches, 3, 0);
}
Test(cuda_model, rope_early_equals_late_push) {
    const int batches[] = {1};
    rope_early_equals_late(512, 8, 81, batches, 1, 1);
}

/* The cluster projection + norm's ring with two or four (the default) k
 * blocks a TMA copy (HRMT_CUDA_RING_KB, wgmma_common.cuh's encode_kb)
 * against one, which cluster_norm_equals_launches_* held to the launches
 * before four became the default: the same
 * bytes, both schedules, halting samples, models made with the value and
 * with 1; clusters of 16 and of 8 (batches 1, 2, 7 at HRM's width: o_proj's
 * 8 and down_proj's 24 k blocks), hidden 256 (4 and 12), the second tile's
 * rows ending inside it; the cluster qkv + attention at batches 1, 2 (and 1,
 * 3 at hidden 256, T = 64). */
static void ring_kb_equals_one(const char *kb, int hidden, int heads, int seq_len,
                               const int *batches, int nb) {
    need_cc90("the cluster projection + norm is built for", 0);
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    cfg.halt_max_steps = 3;
    hrmt_model *m[2] = {NULL, NULL};
    models_with(ctx, &cfg, 37, "HRMT_CUDA_RING_KB", kb, "1", m);
    cr_assert_eq(hrmt_model_uses(m[0], HRMT_PATH_RING_KB), 1, "=%s runs it", kb);
    cr_assert_eq(hrmt_model_uses(m[1], HRMT_PATH_RING_KB), 0, "=1 is one k block a copy");
    char label[32];
    snprintf(label, sizeof label, "ring kb %s vs 1", kb);
    expect_same_acts(m, label, hidden, seq_len, batches, nb);
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    hrmt_context_destroy(ctx);
}
Test(cuda_model, ring_kb_equals_one_hrm_width) {
    const int batches[] = {1, 2, 7};
    ring_kb_equals_one("2", 512, 8, 81, batches, 3);
    ring_kb_equals_one("4", 512, 8, 81, batches, 3);
}
Test(cuda_model, ring_kb_equals_one_short_seq) {
    const int batches[] = {1, 3, 8};
    ring_kb_equals_one("2", 256, 4, 63, batches, 3);
    ring_kb_equals_one("4", 256, 4, 63, batches, 3);
}
/* qkv + attention's CTA form with W's q, k and v rows one copy a stage
 * (HRMT_CUDA_QKV_ATTN_CTA_W1, encode_parts' 4-D map) against three copies: the
 * same bytes, both schedules, halting samples, at batches the CTA form
 * serves (hidden 512: 3, 8; hidden 256, T = 70: 6, 16). */
static void qkv_attn_cta_ring_keeps_bits(const char *env, hrmt_model_path path, const char *label,
                                         int hrm_width) {
    need_cc90("the qkv + attention CTA kernel is built for", 0);
    const int wide[] = {3, 8}, narrow[] = {6, 16};
    if (hrm_width)
        early_halt_switch_keeps_bits(env, path, label, 512, 8, 81, wide, 2);
    else
        early_halt_switch_keeps_bits(env, path, label, 256, 4, 69, narrow, 2);
}
Test(cuda_model, qkv_attn_cta_w1_equals_three_hrm_width) {
    qkv_attn_cta_ring_keeps_bits("HRMT_CUDA_QKV_ATTN_CTA_W1", HRMT_PATH_QKV_ATTN_CTA_W1,
                                 "CTA form, W one copy", 1);
}
Test(cuda_model, qkv_attn_cta_w1_equals_three_short_seq) {
    qkv_attn_cta_ring_keeps_bits("HRMT_CUDA_QKV_ATTN_CTA_W1", HRMT_PATH_QKV_ATTN_CTA_W1,
                                 "CTA form, W one copy", 0);
}

/* Where it does not serve: the barrier form keeps one k block a copy (the
 * cluster qkv + attention's barrier form too: the other ring it serves). */
Test(cuda_model, ring_kb_rules) {
    need_cc90("the cluster projection + norm is built for", 0);
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(512, 8, 81);
    hrmt_model *m = NULL;
    setenv("HRMT_CUDA_RING_KB", "2", 1);
    setenv("HRMT_CUDA_QKV_ATTN_PUSH", "0", 1);
    setenv("HRMT_CUDA_CLUSTER_NORM_PUSH", "0", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 5, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_model_uses(m, HRMT_PATH_RING_KB), 0,
                 "HRMT_CUDA_CLUSTER_NORM_PUSH=0 keeps one");
    unsetenv("HRMT_CUDA_CLUSTER_NORM_PUSH");
    unsetenv("HRMT_CUDA_QKV_ATTN_PUSH");
    unsetenv("HRMT_CUDA_RING_KB");
    hrmt_model_destroy(m);
    const char *bad[] = {"0", "3", "8", "two", ""};
    expect_bad_values(ctx, &cfg, "HRMT_CUDA_RING_KB", bad, sizeof bad / sizeof bad[0]);
    hrmt_context_destroy(ctx);
}

/* The block's residual + RMSNorm as the next GEMM's prologue
 * (HRMT_CUDA_NORM_PROLOGUE; rows <= 256): the norm after o_proj in the fused
 * gate_up's, the one after down_proj in the next block's qkv (own GEMM
 * shapes). Against launches with the pinned GEMM and the row kernels, every
 * own GEMM shape and gate_up shape forced (pairs i, i), both schedules; the
 * batches mix calls it serves (82 / 164 / 246 rows; hidden 256 with T = 61:
 * 183, 244) and larger ones it leaves to the launches. */
static void norm_prologue_equals_launches(int hidden, int heads, int seq_len, const int *batches,
                                          int nb) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = sized_cfg(hidden, heads, seq_len);
    hrmt_model *ref = launches_model(ctx, &cfg, 13), *m = NULL;
    cr_assert_eq(hrmt_model_uses(ref, HRMT_PATH_NORM_PROLOGUE), 0);
    setenv("HRMT_CUDA_NORM_PROLOGUE", "1", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 13, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_NORM_PROLOGUE");
    const int on = hrmt_model_uses(m, HRMT_PATH_NORM_PROLOGUE);
    hrmt_model_destroy(m);
    m = NULL;
    skip_off_sm90a(on, NULL, ref, ctx);
    for (int shape = 0; shape < 6; shape++) {
        char v[16];
        snprintf(v, sizeof v, "%d", shape);
        setenv("HRMT_CUDA_NORM_PROLOGUE", "1", 1);
        setenv("HRMT_CUDA_WGEMM_SHAPE", v, 1);
        setenv("HRMT_CUDA_GLU_SHAPE", v, 1);
        cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 13, &m), HRMT_OK, "shape %d: %s", shape,
                     hrmt_last_error(ctx));
        unsetenv("HRMT_CUDA_NORM_PROLOGUE");
        unsetenv("HRMT_CUDA_WGEMM_SHAPE");
        unsetenv("HRMT_CUDA_GLU_SHAPE");
        cr_assert_eq(hrmt_model_uses(m, HRMT_PATH_NORM_PROLOGUE), 1, "shape %d", shape);
        char what[128];
        snprintf(what, sizeof what, "shape %d hidden %d T %d, norm prologue vs launches", shape,
                 hidden, seq_len + 1);
        expect_same_steps(m, ref, batches, nb, what);
        hrmt_model_destroy(m);
        m = NULL;
    }
    /* Off when asked. */
    setenv("HRMT_CUDA_NORM_PROLOGUE", "0", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 13, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_model_uses(m, HRMT_PATH_NORM_PROLOGUE), 0);
    unsetenv("HRMT_CUDA_NORM_PROLOGUE");
    hrmt_model_destroy(m);
    hrmt_model_destroy(ref);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, norm_prologue_equals_launches_hrm_width) {
    const int batches[] = {1, 3, 4};
    norm_prologue_equals_launches(512, 8, 81, batches, 3);
}
Test(cuda_model, norm_prologue_equals_launches_short_seq) {
    const int batches[] = {3, 4, 5};
    norm_prologue_equals_launches(256, 4, 60, batches, 3);
}

/* Programmatic dependent launch (HRMT_CUDA_PDL, on by default from
 * compute capability 9.0) changes when the block kernels start, never what
 * they compute: the same bytes as plain launches, both schedules, at HRM's
 * width (batches 1, 7, 20) and with the GEMMs forced onto the own kernels
 * (every kernel of a block then launched that way). */
static void pdl_equals_plain(const char *wgemm_shape) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    cfg.hidden_size = cfg.puzzle_emb_ndim = 512;
    cfg.num_heads = 8;
    hrmt_cuda_info ci;
    memset(&ci, 0, sizeof ci);
    cr_assert_eq(hrmt_cuda_query(&ci), HRMT_OK);
    if (wgemm_shape && !(ci.cc_major == 9 && ci.cc_minor == 0))
        cr_skip_test("the wgmma kernels are built for compute capability 9.0; this is %d.%d",
                     ci.cc_major, ci.cc_minor);
    /* Forced shape: every projection on the own GEMM (the cluster kernel,
     * on by default at small batches, is in the tuned pair). */
    if (wgemm_shape) {
        setenv("HRMT_CUDA_WGEMM_SHAPE", wgemm_shape, 1);
        setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1);
    }
    hrmt_model *m[2] = {NULL, NULL};
    models_on_off(ctx, &cfg, 17, "HRMT_CUDA_PDL", m);
    unsetenv("HRMT_CUDA_WGEMM_SHAPE");
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
    const int batches[] = {1, 7, 20};
    char what[128];
    snprintf(what, sizeof what, "wgemm %s, PDL vs plain launches",
             wgemm_shape ? wgemm_shape : "tuned");
    expect_same_steps(m[0], m[1], batches, 3, what);
    hrmt_model_destroy(m[0]);
    hrmt_model_destroy(m[1]);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, pdl_equals_plain_launches) { pdl_equals_plain(NULL); }
Test(cuda_model, pdl_equals_plain_launches_own_gemm) { pdl_equals_plain("1"); }

/* A step's inputs and outputs through page-locked staging, the upload a node
 * of the step's graph and the downloads queued behind it
 * (HRMT_CUDA_PINNED_IO, on by default), against the synchronous copies:
 * the same bytes over four steps with the early-halt rule (samples halt and
 * take new inputs), both schedules, a model with puzzle ids (inputs and ids
 * in one copy) and one without, every output asked for and only q. */
static void pinned_io_case(hrmt_context *ctx, hrmt_model *m[2], int B, hrmt_schedule sched,
                           int pids, const char *what) {
    const hrmt_model_config *cfg = hrmt_model_get_config(m[0]);
    int32_t *in = malloc((size_t)B * (size_t)cfg->seq_len * 4), *pid = malloc((size_t)B * 4);
    cr_assert(in && pid);
    hrmt_carry *c[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) cr_assert_eq(hrmt_carry_create(m[k], B, &c[k]), HRMT_OK);
    hrmt_step_options opt = {sched, 1};
    for (int s = 0; s < 4; s++) {
        make_inputs(cfg, B, s, in, pid);
        outs x[2];
        for (int k = 0; k < 2; k++) {
            outs_init(&x[k], cfg, hrmt_model_puzzle_len(m[k]), B);
            if (s == 2) /* q and halted only: no logits download */
                x[k].o.logits = x[k].o.z_H = x[k].o.z_L = NULL;
            cr_assert_eq(hrmt_act_step(m[k], c[k], in, pids ? pid : NULL, &opt, &x[k].o, NULL),
                         HRMT_OK, "%s step %d: %s", what, s, hrmt_last_error(ctx));
        }
        char w[160];
        snprintf(w, sizeof w, "%s batch %d %s step %d", what, B,
                 sched == HRMT_SCHEDULE_TIERED ? "tiered" : "baseline", s);
        expect_same_outs(&x[0], &x[1], B, w);
        for (int k = 0; k < 2; k++) outs_free(&x[k]);
    }
    for (int k = 0; k < 2; k++) hrmt_carry_destroy(c[k]);
    free(in);
    free(pid);
}

Test(cuda_model, pinned_io_equals_sync_copies) {
    hrmt_context *ctx = cuda_ctx();
    for (int pids = 1; pids >= 0; pids--) {
        hrmt_model_config cfg = small_cfg(HRMT_BF16);
        cfg.halt_max_steps = 3;
        if (!pids) cfg.puzzle_emb_ndim = 0;
        hrmt_model *m[2] = {NULL, NULL};
        models_on_off(ctx, &cfg, 41, "HRMT_CUDA_PINNED_IO", m);
        cr_assert_eq(hrmt_model_uses(m[0], HRMT_PATH_PINNED_IO), 1, "on by default");
        cr_assert_eq(hrmt_model_uses(m[1], HRMT_PATH_PINNED_IO), 0, "=0 turns it off");
        const int batches[] = {1, 7};
        for (int i = 0; i < 2; i++) {
            pinned_io_case(ctx, m, batches[i], HRMT_SCHEDULE_BASELINE, pids,
                           pids ? "pinned io, puzzle ids" : "pinned io, no puzzle ids");
            pinned_io_case(ctx, m, batches[i], HRMT_SCHEDULE_TIERED, pids,
                           pids ? "pinned io, puzzle ids" : "pinned io, no puzzle ids");
        }
        hrmt_model_destroy(m[0]);
        hrmt_model_destroy(m[1]);
    }
    hrmt_context_destroy(ctx);
}

Test(cuda_model, bad_shape_and_pdl_settings) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    const char *names[4] = {"HRMT_CUDA_WGEMM_SHAPE", "HRMT_CUDA_GLU_SHAPE", "HRMT_CUDA_PDL",
                            "HRMT_CUDA_NORM_PROLOGUE"};
    const char *bad[3] = {"x", "-1", "2x"};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            hrmt_model *m = NULL;
            setenv(names[i], bad[j], 1);
            cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 7, &m), HRMT_ERR_INVALID_ARG, "%s=%s",
                         names[i], bad[j]);
            cr_expect(strstr(hrmt_last_error(ctx), names[i]), "%s", hrmt_last_error(ctx));
            cr_expect_null(m);
            unsetenv(names[i]);
            hrmt_model_destroy(m);
        }
    hrmt_context_destroy(ctx);
}

Test(cuda_model, bad_fused_settings) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    const char *names[] = {
        "HRMT_CUDA_FUSED_GLU",       "HRMT_CUDA_FUSED_NORM",        "HRMT_CUDA_FUSED_INJECT",
        "HRMT_CUDA_CLUSTER_NORM",    "HRMT_CUDA_CLUSTER_NORM_CTAS", "HRMT_CUDA_ATTN_TEAMS",
        "HRMT_CUDA_FUSED_HEADS",     "HRMT_CUDA_QKV_ATTN",          "HRMT_CUDA_GLU_SMEM_TABLE",
        "HRMT_CUDA_GEMM_TUNE_EXACT", "HRMT_CUDA_PINNED_IO",         "HRMT_CUDA_FUSED_RESET",
        "HRMT_CUDA_FOLD_INJECT",     "HRMT_CUDA_PROFILE_STEPS",     "HRMT_CUDA_QKV_ATTN_CTA",
        "HRMT_CUDA_GLU_FAST_SILU",   "HRMT_CUDA_NORM_VEC",          "HRMT_CUDA_ATTN_ROPE_ONCE",
        "HRMT_CUDA_GLU_MUL",         "HRMT_CUDA_GLU_WRES",          "HRMT_CUDA_CLUSTER_NORM_PUSH",
        "HRMT_CUDA_QKV_ATTN_PUSH",   "HRMT_CUDA_ROPE_EARLY",        "HRMT_CUDA_QKV_ATTN_CTA_W1",
        "HRMT_CUDA_GLU_WRES3",       "HRMT_CUDA_GLU_WRES_TSTORE",   "HRMT_CUDA_CLUSTER_NORM_OWNER8",
        "HRMT_CUDA_ATTN_DESCEND",    "HRMT_CUDA_NORM_DESCEND",      "HRMT_CUDA_NORM_STREAM",
        "HRMT_CUDA_ATTN_STREAM"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        hrmt_model *m = NULL;
        setenv(names[i], "on", 1);
        cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 7, &m), HRMT_ERR_INVALID_ARG);
        cr_expect(strstr(hrmt_last_error(ctx), names[i]), "%s", hrmt_last_error(ctx));
        unsetenv(names[i]);
        hrmt_model_destroy(m);
    }
    hrmt_context_destroy(ctx);
}

/* The baseline's levels captured as parallel graph branches over sample
 * ranges (model_branch.cu) against one chain: same bytes, with ranges of
 * unequal sizes (batch 5 in 2 and 3 branches), a batch smaller than the
 * count asked (3 samples, 4 branches), at HRM's width (cuBLASLt's pinned
 * GEMMs, a workspace per branch) and on the small F32 model. */
static void branches_equal_one_chain(hrmt_dtype dt, int hidden, int heads) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(dt);
    cfg.hidden_size = cfg.puzzle_emb_ndim = hidden;
    cfg.num_heads = heads;
    const char *count[4] = {"1", "2", "3", "4"};
    hrmt_model *m[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4; k++) {
        setenv("HRMT_CUDA_BRANCHES", count[k], 1);
        cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 17, &m[k]), HRMT_OK, "%s",
                     hrmt_last_error(ctx));
    }
    unsetenv("HRMT_CUDA_BRANCHES");
    const int batches[] = {5, 3};
    for (int b = 0; b < 2; b++) {
        outs o[4][2];
        for (int k = 0; k < 4; k++) run_steps(m[k], batches[b], HRMT_SCHEDULE_BASELINE, 2, o[k]);
        for (int k = 1; k < 4; k++)
            for (int s = 0; s < 2; s++) {
                for (int f = 0; f < 5; f++)
                    EXPECT_SAME_FIELD(&o[k][s], &o[0][s], f,
                                      "hidden %d batch %d step %d %s: %s branches != one chain",
                                      hidden, batches[b], s, k_fields[f], count[k]);
                cr_expect(!memcmp(o[k][s].halted, o[0][s].halted, (size_t)batches[b] * 4));
            }
        for (int k = 0; k < 4; k++)
            for (int s = 0; s < 2; s++) outs_free(&o[k][s]);
    }
    for (int k = 0; k < 4; k++) hrmt_model_destroy(m[k]);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, branches_equal_one_chain_hrm_width) {
    branches_equal_one_chain(HRMT_BF16, 512, 8);
}
Test(cuda_model, branches_equal_one_chain_f32) {
    hrmt_model_config cfg = small_cfg(HRMT_F32);
    branches_equal_one_chain(HRMT_F32, cfg.hidden_size, cfg.num_heads);
}

Test(cuda_model, bad_branch_setting) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    const char *bad[] = {"0", "5", "two", "", "12", "-1", "auto"};
    expect_bad_values(ctx, &cfg, "HRMT_CUDA_BRANCHES", bad, sizeof bad / sizeof bad[0]);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, bad_grid_setting) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    const char *names[3] = {"HRMT_CUDA_GRID", "HRMT_CUDA_GRID_TILE", "HRMT_CUDA_GRID_TRACE"};
    for (int i = 0; i < 3; i++) {
        hrmt_model *m = NULL;
        setenv(names[i], "yes", 1);
        cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 7, &m), HRMT_ERR_INVALID_ARG);
        cr_expect(strstr(hrmt_last_error(ctx), names[i]), "%s", hrmt_last_error(ctx));
        unsetenv(names[i]);
        hrmt_model_destroy(m);
    }
    hrmt_context_destroy(ctx);
}

Test(cuda_model, bad_l_persist_setting) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *m = NULL;
    setenv("HRMT_CUDA_L_PERSIST", "yes", 1);
    cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 7, &m), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "HRMT_CUDA_L_PERSIST"), "%s", hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_L_PERSIST");
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

/* GPU vs CPU: F32 within 1e-4; BF16 no more than 1.5x as far from the F32
 * run as the CPU's BF16 run is. hidden / heads / seq_len: 0 keeps small_cfg's. */
static void gpu_vs_cpu(int hidden, int heads, int seq_len) {
    hrmt_context *gctx = cuda_ctx(), *cctx = hrmt_test_context();
    /* 32 samples: the q heads give one value per sample, and a distance over
     * five values is too noisy to hold to a 1.5x bound. */
    const int B = 32, steps = 2;
    outs ref[2], cpu16[2], gpu32[2], gpu16[2];
    hrmt_model *m;
    hrmt_model_config cfg = small_cfg(HRMT_F32);
    if (hidden) cfg.hidden_size = cfg.puzzle_emb_ndim = hidden;
    if (heads) cfg.num_heads = heads;
    if (seq_len) cfg.seq_len = seq_len;
    cr_assert_eq(hrmt_model_create_random(cctx, &cfg, 9, &m), HRMT_OK);
    run_steps(m, B, HRMT_SCHEDULE_TIERED, steps, ref);
    hrmt_model_destroy(m);
    cr_assert_eq(hrmt_model_create_random(gctx, &cfg, 9, &m), HRMT_OK);
    run_steps(m, B, HRMT_SCHEDULE_TIERED, steps, gpu32);
    hrmt_model_destroy(m);
    cfg.forward_dtype = HRMT_BF16;
    cr_assert_eq(hrmt_model_create_random(cctx, &cfg, 9, &m), HRMT_OK);
    run_steps(m, B, HRMT_SCHEDULE_TIERED, steps, cpu16);
    hrmt_model_destroy(m);
    cr_assert_eq(hrmt_model_create_random(gctx, &cfg, 9, &m), HRMT_OK);
    run_steps(m, B, HRMT_SCHEDULE_BASELINE, steps, gpu16);
    hrmt_model_destroy(m);
    for (int s = 0; s < steps; s++) {
        for (int f = 0; f < 5; f++) {
            size_t n = ref[s].n[f];
            double e32 = rel_l2(gpu32[s].f[f], ref[s].f[f], n);
            cr_expect_leq(e32, 1e-4, "step %d %s: GPU f32 %.3g from CPU f32", s, k_fields[f], e32);
            double gap = rel_l2(cpu16[s].f[f], ref[s].f[f], n);
            double e16 = rel_l2(gpu16[s].f[f], ref[s].f[f], n);
            cr_expect_leq(e16, BF16_FACTOR * gap + 1e-6,
                          "step %d %s: GPU bf16 %.3g from f32 > %.1f x CPU bf16's %.3g", s,
                          k_fields[f], e16, BF16_FACTOR, gap);
        }
        outs_free(&ref[s]);
        outs_free(&cpu16[s]);
        outs_free(&gpu32[s]);
        outs_free(&gpu16[s]);
    }
    hrmt_context_destroy(cctx);
    hrmt_context_destroy(gctx);
}

Test(cuda_model, gpu_matches_cpu) { gpu_vs_cpu(0, 0, 0); }

/* The register attention's other instantiations (the default model, T = 82,
 * runs the 6-tile plan with all tiles in use): head_dim 32 at T = 101 (8-tile
 * plan, tiles unused), T = 61 (6-tile plan, tiles unused) and head_dim 32 at
 * T = 121 (8-tile plan, all in use). */
Test(cuda_model, gpu_matches_cpu_head_dim_32_long_seq) { gpu_vs_cpu(64, 2, 100); }
Test(cuda_model, gpu_matches_cpu_short_seq) { gpu_vs_cpu(0, 0, 60); }
Test(cuda_model, gpu_matches_cpu_head_dim_32_seq_121) { gpu_vs_cpu(64, 2, 120); }
/* hidden % 8 != 0 (head_dim 18): the one-element embedding and reset kernels
 * and the scalar attention. */
Test(cuda_model, gpu_matches_cpu_hidden_36) { gpu_vs_cpu(36, 2, 0); }

/* Graph replays against kernel-by-kernel launches, one carry each, through
 * every change a replay must honour: samples halting and restarting with new
 * inputs, the schedule and early_halt switching (new graphs), and the same
 * options again (replays). Same bytes, same call counts, and
 * device timings that add up. */
Test(cuda_model, graph_replay_equals_launches) {
    hrmt_context *ctx[2] = {cuda_ctx_graphs(1), cuda_ctx_graphs(-1)};
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    const int B = 5, steps = 7;
    const struct {
        hrmt_schedule sched;
        int early_halt;
    } plan[7] = {{HRMT_SCHEDULE_TIERED, 0},   {HRMT_SCHEDULE_TIERED, 0},
                 {HRMT_SCHEDULE_BASELINE, 1}, {HRMT_SCHEDULE_BASELINE, 0},
                 {HRMT_SCHEDULE_TIERED, 1},   {HRMT_SCHEDULE_TIERED, 0},
                 {HRMT_SCHEDULE_TIERED, 0}};
    outs x[2][7];
    hrmt_step_timing tm[2][7];
    int32_t *in = malloc((size_t)B * (size_t)cfg.seq_len * 4), pid[5];
    cr_assert(in);
    setenv("HRMT_CUDA_TILE_SAMPLES", "2", 1); /* ragged tiles: 2 + 2 + 1 */
    for (int k = 0; k < 2; k++) {
        hrmt_model *m = NULL;
        cr_assert_eq(hrmt_model_create_random(ctx[k], &cfg, 11, &m), HRMT_OK, "%s",
                     hrmt_last_error(ctx[k]));
        hrmt_carry *c = NULL;
        cr_assert_eq(hrmt_carry_create(m, B, &c), HRMT_OK, "%s", hrmt_last_error(ctx[k]));
        for (int s = 0; s < steps; s++) {
            make_inputs(&cfg, B, s, in, pid);
            outs_init(&x[k][s], &cfg, hrmt_model_puzzle_len(m), B);
            hrmt_step_options opt = {plan[s].sched, plan[s].early_halt};
            cr_assert_eq(hrmt_act_step(m, c, in, pid, &opt, &x[k][s].o, &tm[k][s]), HRMT_OK,
                         "graphs %d step %d: %s", k == 0, s, hrmt_last_error(ctx[k]));
        }
        hrmt_carry_destroy(c);
        hrmt_model_destroy(m);
    }
    unsetenv("HRMT_CUDA_TILE_SAMPLES");
    /* halt_max_steps 2: every sample halts at step 1 and restarts with step
     * 2's inputs (then early halting mixes them), so replays must follow
     * device-side state. */
    for (int i = 0; i < B; i++) {
        cr_expect_eq(x[0][0].halted[i], 0, "sample %d", i);
        cr_expect_eq(x[0][1].halted[i], 1, "sample %d", i);
    }
    for (int s = 0; s < steps; s++) {
        for (int f = 0; f < 5; f++)
            EXPECT_SAME_FIELD(&x[0][s], &x[1][s], f, "step %d %s: graph replay != launches", s,
                              k_fields[f]);
        cr_expect(!memcmp(x[0][s].halted, x[1][s].halted, (size_t)B * 4), "step %d halted", s);
        cr_expect_eq(tm[0][s].l_level_calls, tm[1][s].l_level_calls, "step %d", s);
        cr_expect_eq(tm[0][s].h_level_calls, tm[1][s].h_level_calls, "step %d", s);
        cr_expect_eq(tm[0][s].transfers, tm[1][s].transfers, "step %d", s);
        for (int k = 0; k < 2; k++) {
            const hrmt_step_timing *t = &tm[k][s];
            cr_expect_gt(t->l_level_us_total, 0.0, "graphs %d step %d", k == 0, s);
            cr_expect_gt(t->h_level_us_total, 0.0, "graphs %d step %d", k == 0, s);
            cr_expect_leq(t->l_level_us_total + t->h_level_us_total, t->step_us * 1.001 + 1.0,
                          "graphs %d step %d: levels %.1f + %.1f us > step %.1f us", k == 0, s,
                          t->l_level_us_total, t->h_level_us_total, t->step_us);
        }
        outs_free(&x[0][s]);
        outs_free(&x[1][s]);
    }
    free(in);
    hrmt_context_destroy(ctx[0]);
    hrmt_context_destroy(ctx[1]);
}

/* ---- errors -------------------------------------------------------------------- */

Test(cuda_model, carry_of_another_model) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *a = NULL, *b = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 1, &a), HRMT_OK);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 2, &b), HRMT_OK);
    hrmt_carry *c = NULL;
    cr_assert_eq(hrmt_carry_create(a, 2, &c), HRMT_OK);
    int32_t in[2 * 81] = {0}, pid[2] = {0};
    cr_expect_eq(hrmt_act_step(b, c, in, pid, NULL, NULL, NULL), HRMT_ERR_INVALID_ARG);
    cr_expect(strstr(hrmt_last_error(ctx), "another model"), "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_act_step(a, c, in, pid, NULL, NULL, NULL), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    hrmt_carry_destroy(c);
    hrmt_model_destroy(a);
    hrmt_model_destroy(b);
    hrmt_context_destroy(ctx);
}

Test(cuda_model, bad_cuda_graphs_setting) {
    hrmt_context_destroy(cuda_ctx()); /* skips without a device */
    hrmt_context_options o = hrmt_context_default_options();
    o.backend = HRMT_BACKEND_CUDA;
    hrmt_context *ctx = NULL;
    char err[256] = "";
    setenv("HRMT_CUDA_GRAPHS", "yes", 1);
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_ERR_INVALID_ARG);
    cr_expect_null(ctx);
    cr_expect_not_null(strstr(err, "HRMT_CUDA_GRAPHS"), "%s", err);
    o.cuda_graphs = -1; /* the option wins over the environment */
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_eq(hrmt_context_cuda_graphs(ctx), 0);
    hrmt_context_destroy(ctx);
    setenv("HRMT_CUDA_GRAPHS", "0", 1);
    o.cuda_graphs = 0;
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_eq(hrmt_context_cuda_graphs(ctx), 0, "HRMT_CUDA_GRAPHS=0");
    hrmt_context_destroy(ctx);
    unsetenv("HRMT_CUDA_GRAPHS");
    cr_expect_eq(hrmt_context_create(&o, &ctx, err, sizeof err), HRMT_OK, "%s", err);
    cr_expect_eq(hrmt_context_cuda_graphs(ctx), 1, "graphs are the default");
    hrmt_context_destroy(ctx);
}

/* HRMT_CUDA_TILE_SAMPLES (samples per tile of the tiered schedule, read
 * when a carry is created) must be a positive whole number: anything else
 * fails the carry with INVALID_ARG naming it (it used to be ignored); a
 * good value, larger than the batch too, is taken. */
Test(cuda_model, bad_tile_samples_setting) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 7, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    const char *bad[] = {"0", "-2", "x", "3x", " ", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hrmt_carry *c = NULL;
        setenv("HRMT_CUDA_TILE_SAMPLES", bad[i], 1);
        cr_expect_eq(hrmt_carry_create(m, 4, &c), HRMT_ERR_INVALID_ARG, "'%s'", bad[i]);
        cr_expect_null(c);
        cr_expect_not_null(strstr(hrmt_last_error(ctx), "HRMT_CUDA_TILE_SAMPLES"), "%s",
                           hrmt_last_error(ctx));
        hrmt_carry_destroy(c);
    }
    const char *good[] = {"1", "3", "1000"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        hrmt_carry *c = NULL;
        setenv("HRMT_CUDA_TILE_SAMPLES", good[i], 1);
        cr_expect_eq(hrmt_carry_create(m, 4, &c), HRMT_OK, "'%s': %s", good[i],
                     hrmt_last_error(ctx));
        hrmt_carry_destroy(c);
    }
    unsetenv("HRMT_CUDA_TILE_SAMPLES");
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

/* The small-M GEMM algorithms chosen at load (model_gemm_tune.cu) against
 * the pinned algorithm alone (HRMT_CUDA_GEMM_TUNE=0): the same bytes at
 * batches whose rows fall in different buckets. */
Test(cuda_model, gemm_tuning_keeps_bits) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *tuned = NULL, *pinned = NULL;
    setenv("HRMT_CUDA_GEMM_TUNE", "1", 1);    /* whatever the caller's environment says */
    setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1); /* every projection through the tuned GEMMs */
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 11, &tuned), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    setenv("HRMT_CUDA_GEMM_TUNE", "0", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 11, &pinned), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_GEMM_TUNE");
    unsetenv("HRMT_CUDA_CLUSTER_NORM");
    const int batches[] = {1, 2, 13, 50};
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        outs x[2], y[2];
        /* A first step at more than 128 rows also tunes at its exact rows. */
        run_steps(tuned, batches[b], HRMT_SCHEDULE_BASELINE, 2, x);
        run_steps(pinned, batches[b], HRMT_SCHEDULE_BASELINE, 2, y);
        for (int s = 0; s < 2; s++) {
            for (int f = 0; f < 5; f++)
                EXPECT_SAME_FIELD(&x[s], &y[s], f, "batch %d step %d %s: tuned != pinned",
                                  batches[b], s, k_fields[f]);
            outs_free(&x[s]);
            outs_free(&y[s]);
        }
    }
    hrmt_model_destroy(tuned);
    hrmt_model_destroy(pinned);
    hrmt_context_destroy(ctx);
}

/* ---- HRMT_CUDA_GEMM_TUNE_CACHE: the tuner's picks kept in a file ---------- */

/* The environment of the cache tests: the tuner on, every projection
 * through the tuned GEMMs (as expect_tuned_equals_pinned), its log on (what
 * the tests read) and the cache at `path` (NULL: unset). */
static void cache_env(const char *path) {
    setenv("HRMT_CUDA_GEMM_TUNE", "1", 1);
    setenv("HRMT_CUDA_CLUSTER_NORM", "0", 1);
    setenv("HRMT_CUDA_GEMM_TUNE_LOG", "1", 1);
    if (path)
        setenv("HRMT_CUDA_GEMM_TUNE_CACHE", path, 1);
    else
        unsetenv("HRMT_CUDA_GEMM_TUNE_CACHE");
}

/* The end of a cache test: its environment unset, its directory removed,
 * its context destroyed. */
static void cache_done(hrmt_context *ctx, const char *dir) {
    const char *v[] = {"HRMT_CUDA_GEMM_TUNE", "HRMT_CUDA_CLUSTER_NORM", "HRMT_CUDA_GEMM_TUNE_LOG",
                       "HRMT_CUDA_GEMM_TUNE_CACHE"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) unsetenv(v[i]);
    hrmt_test_rmtree(dir);
    hrmt_context_destroy(ctx);
}

/* The start of a cache test: a CUDA context (skips without a device), a
 * fresh directory for its files and the pick file's path in it. */
static hrmt_context *cache_start(char *dir, size_t dl, char *path, size_t pl) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_test_mkdtemp(dir, dl, "tune_cache");
    snprintf(path, pl, "%s/picks", dir);
    return ctx;
}

/* stderr into `path` until capture_end (the tuner's log is what shows
 * whether it timed candidates or took the file's picks). */
static int capture_begin(const char *path) {
    fflush(stderr);
    const int saved = dup(2);
    FILE *f = fopen(path, "wb");
    cr_assert(saved >= 0 && f, "capturing stderr into %s", path);
    cr_assert(dup2(fileno(f), 2) >= 0);
    fclose(f);
    return saved;
}

static char *capture_end(int saved, const char *path) {
    fflush(stderr);
    cr_assert(dup2(saved, 2) >= 0);
    close(saved);
    char *log = hrmt_test_slurp(path);
    cr_assert_not_null(log, "%s", path);
    return log;
}

/* Loads small_cfg's model (seed 11) with the cache at `path` and runs two
 * steps at batch B (B T past 128 rows: also tuned at its exact rows), stderr
 * captured: the log (malloc'd) and the steps' outputs into xs. */
static char *cached_run(hrmt_context *ctx, const char *dir, const char *path, int B, outs *xs) {
    char logp[512];
    snprintf(logp, sizeof logp, "%s/log", dir);
    cache_env(path);
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *m = NULL;
    const int saved = capture_begin(logp);
    const hrmt_status s = hrmt_model_create_random(ctx, &cfg, 11, &m);
    if (s == HRMT_OK) run_steps(m, B, HRMT_SCHEDULE_BASELINE, 2, xs);
    char *log = capture_end(saved, logp);
    cr_assert_eq(s, HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_model_destroy(m);
    return log;
}

/* The pinned algorithm's outputs of the same model (the bits every pick
 * must give) against xs. */
static void expect_pinned_bits(hrmt_context *ctx, int B, const outs *xs, const char *what) {
    cache_env(NULL);
    setenv("HRMT_CUDA_GEMM_TUNE", "0", 1);
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 11, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    outs y[2];
    run_steps(m, B, HRMT_SCHEDULE_BASELINE, 2, y);
    for (int s = 0; s < 2; s++) {
        expect_same_outs(&xs[s], &y[s], B, what);
        outs_free(&y[s]);
    }
    hrmt_model_destroy(m);
}

static void outs_free2(outs *x) {
    outs_free(&x[0]);
    outs_free(&x[1]);
}

/* A fresh pick file from one tuned load and a batch-2 step; its text
 * (caller frees). */
static char *first_picks(hrmt_context *ctx, const char *dir, const char *path) {
    outs x[2];
    free(cached_run(ctx, dir, path, 2, x));
    outs_free2(x);
    char *file = hrmt_test_slurp(path);
    cr_assert_not_null(file, "no file at %s", path);
    return file;
}

/* A load and a batch-B step (outputs in x) that timed candidates and
 * wrote the file; `what` names the case in the messages. */
static void expect_tuned(hrmt_context *ctx, const char *dir, const char *path, int B, outs *x,
                         const char *what) {
    char *log = cached_run(ctx, dir, path, B, x);
    cr_expect_not_null(strstr(log, " pinned, rows"), "%s: nothing timed:\n%s", what, log);
    cr_expect_not_null(strstr(log, "': written"), "%s: the file was not written:\n%s", what, log);
    free(log);
}

/* A second load with the file takes every pick from it (no candidate timed,
 * at load or at the step's exact rows), checked, and gives the pinned bits. */
Test(cuda_model, gemm_tune_cache_reuses_picks) {
    char dir[256], path[300], want[64];
    hrmt_context *ctx = cache_start(dir, sizeof dir, path, sizeof path);
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *probe = NULL;
    setenv("HRMT_CUDA_GEMM_TUNE", "0", 1);
    cr_assert_eq(hrmt_model_create_random(ctx, &cfg, 11, &probe), HRMT_OK);
    const size_t rows = 2 * probe->T;
    hrmt_model_destroy(probe);
    outs x[2];
    expect_tuned(ctx, dir, path, 2, x, "the first load");
    outs_free2(x);
    char *file = hrmt_test_slurp(path);
    cr_assert_not_null(file, "no file at %s", path);
    cr_expect_eq(strncmp(file, "hrmt-gemm-tune 1\nkey ", 21), 0, "%.200s", file);
    cr_expect_not_null(strstr(file, "\nbucket 0 0 "), "%.400s", file);
    snprintf(want, sizeof want, "\nexact %zu 0 ", rows);
    cr_expect_not_null(strstr(file, want), "no '%s' in the file", want + 1);
    free(file);
    char *log = cached_run(ctx, dir, path, 2, x);
    cr_expect_not_null(strstr(log, "buckets read and checked"), "%s", log);
    snprintf(want, sizeof want, "rows = %zu read and checked", rows);
    cr_expect_not_null(strstr(log, want), "no '%s' in the log:\n%s", want, log);
    cr_expect_null(strstr(log, " candidate "), "the second load timed candidates:\n%s", log);
    cr_expect_null(strstr(log, " pinned, rows"), "the second load timed:\n%s", log);
    cr_expect_null(strstr(log, "': written"), "the second load rewrote the file:\n%s", log);
    free(log);
    expect_pinned_bits(ctx, 2, x, "picks from the file");
    outs_free2(x);
    cache_done(ctx, dir);
}

/* Picks the file names that cuBLASLt refuses, or own shapes out of range,
 * are tuned again: the load works, the bits are the pinned ones and the
 * file is rewritten; so are files with malformed records. */
Test(cuda_model, gemm_tune_cache_bad_picks_tuned_again) {
    char dir[256], path[300];
    hrmt_context *ctx = cache_start(dir, sizeof dir, path, sizeof path);
    outs x[2];
    char *good = first_picks(ctx, dir, path);
    /* Every algorithm's first 16 hex digits to f (an id cuBLASLt has not)
     * and every own shape to 99. */
    char *bad = strdup(good);
    cr_assert_not_null(bad);
    int edited = 0;
    for (char *l = strstr(bad, "\nbucket "); l; l = strstr(l + 1, "\nbucket ")) {
        char *sp = l + 1; /* "bucket S B O ALGO": the fourth space precedes ALGO */
        for (int k = 0; k < 4 && sp; k++) sp = strchr(sp + 1, ' ');
        cr_assert_not_null(sp);
        memset(sp + 1, 'f', 16);
        edited++;
    }
    cr_assert_gt(edited, 0);
    hrmt_test_spit(path, bad);
    char *log = cached_run(ctx, dir, path, 2, x);
    cr_expect_not_null(strstr(log, "buckets fail their check: tuned again"), "%s", log);
    cr_expect_not_null(strstr(log, "': written"), "%s", log);
    free(log);
    expect_pinned_bits(ctx, 2, x, "refused algorithms, tuned again");
    outs_free2(x);
    char *now = hrmt_test_slurp(path);
    cr_expect_neq(strcmp(now, bad), 0, "the bad picks stayed in the file");
    free(now);
    /* An own shape out of range (98: no device has that many). */
    free(bad);
    const char *b00 = strstr(good, "\nbucket 0 0 ");
    cr_assert_not_null(b00);
    const char *algo = strchr(b00 + strlen("\nbucket 0 0 "), ' ');
    cr_assert_not_null(algo);
    bad = malloc(strlen(good) + 8);
    cr_assert_not_null(bad);
    sprintf(bad, "%.*s\nbucket 0 0 99%s", (int)(b00 - good), good, algo);
    hrmt_test_spit(path, bad);
    log = cached_run(ctx, dir, path, 2, x);
    cr_expect_not_null(strstr(log, "buckets fail their check: tuned again"), "%s", log);
    free(log);
    expect_pinned_bits(ctx, 2, x, "own shape 98, tuned again");
    outs_free2(x);
    /* Malformed records: a line over the reader's length, a bad token. */
    const char *texts[] = {"hrmt-gemm-tune 1\nkey x\n", "hrmt-gemm-tune 1\n", "hrmt-gemm-tune 2\n",
                           ""};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        hrmt_test_spit(path, texts[i]);
        char what[32];
        snprintf(what, sizeof what, "file %zu", i);
        expect_tuned(ctx, dir, path, 1, x, what);
        outs_free2(x);
    }
    char *longl = malloc(4096);
    cr_assert_not_null(longl);
    const char *hdr = strchr(strchr(good, '\n') + 1, '\n') + 1; /* magic and key lines */
    memcpy(longl, good, (size_t)(hdr - good));
    memset(longl + (hdr - good), 'b', 3000);
    strcpy(longl + (hdr - good) + 3000, "\n");
    hrmt_test_spit(path, longl);
    log = cached_run(ctx, dir, path, 1, x);
    cr_expect_not_null(strstr(log, " pinned, rows"), "a long line: nothing timed:\n%s", log);
    free(log);
    expect_pinned_bits(ctx, 1, x, "after a long line");
    outs_free2(x);
    free(longl);
    free(bad);
    free(good);
    cache_done(ctx, dir);
}

/* A file made for another model (another key) is tuned again and rewritten
 * for this one. */
Test(cuda_model, gemm_tune_cache_other_model_tuned_again) {
    char dir[256], path[300];
    hrmt_context *ctx = cache_start(dir, sizeof dir, path, sizeof path);
    cache_env(path);
    hrmt_model_config wide = sized_cfg(256, 4, 81);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, &wide, 5, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_model_destroy(m);
    char *first = hrmt_test_slurp(path);
    cr_assert_not_null(first);
    outs x[2];
    char *log = cached_run(ctx, dir, path, 2, x);
    cr_expect_not_null(strstr(log, " pinned, rows"), "the other model's picks served:\n%s", log);
    free(log);
    expect_pinned_bits(ctx, 2, x, "after another model's file");
    outs_free2(x);
    char *now = hrmt_test_slurp(path);
    cr_expect_neq(strcmp(first, now), 0, "the file was not rewritten");
    free(now);
    free(first);
    cache_done(ctx, dir);
}

/* The key names the build's CUDA sources (cmake/HrmtSourceId.cmake: 16 hex
 * digits): a file whose picks were timed by a build of other sources (the
 * same key but that id) is tuned again and rewritten with this build's. */
Test(cuda_model, gemm_tune_cache_other_build_tuned_again) {
    char dir[256], path[300];
    hrmt_context *ctx = cache_start(dir, sizeof dir, path, sizeof path);
    char *file = first_picks(ctx, dir, path);
    char *id = strstr(file, "|src_");
    cr_assert_not_null(id, "no source id in the key: %.300s", file);
    id += 5;
    char mine[17];
    for (int i = 0; i < 16; i++) {
        cr_assert(isxdigit((unsigned char)id[i]) && !isupper((unsigned char)id[i]),
                  "the source id is not 16 hex digits: %.40s", id - 5);
        mine[i] = id[i];
    }
    mine[16] = '\0';
    cr_assert_eq(id[16], '|', "the source id is not 16 hex digits: %.40s", id - 5);
    id[0] = id[0] == '0' ? '1' : '0'; /* another build's sources */
    hrmt_test_spit(path, file);
    free(file);
    outs x[2];
    expect_tuned(ctx, dir, path, 2, x, "another build's file");
    expect_pinned_bits(ctx, 2, x, "after another build's file");
    outs_free2(x);
    file = hrmt_test_slurp(path);
    char want[32];
    snprintf(want, sizeof want, "|src_%s|", mine);
    cr_expect_not_null(strstr(file, want), "not rewritten with this build's id %s: %.300s", mine,
                       file);
    free(file);
    cache_done(ctx, dir);
}

/* A path that is another kind of file is refused, and left as it was; a
 * directory, or a file in a missing directory, is an IO error naming it. */
Test(cuda_model, gemm_tune_cache_bad_paths) {
    hrmt_context *ctx = cuda_ctx();
    char dir[256], path[300];
    hrmt_test_mkdtemp(dir, sizeof dir, "tune_cache");
    snprintf(path, sizeof path, "%s/weights.safetensors", dir);
    hrmt_test_spit(path, "not a tuning cache\n");
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    const char *paths[3] = {path, dir, NULL};
    char missing[320];
    snprintf(missing, sizeof missing, "%s/no/such/dir/picks", dir);
    paths[2] = missing;
    for (int i = 0; i < 3; i++) {
        cache_env(paths[i]);
        unsetenv("HRMT_CUDA_GEMM_TUNE_LOG");
        hrmt_model *m = NULL;
        cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 11, &m), HRMT_ERR_IO, "%s: %s", paths[i],
                     hrmt_last_error(ctx));
        cr_expect_null(m);
        hrmt_model_destroy(m);
        cr_expect_not_null(strstr(hrmt_last_error(ctx), "HRMT_CUDA_GEMM_TUNE_CACHE"), "%s",
                           hrmt_last_error(ctx));
        cr_expect_not_null(strstr(hrmt_last_error(ctx), paths[i]), "%s", hrmt_last_error(ctx));
    }
    char *text = hrmt_test_slurp(path);
    cr_expect_str_eq(text, "not a tuning cache\n");
    free(text);
    /* The context still loads a model after the refusals. */
    cache_env(NULL);
    hrmt_model *m = NULL;
    cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 11, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_model_destroy(m);
    cache_done(ctx, dir);
}

Test(cuda_model, bad_gemm_tune_setting) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model_config cfg = small_cfg(HRMT_BF16);
    hrmt_model *m = NULL;
    setenv("HRMT_CUDA_GEMM_TUNE", "fast", 1);
    cr_expect_eq(hrmt_model_create_random(ctx, &cfg, 3, &m), HRMT_ERR_INVALID_ARG);
    cr_expect_null(m);
    cr_expect_not_null(strstr(hrmt_last_error(ctx), "HRMT_CUDA_GEMM_TUNE"), "%s",
                       hrmt_last_error(ctx));
    unsetenv("HRMT_CUDA_GEMM_TUNE");
    hrmt_context_destroy(ctx);
}

Test(cuda_model, huge_batch_is_out_of_memory) {
    hrmt_context *ctx = cuda_ctx();
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_create_random(ctx, NULL, 3, &m), HRMT_OK, "%s", hrmt_last_error(ctx));
    hrmt_carry *c = NULL;
    /* 2^24 Sudoku samples: ~1.7 TB of z_H alone. The default batch limit
     * refuses it first; raised, the device allocation must fail cleanly. */
    cr_expect_eq(hrmt_carry_create(m, 1 << 24, &c), HRMT_ERR_LIMIT, "%s", hrmt_last_error(ctx));
    hrmt_limits lim = *hrmt_context_limits(ctx);
    lim.batch_tokens = (int64_t)1 << 40;
    cr_assert_eq(hrmt_context_set_limits(ctx, &lim), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_expect_eq(hrmt_carry_create(m, 1 << 24, &c), HRMT_ERR_OUT_OF_MEMORY, "%s",
                 hrmt_last_error(ctx));
    cr_expect_null(c);
    cr_expect_neq(hrmt_last_error(ctx)[0], '\0');
    /* The context still works after the failure. */
    cr_assert_eq(hrmt_carry_create(m, 2, &c), HRMT_OK, "%s", hrmt_last_error(ctx));
    int32_t in[2 * 81] = {0}, pid[2] = {0};
    cr_expect_eq(hrmt_act_step(m, c, in, pid, NULL, NULL, NULL), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    hrmt_carry_destroy(c);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}
