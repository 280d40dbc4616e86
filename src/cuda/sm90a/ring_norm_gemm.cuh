/* The ring GEMM (ring_gemm.cuh) with the block's residual + RMSNorm as its
 * prologue: C-tile = rmsnorm(x + r)[m0 .. m0 + 64) W'^T, and the tiles of
 * column 0 also write rmsnorm(x + r) to h (the block's new state, the
 * residual of a later norm). At small batches this removes the norm's own
 * kernel from the block's dependency chain: the GEMM's weights are already
 * in shared memory (requested before griddepcontrol.wait) when x and r
 * become readable, and A never makes the round trip through memory.
 *
 * Bits: the residual + RMSNorm row kernel's (rowops_norm.cu, norm_reg_kernel:
 * h = bf16(x + r); lane l's chain of h^2 over elements 32 g + l in g order
 * from +0, then rmsnorm_reg_inv's finish; out = bf16(h * inv)), then
 * ring_gemm.cuh's F32 chain of k16 steps. Here a row is four threads, thread
 * q holding chains 8 q .. 8 q + 7 (elements 32 g + 8 q + j, one 16-byte load
 * per g), and the finish folds the four threads' chains by shuffles in the
 * reference's order. K = 32 G with G <= 16 (HRM's hidden 512: G = 16), so
 * the whole of A's 64 rows (64 KB) stays in shared memory and the ring holds
 * W alone.
 *
 * Shape: one consumer warpgroup (a CTA forms A once per row tile it takes,
 * again for a tile of column 0 so that exactly one tile writes h), one
 * producer thread, one CTA per SM. */
#ifndef HRMT_CUDA_SM90A_RING_NORM_GEMM_CUH
#define HRMT_CUDA_SM90A_RING_NORM_GEMM_CUH

#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/wgmma_common.cuh"

namespace {

constexpr int NORM_MAXG = 16;                         /* K <= 512 */
constexpr int NORM_A_BYTES = 64 * 32 * NORM_MAXG * 2; /* 64 rows of K <= 512 */

template <int WN>
struct ring_norm_cfg {
    static constexpr int THREADS = 256;
    static constexpr int W_BYTES = WN * ROW_BYTES;
    static constexpr int STAGES = (192 * 1024 - NORM_A_BYTES) / W_BYTES;
    static constexpr int SMEM = NORM_A_BYTES + STAGES * W_BYTES + 1024 + (2 * STAGES) * 8;
};

/* The prologue's inputs: x, r, h [M, K] with row stride K. */
struct norm_src {
    const uint16_t *x, *r;
    uint16_t *h;
    float eps;
};

#ifdef HRMT_SM90A
/* A's rows m0 .. m0 + 63 = bf16(h * inv) into the 128-byte-swizzled k blocks
 * at a (8 KB each); to h as well when write_h. 128 threads (one warpgroup). */
__device__ __forceinline__ void norm_prologue(uint8_t *a, const norm_src &ns, int M, int K, int m0,
                                              bool write_h) {
    namespace rc = hrmt_rowops_cuda;
    const int tid = threadIdx.x % 128, q = tid & 3, G = K / 32;
    const unsigned lane = threadIdx.x & 31;
    for (int half = 0; half < 2; half++) {
        const int rr = tid / 4 + 32 * half, row = m0 + rr;
        const bool live = row < M;
        /* Every load of the row in flight before any use. */
        uint4 ux[NORM_MAXG], ur[NORM_MAXG];
#pragma unroll
        for (int g = 0; g < NORM_MAXG; g++) {
            if (g >= G) break;
            const size_t off = (size_t)row * K + 32 * g + 8 * q;
            ux[g] = live ? *(const uint4 *)(ns.x + off) : make_uint4(0, 0, 0, 0);
            ur[g] = live ? *(const uint4 *)(ns.r + off) : make_uint4(0, 0, 0, 0);
        }
        float c[8];
#pragma unroll
        for (int j = 0; j < 8; j++) c[j] = 0.0f;
#pragma unroll
        for (int g = 0; g < NORM_MAXG; g++) {
            if (g >= G) break;
            const uint32_t *px = (const uint32_t *)&ux[g], *pr = (const uint32_t *)&ur[g];
            uint32_t *ph = (uint32_t *)&ux[g]; /* h replaces x, packed */
#pragma unroll
            for (int w = 0; w < 4; w++) {
                const float h0 = rc::round_bf16_arith(
                    rc::fadd(rc::bf16_to_f((uint16_t)px[w]), rc::bf16_to_f((uint16_t)pr[w])));
                const float h1 =
                    rc::round_bf16_arith(rc::fadd(rc::bf16_to_f((uint16_t)(px[w] >> 16)),
                                                  rc::bf16_to_f((uint16_t)(pr[w] >> 16))));
                c[2 * w] = rc::fadd(c[2 * w], rc::fmul(h0, h0));
                c[2 * w + 1] = rc::fadd(c[2 * w + 1], rc::fmul(h1, h1));
                ph[w] = rc::pack_bf16x2_arith(h0, h1);
            }
        }
        /* The reference's lane 8 q + j is this row's thread q, chain j:
         * a_j = ((t0 + t1) + t2) + t3, then the sum over j from +0. */
        const unsigned base = lane & ~3u;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float t0 = __shfl_sync(0xffffffffu, c[j], base);
            const float t1 = __shfl_sync(0xffffffffu, c[j], base + 1);
            const float t2 = __shfl_sync(0xffffffffu, c[j], base + 2);
            const float t3 = __shfl_sync(0xffffffffu, c[j], base + 3);
            sum = rc::fadd(sum, rc::fadd(rc::fadd(rc::fadd(t0, t1), t2), t3));
        }
        const float inv = rc::fdiv(1.0f, rc::fsqrt(rc::fadd(rc::fdiv(sum, (float)K), ns.eps)));
#pragma unroll
        for (int g = 0; g < NORM_MAXG; g++) {
            if (g >= G) break;
            uint32_t *ph = (uint32_t *)&ux[g];
            uint4 o;
            uint32_t *po = (uint32_t *)&o;
#pragma unroll
            for (int w = 0; w < 4; w++)
                po[w] = live ? rc::pack_bf16x2_arith(
                                   rc::fmul(rc::bf16_to_f((uint16_t)ph[w]), inv),
                                   rc::fmul(rc::bf16_to_f((uint16_t)(ph[w] >> 16)), inv))
                             : 0u; /* rows past M: zeros, never stored */
            const int chunk = (g & 1) * 4 + q;
            *(uint4 *)(a + (g / 2) * 8192 + rr * ROW_BYTES + ((chunk ^ (rr & 7)) << 4)) = o;
            if (write_h && live) *(uint4 *)(ns.h + (size_t)row * K + 32 * g + 8 * q) = o;
        }
    }
    /* The generic-proxy writes of A, visible to wgmma (async proxy), then
     * the whole warpgroup's. */
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync 1, 128;" ::: "memory");
}
#endif

/* E: ring_gemm.cuh's epilogue policy (TILE_N, args starting with ring_dims
 * whose kblocks = K / 64, load_w, store). */
template <int WN, class E>
__global__ void __launch_bounds__(ring_norm_cfg<WN>::THREADS, 1)
    ring_norm_gemm_kernel(const __grid_constant__ CUtensorMap tm_w, const typename E::args p,
                          const norm_src ns) {
#ifdef HRMT_SM90A
    using C = ring_norm_cfg<WN>;
    constexpr int S = C::STAGES;
    extern __shared__ uint8_t smem_raw[];
    uint8_t *smem = smem_align1024(smem_raw);
    uint8_t *a = smem, *ring = smem + NORM_A_BYTES;
    uint64_t *full = (uint64_t *)(ring + S * C::W_BYTES), *empty = full + S;
    const int wg = warpgroup_idx(), nt = p.d.nt, mt = (p.d.M + 63) / 64;
    const int tiles = mt * nt, kb_n = p.d.kblocks;
    ring_setup(full, empty, S, 4); /* one arrive per consumer warp */
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x != 0) return;
        /* W only: requested before waiting for the kernel before. */
        int s = 0;
        unsigned ph = 0;
        bool waited = false;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            const int n0 = (t % nt) * E::TILE_N;
            for (int kb = 0; kb < kb_n; kb++) {
                if (t != (int)blockIdx.x || kb >= S) {
                    if (!waited) {
                        pdl_wait();
                        pdl_trigger();
                        waited = true;
                    }
                    mbar_wait(&empty[s], ph ^ 1);
                }
                mbar_expect_tx(&full[s], C::W_BYTES);
                E::load_w(ring + s * C::W_BYTES, &tm_w, &full[s], kb, n0, p);
                ring_next(s, ph, S);
            }
        }
        if (!waited) {
            pdl_wait();
            pdl_trigger();
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    pdl_wait(); /* x and r are the kernel before's */
    pdl_trigger();
    const int warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
    int s = 0, formed = -1;
    unsigned ph = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int m0 = (t / nt) * 64, n0 = (t % nt) * E::TILE_N;
        if (m0 != formed || n0 == 0) {
            /* The previous tile's products (which read A) are done: each
             * thread waited for its own, the barrier for the others'. */
            asm volatile("bar.sync 1, 128;" ::: "memory");
            norm_prologue(a, ns, p.d.M, 32 * 2 * kb_n, m0, n0 == 0);
            formed = m0;
        }
        float acc[1][WN / 2];
#pragma unroll
        for (int i = 0; i < WN / 2; i++) acc[0][i] = 0.0f;
        int prev = -1;
        for (int kb = 0; kb < kb_n; kb++) {
            mbar_wait(&full[s], ph);
            const uint64_t dw = desc_k128(ring + s * C::W_BYTES), da = desc_k128(a + kb * 8192);
            wg_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; kk++) wgmma_n<WN>(acc[0], da + 2 * kk, dw + 2 * kk);
            wg_commit();
            wg_wait<1>();
            if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
            prev = s;
            ring_next(s, ph, S);
        }
        wg_wait<0>();
#pragma unroll
        for (int i = 0; i < WN / 2; i++) asm volatile("" : "+f"(acc[0][i])::"memory");
        if (prev >= 0 && lane == 0) mbar_arrive(&empty[prev]);
        E::template store<1>(acc, m0, n0, warp, lane, p);
    }
#endif
}

/* Host side, as ring_gemm.cuh's. */
template <int WN, class E>
int ring_norm_loads(size_t per_block) {
    return image_loads(ring_norm_gemm_kernel<WN, E>, ring_norm_cfg<WN>::SMEM, per_block);
}
template <int WN, class E>
cudaError_t ring_norm_prepare() {
    return smem_opt_in(ring_norm_gemm_kernel<WN, E>, ring_norm_cfg<WN>::SMEM);
}

} // namespace

#endif
