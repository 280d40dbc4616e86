/* BF16 attention for short sequences (T <= 128, head_dim 32 or 64) with the
 * scores, probabilities and outputs in registers (mma.sync m16n8k16).
 *
 * One block per (sample, head, group of 16-row query tiles); each warp owns
 * one query tile. K (RoPE'd, exact BF16 values) and V sit in shared memory,
 * keys padded to Tp (a multiple of 16) with zero rows. Per warp:
 *     S = Q K^T: per 8-key tile, one m16n8k16 per 16-wide k step from a zero
 *         accumulator, the steps' partial tiles added in F32 in ascending k;
 *     P = softmax(S * scale) in F32 over the T real keys: max subtracted,
 *         exponentials as 2^((S * scale * log2 e) - max) with the hardware
 *         exp2 (~2 ulp, results below 2^-126 flushed to 0; P enters P V
 *         with ~16 significant bits), e_j *
 *         (1 / sum); each thread holds two rows' slices, reduced across the
 *         four threads that share a row;
 *     O = P_hi V + P_lo V, P_hi = bf16(P), P_lo = bf16(P - P_hi) (P keeps
 *         ~16 significant bits), each 16-key step's partial tile added in
 *         F32 in ascending keys, rounded once.
 * S's accumulator fragments are P's operand fragments (the m16n8 C layout of
 * two adjacent key tiles is the m16k16 A layout), so S and P never touch
 * shared memory. How query tiles are grouped into blocks (chosen from the
 * batch to fill the GPU) never changes a row's arithmetic: a row's bits
 * depend only on its (sample, head) data, so tiered == baseline stays
 * bitwise. The register kernel replaces model_attn.cu's wmma kernel where it
 * applies (that one round-trips S and P through shared memory and runs one
 * block per (sample, head): 8 blocks at batch 1). */
#include "cuda/attn_rope.cuh"
#include "cuda/bf16.cuh"
#include "cuda/model_internal.cuh"

namespace {

constexpr int MAX_KT = 8;     /* key (and query) tiles of 16: T <= 128 */
constexpr int MID_KT = 6;     /* T <= 96 (HRM's Sudoku: 82): a smaller register cap */
constexpr int LOAD_WARPS = 4; /* warps that load K and V, even for one query tile */

struct mma_layout {
    int Tp, nkt, ldk; /* ldk: bf16 row stride of K, V and the warp tiles */
    size_t v_off, q_off, bytes;
};

__host__ __device__ inline mma_layout mma_plan(int T, int d, int warps) {
    mma_layout L;
    L.Tp = (T + 15) / 16 * 16;
    L.nkt = L.Tp / 16;
    L.ldk = d + 8; /* 16-byte rows, staggered banks */
    L.v_off = (size_t)L.Tp * L.ldk * 2;
    L.q_off = 2 * L.v_off;
    L.bytes = L.q_off + (size_t)warps * 16 * L.ldk * 2;
    return L;
}

__device__ __forceinline__ void mma_bf16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1,
                                         const float c[4]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
}

/* Four 8x8 bf16 matrices, transposed: lane l addresses row (l & 15) of a
 * 16-row slab at column block (l >> 4); gives the B fragments of two 8-wide
 * column tiles of V. */
__device__ __forceinline__ void ldsm_x4_trans(const void *p, uint32_t r[4]) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

/* Two outputs as BF16 by the hardware's paired RNE conversion (core/bf16.h's
 * bits for every non-NaN; a NaN stays a NaN). */
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
    return *(const uint32_t *)&p;
}

/* P's hi and lo parts of one fragment register (two adjacent keys): one
 * paired conversion each (RNE; P is finite), hi's F32 values by shifts. */
__device__ __forceinline__ void split_pair(float p0, float p1, uint32_t *hi, uint32_t *lo) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(p0, p1);
    const uint32_t hb = *(const uint32_t *)&h;
    const __nv_bfloat162 l = __floats2bfloat162_rn(
        __fsub_rn(p0, __uint_as_float(hb << 16)), __fsub_rn(p1, __uint_as_float(hb & 0xffff0000u)));
    *hi = hb;
    *lo = *(const uint32_t *)&l;
}

/* 2^x with flush to zero: results below 2^-126 become 0 (a P that small
 * cannot move an output), saving exp2f's denormal handling. */
__device__ __forceinline__ float exp2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/* grid (heads * groups, samples); block max(W, LOAD_WARPS) warps, the first
 * W of which take query tiles group * W + warp. */
/* KT: key tiles the registers are sized for. At KT = MID_KT the cap of 80
 * registers gives six warps per scheduler: four blocks of KT warps share an
 * SM, so that one block's loads overlap the others' arithmetic (at 112, two
 * blocks did; ncu: 2.8 active warps per scheduler, half the issue slots
 * idle); two at MAX_KT. */
template <int D, int KT, bool FULL>
__global__ void __launch_bounds__(KT * 32) __maxnreg__(KT <= MID_KT ? 80 : 128)
    attend_mma(int T, int hidden, int W, int groups, const void *__restrict__ qkv,
               void *__restrict__ att, const float *__restrict__ cs, const float *__restrict__ sn,
               float scale) {
    constexpr int KD = D / 16, ND = D / 8;
    constexpr int NC = 2; /* 8-wide output column tiles per pass (one ldmatrix.x4) */
    extern __shared__ __align__(128) unsigned char mma_smem[];
    const mma_layout L = mma_plan(T, D, W);
    const int h = blockIdx.x / groups, grp = blockIdx.x % groups;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t s = blockIdx.y, ld3 = 3 * (size_t)hidden;
    uint16_t *Ks = (uint16_t *)mma_smem, *Vs = (uint16_t *)(mma_smem + L.v_off);
    const uint16_t *base = (const uint16_t *)qkv + s * T * ld3 + (size_t)h * D;
    /* The block's query tiles (consecutive 16-row slabs of the Q area) in
     * the same pass as K and V: one round trip, one RoPE factor load. */
    const int rt = grp * W + warp;
    const bool active = warp < W && rt < L.nkt;
    const int r0 = rt * 16, g = lane / 4, tg = lane % 4;
    const int q0 = grp * W * 16, q1 = min(q0 + W * 16, L.Tp);
    uint16_t *Qs = (uint16_t *)(mma_smem + L.q_off) + (size_t)warp * 16 * L.ldk;
    load_qkv<D>(base, T, L.Tp, hidden, L.ldk, cs, sn, Ks, Vs, q0, q1,
                (uint16_t *)(mma_smem + L.q_off));
    __syncthreads();
    if (!active) return; /* no block barrier follows */
    /* FULL: T fills all KT key tiles (T > 16 (KT - 1)), so that the loop
     * bounds are constants and only the last 16 keys can be masked: the
     * compiler drops the other tiles' tests. */
    const int nkt = FULL ? KT : L.nkt;
    auto dead = [&](int nt) { return (!FULL || nt >= 2 * KT - 2) && nt * 8 >= T; };
    auto whole = [&](int nt) { return (FULL && nt < 2 * KT - 2) || (nt + 1) * 8 <= T; };
    const float zero[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    /* S in log2 units, masked: sc[nt][0..1] row g, [2..3] row g + 8, keys
     * nt*8 + 2tg + {0,1}. k steps outermost, so that one step's Q fragment
     * is live rather than all of Q; each tile's partial products are still
     * added in ascending k, the first being the accumulator (0 + x would
     * only turn -0 into +0, which no later step can tell apart). Tiles
     * wholly past T are -inf without arithmetic; masks only where a tile
     * straddles T (both warp-uniform). */
    const float scale2 = scale * 1.4426950408889634f;
    float sc[2 * KT][4];
#pragma unroll
    for (int kk = 0; kk < KD; kk++) {
        const uint16_t *q = Qs + g * L.ldk + kk * 16 + 2 * tg;
        uint32_t qa[4];
        qa[0] = *(const uint32_t *)q;
        qa[1] = *(const uint32_t *)(q + 8 * L.ldk);
        qa[2] = *(const uint32_t *)(q + 8);
        qa[3] = *(const uint32_t *)(q + 8 * L.ldk + 8);
#pragma unroll
        for (int nt = 0; nt < 2 * KT; nt++) {
            if (nt >= 2 * nkt) break;
            if (dead(nt)) continue;
            const uint16_t *kr = Ks + (nt * 8 + g) * L.ldk + kk * 16 + 2 * tg;
            if (kk == 0) {
                mma_bf16(sc[nt], qa, *(const uint32_t *)kr, *(const uint32_t *)(kr + 8), zero);
            } else {
                float part[4];
                mma_bf16(part, qa, *(const uint32_t *)kr, *(const uint32_t *)(kr + 8), zero);
#pragma unroll
                for (int x = 0; x < 4; x++) sc[nt][x] = __fadd_rn(sc[nt][x], part[x]);
            }
        }
    }
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 2 * KT; nt++) {
        if (nt >= 2 * nkt) break;
        float *acc = sc[nt];
        if (dead(nt)) {
#pragma unroll
            for (int x = 0; x < 4; x++) acc[x] = -INFINITY;
            continue;
        }
        if (whole(nt)) {
#pragma unroll
            for (int x = 0; x < 4; x++) acc[x] = __fmul_rn(acc[x], scale2);
        } else {
#pragma unroll
            for (int x = 0; x < 4; x++) {
                const int j = nt * 8 + 2 * tg + (x & 1);
                acc[x] = j < T ? __fmul_rn(acc[x], scale2) : -INFINITY;
            }
        }
        mx0 = fmaxf(mx0, fmaxf(sc[nt][0], sc[nt][1]));
        mx1 = fmaxf(mx1, fmaxf(sc[nt][2], sc[nt][3]));
    }
    mx0 = quad_max(mx0);
    mx1 = quad_max(mx1);
    /* e = 2^(s - max) (the hardware exp2, ~2 ulp: P is used to ~16 bits);
     * masked keys give 2^-inf = 0. */
    float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < 2 * KT; nt++) {
        if (nt >= 2 * nkt) break;
#pragma unroll
        for (int x = 0; x < 4; x++) {
            const float e = exp2_ftz(__fsub_rn(sc[nt][x], x < 2 ? mx0 : mx1));
            sc[nt][x] = e;
            if (x < 2)
                sum0 = __fadd_rn(sum0, e);
            else
                sum1 = __fadd_rn(sum1, e);
        }
    }
    const float inv0 = __fdiv_rn(1.0f, quad_sum(sum0)), inv1 = __fdiv_rn(1.0f, quad_sum(sum1));
    /* P's A fragments per 16-key step: key tiles 2kb (regs 0, 1) and 2kb + 1
     * (regs 2, 3); packed hi/lo pairs take the registers the F32 scores
     * held, so that O can be made in column passes. */
    uint32_t ph[KT][4], pl[KT][4];
#pragma unroll
    for (int kb = 0; kb < KT; kb++) {
        if (kb >= nkt) break;
        const float *a = sc[2 * kb], *b = sc[2 * kb + 1];
        split_pair(__fmul_rn(a[0], inv0), __fmul_rn(a[1], inv0), &ph[kb][0], &pl[kb][0]);
        split_pair(__fmul_rn(a[2], inv1), __fmul_rn(a[3], inv1), &ph[kb][1], &pl[kb][1]);
        split_pair(__fmul_rn(b[0], inv0), __fmul_rn(b[1], inv0), &ph[kb][2], &pl[kb][2]);
        split_pair(__fmul_rn(b[2], inv1), __fmul_rn(b[3], inv1), &ph[kb][3], &pl[kb][3]);
    }
    /* O in passes of NC column tiles (8 accumulators live, not D / 2: what
     * fits the register cap); an output's sum runs
     * over the key steps in ascending order either way, so the bits do not
     * depend on the pass width. Each pass is rounded once and staged in the
     * warp's Q tile for 16-byte stores. */
#pragma unroll 1 /* at the cap, unrolled passes spilled 132 bytes (hoisted V loads), rolled 36 */
    for (int pass = 0; pass < ND / NC; pass++) {
        float o[NC][4];
#pragma unroll
        for (int nt = 0; nt < NC; nt++)
#pragma unroll
            for (int x = 0; x < 4; x++) o[nt][x] = 0.0f;
#pragma unroll
        for (int kb = 0; kb < KT; kb++) {
            if (kb >= nkt) break;
            const uint16_t *vr =
                Vs + (kb * 16 + (lane & 15)) * L.ldk + pass * 8 * NC + (lane >> 4) * 8;
#pragma unroll
            for (int np = 0; np < NC / 2; np++) { /* two 8-wide column tiles per ldmatrix */
                uint32_t bv[4];
                ldsm_x4_trans(vr + np * 16, bv);
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    float part[4];
                    mma_bf16(part, ph[kb], bv[2 * u], bv[2 * u + 1], zero);
                    mma_bf16(part, pl[kb], bv[2 * u], bv[2 * u + 1], part);
#pragma unroll
                    for (int x = 0; x < 4; x++)
                        o[2 * np + u][x] = __fadd_rn(o[2 * np + u][x], part[x]);
                }
            }
        }
#pragma unroll
        for (int nt = 0; nt < NC; nt++) {
            const int col = pass * 8 * NC + nt * 8 + 2 * tg;
            *(uint32_t *)(Qs + g * L.ldk + col) = pack_bf16(o[nt][0], o[nt][1]);
            *(uint32_t *)(Qs + (g + 8) * L.ldk + col) = pack_bf16(o[nt][2], o[nt][3]);
        }
    }
    __syncwarp();
    uint16_t *out = (uint16_t *)att + s * T * (size_t)hidden + (size_t)h * D;
    for (int e = lane; e < 16 * (D / 8); e += 32) {
        const int i = e / (D / 8), c = (e % (D / 8)) * 8, t = r0 + i;
        if (t < T) *(uint4 *)(out + (size_t)t * hidden + c) = *(const uint4 *)(Qs + i * L.ldk + c);
    }
}

template <int D, int KT, bool FULL>
cudaError_t launch(const hrmt_model *m, const void *qkv, void *att, size_t n, int W, int groups,
                   size_t bytes, const float *cs, const float *sn, float scale) {
    cudaError_t e = cudaFuncSetAttribute(attend_mma<D, KT, FULL>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    const size_t rows3 = 3 * m->hidden * m->esz * m->T, rows1 = m->hidden * m->esz * m->T;
    const int threads = 32 * (W > LOAD_WARPS ? W : LOAD_WARPS);
    for (size_t s0 = 0; s0 < n && e == cudaSuccess; s0 += 65535) {
        const size_t cnt = n - s0 < 65535 ? n - s0 : 65535;
        dim3 grid((unsigned)(m->heads * (size_t)groups), (unsigned)cnt);
        attend_mma<D, KT, FULL><<<grid, threads, bytes, cu_stream(m)>>>(
            (int)m->T, (int)m->hidden, W, groups, (const char *)qkv + s0 * rows3,
            (char *)att + s0 * rows1, cs, sn, scale);
    }
    return e;
}

} // namespace

int cu_attention_mma_applies(const hrmt_model *m) {
    const size_t d = m->head_dim;
    return m->dt == HRMT_BF16 && (d == 32 || d == 64) && m->T >= 1 && m->T <= 16 * MAX_KT &&
           m->hidden % 8 == 0;
}

hrmt_status cu_attention_mma(const hrmt_model *m, const void *qkv, void *att, size_t n,
                             const float *cs, const float *sn, float scale, int sms,
                             size_t per_block) {
    const int d = (int)m->head_dim, nkt = mma_plan((int)m->T, d, 1).nkt;
    /* Query tiles per block: all of a head's tiles (K and V loaded once)
     * when the batch fills the GPU twice over, else fewer, so that small
     * batches still spread over the SMs. */
    const size_t units = n * m->heads, want = 2 * (size_t)(sms > 0 ? sms : 1);
    size_t split = units >= want ? 1 : (want + units - 1) / units;
    if (split > (size_t)nkt) split = (size_t)nkt;
    const int W = (int)((nkt + split - 1) / split), groups = (nkt + W - 1) / W;
    const size_t bytes = mma_plan((int)m->T, d, W).bytes;
    if (bytes > per_block)
        return hrmt_fail(m->ctx, HRMT_ERR_UNSUPPORTED,
                         "cuda attention: %zu bytes of shared memory needed (device: %zu)", bytes,
                         per_block);
    cudaError_t e;
    if (nkt == MID_KT)
        e = d == 32 ? launch<32, MID_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MID_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    else if (nkt < MID_KT)
        e = d == 32 ? launch<32, MID_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MID_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    else if (nkt == MAX_KT)
        e = d == 32 ? launch<32, MAX_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MAX_KT, true>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    else
        e = d == 32 ? launch<32, MAX_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale)
                    : launch<64, MAX_KT, false>(m, qkv, att, n, W, groups, bytes, cs, sn, scale);
    if (e != cudaSuccess) return cu_fail(m->ctx, e, "cuda attention: shared memory opt-in");
    return cu_check(m->ctx, "cuda attention (registers)");
}
