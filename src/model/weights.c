/* Model shell, weight conversion/packing, and loading from safetensors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "core/checked.h"
#include "core/safetensors.h"
#include "core/text_escape.h"
#include "model/model.h"
#if defined(HRMT_HAVE_CUDA)
#include "cuda/model_cuda.h"
#endif

void hrmt_model_store(const hrmt_model *m, void *dst, const float *src, size_t n) {
    if (m->dt == HRMT_F32) {
        memcpy(dst, src, n * sizeof(float));
    } else {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = hrmt_f32_to_bf16(src[i]);
    }
}

static void *xalloc(size_t bytes) {
    /* 64-byte alignment keeps SIMD row loads on whole cache lines. */
    size_t rounded = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, rounded ? rounded : 64);
}

hrmt_status hrmt_model_pack_linear(hrmt_model *m, const float *w, size_t n, size_t k,
                                   hrmt_linear *out) {
#if defined(HRMT_HAVE_CUDA)
    if (m->ctx->backend_kind == HRMT_BACKEND_CUDA) return hrmt_cuda_model_linear(m, w, n, k, out);
#endif
    size_t numel;
    if (!hrmt_mul_ok(n, k, &numel))
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "linear %zux%zu", n, k);
    void *buf = (void *)w;
    if (m->dt == HRMT_BF16) {
        /* weight.to(bfloat16): the GEMM sees exactly the rounded weights. */
        buf = xalloc(numel * 2);
        if (!buf)
            return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "packing a %zux%zu weight", n, k);
        hrmt_model_store(m, buf, w, numel);
    }
    hrmt_tensor t;
    size_t shape[2] = {n, k};
    hrmt_status s = hrmt_tensor_init(&t, buf, m->dt, 2, shape);
    if (s == HRMT_OK) s = hrmt_gemm_pack_w(m->ctx, &t, &out->pw);
    if (buf != w) free(buf);
    if (s != HRMT_OK) return s;
    out->n = n;
    out->k = k;
    return HRMT_OK;
}

static void rope_tables(size_t T, size_t dim, double base, float *cos_t, float *sin_t) {
    /* RotaryEmbedding in F32: inv_freq = 1 / base^(arange(0, dim, 2) / dim),
     * freqs = outer(t, inv_freq), emb = cat(freqs, freqs). A row's halves
     * are equal bit for bit: the GPU attention reads only the first
     * (cuda/attn_rope.cuh). */
    size_t half = dim / 2;
    for (size_t t = 0; t < T; t++) {
        for (size_t i = 0; i < half; i++) {
            float e = (float)(2 * i) / (float)dim;
            float inv = 1.0f / powf((float)base, e);
            float f = (float)t * inv;
            float c = cosf(f), sn = sinf(f);
            cos_t[t * dim + i] = c;
            cos_t[t * dim + half + i] = c;
            sin_t[t * dim + i] = sn;
            sin_t[t * dim + half + i] = sn;
        }
    }
}

hrmt_status hrmt_model_init_rope(hrmt_model *m) {
    if (m->cfg.pos_encodings != HRMT_POS_ROPE) return HRMT_OK;
    m->rope_cos = xalloc(m->T * m->head_dim * sizeof(float));
    m->rope_sin = xalloc(m->T * m->head_dim * sizeof(float));
    if (!m->rope_cos || !m->rope_sin)
        return hrmt_fail(m->ctx, HRMT_ERR_OUT_OF_MEMORY, "rope tables");
    rope_tables(m->T, m->head_dim, m->cfg.rope_theta, m->rope_cos, m->rope_sin);
    return HRMT_OK;
}

/* The kernels the forward calls directly; a table without one cannot run the model. */
static hrmt_status check_kernels(hrmt_context *ctx, const hrmt_model_config *cfg) {
    const hrmt_rowops *k = &ctx->be->rowops;
    const hrmt_gemm_kernels *g = &ctx->be->gemm;
    const int d = (int)cfg->forward_dtype;
    /* A CUDA context runs the model's own GEMM, attention and embedding
     * kernels (src/cuda/model_*.cu) and only the row ops checked first. */
    const int cuda = ctx->backend_kind == HRMT_BACKEND_CUDA;
    const char *missing = !k->add[d] ? "add"
                          : !k->residual_rmsnorm_sram[d] || !k->residual_rmsnorm_dram[d]
                              ? "residual_rmsnorm"
                          : !k->swiglu[d]                                      ? "swiglu"
                          : cuda                                               ? NULL
                          : !k->softmax[HRMT_F32]                              ? "softmax"
                          : !k->embedding[d][d]                                ? "embedding"
                          : cfg->pos_encodings == HRMT_POS_ROPE && !k->rope[d] ? "rope"
                          : !g->f32.run || !g->f32.pack_a                      ? "gemm"
                                                                               : NULL;
    if (missing)
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED, "model: backend %s has no %s %s kernel",
                         ctx->be->name, hrmt_dtype_name(cfg->forward_dtype), missing);
    return HRMT_OK;
}

hrmt_status hrmt_model_shape(hrmt_context *ctx, const hrmt_model_config *cfg, hrmt_model *m) {
    hrmt_status s = hrmt_model_config_validate(ctx, cfg);
    if (s == HRMT_OK) s = check_kernels(ctx, cfg);
    if (s != HRMT_OK) return s;
    memset(m, 0, sizeof *m);
    m->ctx = ctx;
    m->cfg = *cfg;
    m->dt = cfg->forward_dtype;
    m->esz = hrmt_dtype_size(m->dt);
    m->hidden = (size_t)cfg->hidden_size;
    m->heads = (size_t)cfg->num_heads;
    m->head_dim = m->hidden / m->heads;
    m->inter = (size_t)hrmt_model_inter_size(cfg);
    m->vocab = (size_t)cfg->vocab_size;
    m->P = (size_t)hrmt_model_config_puzzle_len(cfg);
    m->seq = (size_t)cfg->seq_len;
    m->T = m->P + m->seq;
    return HRMT_OK;
}

hrmt_status hrmt_model_alloc(hrmt_context *ctx, const hrmt_model_config *cfg, hrmt_model **out) {
    hrmt_model *m = calloc(1, sizeof *m);
    if (!m) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "model: no memory for the handle");
    hrmt_status s = hrmt_model_shape(ctx, cfg, m);
    if (s != HRMT_OK) {
        free(m);
        return s;
    }
    m->H = calloc((size_t)cfg->H_layers, sizeof *m->H);
    m->L = calloc((size_t)cfg->L_layers, sizeof *m->L);
    m->embed_tokens = xalloc(m->vocab * m->hidden * m->esz);
    m->H_init = xalloc(m->hidden * m->esz);
    m->L_init = xalloc(m->hidden * m->esz);
    int ok = m->H && m->L && m->embed_tokens && m->H_init && m->L_init;
    if (ok && m->P) {
        size_t bytes = (size_t)cfg->num_puzzle_identifiers * m->P * m->hidden * m->esz;
        ok = (m->puzzle_emb = xalloc(bytes)) != NULL;
        if (ok) memset(m->puzzle_emb, 0, bytes); /* F.pad's zeros */
    }
    if (ok && cfg->pos_encodings == HRMT_POS_LEARNED)
        ok = (m->embed_pos = xalloc(m->T * m->hidden * m->esz)) != NULL;
    if (!ok) {
        hrmt_model_destroy(m);
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY,
                         "model: no memory for the embeddings (vocab_size %d x hidden_size %d, %d "
                         "puzzle ids); use a smaller config or free memory",
                         cfg->vocab_size, cfg->hidden_size, cfg->num_puzzle_identifiers);
    }
    if ((s = hrmt_model_init_rope(m)) != HRMT_OK) {
        hrmt_model_destroy(m);
        return s;
    }
    *out = m;
    return HRMT_OK;
}

static void linear_free(hrmt_model *m, hrmt_linear *l) {
#if defined(HRMT_HAVE_CUDA)
    if (l->dev) hrmt_cuda_linear_free(m, l);
#else
    (void)m;
#endif
    hrmt_packed_w_destroy(l->pw);
    l->pw = NULL;
}

static void blocks_free(hrmt_model *m, hrmt_block_weights *b, int n) {
    if (!b) return;
    for (int i = 0; i < n; i++) {
        linear_free(m, &b[i].qkv);
        linear_free(m, &b[i].o);
        linear_free(m, &b[i].gate_up);
        linear_free(m, &b[i].down);
    }
    free(b);
}

int hrmt_model_uses(const hrmt_model *m, hrmt_model_path p) {
#if defined(HRMT_HAVE_CUDA)
    return m && m->cu && hrmt_cuda_model_uses(m, p);
#else
    (void)m;
    (void)p;
    return 0;
#endif
}

void hrmt_model_destroy(hrmt_model *m) {
    if (!m) return;
#if defined(HRMT_HAVE_CUDA)
    hrmt_cuda_model_free(m);
#endif
    blocks_free(m, m->H, m->cfg.H_layers);
    blocks_free(m, m->L, m->cfg.L_layers);
    linear_free(m, &m->lm_head);
    linear_free(m, &m->q_head);
    free(m->embed_tokens);
    free(m->puzzle_emb);
    free(m->embed_pos);
    free(m->rope_cos);
    free(m->rope_sin);
    free(m->H_init);
    free(m->L_init);
    free(m);
}

const hrmt_model_config *hrmt_model_get_config(const hrmt_model *m) { return m ? &m->cfg : NULL; }
int hrmt_model_puzzle_len(const hrmt_model *m) { return m ? (int)m->P : 0; }

double hrmt_model_step_flops(const hrmt_model *m, int batch) {
    if (!m || batch <= 0) return 0.0;
    /* 2 * multiply-adds of every matrix product of one ACT step: per layer
     * call qkv, o_proj, gate_up, down_proj and the two attention products
     * (S = QK^T, O = PV, each T*T*head_dim per head); then lm_head over all
     * T rows (as computed; the prefix rows are dropped) and q_head on row 0. */
    double T = (double)m->T, h = (double)m->hidden, in = (double)m->inter;
    double per_row = h * 3 * h + h * h + h * 2 * in + in * h + 2.0 * T * h;
    double layer_calls =
        (double)m->cfg.H_cycles * ((double)m->cfg.L_cycles * m->cfg.L_layers + m->cfg.H_layers);
    double rows = (double)batch * T;
    double macs = rows * per_row * layer_calls + rows * h * (double)m->vocab + batch * h * 2.0;
    return 2.0 * macs;
}

/* ---- loading ------------------------------------------------------------ */

/* Loading runs twice over the same code: a check pass (`check` set) finds
 * every tensor the config needs and checks its shape and dtype without
 * reading or allocating anything, then the model is allocated and a read
 * pass converts and stores the weights. Every allocation therefore follows
 * from tensors that exist in the file with the config's shapes: a small file
 * whose metadata claims a huge architecture fails before any allocation. */
typedef struct loader {
    hrmt_model *m; /* check pass: a shell with the sizes and no buffers */
    hrmt_st_file *f;
    const char *where; /* "model file 'path'" */
    int check;
    unsigned flags;
    float *tmp; /* conversion buffer, grown on demand */
    size_t tmp_cap;
} loader;

/* The official state_dict names, as saved from the compiled ACT wrapper
 * (`_orig_mod.model.inner.`), from the wrapper (`model.inner.`), or bare. */
static const char *const k_prefixes[] = {"model.inner.", "_orig_mod.model.inner.", "_orig_mod.",
                                         ""};

/* Largest finite float that rounds to a finite bfloat16 (0x7f7f8000 rounds up
 * to Inf under round-to-nearest-even). */
#define BF16_FINITE_MAX 3.3895313892515355e38f

/* NaN/Inf in weights make every output NaN (an all-'.' prediction that looks
 * like an answer), so they are refused at load with the tensor and element. */
static hrmt_status check_finite(const loader *ld, const hrmt_st_tensor *t, const float *w) {
    if (ld->flags & HRMT_LOAD_ALLOW_NONFINITE) return HRMT_OK;
    const int bf16 = ld->m->dt == HRMT_BF16;
    for (size_t i = 0; i < t->numel; i++) {
        float v = w[i];
        int nonfinite = !isfinite(v);
        if (!nonfinite && !(bf16 && fabsf(v) > BF16_FINITE_MAX)) continue;
        char name[HRMT_ESCAPED_MAX];
        hrmt_text_escape_str(name, sizeof name, t->name);
        return hrmt_fail(ld->m->ctx, HRMT_ERR_NONFINITE,
                         "%s: tensor '%s' holds %s at element %zu of %zu%s; weights must be "
                         "finite (re-export the checkpoint, or load it anyway with "
                         "HRMT_LOAD_ALLOW_NONFINITE / hrmt run --allow-nonfinite-weights)",
                         ld->where, name,
                         isnan(v)    ? "NaN"
                         : nonfinite ? "Inf"
                                     : "a value",
                         i, t->numel, nonfinite ? "" : " that overflows bfloat16 to Inf");
    }
    return HRMT_OK;
}

/* Finds `name` under any accepted prefix and checks its shape and dtype; in
 * the read pass returns it as F32 in ld->tmp (NULL in the check pass). */
static hrmt_status fetch(loader *ld, const char *name, int ndim, const size_t *shape,
                         const float **out) {
    hrmt_context *ctx = ld->m->ctx;
    const hrmt_st_tensor *t = NULL;
    *out = NULL;
    char full[512];
    for (size_t i = 0; i < sizeof k_prefixes / sizeof k_prefixes[0] && !t; i++) {
        snprintf(full, sizeof full, "%s%s", k_prefixes[i], name);
        t = hrmt_st_find(ld->f, full);
    }
    /* Each failure returns its code as a constant (hrmt_fail's value is the
     * same), so analysers see that *out is set exactly on success. */
    if (!t) {
        hrmt_fail(ctx, HRMT_ERR_MISSING_TENSOR,
                  "%s lacks tensor 'model.inner.%s' (also tried the _orig_mod. forms and the bare "
                  "name); is it an HRM checkpoint for this config?",
                  ld->where, name);
        return HRMT_ERR_MISSING_TENSOR;
    }
    char tname[HRMT_ESCAPED_MAX];
    hrmt_text_escape_str(tname, sizeof tname, t->name);
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char want[96] = "", got[96] = "";
        size_t wl = 0, gl = 0;
        for (int i = 0; i < ndim && wl < sizeof want - 24; i++)
            wl += (size_t)snprintf(want + wl, sizeof want - wl, "%s%zu", i ? ", " : "", shape[i]);
        for (int i = 0; i < t->ndim && gl < sizeof got - 24; i++)
            gl += (size_t)snprintf(got + gl, sizeof got - gl, "%s%zu", i ? ", " : "", t->shape[i]);
        hrmt_fail(ctx, HRMT_ERR_TENSOR_SHAPE,
                  "%s: tensor '%s' has shape [%s] but the config needs [%s]; the config (--config "
                  "or the file's metadata) does not describe this file",
                  ld->where, tname, got, want);
        return HRMT_ERR_TENSOR_SHAPE;
    }
    if (t->dtype != HRMT_F32 && t->dtype != HRMT_BF16) {
        hrmt_fail(ctx, HRMT_ERR_DTYPE, "%s: tensor '%s' is %s; weights must be F32 or BF16",
                  ld->where, tname, hrmt_dtype_name(t->dtype));
        return HRMT_ERR_DTYPE;
    }
    if (ld->check) return HRMT_OK;
    if (t->numel > ld->tmp_cap) {
        /* At most the tensor's bytes in the file, times 2 for BF16. */
        float *nb = realloc(ld->tmp, t->numel * sizeof(float));
        if (!nb) {
            hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "%s: no memory to convert tensor '%s'",
                      ld->where, tname);
            return HRMT_ERR_OUT_OF_MEMORY;
        }
        ld->tmp = nb;
        ld->tmp_cap = t->numel;
    }
    hrmt_status s = hrmt_st_read_f32(ctx, ld->f, t, ld->tmp);
    if (s == HRMT_OK) s = check_finite(ld, t, ld->tmp);
    if (s != HRMT_OK) return s;
    *out = ld->tmp;
    return HRMT_OK;
}

static hrmt_status load_linear(loader *ld, const char *name, size_t n, size_t k, hrmt_linear *l) {
    const float *w = NULL;
    size_t shape[2] = {n, k};
    hrmt_status s = fetch(ld, name, 2, shape, &w);
    if (s != HRMT_OK || ld->check) return s;
    return hrmt_model_pack_linear(ld->m, w, n, k, l);
}

static hrmt_status load_blocks(loader *ld, const char *level, hrmt_block_weights *b, int n) {
    hrmt_model *m = ld->m;
    char name[160];
    hrmt_status s = HRMT_OK;
    /* The check pass has no block array: it only needs the names. */
    hrmt_block_weights none;
    memset(&none, 0, sizeof none);
    for (int i = 0; i < n && s == HRMT_OK; i++) {
        hrmt_block_weights *bi = b ? &b[i] : &none;
        snprintf(name, sizeof name, "%s.layers.%d.self_attn.qkv_proj.weight", level, i);
        if ((s = load_linear(ld, name, 3 * m->hidden, m->hidden, &bi->qkv)) != HRMT_OK) break;
        snprintf(name, sizeof name, "%s.layers.%d.self_attn.o_proj.weight", level, i);
        if ((s = load_linear(ld, name, m->hidden, m->hidden, &bi->o)) != HRMT_OK) break;
        snprintf(name, sizeof name, "%s.layers.%d.mlp.gate_up_proj.weight", level, i);
        if ((s = load_linear(ld, name, 2 * m->inter, m->hidden, &bi->gate_up)) != HRMT_OK) break;
        snprintf(name, sizeof name, "%s.layers.%d.mlp.down_proj.weight", level, i);
        s = load_linear(ld, name, m->hidden, m->inter, &bi->down);
    }
    return s;
}

static hrmt_status load_all(loader *ld) {
    hrmt_model *m = ld->m;
    const hrmt_model_config *c = &m->cfg;
    const float *w = NULL;
    hrmt_status s;
    size_t sh[2];

    sh[0] = m->vocab, sh[1] = m->hidden;
    if ((s = fetch(ld, "embed_tokens.embedding_weight", 2, sh, &w)) != HRMT_OK) return s;
    if (w) hrmt_model_store(m, m->embed_tokens, w, m->vocab * m->hidden);
    if (m->P) {
        size_t ndim = (size_t)c->puzzle_emb_ndim, pw = m->P * m->hidden;
        sh[0] = (size_t)c->num_puzzle_identifiers, sh[1] = ndim;
        if ((s = fetch(ld, "puzzle_emb.weights", 2, sh, &w)) != HRMT_OK) return s;
        for (size_t r = 0; w && r < sh[0]; r++)
            hrmt_model_store(m, (char *)m->puzzle_emb + r * pw * m->esz, w + r * ndim, ndim);
    }
    if (c->pos_encodings == HRMT_POS_LEARNED) {
        sh[0] = m->T, sh[1] = m->hidden;
        if ((s = fetch(ld, "embed_pos.embedding_weight", 2, sh, &w)) != HRMT_OK) return s;
        if (w) hrmt_model_store(m, m->embed_pos, w, m->T * m->hidden);
    }
    sh[0] = m->hidden;
    if ((s = fetch(ld, "H_init", 1, sh, &w)) != HRMT_OK) return s;
    if (w) hrmt_model_store(m, m->H_init, w, m->hidden);
    if ((s = fetch(ld, "L_init", 1, sh, &w)) != HRMT_OK) return s;
    if (w) hrmt_model_store(m, m->L_init, w, m->hidden);
    sh[0] = 2;
    if ((s = fetch(ld, "q_head.bias", 1, sh, &w)) != HRMT_OK) return s;
    for (int i = 0; w && i < 2; i++)
        m->q_bias[i] = m->dt == HRMT_BF16 ? hrmt_round_bf16(w[i]) : w[i];
    if ((s = load_linear(ld, "q_head.weight", 2, m->hidden, &m->q_head)) != HRMT_OK) return s;
    if ((s = load_linear(ld, "lm_head.weight", m->vocab, m->hidden, &m->lm_head)) != HRMT_OK)
        return s;
    if ((s = load_blocks(ld, "H_level", m->H, c->H_layers)) != HRMT_OK) return s;
    return load_blocks(ld, "L_level", m->L, c->L_layers);
}

/* The config from the file's __metadata__ "arch" entry. */
static hrmt_status config_from_metadata(hrmt_context *ctx, const hrmt_st_file *f, const char *where,
                                        hrmt_model_config *out) {
    const char *arch = hrmt_st_metadata(f, "arch");
    if (!arch)
        return hrmt_fail(ctx, HRMT_ERR_CONFIG,
                         "%s has no \"arch\" entry in __metadata__; pass a config (--config "
                         "arch.json)",
                         where);
    char what[HRMT_ESCAPED_MAX + 64];
    snprintf(what, sizeof what, "in %s __metadata__ \"arch\"", where);
    return hrmt_model_config_from_json_text(ctx, arch, strlen(arch), what, out);
}

hrmt_status hrmt_model_load_ex(hrmt_context *ctx, const char *path, const hrmt_model_config *cfg,
                               unsigned flags, hrmt_model **out) {
    if (!ctx || !path || !out)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "model load: NULL argument");
    if (flags & ~(unsigned)HRMT_LOAD_ALLOW_NONFINITE)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "model load: unknown flags 0x%x", flags);
    char where[HRMT_ESCAPED_MAX + 16], e[HRMT_ESCAPED_MAX];
    snprintf(where, sizeof where, "model file '%s'", hrmt_text_escape_str(e, sizeof e, path));
    hrmt_st_file *f = NULL;
    hrmt_status s = hrmt_st_open_lazy(ctx, path, &f);
    if (s != HRMT_OK) return s;
    hrmt_model_config from_meta = hrmt_model_config_default(); /* overwritten on success */
    if (!cfg) {
        if ((s = config_from_metadata(ctx, f, where, &from_meta)) != HRMT_OK) {
            hrmt_st_close(f);
            return s;
        }
        cfg = &from_meta;
    }
    /* Check pass on a shell that has the sizes but no buffers. */
    hrmt_model shell;
    if ((s = hrmt_model_shape(ctx, cfg, &shell)) == HRMT_OK) {
        loader chk = {&shell, f, where, 1, flags, NULL, 0};
        s = load_all(&chk);
    }
    hrmt_model *m = NULL;
    if (s == HRMT_OK && (s = hrmt_model_alloc(ctx, cfg, &m)) == HRMT_OK && !m)
        s = HRMT_ERR_OUT_OF_MEMORY;
    if (s == HRMT_OK) {
        loader ld = {m, f, where, 0, flags, NULL, 0};
        s = load_all(&ld);
        free(ld.tmp);
    }
    hrmt_st_close(f);
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

hrmt_status hrmt_model_load(hrmt_context *ctx, const char *path, const hrmt_model_config *cfg,
                            hrmt_model **out) {
    return hrmt_model_load_ex(ctx, path, cfg, HRMT_LOAD_DEFAULT, out);
}
