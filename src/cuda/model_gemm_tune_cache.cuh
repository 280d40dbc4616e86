/* The GEMM tuner's picks kept in a file between processes
 * (HRMT_CUDA_GEMM_TUNE_CACHE=PATH, model_gemm_tune_cache.cu): a later load
 * of the same model on the same device and libraries takes the picks from
 * the file instead of timing the candidates (about a second of load time,
 * and picks that move between processes with the timing noise). The file
 * only names picks: model_gemm_tune.cu checks each one against the pinned
 * algorithm's bits before it serves, as it checks its own candidates.
 *
 * Format (text, one record a line):
 *   hrmt-gemm-tune 1
 *   key <what the picks depend on: device, libraries, shapes, options>
 *   bucket <slot> <bucket> <own shape + 1> <cuBLASLt algorithm, 128 hex digits>
 *   glu <bucket> <fused gate_up shape + 1>
 *   exact <rows> <slot> <own shape + 1> <algorithm>
 *   exact_glu <rows> <shape + 1>
 */
#ifndef HRMT_CUDA_MODEL_GEMM_TUNE_CACHE_CUH
#define HRMT_CUDA_MODEL_GEMM_TUNE_CACHE_CUH

#include "cuda/model_internal.cuh"

/* Exact-rows picks a file holds (a step's B T each); a file with more is
 * not read (the tuner then tunes and writes its own). */
#define CU_TUNE_CACHE_EXACT 64
/* Longest key: device name, versions, four slot shapes, options. */
#define CU_TUNE_CACHE_KEY 512

typedef struct cu_tune_cache {
    char *path;
    char key[CU_TUNE_CACHE_KEY];
    /* The file's bucket picks (complete: every slot's buckets and, where
     * glu_lines, every bucket's fused gate_up shape), before their check. */
    int have_buckets;
    int glu_lines; /* the fused gate_up is tuned: its lines are expected */
    cublasLtMatmulAlgo_t small[CU_LT_SLOTS][CU_LT_BUCKETS];
    signed char own[CU_LT_SLOTS][CU_LT_BUCKETS];
    signed char glu_shape[CU_LT_BUCKETS];
    unsigned nexact; /* complete exact entries (tuned 1) */
    cu_exact_pick exact[CU_TUNE_CACHE_EXACT];
} cu_tune_cache;

/* *out NULL when HRMT_CUDA_GEMM_TUNE_CACHE is unset or empty. Else a cache
 * for that path and `key` (one line, no newline), holding the file's picks
 * when the file exists, is a tuning cache and has this key; a file that
 * exists but is another kind of file is HRMT_ERR_IO and is left as it is
 * (the cache would overwrite it); a tuning cache of another key, or one
 * with bad records, holds nothing and is rewritten at the first write.
 * nlt, the slots' count, bounds the slots a record may name. */
hrmt_status cu_tune_cache_open(hrmt_model *m, const char *key, int nlt, int glu_lines,
                               cu_tune_cache **out);
/* The exact entry for `rows`, or NULL. */
const cu_exact_pick *cu_tune_cache_exact(const cu_tune_cache *c, size_t rows);
/* Adds (or replaces) an exact entry; past CU_TUNE_CACHE_EXACT the oldest goes. */
void cu_tune_cache_put_exact(cu_tune_cache *c, const cu_exact_pick *p);
/* Writes the whole cache (buckets only where have_buckets) to a temporary
 * file beside the path, then renames it over the path; HRMT_ERR_IO naming
 * the path when that fails. nlt slots are written. */
hrmt_status cu_tune_cache_write(hrmt_model *m, const cu_tune_cache *c, int nlt);
void cu_tune_cache_free(cu_tune_cache *c);

#endif
