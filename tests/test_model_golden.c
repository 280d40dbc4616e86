/* Golden parity with the official PyTorch HRM (tests/data/golden/hrm/):
 *  - float32: every recorded tensor of every ACT step within 1e-4 relative
 *    L2 of expected-f32;
 *  - bfloat16: per step, the relative L2 distance of logits, z_H, z_L and the
 *    q logits to expected-bf16 is at most half the distance between the
 *    reference's own expected-bf16 and expected-f32;
 *  - halted: exact.
 * Runs under each ISA (ctest sets HRMT_ISA) and with both schedules. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "support/test_common.h"

typedef struct golden {
    hrmt_st_file *f32, *bf16;
    int batch, steps;
} golden;

static double rel_l2(const float *x, const float *ref, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static float *read_f32(const hrmt_st_file *f, const char *name, size_t *n) {
    const hrmt_st_tensor *t = hrmt_st_find(f, name);
    cr_assert_not_null(t, "missing %s", name);
    float *v = malloc(t->numel * sizeof(float) + 4);
    cr_assert_not_null(v);
    hrmt_st_read_f32(t, v);
    if (n) *n = t->numel;
    return v;
}

static int32_t *read_i32(const hrmt_st_file *f, const char *name, size_t *n) {
    const hrmt_st_tensor *t = hrmt_st_find(f, name);
    cr_assert_not_null(t, "missing %s", name);
    cr_assert_eq(t->dtype, HRMT_I32);
    int32_t *v = malloc(t->nbytes + 4);
    cr_assert_not_null(v);
    memcpy(v, t->data, t->nbytes);
    if (n) *n = t->numel;
    return v;
}

static const char *const k_fields[] = {"logits", "q_halt_logits", "q_continue_logits", "z_H", "z_L"};

static void run_case(const char *name, hrmt_dtype dt, hrmt_schedule sched) {
    hrmt_context *ctx = hrmt_test_context();
    char path[512];
    snprintf(path, sizeof path, "golden/hrm/%s/case.json", name);
    hrmt_model_config cfg;
    cr_assert_eq(hrmt_model_config_load_json(ctx, hrmt_test_data(path), &cfg), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    cfg.forward_dtype = dt;
    snprintf(path, sizeof path, "golden/hrm/%s/model.safetensors", name);
    hrmt_model *m = NULL;
    cr_assert_eq(hrmt_model_load(ctx, hrmt_test_data(path), &cfg, &m), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    golden g;
    snprintf(path, sizeof path, "golden/hrm/%s/expected-f32.safetensors", name);
    cr_assert_eq(hrmt_st_open(ctx, hrmt_test_data(path), &g.f32), HRMT_OK);
    snprintf(path, sizeof path, "golden/hrm/%s/expected-bf16.safetensors", name);
    cr_assert_eq(hrmt_st_open(ctx, hrmt_test_data(path), &g.bf16), HRMT_OK);
    size_t n_in, n_b;
    int32_t *inputs = read_i32(g.f32, "inputs", &n_in);
    int32_t *pids = read_i32(g.f32, "puzzle_identifiers", &n_b);
    int B = (int)n_b;
    cr_assert_eq(n_in, n_b * (size_t)cfg.seq_len);
    int P = hrmt_model_puzzle_len(m);
    size_t zn = (size_t)B * (size_t)(cfg.seq_len + P) * (size_t)cfg.hidden_size;
    size_t ln = (size_t)B * (size_t)cfg.seq_len * (size_t)cfg.vocab_size;
    float *out[5] = {malloc(ln * 4), malloc((size_t)B * 4), malloc((size_t)B * 4), malloc(zn * 4),
                     malloc(zn * 4)};
    size_t out_n[5] = {ln, (size_t)B, (size_t)B, zn, zn};
    int32_t *halted = malloc((size_t)B * 4);
    hrmt_step_outputs o = {out[0], out[1], out[2], out[3], out[4], halted};
    hrmt_carry *c = NULL;
    cr_assert_eq(hrmt_carry_create(m, B, &c), HRMT_OK);
    hrmt_step_options opt = {sched, 0};
    int steps = 0;
    for (;; steps++) {
        char key[64];
        snprintf(key, sizeof key, "step%d.logits", steps);
        if (!hrmt_st_find(g.f32, key)) break;
        cr_assert_eq(hrmt_act_step(m, c, inputs, pids, &opt, &o, NULL), HRMT_OK, "%s",
                     hrmt_last_error(ctx));
        for (int f = 0; f < 5; f++) {
            snprintf(key, sizeof key, "step%d.%s", steps, k_fields[f]);
            size_t n;
            float *ref32 = read_f32(g.f32, key, &n);
            cr_assert_eq(n, out_n[f], "%s size", key);
            if (dt == HRMT_F32) {
                double e = rel_l2(out[f], ref32, n);
                cr_expect_leq(e, 1e-4, "%s %s f32: rel L2 %.3g > 1e-4", name, key, e);
            } else {
                float *ref16 = read_f32(g.bf16, key, NULL);
                double e = rel_l2(out[f], ref16, n), ref_gap = rel_l2(ref16, ref32, n);
                cr_log_info("%s %s bf16: ours-vs-ref %.3g, ref bf16-vs-f32 %.3g", name, key, e,
                            ref_gap);
                cr_expect_leq(e, 0.5 * ref_gap, "%s %s bf16: rel L2 %.3g > half of %.3g", name,
                              key, e, ref_gap);
                free(ref16);
            }
            free(ref32);
        }
        snprintf(key, sizeof key, "step%d.halted", steps);
        int32_t *ref_h = read_i32(dt == HRMT_F32 ? g.f32 : g.bf16, key, NULL);
        for (int i = 0; i < B; i++)
            cr_expect_eq(halted[i], ref_h[i], "%s %s[%d]: %d vs %d", name, key, i, halted[i], ref_h[i]);
        free(ref_h);
    }
    cr_expect_gt(steps, 0, "no steps recorded");
    hrmt_carry_destroy(c);
    for (int f = 0; f < 5; f++) free(out[f]);
    free(halted);
    free(inputs);
    free(pids);
    hrmt_st_close(g.f32);
    hrmt_st_close(g.bf16);
    hrmt_model_destroy(m);
    hrmt_context_destroy(ctx);
}

Test(golden, tiny_rope_f32) { run_case("tiny-rope", HRMT_F32, HRMT_SCHEDULE_TIERED); }
Test(golden, tiny_rope_bf16) { run_case("tiny-rope", HRMT_BF16, HRMT_SCHEDULE_TIERED); }
Test(golden, small_learned_f32) { run_case("small-learned", HRMT_F32, HRMT_SCHEDULE_TIERED); }
Test(golden, small_learned_bf16) { run_case("small-learned", HRMT_BF16, HRMT_SCHEDULE_TIERED); }
Test(golden, tiny_rope_bf16_baseline) { run_case("tiny-rope", HRMT_BF16, HRMT_SCHEDULE_BASELINE); }
Test(golden, small_learned_f32_baseline) {
    run_case("small-learned", HRMT_F32, HRMT_SCHEDULE_BASELINE);
}
