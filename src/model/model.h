/* HRM model internals shared by the files of src/model/ (the public API is in hrmt.h).
 *
 * Activations are stored in the forward dtype (BF16 as uint16_t bit patterns,
 * or F32), row-major [rows, width] where a sample owns T = P + seq_len
 * consecutive rows. Every op is row-independent and the GEMM result for a row
 * does not depend on the other rows of the call, so running the L-level per
 * tile of samples (tiered) or over the whole batch (baseline) gives the same
 * bits. */
#ifndef HRMT_MODEL_MODEL_H
#define HRMT_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "core/context.h"
#include "hrmt.h"

/* A linear layer y = x W^T, W [n, k] packed once for the context's GEMM. */
typedef struct hrmt_linear {
    hrmt_packed_w *pw;
    void *dev; /* CUDA contexts: W [n, k] on the device instead of pw */
    size_t n, k;
} hrmt_linear;

typedef struct hrmt_block_weights {
    hrmt_linear qkv, o, gate_up, down;
} hrmt_block_weights;

struct hrmt_model {
    hrmt_context *ctx;
    hrmt_model_config cfg;
    hrmt_dtype dt; /* forward dtype */
    size_t esz;    /* its element size */
    size_t hidden, heads, head_dim, inter, vocab;
    size_t P, seq, T;           /* prefix rows, token rows, T = P + seq */
    void *embed_tokens;         /* [vocab, hidden] */
    void *puzzle_emb;           /* [num_ids, P*hidden], zero padded; NULL when P == 0 */
    void *embed_pos;            /* [T, hidden]; learned positions only */
    float *rope_cos, *rope_sin; /* [T, head_dim]; rope only */
    void *H_init, *L_init;      /* [hidden] */
    float q_bias[2];            /* rounded to the forward dtype */
    hrmt_linear lm_head, q_head;
    hrmt_block_weights *H, *L;  /* H_layers / L_layers blocks */
    struct hrmt_model_cuda *cu; /* CUDA contexts: device tables (src/cuda/) */
};

/* Scratch for a level run over `rows` rows (one sample tile or the batch). */
typedef struct hrmt_level_ws {
    void *qkv;   /* [rows, 3*hidden] */
    void *att;   /* [rows, hidden] attention output (pre o_proj) */
    void *proj;  /* [rows, hidden] o_proj / down_proj output */
    void *gu;    /* [rows, 2*inter] */
    void *act;   /* [rows, inter] */
    float *attn; /* per-thread attention scratch, attn_stride floats each */
    size_t attn_stride;
    int threads; /* team size of this workspace's kernels (1 inside a tile-parallel region) */
    void *gemm_scratch; /* GEMM packing scratch (carry-owned, DRAM) */
    size_t gemm_scratch_bytes;
    double *part_us; /* hrmt_step_timing.part_us of the running step, or NULL: not timed */
} hrmt_level_ws;

struct hrmt_carry {
    hrmt_model *m;
    int batch;
    void *zH, *zL; /* [B*T, hidden] */
    int32_t *steps, *halted;
    int32_t *inputs;            /* current data [B, seq] */
    int32_t *puzzle_ids;        /* [B] */
    void *x;                    /* input embeddings [B*T, hidden] */
    void *inj;                  /* injection [B*T, hidden] */
    void *logits;               /* [B*T, vocab] */
    float *q;                   /* [B, 2] */
    hrmt_level_ws ws;           /* sized for the whole batch */
    void *block;                /* one DRAM-tier allocation behind all buffers above */
    char tier_name[48];         /* its name in the context's tier manager */
    struct hrmt_carry_cuda *cu; /* CUDA contexts: device state (src/cuda/); steps,
                                   halted and q above are host mirrors */
};

/* config.c */
int hrmt_model_inter_size(const hrmt_model_config *c);
int hrmt_model_config_puzzle_len(const hrmt_model_config *c);
hrmt_status hrmt_model_config_from_json_text(hrmt_context *ctx, const char *text, size_t len,
                                             const char *what, hrmt_model_config *out);

/* weights.c: validates cfg and fills m's sizes (no buffers; m is overwritten). */
hrmt_status hrmt_model_shape(hrmt_context *ctx, const hrmt_model_config *cfg, hrmt_model *m);
/* Allocates the model shell (sizes and buffers, no weights yet). */
hrmt_status hrmt_model_alloc(hrmt_context *ctx, const hrmt_model_config *cfg, hrmt_model **out);
/* Converts an F32 [n, k] matrix to the forward dtype and packs it. */
hrmt_status hrmt_model_pack_linear(hrmt_model *m, const float *w, size_t n, size_t k,
                                   hrmt_linear *out);
/* Fills RoPE tables (rope models) after the config is set. */
hrmt_status hrmt_model_init_rope(hrmt_model *m);
/* The optional CUDA kernels a model may run in place of launches with the
 * same bits; the tests ask which a model runs so that they know which path
 * their comparison checked. */
typedef enum hrmt_model_path {
    HRMT_PATH_FUSED_GLU,     /* gate_up + SwiGLU as one kernel (src/cuda/sm90a/glu_wgmma.cu) */
    HRMT_PATH_FUSED_NORM,    /* o_proj / down_proj + residual + RMSNorm (proj_norm_wgmma.cu) */
    HRMT_PATH_NORM_PROLOGUE, /* residual + RMSNorm as the next GEMM's prologue (ring_norm_gemm.cuh)
                              */
    HRMT_PATH_CLUSTER_NORM,  /* the projections + norm over a cluster (cluster_norm_wgmma.cu) */
    HRMT_PATH_FUSED_HEADS,   /* lm_head, q_head and the ACT finish as one kernel (model_heads.cu) */
    HRMT_PATH_QKV_ATTN,      /* qkv + attention over a cluster (sm90a/qkv_attn_wgmma.cu) */
    HRMT_PATH_GEMM_TUNE_EXACT, /* block GEMMs tuned at each step's M (model_gemm_tune.cu) */
    HRMT_PATH_PINNED_IO,       /* a step's transfers through page-locked staging (model_step.cu) */
    HRMT_PATH_FUSED_RESET,   /* reset of halted samples + embedding as one kernel (model_kernels.cu)
                              */
    HRMT_PATH_FOLD_INJECT,   /* level injections folded into the kernel before (model_step.cu) */
    HRMT_PATH_GLU_FAST_SILU, /* the fused gate_up's s(g) without the table (sm90a/silu_fast.cuh) */
    HRMT_PATH_NORM_VEC,      /* residual + RMSNorm with 16-byte accesses (rowops_norm.cu) */
    HRMT_PATH_ATTN_ROPE_ONCE, /* attention's K and Q rotated from one factor load (attn_rope.cuh) */
    HRMT_PATH_GLU_MUL,        /* the fused gate_up's s(g) u by mul.rn.bf16x2 (silu_fast.cuh) */
    HRMT_PATH_CLUSTER_NORM_PUSH,   /* the cluster projection + norm's exchanges pushed into
                                      byte-counted barriers (cluster_async.cuh) */
    HRMT_PATH_QKV_ATTN_PUSH,       /* qkv + attention's pushes likewise (qkv_attn_wgmma.cu) */
    HRMT_PATH_ROPE_EARLY,          /* qkv + attention's RoPE factors loaded before the products */
    HRMT_PATH_RING_KB,             /* the cluster projection + norm's ring (or the cluster
                                      qkv + attention's) copying two or four k blocks at a
                                      time (HRMT_CUDA_RING_KB) */
    HRMT_PATH_QKV_ATTN_CTA_W1,     /* qkv + attention's CTA form's ring copying W's q, k and
                                      v rows of a stage at once */
    HRMT_PATH_GLU_WRES3,           /* the W-resident gate_up as 64-row tiles over three
                                      consumer warpgroups (sm90a/ring_wres.cuh) */
    HRMT_PATH_GLU_WRES_TSTORE,     /* the W-resident gate_up's three-warpgroup form with
                                      TMA-stored act tiles among the tuner's shapes */
    HRMT_PATH_QKV_ATTN_PAIR,       /* qkv + attention over a pair of CTAs per (sample, head)
                                      (sm90a/qkv_attn_pair_wgmma.cu) */
    HRMT_PATH_CLUSTER_NORM_OWNER,  /* the cluster projection + norm's rows normalised and
                                      stored by the CTA that computes their inv */
    HRMT_PATH_QKV_ATTN_BULK,       /* the cluster and pair qkv + attention's pushes as
                                      copy-engine transfers (sm90a/push_plan.cuh) */
    HRMT_PATH_CLUSTER_NORM_OWNER8, /* the cluster projection + norm's owned rows over all
                                      eight of a CTA's warps (in its clusters of 8) */
    HRMT_PATH_ATTN_DESCEND,        /* the register attention kernel's samples in descending order */
    HRMT_PATH_NORM_DESCEND, /* the block's residual + RMSNorm kernel's rows in descending order */
    HRMT_PATH_NORM_STREAM,  /* the 16-byte norm kernel's loads as streaming (evict-first) data */
    HRMT_PATH_ATTN_STREAM,  /* the register attention kernel's q, k, v copies evict-first in L2 */
    HRMT_PATH_TILE_LINKS    /* the tiered tile's copies and injections fused (model_inject.cu) */
} hrmt_model_path;
/* 1 when the CUDA model m runs path p; 0 otherwise, and in CPU-only builds. */
int hrmt_model_uses(const hrmt_model *m, hrmt_model_path p);
/* Stores an F32 vector/matrix of `n` values in the forward dtype at `dst`. */
void hrmt_model_store(const hrmt_model *m, void *dst, const float *src, size_t n);

/* Bytes of level scratch per row and the fixed per-thread attention part. */
size_t hrmt_level_ws_row_bytes(const hrmt_model *m);
size_t hrmt_level_ws_attn_floats(const hrmt_model *m);
/* Points ws at consecutive regions of `base` (rows rows, `threads` attention
 * scratches); returns the bytes used, 64-byte aligned pieces. */
size_t hrmt_level_ws_layout(const hrmt_model *m, size_t rows, int threads, void *base,
                            hrmt_level_ws *ws);

/* forward.c */
/* Input embeddings of samples [s0, s0+n) into x rows. */
void hrmt_embed(const hrmt_model *m, const int32_t *inputs, const int32_t *puzzle_ids, size_t n,
                void *x);
/* z = layers(z + inj) over n samples (rows n*T). sram selects the row-op
 * variants meant for a cache-resident tile (same bits either way). */
hrmt_status hrmt_level(const hrmt_model *m, const hrmt_block_weights *blocks, int nlayers, void *z,
                       const void *inj, size_t n, const hrmt_level_ws *ws, int sram);
/* One attention over n samples: qkv [n*T, 3*hidden] -> att [n*T, hidden]. */
void hrmt_attention(const hrmt_model *m, void *qkv, void *att, size_t n, const hrmt_level_ws *ws);
/* The same after RoPE on qkv's Q and K (in place) for rope models: a block's
 * rope + attention in one pass per (sample, head). */
void hrmt_rope_attention(const hrmt_model *m, void *qkv, void *att, size_t n,
                         const hrmt_level_ws *ws);
/* out = a + b over rows rows of hidden width. */
void hrmt_rows_add(const hrmt_model *m, const void *a, const void *b, void *out, size_t rows);
/* y = x W^T over rows rows (GEMM); x in the forward dtype, y in ydt. Uses
 * ws's GEMM scratch when it is large enough. */
hrmt_status hrmt_linear_apply(const hrmt_model *m, const hrmt_linear *l, const void *x, size_t ldx,
                              void *y, size_t ldy, hrmt_dtype ydt, size_t rows,
                              const hrmt_level_ws *ws);
/* GEMM scratch bytes a step over `rows`-row calls (and `tile_rows` tiles) needs. */
size_t hrmt_model_gemm_scratch(const hrmt_model *m, size_t rows, size_t tile_rows, size_t batch,
                               int threads);

/* schedule.c */
/* How the tiered schedule cuts a batch: samples per tile, and whether tiles
 * run concurrently (one per thread, single-threaded kernels) or one after
 * another (team-parallel kernels). */
#define HRMT_MAX_TILE_TEAM 64 /* larger teams run tiles in turn */
typedef struct hrmt_tiling {
    size_t samples, tiles;
    int parallel;
    int team; /* threads */
} hrmt_tiling;
hrmt_tiling hrmt_tiling_for(const hrmt_model *m, int batch);
hrmt_status hrmt_inner_forward(hrmt_model *m, hrmt_carry *c, hrmt_schedule sched,
                               hrmt_step_timing *tm);

#endif
