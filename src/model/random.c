/* A model with deterministic pseudo-random weights, initialised like the
 * official code (trunc_normal_init_ with std 1/sqrt(fan_in) for linear layers
 * and embeddings, std 1 for H_init/L_init). Two deliberate departures keep the
 * outputs informative: puzzle_emb gets the embedding std instead of zeros, and
 * q_head gets random weights (bias -5 as official) instead of zeros. */
#include <math.h>
#include <stdlib.h>

#include "core/bf16.h"
#include "model/model.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/model_cuda.h"
#endif

typedef struct rng {
    uint64_t s;
} rng;

/* splitmix64: a full-period generator with good mixing, fixed by the seed. */
static uint64_t next_u64(rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(rng *r) { return ((double)(next_u64(r) >> 11) + 0.5) / 9007199254740992.0; }

/* Standard normal truncated to [-2, 2], rescaled so the result has std `std`
 * (the official trunc_normal_init_ corrects for the truncation the same way). */
static void trunc_normal(rng *r, float *dst, size_t n, double std) {
    const double trunc_std = 0.87962566103423978; /* std of N(0,1) truncated at +-2 */
    for (size_t i = 0; i < n;) {
        /* Marsaglia's polar method: two normals per accepted pair, no trig. */
        double u = 2.0 * uniform01(r) - 1.0, v = 2.0 * uniform01(r) - 1.0, s = u * u + v * v;
        if (s >= 1.0 || s == 0.0) continue;
        double f = sqrt(-2.0 * log(s) / s);
        double z[2] = {u * f, v * f};
        for (int j = 0; j < 2 && i < n; j++)
            if (fabs(z[j]) <= 2.0) dst[i++] = (float)(z[j] * std / trunc_std);
    }
}

static hrmt_status rand_linear(hrmt_model *m, rng *r, float *buf, size_t n, size_t k,
                               hrmt_linear *l) {
    trunc_normal(r, buf, n * k, 1.0 / sqrt((double)k));
    return hrmt_model_pack_linear(m, buf, n, k, l);
}

static hrmt_status rand_blocks(hrmt_model *m, rng *r, float *buf, hrmt_block_weights *b, int n) {
    hrmt_status s = HRMT_OK;
    for (int i = 0; i < n && s == HRMT_OK; i++) {
        if ((s = rand_linear(m, r, buf, 3 * m->hidden, m->hidden, &b[i].qkv)) != HRMT_OK ||
            (s = rand_linear(m, r, buf, m->hidden, m->hidden, &b[i].o)) != HRMT_OK ||
            (s = rand_linear(m, r, buf, 2 * m->inter, m->hidden, &b[i].gate_up)) != HRMT_OK)
            break;
        s = rand_linear(m, r, buf, m->hidden, m->inter, &b[i].down);
    }
    return s;
}

static hrmt_status fill(hrmt_model *m, rng *r) {
    const hrmt_model_config *c = &m->cfg;
    size_t h = m->hidden;
    size_t big = 3 * h * h;
    size_t cands[] = {2 * m->inter * h, m->vocab * h, m->T * h,
                      (size_t)c->num_puzzle_identifiers * m->P * h};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
        if (cands[i] > big) big = cands[i];
    float *buf = malloc(big * sizeof(float));
    if (!buf) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "random weights");
    double emb_std = 1.0 / sqrt((double)h);
    hrmt_status s;
    trunc_normal(r, buf, m->vocab * h, emb_std);
    hrmt_model_store(m, m->embed_tokens, buf, m->vocab * h);
    if (m->P) {
        size_t ndim = (size_t)c->puzzle_emb_ndim;
        for (int id = 0; id < c->num_puzzle_identifiers; id++) {
            trunc_normal(r, buf, ndim, emb_std);
            hrmt_model_store(m, (char *)m->puzzle_emb + (size_t)id * m->P * h * m->esz, buf, ndim);
        }
    }
    if (c->pos_encodings == HRMT_POS_LEARNED) {
        trunc_normal(r, buf, m->T * h, emb_std);
        hrmt_model_store(m, m->embed_pos, buf, m->T * h);
    }
    /* H_init / L_init are bf16 buffers in the official model. */
    trunc_normal(r, buf, h, 1.0);
    for (size_t i = 0; i < h; i++) buf[i] = hrmt_round_bf16(buf[i]);
    hrmt_model_store(m, m->H_init, buf, h);
    trunc_normal(r, buf, h, 1.0);
    for (size_t i = 0; i < h; i++) buf[i] = hrmt_round_bf16(buf[i]);
    hrmt_model_store(m, m->L_init, buf, h);
    m->q_bias[0] = m->q_bias[1] = -5.0f;
    if ((s = rand_linear(m, r, buf, 2, h, &m->q_head)) != HRMT_OK ||
        (s = rand_linear(m, r, buf, m->vocab, h, &m->lm_head)) != HRMT_OK ||
        (s = rand_blocks(m, r, buf, m->H, c->H_layers)) != HRMT_OK)
        goto out;
    s = rand_blocks(m, r, buf, m->L, c->L_layers);
out:
    free(buf);
    return s;
}

hrmt_status hrmt_model_create_random(hrmt_context *ctx, const hrmt_model_config *cfg, uint64_t seed,
                                     hrmt_model **out) {
    if (!ctx || !out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "model: NULL argument");
    hrmt_model_config def = hrmt_model_config_default();
    hrmt_model *m = NULL;
    hrmt_status s = hrmt_model_alloc(ctx, cfg ? cfg : &def, &m);
    if (s != HRMT_OK) return s;
    rng r = {seed};
    s = fill(m, &r);
#if defined(HRMT_HAVE_CUDA)
    if (s == HRMT_OK && ctx->backend_kind == HRMT_BACKEND_CUDA) s = hrmt_cuda_model_upload(m);
#endif
    if (s != HRMT_OK) {
        hrmt_model_destroy(m);
        return s;
    }
    *out = m;
    return HRMT_OK;
}
