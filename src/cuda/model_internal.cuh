/* Shared by src/cuda/model_*.cu: the device-side model and carry, and the
 * model's own kernels (deterministic GEMM, attention, small step kernels). */
#ifndef HRMT_CUDA_MODEL_INTERNAL_CUH
#define HRMT_CUDA_MODEL_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda/cuda_backend.h"
#include "cuda/model_cuda.h"

#include <cublasLt.h>

/* Row buckets of the tuned algorithms: bucket b serves rows <= 128 << b,
 * the last one every M above too. */
#define CU_LT_BUCKETS 8
/* The bucket of a call of `rows` rows among the first n (n >= 1). */
static inline int cu_row_bucket(size_t rows, int n) {
    int b = 0;
    while (b < n - 1 && rows > ((size_t)128 << b)) b++;
    return b;
}

/* A block GEMM shape served by cuBLASLt with one pinned algorithm
 * (model_gemm.cu): descriptor and W layout made once, A and C layouts per
 * call on the stack (they carry M). small[b]: the fastest algorithm found at
 * load for bucket b among those that give the pinned algorithm's bits
 * (model_gemm_tune.cu); nsmall 0: the pinned one for every M. own[b]: 1 +
 * the sm90a/gemm_wgmma.cu shape that serves bucket b instead (same bits,
 * faster there), 0: cuBLASLt. */
typedef struct cu_lt_slot {
    size_t n, k, lda, ldc;
    cublasLtMatmulDescOpaque_t desc;
    cublasLtMatrixLayoutOpaque_t lw;
    cublasLtMatmulAlgo_t algo;
    size_t ws; /* workspace the algorithm needs */
    cublasLtMatmulAlgo_t small[CU_LT_BUCKETS];
    int nsmall;
    signed char own[CU_LT_BUCKETS];
} cu_lt_slot;

#define CU_LT_SLOTS 4
#define CU_LT_GATE_UP 2 /* the slots: qkv, o, gate_up, down */

/* A [M, k] and C [M, n] layouts of a slot's call with M rows: C^T [n, M] =
 * W [n, k] A^T [k, M] in column-major terms (gemm_cublaslt.cu). */
static inline cublasStatus_t cu_lt_layouts(const cu_lt_slot *sl, uint64_t M,
                                           cublasLtMatrixLayoutOpaque_t *la,
                                           cublasLtMatrixLayoutOpaque_t *lc) {
    cublasStatus_t st = cublasLtMatrixLayoutInit(la, CUDA_R_16BF, sl->k, M, sl->lda);
    if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutInit(lc, CUDA_R_16BF, sl->n, M, sl->ldc);
    return st;
}

/* The tuner's picks at one step's exact M (cu_gemm_tune_rows): per slot's
 * cuBLASLt algorithm and own GEMM shape, and the fused gate_up's shape (1 +
 * it; 0 untuned);
 * tuned 0: the device could not spare the scratch, the buckets serve. */
#define CU_EXACT 4
typedef struct cu_exact_pick {
    size_t rows;
    int tuned;
    cublasLtMatmulAlgo_t algo[CU_LT_SLOTS];
    signed char own[CU_LT_SLOTS]; /* 1 + the own GEMM shape (gemm_wgmma.cu); 0: cuBLASLt */
    signed char glu_shape;
} cu_exact_pick;

/* Device copies of the model's tables (forward dtype; rope F32). */
struct hrmt_model_cuda {
    void *embed_tokens, *puzzle_emb, *embed_pos, *H_init, *L_init;
    float *rope_cos, *rope_sin;
    cu_lt_slot lt[CU_LT_SLOTS]; /* BF16 block GEMMs on cuBLASLt; nlt 0: own kernel */
    int nlt;
    int l_persist;                        /* the tiered schedule runs model_l_persist.cu's kernel */
    int glu;                              /* 1: gate_up + SwiGLU fused (sm90a/glu_wgmma.cu) */
    signed char glu_shape[CU_LT_BUCKETS]; /* 1 + its tile shape per row bucket; 0: untuned */
    int glu_slut;                         /* HRMT_CUDA_GLU_SMEM_TABLE: table window in smem */
    int glu_fast;                         /* HRMT_CUDA_GLU_FAST_SILU: s(g) without the table */
    int norm_vec;                         /* HRMT_CUDA_NORM_VEC: the 16-byte norm kernel */
    int norm_descend;  /* HRMT_CUDA_NORM_DESCEND: the norm kernel's rows last first */
    int norm_stream;   /* HRMT_CUDA_NORM_STREAM: the 16-byte norm's loads evict-first */
    int glu_mul;       /* HRMT_CUDA_GLU_MUL: SwiGLU's product by mul.bf16x2 */
    int glu_wres;      /* HRMT_CUDA_GLU_WRES: the tuner times the W-resident gate_up shape */
    int glu_wres3;     /* HRMT_CUDA_GLU_WRES3: ... as 64-row tiles over three consumer warpgroups */
    int glu_wres_ts;   /* HRMT_CUDA_GLU_WRES_TSTORE: the tuner times its TMA-storing form */
    int pin_io;        /* HRMT_CUDA_PINNED_IO: a step's transfers through page-locked staging */
    int fused_reset;   /* HRMT_CUDA_FUSED_RESET: reset + embedding as one kernel */
    int fold_inject;   /* HRMT_CUDA_FOLD_INJECT: injections folded into the kernel before */
    int profile_steps; /* HRMT_CUDA_PROFILE_STEPS: each step's device work in a profiler range */
    int tune_exact;    /* the step's own M tuned (cu_gemm_tune_rows) */
    cu_exact_pick exact[CU_EXACT]; /* ... the last CU_EXACT of them */
    unsigned exact_made;           /* picks made: the next goes to % CU_EXACT */
    struct hrmt_tune_file *tcache; /* HRMT_CUDA_GEMM_TUNE_CACHE's picks (NULL: unset) */
    int pnorm;      /* HRMT_CUDA_FUSED_NORM: clusters of the projection + norm kernel */
    int pdl;        /* HRMT_CUDA_PDL: own block kernels by programmatic dependent launch */
    int npro;       /* HRMT_CUDA_NORM_PROLOGUE: residual + RMSNorm in the next GEMM's prologue */
    int inject;     /* HRMT_CUDA_FUSED_INJECT: a level's input injection as one kernel */
    int tile_links; /* HRMT_CUDA_TILE_LINKS: the tiered tile's copies and injections fused */
    int cnorm;      /* HRMT_CUDA_CLUSTER_NORM: projection + residual + RMSNorm over a cluster */
    int cnorm_push; /* HRMT_CUDA_CLUSTER_NORM_PUSH: its norm's exchanges by st.async / bulk copy */
    int cnorm_own;  /* HRMT_CUDA_CLUSTER_NORM_OWNER: with the pushes, each row normalised and
                       stored by the CTA that computes its inv */
    int cnorm_own8; /* HRMT_CUDA_CLUSTER_NORM_OWNER8: the owned rows over all eight warps */
    int cnorm_kb;   /* HRMT_CUDA_RING_KB: k blocks a TMA copy in its ring (1, 2, 4) */
    int qa_cta_w1;  /* HRMT_CUDA_QKV_ATTN_CTA_W1: the CTA form's W q, k, v rows one copy a stage */
    int qa_push;    /* HRMT_CUDA_QKV_ATTN_PUSH: qkv + attention's pushes by st.async */
    int qa_bulk;    /* HRMT_CUDA_QKV_ATTN_BULK: those pushes as copy-engine transfers */
    int qp_bulk;    /* ... and the pair form's */
    int qa_kb;      /* HRMT_CUDA_RING_KB: k blocks a TMA copy in the cluster form's ring */
    int rope_early; /* HRMT_CUDA_ROPE_EARLY: both qkv + attention kernels load RoPE factors early */
    int cnorm16_max;    /* ... of 16 CTAs up to this many 64-row tiles (cu_cluster_norm_ctas) */
    int cnorm8_max;     /* ... then of 8 CTAs up to this many */
    int attn_teams;     /* HRMT_CUDA_ATTN_TEAMS: small batches' query tiles shared by warp teams */
    int attn_rope_once; /* HRMT_CUDA_ATTN_ROPE_ONCE: K and Q rotated from one factor load */
    int attn_descend;   /* HRMT_CUDA_ATTN_DESCEND: the register kernel's samples last first */
    int attn_stream;    /* HRMT_CUDA_ATTN_STREAM: its q, k, v copies evict-first in L2 */
    int heads;       /* HRMT_CUDA_FUSED_HEADS: lm_head, q_head and the ACT finish as one kernel */
    int qa;          /* HRMT_CUDA_QKV_ATTN: qkv + attention as one kernel (a form below) */
    int qa_clusters; /* ... a cluster per (sample, head) while the pairs fit this many */
    int qa_pairs;    /* ... then two CTAs per pair while they fit this many clusters (0: off) */
    int qa_ctas;     /* ... then one CTA per pair while they fit this many CTAs (0: off) */
    int grid;        /* baseline levels as model_grid.cu's kernel: 0 off, 1 on, 2 small batches */
    int grid_tile;   /* its GEMM unit: 0 by M, 1 small, 2 large */
    unsigned long long *grid_trace; /* HRMT_CUDA_GRID_TRACE=1: per-stage times (device) */
    int branches;    /* HRMT_CUDA_BRANCHES: parallel graph branches asked for (model_branch.cu) */
    void *lt_ws_now; /* cuBLASLt workspace of the branch being captured; NULL: the context's */
};

/* Level scratch on the device, [rows, width] each. */
typedef struct cu_level_ws {
    void *qkv, *att, *proj, *gu, *act;
    void *hn; /* [rows, hidden]: the block's state after its first norm, when that norm is
                 another kernel's prologue (it cannot be written in place there) */
} cu_level_ws;

/* One timed stretch of device work: events [e0, e1) and what it was. */
enum { SEG_L = 0, SEG_H, SEG_IN, SEG_OUT };
typedef struct cu_seg {
    int e0, e1, kind;
    size_t bytes; /* transfers: bytes moved */
} cu_seg;

struct hrmt_carry_cuda {
    void *block; /* one device allocation behind every device buffer below */
    void *zH, *zL, *x, *inj, *logits;
    float *q;
    int32_t *steps, *halted, *inputs, *pids, *new_inputs, *new_pids;
    cu_level_ws ws; /* whole batch */
    unsigned *bar;  /* grid barrier counters, one per grid-level launch of a step */
    int nbranch;    /* the baseline's levels as this many parallel graph branches */
    void *lt_ws;    /* nbranch - 1 cuBLASLt workspaces, one per branch after the first */
    int nbar;
    void *tz, *tinj;     /* the tiered schedule's tile state */
    size_t tile_samples; /* tile size the tile buffers were made for */
    void *host;          /* download staging of z_H / z_L, grown on demand */
    size_t host_bytes;
    /* Page-locked staging of a step's small transfers (model_mem.cu): the
     * logits (pin_logits bytes: to q on the device, 0 when too large to
     * pin) and q, steps, halted (pin_state bytes), adjacent as on the
     * device, then the inputs' upload (cu_upload_bytes with puzzle ids). Copies from and to
     * it are asynchronous, so the upload is a node of the step's graph and
     * the download (one copy) queues behind the step: one wait per step.
     * NULL when the host refused it: the copies are then synchronous, same
     * results. */
    void *pin;
    size_t pin_state, pin_logits;
    cudaEvent_t *ev; /* event pool, grown on demand */
    int nev, evcap;
    /* The timeline's events are recorded on a side stream that waits for the
     * step's stream (fork) and rejoins it at the step's end (model_step.cu):
     * an event between two kernels of the step would cut their programmatic
     * (PDL) edge; made on first use. */
    cudaStream_t side;
    cudaEvent_t fork, join;
    cu_seg *seg;
    int nseg, segcap;
    /* The step as a CUDA graph (model_step.cu), made for one key (schedule,
     * early_halt, puzzle ids given) and replayed while the key holds; its
     * timeline events and segments stay as recorded at capture. */
    cudaGraphExec_t graph;
    int graph_key;             /* -1: none */
    int capturing;             /* events become external graph nodes */
    hrmt_step_timing graph_tm; /* the step's call counts, from the capture */
};

static inline cudaStream_t cu_stream(const hrmt_model *m) {
    return (cudaStream_t)hrmt_cuda_stream(m->ctx->cuda);
}
static inline struct hrmt_model_cuda *cu_model(const hrmt_model *m) {
    return (struct hrmt_model_cuda *)m->cu;
}
static inline struct hrmt_carry_cuda *cu_carry(const hrmt_carry *c) {
    return (struct hrmt_carry_cuda *)c->cu;
}
/* A step's inputs as they cross the bus: the inputs, then (has_pids) the
 * alignment gap and the puzzle ids, adjacent on the device (model_mem.cu). */
static inline size_t cu_upload_bytes(const struct hrmt_carry_cuda *g, size_t B, size_t seq,
                                     int has_pids) {
    return has_pids ? (size_t)((char *)g->new_pids - (char *)g->new_inputs) + B * 4 : B * seq * 4;
}

/* model_branch.cu: reads HRMT_CUDA_BRANCHES at model load (1, the default,
 * to CU_MAX_BRANCHES); anything else is INVALID_ARG. */
#define CU_MAX_BRANCHES 4
hrmt_status cu_branch_setting(hrmt_model *m);
/* How many parallel branches a captured baseline step of batch B runs its
 * levels as (1: none). */
int cu_branch_count(const hrmt_model *m, size_t B);

/* Maps a CUDA status into the context (message "<what>: <cuda text>"). */
hrmt_status cu_fail(hrmt_context *ctx, cudaError_t e, const char *what);
#ifdef HRMT_CUDA_LINK_TRACE
/* link_trace.cu: each step's pdl_wait() records (a development build). */
hrmt_status cu_link_trace_begin(hrmt_model *m);
hrmt_status cu_link_trace_end(hrmt_model *m, size_t batch);
#endif
/* The pending launch error of `what`, if any, through hrmt_cuda_check. */
hrmt_status cu_check(hrmt_context *ctx, const char *what);

/* model_gemm.cu: C[m, n] = A[m, k] W[n, k]^T in the forward dtype `dt` (A, W),
 * C in cdt (BF16 rounded once). Each C element is one F32 chain over k in
 * ascending order (BF16: m16n16k16 tensor-core steps in ascending k), the same
 * for every m, so a row's bits never depend on the other rows of the call. */
hrmt_status cu_gemm(const hrmt_model *m, size_t rows, size_t n, size_t k, const void *a, size_t lda,
                    const void *w, void *c, hrmt_dtype cdt, size_t ldc);
/* Pins one cuBLASLt algorithm per BF16 block-GEMM shape (model_gemm.cu), so
 * that cu_gemm serves those shapes at cuBLASLt's speed with bits that do not
 * depend on M. Leaves nlt 0 (the own kernel everywhere) when it does not
 * apply; fails only on a CUDA error. */
hrmt_status cu_gemm_pin(hrmt_model *m);
/* model_gemm_tune.cu: fills each pinned slot's small-M algorithms (skipped
 * when HRMT_CUDA_GEMM_TUNE=0). */
hrmt_status cu_gemm_tune(hrmt_model *m);
/* The block GEMMs' algorithms (own tiles too, up to 1024 rows) and the
 * fused gate_up's shape tuned at exactly `rows` rows (a step's B T) where
 * the load's buckets were tuned, rows is past the first bucket's 128 and
 * not a bucket's own M; once per rows (the last
 * CU_EXACT kept). Before a step's work is enqueued or captured: it times
 * kernels on the model's stream. cu_exact_for: that pick, or NULL. */
hrmt_status cu_gemm_tune_rows(hrmt_model *m, size_t rows);
const cu_exact_pick *cu_exact_for(const hrmt_model *m, size_t rows);

/* model_settings.cu: *on = the 0 / 1 switch `name` from the environment, or
 * dflt when unset; anything else INVALID_ARG (message names the variable).
 * cu_block_settings reads the block's kernel switches at model load
 * (HRMT_CUDA_FUSED_GLU, _FUSED_NORM, _PDL, _FUSED_INJECT, _NORM_PROLOGUE,
 * _CLUSTER_NORM and its _CLUSTER_NORM_CTAS, _ATTN_TEAMS), each on only where its kernels
 * serve this model and device. */
hrmt_status cu_env_switch(hrmt_model *m, const char *name, int dflt, int *on);
hrmt_status cu_block_settings(hrmt_model *m);

/* sm90a/glu_wgmma.cu: act = SwiGLU(a W_gate_up^T) in one kernel, the bits of
 * cu_gemm then the SwiGLU table kernel (cu_block_settings turns it on
 * wherever cu_glu_applies, unless HRMT_CUDA_FUSED_GLU=0). */
int cu_glu_applies(const hrmt_model *m);
/* *exact = 1 when sm90a/silu_fast.cuh's s(g) gives the context's table's
 * bits for all 65536 gates on this device (checked there), else 0. Only
 * where the fused gate_up applies (cu_glu_applies: its sm_90a image). */
hrmt_status cu_silu_fast_exact(const hrmt_model *m, int *exact);
/* *exact = 1 when mul.rn.bf16x2 gives the F32 product's BF16 rounding for
 * all 2^32 ordered BF16 pairs on this device (sm90a/glu_wgmma.cu), else 0.
 * Only where the fused gate_up applies. */
hrmt_status cu_glu_mul_exact(const hrmt_model *m, int *exact);
hrmt_status cu_glu(const hrmt_model *m, size_t rows, const void *a, const void *w, void *act);
/* Its tile shapes, for the tuner: how many, and one shape's launch. */
int cu_glu_shapes(const hrmt_model *m);
/* Whether the tuner times shape `shape` (below cu_glu_shapes): the
 * W-resident one (6) with HRMT_CUDA_GLU_WRES, its TMA-storing form (7) with
 * HRMT_CUDA_GLU_WRES_TSTORE. */
int cu_glu_shape_tuned(const hrmt_model *m, int shape);
int cu_glu_wres_form_applies(const hrmt_model *m, int three);
int cu_glu_wres_ts_applies(const hrmt_model *m);
hrmt_status cu_glu_shape(const hrmt_model *m, int shape, size_t rows, const void *a, const void *w,
                         void *act);

/* sm90a/gemm_wgmma.cu: C = A W^T (BF16) in narrow wgmma tiles, the pinned
 * cuBLASLt algorithms' arithmetic. cu_wgemm_shapes: how many tile shapes
 * serve this model's device (0: none). cu_wgemm leaves *done 0 and launches
 * nothing when the shape cannot take the call (alignment, widths): the
 * caller's cuBLASLt algorithm serves it then. */
int cu_wgemm_shapes(const hrmt_model *m);
const char *cu_wgemm_name(int shape);
hrmt_status cu_wgemm(const hrmt_model *m, int shape, size_t rows, size_t n, size_t k, const void *a,
                     size_t lda, const void *w, void *c, size_t ldc, int *done);

/* The block's residual + RMSNorm as the prologue of the GEMM after it
 * (sm90a/ring_norm_gemm.cuh): c = rmsnorm(x + r) W^T, and h = rmsnorm(x + r)
 * written too (h must differ from x and r); the bits of the row kernel then
 * cu_gemm. cu_npro_rows: the most rows it serves (small batches, where the
 * norm's own kernel is a link of the block's dependency chain).
 * cu_wgemm_norm runs own GEMM shape `shape` (cu_gemm_own_shape: the tuner's
 * pick for these rows, -1 none) and leaves *done 0 when it cannot take the
 * call; cu_glu_norm is the fused gate_up + SwiGLU's form. */
#define CU_NPRO_MAX_ROWS 256
int cu_gemm_own_shape(const hrmt_model *m, size_t rows, size_t n, size_t k, size_t lda, size_t ldc);
int cu_wgemm_norm_applies(const hrmt_model *m);
hrmt_status cu_wgemm_norm(const hrmt_model *m, int shape, size_t rows, size_t n, size_t k,
                          const void *x, const void *r, void *h, float eps, const void *w, void *c,
                          size_t ldc, int *done);
int cu_glu_norm_applies(const hrmt_model *m);
hrmt_status cu_glu_norm(const hrmt_model *m, size_t rows, const void *x, const void *r, void *h,
                        const void *w, void *act, int *done);

/* model_inject.cu: z = z + bf16(a + b) (b NULL: z = z + a) over rows of the
 * hidden width, BF16, one kernel by programmatic dependent launch, the bits
 * of the row-op adds. *done 0: not its case (F32, alignment), nothing
 * launched. */
hrmt_status cu_inject(const hrmt_model *m, void *z, const void *a, const void *b, size_t rows,
                      int *done);
/* model_inject.cu, the tiered schedule's tile links (HRMT_CUDA_TILE_LINKS):
 * tinj = bf16(zH + x) and tz = bf16(zL + tinj) over rows (the copy into the
 * tile, its injection and the first L level's injection in one kernel), and
 * zL = tz with, where zH is given, zH = bf16(zH + tz) (the copy back and the
 * H level's injection on the tile's rows). *done = 0 (nothing launched)
 * where they do not apply: off, not BF16, rows x hidden not 8-wide chunks
 * or a pointer not 16-byte aligned. */
hrmt_status cu_tile_in(const hrmt_model *m, const void *zL, const void *zH, const void *x, void *tz,
                       void *tinj, size_t rows, int *done);
hrmt_status cu_tile_out(const hrmt_model *m, const void *tz, void *zL, void *zH, size_t rows,
                        int *done);

/* sm90a/proj_norm_wgmma.cu: h = rmsnorm(h + a W^T) for W [hidden, k] in one
 * kernel over clusters of two CTAs per 128-row tile, the bits of cu_gemm
 * then the residual + RMSNorm row kernel. cu_proj_norm_clusters: how many
 * such clusters the device runs at once (0: it does not serve this model);
 * the model keeps it in pnorm, and cu_proj_norm launches at most that many. */
int cu_proj_norm_clusters(const hrmt_model *m);
hrmt_status cu_proj_norm(const hrmt_model *m, size_t rows, const void *a, size_t k, const void *w,
                         void *h);

/* sm90a/cluster_norm_wgmma.cu: h = rmsnorm(h + a W^T) for W [hidden, k] in
 * one kernel whose 64-row tiles are each spread over a thread-block cluster
 * of `ctas` (8 or 16) CTAs (the norm's row sums shared through distributed
 * shared memory): the bits of cu_gemm then the residual + RMSNorm row
 * kernel. cu_cluster_norm_clusters: how many such clusters the device runs
 * at once (0: it does not serve this model); the block uses the kernel when
 * its tiles fit in that one wave (small batches, where the GEMM and the
 * norm are two links of the block's chain). *done 0: not its case, nothing
 * launched. */
int cu_cluster_norm_clusters(const hrmt_model *m, int ctas);
/* The cluster size (16, 8) the block uses for these rows; 0: the GEMM and
 * the row kernel (model_settings.cu says which rows take which). */
int cu_cluster_norm_ctas(const hrmt_model *m, size_t rows);
/* The next level's input injection folded into a level's last kernel
 * (HRMT_CUDA_FOLD_INJECT; model_step.cu): with h the kernel's output,
 * o = bf16(z + bf16(a + b)) (b = p2; p2 NULL: bf16(z + a)), h in z's place
 * (hz = 1; p1 = a) or in a's (hz = 0; p1 = z); h itself is stored too when
 * `store` is set. The injection kernel's bits (inject_pair.cuh). */
typedef struct cu_fold {
    const void *p1, *p2;
    void *o;
    int hz, store;
} cu_fold;
/* f: the fold for this call (NULL: none). */
hrmt_status cu_cluster_norm(const hrmt_model *m, int ctas, size_t rows, const void *a, size_t k,
                            const void *w, void *h, const cu_fold *f, int *done);

/* sm90a/qkv_attn_wgmma.cu: att = attention(RoPE(q), RoPE(k), v) with
 * [q k v] = h W_qkv^T for n samples' rows of h, one thread-block cluster per
 * (sample, head), q, k and v never leaving shared memory: the bits of cu_gemm
 * then cu_attention. cu_qkv_attn_clusters: how many such clusters the device
 * runs at once (0: it does not serve this model: BF16, head_dim 64, hidden <=
 * 512, T <= 128, compute capability 9.0); the block uses it while n heads fit that one
 * wave. *done 0: not its case, nothing launched. */
int cu_qkv_attn_clusters(const hrmt_model *m);
hrmt_status cu_qkv_attn(const hrmt_model *m, size_t n, const void *h, const void *w, void *att,
                        int *done);
/* sm90a/qkv_attn_cta_wgmma.cu: the same with one CTA per (sample, head)
 * (T <= 128), for batches past the clusters' wave: cu_qkv_attn_ctas says how
 * many such CTAs run at once (0: it does not serve this model); the block
 * uses it while n heads fit that one wave. *done 0: not its case. */
int cu_qkv_attn_ctas(const hrmt_model *m);
/* sm90a/qkv_attn_pair_wgmma.cu: the same over a cluster of two CTAs per
 * (sample, head), CTA r taking the head's rows 64 r.. (T > 64), for batches
 * past the cluster form's wave: cu_qkv_attn_pairs says how many such pairs
 * run at once (0: it does not serve this model); the block uses it while n
 * heads fit that one wave. *done 0: not its case. */
int cu_qkv_attn_pairs(const hrmt_model *m);
hrmt_status cu_qkv_attn_pair(const hrmt_model *m, size_t n, const void *h, const void *w, void *att,
                             int *done);
hrmt_status cu_qkv_attn_cta(const hrmt_model *m, size_t n, const void *h, const void *w, void *att,
                            int *done);

/* rowops_norm.cu: 1 when hrmt_cuda_residual_rmsnorm_pdl launches rows of `cols` columns. */
int hrmt_cuda_residual_rmsnorm_pdl_applies(hrmt_dtype dt, size_t cols);

/* rowops_norm.cu: the BF16 residual + RMSNorm row op (out = rmsnorm(x + r),
 * no weight; at these widths the SRAM and DRAM forms are one kernel) of rows
 * whose width is a multiple of 32 up to 512, launched on `st` by
 * programmatic dependent launch when pdl is set (src/cuda/pdl.cuh): the row
 * op's bits. vec: rows of 256 or 512 columns, 16-byte aligned, by the
 * 16-byte form (HRMT_CUDA_NORM_VEC), same bits. desc: the rows last first
 * (HRMT_CUDA_NORM_DESCEND), same bits. stream: with vec, x and r loaded as
 * streaming data (HRMT_CUDA_NORM_STREAM), same bits. 1: launched (a launch error is pending for the
 * caller's check); 0: other rows or dtypes, nothing launched (use the row-op table). */
int hrmt_cuda_residual_rmsnorm_pdl(hrmt_dtype dt, size_t rows, size_t cols, const void *x,
                                   size_t ldx, const void *r, size_t ldr, float eps, void *out,
                                   size_t ldo, int pdl, int vec, int desc, int stream,
                                   cudaStream_t st);

/* model_attn.cu: non-causal attention of n samples, qkv [n*T, 3*hidden] ->
 * att [n*T, hidden], RoPE on Q and K fused (rope models); F32 scores and
 * softmax, O rounded once. BF16 with head_dim 32 or 64 and T <= 128: the
 * register kernel of model_attn_mma.cu; other BF16: wmma, one block per
 * (sample, head); F32: SIMT FMA chains. */
hrmt_status cu_attention(const hrmt_model *m, const void *qkv, void *att, size_t n);

/* model_attn_mma.cu: whether its kernel serves this model, and the launch
 * (cs/sn: RoPE tables or NULL; sms and per_block: the device's). */
int cu_attention_mma_applies(const hrmt_model *m);
hrmt_status cu_attention_mma(const hrmt_model *m, const void *qkv, void *att, size_t n,
                             const float *cs, const float *sn, float scale, int sms,
                             size_t per_block);

/* model_heads.cu: logits = lm_head(zH), q = q_head(zH[:, 0]) and the ACT
 * finish (cu_finish's bias, steps and halting) as one kernel, the bits of
 * the two own-kernel GEMMs and the finish kernel. cu_heads_applies: BF16,
 * vocab + 2 <= 16, hidden a multiple of 16 up to 736, cc >= 8.0. */
int cu_heads_applies(const hrmt_model *m);
hrmt_status cu_heads(const hrmt_model *m, const hrmt_carry *c, int early_halt);

#endif
