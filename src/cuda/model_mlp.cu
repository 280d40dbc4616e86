/* The block's MLP half, h = rmsnorm(h + SwiGLU(h W_gate_up^T) W_down^T), in
 * row chunks. Over a whole large batch the gate_up output (rows x 2 inter,
 * 129 MB at batch 256 of the default model) goes to HBM and SwiGLU reads it
 * back at HBM speed; a chunk whose output fits in L2, written over the same
 * addresses each time, is read back from L2. Chunking cannot change bits:
 * the GEMM's pinned algorithm gives a row the same bits for every M
 * (model_gemm.cu) and the row ops are row-independent. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/model_mlp.h"

hrmt_status cu_resnorm(const hrmt_model *m, void *h, const void *r, size_t rows, int sram) {
    const hrmt_rowops *k = &m->ctx->be->rowops;
    const size_t H = m->hidden;
    const float eps = (float)m->cfg.rms_norm_eps;
    if (sram)
        k->residual_rmsnorm_sram[m->dt](rows, H, h, H, r, H, eps, h, H);
    else
        k->residual_rmsnorm_dram[m->dt](rows, H, h, H, r, H, eps, h, H, 0);
    return cu_check(m->ctx, "cuda residual_rmsnorm");
}

/* gate_up + SwiGLU of rows [r0, r0 + n): the gate_up rows at the start of
 * ws->gu, the SwiGLU rows into act (the chunk's own rows of ws->act, or the
 * start of it when down_proj follows in the same chunk). */
static hrmt_status up(const hrmt_model *m, const hrmt_block_weights *b, const void *h, size_t n,
                      const cu_level_ws *ws, void *act) {
    const size_t H = m->hidden, I = m->inter;
    hrmt_status s = cu_gemm(m, n, 2 * I, H, h, H, b->gate_up.dev, ws->gu, m->dt, 2 * I);
    if (s != HRMT_OK) return s;
    hrmt_cuda_swiglu(m->ctx->cuda, m->dt, n, I, ws->gu, 2 * I, act, I, 0);
    return cu_check(m->ctx, "cuda swiglu");
}

hrmt_status cu_mlp(const hrmt_model *m, const hrmt_block_weights *b, void *h, size_t rows,
                   const cu_level_ws *ws, int sram) {
    const struct hrmt_model_cuda *g = cu_model(m);
    const size_t H = m->hidden, I = m->inter, es = m->esz;
    const size_t chunk = g->mlp_chunk && g->mlp_chunk < rows ? g->mlp_chunk : rows;
    const int whole = g->mlp_span_all;
    for (size_t r0 = 0; r0 < rows; r0 += chunk) {
        const size_t n = rows - r0 < chunk ? rows - r0 : chunk;
        char *hc = (char *)h + r0 * H * es;
        void *act = whole ? ws->act : (char *)ws->act + r0 * I * es;
        hrmt_status s = up(m, b, hc, n, ws, act);
        if (s == HRMT_OK && whole) s = cu_gemm(m, n, H, I, act, I, b->down.dev, ws->proj, m->dt, H);
        if (s == HRMT_OK && whole) s = cu_resnorm(m, hc, ws->proj, n, sram);
        if (s != HRMT_OK) return s;
    }
    if (whole) return HRMT_OK;
    hrmt_status s = cu_gemm(m, rows, H, I, ws->act, I, b->down.dev, ws->proj, m->dt, H);
    return s == HRMT_OK ? cu_resnorm(m, h, ws->proj, rows, sram) : s;
}

/* The auto chunk: gate_up rows filling a third of L2 (the rest holds the
 * layer's weights and SwiGLU's output), whole 128-row blocks. */
static size_t auto_chunk(const hrmt_model *m) {
    size_t l2 = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, NULL, &l2);
    const size_t row = 2 * m->inter * m->esz, rows = row ? l2 / 3 / row / 128 * 128 : 0;
    return rows < 128 ? 128 : rows;
}

hrmt_status cu_mlp_setting(hrmt_model *m) {
    struct hrmt_model_cuda *g = cu_model(m);
    const char *env = getenv("HRMT_CUDA_MLP_CHUNK");
    g->mlp_chunk = auto_chunk(m);
    if (env && strcmp(env, "auto") != 0) {
        char *end = NULL;
        errno = 0;
        const unsigned long long v = strtoull(env, &end, 10);
        /* Digits only (strtoull would take "-5" and " 7"), at most 2^31 rows. */
        if (!*env || strspn(env, "0123456789") != strlen(env) || errno || *end ||
            v > (unsigned long long)INT32_MAX)
            return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                             "HRMT_CUDA_MLP_CHUNK='%s' is not auto, 0 or a row count up to %d",
                             env, INT32_MAX);
        g->mlp_chunk = (size_t)v; /* 0: no chunks */
    }
    const char *span = getenv("HRMT_CUDA_MLP_SPAN");
    if (span && strcmp(span, "up") != 0 && strcmp(span, "mlp") != 0)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "HRMT_CUDA_MLP_SPAN='%s' is not up or mlp",
                         span);
    g->mlp_span_all = span && !strcmp(span, "mlp");
    return HRMT_OK;
}
