/* A reasoning level as one grid-wide persistent kernel (HRMT_CUDA_GRID=1):
 * every SM takes part in every op, grid barriers where the maths needs
 * them. The launch-by-launch step is ~35 dependent launches per level; here
 * one cooperative launch runs the level with one barrier after the
 * injection and five per layer:
 *
 *   S0 h   = bf16(z + inj)                   (the level's add, grid-wide rows)
 *   S1 qkv = h W_qkv^T                        h: S0's, or rmsnorm(r) after layer 0
 *   S2 att = attention(qkv)                  (per sample, head and query tiles)
 *   S3 r   = bf16(h + bf16(att W_o^T))       (the residual, before the norm)
 *   S4 act = SwiGLU(rmsnorm(r) W_gate_up^T)  (h = rmsnorm(r) kept for S5)
 *   S5 r   = bf16(h + bf16(act W_down^T))
 *   then z = rmsnorm(r) once at the end of the level.
 *
 * The norms before S1 and S4 are done on each GEMM unit's rows in shared
 * memory (every unit of a row block computes the same bits; the first
 * column block also stores h), which saves a barrier per norm.
 *
 * GEMM units are BM x BN blocks of C, 8 warps of (16 MI) x (8 NI); A's rows
 * are copied whole into shared memory with the first W stages where a norm
 * transforms them, else stream with W through a cp.async ring. Each C
 * element is one chain of mma.sync m16n8k16 (BF16 in, F32 accumulate) over
 * k in ascending order from +0, the arithmetic of the own GEMM kernels and
 * of model_l_persist.cu, which the pinned cuBLASLt algorithms reproduce bit
 * for bit at HRM's shapes (bench/cuda_lt_pin_check.cu); attention is
 * attn_mma_tile.cuh's function, the add, residual, RMSNorm and SwiGLU the
 * row ops' operations in their order. So the kernel's bytes equal the
 * launch-by-launch step's (tests: cuda_model/grid_equals_launches_*).
 *
 * Opt-in: on the H200 it is slower than launch by launch at every batch
 * (docs/CUDA-KERNELS.md): a grid barrier costs 1.1 us (bench/cuda_grid_sync.cu),
 * but a GEMM stage of this kernel takes longer than the cuBLASLt kernel
 * for the same op does, as each unit waits for its whole W slice through
 * cp.async (HRMT_CUDA_GRID_TRACE=1 prints the stages). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>

#include "cuda/attn_mma_tile.cuh"
#include "cuda/attn_rope.cuh"
#include "cuda/bf16.cuh"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_internal.cuh"
#include "cuda/grid_sync.cuh"
#include "cuda/mma_warp.cuh"
#include "cuda/model_grid.h"
#include "cuda/model_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_sumsq.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int GS_THREADS = 256, GS_WARPS = 8;
constexpr int GS_MAX_LAYERS = 8;
constexpr int GS_D = 64;         /* head_dim */
constexpr int GS_TP = 96;        /* attention: six m16 tiles, T <= 96 */
constexpr int GS_KT = 6;         /* key tiles */
constexpr int GS_LDK = GS_D + 8; /* attention K, V, Q row stride */
constexpr int GS_STAGES = 4;     /* ring stages, all but one in flight */
constexpr int GS_MAX_H = 512;    /* the norm keeps H / 32 <= 16 values per lane */
/* (MI, NI, BK): 32 x 64 units with k blocks of 128, 64 x 128 with 64. At
 * small batches a stage is latency-bound: a unit puts most of its W slice
 * in flight at once (3 x 128 of K = 512), so that the whole grid's requests
 * cover the memory latency. */
constexpr int GS_TILES[2][3] = {{1, 2, 128}, {2, 4, 64}};

struct gs_params {
    const uint16_t *wqkv[GS_MAX_LAYERS], *wo[GS_MAX_LAYERS], *wgu[GS_MAX_LAYERS],
        *wdown[GS_MAX_LAYERS];
    uint16_t *z;           /* the level's state, updated in place */
    const uint16_t *a, *b; /* injection a (+ b when set) */
    uint16_t *qkv, *att, *act, *r, *h;
    const float *cs, *sn;
    const uint16_t *lut;       /* SwiGLU's s(g) per BF16 gate */
    unsigned *bar;             /* grid barrier arrivals, zero at launch */
    unsigned long long *trace; /* HRMT_CUDA_GRID_TRACE: per stage, the slowest CTA's work (ns) */
    float scale, eps;
    int M, T, H, I, heads, layers;
};

__device__ __forceinline__ float bf(uint32_t bits16) { return rc::bf16_to_f((uint16_t)bits16); }
__device__ __forceinline__ uint32_t rnd(float v) { return hrmt_cu_f32_to_bf16(v); }

/* rmsnorm of one H-wide row (h already bf16(x + r)) by one warp: the row
 * ops' register form (lane l sums h[g * 32 + l] over g from 0, then
 * rmsnorm_reg_inv's shuffles); f(g, bits) gets each output. */
template <class F>
__device__ __forceinline__ void norm_row(const uint16_t *src, int H, float eps, F f) {
    const int lane = threadIdx.x & 31, G = H / 32;
    float v[GS_MAX_H / 32];
#pragma unroll
    for (int g = 0; g < GS_MAX_H / 32; g++)
        if (g < G) v[g] = bf(__ldcg(src + g * 32 + lane));
    const float inv = rc::rmsnorm_lanes_inv(v, G, (float)H, eps);
#pragma unroll
    for (int g = 0; g < GS_MAX_H / 32; g++)
        if (g < G) f(g * 32 + lane, rc::bf16_bits_arith(rc::fmul(v[g], inv)));
}

template <int MI, int NI, int BK>
struct tile {
    static constexpr int BM = 32 * MI, BN = 32 * NI;
    static constexpr int LDS = BK + 8;            /* ring row stride: distinct banks */
    static constexpr int STAGE = (BN + BM) * LDS; /* elements: W rows, then A rows */
    typedef float acc_t[MI][NI][4];

    /* Shared memory: the resident A rows (BM x (H + 8)), then the ring;
     * attention's K, V and Q reuse it from the start. */
    static size_t smem_bytes(int H) {
        const size_t gemm = ((size_t)BM * (H + 8) + (size_t)GS_STAGES * STAGE) * 2;
        const size_t attn = (size_t)3 * GS_TP * GS_LDK * 2;
        return gemm > attn ? gemm : attn;
    }

    __device__ static void zero(acc_t &acc) {
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int x = 0; x < 4; x++) acc[i][j][x] = 0.0f;
    }

    /* acc += A[m0 .., 0:K] W^T for the unit's BN W rows (row j at wrow(j)),
     * A's row i at arow(i) (null past M: zeros). With `ares`, A's rows are
     * copied whole into ares (stride lda) together with the first W stages,
     * then pro() transforms them in place; else they stream with W. Every
     * copy of a stage is in flight at once: at small batches a stage waits
     * on memory latency, not bandwidth. Ends with the ring and A free. */
    template <class WROW, class AROW, class PRO>
    __device__ static void run(acc_t &acc, int K, WROW wrow, uint16_t *ares, int lda, AROW arow,
                               PRO pro, uint16_t *ring) {
        const int tid = threadIdx.x, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
        const int nkb = K / BK;
        auto load = [&](int kb) {
            uint16_t *st = ring + (kb % GS_STAGES) * STAGE;
#pragma unroll
            for (int c = tid; c < BN * (BK / 8); c += GS_THREADS) {
                const int j = c / (BK / 8), part = c % (BK / 8);
                cp_async16(st + j * LDS + part * 8, wrow(j) + kb * BK + part * 8, 16);
            }
            if (!ares) {
                uint16_t *as = st + BN * LDS;
#pragma unroll
                for (int c = tid; c < BM * (BK / 8); c += GS_THREADS) {
                    const int i = c / (BK / 8), part = c % (BK / 8);
                    const uint16_t *src = arow(i);
                    cp_async16(as + i * LDS + part * 8, src ? src + kb * BK + part * 8 : wrow(0),
                               src ? 16 : 0);
                }
            }
        };
        if (ares) {
            for (int c = tid; c < BM * (K / 8); c += GS_THREADS) {
                const int i = c / (K / 8), part = c % (K / 8);
                const uint16_t *src = arow(i);
                cp_async16(ares + i * lda + part * 8, src ? src + part * 8 : wrow(0), src ? 16 : 0);
            }
            cp_async_commit();
        }
#pragma unroll
        for (int s = 0; s < GS_STAGES - 1; s++) {
            if (s < nkb) load(s);
            cp_async_commit();
        }
        if (ares) {
            cp_async_wait<GS_STAGES - 1>(); /* A's rows (the oldest group) */
            __syncthreads();
            pro();
        }
        for (int kb = 0; kb < nkb; kb++) {
            cp_async_wait<GS_STAGES - 2>();
            __syncthreads();
            if (kb + GS_STAGES - 1 < nkb) load(kb + GS_STAGES - 1);
            cp_async_commit();
            const uint16_t *st = ring + (kb % GS_STAGES) * STAGE;
            const uint16_t *As = ares ? ares + kb * BK : st + BN * LDS;
            const int la = ares ? lda : LDS;
#pragma unroll
            for (int ks = 0; ks < BK / 16; ks++)
                mma_k16<MI, NI>(
                    acc, [&](int r) { return As + (wm * 16 * MI + r) * la + ks * 16; },
                    st + wn * 8 * NI * LDS + ks * 16, LDS);
        }
        cp_async_wait<0>();
        __syncthreads();
    }

    /* f(row, col, v0, v1): the thread's C pairs (unit-local row and column;
     * columns col, col + 1), rows at or past rows_left skipped. */
    template <class F>
    __device__ static void each_pair(const acc_t &acc, int rows_left, F f) {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp >> 2, wn = warp & 3,
                  tg = lane & 3;
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int row = wm * 16 * MI + mi * 16 + (lane >> 2) + hf * 8;
                if (row < rows_left)
#pragma unroll
                    for (int ni = 0; ni < NI; ni++)
                        f(mi, ni, hf, row, wn * 8 * NI + ni * 8 + 2 * tg, acc[mi][ni][2 * hf],
                          acc[mi][ni][2 * hf + 1]);
            }
    }
};

/* The resident A rows of row block m0 (r's rows, zeros past M) become
 * rmsnorm(r) in place; the first column block also stores them as h. The
 * row ops' register form: lane l sums h[g * 32 + l] over g from 0, then
 * rmsnorm_reg_inv's shuffles. */
__device__ __forceinline__ void pro_norm(const gs_params &p, int m0, int BM, bool store,
                                         uint16_t *as, int lda) {
    constexpr int R = 2; /* rows per warp at once: their reductions overlap */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, G = p.H / 32;
    for (int i0 = warp; i0 < BM; i0 += GS_WARPS * R) {
        float v[R][GS_MAX_H / 32], inv[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int i = i0 + r * GS_WARPS;
            const bool ok = i < BM && m0 + i < p.M; /* warp-uniform */
            const uint16_t *row = as + i * lda + lane;
#pragma unroll
            for (int g = 0; g < GS_MAX_H / 32; g++)
                if (g < G) v[r][g] = ok ? bf(row[g * 32]) : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < R; r++) inv[r] = rc::rmsnorm_lanes_inv(v[r], G, (float)p.H, p.eps);
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int i = i0 + r * GS_WARPS;
            if (i >= BM || m0 + i >= p.M) continue;
            uint16_t *row = as + i * lda + lane;
            uint16_t *h = p.h + (size_t)(m0 + i) * p.H + lane;
#pragma unroll
            for (int g = 0; g < GS_MAX_H / 32; g++)
                if (g < G) {
                    const uint16_t o = rc::bf16_bits_arith(rc::fmul(v[r][g], inv[r]));
                    row[g * 32] = o;
                    if (store) h[g * 32] = o;
                }
        }
    }
}

/* h = bf16(z + inj) over the level's rows, inj = a, or bf16(a + b) (the L
 * level's zH + x): the add row op's bits, as the launch-by-launch step's
 * two adds; 8 elements per thread of the grid. */
__device__ __forceinline__ void inject_stage(const gs_params &p) {
    const size_t n = (size_t)p.M * p.H / 8;
    for (size_t e = (size_t)blockIdx.x * GS_THREADS + threadIdx.x; e < n;
         e += (size_t)gridDim.x * GS_THREADS) {
        const uint4 z = __ldcg((const uint4 *)p.z + e);
        uint4 in = __ldcg((const uint4 *)p.a + e);
        if (p.b) {
            const uint4 x = __ldcg((const uint4 *)p.b + e);
            in = make_uint4(rc::add_bf16x2_arith(in.x, x.x), rc::add_bf16x2_arith(in.y, x.y),
                            rc::add_bf16x2_arith(in.z, x.z), rc::add_bf16x2_arith(in.w, x.w));
        }
        ((uint4 *)p.h)[e] =
            make_uint4(rc::add_bf16x2_arith(z.x, in.x), rc::add_bf16x2_arith(z.y, in.y),
                       rc::add_bf16x2_arith(z.z, in.z), rc::add_bf16x2_arith(z.w, in.w));
    }
}

/* att = attention(qkv). A unit is a (sample, head) and a run of its 16-row
 * query tiles: at small batches the query tiles spread over more SMs (each
 * unit loads the head's K and V); a tile's bits do not depend on which
 * unit runs it. K and V RoPE'd into shared memory, Q where each warp's
 * output tile goes. */
__device__ void attention_stage(const gs_params &p, uint16_t *smem) {
    const int T = p.T, H = p.H, nkt = (T + 15) / 16, warp = threadIdx.x >> 5;
    uint16_t *Ks = smem, *Vs = Ks + GS_TP * GS_LDK, *Qs = Vs + GS_TP * GS_LDK;
    const int pairs = (p.M / T) * p.heads;
    int parts = min(nkt, max(1, (int)gridDim.x / pairs));
    const int per = (nkt + parts - 1) / parts; /* query tiles per unit */
    parts = (nkt + per - 1) / per;
    for (int u = blockIdx.x; u < pairs * parts; u += gridDim.x) {
        const int pair = u / parts, s = pair / p.heads, hd = pair % p.heads;
        const int t0 = (u % parts) * per * 16, t1 = min(T, t0 + per * 16);
        const size_t r0 = (size_t)s * T;
        load_qkv<GS_D>(p.qkv + r0 * 3 * H + hd * GS_D, T, nkt * 16, H, GS_LDK, p.cs, p.sn, Ks, Vs,
                       t0, t1, Qs, GS_LDK);
        __syncthreads();
        if (warp < per && t0 + 16 * warp < T) {
            uint16_t *q = Qs + warp * 16 * GS_LDK;
            const int qrows = min(16, T - t0 - 16 * warp);
            if (T > 16 * (GS_KT - 1))
                attend_tile<GS_D, GS_KT, true, false>(T, nkt, Ks, Vs, GS_LDK, q, GS_LDK, qrows,
                                                      p.scale);
            else
                attend_tile<GS_D, GS_KT, false, false>(T, nkt, Ks, Vs, GS_LDK, q, GS_LDK, qrows,
                                                       p.scale);
        }
        __syncthreads();
        for (int e = threadIdx.x; e < (t1 - t0) * (GS_D / 8); e += GS_THREADS) {
            const int t = e / (GS_D / 8), c = (e % (GS_D / 8)) * 8;
            *(uint4 *)(p.att + (r0 + t0 + t) * H + hd * GS_D + c) =
                *(const uint4 *)(Qs + t * GS_LDK + c);
        }
        __syncthreads();
    }
}

/* TRACE (HRMT_CUDA_GRID_TRACE=1, a development aid): CTA 0 prints each
 * stage's time and the slowest CTA's share of it. */
template <bool TRACE>
struct tracer {
    unsigned long long t_exit = 0;
    int k = 0;
    __device__ static unsigned long long now() {
        unsigned long long t;
        asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
        return t;
    }
    __device__ void sync(const gs_params &p, unsigned &target) {
        if (TRACE && threadIdx.x == 0) {
            atomicMax(p.trace + k, now() - t_exit);
        }
        grid_sync(p.bar, target);
        if (TRACE && threadIdx.x == 0) {
            const unsigned long long t = now();
            if (blockIdx.x == 0)
                printf("hrmt grid stage %2d (M %d): %7.2f us, slowest CTA's work %7.2f us\n", k,
                       p.M, (double)(t - t_exit) * 1e-3, (double)__ldcg(p.trace + k) * 1e-3);
            t_exit = t;
            k++;
        }
    }
};

template <int MI, int NI, int BK, bool TRACE>
__global__ void __launch_bounds__(GS_THREADS, 1) grid_level(const gs_params p) {
    tracer<TRACE> tr;
    if (TRACE && threadIdx.x == 0) tr.t_exit = tracer<TRACE>::now();
    typedef tile<MI, NI, BK> TL;
    constexpr int BM = TL::BM, BN = TL::BN;
    extern __shared__ __align__(128) unsigned char gs_smem[];
    const int H = p.H, I = p.I, M = p.M, lda = H + 8, mblocks = (M + BM - 1) / BM;
    uint16_t *as = (uint16_t *)gs_smem, *ring = as + BM * lda;
    unsigned target = 0;
    typename TL::acc_t acc;
    auto no_pro = [] {};
    inject_stage(p);
    tr.sync(p, target);
    for (int li = 0; li < p.layers; li++) {
        /* S1: qkv = h W_qkv^T, h the injected z (layer 0) or rmsnorm(r) */
        const int nq = 3 * H / BN;
        for (int u = blockIdx.x; u < mblocks * nq; u += gridDim.x) {
            const int m0 = (u / nq) * BM, n0 = (u % nq) * BN;
            const uint16_t *w = p.wqkv[li] + (size_t)n0 * H;
            const uint16_t *src = li == 0 ? p.h : p.r;
            TL::zero(acc);
            TL::run(
                acc, H, [&](int j) { return w + (size_t)j * H; }, as, lda,
                [&](int i) -> const uint16_t * {
                    return m0 + i < M ? src + (size_t)(m0 + i) * H : nullptr;
                },
                [&] {
                    if (li > 0) pro_norm(p, m0, BM, n0 == 0, as, lda);
                },
                ring);
            TL::each_pair(acc, M - m0, [&](int, int, int, int row, int col, float v0, float v1) {
                *(uint32_t *)(p.qkv + (size_t)(m0 + row) * 3 * H + n0 + col) =
                    rnd(v0) | (rnd(v1) << 16);
            });
        }
        tr.sync(p, target);
        /* S2 */
        attention_stage(p, as);
        tr.sync(p, target);
        /* S3: r = bf16(h + bf16(att W_o^T)); S5 the same with act, W_down */
        auto residual = [&](const uint16_t *wbase, const uint16_t *abase, int K) {
            const int nn = H / BN;
            for (int u = blockIdx.x; u < mblocks * nn; u += gridDim.x) {
                const int m0 = (u / nn) * BM, n0 = (u % nn) * BN;
                const uint16_t *w = wbase + (size_t)n0 * K;
                TL::zero(acc);
                TL::run(
                    acc, K, [&](int j) { return w + (size_t)j * K; }, nullptr, 0,
                    [&](int i) -> const uint16_t * {
                        return m0 + i < M ? abase + (size_t)(m0 + i) * K : nullptr;
                    },
                    no_pro, ring);
                /* h's values first, all loads in flight, then the sums */
                unsigned hv[MI][NI][2];
                TL::each_pair(
                    acc, M - m0, [&](int mi, int ni, int hf, int row, int col, float, float) {
                        hv[mi][ni][hf] =
                            __ldcg((const unsigned *)(p.h + (size_t)(m0 + row) * H + n0 + col));
                    });
                TL::each_pair(
                    acc, M - m0, [&](int mi, int ni, int hf, int row, int col, float v0, float v1) {
                        *(uint32_t *)(p.r + (size_t)(m0 + row) * H + n0 + col) =
                            rc::add_bf16x2_arith(hv[mi][ni][hf], rnd(v0) | (rnd(v1) << 16));
                    });
            }
        };
        residual(p.wo[li], p.att, H);
        tr.sync(p, target);
        /* S4: act = SwiGLU(rmsnorm(r) W_gate_up^T), BN / 2 act columns per
         * unit: warp wn's 8 NI W rows are 4 NI gate rows, then the up rows
         * of the same columns, so a thread holds each gate next to its up
         * (n8 tiles ni and ni + NI / 2). */
        constexpr int HN = NI / 2, WR = 8 * NI;
        const int ng = I / (BN / 2);
        for (int u = blockIdx.x; u < mblocks * ng; u += gridDim.x) {
            const int m0 = (u / ng) * BM, j0 = (u % ng) * (BN / 2);
            const uint16_t *w = p.wgu[li];
            TL::zero(acc);
            TL::run(
                acc, H,
                [&](int r) {
                    const int q = r % WR, j = j0 + (r / WR) * (WR / 2) + q % (WR / 2);
                    return w + (size_t)(q < WR / 2 ? j : I + j) * H;
                },
                as, lda,
                [&](int i) -> const uint16_t * {
                    return m0 + i < M ? p.r + (size_t)(m0 + i) * H : nullptr;
                },
                [&] { pro_norm(p, m0, BM, j0 == 0, as, lda); }, ring);
            /* s(g) of every gate first (all table loads in flight), then
             * the products */
            float sg[MI][HN][2][2];
            TL::each_pair(acc, M - m0, [&](int mi, int ni, int hf, int, int, float v0, float v1) {
                if (ni < HN) {
                    sg[mi][ni][hf][0] = bf(__ldg(p.lut + rnd(v0)));
                    sg[mi][ni][hf][1] = bf(__ldg(p.lut + rnd(v1)));
                }
            });
            TL::each_pair(acc, M - m0, [&](int mi, int ni, int hf, int row, int col, float, float) {
                if (ni >= HN) return;
                const int j = j0 + (col / WR) * (WR / 2) + (col % WR);
                float o[2];
#pragma unroll
                for (int e = 0; e < 2; e++)
                    o[e] = rc::fmul(sg[mi][ni][hf][e], bf(rnd(acc[mi][ni + HN][2 * hf + e])));
                *(uint32_t *)(p.act + (size_t)(m0 + row) * I + j) =
                    rc::pack_bf16x2_arith(o[0], o[1]);
            });
        }
        tr.sync(p, target);
        /* S5 */
        residual(p.wdown[li], p.act, I);
        tr.sync(p, target);
    }
    /* z = rmsnorm(r), a warp per row (no barrier after: the launch ends) */
    const int warps = gridDim.x * GS_WARPS;
    for (int row = blockIdx.x * GS_WARPS + (threadIdx.x >> 5); row < M; row += warps) {
        uint16_t *z = p.z + (size_t)row * H;
        norm_row(p.r + (size_t)row * H, H, p.eps, [&](int c, uint16_t v) { z[c] = v; });
    }
    if (TRACE) tr.sync(p, target);
}

typedef void (*grid_kernel)(const gs_params);
#define GS_TILE(t) GS_TILES[t][0], GS_TILES[t][1], GS_TILES[t][2]
const grid_kernel k_kernels[2][2] = {{grid_level<GS_TILE(0), false>, grid_level<GS_TILE(1), false>},
                                     {grid_level<GS_TILE(0), true>, grid_level<GS_TILE(1), true>}};

size_t smem_bytes(int t, int H) {
    return t == 0 ? tile<GS_TILE(0)>::smem_bytes(H) : tile<GS_TILE(1)>::smem_bytes(H);
}

/* The unit size for M rows: the larger one once its qkv units fill the SMs. */
int pick_tile(const hrmt_model *m, size_t M, int sms) {
    const int forced = cu_model(m)->grid_tile;
    if (forced) return forced - 1;
    const size_t bm = 32 * GS_TILES[1][0], bn = 32 * GS_TILES[1][1];
    return (M + bm - 1) / bm * (3 * m->hidden / bn) >= (size_t)sms;
}

} // namespace

int cu_grid_applies(const hrmt_model *m) {
    size_t per_block = 0; /* the only limit the conditions need */
    hrmt_cuda_limits(m->ctx->cuda, &per_block, NULL, NULL, NULL);
    const size_t H = m->hidden, I = m->inter;
    /* H and I multiples of 128: whole k blocks and N tiles for both unit
     * sizes (gate_up: units of 32 or 64 act columns). */
    return m->dt == HRMT_BF16 && m->head_dim == GS_D && m->heads * GS_D == H && H % 128 == 0 &&
           H <= GS_MAX_H && I % 128 == 0 && m->T >= 1 && m->T <= GS_TP && m->cfg.L_layers >= 1 &&
           m->cfg.L_layers <= GS_MAX_LAYERS && m->cfg.H_layers >= 1 &&
           m->cfg.H_layers <= GS_MAX_LAYERS && smem_bytes(0, (int)H) <= per_block &&
           smem_bytes(1, (int)H) <= per_block && hrmt_cuda_cooperative(m->ctx->cuda);
}

int cu_grid_use(const hrmt_model *m) { return cu_model(m)->grid; }

hrmt_status cu_grid_level(const hrmt_model *m, int high, void *z, const void *a, const void *b,
                          size_t B, const cu_level_ws *ws, void *h, unsigned *bar) {
    if (B == 0) return HRMT_OK;
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const hrmt_block_weights *lw = high ? m->H : m->L;
    gs_params p;
    memset(&p, 0, sizeof p);
    p.layers = high ? m->cfg.H_layers : m->cfg.L_layers;
    for (int i = 0; i < p.layers; i++) {
        p.wqkv[i] = (const uint16_t *)lw[i].qkv.dev;
        p.wo[i] = (const uint16_t *)lw[i].o.dev;
        p.wgu[i] = (const uint16_t *)lw[i].gate_up.dev;
        p.wdown[i] = (const uint16_t *)lw[i].down.dev;
    }
    const struct hrmt_model_cuda *g = cu_model(m);
    p.z = (uint16_t *)z;
    p.a = (const uint16_t *)a;
    p.b = (const uint16_t *)b;
    p.qkv = (uint16_t *)ws->qkv;
    p.att = (uint16_t *)ws->att;
    p.act = (uint16_t *)ws->act;
    p.r = (uint16_t *)ws->proj;
    p.h = (uint16_t *)h;
    p.cs = m->cfg.pos_encodings == HRMT_POS_ROPE ? g->rope_cos : nullptr;
    p.sn = p.cs ? g->rope_sin : nullptr;
    p.lut = m->ctx->cuda->silu_bf16;
    p.bar = bar;
    p.scale = (float)(1.0 / sqrt((double)m->head_dim));
    p.eps = (float)m->cfg.rms_norm_eps;
    p.M = (int)(B * m->T);
    p.T = (int)m->T;
    p.H = (int)m->hidden;
    p.I = (int)m->inter;
    p.heads = (int)m->heads;
    const int t = pick_tile(m, B * m->T, sms), tr = g->grid_trace != NULL;
    p.trace = g->grid_trace;
    if (tr) {
        cudaError_t e = cudaMemsetAsync(p.trace, 0, 64 * sizeof *p.trace, cu_stream(m));
        if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda grid level: trace");
    }
    const size_t bytes = smem_bytes(t, p.H);
    cudaError_t e = cudaFuncSetAttribute(k_kernels[tr][t],
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda grid level: shared memory");
    int per = 0;
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k_kernels[tr][t], GS_THREADS, bytes);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda grid level: occupancy");
    if (per < 1)
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda grid level: a block does not fit an SM");
    /* One CTA per SM: every stage spreads its units over the whole GPU. */
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)(sms > 0 ? sms : 1));
    cfg.blockDim = dim3(GS_THREADS);
    cfg.dynamicSmemBytes = bytes;
    cfg.stream = cu_stream(m);
    cudaLaunchAttribute attr[1] = {};
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    e = cudaLaunchKernelEx(&cfg, k_kernels[tr][t], p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda grid level: launch");
    return cu_check(m->ctx, "cuda grid level");
}

/* *out = the index of the environment variable's value among choices
 * ("a|b|c"); unset: 0, the first; anything else is INVALID_ARG. */
static hrmt_status read_choice(hrmt_model *m, const char *name, const char *choices, int *out) {
    const char *env = getenv(name);
    *out = 0;
    if (!env) return HRMT_OK;
    const char *c = choices;
    for (int i = 0;; i++) {
        const size_t len = strcspn(c, "|");
        if (strlen(env) == len && !strncmp(env, c, len)) {
            *out = i;
            return HRMT_OK;
        }
        if (!c[len]) break;
        c += len + 1;
    }
    return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "%s='%s' is not one of %s", name, env, choices);
}

hrmt_status cu_grid_setting(hrmt_model *m) {
    int mode = 0, tile_choice = 0, trace = 0;
    hrmt_status s = read_choice(m, "HRMT_CUDA_GRID", "0|1", &mode);
    if (s == HRMT_OK) s = read_choice(m, "HRMT_CUDA_GRID_TILE", "auto|s|l", &tile_choice);
    if (s == HRMT_OK) s = read_choice(m, "HRMT_CUDA_GRID_TRACE", "0|1", &trace);
    if (s != HRMT_OK) return s;
    if (trace)
        s = hrmt_cuda_malloc(m->ctx->cuda, 64 * sizeof(unsigned long long),
                             (void **)&cu_model(m)->grid_trace, m->ctx->err, sizeof m->ctx->err);
    if (s != HRMT_OK) return s;
    cu_model(m)->grid = cu_grid_applies(m) ? mode : 0;
    cu_model(m)->grid_tile = tile_choice;
    return HRMT_OK;
}
