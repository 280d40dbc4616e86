/*
 * hrmt.h — the whole public API of hrmt, a C11 library that runs the
 * Hierarchical Reasoning Model (HRM) and its fused kernels with tiered memory.
 *
 * Conventions (they hold for every function below unless its comment says otherwise):
 *  - Every function returns hrmt_status; HRMT_OK (0) is success. Outputs go
 *    through pointer arguments and are left untouched on failure.
 *  - Functions taking a hrmt_context* record a human-readable detail of the last
 *    failure in that context, readable with hrmt_last_error().
 *  - Nothing here calls exit() or abort(); bad input yields an error code.
 *  - Memory returned by the library is owned by the object it came from unless a
 *    comment says "caller frees with hrmt_free()".
 *  - Thread-safety: different contexts may be used from different threads at
 *    once. One context is not safe for concurrent calls, except the tier-manager
 *    functions, which lock internally. Op calls parallelise internally with OpenMP.
 */
#ifndef HRMT_H
#define HRMT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HRMT_VERSION_MAJOR 0
#define HRMT_VERSION_MINOR 1
#define HRMT_VERSION_PATCH 0

/* ------------------------------------------------------------------------- */
/* Status codes                                                              */
/* ------------------------------------------------------------------------- */

typedef enum hrmt_status {
    HRMT_OK = 0,
    HRMT_ERR_INVALID_ARG,     /* NULL pointer, zero size, bad enum value, bad eps ... */
    HRMT_ERR_OUT_OF_MEMORY,   /* an allocation failed */
    HRMT_ERR_OVERFLOW,        /* a size computation would overflow size_t */
    HRMT_ERR_SHAPE,           /* tensor shapes do not agree */
    HRMT_ERR_DTYPE,           /* dtype not accepted by this operation */
    HRMT_ERR_UNSUPPORTED,     /* the backend has no kernel for this op/dtype */
    HRMT_ERR_ISA,             /* requested ISA unknown or not supported by this CPU */
    HRMT_ERR_NOT_FOUND,       /* named object (tensor, tier entry) does not exist */
    HRMT_ERR_EXISTS,          /* named object already exists */
    HRMT_ERR_IO,              /* open/read/write/mmap failed */
    HRMT_ERR_NONFINITE,       /* NaN or Inf where a finite value is required */
    HRMT_ERR_CONFIG,          /* invalid model configuration */
    /* safetensors / model-file errors: each malformation has its own code */
    HRMT_ERR_FILE_TRUNCATED,  /* file shorter than the 8-byte header length or data section */
    HRMT_ERR_HEADER_SIZE,     /* header length beyond the file or absurd */
    HRMT_ERR_BAD_JSON,        /* header is not well-formed JSON / not an object */
    HRMT_ERR_BAD_DTYPE,       /* tensor dtype not F32, BF16 or I32 */
    HRMT_ERR_BAD_OFFSETS,     /* data_offsets out of range or inconsistent with shape */
    HRMT_ERR_OVERLAP,         /* two tensors' byte ranges overlap */
    HRMT_ERR_MISSING_TENSOR,  /* a tensor the model needs is not in the file */
    HRMT_ERR_TENSOR_SHAPE,    /* a tensor's shape does not match the config */
    HRMT_ERR_CUDA,            /* a CUDA runtime / cuBLAS call failed */
    HRMT_ERR_NO_DEVICE,       /* CUDA backend not built or no GPU present */
    HRMT_STATUS_COUNT
} hrmt_status;

/* Static English name + description of a status code. Never NULL. */
const char *hrmt_status_str(hrmt_status s);

/* ------------------------------------------------------------------------- */
/* Basic types                                                               */
/* ------------------------------------------------------------------------- */

typedef enum hrmt_dtype { HRMT_F32 = 0, HRMT_BF16 = 1, HRMT_I32 = 2, HRMT_DTYPE_COUNT } hrmt_dtype;

/* Bytes per element (4, 2, 4); 0 for an invalid dtype. */
size_t hrmt_dtype_size(hrmt_dtype dt);
/* "F32", "BF16", "I32" (the safetensors spelling); "?" for invalid. */
const char *hrmt_dtype_name(hrmt_dtype dt);

typedef enum hrmt_device { HRMT_DEVICE_HOST = 0, HRMT_DEVICE_CUDA = 1 } hrmt_device;
typedef enum hrmt_tier { HRMT_TIER_DRAM = 0, HRMT_TIER_SRAM = 1 } hrmt_tier;

typedef enum hrmt_isa {
    HRMT_ISA_SCALAR = 0,
    HRMT_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    HRMT_ISA_AVX512 = 2, /* AVX-512 F/BW/DQ/VL (+BF16 when the CPU has it) */
    HRMT_ISA_NEON = 3,
    HRMT_ISA_COUNT
} hrmt_isa;

/* "scalar", "avx2", "avx512", "neon". */
const char *hrmt_isa_name(hrmt_isa isa);
/* Parses one of the names above. HRMT_ERR_ISA for anything else. */
hrmt_status hrmt_isa_parse(const char *name, hrmt_isa *out);
/* Bit mask (1u << isa) of ISAs this CPU and OS can run. Scalar is always set. */
unsigned hrmt_isas_available(void);

/* ------------------------------------------------------------------------- */
/* Tensor descriptor                                                         */
/* ------------------------------------------------------------------------- */

#define HRMT_MAX_DIMS 4

/* A non-owning view: data, dtype, up to 4 dims, strides in elements.
 * Row-wise ops require the last dimension to be contiguous (stride 1). */
typedef struct hrmt_tensor {
    void *data;
    hrmt_dtype dtype;
    int ndim;
    size_t shape[HRMT_MAX_DIMS];
    size_t stride[HRMT_MAX_DIMS]; /* in elements */
    hrmt_device device;
    hrmt_tier tier;
} hrmt_tensor;

/* Fills a contiguous row-major descriptor over `data` (may be NULL to only
 * validate). Errors: INVALID_ARG (ndim out of 1..4, a zero dim), OVERFLOW. */
hrmt_status hrmt_tensor_init(hrmt_tensor *t, void *data, hrmt_dtype dtype, int ndim,
                             const size_t *shape);
/* Number of elements / bytes covered by the shape, overflow-checked. */
hrmt_status hrmt_tensor_numel(const hrmt_tensor *t, size_t *out);
hrmt_status hrmt_tensor_nbytes(const hrmt_tensor *t, size_t *out);

/* Frees memory the library handed to the caller (JSON strings and the like). */
void hrmt_free(void *p);

/* ------------------------------------------------------------------------- */
/* Cache topology and tile plan                                              */
/* ------------------------------------------------------------------------- */

#define HRMT_MAX_CACHE_LEVELS 4

typedef struct hrmt_cache_level {
    int level;              /* 1, 2, 3 (data / unified caches only) */
    size_t size_bytes;
    size_t line_bytes;
    int ways;               /* associativity; 0 when unknown, -1 fully associative */
    int shared_by_cores;    /* how many cores share one instance */
} hrmt_cache_level;

typedef struct hrmt_topology {
    int num_levels;
    hrmt_cache_level caches[HRMT_MAX_CACHE_LEVELS]; /* caches[0] is L1d */
    int num_cores;
    const char *source;     /* "hwloc", "sysfs", "default" (+ overrides noted in "env") */
} hrmt_topology;

/* Detects the cache hierarchy with hwloc (sysfs fallback, then defaults), then
 * applies HRMT_CACHE_L1D / HRMT_CACHE_L2 / HRMT_CACHE_L3 (bytes). A malformed
 * override is HRMT_ERR_INVALID_ARG. */
hrmt_status hrmt_topology_detect(hrmt_topology *out);

/* Blocking derived from a topology; a pure function (see hrmt_tile_plan_compute). */
typedef struct hrmt_tile_plan {
    size_t sram_tier_bytes;  /* capacity of the SRAM tier (the per-core L2 share used for L-level tiles) */
    size_t l_tile_bytes;     /* working-set budget for one L-level tile of samples */
    size_t gemm_mr, gemm_nr; /* register tile */
    size_t gemm_kc;          /* K block: an MR x KC and KC x NR sliver fit L1 */
    size_t gemm_mc;          /* M block: MC x KC panel of A fills part of L2 */
    size_t gemm_nc;          /* N block: KC x NC panel of W fills part of L3 */
} hrmt_tile_plan;

/* Analytical (Low et al., TOMS 2016) blocking for a register tile mr x nr and
 * element size elem_bytes. HRMT_GEMM_KC/MC/NC environment variables are NOT
 * read here (the context applies them), so this stays a pure function. */
hrmt_status hrmt_tile_plan_compute(const hrmt_topology *topo, size_t mr, size_t nr,
                                   size_t elem_bytes, hrmt_tile_plan *out);

/* ------------------------------------------------------------------------- */
/* Context                                                                   */
/* ------------------------------------------------------------------------- */

typedef struct hrmt_context hrmt_context;

typedef enum hrmt_backend_kind { HRMT_BACKEND_CPU = 0, HRMT_BACKEND_CUDA = 1 } hrmt_backend_kind;

typedef struct hrmt_context_options {
    hrmt_backend_kind backend; /* CPU (default) or CUDA */
    const char *isa;           /* NULL: HRMT_ISA env var, else the best available */
    int num_threads;           /* 0: OpenMP default */
    size_t sram_tier_bytes;    /* 0: from the tile plan */
    size_t event_log_cap;      /* 0: default (4096 events); the log is a ring */
    int event_log_enabled;     /* nonzero to record events */
} hrmt_context_options;

/* Default options (CPU, auto ISA, default threads, tracked events). */
hrmt_context_options hrmt_context_default_options(void);

/* Creates a context. opts may be NULL (defaults). On failure *out is NULL and,
 * where possible, `errbuf` (may be NULL) receives a message. */
hrmt_status hrmt_context_create(const hrmt_context_options *opts, hrmt_context **out,
                                char *errbuf, size_t errbuf_len);
void hrmt_context_destroy(hrmt_context *ctx);

/* Message describing the last failure in this context ("" if none). Valid until
 * the next failing call on the context. */
const char *hrmt_last_error(const hrmt_context *ctx);

hrmt_isa hrmt_context_isa(const hrmt_context *ctx);
int hrmt_context_threads(const hrmt_context *ctx);
const hrmt_topology *hrmt_context_topology(const hrmt_context *ctx);
const hrmt_tile_plan *hrmt_context_tile_plan(const hrmt_context *ctx);
hrmt_backend_kind hrmt_context_backend(const hrmt_context *ctx);

/* Ops a backend can be asked about (ggml's supports_op). */
typedef enum hrmt_op {
    HRMT_OP_COPY = 0,
    HRMT_OP_CONVERT,          /* bf16 <-> f32 */
    HRMT_OP_ADD,
    HRMT_OP_RMSNORM,
    HRMT_OP_RESIDUAL_RMSNORM,
    HRMT_OP_SWIGLU,
    HRMT_OP_SOFTMAX,
    HRMT_OP_ROPE,
    HRMT_OP_EMBEDDING,
    HRMT_OP_ENGRAM_GATE_FWD,
    HRMT_OP_ENGRAM_GATE_BWD,
    HRMT_OP_GEMM,
    HRMT_OP_ATTENTION,
    HRMT_OP_COUNT
} hrmt_op;

const char *hrmt_op_name(hrmt_op op);
/* 1 if the context's backend has a kernel for (op, dtype), else 0. */
int hrmt_supports(const hrmt_context *ctx, hrmt_op op, hrmt_dtype dtype);

/* CUDA information for `hrmt info`. */
typedef struct hrmt_cuda_info {
    int built;               /* library compiled with the CUDA backend */
    int device_count;
    char name[256];
    size_t smem_per_block;
    size_t l2_bytes;
    size_t global_mem_bytes;
} hrmt_cuda_info;
hrmt_status hrmt_cuda_query(hrmt_cuda_info *out);

/* ------------------------------------------------------------------------- */
/* Tier manager (one per context; hrmt_context_tiers)                        */
/* ------------------------------------------------------------------------- */

typedef struct hrmt_tiers hrmt_tiers;

typedef enum hrmt_tier_op {
    HRMT_TIER_OP_ALLOC = 0,
    HRMT_TIER_OP_FREE,
    HRMT_TIER_OP_LOAD,
    HRMT_TIER_OP_STORE,
    HRMT_TIER_OP_TRANSFER
} hrmt_tier_op;

typedef struct hrmt_tier_event {
    hrmt_tier tier;
    hrmt_tier_op op;
    size_t bytes;
    double duration_us;
    double timestamp_s;      /* seconds since the manager was created (monotonic) */
} hrmt_tier_event;

typedef struct hrmt_tier_stats {
    size_t total_alloc_bytes, peak_alloc_bytes, current_alloc_bytes;
    uint64_t num_loads, num_stores, num_transfers;
    double total_load_us, total_store_us, total_transfer_us;
    double mean_load_us, mean_store_us, mean_transfer_us;
    uint64_t hit_count, miss_count;
    double hit_rate;         /* hits / (hits + misses), 0 when none */
} hrmt_tier_stats;

hrmt_tiers *hrmt_context_tiers(hrmt_context *ctx);

/* Standalone manager (the context owns one already). capacity 0 is INVALID_ARG. */
hrmt_status hrmt_tiers_create(size_t sram_capacity_bytes, size_t event_cap, hrmt_tiers **out);
void hrmt_tiers_destroy(hrmt_tiers *tm);

hrmt_status hrmt_tiers_set_sram_capacity(hrmt_tiers *tm, size_t bytes); /* only when SRAM is empty */
size_t hrmt_tiers_sram_capacity(const hrmt_tiers *tm);
/* Turns the event log on/off and sets its ring capacity (0 keeps the current one). */
hrmt_status hrmt_tiers_set_event_log(hrmt_tiers *tm, int enabled, size_t cap);

/* Allocates a zeroed, 64-byte-aligned tensor named `name` (unique). alloc_sram
 * places it in the SRAM arena when it fits (a hit), else in DRAM (a miss); the
 * descriptor's `tier` says where it went. */
hrmt_status hrmt_tiers_alloc_sram(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                  hrmt_dtype dtype, hrmt_tensor *out);
hrmt_status hrmt_tiers_alloc_dram(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                  hrmt_dtype dtype, hrmt_tensor *out);
hrmt_status hrmt_tiers_get(hrmt_tiers *tm, const char *name, hrmt_tensor *out);
hrmt_status hrmt_tiers_free(hrmt_tiers *tm, const char *name);
void hrmt_tiers_free_all(hrmt_tiers *tm);

/* Copies SRAM tensor `name` into a new DRAM tensor `<name>_from_sram` (and the
 * reverse, `<name>_from_dram`, which may itself spill); timed and counted. */
hrmt_status hrmt_tiers_transfer_sram_to_dram(hrmt_tiers *tm, const char *name, hrmt_tensor *out);
hrmt_status hrmt_tiers_transfer_dram_to_sram(hrmt_tiers *tm, const char *name, hrmt_tensor *out);
/* Copies between two existing tensors of equal size, counted as a transfer from
 * src's tier. Used by schedules to move state between tiers without allocating. */
hrmt_status hrmt_tiers_copy(hrmt_tiers *tm, const hrmt_tensor *dst, const hrmt_tensor *src);

/* Records a load / store of `bytes` on `tier` that took `duration_us`. */
hrmt_status hrmt_tiers_record(hrmt_tiers *tm, hrmt_tier tier, hrmt_tier_op op, size_t bytes,
                              double duration_us);

hrmt_status hrmt_tiers_stats(hrmt_tiers *tm, hrmt_tier tier, hrmt_tier_stats *out);
/* Copies up to `cap` most recent events, oldest first; *n receives the count. */
hrmt_status hrmt_tiers_events(hrmt_tiers *tm, hrmt_tier_event *out, size_t cap, size_t *n);
void hrmt_tiers_reset_stats(hrmt_tiers *tm);
/* Stats of both tiers as a JSON object string; caller frees with hrmt_free(). */
hrmt_status hrmt_tiers_stats_json(hrmt_tiers *tm, char **out_json);

/* "SRAM/DRAM contexts": brackets L-level (SRAM) and H-level (DRAM) work. On CPU
 * it selects the thread count used inside the scope and accumulates the time
 * spent in each tier's scope. Scopes nest per calling thread. */
hrmt_status hrmt_tiers_scope_begin(hrmt_tiers *tm, hrmt_tier tier);
hrmt_status hrmt_tiers_scope_end(hrmt_tiers *tm, hrmt_tier tier);
double hrmt_tiers_scope_time_us(const hrmt_tiers *tm, hrmt_tier tier);

/* ------------------------------------------------------------------------- */
/* Ops (fused kernels). Rows = product of all dims but the last; the last dim */
/* must be contiguous. F32 and BF16 storage, F32 arithmetic.                  */
/* ------------------------------------------------------------------------- */

/* out = x (any dtype; same shape and dtype). */
hrmt_status hrmt_copy(hrmt_context *ctx, const hrmt_tensor *x, hrmt_tensor *out);
/* out = convert(x): F32 <-> BF16 (round to nearest even, NaN stays NaN). */
hrmt_status hrmt_convert(hrmt_context *ctx, const hrmt_tensor *x, hrmt_tensor *out);
/* out = a + b (input injection). */
hrmt_status hrmt_add(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_tensor *b, hrmt_tensor *out);
/* out = x * rsqrt(mean(x^2) + eps) [* weight]; weight (F32, [cols]) may be NULL. */
hrmt_status hrmt_rmsnorm(hrmt_context *ctx, const hrmt_tensor *x, const hrmt_tensor *weight,
                         float eps, hrmt_tensor *out);

typedef enum hrmt_variant { HRMT_VARIANT_SRAM = 0, HRMT_VARIANT_DRAM = 1 } hrmt_variant;
/* out = rmsnorm(x + residual). For BF16 the sum is rounded to BF16 before the
 * norm (as PyTorch's bf16 add does). SRAM and DRAM variants give identical bits. */
hrmt_status hrmt_residual_rmsnorm(hrmt_context *ctx, const hrmt_tensor *x,
                                  const hrmt_tensor *residual, float eps, hrmt_variant variant,
                                  hrmt_tensor *out);
/* gate_up [rows, 2*inter] (gate first) -> out [rows, inter] = silu(gate) * up. */
hrmt_status hrmt_swiglu(hrmt_context *ctx, const hrmt_tensor *gate_up, hrmt_tensor *out);
/* Row softmax of scale*x, max-subtracted. */
hrmt_status hrmt_softmax(hrmt_context *ctx, const hrmt_tensor *x, float scale, hrmt_tensor *out);
/* In-place half-split RoPE on x [tokens, heads, head_dim] (or [batch, tokens,
 * heads, head_dim]); cos/sin F32 [tokens, head_dim]. Computed in F32. */
hrmt_status hrmt_rope(hrmt_context *ctx, hrmt_tensor *x, const hrmt_tensor *cos_t,
                      const hrmt_tensor *sin_t);
/* out[i, :] = table[ids[i], :]; ids I32 [n], out-of-range id is INVALID_ARG. */
hrmt_status hrmt_embedding(hrmt_context *ctx, const hrmt_tensor *table, const hrmt_tensor *ids,
                           hrmt_tensor *out);

/* Engram gate (deepseek-ai/TileKernels). x [T,hc,H] BF16, kv [T,hc+1,H] BF16,
 * weight_fused [hc,H] F32. out [T,hc,H] BF16. Optional (NULL to skip) F32
 * [T,hc] outputs: dot (raw), gate_score, rstd_x, rstd_k. */
typedef struct hrmt_engram_fwd_out {
    hrmt_tensor *out;
    hrmt_tensor *dot, *gate_score, *rstd_x, *rstd_k;
} hrmt_engram_fwd_out;
hrmt_status hrmt_engram_fuse_weight(hrmt_context *ctx, const hrmt_tensor *w_hidden,
                                    const hrmt_tensor *w_embed, hrmt_tensor *weight_fused);
hrmt_status hrmt_engram_gate_fwd(hrmt_context *ctx, const hrmt_tensor *x, const hrmt_tensor *kv,
                                 const hrmt_tensor *weight_fused, float eps, float clamp_value,
                                 const hrmt_engram_fwd_out *outs);
/* Backward from grad_out [T,hc,H] BF16 and the saved forward values. grad_x,
 * grad_kv BF16; grad_weight_fused F32 [hc,H] reduced over tokens. */
hrmt_status hrmt_engram_gate_bwd(hrmt_context *ctx, const hrmt_tensor *grad_out,
                                 const hrmt_tensor *x, const hrmt_tensor *kv,
                                 const hrmt_tensor *weight_fused, const hrmt_tensor *dot,
                                 const hrmt_tensor *gate_score, const hrmt_tensor *rstd_x,
                                 const hrmt_tensor *rstd_k, float clamp_value,
                                 hrmt_tensor *grad_x, hrmt_tensor *grad_kv,
                                 hrmt_tensor *grad_weight_fused);
/* grad_w_hidden = grad_wf * w_embed, grad_w_embed = grad_wf * w_hidden. */
hrmt_status hrmt_engram_split_weight_grad(hrmt_context *ctx, const hrmt_tensor *grad_weight_fused,
                                          const hrmt_tensor *w_hidden, const hrmt_tensor *w_embed,
                                          hrmt_tensor *grad_w_hidden, hrmt_tensor *grad_w_embed);

/* ------------------------------------------------------------------------- */
/* GEMM: C[M,N] (+)= A[M,K] * W[N,K]^T                                        */
/* ------------------------------------------------------------------------- */

/* W packed once into the context's ISA layout; reusable by every call. */
typedef struct hrmt_packed_w hrmt_packed_w;

/* Packs W [N,K] (F32 or BF16, leading dim = W's stride[0]). Caller destroys. */
hrmt_status hrmt_gemm_pack_w(hrmt_context *ctx, const hrmt_tensor *w, hrmt_packed_w **out);
void hrmt_packed_w_destroy(hrmt_packed_w *pw);

/* C = A * W^T (accumulate != 0: C += A * W^T). A [M,K] F32/BF16, C [M,N]
 * F32/BF16 (rounded to nearest even), leading dims from stride[0]. */
hrmt_status hrmt_gemm(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_tensor *w,
                      hrmt_tensor *c, int accumulate);
hrmt_status hrmt_gemm_packed(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_packed_w *w,
                             hrmt_tensor *c, int accumulate);

/* ------------------------------------------------------------------------- */
/* Memory probes                                                             */
/* ------------------------------------------------------------------------- */

/* Mean ns per dependent load, pointer-chasing a random cyclic permutation of
 * cache-line-sized nodes over `working_set_bytes`. */
hrmt_status hrmt_probe_latency(hrmt_context *ctx, size_t working_set_bytes, double *ns_per_load);

typedef struct hrmt_bandwidth {
    double read_gbps, write_gbps, copy_gbps; /* copy counts bytes read + written */
} hrmt_bandwidth;
hrmt_status hrmt_probe_bandwidth(hrmt_context *ctx, size_t working_set_bytes, hrmt_bandwidth *out);

/* ------------------------------------------------------------------------- */
/* HRM model                                                                 */
/* ------------------------------------------------------------------------- */

typedef enum hrmt_pos_encoding { HRMT_POS_ROPE = 0, HRMT_POS_LEARNED = 1 } hrmt_pos_encoding;

typedef struct hrmt_model_config {
    int hidden_size;
    int num_heads;
    double expansion;
    int H_layers, L_layers;
    int H_cycles, L_cycles;
    int seq_len;
    int vocab_size;
    int puzzle_emb_ndim;
    int num_puzzle_identifiers;
    hrmt_pos_encoding pos_encodings;
    int halt_max_steps;
    double rope_theta;        /* 10000 */
    double rms_norm_eps;      /* 1e-5 */
    hrmt_dtype forward_dtype; /* HRMT_BF16 (default) or HRMT_F32 */
} hrmt_model_config;

/* The official Sudoku config (hidden 512, 8 heads, expansion 4, 4/4 layers,
 * 2/2 cycles, seq 81, vocab 11, puzzle_emb_ndim 512, rope, halt 16, bf16). */
hrmt_model_config hrmt_model_config_default(void);
/* Checks a config; HRMT_ERR_CONFIG with the context message naming the field. */
hrmt_status hrmt_model_config_validate(hrmt_context *ctx, const hrmt_model_config *cfg);
/* Reads the `arch` object of an HRM case.json / all_config-derived arch.json
 * (or a bare object with the same keys). */
hrmt_status hrmt_model_config_load_json(hrmt_context *ctx, const char *path, hrmt_model_config *out);

typedef struct hrmt_model hrmt_model;

/* Loads a safetensors model (official key names, optional `_orig_mod.` and
 * `model.inner.` prefixes). cfg NULL: read the config from __metadata__. */
hrmt_status hrmt_model_load(hrmt_context *ctx, const char *path, const hrmt_model_config *cfg,
                            hrmt_model **out);
/* A model with deterministic pseudo-random weights (no file needed). */
hrmt_status hrmt_model_create_random(hrmt_context *ctx, const hrmt_model_config *cfg,
                                     uint64_t seed, hrmt_model **out);
void hrmt_model_destroy(hrmt_model *m);
const hrmt_model_config *hrmt_model_get_config(const hrmt_model *m);
/* Matrix-product FLOPs (2*MACs) of one ACT step for `batch` samples. */
double hrmt_model_step_flops(const hrmt_model *m, int batch);

typedef enum hrmt_schedule { HRMT_SCHEDULE_TIERED = 0, HRMT_SCHEDULE_BASELINE = 1 } hrmt_schedule;

/* ACT carry for a batch: z_H, z_L, steps, halted, current data. */
typedef struct hrmt_carry hrmt_carry;
/* All samples start halted (the reference's initial_carry). */
hrmt_status hrmt_carry_create(hrmt_model *m, int batch, hrmt_carry **out);
void hrmt_carry_destroy(hrmt_carry *c);

typedef struct hrmt_step_options {
    hrmt_schedule schedule;
    int early_halt;         /* opt-in: also halt when q_halt > q_continue (training rule) */
} hrmt_step_options;

/* Timings of the last step (filled when non-NULL). */
typedef struct hrmt_step_timing {
    double l_level_us_total;   /* all L-level calls in the step */
    double h_level_us_total;
    int l_level_calls, h_level_calls;
    double h_to_l_transfer_us_total, l_to_h_transfer_us_total;
    int transfers;
    double step_us;
} hrmt_step_timing;

/* Outputs of one ACT call, all host F32 except halted (I32). Buffers are
 * owned by the caller, sized: logits [B, seq_len, vocab], q_halt/q_continue
 * [B], z_H/z_L [B, seq_len + puzzle_len, hidden] (NULL to skip), halted [B]. */
typedef struct hrmt_step_outputs {
    float *logits;
    float *q_halt_logits;
    float *q_continue_logits;
    float *z_H, *z_L;
    int32_t *halted;
} hrmt_step_outputs;

/* One call of the ACT wrapper: halted samples are reset and take the new
 * batch data (inputs I32 [B, seq_len], puzzle_ids I32 [B]), then the inner
 * model runs once. */
hrmt_status hrmt_act_step(hrmt_model *m, hrmt_carry *carry, const int32_t *inputs,
                          const int32_t *puzzle_ids, const hrmt_step_options *opts,
                          hrmt_step_outputs *outs, hrmt_step_timing *timing);

/* Number of prefix positions (ceil(puzzle_emb_ndim / hidden)). */
int hrmt_model_puzzle_len(const hrmt_model *m);

#ifdef __cplusplus
}
#endif
#endif /* HRMT_H */
