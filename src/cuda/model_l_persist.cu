/* The tiered schedule's L level as one persistent kernel: each CTA holds one
 * sample's z_L in shared memory for all L_cycles x L_layers of an H cycle and
 * streams the L weights from L2 (the seed's SRAM/DRAM split on the GPU's own
 * SRAM). One launch per H cycle replaces ~8 launches per layer.
 *
 * Per sample (CTAs loop over samples blockIdx.x, + gridDim.x, ...):
 *   z (T x H BF16, shared) <- z_L; per L cycle z = z + (zH + x); per layer:
 *   qkv  = z W_qkv^T      -> global scratch (the CTA's own rows, L2-resident)
 *   att  = attention(qkv) -> shared (per head: K, V in the W stages, each
 *                            warp's Q tile where its output goes)
 *   z    = rmsnorm(z + att W_o^T)               (in place, shared)
 *   act  = SwiGLU(z W_gate_up^T)                -> global scratch
 *   z    = rmsnorm(z + act W_down^T)            (act in H-wide K chunks
 *                                                staged through shared)
 *   z_L <- z.
 *
 * Bits: every op is the baseline's arithmetic, so tiered == baseline stays
 * bitwise (the tests compare them):
 *  - GEMM: each C element is one chain of mma.sync m16n8k16 (BF16 in, F32
 *    accumulate) over 16-wide k steps in ascending k from +0: the own wmma
 *    kernel's arithmetic (model_gemm_kernels.cuh), which the pinned cuBLASLt
 *    algorithms reproduce bit for bit at the four HRM shapes on the H200
 *    (bench/cuda_lt_pin_check.cu: 0 of 118M outputs differ); rounded to BF16
 *    as both do;
 *  - attention: attn_mma_tile.cuh, the same function the baseline's
 *    attend_mma runs, with RoPE through attn_rope.cuh's load_qkv;
 *  - add, residual + RMSNorm and SwiGLU: the row-op kernels' operations in
 *    the same order (rowops_elem.cu, rowops_norm.cu's register form:
 *    lane l sums elements g * 32 + l in g order, then the same shuffles).
 *
 * Shared memory (H = hidden, row stride H + 8 elements so that ldmatrix rows
 * fall on distinct banks): z and a buffer (att, then the act chunks), T x
 * (H + 8) BF16 each, and three W stages of 256 rows x 32 k (stride 40). The
 * m16 tiles cover 96 rows; rows past T read row T - 1 and are never stored.
 * At H = 512, T = 82: 232,000 bytes (of 232,448 a block may have), one CTA
 * per SM, 8 warps of 48 x 64 C each.
 *
 * Opt-in (HRMT_CUDA_L_PERSIST=1): on the H200 it is slower than the baseline
 * at every batch (docs/BENCHMARKS.md): one SM per sample, which also streams
 * all L weights from L2 for that one sample. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cuda_bf16.h>

#include "cuda/attn_mma_tile.cuh"
#include "cuda/attn_rope.cuh"
#include "cuda/bf16.cuh"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_internal.cuh"
#include "cuda/mma_warp.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/model_l_persist.h"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_sumsq.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

constexpr int LP_MAX_LAYERS = 8;
constexpr int LP_D = 64;          /* head_dim */
constexpr int LP_TP = 96;         /* six m16 tiles: T <= 96 */
constexpr int LP_KT = 6;          /* key tiles of attention */
constexpr int LP_NI = 8;          /* n8 tiles per warp: a warp owns 48 x 64 of C */
constexpr int LP_NT = 32 * LP_NI; /* GEMM N tile (W rows per pass): 4 warps across */
constexpr int LP_BK = 32;         /* k per W stage */
constexpr int LP_LDW = 40;        /* W stage row stride (elements) */
constexpr int LP_STAGES = 3;      /* cp.async ring in the W area */
constexpr int LP_THREADS = 256;
constexpr int LP_LDK = LP_D + 8; /* attention K, V row stride */
constexpr int LP_MAX_H = 512;    /* rmsnorm keeps H / 32 <= 16 values per lane */
constexpr size_t LP_W_BYTES = (size_t)LP_STAGES * LP_NT * LP_LDW * 2;
/* Stages of the GEMMs whose A is z (qkv, gate_up): the buffer is free then
 * and lies just before the W area, so the ring spans both, six k blocks in
 * flight instead of two (the kernel waits on L2 otherwise: ncu, 0.38 eligible
 * warps per scheduler). Where T (H + 8) * 2 + LP_W_BYTES < LP_WIDE stages,
 * the three-stage ring serves them too. */
constexpr int LP_WIDE = 7;
constexpr size_t LP_STAGE_BYTES = (size_t)LP_NT * LP_LDW * 2;

static_assert(2 * LP_TP * LP_LDK * 2 <= (int)LP_W_BYTES, "K and V must fit the W stages");

struct lp_params {
    const uint16_t *wqkv[LP_MAX_LAYERS], *wo[LP_MAX_LAYERS], *wgu[LP_MAX_LAYERS],
        *wdown[LP_MAX_LAYERS];
    uint16_t *zL;
    const uint16_t *zH, *x;
    uint16_t *qkv, *act; /* per CTA: T x 3H and T x I */
    const float *cs, *sn;
    const uint16_t *lut; /* SwiGLU's s(g) per BF16 gate */
    float scale, eps;
    int B, T, H, I, heads, L_cycles, L_layers;
    int wide; /* the z GEMMs' ring spans the buffer too (LP_WIDE stages) */
};

__device__ __forceinline__ float bf(uint32_t bits16) { return rc::bf16_to_f((uint16_t)bits16); }

/* The GEMM's rounding of an F32 sum to BF16 (the own kernel's store_c). */
__device__ __forceinline__ uint32_t rnd(float v) { return hrmt_cu_f32_to_bf16(v); }

typedef float lp_acc[3][LP_NI][4];

__device__ __forceinline__ void zero_acc(lp_acc &acc) {
#pragma unroll
    for (int i = 0; i < 3; i++)
#pragma unroll
        for (int j = 0; j < LP_NI; j++)
#pragma unroll
            for (int x = 0; x < 4; x++) acc[i][j][x] = 0.0f;
}

/* acc (96 rows x LP_NT columns of C, warp (wm, wn) owning rows 48 wm.. and
 * columns 64 wn..) += A[:, 0:K] W^T over this tile's LP_NT W rows, where A
 * (T rows) is in shared memory (row stride lda) and W row r of the tile
 * starts at wrow(r) in global memory. Rows past T read row T - 1 (the
 * m16 tiles need 96 rows; those outputs are never stored). Ends with the W
 * stages and A free. */
template <int NS, class WROW>
__device__ __forceinline__ void gemm_tile(lp_acc &acc, const uint16_t *As, int lda, int K, int T,
                                          WROW wrow, uint16_t *wst) {
    const int tid = threadIdx.x, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
    const int nkb = K / LP_BK;
    auto load = [&](int kb) {
        uint16_t *st = wst + (kb % NS) * LP_NT * LP_LDW;
#pragma unroll
        for (int c = tid; c < LP_NT * 4; c += LP_THREADS) {
            const int r = c >> 2, part = c & 3;
            cp_async16(st + r * LP_LDW + part * 8, wrow(r) + kb * LP_BK + part * 8, 16);
        }
    };
    /* NS stages, NS - 1 k blocks in flight ahead of the one in use. */
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if (s < nkb) load(s);
        cp_async_commit();
    }
    for (int kb = 0; kb < nkb; kb++) {
        cp_async_wait<NS - 2>(); /* stage kb has landed (for this thread) */
        __syncthreads();         /* ... for every thread; stage kb - 1 is free */
        if (kb + NS - 1 < nkb) load(kb + NS - 1);
        cp_async_commit();
        const uint16_t *st = wst + (kb % NS) * LP_NT * LP_LDW;
#pragma unroll
        for (int ks = 0; ks < 2; ks++)
            mma_k16<3, LP_NI>(
                acc,
                [&](int r) { return As + min(wm * 48 + r, T - 1) * lda + kb * LP_BK + ks * 16; },
                st + wn * 8 * LP_NI * LP_LDW + ks * 16, LP_LDW);
    }
    cp_async_wait<0>();
    __syncthreads();
}

/* Visits the thread's rows of C: f(mi, hf, row) for its m16 tile mi and
 * half hf (rows g and g + 8 of the tile), rows past T skipped. */
template <class F>
__device__ __forceinline__ void each_row(int T, F f) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp >> 2;
#pragma unroll
    for (int mi = 0; mi < 3; mi++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int row = wm * 48 + mi * 16 + (lane >> 2) + hf * 8;
            if (row < T) f(mi, hf, row);
        }
}

/* Visits the thread's C pairs: f(row, col, v0, v1) for columns col, col + 1
 * of the tile (rows past T skipped). */
template <class F>
__device__ __forceinline__ void each_pair(const lp_acc &acc, int T, F f) {
    const int lane = threadIdx.x & 31, wn = (threadIdx.x >> 5) & 3, tg = lane & 3;
    each_row(T, [&](int mi, int hf, int row) {
#pragma unroll
        for (int ni = 0; ni < LP_NI; ni++)
            f(row, wn * 8 * LP_NI + ni * 8 + 2 * tg, acc[mi][ni][2 * hf], acc[mi][ni][2 * hf + 1]);
    });
}

/* z[:, n0 + col] = bf16(z + bf16(acc)): the residual add of the row op
 * (h = bf16(x + r), r the GEMM's BF16 output), before the norm. */
__device__ __forceinline__ void residual_tile(const lp_acc &acc, uint16_t *zs, int ldz, int n0,
                                              int T) {
    each_pair(acc, T, [&](int row, int col, float v0, float v1) {
        uint32_t *p = (uint32_t *)(zs + row * ldz + n0 + col);
        *p = rc::add_bf16x2_arith(*p, rnd(v0) | (rnd(v1) << 16));
    });
}

/* rows 0..T-1 of z = rmsnorm(h) in place, h already bf16(x + r): one warp
 * per row, rowops_norm.cu's register form (lane l sums h[g * 32 + l] over g
 * from 0, then its shuffles), H = 32 G. */
__device__ __forceinline__ void rmsnorm_rows(uint16_t *zs, int ldz, int T, int H, float eps) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, G = H / 32;
    const float cols_f = (float)H;
    for (int row = warp; row < T; row += LP_THREADS / 32) {
        uint16_t *zr = zs + row * ldz + lane;
        float h[LP_MAX_H / 32];
#pragma unroll
        for (int g = 0; g < LP_MAX_H / 32; g++)
            if (g < G) h[g] = bf(zr[g * 32]);
        const float inv = rc::rmsnorm_lanes_inv(h, G, cols_f, eps);
#pragma unroll
        for (int g = 0; g < LP_MAX_H / 32; g++)
            if (g < G) zr[g * 32] = rc::bf16_bits_arith(rc::fmul(h[g], inv));
    }
}

/* z += bf16(zH + x) for the sample's rows: the baseline's two add row ops
 * (injection once, then the level's add). */
__device__ __forceinline__ void inject(uint16_t *zs, int ldz, const uint16_t *zh, const uint16_t *x,
                                       int T, int H) {
    const int per_row = H / 8;
    for (int e = threadIdx.x; e < T * per_row; e += LP_THREADS) {
        const int row = e / per_row, c = (e % per_row) * 8;
        const uint4 a = *(const uint4 *)(zh + (size_t)row * H + c);
        const uint4 b = *(const uint4 *)(x + (size_t)row * H + c);
        uint4 *zp = (uint4 *)(zs + row * ldz + c);
        const uint4 z = *zp;
        const uint32_t *aw = (const uint32_t *)&a, *bw = (const uint32_t *)&b,
                       *zw = (const uint32_t *)&z;
        uint32_t o[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            o[k] = rc::add_bf16x2_arith(zw[k], rc::add_bf16x2_arith(aw[k], bw[k]));
        }
        *zp = make_uint4(o[0], o[1], o[2], o[3]);
    }
}

/* Copies rows 0..T-1 of a [T, ld] BF16 matrix's columns c0..c0+w into
 * shared memory (row stride lds), 16 bytes per thread and step. */
__device__ __forceinline__ void rows_to_smem(uint16_t *dst, int lds, const uint16_t *src, size_t ld,
                                             int c0, int w, int T) {
    const int per_row = w / 8;
    for (int e = threadIdx.x; e < T * per_row; e += LP_THREADS) {
        const int row = e / per_row, c = (e % per_row) * 8;
        *(uint4 *)(dst + row * lds + c) = *(const uint4 *)(src + (size_t)row * ld + c0 + c);
    }
}

__device__ void layer(const lp_params &p, int li, uint16_t *zs, uint16_t *ab, uint16_t *wst,
                      uint16_t *qkv_g, uint16_t *act_g) {
    const int T = p.T, H = p.H, I = p.I, ldz = H + 8, warp = threadIdx.x >> 5;
    lp_acc acc;
    /* A GEMM on z: the wide ring over the buffer and the W area when it fits. */
    auto gemm_z = [&](lp_acc &a, auto wrow) {
        if (p.wide)
            gemm_tile<LP_WIDE>(a, zs, ldz, H, T, wrow, ab);
        else
            gemm_tile<LP_STAGES>(a, zs, ldz, H, T, wrow, wst);
    };
    /* qkv = z W_qkv^T -> the CTA's scratch rows. */
    const uint16_t *wq = p.wqkv[li];
    for (int n0 = 0; n0 < 3 * H; n0 += LP_NT) {
        zero_acc(acc);
        gemm_z(acc, [&](int r) { return wq + (size_t)(n0 + r) * H; });
        each_pair(acc, T, [&](int row, int col, float v0, float v1) {
            *(uint32_t *)(qkv_g + (size_t)row * 3 * H + n0 + col) = rnd(v0) | (rnd(v1) << 16);
        });
    }
    __syncthreads();
    /* attention, head by head: K and V in the W stages, Q into the output's
     * place in ab, each of the first nkt warps one 16-row query tile. */
    const int nkt = (T + 15) / 16;
    uint16_t *Ks = wst, *Vs = wst + LP_TP * LP_LDK;
    for (int h = 0; h < p.heads; h++) {
        load_qkv<LP_D>(qkv_g + h * LP_D, T, nkt * 16, H, LP_LDK, p.cs, p.sn, Ks, Vs, 0, T,
                       ab + h * LP_D, ldz);
        __syncthreads();
        if (warp < nkt) {
            uint16_t *q = ab + warp * 16 * ldz + h * LP_D;
            const int qrows = min(16, T - 16 * warp);
            if (T > 16 * (LP_KT - 1))
                attend_tile<LP_D, LP_KT, true, false>(T, nkt, Ks, Vs, LP_LDK, q, ldz, qrows,
                                                      p.scale);
            else
                attend_tile<LP_D, LP_KT, false, false>(T, nkt, Ks, Vs, LP_LDK, q, ldz, qrows,
                                                       p.scale);
        }
        __syncthreads();
    }
    /* z = rmsnorm(z + att W_o^T) */
    const uint16_t *wo = p.wo[li];
    for (int n0 = 0; n0 < H; n0 += LP_NT) {
        zero_acc(acc);
        gemm_tile<LP_STAGES>(
            acc, ab, ldz, H, T, [&](int r) { return wo + (size_t)(n0 + r) * H; }, wst);
        residual_tile(acc, zs, ldz, n0, T);
    }
    __syncthreads();
    rmsnorm_rows(zs, ldz, T, H, p.eps);
    __syncthreads();
    /* act = SwiGLU(z W_gate_up^T), LP_NT / 2 act columns per tile: warp
     * wn's 8 LP_NI W rows are 4 LP_NI gate rows then the up rows of the same
     * columns, so a thread holds each gate next to its up (n8 tiles ni and
     * ni + LP_NI / 2). */
    constexpr int HN = LP_NI / 2, WR = 8 * LP_NI; /* gate n8 tiles, W rows per warp */
    const uint16_t *wg = p.wgu[li];
    for (int j0 = 0; j0 < I; j0 += LP_NT / 2) {
        zero_acc(acc);
        gemm_z(acc, [&](int r) {
            const int q = r % WR, j = j0 + (r / WR) * (WR / 2) + q % (WR / 2);
            return wg + (size_t)(q < WR / 2 ? j : I + j) * H;
        });
        const int wn = warp & 3, tg = threadIdx.x & 3;
        each_row(T, [&](int mi, int hf, int row) {
#pragma unroll
            for (int ni = 0; ni < HN; ni++) {
                const int j = j0 + wn * (WR / 2) + ni * 8 + 2 * tg;
                float o[2];
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const uint32_t gb = rnd(acc[mi][ni][2 * hf + e]);
                    const float u = bf(rnd(acc[mi][ni + HN][2 * hf + e]));
                    o[e] = rc::fmul(bf(__ldg(p.lut + gb)), u);
                }
                *(uint32_t *)(act_g + (size_t)row * I + j) = rc::pack_bf16x2_arith(o[0], o[1]);
            }
        });
    }
    __syncthreads();
    /* z = rmsnorm(z + act W_down^T), act's K in chunks of up to H columns
     * through ab; each output's chain runs on across the chunks. */
    const uint16_t *wd = p.wdown[li];
    for (int n0 = 0; n0 < H; n0 += LP_NT) {
        zero_acc(acc);
        for (int k0 = 0; k0 < I; k0 += H) {
            const int kc = I - k0 < H ? I - k0 : H;
            rows_to_smem(ab, ldz, act_g, I, k0, kc, T);
            __syncthreads();
            gemm_tile<LP_STAGES>(
                acc, ab, ldz, kc, T, [&](int r) { return wd + (size_t)(n0 + r) * I + k0; }, wst);
        }
        residual_tile(acc, zs, ldz, n0, T);
    }
    __syncthreads();
    rmsnorm_rows(zs, ldz, T, H, p.eps);
    __syncthreads();
}

__global__ void __launch_bounds__(LP_THREADS, 1) l_persist(const lp_params p) {
    extern __shared__ __align__(128) unsigned char lp_smem[];
    const int T = p.T, H = p.H, ldz = H + 8;
    uint16_t *zs = (uint16_t *)lp_smem, *ab = zs + T * ldz, *wst = ab + T * ldz;
    uint16_t *qkv_g = p.qkv + (size_t)blockIdx.x * T * 3 * H;
    uint16_t *act_g = p.act + (size_t)blockIdx.x * T * p.I;
    for (int s = blockIdx.x; s < p.B; s += gridDim.x) {
        const size_t r0 = (size_t)s * T;
        rows_to_smem(zs, ldz, p.zL + r0 * H, H, 0, H, T);
        __syncthreads();
        for (int l = 0; l < p.L_cycles; l++) {
            inject(zs, ldz, p.zH + r0 * H, p.x + r0 * H, T, H);
            __syncthreads();
            for (int li = 0; li < p.L_layers; li++) layer(p, li, zs, ab, wst, qkv_g, act_g);
        }
        const int per_row = H / 8;
        for (int e = threadIdx.x; e < T * per_row; e += LP_THREADS) {
            const int row = e / per_row, c = (e % per_row) * 8;
            *(uint4 *)(p.zL + (r0 + row) * H + c) = *(const uint4 *)(zs + row * ldz + c);
        }
        __syncthreads();
    }
}

size_t smem_bytes(size_t T, size_t H) { return 2 * T * (H + 8) * 2 + LP_W_BYTES; }

} // namespace

int cu_l_persist_applies(const hrmt_model *m) {
    size_t per_block = 0; /* the only limit the conditions need */
    hrmt_cuda_limits(m->ctx->cuda, &per_block, NULL, NULL, NULL);
    const size_t H = m->hidden, I = m->inter;
    return m->dt == HRMT_BF16 && m->head_dim == LP_D && m->heads * LP_D == H && H % LP_NT == 0 &&
           H <= LP_MAX_H && I % (LP_NT / 2) == 0 && I % 32 == 0 && m->T >= 1 && m->T <= LP_TP &&
           m->cfg.L_layers >= 1 && m->cfg.L_layers <= LP_MAX_LAYERS &&
           smem_bytes(m->T, H) <= per_block;
}

hrmt_status cu_l_persist(const hrmt_model *m, void *zL, const void *zH, const void *x, size_t B,
                         void *qkv_scratch, void *act_scratch) {
    if (B == 0) return HRMT_OK;
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    lp_params p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < m->cfg.L_layers; i++) {
        p.wqkv[i] = (const uint16_t *)m->L[i].qkv.dev;
        p.wo[i] = (const uint16_t *)m->L[i].o.dev;
        p.wgu[i] = (const uint16_t *)m->L[i].gate_up.dev;
        p.wdown[i] = (const uint16_t *)m->L[i].down.dev;
    }
    const struct hrmt_model_cuda *g = cu_model(m);
    p.zL = (uint16_t *)zL;
    p.zH = (const uint16_t *)zH;
    p.x = (const uint16_t *)x;
    p.qkv = (uint16_t *)qkv_scratch;
    p.act = (uint16_t *)act_scratch;
    p.cs = m->cfg.pos_encodings == HRMT_POS_ROPE ? g->rope_cos : nullptr;
    p.sn = p.cs ? g->rope_sin : nullptr;
    p.lut = m->ctx->cuda->silu_bf16;
    p.scale = (float)(1.0 / sqrt((double)m->head_dim));
    p.eps = (float)m->cfg.rms_norm_eps;
    p.B = (int)B;
    p.T = (int)m->T;
    p.H = (int)m->hidden;
    p.I = (int)m->inter;
    p.heads = (int)m->heads;
    p.L_cycles = m->cfg.L_cycles;
    p.L_layers = m->cfg.L_layers;
    p.wide = m->T * (m->hidden + 8) * 2 + LP_W_BYTES >= LP_WIDE * LP_STAGE_BYTES;
    const size_t bytes = smem_bytes(m->T, m->hidden);
    cudaError_t e =
        cudaFuncSetAttribute(l_persist, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda L level (persistent): shared memory");
    /* One CTA per SM at most (the shared memory allows no more); each CTA
     * owns its scratch rows, so the grid never exceeds the batch. */
    const size_t grid = B < (size_t)(sms > 0 ? sms : 1) ? B : (size_t)sms;
    l_persist<<<(unsigned)grid, LP_THREADS, bytes, cu_stream(m)>>>(p);
    return cu_check(m->ctx, "cuda L level (persistent)");
}

hrmt_status cu_l_persist_setting(hrmt_model *m) {
    int on = 0;
    const hrmt_status s = cu_env_switch(m, "HRMT_CUDA_L_PERSIST", 0, &on);
    /* Opt-in: on the H200 it is slower than the tile-by-tile schedule at
     * every batch measured (docs/BENCHMARKS.md), so tiered keeps the tiles. */
    cu_model(m)->l_persist = s == HRMT_OK && on && cu_l_persist_applies(m);
    return s;
}
