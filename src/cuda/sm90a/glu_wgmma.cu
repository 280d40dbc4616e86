/* The MLP's gate/up projection with SwiGLU in the epilogue, on Hopper's
 * warpgroup tensor-core instructions (wgmma) fed by the copy engine (TMA):
 *
 *   act[r, j] = bf16( s(bf16(A W_g^T)[r, j]) * bf16(A W_u^T)[r, j] )
 *
 * W = [W_g; W_u] is the model's gate_up weight ([2I, K], gate rows first) and
 * s the context's SwiGLU table. Launch by launch, the same is one cuBLASLt
 * GEMM writing [rows, 2I] and the table kernel reading it back: 3x the act's
 * bytes through HBM and a launch more per block, which this removes.
 *
 * Bits: each gate/up sum is one F32 chain of BF16 k16 tensor-core steps in
 * ascending k from +0 (accumulators zeroed, wgmma always accumulating) - the
 * arithmetic of the pinned cuBLASLt algorithms and of the mma.sync kernels -
 * rounded to BF16, then the table kernel's lookup, product and rounding; the
 * lookup is silu_fast.cuh's s(g) where the model's check of all 65536 gates
 * enabled it (HRMT_CUDA_GLU_FAST_SILU: no shared-memory reads competing with
 * the products'). The model checks on the device that the fused and the
 * launch-by-launch MLP give the same bytes (cuda_model/fused_glu_equals_launches).
 *
 * Shape: ring_gemm.cuh's persistent kernel (TMA ring, one producer thread,
 * consumer warpgroups); a stage holds a tile's rows of A and its BNA gate
 * plus BNA up rows of W, adjacent, so that one wgmma of N = 2 BNA covers
 * both and a thread holds each gate next to its up. Six tile shapes
 * (GLU_SHAPES): 128 x 64 with two warpgroups taking turns (large batches),
 * 64 x 64 and 64 x 32 with two or one, 64 x 16 (one sample's rows over
 * more SMs); a seventh, 128 x 64 again on ring_wres.cuh's loop (each CTA's
 * W slice resident, A alone streamed; hidden <= 512), is forced or, with
 * HRMT_CUDA_GLU_WRES=1, tuned (on by default since session 31); the eighth,
 * its 64-row form over three warpgroups writing each act tile by one TMA
 * store (glu_epi_ts), tuned with HRMT_CUDA_GLU_WRES_TSTORE=1 (on by default
 * since session 44). The GEMM tuner (model_gemm_tune.cu) times the shapes at model load per
 * row bucket and checks that each gives the first one's bytes; untuned,
 * 128 x 64 once those tiles fill the SMs twice, 64 x 64 with one warpgroup
 * below.
 * Built for sm_90a only (src/CMakeLists.txt): cu_glu_applies checks that the
 * device is compute capability 9.0 and that the kernel image loads. */
#include <cuda.h>
#include <cudaTypedefs.h>

#include <type_traits>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/act_tile_swizzle.h"
#include "cuda/sm90a/ring_gemm.cuh"
#include "cuda/sm90a/ring_norm_gemm.cuh"
#include "cuda/sm90a/ring_wres.cuh"
#include "cuda/sm90a/silu_fast.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

/* The table's entries for |g| in [2^-16, 2^8) - nearly every gate - copied
 * into the CTA's shared memory (12 KB; cuda/sm90a/ring_gemm.cuh's epilogue
 * part): a warp's 32 lookups there cost a few shared-memory wavefronts, where
 * the same from the 128 KB global table cost a wavefront per cache line
 * touched (ncu: the kernel's warps stalled on L1TEX). Gates outside the
 * window read the global table; the bytes are the table's either way. */
constexpr unsigned SLUT_E0 = 111;        /* first biased exponent held: 2^-16 */
constexpr unsigned SLUT_HALF = 24 * 128; /* entries per sign: 24 exponents */
constexpr int SLUT_BYTES = 2 * SLUT_HALF * 2;

/* Gate bits gb's place in its sign's half of the window; SLUT_HALF or more
 * (wrapping below) when outside it. */
__device__ __forceinline__ unsigned slut_offset(uint32_t gb) {
    return (gb & 0x7fffu) - SLUT_E0 * 128u;
}
/* s(gb) from the window; gb must be in it. */
__device__ __forceinline__ uint32_t slut_at(const uint16_t *slut, uint32_t gb) {
    return slut[(gb >> 15) * SLUT_HALF + slut_offset(gb)];
}
__device__ __forceinline__ uint32_t silu_lookup(const uint16_t *lut, const uint16_t *slut,
                                                uint32_t gb) {
    if (slut && slut_offset(gb) < SLUT_HALF) return slut_at(slut, gb);
    return __ldg(lut + gb);
}

/* s of NP packed gate pairs from the table: plain loads from the window
 * when every gate of the warp falls in it (nearly always; a warp vote),
 * else silu_lookup's branch gate by gate. */
template <int NP>
__device__ __forceinline__ void silu_lookup_pairs(const uint16_t *lut, const uint16_t *slut,
                                                  const uint32_t (&g2)[NP], uint32_t (&sg)[NP]) {
    bool in = slut != nullptr;
#pragma unroll
    for (int q = 0; q < NP; q++)
        in = in && slut_offset(g2[q] & 0xffffu) < SLUT_HALF && slut_offset(g2[q] >> 16) < SLUT_HALF;
    if (__all_sync(0xffffffffu, in)) {
#pragma unroll
        for (int q = 0; q < NP; q++)
            sg[q] = slut_at(slut, g2[q] & 0xffffu) | slut_at(slut, g2[q] >> 16) << 16;
    } else {
#pragma unroll
        for (int q = 0; q < NP; q++) {
            const uint32_t lo = silu_lookup(lut, slut, g2[q] & 0xffffu);
            sg[q] = lo | silu_lookup(lut, slut, g2[q] >> 16) << 16;
        }
    }
}

/* act[r, n0 .. n0 + BNA): the tile reads W's gate rows n0.. and up rows
 * I + n0.. into one stage, adjacent, so that one wgmma of N = 2 BNA covers
 * both and a thread holds each gate next to its up. */
template <int BNA>
struct glu_epi {
    static constexpr int TILE_N = BNA;
    static constexpr int EPI_SMEM = SLUT_BYTES;
    struct args {
        ring_dims d;
        int I;
        const uint16_t *lut;
        uint16_t *act;
        int ldo;
        int slut; /* HRMT_CUDA_GLU_SMEM_TABLE: the window in shared memory */
        int fast; /* HRMT_CUDA_GLU_FAST_SILU: silu_fast_pair, no lookups */
        int mul;  /* HRMT_CUDA_GLU_MUL: s(g) u by mul_bf16x2 */
    };
    /* The window's two halves (g >= 0, g < 0), 16 bytes per copy. */
    static __device__ __forceinline__ void epi_load(uint8_t *part, int t, int threads,
                                                    const args &p) {
        if (!p.slut) return;
        constexpr int HALF16 = SLUT_HALF * 2 / 16;
        for (int i = t; i < 2 * HALF16; i += threads) {
            const int sign = i / HALF16, j = i % HALF16;
            const uint4 *src = (const uint4 *)(p.lut + (sign << 15) + SLUT_E0 * 128);
            ((uint4 *)part)[i] = __ldg(src + j);
        }
    }
    static __device__ __forceinline__ void load_w(uint8_t *st, const CUtensorMap *tm, uint64_t *bar,
                                                  int kb, int n0, const args &p) {
#ifdef HRMT_SM90A
        tma_load(st, tm, bar, kb * BK, n0);
        tma_load(st + BNA * ROW_BYTES, tm, bar, kb * BK, p.I + n0);
#endif
    }
    /* Thread (warp, lane) holds rows warp * 16 + lane / 4 (+ 8) of each m64
     * block, columns 8 i + 2 (lane % 4) (+ 1) of n8 tile i: gates in tiles
     * 0 .. BNA / 8 - 1, ups in the next BNA / 8. Each column pair of gates
     * and of ups is rounded by one paired conversion (cvt.rn.bf16x2: RNE,
     * the software rounding's bits for every non-NaN); when every gate of
     * the warp falls in the shared-memory window (nearly always) the
     * lookups are plain shared loads, else each takes silu_lookup's branch.
     * All lookups are issued before the first store: a store between them
     * (the compiler cannot tell act from the table) would make each load
     * wait for the one before. (ncu: the epilogue, ~60 instructions an
     * output in its first form, outlasted the other warpgroup's products.) */
    template <int MSUB, bool STAGE = false>
    static __device__ __forceinline__ void store(float (&acc)[MSUB][BNA], int m0, int n0, int warp,
                                                 int lane, const args &p,
                                                 const uint8_t *part = nullptr,
                                                 uint8_t *buf = nullptr) {
        constexpr int NP = MSUB * (BNA / 8) * 2; /* column pairs per thread */
        const uint16_t *slut = p.slut ? (const uint16_t *)part : nullptr;
        uint32_t g2[NP], u2[NP];
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
            for (int i = 0; i < BNA / 8; i++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int q = (ms * (BNA / 8) + i) * 2 + hf, a = 4 * i + 2 * hf;
                    g2[q] = rc::pack_bf16x2_arith(acc[ms][a], acc[ms][a + 1]);
                    u2[q] = rc::pack_bf16x2_arith(acc[ms][BNA / 2 + a], acc[ms][BNA / 2 + a + 1]);
                }
        uint32_t sg[NP];
        if (p.fast) {
#pragma unroll
            for (int q = 0; q < NP; q++) sg[q] = silu_fast_pair(p.lut, g2[q]);
        } else {
            silu_lookup_pairs(p.lut, slut, g2, sg);
        }
        /* The act pair of column pair q, computed as it is stored (STAGE:
         * into buf's tile, glu_epi_ts; the two forms are spelt apart so
         * that the plain one compiles as it did before the staged one). */
        auto put = [&](auto pair) {
#pragma unroll
            for (int ms = 0; ms < MSUB; ms++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int row = m0 + ms * 64 + warp * 16 + lane / 4 + 8 * hf;
                    if (row >= p.d.M) continue;
                    if constexpr (STAGE) {
#pragma unroll
                        for (int i = 0; i < BNA / 8; i++)
                            sts_u32(buf + act_tile_offset(row - m0, i, lane & 3),
                                    pair((ms * (BNA / 8) + i) * 2 + hf));
                    } else {
                        uint16_t *out = p.act + (size_t)row * p.ldo + n0 + 2 * (lane & 3);
#pragma unroll
                        for (int i = 0; i < BNA / 8; i++)
                            *(uint32_t *)(out + 8 * i) = pair((ms * (BNA / 8) + i) * 2 + hf);
                    }
                }
        };
        if (p.mul) {
            put([&](int q) { return mul_bf16x2(sg[q], u2[q]); });
        } else {
            put([&](int q) {
                const float o0 =
                    rc::fmul(__uint_as_float(sg[q] << 16), __uint_as_float(u2[q] << 16));
                const float o1 = rc::fmul(__uint_as_float(sg[q] & 0xffff0000u),
                                          __uint_as_float(u2[q] & 0xffff0000u));
                return rc::pack_bf16x2_arith(o0, o1);
            });
        }
    }
    /* The same into a 64 x 64 tile of shared memory at buf in the 128-byte
     * swizzle (act_tile_swizzle.h: a warp's 32 stores hit 32 banks), for
     * one TMA store of the tile (glu_epi_ts). */
    template <int MSUB>
    static __device__ __forceinline__ void stage(float (&acc)[MSUB][BNA], int m0, int warp,
                                                 int lane, const args &p, const uint8_t *part,
                                                 uint8_t *buf) {
        static_assert(MSUB == 1 && BNA == 64, "a 64 x 64 act tile: 128-byte rows");
        store<MSUB, true>(acc, m0, 0, warp, lane, p, part, buf);
    }
};

/* glu_epi<64> for the W-resident kernel's three-warpgroup form (shape
 * GLU_WRES_TS, tuned with HRMT_CUDA_GLU_WRES_TSTORE; ring_wres.cuh's
 * TMA_STORE path): each tile's act staged in shared memory and written by
 * one TMA store, the same bytes. Why: every thread's 4-byte global stores
 * take L1 wavefronts that hold up the products' shared-memory reads
 * (bench/cuda_wgmma_rate.cu: the tensor pipe 64% busy with them, 81% with
 * the staged tile; the kernel 114.7 -> 107.3 us at batch 256 on an H100,
 * docs/CUDA-KERNELS.md). Shared memory: the table window, then
 * (1024-aligned: the swizzle) a tile per consumer warpgroup, TILE_BUFS at
 * most. The act map is ring_wres_kernel's last parameter (wres_out). */
struct glu_epi_ts : glu_epi<64> {
    static constexpr int TILE_BYTES = 64 * 64 * 2, TILE_BUFS = 3;
    static constexpr int EPI_SMEM = SLUT_BYTES + 1024 + TILE_BUFS * TILE_BYTES;
    static constexpr bool TMA_STORE = true;
    static __device__ __forceinline__ uint8_t *tile_buf(uint8_t *part, int cw) {
        return (uint8_t *)(((uintptr_t)part + SLUT_BYTES + 1023) & ~(uintptr_t)1023) +
               cw * TILE_BYTES;
    }
};

/* The tile shapes: MSUB m64 row blocks, WGS consumer warpgroups, BNA act
 * columns (2 BNA rows of W); GLU_WRES and GLU_WRES_TS on ring_wres.cuh's
 * loop. */
struct glu_shape {
    int msub, wgs, bna;
};
constexpr glu_shape GLU_SHAPES[] = {{2, 2, 64}, {1, 2, 64}, {1, 1, 64}, {1, 1, 32},
                                    {1, 2, 32}, {1, 1, 16}, {2, 2, 64}, {1, 3, 64}};
constexpr int GLU_NSHAPES = (int)(sizeof GLU_SHAPES / sizeof GLU_SHAPES[0]);
constexpr int GLU_WRES = 6;    /* the W-resident shape's index */
constexpr int GLU_WRES_TS = 7; /* its three-warpgroup form with TMA stores (glu_epi_ts) */
constexpr int WRES_KB = 8;     /* its k blocks at most: hidden <= 512 */

/* The epilogue's arguments for `rows` rows of act; slut: the table's window
 * in shared memory. */
template <int BNA>
typename glu_epi<BNA>::args glu_args(const hrmt_model *m, size_t rows, void *act, int slut) {
    const size_t H = m->hidden, I = m->inter;
    return {{(int)rows, (int)(I / BNA), (int)(H / BK)},
            (int)I,
            m->ctx->cuda->silu_bf16,
            (uint16_t *)act,
            (int)I,
            slut,
            cu_model(m)->glu_fast,
            cu_model(m)->glu_mul};
}

template <int MSUB, int WGS, int BNA>
hrmt_status glu_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                       const void *a, const void *w, void *act) {
    using C = ring_cfg_for<MSUB, WGS, 2 * BNA, glu_epi<BNA>>;
    auto kern = ring_gemm_kernel<MSUB, WGS, 2 * BNA, glu_epi<BNA>>;
    const size_t H = m->hidden, I = m->inter;
    CUtensorMap ta, tw;
    if (!encode(fn, &ta, a, rows, H, H, C::BM) || !encode(fn, &tw, w, 2 * I, H, H, BNA))
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda fused gate_up: tensor map refused");
    cudaError_t e = ring_prepare<MSUB, WGS, 2 * BNA, glu_epi<BNA>>();
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda fused gate_up: shared memory");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    /* One CTA per WGS tiles, at most one per SM. */
    const size_t units = (rows + C::BM - 1) / C::BM * (I / BNA);
    const size_t groups = (units + WGS - 1) / WGS;
    const unsigned grid = (unsigned)(groups < (size_t)sms ? groups : (size_t)sms);
    const typename glu_epi<BNA>::args p = glu_args<BNA>(m, rows, act, cu_model(m)->glu_slut);
    e = pdl_launch(kern, dim3(grid), dim3(C::THREADS), C::SMEM, cu_stream(m), cu_model(m)->pdl, ta,
                   tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda fused gate_up");
    return cu_check(m->ctx, "cuda fused gate_up");
}

/* 128 x 64 tiles with each CTA's W slice resident (ring_wres.cuh): a
 * contiguous run of tiles per CTA, one CTA per SM at most. */
template <int MSUB = 2, int WGS = 2, bool TS = false>
hrmt_status glu_wres_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                            const void *a, const void *w, void *act) {
    using E = std::conditional_t<TS, glu_epi_ts, glu_epi<64>>;
    using C = wres_cfg_for<MSUB, 128, WRES_KB, E, WGS>;
    const size_t H = m->hidden, I = m->inter;
    if (H / BK > (size_t)WRES_KB)
        return hrmt_fail(m->ctx, HRMT_ERR_UNSUPPORTED,
                         "cuda fused gate_up: the W-resident shape takes hidden <= %d, not %zu",
                         WRES_KB * BK, H);
    CUtensorMap ta, tw;
    typename wres_out<E>::map to{}; /* TS: act's map; else an empty, unread struct */
    bool mapped = encode(fn, &ta, a, rows, H, H, C::BM) && encode(fn, &tw, w, 2 * I, H, H, 64);
    if constexpr (TS) mapped = mapped && encode(fn, &to, act, rows, I, I, 64);
    if (!mapped) return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda fused gate_up: tensor map refused");
    cudaError_t e = wres_prepare<MSUB, 128, WRES_KB, E, WGS>();
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda fused gate_up: shared memory");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    /* At most one CTA per SM. */
    const size_t tiles = (rows + C::BM - 1) / C::BM * (I / 64);
    const unsigned grid = (unsigned)(tiles < (size_t)sms ? tiles : (size_t)sms);
    const typename E::args p = glu_args<64>(m, rows, act, cu_model(m)->glu_slut);
    e = pdl_launch(ring_wres_kernel<MSUB, 128, WRES_KB, E, WGS>, dim3(grid), dim3(C::THREADS),
                   C::SMEM, cu_stream(m), cu_model(m)->pdl, ta, tw, p, to);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda fused gate_up (W resident)");
    return cu_check(m->ctx, "cuda fused gate_up (W resident)");
}

/* The same with A = rmsnorm(x + r) formed in the prologue
 * (ring_norm_gemm.cuh): 64-row tiles, one consumer warpgroup. */
template <int BNA>
hrmt_status glun_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                        const norm_src &ns, const void *w, void *act) {
    using C = ring_norm_cfg<2 * BNA>;
    const size_t H = m->hidden, I = m->inter;
    CUtensorMap tw;
    if (!encode(fn, &tw, w, 2 * I, H, H, BNA))
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda norm + fused gate_up: tensor map refused");
    cudaError_t e = ring_norm_prepare<2 * BNA, glu_epi<BNA>>();
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda norm + fused gate_up: shared memory");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t tiles = (rows + 63) / 64 * (I / BNA);
    const unsigned grid = (unsigned)(tiles < (size_t)sms ? tiles : (size_t)sms);
    /* No shared-memory part in ring_norm_gemm.cuh: no table window. */
    const typename glu_epi<BNA>::args p = glu_args<BNA>(m, rows, act, 0);
    e = pdl_launch(ring_norm_gemm_kernel<2 * BNA, glu_epi<BNA>>, dim3(grid), dim3(C::THREADS),
                   C::SMEM, cu_stream(m), cu_model(m)->pdl, tw, p, ns);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda norm + fused gate_up");
    return cu_check(m->ctx, "cuda norm + fused gate_up");
}

template <int MSUB, int WGS, int BNA>
int glu_loads(size_t per_block) {
    return ring_loads<MSUB, WGS, 2 * BNA, glu_epi<BNA>>(per_block);
}

hrmt_status glu_shape_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, int shape,
                             size_t rows, const void *a, const void *w, void *act) {
    switch (shape) {
    case 0: return glu_launch<2, 2, 64>(m, fn, rows, a, w, act);
    case 1: return glu_launch<1, 2, 64>(m, fn, rows, a, w, act);
    case 2: return glu_launch<1, 1, 64>(m, fn, rows, a, w, act);
    case 3: return glu_launch<1, 1, 32>(m, fn, rows, a, w, act);
    case 4: return glu_launch<1, 2, 32>(m, fn, rows, a, w, act);
    case GLU_WRES:
        if (cu_model(m)->glu_wres3) return glu_wres_launch<1, 3>(m, fn, rows, a, w, act);
        return glu_wres_launch<>(m, fn, rows, a, w, act);
    case GLU_WRES_TS: return glu_wres_launch<1, 3, true>(m, fn, rows, a, w, act);
    default: return glu_launch<1, 1, 16>(m, fn, rows, a, w, act);
    }
}

/* Without tuning: 128 x 64 tiles, two warpgroups taking turns, once they
 * fill the SMs twice; 64 x 64 tiles, one warpgroup per CTA, below. */
int glu_default_shape(const hrmt_model *m, size_t rows) {
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t big_tiles = (rows + 127) / 128 * (m->inter / 64);
    return big_tiles >= 2 * (size_t)sms ? 0 : 2;
}

} // namespace

/* n[0]: gate pairs whose silu_fast_pair is the table's, each gate checked
 * as a low half and as a high half. Agreements, not differences, are
 * counted, so that a check that did not run cannot pass. */
static __global__ void silu_fast_check(const uint16_t *lut, unsigned *n) {
#ifdef HRMT_SM90A
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= HRMT_CUDA_SILU_ENTRIES) return;
    const uint32_t g2 = i | (i ^ 0x5a5au) << 16; /* every gate once in each half */
    if (silu_fast_pair(lut, g2) == silu_table_pair(lut, g2)) atomicAdd(n, 1u);
#endif
}

/* A device-side count (*h, type T): a zeroed counter, launch(counter,
 * stream) on the model's stream, the count copied back; `what` names it in
 * errors. The checks below count agreements with it. */
template <class T, class L>
static hrmt_status device_count(const hrmt_model *m, const char *what, L launch, T *h) {
    *h = 0;
    T *n = NULL;
    cudaStream_t st = cu_stream(m);
    cudaError_t e = cudaMallocAsync((void **)&n, sizeof *h, st);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(n, 0, sizeof *h, st);
    else
        n = NULL;
    if (e == cudaSuccess) {
        launch(n, st);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpyAsync(h, n, sizeof *h, cudaMemcpyDeviceToHost, st);
    const cudaError_t ef = n ? cudaFreeAsync(n, st) : cudaSuccess;
    if (e == cudaSuccess) e = ef;
    if (e == cudaSuccess) e = cudaStreamSynchronize(st);
    return e == cudaSuccess ? HRMT_OK : cu_fail(m->ctx, e, what);
}

hrmt_status cu_silu_fast_exact(const hrmt_model *m, int *exact) {
    unsigned h = 0;
    const uint16_t *lut = m->ctx->cuda->silu_bf16;
    const hrmt_status s = device_count(
        m, "cuda SwiGLU check",
        [&](unsigned *n, cudaStream_t st) {
            silu_fast_check<<<HRMT_CUDA_SILU_ENTRIES / 256, 256, 0, st>>>(lut, n);
        },
        &h);
    *exact = s == HRMT_OK && h == HRMT_CUDA_SILU_ENTRIES;
    return s;
}

/* n[0]: BF16 x BF16 products whose mul_bf16x2 equals the F32 product
 * rounded to BF16 (NaN against NaN counted as equal: NaN payloads are not
 * kept anywhere on the GPU), every ordered pair once as a low half and once
 * as a high half: 2^33 when all agree. Counted in 64 bits, agreements, so
 * that a check that did not run cannot pass. */
static __global__ void glu_mul_check(unsigned long long *n) {
#ifdef HRMT_SM90A
    namespace rc = hrmt_rowops_cuda;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; /* 2^24 threads */
    const uint32_t a = i >> 8, a2 = a | a << 16;
    auto same = [](uint32_t x, uint32_t y) {
        const bool nx = (x & 0x7fffu) > 0x7f80u, ny = (y & 0x7fffu) > 0x7f80u;
        return x == y || (nx && ny);
    };
    unsigned c = 0;
    for (uint32_t j = 0; j < 256; j++) {
        const uint32_t b = (i & 0xffu) << 8 | j, b2 = b | (b ^ 0x5a5au) << 16;
        const uint32_t hw = mul_bf16x2(a2, b2);
        const uint32_t ref = rc::pack_bf16x2_arith(
            rc::fmul(__uint_as_float(a2 << 16), __uint_as_float(b2 << 16)),
            rc::fmul(__uint_as_float(a2 & 0xffff0000u), __uint_as_float(b2 & 0xffff0000u)));
        c += same(hw & 0xffffu, ref & 0xffffu);
        c += same(hw >> 16, ref >> 16);
    }
    c = __reduce_add_sync(0xffffffffu, c);
    if ((threadIdx.x & 31) == 0) atomicAdd(n, (unsigned long long)c);
#else
    (void)n;
#endif
}

hrmt_status cu_glu_mul_exact(const hrmt_model *m, int *exact) {
    unsigned long long h = 0;
    const hrmt_status s = device_count(
        m, "cuda BF16 product check",
        [&](unsigned long long *n, cudaStream_t st) { glu_mul_check<<<1u << 16, 256, 0, st>>>(n); },
        &h);
    *exact = s == HRMT_OK && h == 1ull << 33;
    return s;
}

int cu_glu_applies(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    if (m->dt != HRMT_BF16 || cu->prop.major != 9 || cu->prop.minor != 0 || !cu->silu_bf16)
        return 0;
    const size_t H = m->hidden, I = m->inter;
    /* Whole 64-wide k blocks, whole tiles of act columns, 16-byte row strides. */
    if (H % BK != 0 || I % 64 != 0 || H > (size_t)INT32_MAX / 2 || I > (size_t)INT32_MAX / 4)
        return 0;
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    if (!glu_loads<2, 2, 64>(per_block) || !glu_loads<1, 2, 64>(per_block) ||
        !glu_loads<1, 1, 64>(per_block) || !glu_loads<1, 1, 32>(per_block) ||
        !glu_loads<1, 2, 32>(per_block) || !glu_loads<1, 1, 16>(per_block))
        return 0;
    return encode_fn() != nullptr;
}

int cu_glu_norm_applies(const hrmt_model *m) {
    size_t per_block = 0;
    hrmt_cuda_limits(m->ctx->cuda, &per_block, NULL, NULL, NULL);
    return cu_glu_applies(m) && m->hidden <= 32 * NORM_MAXG &&
           ring_norm_loads<128, glu_epi<64>>(per_block) &&
           ring_norm_loads<64, glu_epi<32>>(per_block) &&
           ring_norm_loads<32, glu_epi<16>>(per_block);
}

/* The W-resident shape serves this model: hidden <= 512 and its image loads
 * with its shared memory. */
static int glu_wres_applies(const hrmt_model *m) {
    size_t per_block = 0;
    hrmt_cuda_limits(m->ctx->cuda, &per_block, NULL, NULL, NULL);
    return m->hidden / BK <= (size_t)WRES_KB && wres_loads<2, 128, WRES_KB, glu_epi<64>>(per_block);
}

/* The W-resident shape's forms load with their shared memory: 64-row
 * tiles over three consumer warpgroups (HRMT_CUDA_GLU_WRES3) or 128-row
 * over two. */
int cu_glu_wres_form_applies(const hrmt_model *m, int three) {
    using E = glu_epi<64>;
    size_t per_block = 0;
    hrmt_cuda_limits(m->ctx->cuda, &per_block, NULL, NULL, NULL);
    if (!glu_wres_applies(m)) return 0;
    return three ? wres_loads<1, 128, WRES_KB, E, 3>(per_block) : 1;
}

/* The W-resident shape's three-warpgroup form with TMA stores (GLU_WRES_TS,
 * glu_epi_ts): its image loads with its shared memory; it serves this model
 * where that and the shape's rule (glu_wres_applies) hold. */
static int glu_wres_ts_loads(const hrmt_model *m) {
    size_t per_block = 0;
    hrmt_cuda_limits(m->ctx->cuda, &per_block, NULL, NULL, NULL);
    return wres_loads<1, 128, WRES_KB, glu_epi_ts, 3>(per_block);
}
int cu_glu_wres_ts_applies(const hrmt_model *m) {
    return glu_wres_applies(m) && glu_wres_ts_loads(m);
}

/* The shapes past the six ride on the W-resident one's rule (hidden <=
 * 512), so that every index below the count is one this model can run. */
int cu_glu_shapes(const hrmt_model *m) {
    if (!glu_wres_applies(m)) return GLU_WRES;
    if (!glu_wres_ts_loads(m)) return GLU_WRES_TS;
    return GLU_NSHAPES;
}

int cu_glu_shape_tuned(const hrmt_model *m, int shape) {
    const struct hrmt_model_cuda *g = cu_model(m);
    if (shape < GLU_WRES) return 1;
    return shape == GLU_WRES ? g->glu_wres : g->glu_wres_ts;
}

hrmt_status cu_glu_shape(const hrmt_model *m, int shape, size_t rows, const void *a, const void *w,
                         void *act) {
    if (rows == 0) return HRMT_OK;
    if (rows > (size_t)INT32_MAX - 128)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda fused gate_up: %zu rows", rows);
    if (shape < 0 || shape >= GLU_NSHAPES) /* the model's count was checked at load */
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "cuda fused gate_up: shape %d", shape);
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn)
        return hrmt_fail(m->ctx, HRMT_ERR_CUDA, "cuda fused gate_up: no cuTensorMapEncodeTiled");
    return glu_shape_launch(m, fn, shape, rows, a, w, act);
}

/* The tile shape for these rows: the tuner's pick (at these rows, else at
 * their bucket), else the untuned rule. */
static int glu_pick(const hrmt_model *m, size_t rows) {
    const cu_exact_pick *ex = cu_exact_for(m, rows);
    if (ex && ex->glu_shape > 0) return ex->glu_shape - 1;
    const int shape = cu_model(m)->glu_shape[cu_row_bucket(rows, CU_LT_BUCKETS)] - 1;
    return shape >= 0 ? shape : glu_default_shape(m, rows); /* 0 stored: not tuned */
}

hrmt_status cu_glu(const hrmt_model *m, size_t rows, const void *a, const void *w, void *act) {
    return cu_glu_shape(m, glu_pick(m, rows), rows, a, w, act);
}

hrmt_status cu_glu_norm(const hrmt_model *m, size_t rows, const void *x, const void *r, void *h,
                        const void *w, void *act, int *done) {
    *done = 0;
    if (rows == 0 || rows > (size_t)INT32_MAX - 128 || m->hidden > 32 * NORM_MAXG ||
        ((uintptr_t)x | (uintptr_t)r | (uintptr_t)h) % 16 != 0)
        return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    const int shape = glu_pick(m, rows); /* its tile width */
    const norm_src ns{(const uint16_t *)x, (const uint16_t *)r, (uint16_t *)h,
                      (float)m->cfg.rms_norm_eps};
    *done = 1;
    switch (GLU_SHAPES[shape].bna) {
    case 64: return glun_launch<64>(m, fn, rows, ns, w, act);
    case 32: return glun_launch<32>(m, fn, rows, ns, w, act);
    default: return glun_launch<16>(m, fn, rows, ns, w, act);
    }
}
