/* AVX2 rmsnorm and residual + rmsnorm, in the scalar reference's order (the
 * sum of squares through cpu/sumsq_order.h), so bit for bit its results. */
#include "cpu/simd_avx2.h"
#include "cpu/sumsq_order.h"

HRMT_AI __m256 h_at(const void *x, const void *r, size_t j, size_t n, int bf, int resid) {
    if (!resid) return hrmt8_ld(x, j, bf, n);
    const __m256 h = _mm256_add_ps(hrmt8_ld(x, j, bf, n), hrmt8_ld(r, j, bf, n));
    return bf ? hrmt8_round_bf16_nonan(h) : h; /* a sum of bf16 values */
}

HRMT_AI void park8(void *park, size_t j, __m256 h, int park_bf, size_t n) {
    if (park_bf)
        hrmt8_st_bits(park, j, hrmt8_pack_bf16(h), n);
    else
        hrmt8_st(park, j, h, 0, n);
}

/* Sum of h*h over a row in the reference order (cpu/sumsq_order.h): the
 * squares of each 32-element group (rounded, no FMA) go through the shared
 * accumulator code; when `park` is set, h is also stored there, as BF16 when
 * park_bf (exact: h already has the storage precision) or F32. */
HRMT_AI float sumsq_row(const void *x, const void *r, size_t cols, int bf, int resid, void *park,
                        int park_bf) {
    hrmt_sumsq s;
    hrmt_sumsq_init(&s, cols);
    float sq[HRMT_SUMSQ_GROUP];
    /* level 0 of the accumulators stays in registers between cascades */
    __m256 a[HRMT_SUMSQ_GROUP / 8];
    for (size_t v = 0; v < HRMT_SUMSQ_GROUP / 8; v++) a[v] = _mm256_setzero_ps();
    size_t j = 0;
    for (; j + HRMT_SUMSQ_GROUP <= cols; j += HRMT_SUMSQ_GROUP) {
        for (size_t v = 0; v < HRMT_SUMSQ_GROUP; v += 8) {
            const __m256 h = h_at(x, r, j + v, 8, bf, resid);
            a[v / 8] = _mm256_add_ps(a[v / 8], _mm256_mul_ps(h, h));
            if (park) park8(park, j + v, h, park_bf, 8);
        }
        if (hrmt_sumsq_tick(&s)) {
            for (size_t v = 0; v < HRMT_SUMSQ_GROUP / 8; v++) {
                _mm256_storeu_ps(s.acc[0] + 8 * v, a[v]);
                a[v] = _mm256_setzero_ps();
            }
            hrmt_sumsq_cascade(&s);
        }
    }
    for (size_t v = 0; v < HRMT_SUMSQ_GROUP / 8; v++) _mm256_storeu_ps(s.acc[0] + 8 * v, a[v]);
    const size_t rest = cols - j;
    for (size_t v = 0; v < rest; v += 8) {
        const size_t n = rest - v >= 8 ? 8 : rest - v;
        const __m256 h = h_at(x, r, j + v, n, bf, resid);
        _mm256_storeu_ps(sq + v, _mm256_mul_ps(h, h));
        if (park) park8(park, j + v, h, park_bf, n);
    }
    return hrmt_sumsq_finish(&s, sq, rest);
}

HRMT_AI void rmsnorm_rows(int bf, size_t rows, size_t cols, const void *x, size_t ldx,
                          const float *w, float eps, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + r * ldx * es;
        char *o = (char *)out + r * ldo * es;
        const __m256 inv =
            _mm256_set1_ps(hrmt_rms_inv(sumsq_row(xr, NULL, cols, bf, 0, NULL, 0), cols, eps));
        if (w)
            HRMT_AVX2_STORE_ROW(cols, o, bf, 0,
                                _mm256_mul_ps(_mm256_mul_ps(hrmt8_ld(xr, j_, bf, n_), inv),
                                              hrmt8_ld(w, j_, 0, n_)));
        else
            HRMT_AVX2_STORE_ROW(cols, o, bf, 0, _mm256_mul_ps(hrmt8_ld(xr, j_, bf, n_), inv));
    }
}

/* The DRAM form parks h of rows up to this long in an F32 stack buffer (L1)
 * instead of recomputing it from x and r for the scale pass. */
#define PARK_MAX 8192

HRMT_AI void resid_rows(int bf, int sram, size_t rows, size_t cols, const void *x, size_t ldx,
                        const void *res, size_t ldr, float eps, void *out, size_t ldo, int nt) {
    const size_t es = bf ? 2 : 4;
    float park[PARK_MAX];
    for (size_t r = 0; r < rows; r++) {
        const char *xr = (const char *)x + r * ldx * es, *rr = (const char *)res + r * ldr * es;
        char *o = (char *)out + r * ldo * es;
        if (sram) {
            const float ss = sumsq_row(xr, rr, cols, bf, 1, o, bf);
            const __m256 inv = _mm256_set1_ps(hrmt_rms_inv(ss, cols, eps));
            HRMT_AVX2_STORE_ROW(cols, o, bf, 0, _mm256_mul_ps(hrmt8_ld(o, j_, bf, n_), inv));
        } else if (cols <= PARK_MAX) {
            const float ss = sumsq_row(xr, rr, cols, bf, 1, park, 0);
            const __m256 inv = _mm256_set1_ps(hrmt_rms_inv(ss, cols, eps));
            HRMT_AVX2_STORE_ROW(cols, o, bf, nt, _mm256_mul_ps(hrmt8_ld(park, j_, 0, n_), inv));
        } else {
            const float ss = sumsq_row(xr, rr, cols, bf, 1, NULL, 0);
            const __m256 inv = _mm256_set1_ps(hrmt_rms_inv(ss, cols, eps));
            HRMT_AVX2_STORE_ROW(cols, o, bf, nt, _mm256_mul_ps(h_at(xr, rr, j_, n_, bf, 1), inv));
        }
    }
    if (nt) _mm_sfence(); /* streaming stores are weakly ordered */
}

static void f32_rmsnorm__avx2_u32(size_t rows, size_t cols, const void *x, size_t ldx,
                                  const float *w, float eps, void *out, size_t ldo) {
    rmsnorm_rows(0, rows, cols, x, ldx, w, eps, out, ldo);
}
static void bf16_rmsnorm__avx2_u32(size_t rows, size_t cols, const void *x, size_t ldx,
                                   const float *w, float eps, void *out, size_t ldo) {
    rmsnorm_rows(1, rows, cols, x, ldx, w, eps, out, ldo);
}
static void f32_residual_rmsnorm_sram__avx2_u32(size_t rows, size_t cols, const void *x, size_t ldx,
                                                const void *r, size_t ldr, float eps, void *out,
                                                size_t ldo) {
    resid_rows(0, 1, rows, cols, x, ldx, r, ldr, eps, out, ldo, 0);
}
static void bf16_residual_rmsnorm_sram__avx2_u32(size_t rows, size_t cols, const void *x,
                                                 size_t ldx, const void *r, size_t ldr, float eps,
                                                 void *out, size_t ldo) {
    resid_rows(1, 1, rows, cols, x, ldx, r, ldr, eps, out, ldo, 0);
}
static void f32_residual_rmsnorm_dram__avx2_u32(size_t rows, size_t cols, const void *x, size_t ldx,
                                                const void *r, size_t ldr, float eps, void *out,
                                                size_t ldo, int nt) {
    resid_rows(0, 0, rows, cols, x, ldx, r, ldr, eps, out, ldo, nt);
}
static void bf16_residual_rmsnorm_dram__avx2_u32(size_t rows, size_t cols, const void *x,
                                                 size_t ldx, const void *r, size_t ldr, float eps,
                                                 void *out, size_t ldo, int nt) {
    resid_rows(1, 0, rows, cols, x, ldx, r, ldr, eps, out, ldo, nt);
}

void hrmt_norm_fill_avx2(hrmt_rowops *t) {
    t->rmsnorm[HRMT_F32] = f32_rmsnorm__avx2_u32;
    t->rmsnorm[HRMT_BF16] = bf16_rmsnorm__avx2_u32;
    t->residual_rmsnorm_sram[HRMT_F32] = f32_residual_rmsnorm_sram__avx2_u32;
    t->residual_rmsnorm_sram[HRMT_BF16] = bf16_residual_rmsnorm_sram__avx2_u32;
    t->residual_rmsnorm_dram[HRMT_F32] = f32_residual_rmsnorm_dram__avx2_u32;
    t->residual_rmsnorm_dram[HRMT_BF16] = bf16_residual_rmsnorm_dram__avx2_u32;
}
