/* HRM attention for short sequences (T = puzzle prefix + tokens, ~82): one
 * block per (sample, head) keeps that head's K and V in shared memory as F32;
 * each warp takes query rows in turn:
 *     S = q K^T (F32 FMA chain over head_dim, ascending),
 *     P = softmax(S / sqrt(head_dim)) (F32, max subtracted),
 *     o = P V (F32 FMA chain over keys, ascending), rounded once.
 * RoPE is fused into the loads of Q and K with the row op's arithmetic
 * (each product and the sum rounded separately, then the storage rounding;
 * cpu/rope_scalar.c), so qkv is never rewritten. Everything is fixed per
 * (sample, head): the same bits however the samples are tiled. */
#include "cuda/bf16.cuh"
#include "cuda/model_internal.cuh"

namespace {

constexpr int WARPS = 8;

template <bool BF>
__device__ __forceinline__ float ld(const void *p, size_t i) {
    if (BF) return __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
    return ((const float *)p)[i];
}

/* Storage rounding of an F32 result (identity for F32). */
template <bool BF>
__device__ __forceinline__ float round_st(float v) {
    return BF ? __uint_as_float((uint32_t)hrmt_cu_f32_to_bf16(v) << 16) : v;
}

/* Element c of a head vector at `v` after RoPE at position t. */
template <bool BF>
__device__ __forceinline__ float rope_elem(const void *v, int c, int d, int t, const float *cs,
                                           const float *sn) {
    const int half = d / 2;
    const float x = ld<BF>(v, c);
    const float cc = cs[(size_t)t * d + c], ss = sn[(size_t)t * d + c];
    if (c < half) {
        const float x2 = ld<BF>(v, c + half);
        return round_st<BF>(__fadd_rn(__fmul_rn(x, cc), __fmul_rn(-x2, ss)));
    }
    const float x1 = ld<BF>(v, c - half);
    return round_st<BF>(__fadd_rn(__fmul_rn(x, cc), __fmul_rn(x1, ss)));
}

template <bool BF>
__device__ __forceinline__ float load_qk(const void *v, int c, int d, int t, const float *cs,
                                         const float *sn) {
    return cs ? rope_elem<BF>(v, c, d, t, cs, sn) : ld<BF>(v, c);
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* grid (heads, samples); dynamic smem: K [T][d+1] (odd stride: lanes read
 * different keys at one c without bank conflicts), V [T][d], per warp q [d]
 * and p [T]. cs/sn NULL: no RoPE. */
template <bool BF>
__global__ void __launch_bounds__(WARPS * 32)
    attend(int T, int d, int hidden, const void *__restrict__ qkv, void *__restrict__ att,
           const float *__restrict__ cs, const float *__restrict__ sn, float scale) {
    extern __shared__ float smem[];
    const int h = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t s = blockIdx.y, ld3 = 3 * (size_t)hidden;
    float *Ks = smem, *Vs = Ks + (size_t)T * (d + 1);
    float *qw = Vs + (size_t)T * d + (size_t)warp * (d + T), *pw = qw + d;
    const char *base = (const char *)qkv;
    const size_t es = BF ? 2 : 4;
    for (int e = threadIdx.x; e < T * d; e += blockDim.x) {
        const int t = e / d, c = e % d;
        const char *row = base + ((s * T + t) * ld3 + (size_t)h * d) * es;
        Ks[t * (d + 1) + c] = load_qk<BF>(row + hidden * es, c, d, t, cs, sn);
        Vs[t * d + c] = ld<BF>(row + 2 * hidden * es, c);
    }
    __syncthreads();
    for (int i = warp; i < T; i += WARPS) {
        const char *qrow = base + ((s * T + i) * ld3 + (size_t)h * d) * es;
        for (int c = lane; c < d; c += 32) qw[c] = load_qk<BF>(qrow, c, d, i, cs, sn);
        __syncwarp();
        float mx = -INFINITY;
        for (int j = lane; j < T; j += 32) {
            const float *kr = Ks + j * (d + 1);
            float acc = 0.0f;
            for (int c = 0; c < d; c++) acc = __fmaf_rn(qw[c], kr[c], acc);
            acc = __fmul_rn(acc, scale);
            pw[j] = acc;
            mx = fmaxf(mx, acc);
        }
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int j = lane; j < T; j += 32) {
            const float e = expf(__fsub_rn(pw[j], mx));
            pw[j] = e;
            sum = __fadd_rn(sum, e);
        }
        sum = warp_sum(sum);
        for (int j = lane; j < T; j += 32) pw[j] = __fdiv_rn(pw[j], sum);
        __syncwarp();
        char *orow = (char *)att + ((s * T + i) * (size_t)hidden + (size_t)h * d) * es;
        for (int c = lane; c < d; c += 32) {
            float o = 0.0f;
            for (int j = 0; j < T; j++) o = __fmaf_rn(pw[j], Vs[j * d + c], o);
            if (BF)
                ((uint16_t *)orow)[c] = hrmt_cu_f32_to_bf16(o);
            else
                ((float *)orow)[c] = o;
        }
        __syncwarp();
    }
}

} // namespace

hrmt_status cu_attention(const hrmt_model *m, const void *qkv, void *att, size_t n) {
    if (n == 0) return HRMT_OK;
    const int T = (int)m->T, d = (int)m->head_dim;
    const size_t bytes = ((size_t)T * (d + 1) + (size_t)T * d + WARPS * (size_t)(d + T)) * 4;
    size_t per_block = 0, per_sm = 0, l2 = 0;
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, &per_block, &per_sm, &sms, &l2);
    if (bytes > per_block)
        return hrmt_fail(m->ctx, HRMT_ERR_UNSUPPORTED,
                         "cuda attention: T %d x head_dim %d needs %zu bytes of shared memory "
                         "(device: %zu)",
                         T, d, bytes, per_block);
    const struct hrmt_model_cuda *g = cu_model(m);
    const float *cs = m->cfg.pos_encodings == HRMT_POS_ROPE ? g->rope_cos : nullptr;
    const float *sn = cs ? g->rope_sin : nullptr;
    const float scale = (float)(1.0 / sqrt((double)d));
    cudaStream_t st = cu_stream(m);
    cudaError_t e = cudaFuncSetAttribute(m->dt == HRMT_BF16 ? attend<true> : attend<false>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    /* Samples on grid y, at most 65535 per launch. */
    const size_t rows3 = 3 * m->hidden * m->esz * m->T, rows1 = m->hidden * m->esz * m->T;
    for (size_t s0 = 0; s0 < n && e == cudaSuccess; s0 += 65535) {
        const size_t cnt = n - s0 < 65535 ? n - s0 : 65535;
        const char *q = (const char *)qkv + s0 * rows3;
        char *o = (char *)att + s0 * rows1;
        dim3 grid((unsigned)m->heads, (unsigned)cnt);
        if (m->dt == HRMT_BF16)
            attend<true>
                <<<grid, WARPS * 32, bytes, st>>>(T, d, (int)m->hidden, q, o, cs, sn, scale);
        else
            attend<false>
                <<<grid, WARPS * 32, bytes, st>>>(T, d, (int)m->hidden, q, o, cs, sn, scale);
    }
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda attention: shared memory opt-in");
    return cu_check(m->ctx, "cuda attention");
}
