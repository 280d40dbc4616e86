/*
 * hrmt.h — the whole public API of hrmt, a C11 library that runs the
 * Hierarchical Reasoning Model (HRM) and its fused kernels with tiered memory.
 *
 * Conventions (they hold for every declaration below unless its comment says otherwise):
 *  - Functions that can fail return hrmt_status; HRMT_OK (0) is success. Each one's
 *    comment lists the codes it can return ("Errors:", `HRMT_ERR_` prefix dropped).
 *    Outputs go through pointer arguments and are left untouched on failure.
 *  - Failures of functions taking a hrmt_context* (or a model, which holds one)
 *    leave a human-readable message in that context, readable with
 *    hrmt_last_error(). Where a context is required, NULL gets INVALID_ARG and
 *    no message.
 *  - Nothing here calls exit() or abort(); bad input yields an error code.
 *  - Handle arguments must not be NULL unless a comment says NULL is accepted;
 *    every `*_destroy` function accepts NULL and does nothing.
 *  - Memory: descriptors (hrmt_tensor) never own memory. Handles (context, tier
 *    manager, packed W, model, carry) are freed by their `*_destroy`; destroy carries
 *    before their model and models before their context. Pointers returned by
 *    the library point into the object they came from and live as long as it,
 *    unless a comment says "caller frees with hrmt_free()".
 *  - Thread-safety: functions taking no handle are thread-safe. Different
 *    contexts (and the objects made with them) may be used from different threads
 *    at once. One context, and its models and carries, is not safe for concurrent
 *    calls, except the tier-manager functions (`hrmt_tiers_*`, all but
 *    hrmt_tiers_destroy), which lock the manager internally.
 *  - Parallelism: ops, GEMM, hrmt_probe_bandwidth and hrmt_act_step run OpenMP
 *    teams of hrmt_context_threads(ctx) threads; small problems (and row ops
 *    called inside an OpenMP parallel region) run on the calling thread. Row
 *    ops give each thread a block of rows, or, for large tensors, hand rows out
 *    in chunks of ~512 KiB of traffic as threads free up; a row's result never
 *    depends on the thread count or the split.
 */
#ifndef HRMT_H
#define HRMT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Library version, major.minor.patch. */
#define HRMT_VERSION_MAJOR 0
/* See HRMT_VERSION_MAJOR. */
#define HRMT_VERSION_MINOR 1
/* See HRMT_VERSION_MAJOR. */
#define HRMT_VERSION_PATCH 0

/* ------------------------------------------------------------------------- */
/* Status codes                                                              */
/* ------------------------------------------------------------------------- */

/* Result of every fallible call; hrmt_status_str() names each value. */
typedef enum hrmt_status {
    HRMT_OK = 0,            /* success */
    HRMT_ERR_INVALID_ARG,   /* NULL pointer, zero size, bad enum value, negative eps ... */
    HRMT_ERR_OUT_OF_MEMORY, /* an allocation failed */
    HRMT_ERR_OVERFLOW,      /* a size computation would overflow size_t */
    HRMT_ERR_SHAPE,         /* tensor shapes or strides do not agree with the op */
    HRMT_ERR_DTYPE,         /* dtype not accepted by this operation */
    HRMT_ERR_UNSUPPORTED,   /* no kernel for this op/dtype, or a tensor on the wrong device */
    HRMT_ERR_ISA,           /* requested ISA unknown or not supported by this CPU/build */
    HRMT_ERR_NOT_FOUND,     /* named object (tier tensor) does not exist */
    HRMT_ERR_EXISTS,        /* named object already exists */
    HRMT_ERR_IO,            /* open/read/write/mmap failed */
    HRMT_ERR_NONFINITE,     /* NaN or Inf where a finite value is required */
    HRMT_ERR_CONFIG,        /* invalid model configuration or config JSON */
    /* safetensors / model-file errors: each malformation has its own code */
    HRMT_ERR_FILE_TRUNCATED, /* file shorter than the 8-byte header length or data section */
    HRMT_ERR_HEADER_SIZE,    /* header length beyond the file or above hrmt_limits.header_bytes */
    HRMT_ERR_BAD_JSON,       /* header not a JSON object, entry malformed or duplicated */
    HRMT_ERR_BAD_DTYPE,      /* tensor dtype not F32, BF16 or I32 */
    HRMT_ERR_BAD_OFFSETS,    /* data_offsets out of range or inconsistent with shape */
    HRMT_ERR_OVERLAP,        /* two tensors' byte ranges overlap */
    HRMT_ERR_MISSING_TENSOR, /* a tensor the model needs is not in the file */
    HRMT_ERR_TENSOR_SHAPE,   /* a tensor's shape does not match the config */
    HRMT_ERR_CUDA,           /* a CUDA runtime / cuBLAS call failed (CUDA builds only) */
    HRMT_ERR_NO_DEVICE,      /* CUDA backend not built or no GPU present */
    HRMT_ERR_LIMIT,          /* a size from input above its hrmt_limits value (docs/LIMITS.md) */
    HRMT_STATUS_COUNT        /* number of codes; not a status */
} hrmt_status;

/* Static English description of a status code ("ok", "invalid argument" ...);
 * "unknown status" for a value out of range. Never NULL; do not free. */
const char *hrmt_status_str(hrmt_status s);

/* ------------------------------------------------------------------------- */
/* Basic types                                                               */
/* ------------------------------------------------------------------------- */

/* Element type of a tensor (storage; ops compute in F32). */
typedef enum hrmt_dtype {
    HRMT_F32 = 0,    /* IEEE binary32 */
    HRMT_BF16 = 1,   /* bfloat16, stored as uint16_t bit patterns */
    HRMT_I32 = 2,    /* int32_t (token and puzzle ids) */
    HRMT_DTYPE_COUNT /* number of dtypes; not a dtype */
} hrmt_dtype;

/* Bytes per element (4, 2, 4); 0 for an invalid dtype. */
size_t hrmt_dtype_size(hrmt_dtype dt);
/* "F32", "BF16", "I32" (the safetensors spelling); "?" for invalid. Static string. */
const char *hrmt_dtype_name(hrmt_dtype dt);

/* Where a tensor's memory lives. Ops accept tensors on their context's device
 * only: host memory on a CPU context, CUDA device memory (hrmt_device_alloc)
 * on a CUDA context; anything else is UNSUPPORTED. */
typedef enum hrmt_device {
    HRMT_DEVICE_HOST = 0, /* CPU-addressable memory */
    HRMT_DEVICE_CUDA = 1  /* CUDA device memory */
} hrmt_device;
/* Memory tier of a tensor, as set by the tier manager. */
typedef enum hrmt_tier {
    HRMT_TIER_DRAM = 0, /* main memory: the 64-byte-aligned heap */
    HRMT_TIER_SRAM = 1  /* the fast tier: on CPU an arena sized to a cache share */
} hrmt_tier;

/* CPU instruction-set variant of the kernel tables. */
typedef enum hrmt_isa {
    HRMT_ISA_SCALAR = 0, /* portable C; the reference every other table is tested against */
    HRMT_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    HRMT_ISA_AVX512 = 2, /* AVX-512 F/BW/DQ/VL (+BF16 when the CPU has it) */
    HRMT_ISA_NEON = 3,   /* AArch64 Advanced SIMD */
    HRMT_ISA_AMX = 4,    /* the avx512 table (with AVX512-BF16) + AMX-BF16 tiles for BF16 x BF16
                          * GEMM; needs the OS to grant the tile state (see hrmt_gemm) */
    HRMT_ISA_COUNT       /* number of ISAs; not an ISA */
} hrmt_isa;

/* "scalar", "avx2", "avx512", "neon", "amx"; "?" for invalid. Static string. */
const char *hrmt_isa_name(hrmt_isa isa);
/* Parses one of the names above (exact, lower case); does not check that this CPU
 * runs it. Errors: INVALID_ARG (NULL), ISA (any other name). */
hrmt_status hrmt_isa_parse(const char *name, hrmt_isa *out);
/* Bit mask (1u << isa) of ISAs this CPU and OS can run and this build contains.
 * Scalar is always set. */
unsigned hrmt_isas_available(void);

/* ------------------------------------------------------------------------- */
/* Tensor descriptor                                                         */
/* ------------------------------------------------------------------------- */

/* Most dimensions a hrmt_tensor can have. */
#define HRMT_MAX_DIMS 4

/* A non-owning view: data, dtype, up to 4 dims, strides in elements. The caller
 * keeps `data` alive while the view is used. Row-wise ops require the last
 * dimension to be contiguous (stride 1). */
typedef struct hrmt_tensor {
    void *data;                   /* first element; not owned */
    hrmt_dtype dtype;             /* element type */
    int ndim;                     /* number of dimensions, 1..HRMT_MAX_DIMS */
    size_t shape[HRMT_MAX_DIMS];  /* extent of each dimension (first ndim used) */
    size_t stride[HRMT_MAX_DIMS]; /* in elements */
    hrmt_device device;           /* where data lives (hrmt_tensor_init: HOST) */
    hrmt_tier tier;               /* tier the data is in (hrmt_tensor_init: DRAM) */
} hrmt_tensor;

/* Fills a contiguous row-major host descriptor over `data` (may be NULL to only
 * validate). Errors: INVALID_ARG (NULL t or shape, ndim outside 1..4, a zero dim,
 * invalid dtype), OVERFLOW (byte size). */
hrmt_status hrmt_tensor_init(hrmt_tensor *t, void *data, hrmt_dtype dtype, int ndim,
                             const size_t *shape);
/* Number of elements covered by the shape (strides ignored), overflow-checked.
 * Errors: INVALID_ARG (NULL, ndim outside 1..4), OVERFLOW. */
hrmt_status hrmt_tensor_numel(const hrmt_tensor *t, size_t *out);
/* Bytes covered by the shape (numel * element size; strides ignored).
 * Errors: INVALID_ARG (NULL, ndim outside 1..4, invalid dtype), OVERFLOW. */
hrmt_status hrmt_tensor_nbytes(const hrmt_tensor *t, size_t *out);

/* Frees memory the library handed to the caller (hrmt_tiers_stats_json's string).
 * NULL is a no-op. */
void hrmt_free(void *p);

/* ------------------------------------------------------------------------- */
/* Cache topology and tile plan                                              */
/* ------------------------------------------------------------------------- */

/* Most cache levels a hrmt_topology records. */
#define HRMT_MAX_CACHE_LEVELS 4

/* One data or unified cache level (instruction caches are skipped). */
typedef struct hrmt_cache_level {
    int level;           /* 1..4 */
    size_t size_bytes;   /* capacity of one instance */
    size_t line_bytes;   /* cache line size */
    int ways;            /* associativity; 0 when unknown, -1 fully associative */
    int shared_by_cores; /* how many cores share one instance */
    /* This core's usable share, what the tile plan sizes from; 0 = not derived
     * yet (hrmt_tile_plan_compute then applies hrmt_topology_effective's rule). */
    size_t effective_bytes;
    /* Where effective_bytes came from: "private", "per-core share", "calibrated",
     * "plausibility cap" or "env"; a static string, NULL when not derived. */
    const char *effective_source;
    /* End of the latency plateau a short pointer-chase calibration measured for
     * one instance (hrmt_topology_calibrate); 0 = not measured. */
    size_t measured_bytes;
} hrmt_cache_level;

/* The machine's cache hierarchy, as hrmt_topology_detect() found it. */
typedef struct hrmt_topology {
    int num_levels;                                 /* entries used in caches */
    hrmt_cache_level caches[HRMT_MAX_CACHE_LEVELS]; /* by level; caches[0] is L1d */
    int num_cores;                                  /* cores (logical CPUs if unknown) */
    /* "hwloc", "sysfs" or "default", with "+env" appended when an HRMT_CACHE_*
     * override applied; a static string */
    const char *source;
} hrmt_topology;

/* Detects the cache hierarchy with hwloc (sysfs fallback, then defaults: 32 KiB
 * L1d, 512 KiB L2, 8 MiB L3), then applies HRMT_CACHE_L1D / HRMT_CACHE_L2 /
 * HRMT_CACHE_L3 (positive decimal bytes; empty = unset). Errors: INVALID_ARG
 * (NULL out, a malformed override). */
hrmt_status hrmt_topology_detect(hrmt_topology *out);

/* Fills every level's effective_bytes / effective_source (the rule, also in
 * README "Cache topology"): a private level gives its size ("private"); a shared
 * one this core's share, size / shared_by_cores ("per-core share"). A level set
 * by an HRMT_CACHE_* override keeps that ("env"). For a shared level of L3 or
 * beyond: if it was calibrated (measured_bytes > 0), the share is capped at
 * measured_bytes / min(shared_by_cores, usable_cores) ("calibrated"); if not, a
 * share above max(8 x this core's L2, 8 MiB) is not plausible for one core (a
 * VM sees its host's whole L3, shared with other guests) and is capped there
 * ("plausibility cap"). usable_cores: CPUs this process may run on (0: unknown).
 * Errors: INVALID_ARG (NULL). */
hrmt_status hrmt_topology_effective(hrmt_topology *t, int usable_cores);
/* 1 when some shared level's claimed per-core share exceeds the plausibility
 * bound above, so that a calibration is worth its time; 0 otherwise or for NULL. */
int hrmt_topology_needs_calibration(const hrmt_topology *t);
/* Short calibration (~0.1-0.2 s on an idle core, one thread): pointer-chase latency at doubling
 * working sets from 3x the L2 size up to min(claimed L3, 32 MiB); the plateau
 * ends where latency passes 2x that at 3x L2. Sets measured_bytes of the last
 * level, then re-derives the effective sizes. A level smaller than 3x L2, or a
 * topology without L3, is left unmeasured. Errors: INVALID_ARG (NULL),
 * OUT_OF_MEMORY. */
hrmt_status hrmt_topology_calibrate(hrmt_topology *t, int usable_cores);
/* CPUs this process may run on (its affinity mask), >= 1. */
int hrmt_usable_cores(void);

/* Blocking derived from a topology; a pure function (see hrmt_tile_plan_compute). */
typedef struct hrmt_tile_plan {
    size_t sram_tier_bytes; /* SRAM tier capacity: this core's share of L2 */
    size_t l_tile_bytes;    /* working-set budget of one L-level tile of samples (half) */
    size_t gemm_mr,         /* register tile rows */
        gemm_nr;            /* register tile columns */
    size_t gemm_kc;         /* K block: an MR x KC and KC x NR sliver fit L1 */
    size_t gemm_mc;         /* M block: MC x KC panel of A fills part of L2 */
    size_t gemm_nc;         /* N block: KC x NC panel of W fills part of L3's effective share */
} hrmt_tile_plan;

/* Analytical (Low et al., TOMS 2016) blocking for a register tile mr x nr and
 * element size elem_bytes; KC/MC/NC are in elements. HRMT_GEMM_KC/MC/NC environment
 * variables are NOT read here (the context applies them), so this stays a pure
 * function. Errors: INVALID_ARG (NULL, zero mr/nr/elem_bytes, no L1 level, a
 * level with impossible sizes), OVERFLOW. */
hrmt_status hrmt_tile_plan_compute(const hrmt_topology *topo, size_t mr, size_t nr,
                                   size_t elem_bytes, hrmt_tile_plan *out);

/* ------------------------------------------------------------------------- */
/* Context                                                                   */
/* ------------------------------------------------------------------------- */

/* Opaque: kernel table (ISA), thread count, topology, tile plan, tier manager and
 * the last error message. Create with hrmt_context_create(). */
typedef struct hrmt_context hrmt_context;

/* Which backend a context runs on. */
typedef enum hrmt_backend_kind {
    HRMT_BACKEND_CPU = 0, /* the CPU kernel tables */
    HRMT_BACKEND_CUDA = 1 /* CUDA; only in builds with the CUDA backend */
} hrmt_backend_kind;

/* Limits on sizes that come from input the library does not control: a model
 * config (JSON, or a model file's metadata), a safetensors header, a carry's
 * batch, the OpenMP environment. A value above its limit is refused with
 * HRMT_ERR_LIMIT (HEADER_SIZE for the header) and a message naming the value,
 * the limit, its field here and its environment variable; nothing is clamped.
 * Each limit has a fixed ceiling that keeps the size arithmetic far from
 * overflow. Defaults, variables and ceilings: docs/LIMITS.md. */
typedef struct hrmt_limits {
    int64_t hidden_size;    /* hidden_size, puzzle_emb_ndim (8192; HRMT_LIMIT_HIDDEN_SIZE) */
    int64_t num_heads;      /* num_heads (256; HRMT_LIMIT_NUM_HEADS) */
    int64_t layers;         /* H_layers, L_layers, each (64; HRMT_LIMIT_LAYERS) */
    int64_t cycles;         /* H_cycles, L_cycles, each (64; HRMT_LIMIT_CYCLES) */
    int64_t halt_max_steps; /* halt_max_steps (1024; HRMT_LIMIT_HALT_MAX_STEPS) */
    int64_t seq_len;        /* seq_len + puzzle prefix rows (4096; HRMT_LIMIT_SEQ_LEN) */
    int64_t vocab_size;     /* vocab_size (2^20; HRMT_LIMIT_VOCAB_SIZE) */
    int64_t puzzle_ids;     /* num_puzzle_identifiers (2^24; HRMT_LIMIT_PUZZLE_IDS) */
    int64_t params;         /* weights of the whole model (2^30; HRMT_LIMIT_PARAMS) */
    int64_t batch_tokens;   /* carry batch x (seq_len + prefix) (2^21; HRMT_LIMIT_BATCH_TOKENS) */
    int64_t threads;        /* a context's threads (4096; HRMT_LIMIT_THREADS) */
    int64_t header_bytes;   /* safetensors header (100 MB = ceiling; HRMT_LIMIT_HEADER_BYTES) */
    int64_t tensors;        /* safetensors tensors, metadata keys (16384; HRMT_LIMIT_TENSORS) */
} hrmt_limits;

/* The documented defaults (no environment read). */
hrmt_limits hrmt_limits_default(void);

/* Options of hrmt_context_create(); start from hrmt_context_default_options(). */
typedef struct hrmt_context_options {
    hrmt_backend_kind backend; /* CPU (default; HRMT_BACKEND may change it) or CUDA */
    const char *isa;           /* NULL or "": HRMT_ISA env var, else the best available */
    int num_threads;           /* 0..limits.threads; 0: omp_get_max_threads() (OMP_NUM_THREADS) */
    size_t sram_tier_bytes;    /* tier-manager SRAM capacity; 0: the tile plan's */
    size_t event_log_cap;      /* 0: default (4096 events); the log is a ring */
    int event_log_enabled;     /* nonzero to record events */
    const hrmt_limits *limits; /* NULL: hrmt_limits_default() with HRMT_LIMIT_* overrides from
                                * the environment; else exactly these (environment ignored) */
    int cuda_graphs; /* CUDA contexts: 1 records each carry's ACT step once as a CUDA graph and
                      * replays it (same kernels, same bits, far fewer launches), -1 launches
                      * kernel by kernel, 0 the default: on unless HRMT_CUDA_GRAPHS=0 */
} hrmt_context_options;

/* Default options (CPU, auto ISA, default threads, event log on). */
hrmt_context_options hrmt_context_default_options(void);

/* Creates a context; the caller destroys it with hrmt_context_destroy(). opts may
 * be NULL (defaults). Reads HRMT_ISA, HRMT_CACHE_*, HRMT_GEMM_KC/MC/NC and, without
 * opts->limits, HRMT_LIMIT_*; CUDA contexts HRMT_CUDA_DEVICE and HRMT_CUDA_GRAPHS. When a
 * claimed shared cache is implausible (hrmt_topology_needs_calibration), runs
 * hrmt_topology_calibrate once for this context unless HRMT_CALIBRATE=0 (then the
 * plausibility cap applies); the tile plan sizes from the effective sizes. On
 * failure *out is NULL and, where possible, `errbuf` (may be NULL) receives a
 * message. Errors: INVALID_ARG (NULL out, negative num_threads, backend out of
 * range, a malformed environment override, a limit below 1 or above its
 * ceiling), LIMIT (num_threads, or the OpenMP default team: OMP_NUM_THREADS or
 * the core count, above limits.threads), ISA,
 * NO_DEVICE, OUT_OF_MEMORY, OVERFLOW. */
hrmt_status hrmt_context_create(const hrmt_context_options *opts, hrmt_context **out, char *errbuf,
                                size_t errbuf_len);
/* Destroys the context and its tier manager (and every tensor in it). */
void hrmt_context_destroy(hrmt_context *ctx);

/* Message describing the last failure in this context ("" if none; "" for NULL).
 * The buffer belongs to the context: successful calls leave it, the next failing
 * call overwrites it, hrmt_context_destroy() frees it. */
const char *hrmt_last_error(const hrmt_context *ctx);

/* The context's limits (never NULL for a context; the defaults for NULL). */
const hrmt_limits *hrmt_context_limits(const hrmt_context *ctx);
/* Replaces the context's limits for later calls (the thread count, fixed at
 * creation, is not re-checked). Errors: INVALID_ARG (NULL, or a field below 1
 * or above its ceiling; the message names it). */
hrmt_status hrmt_context_set_limits(hrmt_context *ctx, const hrmt_limits *limits);

/* ISA of the context's kernel table. */
hrmt_isa hrmt_context_isa(const hrmt_context *ctx);
/* OpenMP team size the context's calls use (>= 1). */
int hrmt_context_threads(const hrmt_context *ctx);
/* The detected topology; owned by the context. */
const hrmt_topology *hrmt_context_topology(const hrmt_context *ctx);
/* The tile plan, after HRMT_GEMM_KC/MC/NC overrides; owned by the context. */
const hrmt_tile_plan *hrmt_context_tile_plan(const hrmt_context *ctx);
/* Backend the context was created for. */
hrmt_backend_kind hrmt_context_backend(const hrmt_context *ctx);
/* 1 when a CUDA context replays each carry's ACT step as a CUDA graph (the
 * option or HRMT_CUDA_GRAPHS as resolved at creation), 0 otherwise (and for
 * CPU contexts and NULL). */
int hrmt_context_cuda_graphs(const hrmt_context *ctx);

/* Ops a backend can be asked about (ggml's supports_op). */
typedef enum hrmt_op {
    HRMT_OP_COPY = 0,         /* hrmt_copy */
    HRMT_OP_CONVERT,          /* hrmt_convert: bf16 to/from f32 */
    HRMT_OP_ADD,              /* hrmt_add */
    HRMT_OP_RMSNORM,          /* hrmt_rmsnorm */
    HRMT_OP_RESIDUAL_RMSNORM, /* hrmt_residual_rmsnorm (both variants) */
    HRMT_OP_SWIGLU,           /* hrmt_swiglu */
    HRMT_OP_SOFTMAX,          /* hrmt_softmax */
    HRMT_OP_ROPE,             /* hrmt_rope */
    HRMT_OP_EMBEDDING,        /* hrmt_embedding (table and out of the asked dtype) */
    HRMT_OP_ENGRAM_GATE_FWD,  /* hrmt_engram_gate_fwd (BF16 only) */
    HRMT_OP_ENGRAM_GATE_BWD,  /* hrmt_engram_gate_bwd (BF16 only) */
    HRMT_OP_GEMM,             /* hrmt_gemm, hrmt_gemm_packed (F32, BF16) */
    HRMT_OP_ATTENTION,        /* no standalone op (the model's own); always reported 0 */
    HRMT_OP_COUNT             /* number of ops; not an op */
} hrmt_op;

/* "copy", "convert", "add", "rmsnorm" ... (lower case); "?" for invalid. Static. */
const char *hrmt_op_name(hrmt_op op);
/* 1 if the context's backend has a kernel for (op, dtype), else 0 (also for NULL
 * ctx or invalid op/dtype). COPY accepts any dtype. */
int hrmt_supports(const hrmt_context *ctx, hrmt_op op, hrmt_dtype dtype);

/* CUDA information for `hrmt info`. */
typedef struct hrmt_cuda_info {
    int built;               /* library compiled with the CUDA backend */
    int device_count;        /* CUDA devices found; 0 when not built */
    char name[256];          /* device name, NUL-terminated; "" when none */
    size_t smem_per_block;   /* shared memory per block, bytes */
    size_t l2_bytes;         /* L2 cache size, bytes */
    size_t global_mem_bytes; /* device memory, bytes */
    int device;              /* ordinal described (HRMT_CUDA_DEVICE, else 0) */
    int cc_major, cc_minor;  /* compute capability (9.0 for H100/H200) */
    int sm_count;            /* streaming multiprocessors */
    size_t smem_per_sm;      /* shared memory per SM, bytes (a CUDA context's SRAM tier) */
    int driver_version;      /* cudaDriverGetVersion (e.g. 13000); 0 when no driver */
    int runtime_version;     /* cudaRuntimeGetVersion of the linked runtime */
} hrmt_cuda_info;
/* Fills *out: device count and, when there is one, the properties of device
 * HRMT_CUDA_DEVICE (else 0). All zero in a build without CUDA; built = 1 and
 * device_count 0 when the driver or the device is missing: never fails for
 * lack of a GPU. Errors: INVALID_ARG (NULL out). */
hrmt_status hrmt_cuda_query(hrmt_cuda_info *out);

/* ------------------------------------------------------------------------- */
/* CUDA contexts and device memory                                           */
/* ------------------------------------------------------------------------- */
/* A CUDA context comes from hrmt_context_create with options.backend =
 * HRMT_BACKEND_CUDA, or with the default CPU backend (or NULL options) while
 * the environment has HRMT_BACKEND=cuda (HRMT_BACKEND=cpu or unset: CPU; any
 * other value: INVALID_ARG), so a program moves to the GPU without a rebuild.
 * It opens device HRMT_CUDA_DEVICE (decimal ordinal, default 0; malformed:
 * INVALID_ARG); without the backend built, a driver, or that device, creation
 * fails with NO_DEVICE and a message. It still detects the CPU topology and
 * tile plan (host-side code uses them); its tier manager's SRAM capacity is
 * the device's shared memory per SM unless options.sram_tier_bytes is set.
 * hrmt_context_isa() names the host-side CPU table.
 *
 * Ops on a CUDA context run on the device, on the calling host thread's
 * default stream (cudaStreamPerThread), asynchronously: an op returns once its
 * work is queued; hrmt_download and hrmt_context_synchronize wait for it. Row
 * ops give the same bits as the CPU scalar table. GEMM runs cuBLASLt (F32
 * without TF32; BF16 on tensor cores with F32 accumulation); the packed-W
 * API (hrmt_gemm_pack_w, hrmt_gemm_packed) is CPU-only: UNSUPPORTED on a CUDA
 * context, use hrmt_gemm with the device W. Embedding ids live on the device
 * and are range-checked there before the gather (INVALID_ARG names the first
 * bad one). hrmt_engram_fuse_weight / hrmt_engram_split_weight_grad stage
 * through host memory (weight-sized, once per step).
 *
 * Tensors of a CUDA context live in device memory: allocate with
 * hrmt_device_alloc, describe with hrmt_tensor_init_device (or set .device =
 * HRMT_DEVICE_CUDA), move data with hrmt_upload / hrmt_download. A host tensor
 * on a CUDA context, a device tensor on a CPU context, and a CUDA-labelled
 * pointer that is not device memory are UNSUPPORTED. A CUDA failure found
 * after an op (launch or execution) returns CUDA with CUDA's message in
 * hrmt_last_error(); execution faults are sticky in CUDA, so the context
 * (and the process's others on that device) cannot recover from them. */

/* The device this context's tensors live on: HOST or CUDA. NULL: HOST. */
hrmt_device hrmt_context_device(const hrmt_context *ctx);
/* Allocates nbytes (0 allowed: a valid unique pointer) of device memory,
 * 256-byte aligned, uninitialised; free with hrmt_device_free on a context of
 * the same device. On failure *out is NULL. Errors: INVALID_ARG (NULL),
 * UNSUPPORTED (a CPU context), OUT_OF_MEMORY (the device has not that much
 * free), CUDA. */
hrmt_status hrmt_device_alloc(hrmt_context *ctx, size_t nbytes, void **out);
/* Frees memory from hrmt_device_alloc (waits for queued work first). NULL p,
 * NULL ctx or a CPU context: no-op. */
void hrmt_device_free(hrmt_context *ctx, void *p);
/* Copies nbytes host -> device (into hrmt_device_alloc memory) after the
 * queued ops, and waits. nbytes 0: OK, pointers unchecked. Errors: INVALID_ARG
 * (NULL pointer), UNSUPPORTED (a CPU context, or dst_dev not device memory),
 * CUDA (a fault, also one left by an earlier op). */
hrmt_status hrmt_upload(hrmt_context *ctx, void *dst_dev, const void *src_host, size_t nbytes);
/* Copies nbytes device -> host after the queued ops, and waits. Errors as
 * hrmt_upload (src_dev must be device memory). */
hrmt_status hrmt_download(hrmt_context *ctx, void *dst_host, const void *src_dev, size_t nbytes);
/* Waits until every op this thread queued on ctx has finished; reports an
 * asynchronous fault as CUDA. A CPU context returns OK at once (its ops are
 * synchronous). Errors: INVALID_ARG (NULL), CUDA. */
hrmt_status hrmt_context_synchronize(hrmt_context *ctx);
/* hrmt_tensor_init for device memory: the same contiguous row-major
 * descriptor with device = HRMT_DEVICE_CUDA. Errors: as hrmt_tensor_init. */
hrmt_status hrmt_tensor_init_device(hrmt_tensor *t, void *data, hrmt_dtype dtype, int ndim,
                                    const size_t *shape);

/* ------------------------------------------------------------------------- */
/* Tier manager (one per context; hrmt_context_tiers)                        */
/* ------------------------------------------------------------------------- */

/* Opaque tier manager: named tensors in an SRAM arena (one preallocated block of
 * the SRAM capacity) or on the DRAM heap, per-tier statistics, a bounded event
 * log and per-thread tier scopes. Its functions lock it internally, so one
 * manager may be used from several threads (OpenMP threads included). */
typedef struct hrmt_tiers hrmt_tiers;

/* Kind of a tier event or statistic. */
typedef enum hrmt_tier_op {
    HRMT_TIER_OP_ALLOC = 0, /* a tensor was allocated (logged by the manager) */
    HRMT_TIER_OP_FREE,      /* a tensor was freed by hrmt_tiers_free (logged by the manager) */
    HRMT_TIER_OP_LOAD,      /* a load reported with hrmt_tiers_record */
    HRMT_TIER_OP_STORE,     /* a store reported with hrmt_tiers_record */
    HRMT_TIER_OP_TRANSFER   /* a copy out of this tier (transfer, copy or record) */
} hrmt_tier_op;

/* One entry of the event log (hrmt_tiers_events). */
typedef struct hrmt_tier_event {
    hrmt_tier tier;     /* tier the event is counted on */
    hrmt_tier_op op;    /* what happened */
    size_t bytes;       /* bytes allocated, freed or moved */
    double duration_us; /* time it took, microseconds */
    double timestamp_s; /* seconds since the manager was created (monotonic) */
} hrmt_tier_event;

/* Statistics of one tier since creation or hrmt_tiers_reset_stats(). Sizes are
 * the tensors' byte sizes (before the arena's 64-byte rounding). */
typedef struct hrmt_tier_stats {
    size_t total_alloc_bytes, /* bytes ever allocated in this tier */
        peak_alloc_bytes,     /* highest current_alloc_bytes */
        current_alloc_bytes;  /* bytes of live tensors */
    uint64_t num_loads,       /* loads recorded */
        num_stores,           /* stores recorded */
        num_transfers;        /* transfers out of this tier */
    double total_load_us,     /* sum of load durations */
        total_store_us,       /* sum of store durations */
        total_transfer_us;    /* sum of transfer durations */
    double mean_load_us,      /* total_load_us / num_loads, 0 when none */
        mean_store_us,        /* total_store_us / num_stores, 0 when none */
        mean_transfer_us;     /* total_transfer_us / num_transfers, 0 when none */
    uint64_t hit_count,       /* SRAM only: SRAM requests placed in the arena */
        miss_count;           /* SRAM only: SRAM requests spilled to DRAM */
    double hit_rate;          /* hits / (hits + misses), 0 when none */
} hrmt_tier_stats;

/* The context's tier manager (NULL for NULL ctx); owned by the context: do not
 * destroy it. */
hrmt_tiers *hrmt_context_tiers(hrmt_context *ctx);

/* Standalone manager (the context owns one already) with an SRAM arena of
 * sram_capacity_bytes and an event ring of event_cap (0: 4096) events, log on.
 * The caller destroys it. On failure *out is NULL. Errors: INVALID_ARG (NULL out,
 * capacity 0), OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_tiers_create(size_t sram_capacity_bytes, size_t event_cap, hrmt_tiers **out);
/* Frees the manager and every tensor in it. Not for the context's manager, and
 * not while other threads use the manager. */
void hrmt_tiers_destroy(hrmt_tiers *tm);

/* Replaces the SRAM arena with one of `bytes`, only while SRAM holds no tensor;
 * statistics are kept. Errors: INVALID_ARG (NULL, 0, SRAM tensors still live),
 * OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_tiers_set_sram_capacity(hrmt_tiers *tm, size_t bytes);
/* SRAM capacity in bytes; 0 for NULL. */
size_t hrmt_tiers_sram_capacity(const hrmt_tiers *tm);
/* Turns the event log on/off and sets its ring capacity (0 keeps the current one;
 * a resize keeps the most recent events). Errors: INVALID_ARG (NULL), OVERFLOW,
 * OUT_OF_MEMORY (then nothing changes). */
hrmt_status hrmt_tiers_set_event_log(hrmt_tiers *tm, int enabled, size_t cap);

/* Allocates a zeroed, 64-byte-aligned host tensor named `name` (non-empty, unique;
 * copied). alloc_sram places it in the SRAM arena when live SRAM bytes + its size
 * fit the capacity and a free extent is large enough (a hit), else in DRAM (a
 * miss); the descriptor's `tier` says where it went. The memory belongs to the
 * manager until hrmt_tiers_free / free_all / destroy. Errors: INVALID_ARG (NULL,
 * empty name, bad ndim/shape/dtype), EXISTS, OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_tiers_alloc_sram(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                  hrmt_dtype dtype, hrmt_tensor *out);
/* As hrmt_tiers_alloc_sram, always in DRAM (no hit or miss counted). */
hrmt_status hrmt_tiers_alloc_dram(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                  hrmt_dtype dtype, hrmt_tensor *out);
/* Copies the descriptor of tensor `name` to *out. Errors: INVALID_ARG (NULL),
 * NOT_FOUND. */
hrmt_status hrmt_tiers_get(hrmt_tiers *tm, const char *name, hrmt_tensor *out);
/* Frees tensor `name` (its descriptors dangle afterwards); logs a FREE event.
 * Errors: INVALID_ARG (NULL), NOT_FOUND. */
hrmt_status hrmt_tiers_free(hrmt_tiers *tm, const char *name);
/* Frees every tensor (no events logged); other statistics are kept. NULL: no-op. */
void hrmt_tiers_free_all(hrmt_tiers *tm);

/* Copies tensor `name` into a new DRAM tensor `<name>_from_sram` (and the reverse,
 * `<name>_from_dram`, allocated like alloc_sram, so it may itself spill); the copy
 * is timed and counted as a transfer on the tier the source is in (the source's
 * tier is not checked). *out receives the new tensor. Errors: INVALID_ARG (NULL),
 * NOT_FOUND (source), EXISTS (destination name), OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_tiers_transfer_sram_to_dram(hrmt_tiers *tm, const char *name, hrmt_tensor *out);
/* The reverse of hrmt_tiers_transfer_sram_to_dram; same errors. */
hrmt_status hrmt_tiers_transfer_dram_to_sram(hrmt_tiers *tm, const char *name, hrmt_tensor *out);
/* Copies between two contiguous host tensors of equal dtype and byte size (any
 * memory, not only the manager's), counted as a transfer from src's tier. Used by
 * schedules to move state between tiers without allocating. The copy itself runs
 * outside the lock. Errors: INVALID_ARG (NULL tensor or data, invalid src tier,
 * ndim outside 1..4), UNSUPPORTED (not host), DTYPE, SHAPE (sizes differ, not
 * contiguous), OVERFLOW. */
hrmt_status hrmt_tiers_copy(hrmt_tiers *tm, const hrmt_tensor *dst, const hrmt_tensor *src);

/* Records a load, store or transfer of `bytes` on `tier` that took `duration_us`
 * (counted and logged). Errors: INVALID_ARG (NULL, invalid tier, op ALLOC or FREE,
 * duration NaN, negative or above 1e300). */
hrmt_status hrmt_tiers_record(hrmt_tiers *tm, hrmt_tier tier, hrmt_tier_op op, size_t bytes,
                              double duration_us);

/* Statistics of `tier`, means and hit rate computed. Errors: INVALID_ARG (NULL,
 * invalid tier). */
hrmt_status hrmt_tiers_stats(hrmt_tiers *tm, hrmt_tier tier, hrmt_tier_stats *out);
/* Copies up to `cap` most recent events, oldest first, into caller memory; *n
 * receives the count. Errors: INVALID_ARG (NULL tm or n, NULL out with cap > 0). */
hrmt_status hrmt_tiers_events(hrmt_tiers *tm, hrmt_tier_event *out, size_t cap, size_t *n);
/* Zeroes both tiers' counters and times, scope times included, and clears the
 * event log. Live tensors' bytes stay as current (and peak). NULL: no-op. */
void hrmt_tiers_reset_stats(hrmt_tiers *tm);
/* Stats of both tiers ("sram", "dram" objects, with scope_time_us) plus the
 * capacity and event-log state as a JSON object string; caller frees with
 * hrmt_free(). Errors: INVALID_ARG (NULL), OUT_OF_MEMORY. */
hrmt_status hrmt_tiers_stats_json(hrmt_tiers *tm, char **out_json);

/* "SRAM/DRAM contexts": brackets L-level (SRAM) and H-level (DRAM) work and
 * accumulates the wall time spent in each tier's scope (exclusive: an inner scope
 * pauses the outer one). Scopes nest per calling thread. On CPU the thread count
 * is not changed; scope_end restores the calling thread's OpenMP default team size
 * to its value at scope_begin. Errors: INVALID_ARG (NULL, invalid tier),
 * OUT_OF_MEMORY. */
hrmt_status hrmt_tiers_scope_begin(hrmt_tiers *tm, hrmt_tier tier);
/* Closes the calling thread's innermost scope, which must be of `tier`.
 * Errors: INVALID_ARG (NULL, invalid tier, no such open scope on this thread). */
hrmt_status hrmt_tiers_scope_end(hrmt_tiers *tm, hrmt_tier tier);
/* Microseconds spent inside `tier` scopes, summed over threads, since creation or
 * reset; 0 for NULL or an invalid tier. */
double hrmt_tiers_scope_time_us(const hrmt_tiers *tm, hrmt_tier tier);

/* ------------------------------------------------------------------------- */
/* Ops (fused kernels). Rows = product of all dims but the last; the last dim */
/* must be contiguous. F32 and BF16 storage, F32 arithmetic.                  */
/* Every op can return INVALID_ARG (NULL ctx, tensor or data; ndim not 1..4), */
/* UNSUPPORTED (tensor not in host memory; no kernel, see hrmt_supports),     */
/* DTYPE (invalid or mismatched dtype), SHAPE (zero dim, last dim strided,    */
/* rows unevenly strided or overlapping, shapes that disagree) and OVERFLOW;  */
/* extra codes are named per op. Outputs are caller memory, written only on   */
/* success.                                                                   */
/* ------------------------------------------------------------------------- */

/* out = x; x and out of one dtype (any; else DTYPE), same row count and length. */
hrmt_status hrmt_copy(hrmt_context *ctx, const hrmt_tensor *x, hrmt_tensor *out);
/* out = convert(x): F32 to/from BF16 (round to nearest even, NaN stays NaN); equal
 * dtypes copy. Same row count and row length. */
hrmt_status hrmt_convert(hrmt_context *ctx, const hrmt_tensor *x, hrmt_tensor *out);
/* out = a + b (input injection); all three the same F32/BF16 dtype and shape. */
hrmt_status hrmt_add(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_tensor *b,
                     hrmt_tensor *out);
/* out = x * rsqrt(mean(x^2) + eps) [* weight] per row; x and out the same dtype and
 * shape; weight (F32, contiguous [cols]) may be NULL. Extra errors: NONFINITE
 * (eps), INVALID_ARG (eps < 0). */
hrmt_status hrmt_rmsnorm(hrmt_context *ctx, const hrmt_tensor *x, const hrmt_tensor *weight,
                         float eps, hrmt_tensor *out);

/* Memory-access variant of hrmt_residual_rmsnorm (same results). */
typedef enum hrmt_variant {
    HRMT_VARIANT_SRAM = 0, /* one pass per row; the output row stays in cache */
    HRMT_VARIANT_DRAM = 1  /* streaming; non-temporal stores when out exceeds the largest cache */
} hrmt_variant;
/* out = rmsnorm(x + residual) (no weight), all the same dtype and shape. For BF16
 * the sum is rounded to BF16 before the norm (as PyTorch's bf16 add does). SRAM and
 * DRAM variants give identical bits. Extra errors: NONFINITE (eps), INVALID_ARG
 * (eps < 0, unknown variant). */
hrmt_status hrmt_residual_rmsnorm(hrmt_context *ctx, const hrmt_tensor *x,
                                  const hrmt_tensor *residual, float eps, hrmt_variant variant,
                                  hrmt_tensor *out);
/* gate_up [rows, 2*inter] (gate first) -> out [rows, inter] = silu(gate) * up;
 * same dtype. */
hrmt_status hrmt_swiglu(hrmt_context *ctx, const hrmt_tensor *gate_up, hrmt_tensor *out);
/* Row softmax of scale*x, max-subtracted; x and out the same dtype and shape.
 * Extra errors: NONFINITE (scale). */
hrmt_status hrmt_softmax(hrmt_context *ctx, const hrmt_tensor *x, float scale, hrmt_tensor *out);
/* In-place half-split RoPE on x (F32/BF16) [tokens, heads, head_dim] (or [batch,
 * tokens, heads, head_dim]), head_dim even, strides free but not overlapping;
 * cos/sin F32 [tokens, head_dim] with equal row strides. Computed in F32. */
hrmt_status hrmt_rope(hrmt_context *ctx, hrmt_tensor *x, const hrmt_tensor *cos_t,
                      const hrmt_tensor *sin_t);
/* out[i, :] = table[ids[i], :]; ids I32, contiguous, n elements of any shape;
 * table [vocab, cols] and out [n, cols] F32/BF16 (converted when they differ).
 * Extra errors: INVALID_ARG (an id outside [0, vocab)). */
hrmt_status hrmt_embedding(hrmt_context *ctx, const hrmt_tensor *table, const hrmt_tensor *ids,
                           hrmt_tensor *out);

/* Engram gate (deepseek-ai/TileKernels). x [T,hc,H] BF16, kv [T,hc+1,H] BF16 (hc
 * keys, then the shared value), weight_fused [hc,H] F32, all contiguous. out
 * [T,hc,H] BF16. Optional (NULL to skip) F32 [T,hc] outputs: dot (raw), gate_score,
 * rstd_x, rstd_k. The struct and its tensors are caller memory. */
typedef struct hrmt_engram_fwd_out {
    hrmt_tensor *out; /* required: gated output */
    hrmt_tensor *dot, /* raw sum(x * w * k) */
        *gate_score,  /* the gate, sigmoid(...) */
        *rstd_x,      /* rsqrt(mean(x^2) + eps) */
        *rstd_k;      /* rsqrt(mean(k^2) + eps) */
} hrmt_engram_fwd_out;
/* weight_fused = w_hidden * w_embed elementwise; inputs [hc,H] F32 or BF16,
 * weight_fused F32 [hc,H]; all contiguous. Runs on the calling thread. */
hrmt_status hrmt_engram_fuse_weight(hrmt_context *ctx, const hrmt_tensor *w_hidden,
                                    const hrmt_tensor *w_embed, hrmt_tensor *weight_fused);
/* Forward gate per (token, head): out = bf16(x + gate * v). Extra errors:
 * INVALID_ARG (NULL outs or outs->out, eps or clamp_value < 0), NONFINITE. */
hrmt_status hrmt_engram_gate_fwd(hrmt_context *ctx, const hrmt_tensor *x, const hrmt_tensor *kv,
                                 const hrmt_tensor *weight_fused, float eps, float clamp_value,
                                 const hrmt_engram_fwd_out *outs);
/* Backward from grad_out [T,hc,H] BF16 and the saved forward values (all four
 * required, F32 [T,hc]). grad_x [T,hc,H], grad_kv [T,hc+1,H] BF16; grad_weight_fused
 * F32 [hc,H] reduced over tokens (same bits for any thread count). Extra errors:
 * INVALID_ARG (clamp_value < 0), NONFINITE, OUT_OF_MEMORY (scratch). */
hrmt_status hrmt_engram_gate_bwd(hrmt_context *ctx, const hrmt_tensor *grad_out,
                                 const hrmt_tensor *x, const hrmt_tensor *kv,
                                 const hrmt_tensor *weight_fused, const hrmt_tensor *dot,
                                 const hrmt_tensor *gate_score, const hrmt_tensor *rstd_x,
                                 const hrmt_tensor *rstd_k, float clamp_value, hrmt_tensor *grad_x,
                                 hrmt_tensor *grad_kv, hrmt_tensor *grad_weight_fused);
/* grad_w_hidden = grad_wf * w_embed, grad_w_embed = grad_wf * w_hidden; grad_wf F32
 * [hc,H], the others [hc,H] F32 or BF16, all contiguous. Runs on the calling
 * thread. */
hrmt_status hrmt_engram_split_weight_grad(hrmt_context *ctx, const hrmt_tensor *grad_weight_fused,
                                          const hrmt_tensor *w_hidden, const hrmt_tensor *w_embed,
                                          hrmt_tensor *grad_w_hidden, hrmt_tensor *grad_w_embed);

/* ------------------------------------------------------------------------- */
/* GEMM: C[M,N] (+)= A[M,K] * W[N,K]^T                                        */
/* ------------------------------------------------------------------------- */

/* W packed once into the context's ISA layout; reusable by every call. Holds a
 * copy of W (no reference to it or to the context); read-only during GEMMs, so
 * concurrent calls may share it. */
typedef struct hrmt_packed_w hrmt_packed_w;

/* Packs W [N,K] (F32 or BF16, host, leading dim = W's stride[0]) for ctx's ISA.
 * Caller destroys with hrmt_packed_w_destroy(); on failure *out is NULL. CPU
 * contexts only (UNSUPPORTED on CUDA). Errors:
 * INVALID_ARG (NULL, zero dim), UNSUPPORTED (not host, no GEMM kernel), SHAPE (not
 * 2-D, last dim strided, stride[0] < K), DTYPE, OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_gemm_pack_w(hrmt_context *ctx, const hrmt_tensor *w, hrmt_packed_w **out);
/* Frees a packed W. */
void hrmt_packed_w_destroy(hrmt_packed_w *pw);

/* C = A * W^T (accumulate != 0: C += A * W^T). A [M,K] F32/BF16, C [M,N]
 * F32/BF16 (rounded to nearest even), leading dims from stride[0]; C must not
 * overlap A or W. Packs W on every call (use hrmt_gemm_packed to reuse it). Same
 * bits for any thread count, blocking or split of M across calls: each output's
 * accumulation order depends on K alone. The order (CPU): with F32 A or F32 W,
 * one F32 fused-multiply-add chain per output over k = 0..K-1 (BF16 W: in
 * k pairs, odd k first); BF16 A x BF16 W on scalar, avx2, avx512 and neon: one
 * F32 chain in vdpbf16ps pair order, k = 1, 0, 3, 2, ... (PyTorch 1.13's
 * oneDNN bits); on amx (AMX tiles, TDPBF16PS): per 32-wide block of k, an
 * even-k and an odd-k F32 FMA chain from +0, their sum, then the running sum
 * plus that, denormals flushed (docs/AMX.md). On a CUDA context: device tensors, cuBLASLt (F32
 * without TF32, BF16 with F32 accumulation), queued asynchronously; extra
 * errors CUDA, and UNSUPPORTED when cuBLASLt has no algorithm for the layout.
 * Errors: INVALID_ARG (NULL, zero dim), UNSUPPORTED (a tensor not on the
 * context's device, no GEMM kernel), SHAPE (not 2-D, last dim strided, stride[0] < row
 * length, shapes disagree), DTYPE, OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_gemm(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_tensor *w, hrmt_tensor *c,
                      int accumulate);
/* As hrmt_gemm with a packed W [N,K] (CPU contexts only: UNSUPPORTED on CUDA).
 * Extra errors: INVALID_ARG (w packed for another ISA). */
hrmt_status hrmt_gemm_packed(hrmt_context *ctx, const hrmt_tensor *a, const hrmt_packed_w *w,
                             hrmt_tensor *c, int accumulate);

/* ------------------------------------------------------------------------- */
/* Memory probes                                                             */
/* ------------------------------------------------------------------------- */

/* Mean ns per dependent load, pointer-chasing a random cyclic permutation of
 * cache-line-sized nodes over `working_set_bytes` (rounded down to 64 bytes) on
 * the calling thread, timed for up to 50 ms or 4M loads after one warm-up lap.
 * On a CUDA context the chase runs on the device instead: one thread (lane 0
 * of one warp) over a random cycle in device memory, ld.global.ca loads (L1
 * cached; the kernel asks for the largest L1 carve-out), so the set's size
 * picks L1, L2 or HBM; timed by the device's ns timer inside the kernel for
 * about 30 ms (64K to 4M loads) after a warm-up lap (sets above 1 MiB: 4096
 * loads, their L2 part already warm from building the cycle); synchronous.
 * Errors: INVALID_ARG (NULL, working set below 128 bytes), OUT_OF_MEMORY
 * (CUDA: more than the device can allocate, the message names cudaMalloc),
 * CUDA. */
hrmt_status hrmt_probe_latency(hrmt_context *ctx, size_t working_set_bytes, double *ns_per_load);

/* Result of hrmt_probe_bandwidth, in GB/s (1e9 bytes per second). */
typedef struct hrmt_bandwidth {
    double read_gbps, /* streaming reads */
        write_gbps,   /* streaming writes */
        copy_gbps;    /* copy counts bytes read + written */
} hrmt_bandwidth;
/* Best of 5 timed trials of streaming read, write and copy (half the set to the
 * other half) over `working_set_bytes`, split across the context's threads.
 * On a CUDA context: device memory split into one slice per block (4 blocks of
 * 512 threads per SM, fewer for small sets), each block streaming its slice
 * with 16-byte accesses (reads L1-cached), trials of about 1 ms timed with
 * cudaEvents; synchronous. Copy counts bytes read + written on both.
 * Errors: INVALID_ARG (NULL, below 128 bytes per thread; CUDA: below 128
 * bytes), OUT_OF_MEMORY, CUDA. */
hrmt_status hrmt_probe_bandwidth(hrmt_context *ctx, size_t working_set_bytes, hrmt_bandwidth *out);

/* ------------------------------------------------------------------------- */
/* HRM model                                                                 */
/* ------------------------------------------------------------------------- */

/* Position encoding of the model. */
typedef enum hrmt_pos_encoding {
    HRMT_POS_ROPE = 0,   /* rotary, half split, base rope_theta */
    HRMT_POS_LEARNED = 1 /* learned position embedding (embed_pos) */
} hrmt_pos_encoding;

/* HRM architecture (the official `arch` config); checked by
 * hrmt_model_config_validate (limits below). */
typedef struct hrmt_model_config {
    int hidden_size;                 /* model width, a multiple of num_heads */
    int num_heads;                   /* attention heads; hidden/heads even for rope */
    double expansion;                /* MLP width factor, (0, 1024] */
    int H_layers,                    /* blocks of the H (slow) level */
        L_layers;                    /* blocks of the L (fast) level */
    int H_cycles,                    /* H-level updates per ACT step */
        L_cycles;                    /* L-level updates per H cycle */
    int seq_len;                     /* tokens per sample */
    int vocab_size;                  /* token ids 0..vocab_size-1 */
    int puzzle_emb_ndim;             /* puzzle embedding width; 0: no puzzle prefix */
    int num_puzzle_identifiers;      /* puzzle ids 0..n-1; >= 1 when puzzle_emb_ndim > 0 */
    hrmt_pos_encoding pos_encodings; /* rope or learned */
    int halt_max_steps;              /* ACT steps every sample runs, >= 1 */
    double rope_theta;               /* 10000 */
    double rms_norm_eps;             /* 1e-5 */
    hrmt_dtype forward_dtype;        /* HRMT_BF16 (default) or HRMT_F32 */
} hrmt_model_config;

/* The official Sudoku config (hidden 512, 8 heads, expansion 4, 4/4 layers,
 * 2/2 cycles, seq 81, vocab 11, puzzle_emb_ndim 512, 1 puzzle id, rope, halt 16,
 * bf16). */
hrmt_model_config hrmt_model_config_default(void);
/* Checks a config against its rules and the context's limits (ctx may be NULL:
 * the default limits). Errors: INVALID_ARG (NULL cfg), CONFIG (an invalid value),
 * LIMIT (a value above hrmt_limits: hidden size, heads, layers, cycles,
 * halt_max_steps, seq_len + prefix, vocab, puzzle ids, parameters); the context
 * message names the field, and for LIMIT the limit and how to raise it. */
hrmt_status hrmt_model_config_validate(hrmt_context *ctx, const hrmt_model_config *cfg);
/* Reads the `arch` object of an HRM case.json / all_config-derived arch.json
 * (or a bare object with the same keys) and validates it; ctx may be NULL. Errors:
 * INVALID_ARG (NULL path/out), IO, OUT_OF_MEMORY, CONFIG (bad JSON, bytes after
 * the JSON value, missing, duplicate or mistyped keys (a second `arch` included),
 * file above 16 MiB, invalid values), LIMIT (as hrmt_model_config_validate). */
hrmt_status hrmt_model_config_load_json(hrmt_context *ctx, const char *path,
                                        hrmt_model_config *out);

/* Opaque model: config and weights packed for its context's ISA. It keeps a
 * pointer to that context, which must outlive it. */
typedef struct hrmt_model hrmt_model;

/* Loads a safetensors model (official key names with the prefix "model.inner.",
 * "_orig_mod.model.inner.", "_orig_mod." or none; F32 or BF16 weights, cast to
 * the forward dtype). cfg NULL: the config is the JSON in the file's
 * metadata entry "arch". Every tensor the config needs is found and its shape
 * and dtype checked before the model is allocated; tensor bytes are read with
 * pread (no mapping), so a file cut while it loads gives FILE_TRUNCATED. Weights
 * must be finite (also after rounding to the forward dtype). The file is closed
 * before returning; the caller destroys the model. Errors: INVALID_ARG, IO,
 * OUT_OF_MEMORY, OVERFLOW, FILE_TRUNCATED, HEADER_SIZE, BAD_JSON, BAD_DTYPE,
 * BAD_OFFSETS, OVERLAP, MISSING_TENSOR, TENSOR_SHAPE, DTYPE (an I32 weight),
 * NONFINITE (a NaN or Inf weight; the message names the tensor), CONFIG, LIMIT
 * (the config's sizes, the header's size or tensor count), UNSUPPORTED (no kernel
 * for the forward dtype). */
hrmt_status hrmt_model_load(hrmt_context *ctx, const char *path, const hrmt_model_config *cfg,
                            hrmt_model **out);

/* Flags of hrmt_model_load_ex, or-ed. */
typedef enum hrmt_load_flags {
    HRMT_LOAD_DEFAULT = 0,
    HRMT_LOAD_ALLOW_NONFINITE = 1 /* accept NaN/Inf weights (for inspecting a broken file) */
} hrmt_load_flags;
/* hrmt_model_load with flags (hrmt_load_flags or-ed; unknown bits: INVALID_ARG). */
hrmt_status hrmt_model_load_ex(hrmt_context *ctx, const char *path, const hrmt_model_config *cfg,
                               unsigned flags, hrmt_model **out);
/* A model with deterministic pseudo-random weights (no file needed); cfg NULL:
 * hrmt_model_config_default(). Errors: INVALID_ARG, CONFIG, LIMIT, UNSUPPORTED,
 * OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_model_create_random(hrmt_context *ctx, const hrmt_model_config *cfg, uint64_t seed,
                                     hrmt_model **out);
/* Frees the model and its weights; destroy its carries first. */
void hrmt_model_destroy(hrmt_model *m);
/* The model's config; owned by the model. NULL for NULL. */
const hrmt_model_config *hrmt_model_get_config(const hrmt_model *m);
/* Matrix-product FLOPs (2*MACs) of one ACT step for `batch` samples (projections,
 * attention products, lm_head and q_head); 0 for NULL or batch < 1. */
double hrmt_model_step_flops(const hrmt_model *m, int batch);

/* How hrmt_act_step runs the reasoning loop; both give bit-identical results. */
typedef enum hrmt_schedule {
    HRMT_SCHEDULE_TIERED = 0,  /* L-level per tile of samples in SRAM-tier buffers */
    HRMT_SCHEDULE_BASELINE = 1 /* op by op over the whole batch from DRAM */
} hrmt_schedule;

/* ACT carry for a batch: z_H, z_L, steps, halted, current data, and the scratch a
 * step needs (allocated once). Bound to one model, which must outlive it. */
typedef struct hrmt_carry hrmt_carry;
/* All samples start halted (the reference's initial_carry). Caller destroys.
 * Errors: INVALID_ARG (NULL, batch outside 1..2^24), LIMIT (batch x (seq_len +
 * prefix) above hrmt_limits.batch_tokens), OUT_OF_MEMORY. */
hrmt_status hrmt_carry_create(hrmt_model *m, int batch, hrmt_carry **out);
/* Frees the carry. */
void hrmt_carry_destroy(hrmt_carry *c);

/* Options of hrmt_act_step (NULL options: tiered, no early halt). */
typedef struct hrmt_step_options {
    hrmt_schedule schedule; /* tiered or baseline */
    int early_halt;         /* opt-in: also halt when q_halt > q_continue (training rule) */
} hrmt_step_options;

/* The parts of a step that hrmt_step_timing.part_us splits its time into. */
typedef enum hrmt_step_part {
    HRMT_PART_EMBED = 0,     /* input embeddings (and puzzle prefix) */
    HRMT_PART_ADD = 1,       /* injections: z + injection, zH + x */
    HRMT_PART_QKV = 2,       /* qkv_proj GEMM */
    HRMT_PART_ATTENTION = 3, /* RoPE + scaled dot-product attention */
    HRMT_PART_O_PROJ = 4,    /* o_proj GEMM */
    HRMT_PART_NORM = 5,      /* residual + RMSNorm (both per block) */
    HRMT_PART_GATE_UP = 6,   /* gate_up_proj GEMM */
    HRMT_PART_SWIGLU = 7,    /* silu(gate) * up */
    HRMT_PART_DOWN = 8,      /* down_proj GEMM */
    HRMT_PART_HEADS = 9,     /* lm_head and q_head GEMMs */
    HRMT_PART_COUNT = 10
} hrmt_step_part;

/* "embed", "add", "qkv", ...: a short lower-case name; NULL when p is out of range. */
const char *hrmt_step_part_name(hrmt_step_part p);

/* Timings of the last step (filled when non-NULL), microseconds. */
typedef struct hrmt_step_timing {
    double l_level_us_total;         /* all L-level calls in the step */
    double h_level_us_total;         /* all H-level calls in the step */
    int l_level_calls,               /* L-level runs (one per L cycle and tile) */
        h_level_calls;               /* H-level runs */
    double h_to_l_transfer_us_total, /* tiered: copying z_L into tiles, building injections */
        l_to_h_transfer_us_total;    /* tiered: copying z_L back out of tiles */
    int transfers;                   /* tiered: tile copies (2 per tile per H cycle) */
    double step_us;                  /* the whole step, output copies excluded */
    /* Where the step went, per hrmt_step_part (CPU contexts; zeros on CUDA,
     * whose kernels run asynchronously). Where the tiered schedule runs tiles
     * on several threads at once, their parts are scaled by wall / busy time
     * as the L-level total is, so the parts never add up to more than step_us;
     * the rest is tile copies, carry bookkeeping and waiting. */
    double part_us[HRMT_PART_COUNT];
} hrmt_step_timing;

/* Outputs of one ACT call, all host F32 except halted (I32). Buffers are
 * owned by the caller, sized: logits [B, seq_len, vocab], q_halt/q_continue
 * [B], z_H/z_L [B, seq_len + puzzle_len, hidden], halted [B]. Any field may be
 * NULL to skip it. */
typedef struct hrmt_step_outputs {
    float *logits;            /* token logits, puzzle prefix dropped */
    float *q_halt_logits;     /* Q value of halting */
    float *q_continue_logits; /* Q value of continuing */
    float *z_H,               /* H state after the step */
        *z_L;                 /* L state after the step */
    int32_t *halted;          /* 1 where the sample halted (it restarts next call) */
} hrmt_step_outputs;

/* One call of the ACT wrapper: halted samples are reset and take the new
 * batch data (inputs I32 [B, seq_len], puzzle_ids I32 [B]; NULL allowed without a
 * puzzle prefix), then the inner model runs once. The tiered schedule borrows
 * tensors `hrm.L_tile<N>.*` from the context's tier manager and both schedules
 * update its statistics. Errors: INVALID_ARG (NULL, carry of another model,
 * missing puzzle_ids, unknown schedule, an id out of range), and from the step:
 * OUT_OF_MEMORY, EXISTS, OVERFLOW; after such a late failure the carry's state is
 * unspecified. */
hrmt_status hrmt_act_step(hrmt_model *m, hrmt_carry *carry, const int32_t *inputs,
                          const int32_t *puzzle_ids, const hrmt_step_options *opts,
                          hrmt_step_outputs *outs, hrmt_step_timing *timing);

/* Number of prefix positions (ceil(puzzle_emb_ndim / hidden)); 0 for NULL. */
int hrmt_model_puzzle_len(const hrmt_model *m);

#ifdef __cplusplus
}
#endif
#endif /* HRMT_H */
