/* AVX2 Engram gate forward and backward (maths in cpu/engram_common.h);
 * element-wise parts in the scalar reference's order (no FMA), row sums with
 * two 8-lane accumulator sets. */
#include "cpu/engram_common.h"
#include "cpu/prefetch_x86.h"
#include "cpu/simd_avx2.h"

/* Row sums of one (token, head): sum x^2, sum k^2 and sum x w k. */
HRMT_AI void engram_sums(size_t hidden, const uint16_t *xr, const uint16_t *kr, const float *w,
                         float *ssx, float *ssk, float *raw) {
    __m256 sx0 = _mm256_setzero_ps(), sx1 = sx0, sk0 = sx0, sk1 = sx0, d0 = sx0, d1 = sx0;
    size_t j = 0;
    for (; j + 16 <= hidden; j += 16) {
        if (j % 32 == 0) {
            hrmt_prefetch_l2(xr + j, HRMT_PF_AHEAD);
            hrmt_prefetch_l2(kr + j, HRMT_PF_AHEAD);
        }
        const __m256 xa = hrmt8_ld(xr, j, 1, 8), xb = hrmt8_ld(xr, j + 8, 1, 8);
        const __m256 ka = hrmt8_ld(kr, j, 1, 8), kb = hrmt8_ld(kr, j + 8, 1, 8);
        sx0 = _mm256_fmadd_ps(xa, xa, sx0);
        sx1 = _mm256_fmadd_ps(xb, xb, sx1);
        sk0 = _mm256_fmadd_ps(ka, ka, sk0);
        sk1 = _mm256_fmadd_ps(kb, kb, sk1);
        d0 = _mm256_fmadd_ps(_mm256_mul_ps(xa, _mm256_loadu_ps(w + j)), ka, d0);
        d1 = _mm256_fmadd_ps(_mm256_mul_ps(xb, _mm256_loadu_ps(w + j + 8)), kb, d1);
    }
    for (; j < hidden; j += 8) {
        const size_t n = hidden - j >= 8 ? 8 : hidden - j;
        const __m256 xa = hrmt8_ld(xr, j, 1, n), ka = hrmt8_ld(kr, j, 1, n);
        sx0 = _mm256_fmadd_ps(xa, xa, sx0);
        sk0 = _mm256_fmadd_ps(ka, ka, sk0);
        d0 = _mm256_fmadd_ps(_mm256_mul_ps(xa, hrmt8_ld(w, j, 0, n)), ka, d0);
    }
    *ssx = hrmt8_hsum(_mm256_add_ps(sx0, sx1));
    *ssk = hrmt8_hsum(_mm256_add_ps(sk0, sk1));
    *raw = hrmt8_hsum(_mm256_add_ps(d0, d1));
}

/* 16 bf16 -> even / odd elements as f32 (no lane crossing); element-wise
 * results do not care about the order of elements within a vector. */
HRMT_AI __m256 even8(__m256i p) { return _mm256_castsi256_ps(_mm256_slli_epi32(p, 16)); }
HRMT_AI __m256 odd8(__m256i p) {
    return _mm256_castsi256_ps(_mm256_and_si256(p, _mm256_set1_epi32((int)0xffff0000u)));
}

/* bf16(x + g v) of 16 elements, in element order. */
HRMT_AI __m256i out16(const uint16_t *xr, const uint16_t *v, size_t j, __m256 gv) {
    const __m256i xp = _mm256_loadu_si256((const __m256i *)(xr + j));
    const __m256i vp = _mm256_loadu_si256((const __m256i *)(v + j));
    const __m256 oe = _mm256_add_ps(even8(xp), _mm256_mul_ps(gv, even8(vp)));
    const __m256 oo = _mm256_add_ps(odd8(xp), _mm256_mul_ps(gv, odd8(vp)));
    return _mm256_or_si256(
        _mm256_srli_epi32(hrmt8_rne_hi16(oe), 16),
        _mm256_and_si256(hrmt8_rne_hi16(oo), _mm256_set1_epi32((int)0xffff0000u)));
}

/* out = bf16(x + g * v) over one row: whole 64-byte lines (streamed when
 * `nt` and the row is line-aligned), then 8-lane pieces. */
HRMT_AI void engram_out_row(size_t hidden, const uint16_t *xr, const uint16_t *v, float g,
                            uint16_t *o, int nt) {
    const __m256 gv = _mm256_set1_ps(g);
    const int stream = nt && ((uintptr_t)o % 64) == 0;
    size_t j = 0;
    for (; j + 32 <= hidden; j += 32) {
        const __m256i a = out16(xr, v, j, gv), b = out16(xr, v, j + 16, gv);
        if (stream) {
            _mm256_stream_si256((__m256i *)(o + j), a);
            _mm256_stream_si256((__m256i *)(o + j + 16), b);
        } else {
            _mm256_storeu_si256((__m256i *)(o + j), a);
            _mm256_storeu_si256((__m256i *)(o + j + 16), b);
        }
    }
    for (; j < hidden; j += 8) {
        const size_t n = hidden - j >= 8 ? 8 : hidden - j;
        hrmt8_st(o, j,
                 _mm256_add_ps(hrmt8_ld(xr, j, 1, n), _mm256_mul_ps(gv, hrmt8_ld(v, j, 1, n))), 1,
                 n);
    }
}

/* Heads of a token in groups of ENGRAM_HB: first every head's sums (x and k
 * rows stream in memory order, then v, which follows the k rows in kv), then
 * every head's output from x (now in L1/L2) and v. */
#define ENGRAM_HB 16

static void bf16_engram_fwd__avx2_u16(size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                                      const uint16_t *kv, const float *wf, float eps, float clamp,
                                      uint16_t *out, float *dot, float *gate, float *rstd_x,
                                      float *rstd_k, int nt) {
    const float scale = hrmt_engram_scale(hidden);
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h0 = 0; h0 < hc; h0 += ENGRAM_HB) {
            const size_t nh = hc - h0 < ENGRAM_HB ? hc - h0 : ENGRAM_HB;
            float gs[ENGRAM_HB];
            for (size_t h = h0; h < h0 + nh; h++) {
                const size_t th = t * hc + h;
                float ssx, ssk, raw;
                engram_sums(hidden, x + th * hidden, kv + (t * (hc + 1) + h) * hidden,
                            wf + h * hidden, &ssx, &ssk, &raw);
                const float rx = hrmt_rms_inv(ssx, hidden, eps);
                const float rk = hrmt_rms_inv(ssk, hidden, eps);
                gs[h - h0] = hrmt_engram_gate(hrmt_engram_d(raw, rx, rk, scale), clamp);
                if (dot) dot[th] = raw;
                if (gate) gate[th] = gs[h - h0];
                if (rstd_x) rstd_x[th] = rx;
                if (rstd_k) rstd_k[th] = rk;
            }
            for (size_t h = h0; h < h0 + nh; h++)
                engram_out_row(hidden, x + (t * hc + h) * hidden, v, gs[h - h0],
                               out + (t * hc + h) * hidden, nt);
        }
    }
    if (nt) _mm_sfence();
}

static void bf16_engram_bwd__avx2_u8(size_t tokens, size_t hc, size_t hidden,
                                     const uint16_t *grad_out, const uint16_t *x,
                                     const uint16_t *kv, const float *wf, const float *dot,
                                     const float *gate, const float *rstd_x, const float *rstd_k,
                                     float clamp, uint16_t *grad_x, uint16_t *grad_kv, float *gw) {
    const float scale = hrmt_engram_scale(hidden), fh = (float)hidden;
    for (size_t t = 0; t < tokens; t++) {
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        for (size_t h = 0; h < hc; h++) {
            const size_t th = t * hc + h;
            const uint16_t *go = grad_out + th * hidden, *xr = x + th * hidden;
            const uint16_t *kr = kv + (t * (hc + 1) + h) * hidden;
            const float *w = wf + h * hidden;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0;
            size_t j = 0;
            for (; j + 16 <= hidden; j += 16) {
                a0 = _mm256_fmadd_ps(hrmt8_ld(go, j, 1, 8), hrmt8_ld(v, j, 1, 8), a0);
                a1 = _mm256_fmadd_ps(hrmt8_ld(go, j + 8, 1, 8), hrmt8_ld(v, j + 8, 1, 8), a1);
            }
            for (; j < hidden; j += 8) {
                const size_t n = hidden - j >= 8 ? 8 : hidden - j;
                a0 = _mm256_fmadd_ps(hrmt8_ld(go, j, 1, n), hrmt8_ld(v, j, 1, n), a0);
            }
            const float dg = hrmt8_hsum(_mm256_add_ps(a0, a1));
            const float rx = rstd_x[th], rk = rstd_k[th], raw = dot[th];
            const float coef = hrmt_engram_coef(dg, gate[th], raw, rx, rk, scale, clamp);
            const __m256 cf = _mm256_set1_ps(coef);
            const __m256 cx = _mm256_set1_ps(raw * rx * rx / fh),
                         ck = _mm256_set1_ps(raw * rk * rk / fh);
            uint16_t *gx = grad_x + th * hidden, *gk = grad_kv + (t * (hc + 1) + h) * hidden;
            float *gwr = gw + h * hidden;
            for (j = 0; j < hidden; j += 8) {
                const size_t n = hidden - j >= 8 ? 8 : hidden - j;
                const __m256 xv = hrmt8_ld(xr, j, 1, n), kvv = hrmt8_ld(kr, j, 1, n);
                const __m256 wv = hrmt8_ld(w, j, 0, n), gov = hrmt8_ld(go, j, 1, n);
                const __m256 dx = _mm256_sub_ps(_mm256_mul_ps(wv, kvv), _mm256_mul_ps(cx, xv));
                const __m256 dk = _mm256_sub_ps(_mm256_mul_ps(wv, xv), _mm256_mul_ps(ck, kvv));
                hrmt8_st(gx, j, _mm256_add_ps(gov, _mm256_mul_ps(cf, dx)), 1, n);
                hrmt8_st(gk, j, _mm256_mul_ps(cf, dk), 1, n);
                const __m256 gwv = hrmt8_ld(gwr, j, 0, n);
                hrmt8_st(gwr, j, _mm256_add_ps(gwv, _mm256_mul_ps(_mm256_mul_ps(cf, xv), kvv)), 0,
                         n);
            }
        }
        uint16_t *gv = grad_kv + (t * (hc + 1) + hc) * hidden;
        for (size_t j = 0; j < hidden; j += 8) {
            const size_t n = hidden - j >= 8 ? 8 : hidden - j;
            __m256 acc = _mm256_setzero_ps();
            for (size_t h = 0; h < hc; h++)
                acc = _mm256_add_ps(
                    acc, _mm256_mul_ps(hrmt8_ld(grad_out + (t * hc + h) * hidden, j, 1, n),
                                       _mm256_set1_ps(gate[t * hc + h])));
            hrmt8_st(gv, j, acc, 1, n);
        }
    }
}

void hrmt_engram_fill_avx2(hrmt_rowops *t) {
    t->engram_fwd = bf16_engram_fwd__avx2_u16;
    t->engram_bwd = bf16_engram_bwd__avx2_u8;
}
