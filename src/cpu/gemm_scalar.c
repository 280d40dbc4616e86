/* GEMM micro-kernel, scalar reference table: one fused multiply-add per k,
 * in increasing k, as the SIMD tables' FMA kernels and the reference
 * PyTorch's OpenBLAS sgemm (attention's P V needs those bits), with
 * cpu/fmaf_exact.h's portable fmaf. */
#include "core/backend.h"
#include "cpu/fmaf_exact.h"
#include "cpu/gemm_common.h"

#define MR 4
#define NR 8

static void f32_gemm_ukr__scalar_4x8(size_t kc, const void *a_, const void *b_,
                                     const hrmt_gemm_ukr_out *o) {
    const float *a = a_, *b = b_;
    float acc[MR][NR];
    for (size_t i = 0; i < MR; i++)
        for (size_t j = 0; j < NR; j++)
            acc[i][j] = o->load ? o->partial[i * o->ld_partial + j] : 0.0f;
    for (size_t k = 0; k < kc; k++, a += MR, b += NR) {
        /* Where every product of this k is exact in float (BF16 operands, the
         * model's linear layers), a rounded add is the fused multiply-add. */
        float prod[MR][NR];
        int exact = 1;
        for (size_t i = 0; i < MR; i++)
            for (size_t j = 0; j < NR; j++) {
                const double p = (double)a[i] * (double)b[j];
                prod[i][j] = (float)p;
                exact &= (double)prod[i][j] == p;
            }
        if (exact)
            for (size_t i = 0; i < MR; i++)
                for (size_t j = 0; j < NR; j++) acc[i][j] += prod[i][j];
        else
            for (size_t i = 0; i < MR; i++)
                for (size_t j = 0; j < NR; j++) acc[i][j] = hrmt_fmaf(a[i], b[j], acc[i][j]);
    }
    if (!o->final) {
        for (size_t i = 0; i < MR; i++)
            for (size_t j = 0; j < NR; j++) o->partial[i * o->ld_partial + j] = acc[i][j];
        return;
    }
    hrmt_gemm_store_tile_generic(&acc[0][0], NR, o);
}

static void f32_gemm_pack_a__scalar_4(size_t m, size_t kc, const void *a, hrmt_dtype a_dt,
                                      size_t lda, void *dst) {
    hrmt_gemm_pack_a_f32_generic(MR, m, kc, a, a_dt, lda, dst);
}

void hrmt_gemm_fill_scalar(hrmt_gemm_kernels *t) {
    *t = (hrmt_gemm_kernels){
        .mr = MR,
        .nr = NR,
        .f32 = {"f32_gemm__scalar_4x8", MR, NR, 1, f32_gemm_ukr__scalar_4x8,
                f32_gemm_pack_a__scalar_4},
        .bf16 = {"none", MR, NR, 2, NULL, NULL},
    };
}
