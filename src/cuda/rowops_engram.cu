/* Engram gate forward and backward, bits of cpu/engram_scalar.c (maths in
 * cpu/engram_common.h; exp there is SLEEF's scalar Sleef_expf_u10, here
 * expf_sleef_scalar).
 *
 * Order: the row sums (sum x^2, sum k^2, sum x w k; backward sum go v) are
 * plain left-to-right chains, so ONE THREAD runs each (token, head) row's
 * chains, 128 rows per block; the block then does the row-wise outputs
 * (out, grad_x, grad_kv) with coalesced element-parallel threads, whose
 * values depend on their own element and the row's scalars only.
 * grad_v[t, j] = sum over heads in increasing h: one thread per (t, j).
 * gw[h, j] += coef[t, h] x k over tokens in increasing t: one thread per
 * (h, j) running the tokens in order (coef comes from a temporary buffer
 * filled by the row kernel). The backward is three launches on the stream. */
#include <math.h>

#include "cuda/cuda_backend.h"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_tile.cuh"

using namespace hrmt_rowops_cuda;

namespace {

#define HRMT_ENGRAM_ROWS 128 /* (token, head) rows per block, one thread each */

HRMT_HD float rms_inv(float sumsq, size_t n, float eps) {
    return fdiv(1.0f, fsqrt(fadd(fdiv(sumsq, size_to_f(n)), eps)));
}

HRMT_HD float engram_d(float raw, float rx, float rk, float scale) {
    return fmul(fmul(fmul(raw, rx), rk), scale);
}

HRMT_HD float engram_gate(float d, float clamp) {
    const float a = fabsf(d);
    const float c = a < clamp ? clamp : a;
    const float sg = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : d;
    const float s = fmul(fsqrt(c), sg);
    return fdiv(1.0f, fadd(1.0f, expf_sleef_scalar(-s)));
}

HRMT_HD float engram_coef(float dg, float g, float raw, float rx, float rk, float scale,
                          float clamp) {
    const float ds = fmul(fmul(dg, g), fsub(1.0f, g));
    const float d = engram_d(raw, rx, rk, scale);
    const float a = fabsf(d);
    const float dd = (a >= clamp && d != 0.0f) ? fdiv(fmul(ds, 0.5f), fsqrt(a)) : 0.0f;
    return fmul(fmul(fmul(dd, scale), rx), rk);
}

/* Loads 8 BF16 (16-byte aligned) or 1, as F32. */
template <bool VEC>
__device__ __forceinline__ void ld_bf(const uint16_t *p, size_t j, float *v) {
    if (VEC) {
        ld8<1>(p, j, v);
    } else {
        v[0] = bf16_to_f(p[j]);
    }
}

template <bool VEC>
__global__ void __launch_bounds__(HRMT_ENGRAM_ROWS)
    engram_fwd_kernel(size_t rows, size_t hc, size_t hidden, const uint16_t *x, const uint16_t *kv,
                      const float *wf, float eps, float clamp, float scale, uint16_t *out,
                      float *dot, float *gate, float *rstd_x, float *rstd_k, int nt) {
    __shared__ float gs[HRMT_ENGRAM_ROWS];
    constexpr int S = VEC ? 8 : 1;
    const size_t row0 = (size_t)blockIdx.x * HRMT_ENGRAM_ROWS;
    const size_t th = row0 + threadIdx.x;
    if (th < rows) {
        const size_t t = th / hc, h = th - t * hc;
        const uint16_t *xr = x + th * hidden, *kr = kv + (t * (hc + 1) + h) * hidden;
        const float *w = wf + h * hidden;
        float sx = 0.0f, sk = 0.0f, raw = 0.0f;
        for (size_t j = 0; j < hidden; j += S) {
            float xv[8], kvv[8], wv[8];
            ld_bf<VEC>(xr, j, xv);
            ld_bf<VEC>(kr, j, kvv);
            if (VEC)
                ld8<0>(w, j, wv);
            else
                wv[0] = w[j];
            HRMT_UNROLL
            for (int k = 0; k < S; k++) {
                sx = fadd(sx, fmul(xv[k], xv[k]));
                sk = fadd(sk, fmul(kvv[k], kvv[k]));
                raw = fadd(raw, fmul(fmul(xv[k], wv[k]), kvv[k]));
            }
        }
        const float rx = rms_inv(sx, hidden, eps), rk = rms_inv(sk, hidden, eps);
        const float g = engram_gate(engram_d(raw, rx, rk, scale), clamp);
        gs[threadIdx.x] = g;
        if (dot) dot[th] = raw;
        if (gate) gate[th] = g;
        if (rstd_x) rstd_x[th] = rx;
        if (rstd_k) rstd_k[th] = rk;
    }
    __syncthreads();
    /* out = bf16(x + g * v) over the block's rows, element-parallel. */
    const size_t nrows = rows - row0 < HRMT_ENGRAM_ROWS ? rows - row0 : HRMT_ENGRAM_ROWS;
    const size_t per_row = hidden / S, total = nrows * per_row;
    for (size_t e = threadIdx.x; e < total; e += HRMT_ENGRAM_ROWS) {
        const size_t rr = e / per_row, j = (e - rr * per_row) * S, r = row0 + rr, t = r / hc;
        const float g = gs[rr];
        const uint16_t *v = kv + (t * (hc + 1) + hc) * hidden;
        float xv[8], vv[8];
        ld_bf<VEC>(x + r * hidden, j, xv);
        ld_bf<VEC>(v, j, vv);
        HRMT_UNROLL
        for (int k = 0; k < S; k++) xv[k] = fadd(xv[k], fmul(g, vv[k]));
        if (VEC)
            st8<1>(out + r * hidden, j, xv, nt);
        else
            out[r * hidden + j] = f_to_bf16(xv[0]);
    }
}

static void engram_fwd_cuda(size_t tokens, size_t hc, size_t hidden, const uint16_t *x,
                            const uint16_t *kv, const float *wf, float eps, float clamp,
                            uint16_t *out, float *dot, float *gate, float *rstd_x, float *rstd_k,
                            int nt) {
    const size_t rows = tokens * hc;
    if (rows == 0 || hidden == 0) return;
    const float scale = (float)(1.0 / sqrt((double)hidden));
    const bool vec = hidden % 8 == 0 &&
                     (((uintptr_t)x | (uintptr_t)kv | (uintptr_t)wf | (uintptr_t)out) % 16) == 0;
    const unsigned blocks = row_blocks(rows, HRMT_ENGRAM_ROWS);
    const cudaStream_t s = cudaStreamPerThread;
    /* 2^31 - 1 blocks of 128 rows exceed any device memory: one launch. */
    if (vec)
        engram_fwd_kernel<true><<<blocks, HRMT_ENGRAM_ROWS, 0, s>>>(
            rows, hc, hidden, x, kv, wf, eps, clamp, scale, out, dot, gate, rstd_x, rstd_k, nt);
    else
        engram_fwd_kernel<false><<<blocks, HRMT_ENGRAM_ROWS, 0, s>>>(
            rows, hc, hidden, x, kv, wf, eps, clamp, scale, out, dot, gate, rstd_x, rstd_k, nt);
}

template <bool VEC>
__global__ void __launch_bounds__(HRMT_ENGRAM_ROWS)
    engram_bwd_rows_kernel(size_t rows, size_t hc, size_t hidden, const uint16_t *grad_out,
                           const uint16_t *x, const uint16_t *kv, const float *wf, const float *dot,
                           const float *gate, const float *rstd_x, const float *rstd_k, float clamp,
                           float scale, uint16_t *grad_x, uint16_t *grad_kv, float *coefs) {
    __shared__ float cs[HRMT_ENGRAM_ROWS][3]; /* coef, cx, ck */
    constexpr int S = VEC ? 8 : 1;
    const size_t row0 = (size_t)blockIdx.x * HRMT_ENGRAM_ROWS;
    const size_t th = row0 + threadIdx.x;
    const float fh = size_to_f(hidden);
    if (th < rows) {
        const size_t t = th / hc;
        const uint16_t *go = grad_out + th * hidden, *v = kv + (t * (hc + 1) + hc) * hidden;
        float dg = 0.0f;
        for (size_t j = 0; j < hidden; j += S) {
            float a[8], b[8];
            ld_bf<VEC>(go, j, a);
            ld_bf<VEC>(v, j, b);
            HRMT_UNROLL
            for (int k = 0; k < S; k++) dg = fadd(dg, fmul(a[k], b[k]));
        }
        const float rx = rstd_x[th], rk = rstd_k[th], raw = dot[th];
        const float coef = engram_coef(dg, gate[th], raw, rx, rk, scale, clamp);
        cs[threadIdx.x][0] = coef;
        cs[threadIdx.x][1] = fdiv(fmul(fmul(raw, rx), rx), fh);
        cs[threadIdx.x][2] = fdiv(fmul(fmul(raw, rk), rk), fh);
        coefs[th] = coef;
    }
    __syncthreads();
    const size_t nrows = rows - row0 < HRMT_ENGRAM_ROWS ? rows - row0 : HRMT_ENGRAM_ROWS;
    const size_t per_row = hidden / S, total = nrows * per_row;
    for (size_t e = threadIdx.x; e < total; e += HRMT_ENGRAM_ROWS) {
        const size_t rr = e / per_row, j = (e - rr * per_row) * S, r = row0 + rr;
        const size_t t = r / hc, h = r - t * hc, kvr = (t * (hc + 1) + h) * hidden;
        const float coef = cs[rr][0], cx = cs[rr][1], ck = cs[rr][2];
        float gov[8], xv[8], kvv[8], wv[8], gx[8], gk[8];
        ld_bf<VEC>(grad_out + r * hidden, j, gov);
        ld_bf<VEC>(x + r * hidden, j, xv);
        ld_bf<VEC>(kv + kvr, j, kvv);
        if (VEC)
            ld8<0>(wf + h * hidden, j, wv);
        else
            wv[0] = wf[h * hidden + j];
        HRMT_UNROLL
        for (int k = 0; k < S; k++) {
            gx[k] = fadd(gov[k], fmul(coef, fsub(fmul(wv[k], kvv[k]), fmul(cx, xv[k]))));
            gk[k] = fmul(coef, fsub(fmul(wv[k], xv[k]), fmul(ck, kvv[k])));
        }
        if (VEC) {
            st8<1>(grad_x + r * hidden, j, gx, 0);
            st8<1>(grad_kv + kvr, j, gk, 0);
        } else {
            grad_x[r * hidden + j] = f_to_bf16(gx[0]);
            grad_kv[kvr + j] = f_to_bf16(gk[0]);
        }
    }
}

/* grad_v[t, j] = sum over h (increasing) of go[t, h, j] * gate[t, h], from 0. */
struct EngramGradVOp {
    const uint16_t *grad_out;
    const float *gate;
    uint16_t *grad_kv;
    size_t hc, hidden;
    __device__ void operator()(size_t t, size_t j) const {
        float acc = 0.0f;
        for (size_t h = 0; h < hc; h++)
            acc = fadd(acc, fmul(bf16_to_f(grad_out[(t * hc + h) * hidden + j]), gate[t * hc + h]));
        grad_kv[(t * (hc + 1) + hc) * hidden + j] = f_to_bf16(acc);
    }
};

#define HRMT_GW_AHEAD 8 /* tokens whose loads are in flight together */

/* gw[h, j] += (coef[t, h] * x[t, h, j]) * k[t, h, j], t increasing. */
struct EngramGradWOp {
    const uint16_t *x, *kv;
    const float *coefs;
    float *gw;
    size_t tokens, hc, hidden;
    __device__ void operator()(size_t h, size_t j) const {
        float acc = gw[h * hidden + j];
        size_t t = 0;
        for (; t + HRMT_GW_AHEAD <= tokens; t += HRMT_GW_AHEAD) {
            float p[HRMT_GW_AHEAD];
            HRMT_UNROLL
            for (int k = 0; k < HRMT_GW_AHEAD; k++) p[k] = term(t + k, h, j);
            HRMT_UNROLL
            for (int k = 0; k < HRMT_GW_AHEAD; k++) acc = fadd(acc, p[k]);
        }
        for (; t < tokens; t++) acc = fadd(acc, term(t, h, j));
        gw[h * hidden + j] = acc;
    }
    __device__ float term(size_t t, size_t h, size_t j) const {
        const float xv = bf16_to_f(x[(t * hc + h) * hidden + j]);
        const float kvv = bf16_to_f(kv[(t * (hc + 1) + h) * hidden + j]);
        return fmul(fmul(coefs[t * hc + h], xv), kvv);
    }
};

static void engram_bwd_cuda(size_t tokens, size_t hc, size_t hidden, const uint16_t *grad_out,
                            const uint16_t *x, const uint16_t *kv, const float *wf,
                            const float *dot, const float *gate, const float *rstd_x,
                            const float *rstd_k, float clamp, uint16_t *grad_x, uint16_t *grad_kv,
                            float *gw) {
    const size_t rows = tokens * hc;
    if (tokens == 0 || hidden == 0) return;
    const cudaStream_t s = cudaStreamPerThread;
    /* grad_v needs no head; everything else has hc rows per token. */
    tile_launch(EngramGradVOp{grad_out, gate, grad_kv, hc, hidden}, tokens, hidden);
    if (rows == 0) return;
    const float scale = (float)(1.0 / sqrt((double)hidden));
    float *coefs = nullptr;
    if (cudaMallocAsync((void **)&coefs, rows * sizeof *coefs, s) != cudaSuccess) return;
    const bool vec = hidden % 8 == 0 && (((uintptr_t)grad_out | (uintptr_t)x | (uintptr_t)kv |
                                          (uintptr_t)wf | (uintptr_t)grad_x | (uintptr_t)grad_kv) %
                                         16) == 0;
    const unsigned blocks = row_blocks(rows, HRMT_ENGRAM_ROWS);
    if (vec)
        engram_bwd_rows_kernel<true><<<blocks, HRMT_ENGRAM_ROWS, 0, s>>>(
            rows, hc, hidden, grad_out, x, kv, wf, dot, gate, rstd_x, rstd_k, clamp, scale, grad_x,
            grad_kv, coefs);
    else
        engram_bwd_rows_kernel<false><<<blocks, HRMT_ENGRAM_ROWS, 0, s>>>(
            rows, hc, hidden, grad_out, x, kv, wf, dot, gate, rstd_x, rstd_k, clamp, scale, grad_x,
            grad_kv, coefs);
    tile_launch(EngramGradWOp{x, kv, coefs, gw, tokens, hc, hidden}, hc, hidden);
    cudaFreeAsync(coefs, s);
}

} // namespace

void hrmt_rowops_fill_cuda_engram(hrmt_rowops *t) {
    t->engram_fwd = engram_fwd_cuda;
    t->engram_bwd = engram_bwd_cuda;
}
