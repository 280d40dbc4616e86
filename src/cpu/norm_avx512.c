/* AVX-512 rmsnorm and residual + rmsnorm, in the scalar reference's order
 * (the sum of squares through cpu/sumsq_order.h), so bit for bit its
 * results. */
#include "cpu/simd_avx512.h"
#include "cpu/sumsq_order.h"

/* Software prefetch distance of the streaming (DRAM) form, in elements. */
#define PF_AHEAD 1024

/* h at [j, j+16) under mask m: x (plain) or bf16-rounded x + r (resid). */
HRMT_AI __m512 h_at(const void *x, const void *r, size_t j, __mmask16 m, int bf, int resid) {
    if (!resid) return hrmt_ld16m(x, j, bf, m);
    const __m512 h = _mm512_add_ps(hrmt_ld16m(x, j, bf, m), hrmt_ld16m(r, j, bf, m));
    return bf ? hrmt_round_bf16_ps_nonan(h) : h; /* a sum of bf16 values */
}

HRMT_AI void prefetch64(const void *x, const void *r, size_t j, int bf) {
    /* both input streams, 64 elements ahead-of-time: two lines each for BF16,
     * four for F32 */
    const size_t ahead = (j + PF_AHEAD) * (bf ? 2 : 4);
    for (size_t b = 0; b < (bf ? 128u : 256u); b += 64) {
        _mm_prefetch((const char *)x + ahead + b, _MM_HINT_T0);
        _mm_prefetch((const char *)r + ahead + b, _MM_HINT_T0);
    }
}

HRMT_AI void park16(void *park, size_t j, __m512 h, int park_bf, __mmask16 m) {
    if (park_bf)
        _mm256_mask_storeu_epi16((uint16_t *)park + j, m, hrmt_pack_bf16(h));
    else
        _mm512_mask_storeu_ps((float *)park + j, m, h);
}

/* Sum of h*h over a row in the reference order (cpu/sumsq_order.h): the
 * squares of each 32-element group (rounded, no FMA) go through the shared
 * accumulator code; when `park` is set, h is also stored there, as BF16 when
 * park_bf (exact: h already has the storage precision) or F32. */
HRMT_AI float sumsq_row(const void *x, const void *r, size_t cols, int bf, int resid, void *park,
                        int park_bf, int pf) {
    hrmt_sumsq s;
    hrmt_sumsq_init(&s, cols);
    float sq[HRMT_SUMSQ_GROUP];
    const __mmask16 all = (__mmask16)0xffff;
    /* level 0 of the accumulators stays in a0/a1 between cascades (2x on
     * F32 rmsnorm, one thread, L2-resident rows) */
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    size_t j = 0;
    for (; j + HRMT_SUMSQ_GROUP <= cols; j += HRMT_SUMSQ_GROUP) {
        if (pf && j % 64 == 0) prefetch64(x, r, j, bf);
        const __m512 h0 = h_at(x, r, j, all, bf, resid), h1 = h_at(x, r, j + 16, all, bf, resid);
        a0 = _mm512_add_ps(a0, _mm512_mul_ps(h0, h0));
        a1 = _mm512_add_ps(a1, _mm512_mul_ps(h1, h1));
        if (park) {
            park16(park, j, h0, park_bf, all);
            park16(park, j + 16, h1, park_bf, all);
        }
        if (hrmt_sumsq_tick(&s)) {
            _mm512_storeu_ps(s.acc[0], a0);
            _mm512_storeu_ps(s.acc[0] + 16, a1);
            hrmt_sumsq_cascade(&s);
            a0 = a1 = _mm512_setzero_ps();
        }
    }
    _mm512_storeu_ps(s.acc[0], a0);
    _mm512_storeu_ps(s.acc[0] + 16, a1);
    const size_t rest = cols - j;
    for (size_t v = 0; v < rest; v += 16) {
        const __mmask16 m = rest - v >= 16 ? all : hrmt_m16(rest - v);
        const __m512 h = h_at(x, r, j + v, m, bf, resid);
        _mm512_mask_storeu_ps(sq + v, m, _mm512_mul_ps(h, h));
        if (park) park16(park, j + v, h, park_bf, m);
    }
    return hrmt_sumsq_finish(&s, sq, rest);
}

HRMT_AI void rmsnorm_rows(int bf, int hw, size_t rows, size_t cols, const void *x, size_t ldx,
                          const float *w, float eps, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + r * ldx * es;
        char *o = (char *)out + r * ldo * es;
        const __m512 inv =
            _mm512_set1_ps(hrmt_rms_inv(sumsq_row(xr, NULL, cols, bf, 0, NULL, 0, 0), cols, eps));
        if (w)
            HRMT_AVX512_STORE_ROW(cols, o, bf, hw, 0,
                                  _mm512_mul_ps(_mm512_mul_ps(hrmt_ld16m(xr, j_, bf, m_), inv),
                                                _mm512_maskz_loadu_ps(m_, w + j_)));
        else
            HRMT_AVX512_STORE_ROW(cols, o, bf, hw, 0,
                                  _mm512_mul_ps(hrmt_ld16m(xr, j_, bf, m_), inv));
    }
}

/* The DRAM form parks h of rows up to this long in an F32 stack buffer (L1)
 * instead of recomputing it from x and r for the scale pass. */
#define PARK_MAX 8192

HRMT_AI void resid_rows(int bf, int hw, int sram, size_t rows, size_t cols, const void *x,
                        size_t ldx, const void *res, size_t ldr, float eps, void *out, size_t ldo,
                        int nt) {
    const size_t es = bf ? 2 : 4;
    float park[PARK_MAX];
    for (size_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + r * ldx * es, *rr = (const char *)res + r * ldr * es;
        char *o = (char *)out + r * ldo * es;
        if (sram) {
            const float ss = sumsq_row(xr, rr, cols, bf, 1, o, bf, 0);
            const __m512 inv = _mm512_set1_ps(hrmt_rms_inv(ss, cols, eps));
            HRMT_AVX512_STORE_ROW(cols, o, bf, hw, 0,
                                  _mm512_mul_ps(hrmt_ld16m(o, j_, bf, m_), inv));
        } else if (cols <= PARK_MAX) {
            const float ss = sumsq_row(xr, rr, cols, bf, 1, park, 0, 1);
            const __m512 inv = _mm512_set1_ps(hrmt_rms_inv(ss, cols, eps));
            HRMT_AVX512_STORE_ROW(cols, o, bf, hw, nt,
                                  _mm512_mul_ps(hrmt_ld16m(park, j_, 0, m_), inv));
        } else {
            const float ss = sumsq_row(xr, rr, cols, bf, 1, NULL, 0, 1);
            const __m512 inv = _mm512_set1_ps(hrmt_rms_inv(ss, cols, eps));
            HRMT_AVX512_STORE_ROW(cols, o, bf, hw, nt,
                                  _mm512_mul_ps(h_at(xr, rr, j_, m_, bf, 1), inv));
        }
    }
    if (nt) _mm_sfence(); /* streaming stores are weakly ordered */
}

#define RMSNORM(name, bf, hw)                                                             \
    static void name(size_t rows, size_t cols, const void *x, size_t ldx, const float *w, \
                     float eps, void *out, size_t ldo) {                                  \
        rmsnorm_rows(bf, hw, rows, cols, x, ldx, w, eps, out, ldo);                       \
    }
RMSNORM(f32_rmsnorm__avx512_u64, 0, 0)
RMSNORM(bf16_rmsnorm__avx512_u64, 1, 0)
RMSNORM(bf16_rmsnorm__avx512bf16_u64, 1, 1)

#define RESID_SRAM(name, bf, hw)                                                         \
    static void name(size_t rows, size_t cols, const void *x, size_t ldx, const void *r, \
                     size_t ldr, float eps, void *out, size_t ldo) {                     \
        resid_rows(bf, hw, 1, rows, cols, x, ldx, r, ldr, eps, out, ldo, 0);             \
    }
RESID_SRAM(f32_residual_rmsnorm_sram__avx512_u64, 0, 0)
RESID_SRAM(bf16_residual_rmsnorm_sram__avx512_u64, 1, 0)
RESID_SRAM(bf16_residual_rmsnorm_sram__avx512bf16_u64, 1, 1)

#define RESID_DRAM(name, bf, hw)                                                         \
    static void name(size_t rows, size_t cols, const void *x, size_t ldx, const void *r, \
                     size_t ldr, float eps, void *out, size_t ldo, int nt) {             \
        resid_rows(bf, hw, 0, rows, cols, x, ldx, r, ldr, eps, out, ldo, nt);            \
    }
RESID_DRAM(f32_residual_rmsnorm_dram__avx512_u64, 0, 0)
RESID_DRAM(bf16_residual_rmsnorm_dram__avx512_u64, 1, 0)
RESID_DRAM(bf16_residual_rmsnorm_dram__avx512bf16_u64, 1, 1)

void hrmt_norm_fill_avx512(hrmt_rowops *t, int hw) {
    t->rmsnorm[HRMT_F32] = f32_rmsnorm__avx512_u64;
    t->residual_rmsnorm_sram[HRMT_F32] = f32_residual_rmsnorm_sram__avx512_u64;
    t->residual_rmsnorm_dram[HRMT_F32] = f32_residual_rmsnorm_dram__avx512_u64;
    t->rmsnorm[HRMT_BF16] = hw ? bf16_rmsnorm__avx512bf16_u64 : bf16_rmsnorm__avx512_u64;
    t->residual_rmsnorm_sram[HRMT_BF16] =
        hw ? bf16_residual_rmsnorm_sram__avx512bf16_u64 : bf16_residual_rmsnorm_sram__avx512_u64;
    t->residual_rmsnorm_dram[HRMT_BF16] =
        hw ? bf16_residual_rmsnorm_dram__avx512bf16_u64 : bf16_residual_rmsnorm_dram__avx512_u64;
}
