/* Helpers shared by the Criterion tests. */
#ifndef HRMT_TEST_COMMON_H
#define HRMT_TEST_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

/* Creates a context for the ISA in HRMT_ISA (or the best one). When HRMT_ISA
 * names an ISA this CPU lacks, the process exits 77 so ctest reports SKIPPED. */
hrmt_context *hrmt_test_context(void);
/* The same with explicit options (isa/threads/sram capacity). */
hrmt_context *hrmt_test_context_opts(const hrmt_context_options *o);
/* A context on the amx table with `threads` threads (event log off); the
 * calling Criterion test skips, saying why, where the table is missing. */
hrmt_context *hrmt_test_amx_context(int threads);

/* 1 when HRMT_TEST_REQUIRE_CUDA is set and not "0" (bench/gpu.sh sets it on
 * the GPU machine): the CUDA tests then fail, instead of skipping, where
 * they find no CUDA device. */
int hrmt_test_cuda_required(void);

/* Deterministic xorshift random numbers in [-1, 1). */
typedef struct {
    uint64_t s;
} hrmt_test_rng;
float hrmt_test_uniform(hrmt_test_rng *r);

/* Path of a file under tests/data (static buffer). */
const char *hrmt_test_data(const char *rel);

/* The whole of a file, NUL-terminated (free it); NULL when it cannot be
 * opened. */
char *hrmt_test_slurp(const char *path);
/* Writes `text` to `path`, replacing it; the calling test fails on error. */
void hrmt_test_spit(const char *path, const char *text);

#endif
