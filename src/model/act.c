/* The ACT wrapper (HierarchicalReasoningModel_ACTV1.forward, eval mode):
 * reset halted samples, run the inner model once, count steps, halt. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (model/part_clock.h) */
#include <string.h>

#include "core/bf16.h"
#include "model/model.h"
#include "model/part_clock.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/model_cuda.h"
#endif

static hrmt_status check_data(hrmt_model *m, const hrmt_carry *c, const int32_t *inputs,
                              const int32_t *puzzle_ids) {
    size_t B = (size_t)c->batch;
    for (size_t s = 0; s < B; s++) {
        if (!c->halted[s]) continue; /* only halted samples take the new data */
        for (size_t i = 0; i < m->seq; i++) {
            int32_t v = inputs[s * m->seq + i];
            if (v < 0 || v >= m->cfg.vocab_size)
                return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                                 "act step: inputs[%zu][%zu] = %d is outside the vocabulary 0..%d",
                                 s, i, (int)v, m->cfg.vocab_size - 1);
        }
        if (m->P && (puzzle_ids[s] < 0 || puzzle_ids[s] >= m->cfg.num_puzzle_identifiers))
            return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                             "act step: puzzle_identifiers[%zu] = %d is outside 0..%d", s,
                             (int)puzzle_ids[s], m->cfg.num_puzzle_identifiers - 1);
    }
    return HRMT_OK;
}

/* reset_carry + where(halted, batch, current_data) + steps = where(halted, 0, steps). */
static void reset_halted(hrmt_model *m, hrmt_carry *c, const int32_t *inputs,
                         const int32_t *puzzle_ids) {
    size_t T = m->T, hb = m->hidden * m->esz;
    for (size_t s = 0; s < (size_t)c->batch; s++) {
        if (!c->halted[s]) continue;
        char *zh = (char *)c->zH + s * T * hb, *zl = (char *)c->zL + s * T * hb;
        for (size_t t = 0; t < T; t++) {
            memcpy(zh + t * hb, m->H_init, hb);
            memcpy(zl + t * hb, m->L_init, hb);
        }
        c->steps[s] = 0;
        memcpy(c->inputs + s * m->seq, inputs + s * m->seq, m->seq * sizeof(int32_t));
        c->puzzle_ids[s] = puzzle_ids ? puzzle_ids[s] : 0;
    }
}

static void to_f32(const hrmt_model *m, const void *src, float *dst, size_t n) {
    if (m->dt == HRMT_F32) {
        memcpy(dst, src, n * sizeof(float));
    } else {
        const uint16_t *h = src;
        for (size_t i = 0; i < n; i++) dst[i] = hrmt_bf16_to_f32(h[i]);
    }
}

/* logits = lm_head(zH) (all T rows; the prefix is dropped on output),
 * q = q_head(zH[:, 0]): F32 sums + bias, rounded once to the forward dtype. */
static hrmt_status heads(hrmt_model *m, hrmt_carry *c) {
    size_t B = (size_t)c->batch, T = m->T, H = m->hidden, V = m->vocab;
    hrmt_status s = hrmt_linear_apply(m, &m->lm_head, c->zH, H, c->logits, V, m->dt, B * T, &c->ws);
    if (s == HRMT_OK)
        s = hrmt_linear_apply(m, &m->q_head, c->zH, T * H, c->q, 2, HRMT_F32, B, &c->ws);
    if (s != HRMT_OK) return s;
    for (size_t i = 0; i < B; i++) {
        for (int j = 0; j < 2; j++) {
            float v = c->q[2 * i + (size_t)j] + m->q_bias[j];
            c->q[2 * i + (size_t)j] = m->dt == HRMT_BF16 ? hrmt_round_bf16(v) : v;
        }
    }
    return HRMT_OK;
}

static void copy_out(hrmt_model *m, hrmt_carry *c, hrmt_step_outputs *o) {
    size_t B = (size_t)c->batch, T = m->T, H = m->hidden, V = m->vocab;
    for (size_t s = 0; s < B; s++) {
        if (o->logits)
            to_f32(m, (char *)c->logits + (s * T + m->P) * V * m->esz, o->logits + s * m->seq * V,
                   m->seq * V);
        if (o->q_halt_logits) o->q_halt_logits[s] = c->q[2 * s];
        if (o->q_continue_logits) o->q_continue_logits[s] = c->q[2 * s + 1];
    }
    if (o->z_H) to_f32(m, c->zH, o->z_H, B * T * H);
    if (o->z_L) to_f32(m, c->zL, o->z_L, B * T * H);
    if (o->halted)
        for (size_t s = 0; s < B; s++) o->halted[s] = c->halted[s];
}

hrmt_status hrmt_act_step(hrmt_model *m, hrmt_carry *carry, const int32_t *inputs,
                          const int32_t *puzzle_ids, const hrmt_step_options *opts,
                          hrmt_step_outputs *outs, hrmt_step_timing *timing) {
    if (!m || !carry || !inputs)
        return hrmt_fail(m ? m->ctx : NULL, HRMT_ERR_INVALID_ARG, "act step: NULL argument");
    if (carry->m != m)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "act step: carry belongs to another model");
    if (m->P && !puzzle_ids)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                         "act step: the model needs puzzle_identifiers");
    hrmt_step_options o = {HRMT_SCHEDULE_TIERED, 0};
    if (opts) o = *opts;
    if (o.schedule != HRMT_SCHEDULE_TIERED && o.schedule != HRMT_SCHEDULE_BASELINE)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "act step: unknown schedule %d",
                         (int)o.schedule);
    hrmt_status s = check_data(m, carry, inputs, puzzle_ids);
    if (s != HRMT_OK) return s;
#if defined(HRMT_HAVE_CUDA)
    if (carry->cu) return hrmt_cuda_act_step(m, carry, inputs, puzzle_ids, &o, outs, timing);
#endif

    hrmt_step_timing tm;
    memset(&tm, 0, sizeof tm);
    double t0 = hrmt_now_us();
    /* Parts are timed only for a caller that asked for timings. */
    carry->ws.part_us = timing ? tm.part_us : NULL;
    reset_halted(m, carry, inputs, puzzle_ids);
    double tp = hrmt_part_begin(&carry->ws);
    hrmt_embed(m, carry->inputs, carry->puzzle_ids, (size_t)carry->batch, carry->x);
    hrmt_part_end(&carry->ws, HRMT_PART_EMBED, tp);
    s = hrmt_inner_forward(m, carry, o.schedule, &tm);
    if (s == HRMT_OK) {
        tp = hrmt_part_begin(&carry->ws);
        s = heads(m, carry);
        hrmt_part_end(&carry->ws, HRMT_PART_HEADS, tp);
    }
    carry->ws.part_us = NULL; /* tm is about to go out of scope */
    if (s != HRMT_OK) return s;
    /* steps += 1; halted = steps >= halt_max_steps (every sample runs the
     * maximum at inference). early_halt adds the training-time rule. */
    for (int i = 0; i < carry->batch; i++) {
        carry->steps[i]++;
        int halt = carry->steps[i] >= m->cfg.halt_max_steps;
        if (o.early_halt && m->cfg.halt_max_steps > 1 &&
            carry->q[2 * (size_t)i] > carry->q[2 * (size_t)i + 1])
            halt = 1;
        carry->halted[i] = halt;
    }
    tm.step_us = hrmt_now_us() - t0;
    if (outs) copy_out(m, carry, outs);
    if (timing) *timing = tm;
    return HRMT_OK;
}
