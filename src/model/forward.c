/* HRM forward pieces: input embeddings, a reasoning level (blocks), linear
 * layers. Read top to bottom it follows models/hrm/hrm_act_v1.py. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime (model/part_clock.h) */
#include <math.h>
#include <string.h>

#include "core/bf16.h"
#include "core/gemm.h"
#include "core/ops_util.h"
#include "model/model.h"
#include "model/part_clock.h"

static inline char *row_at(const hrmt_model *m, const void *base, size_t row, size_t width) {
    return (char *)base + row * width * m->esz;
}

/* ---- linear layers ------------------------------------------------------ */

hrmt_status hrmt_linear_apply(const hrmt_model *m, const hrmt_linear *l, const void *x, size_t ldx,
                              void *y, size_t ldy, hrmt_dtype ydt, size_t rows,
                              const hrmt_level_ws *ws) {
    hrmt_context *ctx = m->ctx;
    int threads = ws->threads > 0 ? ws->threads : 1;
    void *scr = ws->gemm_scratch;
    size_t have = ws->gemm_scratch_bytes;
    size_t need = hrmt_gemm_scratch_bytes(ctx, threads, rows, l->n, l->k, m->dt, l->pw, ydt, 0);
    if (need > have)
        scr = NULL, have = 0; /* the GEMM allocates its own (never on the sized path) */
    return hrmt_gemm_raw_ex(ctx, threads, rows, l->n, l->k, x, m->dt, ldx, l->pw, y, ydt, ldy, 0,
                            scr, have);
}

static size_t linear_need(const hrmt_model *m, const hrmt_linear *l, size_t rows, hrmt_dtype ydt,
                          int threads) {
    return hrmt_gemm_scratch_bytes(m->ctx, threads, rows, l->n, l->k, m->dt, l->pw, ydt, 0);
}

size_t hrmt_model_gemm_scratch(const hrmt_model *m, size_t rows, size_t tile_rows, size_t batch,
                               int threads) {
    size_t need = batch ? linear_need(m, &m->lm_head, rows, m->dt, threads) : 0;
    size_t q = batch ? linear_need(m, &m->q_head, batch, HRMT_F32, threads) : 0;
    if (q > need) need = q;
    const size_t rs[2] = {rows, tile_rows};
    for (int r = 0; r < 2; r++) {
        for (int lv = 0; lv < 2; lv++) {
            const hrmt_block_weights *b = lv ? m->L : m->H;
            int n = lv ? m->cfg.L_layers : m->cfg.H_layers;
            for (int i = 0; i < n; i++) {
                const hrmt_linear *ls[4] = {&b[i].qkv, &b[i].o, &b[i].gate_up, &b[i].down};
                for (int k = 0; k < 4; k++) {
                    size_t v = linear_need(m, ls[k], rs[r], m->dt, threads);
                    if (v > need) need = v;
                }
            }
        }
    }
    return need;
}

/* ---- row ops over OpenMP ------------------------------------------------ */

typedef struct row_args {
    const hrmt_model *m;
    const void *a, *b;
    void *out;
    size_t cols;
    int sram;
} row_args;

static void add_body(const void *arg, size_t r0, size_t r1) {
    const row_args *p = arg;
    const hrmt_model *m = p->m;
    m->ctx->be->rowops.add[m->dt](r1 - r0, p->cols, row_at(m, p->a, r0, p->cols), p->cols,
                                  row_at(m, p->b, r0, p->cols), p->cols,
                                  row_at(m, p->out, r0, p->cols), p->cols);
}

void hrmt_rows_add(const hrmt_model *m, const void *a, const void *b, void *out, size_t rows) {
    row_args p = {m, a, b, out, m->hidden, 0};
    hrmt_ops_run_rows(m->ctx, rows, 3 * m->hidden * m->esz, add_body, &p);
}

/* out = rms_norm(x + r) in place on x (post-norm residual). */
static void resnorm_body(const void *arg, size_t r0, size_t r1) {
    const row_args *p = arg;
    const hrmt_model *m = p->m;
    const hrmt_rowops *k = &m->ctx->be->rowops;
    size_t w = p->cols;
    float eps = (float)m->cfg.rms_norm_eps;
    if (p->sram)
        k->residual_rmsnorm_sram[m->dt](r1 - r0, w, row_at(m, p->a, r0, w), w,
                                        row_at(m, p->b, r0, w), w, eps, row_at(m, p->out, r0, w),
                                        w);
    else
        k->residual_rmsnorm_dram[m->dt](r1 - r0, w, row_at(m, p->a, r0, w), w,
                                        row_at(m, p->b, r0, w), w, eps, row_at(m, p->out, r0, w), w,
                                        0);
}

static void residual_norm(const hrmt_model *m, void *h, const void *r, size_t rows, int sram) {
    row_args p = {m, h, r, h, m->hidden, sram};
    hrmt_ops_run_rows(m->ctx, rows, 3 * m->hidden * m->esz, resnorm_body, &p);
}

static void swiglu_body(const void *arg, size_t r0, size_t r1) {
    const row_args *p = arg;
    const hrmt_model *m = p->m;
    size_t in = m->inter;
    m->ctx->be->rowops.swiglu[m->dt](r1 - r0, in, row_at(m, p->a, r0, 2 * in), 2 * in,
                                     row_at(m, p->out, r0, in), in, 0);
}

static void swiglu(const hrmt_model *m, const void *gu, void *act, size_t rows) {
    row_args p = {m, gu, NULL, act, m->inter, 0};
    hrmt_ops_run_rows(m->ctx, rows, 3 * m->inter * m->esz, swiglu_body, &p);
}

/* ---- embeddings --------------------------------------------------------- */

/* Scalar multiply as the reference's PyTorch (1.13) does `python_float *
 * bf16_tensor`: the scalar is cast to bf16 first (sqrt(128) -> 11.3125),
 * then the F32 product is rounded once. F32: plain F32 product. */
static void scale_rows(const hrmt_model *m, void *x, size_t n, float c) {
    if (m->dt == HRMT_F32) {
        float *f = x;
        for (size_t i = 0; i < n; i++) f[i] = c * f[i];
    } else {
        uint16_t *h = x;
        const float cb = hrmt_round_bf16(c);
        for (size_t i = 0; i < n; i++) h[i] = hrmt_f32_to_bf16(cb * hrmt_bf16_to_f32(h[i]));
    }
}

void hrmt_embed(const hrmt_model *m, const int32_t *inputs, const int32_t *puzzle_ids, size_t n,
                void *x) {
    const hrmt_rowops *k = &m->ctx->be->rowops;
    size_t h = m->hidden, T = m->T;
    for (size_t s = 0; s < n; s++) {
        char *xs = row_at(m, x, s * T, h);
        /* Prefix: puzzle_emb.weights[id], zero padded to P rows. */
        if (m->P)
            memcpy(xs, row_at(m, m->puzzle_emb, (size_t)puzzle_ids[s] * m->P, h),
                   m->P * h * m->esz);
        k->embedding[m->dt][m->dt](m->seq, h, m->embed_tokens, h, inputs + s * m->seq,
                                   row_at(m, xs, m->P, h), h);
        if (m->cfg.pos_encodings == HRMT_POS_LEARNED) {
            /* 0.707106781 * (e + embed_pos): the add and the product each round. */
            k->add[m->dt](T, h, xs, h, m->embed_pos, h, xs, h);
            scale_rows(m, xs, T * h, 0.707106781f);
        }
        scale_rows(m, xs, T * h, (float)sqrt((double)h));
    }
}

/* ---- a reasoning level -------------------------------------------------- */

#define TRY(expr)                     \
    do {                              \
        hrmt_status s_ = (expr);      \
        if (s_ != HRMT_OK) return s_; \
    } while (0)

/* One part of a block, timed into ws->part_us when the step is timed. */
#define PART(p, stmt)                         \
    do {                                      \
        double t_ = hrmt_part_begin(ws);      \
        stmt;                                 \
        hrmt_part_end(ws, HRMT_PART_##p, t_); \
    } while (0)

static hrmt_status block(const hrmt_model *m, const hrmt_block_weights *b, void *h, size_t n,
                         const hrmt_level_ws *ws, int sram) {
    size_t rows = n * m->T, H = m->hidden;
    hrmt_status s = HRMT_OK;
    /* Attention: h = rms_norm(h + o_proj(attn(rope(qkv_proj(h))))); the
     * attention applies the RoPE per (sample, head). */
    PART(QKV, s = hrmt_linear_apply(m, &b->qkv, h, H, ws->qkv, 3 * H, m->dt, rows, ws));
    TRY(s);
    PART(ATTENTION, hrmt_rope_attention(m, ws->qkv, ws->att, n, ws));
    PART(O_PROJ, s = hrmt_linear_apply(m, &b->o, ws->att, H, ws->proj, H, m->dt, rows, ws));
    TRY(s);
    PART(NORM, residual_norm(m, h, ws->proj, rows, sram));
    /* MLP: h = rms_norm(h + down_proj(silu(gate) * up)). */
    PART(GATE_UP,
         s = hrmt_linear_apply(m, &b->gate_up, h, H, ws->gu, 2 * m->inter, m->dt, rows, ws));
    TRY(s);
    PART(SWIGLU, swiglu(m, ws->gu, ws->act, rows));
    PART(DOWN, s = hrmt_linear_apply(m, &b->down, ws->act, m->inter, ws->proj, H, m->dt, rows, ws));
    TRY(s);
    PART(NORM, residual_norm(m, h, ws->proj, rows, sram));
    return HRMT_OK;
}

hrmt_status hrmt_level(const hrmt_model *m, const hrmt_block_weights *blocks, int nlayers, void *z,
                       const void *inj, size_t n, const hrmt_level_ws *ws, int sram) {
    /* ReasoningModule: z = z + injection, then each layer in order. */
    PART(ADD, hrmt_rows_add(m, z, inj, z, n * m->T));
    for (int i = 0; i < nlayers; i++) TRY(block(m, &blocks[i], z, n, ws, sram));
    return HRMT_OK;
}
