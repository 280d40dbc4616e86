/* HRM attention for short sequences (T = puzzle prefix + tokens, ~82): one
 * block per (sample, head) keeps that head's K and V in shared memory as F32;
 * each warp takes query rows in turn:
 *     S = q K^T (F32 FMA chain over head_dim, ascending),
 *     P = softmax(S / sqrt(head_dim)) (F32, max subtracted),
 *     o = P V (F32 FMA chain over keys, ascending), rounded once.
 * RoPE is fused into the loads of Q and K with the row op's arithmetic
 * (each product and the sum rounded separately, then the storage rounding;
 * cpu/rope_scalar.c), so qkv is never rewritten. Everything is fixed per
 * (sample, head): the same bits however the samples are tiled. That is the
 * F32 kernel; BF16 models take the tensor-core kernel below (attend_tc). */
#include <mma.h>

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

/* ---- BF16: tensor cores ----------------------------------------------------
 * One block per (sample, head, chunk of TC_ROWS query rows); K, V (RoPE'd,
 * exact BF16 values) and the chunk's Q in shared memory, keys padded to Tp,
 * a multiple of 16, with zero rows. Each warp takes 16 query rows:
 *     S = Q K^T (wmma m16n16k16, bf16 in, F32 accumulate),
 *     P = softmax(S * scale) in F32 over the T real keys (as above),
 *     O = P_hi V + P_lo V (F32 accumulate), P_hi = bf16(P), P_lo = bf16(P - P_hi):
 * P keeps ~16 significant bits, so O is as close to the F32 kernel's as the
 * BF16 storage rounding allows. The arithmetic of a row depends only on its
 * (sample, head) data, never on the chunking or the batch, so tiered ==
 * baseline stays bitwise. F32 models use the kernel above (no TF32). */
constexpr int TC_WARPS = 4, TC_ROWS = 16 * TC_WARPS;

struct tc_layout {
    int Tp, ldk, lds, ldp;
    size_t k_off, v_off, q_off, warp_off, warp_bytes, bytes;
};

__host__ __device__ inline tc_layout tc_plan(int T, int d) {
    tc_layout L;
    L.Tp = (T + 15) / 16 * 16;
    L.ldk = d + 8;                     /* bf16 rows, 16-byte multiple */
    L.lds = (L.Tp > d ? L.Tp : d) + 4; /* F32 S (and O staging) rows */
    L.ldp = L.Tp + 8;                  /* bf16 P rows */
    L.k_off = 0;
    L.v_off = L.k_off + (size_t)L.Tp * L.ldk * 2;
    L.q_off = L.v_off + (size_t)L.Tp * L.ldk * 2;
    L.warp_off = L.q_off + (size_t)TC_ROWS * L.ldk * 2;
    L.warp_bytes = (size_t)16 * L.lds * 4 + 2 * (size_t)16 * L.ldp * 2;
    L.bytes = L.warp_off + TC_WARPS * L.warp_bytes;
    return L;
}

__global__ void __launch_bounds__(TC_WARPS * 32)
    attend_tc(int T, int d, int hidden, const void *__restrict__ qkv, void *__restrict__ att,
              const float *__restrict__ cs, const float *__restrict__ sn, float scale) {
    using namespace nvcuda;
    extern __shared__ __align__(128) unsigned char tc_smem[];
    const tc_layout L = tc_plan(T, d);
    const int h = blockIdx.x, q0 = blockIdx.z * TC_ROWS;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t s = blockIdx.y, ld3 = 3 * (size_t)hidden;
    __nv_bfloat16 *Ks = (__nv_bfloat16 *)(tc_smem + L.k_off);
    __nv_bfloat16 *Vs = (__nv_bfloat16 *)(tc_smem + L.v_off);
    __nv_bfloat16 *Qs = (__nv_bfloat16 *)(tc_smem + L.q_off);
    unsigned char *wbase = tc_smem + L.warp_off + (size_t)warp * L.warp_bytes;
    float *Sw = (float *)wbase;
    __nv_bfloat16 *Ph = (__nv_bfloat16 *)(wbase + (size_t)16 * L.lds * 4), *Pl = Ph + 16 * L.ldp;
    const uint16_t *base = (const uint16_t *)qkv;
    const __nv_bfloat16 zero = __ushort_as_bfloat16(0);
    for (int e = threadIdx.x; e < L.Tp * d; e += blockDim.x) {
        const int t = e / d, c = e % d;
        __nv_bfloat16 kv = zero, vv = zero;
        if (t < T) {
            const uint16_t *row = base + (s * T + t) * ld3 + (size_t)h * d;
            kv = __float2bfloat16_rn(load_qk<true>(row + hidden, c, d, t, cs, sn));
            vv = __ushort_as_bfloat16(row[2 * hidden + c]);
        }
        Ks[t * L.ldk + c] = kv;
        Vs[t * L.ldk + c] = vv;
    }
    for (int e = threadIdx.x; e < TC_ROWS * d; e += blockDim.x) {
        const int i = e / d, c = e % d, t = q0 + i;
        __nv_bfloat16 qv = zero;
        if (t < T)
            qv = __float2bfloat16_rn(
                load_qk<true>(base + (s * T + t) * ld3 + (size_t)h * d, c, d, t, cs, sn));
        Qs[i * L.ldk + c] = qv;
    }
    __syncthreads();
    const int r0 = warp * 16; /* this warp's rows within the chunk */
    if (q0 + r0 >= T) return; /* no real row: nothing to do (no block barrier follows) */
    const int nkt = L.Tp / 16, ndt = d / 16;
    for (int kt = 0; kt < nkt; kt++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int kk = 0; kk < ndt; kk++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
            wmma::load_matrix_sync(fa, Qs + r0 * L.ldk + kk * 16, L.ldk);
            wmma::load_matrix_sync(fb, Ks + kt * 16 * L.ldk + kk * 16, L.ldk); /* K^T */
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Sw + kt * 16, acc, L.lds, wmma::mem_row_major);
    }
    __syncwarp();
    for (int i = 0; i < 16; i++) {
        float *srow = Sw + i * L.lds;
        float mx = -INFINITY;
        for (int j = lane; j < T; j += 32) {
            const float v = __fmul_rn(srow[j], scale);
            srow[j] = v;
            mx = fmaxf(mx, v);
        }
        mx = warp_max(mx);
        float sum = 0.0f;
        for (int j = lane; j < T; j += 32) {
            const float e = expf(__fsub_rn(srow[j], mx));
            srow[j] = e;
            sum = __fadd_rn(sum, e);
        }
        sum = warp_sum(sum);
        for (int j = lane; j < L.Tp; j += 32) {
            const float p = j < T ? __fdiv_rn(srow[j], sum) : 0.0f;
            const __nv_bfloat16 hi = __float2bfloat16_rn(p);
            Ph[i * L.ldp + j] = hi;
            Pl[i * L.ldp + j] = __float2bfloat16_rn(__fsub_rn(p, __bfloat162float(hi)));
        }
    }
    __syncwarp();
    for (int ct = 0; ct < ndt; ct++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int kt = 0; kt < nkt; kt++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
            wmma::load_matrix_sync(fb, Vs + kt * 16 * L.ldk + ct * 16, L.ldk);
            wmma::load_matrix_sync(fa, Ph + kt * 16, L.ldp);
            wmma::mma_sync(acc, fa, fb, acc);
            wmma::load_matrix_sync(fa, Pl + kt * 16, L.ldp);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(Sw + ct * 16, acc, L.lds, wmma::mem_row_major); /* S is spent */
    }
    __syncwarp();
    uint16_t *out = (uint16_t *)att;
    for (int e = lane; e < 16 * d; e += 32) {
        const int i = e / d, c = e % d, t = q0 + r0 + i;
        if (t < T)
            out[(s * T + t) * (size_t)hidden + (size_t)h * d + c] =
                hrmt_cu_f32_to_bf16(Sw[i * L.lds + c]);
    }
}

} // namespace

/* The tensor-core kernel's shared memory for this model, 0 when it does not
 * apply (F32, head_dim not a multiple of 16, or too large for a block). */
static size_t attn_tc_bytes(const hrmt_model *m, size_t per_block) {
    if (m->dt != HRMT_BF16 || m->head_dim % 16 != 0 || m->T > 4096) return 0;
    const size_t b = tc_plan((int)m->T, (int)m->head_dim).bytes;
    return b <= per_block ? b : 0;
}

hrmt_status cu_attention(const hrmt_model *m, const void *qkv, void *att, size_t n) {
    if (n == 0) return HRMT_OK;
    const int T = (int)m->T, d = (int)m->head_dim;
    size_t per_block = 0, per_sm = 0, l2 = 0;
    int sms = 0;
    hrmt_cuda_limits(m->ctx->cuda, &per_block, &per_sm, &sms, &l2);
    const size_t rows3 = 3 * m->hidden * m->esz * m->T, rows1 = m->hidden * m->esz * m->T;
    const struct hrmt_model_cuda *g = cu_model(m);
    const float *cs = m->cfg.pos_encodings == HRMT_POS_ROPE ? g->rope_cos : nullptr;
    const float *sn = cs ? g->rope_sin : nullptr;
    const float scale = (float)(1.0 / sqrt((double)d));
    cudaStream_t st = cu_stream(m);
    const size_t tc = attn_tc_bytes(m, per_block);
    if (tc) {
        cudaError_t e =
            cudaFuncSetAttribute(attend_tc, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)tc);
        const unsigned chunks = (unsigned)((T + TC_ROWS - 1) / TC_ROWS);
        for (size_t s0 = 0; s0 < n && e == cudaSuccess; s0 += 65535) {
            const size_t cnt = n - s0 < 65535 ? n - s0 : 65535;
            dim3 grid((unsigned)m->heads, (unsigned)cnt, chunks);
            attend_tc<<<grid, TC_WARPS * 32, tc, st>>>(T, d, (int)m->hidden,
                                                       (const char *)qkv + s0 * rows3,
                                                       (char *)att + s0 * rows1, cs, sn, scale);
        }
        if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda attention: shared memory opt-in");
        return cu_check(m->ctx, "cuda attention (tensor cores)");
    }
    const size_t bytes = ((size_t)T * (d + 1) + (size_t)T * d + WARPS * (size_t)(d + T)) * 4;
    if (bytes > per_block)
        return hrmt_fail(m->ctx, HRMT_ERR_UNSUPPORTED,
                         "cuda attention: T %d x head_dim %d needs %zu bytes of shared memory "
                         "(device: %zu)",
                         T, d, bytes, per_block);
    cudaError_t e = cudaFuncSetAttribute(m->dt == HRMT_BF16 ? attend<true> : attend<false>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    /* Samples on grid y, at most 65535 per launch. */
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
