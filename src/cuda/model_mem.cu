/* Device memory of the HRM model on a CUDA context: weights and tables
 * uploaded once in the forward dtype, and the carry (state, step scratch,
 * the tiered schedule's tile buffers) in one device allocation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_grid.h"
#include "cuda/model_internal.cuh"
#include "cuda/model_l_persist.h"

extern "C" {
#include "core/checked.h"
#include "core/gemm_tune_file.h"
}

hrmt_status cu_fail(hrmt_context *ctx, cudaError_t e, const char *what) {
    (void)cudaGetLastError(); /* clears a non-sticky error so later calls can run */
    hrmt_status s = e == cudaErrorMemoryAllocation ? HRMT_ERR_OUT_OF_MEMORY
                    : e == cudaErrorNoDevice       ? HRMT_ERR_NO_DEVICE
                                                   : HRMT_ERR_CUDA;
    return hrmt_fail(ctx, s, "%s: %s", what, cudaGetErrorString(e));
}

hrmt_status cu_check(hrmt_context *ctx, const char *what) {
    return hrmt_cuda_check(what, ctx->err, sizeof ctx->err);
}

/* Converts n F32 values to the forward dtype and uploads them into new device memory. */
static hrmt_status upload(hrmt_model *m, const void *host, size_t bytes, void **out) {
    hrmt_context *ctx = m->ctx;
    *out = NULL;
    hrmt_status s = hrmt_cuda_malloc(ctx->cuda, bytes ? bytes : 1, out, ctx->err, sizeof ctx->err);
    if (s == HRMT_OK && bytes)
        s = hrmt_cuda_memcpy(ctx->cuda, *out, host, bytes, 0, ctx->err, sizeof ctx->err);
    if (s != HRMT_OK && *out) {
        hrmt_cuda_free(ctx->cuda, *out);
        *out = NULL;
    }
    return s;
}

hrmt_status hrmt_cuda_model_linear(hrmt_model *m, const float *w, size_t n, size_t k,
                                   hrmt_linear *out) {
    size_t numel;
    if (!hrmt_mul_ok(n, k, &numel) || numel > SIZE_MAX / 4)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "linear %zux%zu", n, k);
    const void *src = w;
    void *tmp = NULL;
    if (m->dt == HRMT_BF16) {
        /* weight.to(bfloat16), as the CPU path packs it. */
        if (!(tmp = malloc(numel * 2)))
            return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "converting a %zux%zu weight", n, k);
        hrmt_model_store(m, tmp, w, numel);
        src = tmp;
    }
    hrmt_status s = upload(m, src, numel * m->esz, &out->dev);
    free(tmp);
    if (s != HRMT_OK) return s;
    out->pw = NULL;
    out->n = n;
    out->k = k;
    return HRMT_OK;
}

void hrmt_cuda_linear_free(hrmt_model *m, hrmt_linear *l) {
    if (l->dev) hrmt_cuda_free(m->ctx->cuda, l->dev);
    l->dev = NULL;
}

hrmt_status hrmt_cuda_model_upload(hrmt_model *m) {
    struct hrmt_model_cuda *g = (struct hrmt_model_cuda *)calloc(1, sizeof *g);
    if (!g) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "cuda model tables");
    m->cu = g;
    const size_t h = m->hidden, es = m->esz;
    hrmt_status s = upload(m, m->embed_tokens, m->vocab * h * es, &g->embed_tokens);
    if (s == HRMT_OK && m->P)
        s = upload(m, m->puzzle_emb, (size_t)m->cfg.num_puzzle_identifiers * m->P * h * es,
                   &g->puzzle_emb);
    if (s == HRMT_OK && m->embed_pos) s = upload(m, m->embed_pos, m->T * h * es, &g->embed_pos);
    if (s == HRMT_OK) s = upload(m, m->H_init, h * es, &g->H_init);
    if (s == HRMT_OK) s = upload(m, m->L_init, h * es, &g->L_init);
    if (s == HRMT_OK && m->rope_cos)
        s = upload(m, m->rope_cos, m->T * m->head_dim * 4, (void **)&g->rope_cos);
    if (s == HRMT_OK && m->rope_sin)
        s = upload(m, m->rope_sin, m->T * m->head_dim * 4, (void **)&g->rope_sin);
    if (s == HRMT_OK) s = cu_gemm_pin(m);
    if (s == HRMT_OK) s = cu_block_settings(m); /* before the tuner, which times its shapes */
    if (s == HRMT_OK) s = cu_gemm_tune(m);
    if (s == HRMT_OK) s = cu_l_persist_setting(m);
    if (s == HRMT_OK) s = cu_grid_setting(m);
    if (s == HRMT_OK) s = cu_branch_setting(m);
    return s; /* on failure hrmt_model_destroy frees what was made */
}

void hrmt_cuda_model_free(hrmt_model *m) {
    struct hrmt_model_cuda *g = cu_model(m);
    if (!g) return;
    void *ps[7] = {g->embed_tokens, g->puzzle_emb, g->embed_pos, g->H_init,
                   g->L_init,       g->rope_cos,   g->rope_sin};
    for (int i = 0; i < 7; i++)
        if (ps[i]) hrmt_cuda_free(m->ctx->cuda, ps[i]);
    if (g->grid_trace) hrmt_cuda_free(m->ctx->cuda, g->grid_trace);
    hrmt_tune_file_free(g->tcache);
    free(g);
    m->cu = NULL;
}

/* ---- carry -------------------------------------------------------------------- */

/* Samples per tile of the tiered schedule: as many as keep a tile's L-level
 * working set (z_L, injection, level scratch) within the device's shared
 * memory summed over its SMs, so a tile's activations stay on chip (shared
 * memory / L2) across its L_cycles x L_layers. HRMT_CUDA_TILE_SAMPLES
 * overrides it (tests, tuning): a positive whole number, else INVALID_ARG
 * (it was ignored, so that a typo measured the default). */
static hrmt_status tile_samples(const hrmt_model *m, int batch, size_t *out) {
    const char *env = getenv("HRMT_CUDA_TILE_SAMPLES");
    size_t B = (size_t)batch, n = 0;
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        const long v = strtol(env, &end, 10);
        if (!end || *end || v <= 0 || errno == ERANGE)
            return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                             "HRMT_CUDA_TILE_SAMPLES='%s' is not a positive whole number", env);
        n = (size_t)v;
    }
    if (!n) {
        size_t per_block = 0, per_sm = 0, l2 = 0;
        int sms = 0;
        hrmt_cuda_limits(m->ctx->cuda, &per_block, &per_sm, &sms, &l2);
        size_t per_sample = m->T * (hrmt_level_ws_row_bytes(m) + 2 * m->hidden * m->esz);
        n = per_sm * (size_t)(sms > 0 ? sms : 1) / per_sample;
    }
    *out = n < 1 ? 1 : n > B ? B : n;
    return HRMT_OK;
}

/* Lays out buffers of `bytes` each (256-byte aligned) from `base`
 * (NULL: sizing only); returns 0 on overflow. */
typedef struct layout {
    char *base;
    size_t off;
    int ok;
} layout;

static void *take(layout *l, size_t count, size_t esz) {
    size_t b;
    if (!l->ok || !hrmt_mul_ok(count, esz, &b) || !hrmt_add_ok(b, 255, &b)) {
        l->ok = 0;
        return NULL;
    }
    b = b / 256 * 256;
    void *p = l->base ? l->base + l->off : NULL;
    if (!hrmt_add_ok(l->off, b, &l->off)) l->ok = 0;
    return p;
}

static void carve(const hrmt_model *m, size_t B, size_t tile, layout *l,
                  struct hrmt_carry_cuda *g) {
    const size_t T = m->T, H = m->hidden, I = m->inter, es = m->esz;
    size_t rows = 0, tr = 0;
    if (!hrmt_mul_ok(B, T, &rows) || !hrmt_mul_ok(tile, T, &tr)) l->ok = 0;
    g->zH = take(l, rows * H, es);
    g->zL = take(l, rows * H, es);
    g->x = take(l, rows * H, es);
    g->inj = take(l, rows * H, es);
    g->logits = take(l, rows * m->vocab, es);
    g->q = (float *)take(l, 2 * B, 4);
    g->steps = (int32_t *)take(l, B, 4);
    g->halted = (int32_t *)take(l, B, 4);
    /* q, steps, halted and new_inputs, new_pids adjacent, in this order:
     * each group crosses the bus in one copy per step (model_step.cu). */
    g->new_inputs = (int32_t *)take(l, B * m->seq, 4);
    g->new_pids = (int32_t *)take(l, B, 4);
    g->inputs = (int32_t *)take(l, B * m->seq, 4);
    g->pids = (int32_t *)take(l, B, 4);
    g->ws.qkv = take(l, rows * 3 * H, es);
    g->ws.att = take(l, rows * H, es);
    g->ws.proj = take(l, rows * H, es);
    g->ws.gu = take(l, rows * 2 * I, es);
    g->ws.act = take(l, rows * I, es);
    g->ws.hn = take(l, cu_model(m)->npro ? rows * H : 0, es); /* only the norm prologue's */
    g->nbar = m->cfg.H_cycles * (m->cfg.L_cycles + 1);
    g->bar = (unsigned *)take(l, (size_t)g->nbar, 4);
    g->nbranch = cu_branch_count(m, B);
    g->lt_ws = take(l, (size_t)(g->nbranch - 1) * m->ctx->cuda->ws_bytes, 1);
    g->tz = take(l, tr * H, es);
    g->tinj = take(l, tr * H, es);
}

/* Logits above this stay on the pageable path: pinning large host buffers
 * takes memory from the system for little gain over one big copy. */
#define CU_PIN_LOGITS_MAX ((size_t)32 << 20)

/* The step's page-locked staging (struct hrmt_carry_cuda: pin); none when
 * the host refuses it (the step then copies synchronously). */
static void pin_staging(const hrmt_model *m, size_t B, struct hrmt_carry_cuda *g) {
    g->pin_state = (size_t)((char *)g->halted - (char *)g->q) + B * 4;
    /* The logits and their alignment gap up to q: adjacent on the device
     * (carve), so one copy brings logits and state. */
    g->pin_logits = (size_t)((char *)g->q - (char *)g->logits);
    if (g->pin_logits > CU_PIN_LOGITS_MAX) g->pin_logits = 0;
    if (!cu_model(m)->pin_io) return;
    const size_t total = g->pin_logits + g->pin_state + cu_upload_bytes(g, B, m->seq, 1);
    if (cudaMallocHost(&g->pin, total) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the step falls back */
        g->pin = NULL;
    }
}

hrmt_status hrmt_cuda_carry_create(hrmt_model *m, int batch, hrmt_carry **out) {
    hrmt_context *ctx = m->ctx;
    const size_t B = (size_t)batch;
    size_t tile = 0;
    const hrmt_status ts = tile_samples(m, batch, &tile);
    if (ts != HRMT_OK) return ts;
    hrmt_carry *c = (hrmt_carry *)calloc(1, sizeof *c);
    struct hrmt_carry_cuda *g = (struct hrmt_carry_cuda *)calloc(1, sizeof *g);
    if (!c || !g) {
        free(c);
        free(g);
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "carry");
    }
    c->m = m;
    c->batch = batch;
    c->cu = g;
    g->graph_key = -1;
    g->tile_samples = tile;
    layout l = {NULL, 0, 1};
    carve(m, B, g->tile_samples, &l, g);
    if (!l.ok) {
        hrmt_cuda_carry_destroy(c);
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "carry: batch %d is too large", batch);
    }
    /* Device first: a batch too large for the GPU fails here, before any
     * host memory of that size is asked for. */
    hrmt_status s = hrmt_cuda_malloc(ctx->cuda, l.off, &g->block, ctx->err, sizeof ctx->err);
    if (s != HRMT_OK) {
        g->block = NULL;
        hrmt_cuda_carry_destroy(c);
        if (s == HRMT_ERR_OUT_OF_MEMORY)
            return hrmt_fail(ctx, s, "carry: %zu bytes of device memory for batch %d", l.off,
                             batch);
        return s;
    }
    l.base = (char *)g->block;
    l.off = 0;
    carve(m, B, g->tile_samples, &l, g);
    c->steps = (int32_t *)calloc(B, sizeof(int32_t));
    c->halted = (int32_t *)calloc(B, sizeof(int32_t));
    c->q = (float *)calloc(2 * B, sizeof(float));
    if (!c->steps || !c->halted || !c->q) {
        hrmt_cuda_carry_destroy(c);
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "carry host mirrors");
    }
    pin_staging(m, B, g);
    /* initial_carry: zeros, every sample halted. */
    cudaError_t e = cudaMemsetAsync(g->block, 0, l.off, cu_stream(m));
    if (e != cudaSuccess) {
        hrmt_cuda_carry_destroy(c);
        return cu_fail(ctx, e, "carry: clearing device memory");
    }
    for (size_t i = 0; i < B; i++) c->halted[i] = 1;
    s = hrmt_cuda_memcpy(ctx->cuda, g->halted, c->halted, B * 4, 0, ctx->err, sizeof ctx->err);
    if (s != HRMT_OK) {
        hrmt_cuda_carry_destroy(c);
        return s;
    }
    *out = c;
    return HRMT_OK;
}

void hrmt_cuda_carry_destroy(hrmt_carry *c) {
    if (!c) return;
    struct hrmt_carry_cuda *g = cu_carry(c);
    if (g) {
        if (g->graph) cudaGraphExecDestroy(g->graph);
        for (int i = 0; i < g->evcap; i++) cudaEventDestroy(g->ev[i]);
        if (g->fork) cudaEventDestroy(g->fork);
        if (g->join) cudaEventDestroy(g->join);
        if (g->side) cudaStreamDestroy(g->side);
        free(g->ev);
        free(g->seg);
        free(g->host);
        if (g->pin) cudaFreeHost(g->pin);
        if (g->block) hrmt_cuda_free(c->m->ctx->cuda, g->block);
        free(g);
    }
    free(c->steps);
    free(c->halted);
    free(c->q);
    free(c);
}
