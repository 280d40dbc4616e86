/* GEMM micro-kernel, NEON table (AArch64 Advanced SIMD): 8 x 12 F32 register
 * tile (24 accumulators, 3 registers for the W row, 2 for the A column; 29 of
 * the 32 vector registers). Per k each sum takes one fused multiply-add
 * (FMLA by element), continuing the chain across K blocks as the contract in
 * core/gemm_kernels.h asks. BF16 operands are widened to F32 while packing;
 * there is no BF16 pair kernel (FEAT_BF16 is not assumed). */
#include <arm_neon.h>

#include "core/backend.h"
#include "cpu/gemm_common.h"

#define MR 8
#define NR 12

static void f32_gemm_ukr__neon_8x12(size_t kc, const void *a_, const void *b_,
                                    const hrmt_gemm_ukr_out *o) {
    const float *a = a_, *b = b_;
    float32x4_t c[MR][3];
    if (o->load) {
        for (int i = 0; i < MR; i++) {
            const float *p = o->partial + (size_t)i * o->ld_partial;
            c[i][0] = vld1q_f32(p);
            c[i][1] = vld1q_f32(p + 4);
            c[i][2] = vld1q_f32(p + 8);
        }
    } else {
        for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = c[i][2] = vdupq_n_f32(0.0f);
    }
    for (size_t k = 0; k < kc; k++) {
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8);
        const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);
#define HRMT_ROW(i, av, lane)                         \
    c[i][0] = vfmaq_laneq_f32(c[i][0], b0, av, lane); \
    c[i][1] = vfmaq_laneq_f32(c[i][1], b1, av, lane); \
    c[i][2] = vfmaq_laneq_f32(c[i][2], b2, av, lane)
        HRMT_ROW(0, a0, 0);
        HRMT_ROW(1, a0, 1);
        HRMT_ROW(2, a0, 2);
        HRMT_ROW(3, a0, 3);
        HRMT_ROW(4, a1, 0);
        HRMT_ROW(5, a1, 1);
        HRMT_ROW(6, a1, 2);
        HRMT_ROW(7, a1, 3);
#undef HRMT_ROW
        a += MR;
        b += NR;
    }
    float *dst = o->partial;
    size_t ld = o->ld_partial;
    float tile[MR * NR];
    const int direct =
        o->final && o->c_dt == HRMT_F32 && !o->accumulate && o->m == MR && o->n == NR;
    if (direct) {
        dst = o->c;
        ld = o->ldc;
    } else if (o->final) {
        dst = tile;
        ld = NR;
    }
    for (int i = 0; i < MR; i++) {
        float *p = dst + (size_t)i * ld;
        vst1q_f32(p, c[i][0]);
        vst1q_f32(p + 4, c[i][1]);
        vst1q_f32(p + 8, c[i][2]);
    }
    if (o->final && !direct) hrmt_gemm_store_tile_generic(tile, NR, o);
}

/* Four consecutive k of row i of A as F32. */
static inline float32x4_t ld_a4(const void *a, hrmt_dtype a_dt, size_t lda, size_t i, size_t k) {
    if (a_dt == HRMT_F32) return vld1q_f32((const float *)a + i * lda + k);
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)a + i * lda + k), 16));
}

/* Transposes a 4 x 4 block (rows r0..r3, 4 k each) so that out[q] holds
 * column q: the 4 rows' values at the block's k + q. */
static inline void transpose4(float32x4_t r0, float32x4_t r1, float32x4_t r2, float32x4_t r3,
                              float32x4_t out[4]) {
    const float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1);
    const float32x4_t t2 = vtrn1q_f32(r2, r3), t3 = vtrn2q_f32(r2, r3);
    out[0] =
        vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    out[1] =
        vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    out[2] =
        vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    out[3] =
        vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}

/* Full slivers (m = MR) go through 4 x 4 register transposes, 4 k at a time;
 * partial slivers and the k tail use the portable packer's layout. */
static void f32_gemm_pack_a__neon_8(size_t m, size_t kc, const void *a, hrmt_dtype a_dt, size_t lda,
                                    void *dst_) {
    if (m != MR || kc < 4) {
        hrmt_gemm_pack_a_f32_generic(MR, m, kc, a, a_dt, lda, dst_);
        return;
    }
    float *dst = dst_;
    size_t k = 0;
    for (; k + 4 <= kc; k += 4) {
        float32x4_t lo[4], hi[4];
        transpose4(ld_a4(a, a_dt, lda, 0, k), ld_a4(a, a_dt, lda, 1, k), ld_a4(a, a_dt, lda, 2, k),
                   ld_a4(a, a_dt, lda, 3, k), lo);
        transpose4(ld_a4(a, a_dt, lda, 4, k), ld_a4(a, a_dt, lda, 5, k), ld_a4(a, a_dt, lda, 6, k),
                   ld_a4(a, a_dt, lda, 7, k), hi);
        for (int q = 0; q < 4; q++) {
            vst1q_f32(dst + (k + (size_t)q) * MR, lo[q]);
            vst1q_f32(dst + (k + (size_t)q) * MR + 4, hi[q]);
        }
    }
    for (; k < kc; k++)
        for (size_t i = 0; i < MR; i++)
            dst[k * MR + i] = a_dt == HRMT_F32
                                  ? ((const float *)a)[i * lda + k]
                                  : hrmt_bf16_to_f32(((const uint16_t *)a)[i * lda + k]);
}

void hrmt_gemm_fill_neon(hrmt_gemm_kernels *t) {
    *t = (hrmt_gemm_kernels){
        .mr = MR,
        .nr = NR,
        .f32 = {"f32_gemm__neon_8x12", MR, NR, 1, f32_gemm_ukr__neon_8x12, f32_gemm_pack_a__neon_8},
        .bf16 = {"none", MR, NR, 2, NULL, NULL},
    };
}
