/* The step's output heads as one kernel (BF16 models; HRMT_CUDA_FUSED_HEADS,
 * on by default): logits = bf16(lm_head(zH)) over all rows, q = q_head(zH[:, 0])
 * and the ACT finish (bias, steps, halting) for each sample. Launch by launch
 * these were two GEMMs on the own wmma kernel (a 64 x 64 tile for 11 or 2
 * columns: two CTAs at batch 1, each waiting for its whole A slab) and the
 * finish kernel, three links at the end of the step's chain, none launched
 * by programmatic dependent launch.
 *
 * Here a CTA is one warp and 16 rows of zH; its W tile is lm_head's V rows,
 * then q_head's two, then zeros (V + 2 <= 16), loaded before the wait for
 * the kernel before (weights are never written). Each output is the own
 * GEMM's chain: wmma 16 x 16 x 16 products in ascending k from +0 with an F32
 * accumulator, the same instruction per k step as model_gemm_kernels.cuh, so
 * the same bits; a column's value does not depend on the tile's other
 * columns. The logits round once to BF16; the q columns of a sample's first
 * row go through act_finish_sample, as the finish kernel's would.
 * cuda_model/fused_heads_equal_launches checks the bytes on the device. */
#include <mma.h>

#include "cuda/act_finish.cuh"
#include "cuda/bf16.cuh"
#include "cuda/cp_async.cuh"
#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"

namespace {

constexpr int HD_N = 16;      /* W tile rows: V logits + 2 q + zeros */
constexpr int HD_MAX_K = 736; /* 2 x 16 rows of K + 8 BF16 and the F32 tile in 48 KB */
constexpr int HD_PAD = 8;     /* row padding (BF16): rows start on other banks */

struct hd_args {
    int rows, T, V, K;
    const uint16_t *zh, *lm, *qh;
    uint16_t *logits;
    float *q;
    float b0, b1;
    int32_t *steps, *halted;
    int max_steps, early;
};

constexpr size_t hd_smem(int K) { return (size_t)2 * HD_N * (K + HD_PAD) * 2 + HD_N * HD_N * 4; }
/* No shared-memory opt-in needed at any K it serves. */
static_assert(hd_smem(HD_MAX_K) <= 48 * 1024, "heads tile past the default shared memory");

/* rows x K (row stride K) from src rows r0.. into dst [16][K + HD_PAD]; rows
 * at or past `rows` read as zeros. */
__device__ __forceinline__ void load_rows(uint16_t *dst, const uint16_t *src, int r0, int rows,
                                          int K) {
    const int cpr = K / 8, lds = K + HD_PAD;
    for (int e = threadIdx.x; e < HD_N * cpr; e += 32) {
        const int r = e / cpr, seg = (e % cpr) * 8;
        const bool in = r0 + r < rows;
        cp_async16(dst + r * lds + seg, in ? (const void *)(src + (size_t)(r0 + r) * K + seg) : src,
                   in ? 16 : 0);
    }
}

__global__ void __launch_bounds__(32) heads_kernel(const hd_args p) {
    using namespace nvcuda;
    extern __shared__ __align__(128) uint16_t sm[];
    const int lds = p.K + HD_PAD, r0 = blockIdx.x * 16;
    uint16_t *sw = sm, *sa = sm + HD_N * lds;
    float *sc = (float *)(sa + HD_N * lds);
    /* W: lm_head's V rows, q_head's 2, zeros; before the wait (never written). */
    const int cpr = p.K / 8;
    for (int e = threadIdx.x; e < HD_N * cpr; e += 32) {
        const int r = e / cpr, seg = (e % cpr) * 8;
        const uint16_t *src = r < p.V       ? p.lm + (size_t)r * p.K + seg
                              : r < p.V + 2 ? p.qh + (size_t)(r - p.V) * p.K + seg
                                            : p.lm;
        cp_async16(sw + r * lds + seg, src, r < p.V + 2 ? 16 : 0);
    }
    cp_async_commit();
    pdl_wait(); /* zH is the level's; the outputs are read by the host and the next step */
    load_rows(sa, p.zh, r0, p.rows, p.K);
    cp_async_commit();
    cp_async_wait<0>();
    __syncwarp();

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    const __nv_bfloat16 *a = (const __nv_bfloat16 *)sa, *w = (const __nv_bfloat16 *)sw;
    /* Unrolled so that later k steps' fragment loads issue under the
     * products (the chain through acc is the only dependence). */
#pragma unroll 8
    for (int k = 0; k < p.K; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, a + k, lds);
        wmma::load_matrix_sync(fb, w + k, lds); /* W [n, k] row-major is W^T col-major */
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(sc, acc, HD_N, wmma::mem_row_major);
    __syncwarp();
    for (int e = threadIdx.x; e < 16 * p.V; e += 32) {
        const int r = e / p.V, c = e % p.V;
        if (r0 + r < p.rows)
            p.logits[(size_t)(r0 + r) * p.V + c] = hrmt_cu_f32_to_bf16(sc[r * HD_N + c]);
    }
    const int r = threadIdx.x, gr = r0 + r;
    if (r < 16 && gr < p.rows && gr % p.T == 0)
        act_finish_sample(gr / p.T, sc[r * HD_N + p.V], sc[r * HD_N + p.V + 1], p.b0, p.b1, 1, p.q,
                          p.steps, p.halted, p.max_steps, p.early);
}

} // namespace

int cu_heads_applies(const hrmt_model *m) {
    const hrmt_cuda *cu = m->ctx->cuda;
    return m->dt == HRMT_BF16 && cu->prop.major >= 8 && m->vocab + 2 <= (size_t)HD_N &&
           m->hidden % 16 == 0 && m->hidden <= (size_t)HD_MAX_K;
}

hrmt_status cu_heads(const hrmt_model *m, const hrmt_carry *c, int early_halt) {
    const struct hrmt_carry_cuda *g = cu_carry(c);
    const size_t rows = (size_t)c->batch * m->T;
    if (rows > (size_t)INT32_MAX - 16)
        return hrmt_fail(m->ctx, HRMT_ERR_OVERFLOW, "cuda heads: %zu rows", rows);
    const hd_args p{(int)rows,
                    (int)m->T,
                    (int)m->vocab,
                    (int)m->hidden,
                    (const uint16_t *)g->zH,
                    (const uint16_t *)m->lm_head.dev,
                    (const uint16_t *)m->q_head.dev,
                    (uint16_t *)g->logits,
                    g->q,
                    m->q_bias[0],
                    m->q_bias[1],
                    g->steps,
                    g->halted,
                    m->cfg.halt_max_steps,
                    early_halt};
    const cudaError_t e = pdl_launch(heads_kernel, dim3((unsigned)((rows + 15) / 16)), dim3(32),
                                     hd_smem((int)m->hidden), cu_stream(m), cu_model(m)->pdl, p);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda heads");
    return cu_check(m->ctx, "cuda heads");
}
