/* hrmt_cuda_gemm: C[m,n] (+)= A[m,k] * W[n,k]^T through cuBLASLt.
 *
 * Row-major X with leading dim ld is column-major X^T with the same ld, so
 * C^T[n,m] = W[n,k] * A^T[k,m]: cuBLASLt's "A" is our W (stored k x n,
 * op T), its "B" is our A (stored k x m, op N), its C/D our C (n x m). TN is
 * also cuBLASLt's fastest layout.
 *
 * Precision: F32 inputs use CUBLAS_COMPUTE_32F_PEDANTIC (never TF32; plain
 * 32F as a fallback when no pedantic algorithm exists, also TF32-free since
 * only *_FAST_TF32 enables it in cuBLASLt); BF16 inputs use tensor cores with
 * F32 accumulation (CUBLAS_COMPUTE_32F). Mixed A/W dtypes widen the BF16 one
 * to F32 first (exact). cuBLASLt has no F32-input, BF16-output kernel, and
 * its BF16-C epilogue rounds twice when accumulating, so those cases compute
 * into an F32 staging C (holding the old C when accumulating) and round once
 * to BF16 (RNE, NaN kept quiet, as core/bf16.h).
 *
 * One handle and a 32 MiB workspace per context; the matmul descriptor,
 * layouts and the heuristic's algorithm are cached per problem key (shape,
 * leading dims, dtypes, pointer alignments), so a model's repeated GEMMs pay
 * for the heuristic once. */
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "cuda/bf16.cuh"

#include "cuda/cuda_backend.h"
#include "cuda/cuda_internal.cuh"

#define HRMT_CUDA_WORKSPACE ((size_t)32 << 20)

static hrmt_status lt_map(cublasStatus_t st, const char *what, char *err, size_t errlen) {
    if (st == CUBLAS_STATUS_SUCCESS) return HRMT_OK;
    hrmt_cuda_put_err(err, errlen, "%s: %s (%s)", what, cublasLtGetStatusString(st),
                      cublasLtGetStatusName(st));
    if (st == CUBLAS_STATUS_ALLOC_FAILED) return HRMT_ERR_OUT_OF_MEMORY;
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) return HRMT_ERR_UNSUPPORTED;
    return HRMT_ERR_CUDA;
}

hrmt_status hrmt_cuda_gemm_init(hrmt_cuda *c, char *err, size_t errlen) {
    hrmt_status s = lt_map(cublasLtCreate(&c->lt), "cublasLtCreate", err, errlen);
    if (s != HRMT_OK) {
        c->lt = NULL;
        return s;
    }
    s = hrmt_cuda_map(cudaMalloc(&c->workspace, HRMT_CUDA_WORKSPACE),
                      "cudaMalloc(cuBLASLt workspace, 32 MiB)", err, errlen);
    if (s != HRMT_OK) {
        (void)cudaGetLastError();
        c->workspace = NULL;
        return s;
    }
    c->ws_bytes = HRMT_CUDA_WORKSPACE;
    return HRMT_OK;
}

static void plan_release(hrmt_gemm_plan *p) {
    if (!p->used) return;
    /* Destroy calls only fail on NULL handles, which a used plan has none of. */
    (void)cublasLtMatrixLayoutDestroy(p->la);
    (void)cublasLtMatrixLayoutDestroy(p->lb);
    (void)cublasLtMatrixLayoutDestroy(p->lc);
    (void)cublasLtMatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}

void hrmt_cuda_gemm_fini(hrmt_cuda *c) {
    for (int i = 0; i < HRMT_CUDA_GEMM_CACHE; i++) plan_release(&c->plans[i]);
    if (c->workspace) (void)cudaFree(c->workspace);
    if (c->scratch) (void)cudaFree(c->scratch);
    if (c->lt) (void)cublasLtDestroy(c->lt);
    c->workspace = c->scratch = NULL;
    c->lt = NULL;
}

/* ---- conversion kernels (staging) ------------------------------------------ */

/* dst[r*cols + j] = f32(src[r*ld + j]) for BF16 src (exact). */
__global__ void hrmt_gemm_widen_kernel(const uint16_t *src, unsigned long long rows,
                                       unsigned long long cols, unsigned long long ld, float *dst) {
    const unsigned long long total = rows * cols;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < total; i += stride) {
        const unsigned long long r = i / cols, j = i % cols;
        dst[i] = __uint_as_float((uint32_t)src[r * ld + j] << 16);
    }
}

/* F32 C (ldsrc) <-> BF16 C (lddst): to_bf16 rounds, else widens. */
__global__ void hrmt_gemm_c_kernel(int to_bf16, float *f, unsigned long long ldf, uint16_t *h,
                                   unsigned long long ldh, unsigned long long rows,
                                   unsigned long long cols) {
    const unsigned long long total = rows * cols;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
         i < total; i += stride) {
        const unsigned long long r = i / cols, j = i % cols;
        if (to_bf16)
            h[r * ldh + j] = hrmt_cu_f32_to_bf16(f[r * ldf + j]);
        else
            f[r * ldf + j] = __uint_as_float((uint32_t)h[r * ldh + j] << 16);
    }
}

static unsigned grid_for(size_t total) {
    size_t b = (total + 255) / 256;
    return (unsigned)(b > 65535 ? 65535 : (b ? b : 1));
}

/* Grows the staging buffer to `need` bytes (cudaFree synchronises, so no
 * queued kernel still reads the old one). */
static hrmt_status ensure_scratch(hrmt_cuda *c, size_t need, char *err, size_t errlen) {
    if (need <= c->scratch_bytes) return HRMT_OK;
    if (c->scratch) {
        hrmt_status s = hrmt_cuda_map(cudaFree(c->scratch), "cudaFree(GEMM staging)", err, errlen);
        c->scratch = NULL;
        c->scratch_bytes = 0;
        if (s != HRMT_OK) return s;
    }
    cudaError_t e = cudaMalloc(&c->scratch, need);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        c->scratch = NULL;
        char what[96];
        snprintf(what, sizeof what, "cudaMalloc(GEMM staging, %zu bytes)", need);
        return hrmt_cuda_map(e, what, err, errlen);
    }
    c->scratch_bytes = need;
    return HRMT_OK;
}

/* ---- plans ------------------------------------------------------------------ */

static unsigned align_of(const void *p) {
    uintptr_t a = (uintptr_t)p;
    unsigned al = 256;
    while (al > 1 && (a & (al - 1))) al >>= 1;
    return al;
}

static cudaDataType_t cuda_type(int dt) { return dt == HRMT_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

static hrmt_status try_plan(hrmt_cuda *c, const hrmt_gemm_key *k, cublasComputeType_t ct,
                            hrmt_gemm_plan *p, int *found, char *err, size_t errlen) {
    *found = 0;
    memset(p, 0, sizeof *p);
    const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    hrmt_status s = lt_map(cublasLtMatmulDescCreate(&p->desc, ct, CUDA_R_32F),
                           "cublasLtMatmulDescCreate", err, errlen);
    if (s != HRMT_OK) return s;
    p->used = 1; /* from here plan_release frees what exists */
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0;
    cublasStatus_t st;
    if ((s = lt_map(
             cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT),
             "cublasLtMatmulDescSetAttribute(TRANSA)", err, errlen)) != HRMT_OK ||
        (s = lt_map(
             cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN),
             "cublasLtMatmulDescSetAttribute(TRANSB)", err, errlen)) != HRMT_OK ||
        (s = lt_map(cublasLtMatrixLayoutCreate(&p->la, cuda_type(k->adt), k->k, k->n, k->ldw),
                    "cublasLtMatrixLayoutCreate(W)", err, errlen)) != HRMT_OK ||
        (s = lt_map(cublasLtMatrixLayoutCreate(&p->lb, cuda_type(k->adt), k->k, k->m, k->lda),
                    "cublasLtMatrixLayoutCreate(A)", err, errlen)) != HRMT_OK ||
        (s = lt_map(cublasLtMatrixLayoutCreate(&p->lc, cuda_type(k->cdt), k->n, k->m, k->ldc),
                    "cublasLtMatrixLayoutCreate(C)", err, errlen)) != HRMT_OK ||
        (s = lt_map(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", err,
                    errlen)) != HRMT_OK)
        goto out;
    {
        const uint32_t aw = k->align_w, aa = k->align_a, ac = k->align_c;
        /* Split-K partials only in F32: the in-place and output-type schemes add
         * them up in C's dtype (BF16), a second rounding the CPU never does. */
        const uint32_t red = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        const size_t ws = c->ws_bytes;
        if ((s = lt_map(cublasLtMatmulPreferenceSetAttribute(
                            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
                        "cublasLtMatmulPreferenceSetAttribute(workspace)", err, errlen)) !=
                HRMT_OK ||
            (s = lt_map(cublasLtMatmulPreferenceSetAttribute(
                            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw, sizeof aw),
                        "cublasLtMatmulPreferenceSetAttribute(align A)", err, errlen)) != HRMT_OK ||
            (s = lt_map(cublasLtMatmulPreferenceSetAttribute(
                            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &aa, sizeof aa),
                        "cublasLtMatmulPreferenceSetAttribute(align B)", err, errlen)) != HRMT_OK ||
            (s = lt_map(cublasLtMatmulPreferenceSetAttribute(
                            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac),
                        "cublasLtMatmulPreferenceSetAttribute(align C)", err, errlen)) != HRMT_OK ||
            (s = lt_map(cublasLtMatmulPreferenceSetAttribute(
                            pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac),
                        "cublasLtMatmulPreferenceSetAttribute(align D)", err, errlen)) != HRMT_OK ||
            (s = lt_map(cublasLtMatmulPreferenceSetAttribute(
                            pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof red),
                        "cublasLtMatmulPreferenceSetAttribute(reduction)", err, errlen)) != HRMT_OK)
            goto out;
    }
    st = cublasLtMatmulAlgoGetHeuristic(c->lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res,
                                        &nres);
    if (st == CUBLAS_STATUS_SUCCESS && nres > 0 && res.state == CUBLAS_STATUS_SUCCESS) {
        p->algo = res.algo;
        p->ws_needed = res.workspaceSize;
        p->key = *k;
        *found = 1;
    } else if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) {
        s = lt_map(st, "cublasLtMatmulAlgoGetHeuristic", err, errlen);
    }
out:
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (s != HRMT_OK || !*found) plan_release(p);
    return s;
}

static hrmt_status get_plan(hrmt_cuda *c, const hrmt_gemm_key *k, const hrmt_gemm_plan **out,
                            char *err, size_t errlen) {
    for (int i = 0; i < HRMT_CUDA_GEMM_CACHE; i++)
        if (c->plans[i].used && memcmp(&c->plans[i].key, k, sizeof *k) == 0) {
            *out = &c->plans[i];
            return HRMT_OK;
        }
    hrmt_gemm_plan *slot = &c->plans[c->next_plan];
    c->next_plan = (c->next_plan + 1) % HRMT_CUDA_GEMM_CACHE;
    plan_release(slot);
    int found = 0;
    hrmt_status s;
    if (k->adt == HRMT_F32) {
        s = try_plan(c, k, CUBLAS_COMPUTE_32F_PEDANTIC, slot, &found, err, errlen);
        if (s == HRMT_OK && !found)
            s = try_plan(c, k, CUBLAS_COMPUTE_32F, slot, &found, err, errlen);
    } else {
        s = try_plan(c, k, CUBLAS_COMPUTE_32F, slot, &found, err, errlen);
    }
    if (s != HRMT_OK) return s;
    if (!found) {
        hrmt_cuda_put_err(
            err, errlen,
            "cublasLtMatmulAlgoGetHeuristic: no algorithm for %s x %s -> %s, m %zu n %zu k "
            "%zu, lda %zu ldw %zu ldc %zu",
            hrmt_dtype_name((hrmt_dtype)k->adt), hrmt_dtype_name((hrmt_dtype)k->adt),
            hrmt_dtype_name((hrmt_dtype)k->cdt), k->m, k->n, k->k, k->lda, k->ldw, k->ldc);
        return HRMT_ERR_UNSUPPORTED;
    }
    *out = slot;
    return HRMT_OK;
}

/* ---- entry -------------------------------------------------------------- */

static int mul_ok(size_t a, size_t b, size_t *r) { return !__builtin_mul_overflow(a, b, r); }

hrmt_status hrmt_cuda_gemm(hrmt_cuda *c, size_t m, size_t n, size_t k, const void *a,
                           hrmt_dtype adt, size_t lda, const void *w, hrmt_dtype wdt, size_t ldw,
                           void *cc, hrmt_dtype cdt, size_t ldc, int accumulate, char *err,
                           size_t errlen) {
    if (!c || !a || !w || !cc) {
        hrmt_cuda_put_err(err, errlen, "hrmt_cuda_gemm: NULL argument");
        return HRMT_ERR_INVALID_ARG;
    }
    if (m == 0 || n == 0 || k == 0) {
        hrmt_cuda_put_err(err, errlen, "hrmt_cuda_gemm: zero dimension (m %zu, n %zu, k %zu)", m, n,
                          k);
        return HRMT_ERR_INVALID_ARG;
    }
    const int okdt = (adt == HRMT_F32 || adt == HRMT_BF16) &&
                     (wdt == HRMT_F32 || wdt == HRMT_BF16) && (cdt == HRMT_F32 || cdt == HRMT_BF16);
    if (!okdt) {
        hrmt_cuda_put_err(err, errlen, "hrmt_cuda_gemm: dtypes %s x %s -> %s (want F32 or BF16)",
                          hrmt_dtype_name(adt), hrmt_dtype_name(wdt), hrmt_dtype_name(cdt));
        return HRMT_ERR_DTYPE;
    }
    if (lda < k || ldw < k || ldc < n) {
        hrmt_cuda_put_err(err, errlen,
                          "hrmt_cuda_gemm: lda %zu / ldw %zu < k %zu or ldc %zu < n %zu", lda, ldw,
                          k, ldc, n);
        return HRMT_ERR_SHAPE;
    }
    /* cuBLASLt takes 64-bit sizes but int64 leading dims: stay well inside. */
    const size_t lim = (size_t)1 << 62;
    if (m > lim || n > lim || k > lim || lda > lim || ldw > lim || ldc > lim) {
        hrmt_cuda_put_err(err, errlen, "hrmt_cuda_gemm: sizes too large");
        return HRMT_ERR_OVERFLOW;
    }

    /* Staging: [widened operand][F32 C] in one grow-only buffer. */
    const int widen_a = adt != wdt && adt == HRMT_BF16, widen_w = adt != wdt && wdt == HRMT_BF16;
    const hrmt_dtype in_dt = adt == wdt ? adt : HRMT_F32;
    /* F32 staging C: for F32 inputs (no F32-in, BF16-out kernel) and for any
     * BF16 C that accumulates (measured on an H200: cuBLASLt's BF16-C epilogue
     * with beta = 1 rounds twice, up to ~5 ulps off; the CPU rounds f32(C) +
     * sums once). */
    const int stage_c = cdt == HRMT_BF16 && (in_dt == HRMT_F32 || accumulate);
    size_t wide_bytes = 0, c_bytes = 0, total;
    if ((widen_a && (!mul_ok(m, k, &wide_bytes) || !mul_ok(wide_bytes, 4, &wide_bytes))) ||
        (widen_w && (!mul_ok(n, k, &wide_bytes) || !mul_ok(wide_bytes, 4, &wide_bytes))) ||
        (stage_c && (!mul_ok(m, n, &c_bytes) || !mul_ok(c_bytes, 4, &c_bytes))) ||
        __builtin_add_overflow((wide_bytes + 255) & ~(size_t)255, c_bytes, &total)) {
        hrmt_cuda_put_err(err, errlen, "hrmt_cuda_gemm: staging size overflows");
        return HRMT_ERR_OVERFLOW;
    }
    hrmt_status s;
    if (total > 0 && (s = ensure_scratch(c, total, err, errlen)) != HRMT_OK) return s;
    char *stage = (char *)c->scratch;
    const void *A = a, *W = w;
    size_t LDA = lda, LDW = ldw;
    cudaStream_t st = cudaStreamPerThread;
    if (widen_a || widen_w) {
        const size_t rows = widen_a ? m : n;
        hrmt_gemm_widen_kernel<<<grid_for(rows * k), 256, 0, st>>>(
            (const uint16_t *)(widen_a ? a : w), rows, k, widen_a ? lda : ldw, (float *)stage);
        if ((s = hrmt_cuda_check("hrmt_gemm_widen_kernel launch", err, errlen)) != HRMT_OK)
            return s;
        if (widen_a) {
            A = stage;
            LDA = k;
        } else {
            W = stage;
            LDW = k;
        }
    }
    void *D = cc;
    size_t LDC = ldc;
    hrmt_dtype DT = cdt;
    if (stage_c) {
        D = stage + ((wide_bytes + 255) & ~(size_t)255);
        LDC = n;
        DT = HRMT_F32;
        if (accumulate) {
            hrmt_gemm_c_kernel<<<grid_for(m * n), 256, 0, st>>>(0, (float *)D, n, (uint16_t *)cc,
                                                                ldc, m, n);
            if ((s = hrmt_cuda_check("hrmt_gemm_c_kernel (widen C) launch", err, errlen)) !=
                HRMT_OK)
                return s;
        }
    }

    hrmt_gemm_key key;
    memset(&key, 0, sizeof key); /* padding too: the key is compared with memcmp */
    key.m = m;
    key.n = n;
    key.k = k;
    key.lda = LDA;
    key.ldw = LDW;
    key.ldc = LDC;
    key.adt = in_dt;
    key.cdt = DT;
    key.align_a = align_of(A);
    key.align_w = align_of(W);
    key.align_c = align_of(D);
    const hrmt_gemm_plan *p = NULL;
    if ((s = get_plan(c, &key, &p, err, errlen)) != HRMT_OK) return s;
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    s = lt_map(cublasLtMatmul(c->lt, p->desc, &alpha, W, p->la, A, p->lb, &beta, D, p->lc, D, p->lc,
                              &p->algo, c->workspace, c->ws_bytes, st),
               "cublasLtMatmul", err, errlen);
    if (s != HRMT_OK) return s;
    if (stage_c) {
        hrmt_gemm_c_kernel<<<grid_for(m * n), 256, 0, st>>>(1, (float *)D, n, (uint16_t *)cc, ldc,
                                                            m, n);
        if ((s = hrmt_cuda_check("hrmt_gemm_c_kernel (round C) launch", err, errlen)) != HRMT_OK)
            return s;
    }
    return HRMT_OK;
}
