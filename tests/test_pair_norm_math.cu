/* The two-CTA projection + norm kernel's epilogue arithmetic
 * (src/cuda/sm90a/proj_norm_wgmma.cu), run on the host from the same source
 * (sm90a/norm_epilogue.cuh's residual_pair, sm90a/pair_norm_math.cuh's lane
 * chains, fold and inv, rowops_common.cuh's conversions) over an emulated
 * pair of CTAs: each row's four threads of the wgmma layout per CTA, CTA 0's
 * lane chains handed to CTA 1 as the kernel hands them. The reference is
 * independent: the CPU scalar table's BF16 conversion and residual +
 * RMSNorm (hrmt_convert, hrmt_residual_rmsnorm), which the launch-by-launch
 * GPU step matches bit for bit. Built with nvcc where the CUDA backend is;
 * needs no GPU. The device test cuda_model/fused_norm_* checks the kernel
 * itself. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/sumsq_order.h"
#include "cuda/sm90a/norm_epilogue.cuh"
#include "cuda/sm90a/pair_norm_math.cuh"
extern "C" {
#include "support/test_common.h"
}

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int ROWS = 1024;
constexpr float EPS = 1e-5f;

hrmt_context *scalar_ctx() {
    hrmt_context_options o = hrmt_context_default_options();
    o.isa = "scalar";
    o.num_threads = 1;
    return hrmt_test_context_opts(&o);
}

/* Row r's projection values (F32, the accumulators) and residual (BF16):
 * rows scaled over 2^-12 .. 2^12 and values within a row over 2^-6 .. 2^6
 * of that, so that the sums' rounding depends on their order; a zero row and
 * a row of one repeated value among them. */
void fill(int H, uint64_t seed, float *p, uint16_t *h) {
    hrmt_test_rng rng = {seed};
    for (int r = 0; r < ROWS; r++) {
        const float scale = ldexpf(1.0f, (r * 7) % 25 - 12);
        for (int j = 0; j < H; j++) {
            const float s = ldexpf(scale, (int)(6.5f * hrmt_test_uniform(&rng)));
            float pv = hrmt_test_uniform(&rng) * s, hv = hrmt_test_uniform(&rng) * s;
            if (r == 5) pv = hv = 0.0f;
            if (r == 6) pv = hv = 0.75f;
            p[r * H + j] = pv;
            h[r * H + j] = (uint16_t)(rc::fbits(rc::round_bf16_arith(hv)) >> 16);
        }
    }
}

/* The reference: bf16(p), then residual + RMSNorm on the CPU. */
void reference(int H, const float *p, const uint16_t *h, uint16_t *out) {
    hrmt_context *ctx = scalar_ctx();
    const size_t shape[2] = {(size_t)ROWS, (size_t)H};
    uint16_t *pb = (uint16_t *)malloc((size_t)ROWS * H * 2);
    cr_assert_not_null(pb);
    hrmt_tensor tp, tpb, th, to;
    cr_assert_eq(hrmt_tensor_init(&tp, (void *)p, HRMT_F32, 2, shape), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&tpb, pb, HRMT_BF16, 2, shape), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&th, (void *)h, HRMT_BF16, 2, shape), HRMT_OK);
    cr_assert_eq(hrmt_tensor_init(&to, out, HRMT_BF16, 2, shape), HRMT_OK);
    cr_assert_eq(hrmt_convert(ctx, &tp, &tpb), HRMT_OK, "%s", hrmt_last_error(ctx));
    cr_assert_eq(hrmt_residual_rmsnorm(ctx, &tpb, &th, EPS, HRMT_VARIANT_SRAM, &to), HRMT_OK, "%s",
                 hrmt_last_error(ctx));
    free(pb);
    hrmt_context_destroy(ctx);
}

/* The kernel's epilogue for rows 2 q and 2 q + 1 (its row halves hf = 0, 1)
 * of CTA pair columns [0, H): per CTA r and thread c the accumulators as the
 * wgmma layout holds them, the residual added, the lane chains (CTA 1 on
 * from CTA 0's, through xpart), CTA 1's fold and inv per row, then each
 * CTA's outputs. */
template <int H>
void emulate(const float *p, const uint16_t *h, uint16_t *out, float *inv_out) {
    constexpr int NH = H / 2, NI = NH / 8, GH = NH / 32;
    for (int q = 0; q < ROWS / 2; q++) {
        const int row[2] = {2 * q, 2 * q + 1};
        float acc[2][4][NH / 2]; /* [CTA][thread c][4 i + 2 hf + e] */
        for (int r = 0; r < 2; r++)
            for (int c = 0; c < 4; c++)
                for (int i = 0; i < NI; i++)
                    for (int hf = 0; hf < 2; hf++) {
                        const int col = r * NH + 8 * i + 2 * c;
                        const float *pr = p + (size_t)row[hf] * H + col;
                        const uint16_t *hr = h + (size_t)row[hf] * H + col;
                        float p0 = pr[0], p1 = pr[1];
                        residual_pair(p0, p1, (uint32_t)hr[0] | (uint32_t)hr[1] << 16);
                        acc[r][c][4 * i + 2 * hf] = p0;
                        acc[r][c][4 * i + 2 * hf + 1] = p1;
                    }
        float xpart[2][32]; /* CTA 1's buffer: [row half][reference lane] */
        for (int c = 0; c < 4; c++)
            for (int hf = 0; hf < 2; hf++) {
                float a[4][2];
                pn_lane_chains<GH>(acc[0][c], hf, nullptr, a);
                for (int k = 0; k < 4; k++)
                    for (int e = 0; e < 2; e++) xpart[hf][8 * k + 2 * c + e] = a[k][e];
            }
        for (int hf = 0; hf < 2; hf++) {
            float fq[4][2];
            for (int c = 0; c < 4; c++) {
                float a[4][2];
                pn_lane_chains<GH>(acc[1][c], hf, &xpart[hf][2 * c], a);
                pn_fold(a, fq[c]);
            }
            const float inv = pn_inv(fq, (float)H, EPS);
            inv_out[row[hf]] = inv;
            for (int r = 0; r < 2; r++)
                for (int c = 0; c < 4; c++)
                    for (int i = 0; i < NI; i++) {
                        const uint32_t v =
                            rc::pack_bf16x2_arith(rc::fmul(acc[r][c][4 * i + 2 * hf], inv),
                                                  rc::fmul(acc[r][c][4 * i + 2 * hf + 1], inv));
                        uint16_t *o = out + (size_t)row[hf] * H + r * NH + 8 * i + 2 * c;
                        o[0] = (uint16_t)v;
                        o[1] = (uint16_t)(v >> 16);
                    }
        }
    }
}

/* Row r's inv by the CPU's own order (cpu/sumsq_order.h, every table's) and
 * formula (hrmt_rms_inv), from x = bf16(h + bf16(p)). */
float cpu_inv(int H, const float *p, const uint16_t *h, int r) {
    hrmt_sumsq s;
    hrmt_sumsq_init(&s, (size_t)H);
    float sq[HRMT_SUMSQ_GROUP];
    for (int g = 0; g < H / HRMT_SUMSQ_GROUP; g++) {
        for (int l = 0; l < HRMT_SUMSQ_GROUP; l += 2) {
            const int j = r * H + g * HRMT_SUMSQ_GROUP + l;
            float x0 = p[j], x1 = p[j + 1];
            residual_pair(x0, x1, (uint32_t)h[j] | (uint32_t)h[j + 1] << 16);
            sq[l] = x0 * x0;
            sq[l + 1] = x1 * x1;
        }
        hrmt_sumsq_group(&s, sq);
    }
    return hrmt_rms_inv(hrmt_sumsq_finish(&s, sq, 0), (size_t)H, EPS);
}

/* The same rows normalised with one plain sum of squares in column order:
 * how many rows that changes (the test's inputs must be able to tell orders
 * apart, or the comparison above could not fail on an order mistake). */
int rows_a_plain_sum_changes(int H, const float *p, const uint16_t *h, const uint16_t *ref) {
    int changed = 0;
    for (int r = 0; r < ROWS; r++) {
        float x[512], sum = 0.0f;
        for (int j = 0; j < H; j += 2) {
            float p0 = p[r * H + j], p1 = p[r * H + j + 1];
            residual_pair(p0, p1, (uint32_t)h[r * H + j] | (uint32_t)h[r * H + j + 1] << 16);
            x[j] = p0;
            x[j + 1] = p1;
        }
        for (int j = 0; j < H; j++) sum = rc::fadd(sum, rc::fmul(x[j], x[j]));
        const float inv = rc::fdiv(1.0f, rc::fsqrt(rc::fadd(rc::fdiv(sum, (float)H), EPS)));
        for (int j = 0; j < H; j++)
            if (rc::bf16_bits_arith(rc::fmul(x[j], inv)) != ref[r * H + j]) {
                changed++;
                break;
            }
    }
    return changed;
}

/* The emulated kernel against the reference for one seed's rows; returns
 * how many rows a plain sum would have changed. */
template <int H>
int check(uint64_t seed) {
    const size_t n = (size_t)ROWS * H;
    float *p = (float *)malloc(n * sizeof(float));
    uint16_t *h = (uint16_t *)malloc(n * 2), *ref = (uint16_t *)malloc(n * 2),
             *got = (uint16_t *)malloc(n * 2);
    cr_assert(p && h && ref && got);
    fill(H, seed, p, h);
    reference(H, p, h, ref);
    memset(got, 0xff, n * 2);
    static float inv[ROWS];
    emulate<H>(p, h, got, inv);
    int inv_bad = 0, inv_first = -1;
    for (int r = 0; r < ROWS; r++) {
        const float want = cpu_inv(H, p, h, r);
        if (memcmp(&inv[r], &want, sizeof want) != 0 && inv_bad++ == 0) inv_first = r;
    }
    cr_expect_eq(inv_bad, 0,
                 "hidden %d seed %llu: inv differs from the CPU's in %d of %d rows "
                 "(first: row %d)",
                 H, (unsigned long long)seed, inv_bad, ROWS, inv_first);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != ref[i] && bad++ == 0) first = i;
    cr_expect_eq(bad, 0,
                 "hidden %d seed %llu: %zu of %zu outputs differ, first row %zu col %zu: "
                 "0x%04x vs 0x%04x",
                 H, (unsigned long long)seed, bad, n, first / H, first % H, got[first], ref[first]);
    const int changed = rows_a_plain_sum_changes(H, p, h, ref);
    free(p);
    free(h);
    free(ref);
    free(got);
    return changed;
}

template <int H>
void check_seeds() {
    int changed = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) changed += check<H>(seed);
    cr_expect_gt(changed, 0, "hidden %d: no row tells the sum orders apart", H);
    cr_log_info("hidden %d: a plain sum of squares changes %d of %d rows", H, changed, 8 * ROWS);
}

} // namespace

Test(pair_norm_math, hidden_512_matches_cpu_residual_rmsnorm) { check_seeds<512>(); }
Test(pair_norm_math, hidden_256_matches_cpu_residual_rmsnorm) { check_seeds<256>(); }
