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

#include "cuda/attn_rope.cuh"
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
 * One block per (sample, head), NW = min(8, Tp / 16) warps; keys padded to
 * Tp (a multiple of 16) with zero rows. K (RoPE'd, exact BF16 values) and V
 * sit in shared memory; each warp takes 16-row query tiles in turn, in its
 * own region of shared memory:
 *     S = Q K^T: one wmma m16n16k16 per 16-wide k step (bf16 in, F32 out),
 *         the steps' partial tiles added in F32 in ascending k;
 *     P = softmax(S * scale) in F32 over the T real keys, e_j * (1 / sum);
 *     O = P_hi V + P_lo V, P_hi = bf16(P), P_lo = bf16(P - P_hi) (P keeps
 *         ~16 significant bits), partial tiles added in F32, rounded once.
 * Loads are 16-byte vectors: a thread takes elements c..c+8 and
 * c+half..c+half+8 of one row, so RoPE needs no other thread's data.
 * The arithmetic of a row depends only on its (sample, head) data, never on
 * the batch or the tile of samples, so tiered == baseline stays bitwise.
 * F32 models use the kernel above (no TF32). */
constexpr int TC_MAX_WARPS = 8, TC_MAX_TP = 256;

struct tc_layout {
    int Tp, nw, ldk, lds; /* ldk: bf16 K/V rows; lds: F32 words per warp-region row */
    size_t v_off, warp_off, warp_bytes, bytes;
};

__host__ __device__ inline tc_layout tc_plan(int T, int d) {
    tc_layout L;
    L.Tp = (T + 15) / 16 * 16;
    L.nw = L.Tp / 16 < TC_MAX_WARPS ? L.Tp / 16 : TC_MAX_WARPS;
    L.ldk = d + 8; /* 16-byte rows, staggered banks */
    /* S [16][lds] F32; P_hi | P_lo [16][2*lds] bf16; O [16][lds]. lds a
     * multiple of 16 words keeps every fragment pointer (P_lo at lds bf16)
     * 32-byte aligned, as wmma requires. */
    const int w = L.Tp > d ? L.Tp : d;
    L.lds = (w + 15) / 16 * 16;
    L.v_off = (size_t)L.Tp * L.ldk * 2;
    L.warp_off = 2 * L.v_off;
    L.warp_bytes = (size_t)16 * L.lds * 4;
    L.bytes = L.warp_off + (size_t)L.nw * L.warp_bytes;
    return L;
}

template <int D>
__global__ void __launch_bounds__(TC_MAX_WARPS * 32)
    attend_tc(int T, int hidden, const void *__restrict__ qkv, void *__restrict__ att,
              const float *__restrict__ cs, const float *__restrict__ sn, float scale) {
    using namespace nvcuda;
    constexpr int ND = D / 16, HALF = D / 2, PAIRS = D / 16; /* 8-wide chunk pairs per row */
    extern __shared__ __align__(128) unsigned char tc_smem[];
    const tc_layout L = tc_plan(T, D);
    const int h = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t s = blockIdx.y, ld3 = 3 * (size_t)hidden;
    __nv_bfloat16 *Ks = (__nv_bfloat16 *)tc_smem, *Vs = (__nv_bfloat16 *)(tc_smem + L.v_off);
    float *W = (float *)(tc_smem + L.warp_off + (size_t)warp * L.warp_bytes);
    __nv_bfloat16 *Wb = (__nv_bfloat16 *)W; /* the same region as bf16 */
    const uint16_t *base = (const uint16_t *)qkv + s * T * ld3 + (size_t)h * D;
    const uint4 z4 = make_uint4(0, 0, 0, 0);
    load_qkv<D>(base, T, L.Tp, hidden, L.ldk, cs, sn, (uint16_t *)Ks, (uint16_t *)Vs, 0, 0, nullptr,
                0);
    __syncthreads();
    const int nkt = L.Tp / 16, ldp = 2 * L.lds;
    for (int rt = warp; rt < nkt; rt += L.nw) {
        const int r0 = rt * 16;
        /* Q tile, RoPE'd, parked in the warp's region as bf16 [16][ldk]. */
        for (int e = lane; e < 16 * PAIRS; e += 32) {
            const int i = e / PAIRS, c = (e % PAIRS) * 8, t = r0 + i;
            uint4 q1 = z4, q2 = z4;
            if (t < T) load_pair(base + (size_t)t * ld3, c, HALF, D, t, cs, sn, &q1, &q2);
            *(uint4 *)(Wb + i * L.ldk + c) = q1;
            *(uint4 *)(Wb + i * L.ldk + c + HALF) = q2;
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fq[ND];
#pragma unroll
        for (int kk = 0; kk < ND; kk++) wmma::load_matrix_sync(fq[kk], Wb + kk * 16, L.ldk);
        __syncwarp(); /* Q is in registers: the region takes S */
        for (int kt = 0; kt < nkt; kt++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, part;
            wmma::fill_fragment(acc, 0.0f);
#pragma unroll
            for (int kk = 0; kk < ND; kk++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fk;
                wmma::load_matrix_sync(fk, Ks + kt * 16 * L.ldk + kk * 16, L.ldk); /* K^T */
                wmma::fill_fragment(part, 0.0f);
                wmma::mma_sync(part, fq[kk], fk, part);
#pragma unroll
                for (int x = 0; x < part.num_elements; x++)
                    acc.x[x] = __fadd_rn(acc.x[x], part.x[x]);
            }
            wmma::store_matrix_sync(W + kt * 16, acc, L.lds, wmma::mem_row_major);
        }
        __syncwarp();
        constexpr int JQ = TC_MAX_TP / 32;
        const int nq = (L.Tp + 31) / 32; /* uniform: the q-loops below skip whole chunks */
        for (int i = 0; i < 16; i++) {
            const float *srow = W + i * L.lds;
            float p[JQ];
            float mx = -INFINITY;
#pragma unroll
            for (int q = 0; q < JQ; q++) {
                if (q >= nq) break;
                const int j = lane + 32 * q;
                p[q] = j < T ? __fmul_rn(srow[j], scale) : -INFINITY;
                mx = fmaxf(mx, p[q]);
            }
            mx = warp_max(mx);
            float sum = 0.0f;
#pragma unroll
            for (int q = 0; q < JQ; q++) {
                if (q >= nq) break;
                const int j = lane + 32 * q;
                p[q] = j < T ? expf(__fsub_rn(p[q], mx)) : 0.0f;
                sum = __fadd_rn(sum, p[q]);
            }
            sum = warp_sum(sum);
            const float inv = __fdiv_rn(1.0f, sum);
            __syncwarp(); /* every lane has read row i of S before P overwrites it */
            __nv_bfloat16 *prow = Wb + i * ldp;
#pragma unroll
            for (int q = 0; q < JQ; q++) {
                if (q >= nq) break;
                const int j = lane + 32 * q;
                if (j < L.Tp) {
                    const float pv = j < T ? __fmul_rn(p[q], inv) : 0.0f;
                    const __nv_bfloat16 hi = __float2bfloat16_rn(pv);
                    prow[j] = hi;
                    prow[L.lds + j] = __float2bfloat16_rn(__fsub_rn(pv, __bfloat162float(hi)));
                }
            }
        }
        __syncwarp();
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> o[ND];
#pragma unroll
        for (int ct = 0; ct < ND; ct++) {
            wmma::fill_fragment(o[ct], 0.0f);
            for (int kt = 0; kt < nkt; kt++) {
                wmma::fragment<wmma::accumulator, 16, 16, 16, float> part;
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fp;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fv;
                wmma::load_matrix_sync(fv, Vs + kt * 16 * L.ldk + ct * 16, L.ldk);
                wmma::fill_fragment(part, 0.0f);
                wmma::load_matrix_sync(fp, Wb + kt * 16, ldp);
                wmma::mma_sync(part, fp, fv, part);
                wmma::load_matrix_sync(fp, Wb + L.lds + kt * 16, ldp);
                wmma::mma_sync(part, fp, fv, part);
#pragma unroll
                for (int x = 0; x < part.num_elements; x++)
                    o[ct].x[x] = __fadd_rn(o[ct].x[x], part.x[x]);
            }
        }
        __syncwarp(); /* P is spent: the region takes O */
#pragma unroll
        for (int ct = 0; ct < ND; ct++)
            wmma::store_matrix_sync(W + ct * 16, o[ct], L.lds, wmma::mem_row_major);
        __syncwarp();
        uint16_t *out = (uint16_t *)att + s * T * (size_t)hidden + (size_t)h * D;
        for (int e = lane; e < 16 * (D / 8); e += 32) {
            const int i = e / (D / 8), c = (e % (D / 8)) * 8, t = r0 + i;
            if (t >= T) continue;
            uint16_t y[8];
#pragma unroll
            for (int k = 0; k < 8; k++) y[k] = hrmt_cu_f32_to_bf16(W[i * L.lds + c + k]);
            *(uint4 *)(out + (size_t)t * hidden + c) = *(const uint4 *)y;
        }
        __syncwarp(); /* the next tile's Q reuses the region */
    }
}

} // namespace

/* The tensor-core kernel's shared memory for this model, 0 when it does not
 * apply (F32; head_dim not 32, 64 or 128; T above TC_MAX_TP; rows not 16-byte
 * aligned; too large for a block). */
static size_t attn_tc_bytes(const hrmt_model *m, size_t per_block) {
    const size_t d = m->head_dim;
    if (m->dt != HRMT_BF16 || (d != 32 && d != 64 && d != 128) || m->T > TC_MAX_TP ||
        m->hidden % 8 != 0)
        return 0;
    const size_t b = tc_plan((int)m->T, (int)d).bytes;
    return b <= per_block ? b : 0;
}

template <int D>
static cudaError_t attend_tc_launch(const hrmt_model *m, const void *qkv, void *att, size_t n,
                                    size_t bytes, const float *cs, const float *sn, float scale) {
    cudaError_t e =
        cudaFuncSetAttribute(attend_tc<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    const tc_layout L = tc_plan((int)m->T, D);
    const size_t rows3 = 3 * m->hidden * m->esz * m->T, rows1 = m->hidden * m->esz * m->T;
    for (size_t s0 = 0; s0 < n && e == cudaSuccess; s0 += 65535) {
        const size_t cnt = n - s0 < 65535 ? n - s0 : 65535;
        dim3 grid((unsigned)m->heads, (unsigned)cnt);
        attend_tc<D><<<grid, L.nw * 32, bytes, cu_stream(m)>>>(
            (int)m->T, (int)m->hidden, (const char *)qkv + s0 * rows3, (char *)att + s0 * rows1, cs,
            sn, scale);
    }
    return e;
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
    if (cu_attention_mma_applies(m))
        return cu_attention_mma(m, qkv, att, n, cs, sn, scale, sms, per_block);
    const size_t tc = attn_tc_bytes(m, per_block);
    if (tc) {
        cudaError_t e = d == 32   ? attend_tc_launch<32>(m, qkv, att, n, tc, cs, sn, scale)
                        : d == 64 ? attend_tc_launch<64>(m, qkv, att, n, tc, cs, sn, scale)
                                  : attend_tc_launch<128>(m, qkv, att, n, tc, cs, sn, scale);
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
