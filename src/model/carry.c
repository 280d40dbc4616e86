/* ACT carry: the batch state (z_H, z_L, steps, halted, current data) plus all
 * the scratch one step needs, allocated once so a step never allocates on the
 * baseline path. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/limits.h"
#include "model/model.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/model_cuda.h"
#endif

#define ALIGN64(x) (((x) + 63) / 64 * 64)

size_t hrmt_level_ws_row_bytes(const hrmt_model *m) {
    /* qkv + att + proj + gate_up + act, each row in the forward dtype. */
    return (3 * m->hidden + m->hidden + m->hidden + 2 * m->inter + m->inter) * m->esz;
}

size_t hrmt_level_ws_layout(const hrmt_model *m, size_t rows, int threads, void *base,
                            hrmt_level_ws *ws) {
    char *p = base;
    size_t off = 0;
    const size_t sizes[5] = {rows * 3 * m->hidden * m->esz, rows * m->hidden * m->esz,
                             rows * m->hidden * m->esz, rows * 2 * m->inter * m->esz,
                             rows * m->inter * m->esz};
    void **slots[5] = {&ws->qkv, &ws->att, &ws->proj, &ws->gu, &ws->act};
    for (int i = 0; i < 5; i++) {
        if (p) *slots[i] = p + off;
        off += ALIGN64(sizes[i]);
    }
    ws->attn_stride = hrmt_level_ws_attn_floats(m);
    ws->threads = threads;
    ws->part_us = NULL; /* hrmt_act_step points it at a timed step's counters */
    if (p) ws->attn = (float *)(p + off);
    off += ALIGN64((size_t)threads * ws->attn_stride * sizeof(float));
    return off;
}

hrmt_status hrmt_carry_create(hrmt_model *m, int batch, hrmt_carry **out) {
    if (!m || !out) return HRMT_ERR_INVALID_ARG;
    if (batch < 1 || batch > (1 << 24))
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "carry: batch %d is outside 1..2^24", batch);
    /* Every buffer below scales with batch x T rows: bound them before allocating. */
    int64_t rows_wanted = (int64_t)batch * (int64_t)m->T;
    if (rows_wanted > hrmt_limits_of(m->ctx)->batch_tokens) {
        char what[128];
        snprintf(what, sizeof what, "carry: batch x (seq_len + prefix) = %d x %zu", batch, m->T);
        return hrmt_limit_fail(m->ctx, HRMT_ERR_LIMIT, HRMT_LIMIT_BATCH_TOKENS, what, rows_wanted);
    }
#if defined(HRMT_HAVE_CUDA)
    if (m->ctx->backend_kind == HRMT_BACKEND_CUDA) return hrmt_cuda_carry_create(m, batch, out);
#endif
    hrmt_carry *c = calloc(1, sizeof *c);
    if (!c) return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "carry");
    c->m = m;
    c->batch = batch;
    size_t B = (size_t)batch, rows = B * m->T, es = m->esz;
    int threads = hrmt_context_threads(m->ctx);
    if (threads < 1) threads = 1;
    /* Sizes were validated against caps in the config, so rows * width stays
     * far below SIZE_MAX for any batch up to 2^24 on 64-bit hosts. */
    size_t sizes[9] = {rows * m->hidden * es, rows * m->hidden * es,        B * sizeof(int32_t),
                       B * sizeof(int32_t),   B * m->seq * sizeof(int32_t), B * sizeof(int32_t),
                       rows * m->hidden * es, rows * m->hidden * es,        rows * m->vocab * es};
    size_t total = 0;
    for (int i = 0; i < 9; i++) total += ALIGN64(sizes[i]);
    size_t q_off = total;
    total += ALIGN64(B * 2 * sizeof(float));
    size_t ws_off = total;
    total += hrmt_level_ws_layout(m, rows, threads, NULL, &c->ws);
    size_t g_off = total;
    size_t g_bytes = ALIGN64(
        hrmt_model_gemm_scratch(m, rows, hrmt_tiling_for(m, batch).samples * m->T, B, threads));
    total += g_bytes;
    /* The batch state and the baseline's scratch live in the DRAM tier, so the
     * tier manager's DRAM figures are real for both schedules. */
    snprintf(c->tier_name, sizeof c->tier_name, "hrm.carry@%p", (void *)c);
    size_t words = (total + 3) / 4;
    hrmt_tensor block;
    hrmt_status st = hrmt_tiers_alloc_dram(hrmt_context_tiers(m->ctx), c->tier_name, 1, &words,
                                           HRMT_F32, &block);
    if (st != HRMT_OK) {
        free(c);
        return hrmt_fail(m->ctx, st, "carry buffers (%zu bytes): %s", total, hrmt_status_str(st));
    }
    c->block = block.data; /* zeroed and 64-byte aligned by the tier manager */
    char *p = c->block;
    void **slots[9] = {&c->zH,
                       &c->zL,
                       (void **)&c->steps,
                       (void **)&c->halted,
                       (void **)&c->inputs,
                       (void **)&c->puzzle_ids,
                       &c->x,
                       &c->inj,
                       &c->logits};
    size_t off = 0;
    for (int i = 0; i < 9; i++) {
        *slots[i] = p + off;
        off += ALIGN64(sizes[i]);
    }
    c->q = (float *)(p + q_off);
    hrmt_level_ws_layout(m, rows, threads, p + ws_off, &c->ws);
    c->ws.gemm_scratch = p + g_off;
    c->ws.gemm_scratch_bytes = g_bytes;
    /* initial_carry: every sample halted, so the first step takes the batch. */
    for (size_t s = 0; s < B; s++) c->halted[s] = 1;
    *out = c;
    return HRMT_OK;
}

void hrmt_carry_destroy(hrmt_carry *c) {
    if (!c) return;
#if defined(HRMT_HAVE_CUDA)
    if (c->cu) {
        hrmt_cuda_carry_destroy(c);
        return;
    }
#endif
    hrmt_tiers_free(hrmt_context_tiers(c->m->ctx), c->tier_name);
    free(c);
}
