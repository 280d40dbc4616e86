/* Backend = a table of kernels + the ISA it was built for (ggml's shape,
 * without dlopen). CPU tables are filled once per ISA from the per-area fill
 * functions (rowops_<isa>.c, gemm_<isa>.c); a device backend (CUDA) fills the
 * same struct with device kernels. A NULL entry means "not supported". */
#ifndef HRMT_CORE_BACKEND_H
#define HRMT_CORE_BACKEND_H

#include "core/gemm_kernels.h"
#include "core/rowops.h"
#include "hrmt.h"

typedef struct hrmt_backend {
    const char *name;
    hrmt_backend_kind kind;
    hrmt_isa isa;
    hrmt_rowops rowops;
    hrmt_gemm_kernels gemm;
} hrmt_backend;

/* The CPU table for `isa`, or NULL when this build or this CPU lacks it. */
const hrmt_backend *hrmt_backend_cpu(hrmt_isa isa);
/* The CUDA table (rowops from hrmt_rowops_fill_cuda, no CPU GEMM micro-kernels:
 * GEMM goes to hrmt_cuda_gemm), or NULL in a build without CUDA. */
const hrmt_backend *hrmt_backend_cuda(void);
/* Best ISA this CPU runs and this build has. */
hrmt_isa hrmt_backend_best_isa(void);
/* ggml's supports_op: 1 when the table has a kernel for (op, dtype). For a
 * CUDA table GEMM is answered by the CUDA path (cuBLASLt: F32, BF16). */
int hrmt_backend_supports(const hrmt_backend *be, hrmt_op op, hrmt_dtype dtype);

/* Per-ISA fill functions (each defined in a file compiled with that ISA's flags). */
void hrmt_rowops_fill_scalar(hrmt_rowops *t);
void hrmt_gemm_fill_scalar(hrmt_gemm_kernels *t);
#if defined(HRMT_HAVE_AVX2)
void hrmt_rowops_fill_avx2(hrmt_rowops *t);
void hrmt_gemm_fill_avx2(hrmt_gemm_kernels *t);
#endif
#if defined(HRMT_HAVE_AVX512)
void hrmt_rowops_fill_avx512(hrmt_rowops *t);
void hrmt_gemm_fill_avx512(hrmt_gemm_kernels *t);
#endif
#if defined(HRMT_HAVE_AMX)
/* Adds the AMX tile kernel (bf16_tile) to a filled avx512 GEMM table. */
void hrmt_gemm_fill_amx(hrmt_gemm_kernels *t);
/* Adds the AMX attention (attend_bf16) to a table with bf16_tile. */
void hrmt_attention_fill_amx(hrmt_gemm_kernels *t);
#endif
#if defined(HRMT_HAVE_NEON)
void hrmt_rowops_fill_neon(hrmt_rowops *t);
void hrmt_gemm_fill_neon(hrmt_gemm_kernels *t);
#endif

#endif
