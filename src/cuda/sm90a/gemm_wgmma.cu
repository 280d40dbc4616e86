/* C = A W^T (BF16 in, BF16 out) on wgmma fed by TMA, with tiles narrow
 * enough to spread a few samples' rows over the SMs: the block GEMMs at
 * small batches, where cuBLASLt's algorithms that keep the pinned bits use
 * tiles that leave most SMs idle.
 *
 * Bits: ring_gemm.cuh's F32 chain of k16 steps in ascending k from +0,
 * rounded to BF16 once: the pinned cuBLASLt algorithms' arithmetic. The GEMM
 * tuner (model_gemm_tune.cu) runs each shape here on a random product and
 * keeps it for a row bucket only when it reproduces the pinned algorithm's
 * bytes there and at one sample's rows, and only when it is faster, so the
 * model's bits never depend on which kernel serves a call.
 *
 * Shapes (WG_SHAPES): 64-row tiles of 16 to 128 columns, one consumer
 * warpgroup or two taking turns. */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/ring_gemm.cuh"
#include "cuda/sm90a/ring_norm_gemm.cuh"

namespace rc = hrmt_rowops_cuda;

namespace {

template <int BN>
struct store_epi {
    static constexpr int TILE_N = BN;
    struct args {
        ring_dims d;
        uint16_t *c;
        int ldc;
    };
    static __device__ __forceinline__ void load_w(uint8_t *st, const CUtensorMap *tm, uint64_t *bar,
                                                  int kb, int n0, const args &) {
#ifdef HRMT_SM90A
        tma_load(st, tm, bar, kb * BK, n0);
#endif
    }
    /* Thread (warp, lane) holds rows warp * 16 + lane / 4 (+ 8) of each m64
     * block, columns 8 i + 2 (lane % 4) (+ 1) of n8 tile i. */
    template <int MSUB>
    static __device__ __forceinline__ void store(float (&acc)[MSUB][BN / 2], int m0, int n0,
                                                 int warp, int lane, const args &p) {
#pragma unroll
        for (int ms = 0; ms < MSUB; ms++) {
            const int r0 = m0 + ms * 64 + warp * 16 + lane / 4;
#pragma unroll
            for (int i = 0; i < BN / 8; i++)
#pragma unroll
                for (int hf = 0; hf < 2; hf++) {
                    const int row = r0 + 8 * hf, col = n0 + 8 * i + 2 * (lane & 3);
                    if (row >= p.d.M) continue;
                    /* One paired RNE conversion: the software rounding's
                     * bits for every non-NaN. */
                    *(uint32_t *)(p.c + (size_t)row * p.ldc + col) =
                        rc::pack_bf16x2_arith(acc[ms][4 * i + 2 * hf], acc[ms][4 * i + 2 * hf + 1]);
                }
        }
    }
};

struct wg_shape {
    int wgs, bn;
    const char *name;
};
constexpr wg_shape WG_SHAPES[] = {{1, 16, "64x16"}, {1, 32, "64x32"},   {2, 32, "64x32x2"},
                                  {1, 64, "64x64"}, {2, 64, "64x64x2"}, {2, 128, "64x128x2"}};
constexpr int WG_NSHAPES = (int)(sizeof WG_SHAPES / sizeof WG_SHAPES[0]);

template <int WGS, int BN>
hrmt_status wg_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                      size_t n, size_t k, const void *a, size_t lda, const void *w, void *c,
                      size_t ldc, int *done) {
    using C = ring_cfg<1, WGS, BN>;
    CUtensorMap ta, tw;
    if (n % BN != 0 || !encode(fn, &ta, a, rows, k, lda, C::BM) || !encode(fn, &tw, w, n, k, k, BN))
        return HRMT_OK; /* *done stays 0: the caller's cuBLASLt algorithm serves */
    auto kern = ring_gemm_kernel<1, WGS, BN, store_epi<BN>>;
    cudaError_t e = ring_prepare<1, WGS, BN, store_epi<BN>>();
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda wgmma gemm: shared memory");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t tiles = (rows + C::BM - 1) / C::BM * (n / BN), ctas = (tiles + WGS - 1) / WGS;
    const unsigned grid = (unsigned)(ctas < (size_t)sms ? ctas : (size_t)sms);
    typename store_epi<BN>::args p{
        {(int)rows, (int)(n / BN), (int)(k / BK)}, (uint16_t *)c, (int)ldc};
    e = pdl_launch(kern, dim3(grid), dim3(C::THREADS), C::SMEM, cu_stream(m), cu_model(m)->pdl, ta,
                   tw, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda wgmma gemm");
    *done = 1;
    return cu_check(m->ctx, "cuda wgmma gemm");
}

template <int WGS, int BN>
int wg_loads(size_t per_block) {
    return ring_loads<1, WGS, BN, store_epi<BN>>(per_block);
}

/* The same tiles (one consumer warpgroup) with A = rmsnorm(x + r) formed in
 * the prologue (ring_norm_gemm.cuh). */
template <int BN>
hrmt_status wgn_launch(const hrmt_model *m, PFN_cuTensorMapEncodeTiled_v12000 fn, size_t rows,
                       size_t n, size_t k, const norm_src &ns, const void *w, void *c, size_t ldc,
                       int *done) {
    using C = ring_norm_cfg<BN>;
    CUtensorMap tw;
    if (n % BN != 0 || !encode(fn, &tw, w, n, k, k, BN)) return HRMT_OK;
    cudaError_t e = ring_norm_prepare<BN, store_epi<BN>>();
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda norm + wgmma gemm: shared memory");
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, NULL, NULL, &sms, NULL);
    const size_t tiles = (rows + 63) / 64 * (n / BN);
    const unsigned grid = (unsigned)(tiles < (size_t)sms ? tiles : (size_t)sms);
    typename store_epi<BN>::args p{
        {(int)rows, (int)(n / BN), (int)(k / BK)}, (uint16_t *)c, (int)ldc};
    e = pdl_launch(ring_norm_gemm_kernel<BN, store_epi<BN>>, dim3(grid), dim3(C::THREADS), C::SMEM,
                   cu_stream(m), cu_model(m)->pdl, tw, p, ns);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda norm + wgmma gemm");
    *done = 1;
    return cu_check(m->ctx, "cuda norm + wgmma gemm");
}

} // namespace

int cu_wgemm_shapes(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    if (m->dt != HRMT_BF16 || cu->prop.major != 9 || cu->prop.minor != 0) return 0;
    size_t per_block = 0;
    hrmt_cuda_limits(cu, &per_block, NULL, NULL, NULL);
    if (!wg_loads<1, 16>(per_block) || !wg_loads<1, 32>(per_block) || !wg_loads<2, 32>(per_block) ||
        !wg_loads<1, 64>(per_block) || !wg_loads<2, 64>(per_block) || !wg_loads<2, 128>(per_block))
        return 0;
    return encode_fn() ? WG_NSHAPES : 0;
}

int cu_wgemm_norm_applies(const hrmt_model *m) {
    size_t per_block = 0;
    hrmt_cuda_limits(m->ctx->cuda, &per_block, NULL, NULL, NULL);
    return cu_wgemm_shapes(m) > 0 && ring_norm_loads<16, store_epi<16>>(per_block) &&
           ring_norm_loads<32, store_epi<32>>(per_block) &&
           ring_norm_loads<64, store_epi<64>>(per_block) &&
           ring_norm_loads<128, store_epi<128>>(per_block);
}

const char *cu_wgemm_name(int shape) {
    return shape >= 0 && shape < WG_NSHAPES ? WG_SHAPES[shape].name : "?";
}

hrmt_status cu_wgemm(const hrmt_model *m, int shape, size_t rows, size_t n, size_t k, const void *a,
                     size_t lda, const void *w, void *c, size_t ldc, int *done) {
    *done = 0;
    /* Whole 64-wide k blocks; sizes the kernel's int arithmetic holds. */
    if (rows == 0 || k % BK != 0 || rows > (size_t)INT32_MAX - 128 || n > (size_t)INT32_MAX / 2 ||
        k > (size_t)INT32_MAX / 2 || ldc > (size_t)INT32_MAX || shape < 0 || shape >= WG_NSHAPES)
        return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    switch (shape) {
    case 0: return wg_launch<1, 16>(m, fn, rows, n, k, a, lda, w, c, ldc, done);
    case 1: return wg_launch<1, 32>(m, fn, rows, n, k, a, lda, w, c, ldc, done);
    case 2: return wg_launch<2, 32>(m, fn, rows, n, k, a, lda, w, c, ldc, done);
    case 3: return wg_launch<1, 64>(m, fn, rows, n, k, a, lda, w, c, ldc, done);
    case 4: return wg_launch<2, 64>(m, fn, rows, n, k, a, lda, w, c, ldc, done);
    default: return wg_launch<2, 128>(m, fn, rows, n, k, a, lda, w, c, ldc, done);
    }
}

hrmt_status cu_wgemm_norm(const hrmt_model *m, int shape, size_t rows, size_t n, size_t k,
                          const void *x, const void *r, void *h, float eps, const void *w, void *c,
                          size_t ldc, int *done) {
    *done = 0;
    /* K = 32 G (G <= 16) in whole k blocks; 16-byte rows of x, r, h. */
    if (rows == 0 || k % BK != 0 || k > 32 * NORM_MAXG || rows > (size_t)INT32_MAX - 128 ||
        n > (size_t)INT32_MAX / 2 || ldc > (size_t)INT32_MAX || shape < 0 || shape >= WG_NSHAPES ||
        ((uintptr_t)x | (uintptr_t)r | (uintptr_t)h) % 16 != 0)
        return HRMT_OK;
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn) return HRMT_OK;
    const norm_src ns{(const uint16_t *)x, (const uint16_t *)r, (uint16_t *)h, eps};
    switch (WG_SHAPES[shape].bn) {
    case 16: return wgn_launch<16>(m, fn, rows, n, k, ns, w, c, ldc, done);
    case 32: return wgn_launch<32>(m, fn, rows, n, k, ns, w, c, ldc, done);
    case 64: return wgn_launch<64>(m, fn, rows, n, k, ns, w, c, ldc, done);
    default: return wgn_launch<128>(m, fn, rows, n, k, ns, w, c, ldc, done);
    }
}
