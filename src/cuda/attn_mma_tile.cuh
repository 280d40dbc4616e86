/* One warp's 16-row query tile of BF16 attention with S, P and O in
 * registers (mma.sync m16n8k16), shared by model_attn_mma.cu's kernel and the
 * persistent L-level kernel (model_l_persist.cu); the arithmetic is described
 * at the top of model_attn_mma.cu. K and V (RoPE'd, exact BF16, rows past T
 * zero) are in shared memory at row stride ldk; the warp's Q tile at Qs (row
 * stride ldq) is read, then overwritten by the tile's O (rounded once), so
 * the caller finds the output where the queries were; only the first qrows
 * (1..16) rows of the tile are read or written.
 * A team of `team` warps may share one tile (warps `mate` = 0..team-1,
 * named barrier `bar`, 1 or 2, of team * 32 threads): each computes S and P
 * as a lone warp would, then only O's column passes mate, mate + team, ...:
 * the same bits per output column, a shorter chain per warp. */
#ifndef HRMT_CUDA_ATTN_MMA_TILE_CUH
#define HRMT_CUDA_ATTN_MMA_TILE_CUH

#include <stdint.h>

#include <type_traits>

#include <cuda_bf16.h>

#include "cuda/rowops_common.cuh"

namespace {

__device__ __forceinline__ void mma_bf16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1,
                                         const float c[4]) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]),
          "f"(c[2]), "f"(c[3]));
}

/* Four 8x8 BF16 matrices (not transposed) from shared memory. */
__device__ __forceinline__ void ldsm_x4(const void *p, uint32_t r[4]) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
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

/* Named barrier 1 or 2 of `threads` threads. The ids are immediates: a
 * register id makes ptxas reserve all sixteen, which caps blocks per SM. */
__device__ __forceinline__ void team_sync(int bar, int threads) {
    if (bar == 1)
        asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
    else
        asm volatile("bar.sync 2, %0;" ::"r"(threads) : "memory");
}

__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v) {
    v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/* Key tiles KT bound the registers; FULL: T fills all KT tiles, so that the
 * loop bounds are constants. nkt_real: key tiles of 16 covering T. LDSM: S's
 * operand fragments by ldmatrix (the same values; measured at head_dim 64
 * and T <= 96, where it spills no more than the 32-bit loads; the
 * persistent and grid-wide level kernels keep the loads). */
template <int D, int KT, bool FULL, bool LDSM = (D == 64 && KT <= 6)>
__device__ __forceinline__ void attend_tile(int T, int nkt_real, const uint16_t *Ks,
                                            const uint16_t *Vs, int ldk, uint16_t *Qs, int ldq,
                                            int qrows, float scale, int mate = 0, int team = 1,
                                            int bar = 0) {
    constexpr int KD = D / 16, ND = D / 8;
    constexpr int NC = 2; /* 8-wide output column tiles per pass (one ldmatrix.x4) */
    const int lane = threadIdx.x % 32, g = lane / 4, tg = lane % 4;
    /* Rows at or past qrows are not there: their queries read row qrows - 1
     * (a row's arithmetic never touches another's) and their outputs are
     * not stored. */
    const int r_lo = g < qrows ? g : qrows - 1, r_hi = g + 8 < qrows ? g + 8 : qrows - 1;
    /* FULL: T fills all KT key tiles (T > 16 (KT - 1)), so that the loop
     * bounds are constants and only the last 16 keys can be masked: the
     * compiler drops the other tiles' tests. */
    const int nkt = FULL ? KT : nkt_real;
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
    if constexpr (LDSM) {
        /* The fragments by ldmatrix.x4: Q's m16k16 A fragment (lane l gives
         * row l % 16, clamped as r_lo / r_hi are, at column block l / 16)
         * and the B fragments of key tiles 2 p and 2 p + 1 (lane l gives key
         * row 16 p + 8 (l / 16) + l % 8 at column block (l / 8) % 2): the
         * values of the 32-bit loads below, one load where those take four
         * (at T = 82, 7 a k step instead of 28). The k steps past the first
         * stay a rolled loop: unrolled, ptxas hoisted their loads and spilled
         * ~680 bytes under the 80-register cap. Rows are 16-byte aligned
         * (ldk, ldq multiples of 8). */
        const int ql = (lane & 15) < qrows ? (lane & 15) : qrows - 1;
        const uint16_t *qrow = Qs + ql * ldq + (lane >> 4) * 8;
        const uint16_t *krow = Ks + ((lane >> 4) * 8 + (lane & 7)) * ldk + ((lane >> 3) & 1) * 8;
        auto kstep = [&](int kk, auto first) {
            uint32_t qa[4];
            ldsm_x4(qrow + kk * 16, qa);
#pragma unroll
            for (int p = 0; p < KT; p++) {
                if (p >= nkt) break;
                if (dead(2 * p)) continue; /* and 2 p + 1 */
                uint32_t kb[4];
                ldsm_x4(krow + p * 16 * ldk + kk * 16, kb);
#pragma unroll
                for (int u = 0; u < 2; u++) {
                    const int nt = 2 * p + u;
                    if (dead(nt)) continue;
                    if (decltype(first)::value) {
                        mma_bf16(sc[nt], qa, kb[2 * u], kb[2 * u + 1], zero);
                    } else {
                        float part[4];
                        mma_bf16(part, qa, kb[2 * u], kb[2 * u + 1], zero);
#pragma unroll
                        for (int x = 0; x < 4; x++) sc[nt][x] = __fadd_rn(sc[nt][x], part[x]);
                    }
                }
            }
        };
        kstep(0, std::true_type{});
#pragma unroll 1
        for (int kk = 1; kk < KD; kk++) kstep(kk, std::false_type{});
    } else {
#pragma unroll
        for (int kk = 0; kk < KD; kk++) {
            const uint16_t *q = Qs + r_lo * ldq + kk * 16 + 2 * tg;
            const uint16_t *q8 = Qs + r_hi * ldq + kk * 16 + 2 * tg;
            uint32_t qa[4];
            qa[0] = *(const uint32_t *)q;
            qa[1] = *(const uint32_t *)q8;
            qa[2] = *(const uint32_t *)(q + 8);
            qa[3] = *(const uint32_t *)(q8 + 8);
#pragma unroll
            for (int nt = 0; nt < 2 * KT; nt++) {
                if (nt >= 2 * nkt) break;
                if (dead(nt)) continue;
                const uint16_t *kr = Ks + (nt * 8 + g) * ldk + kk * 16 + 2 * tg;
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
    /* With rows past qrows, lanes read other lanes' Q rows (r_lo, r_hi), which
     * those lanes overwrite with O below: the warp's reads end here, in
     * program order and not only through the mma.sync steps between. */
    if (qrows < 16) __syncwarp();
    /* A team's reads of the shared Q tile end before any mate writes O. */
    if (team > 1) {
        team_sync(bar, team * 32);
    }
    /* O in passes of NC column tiles (8 accumulators live, not D / 2: what
     * fits the register cap); an output's sum runs over the key steps in
     * ascending order either way, so the bits do not depend on the pass
     * width or on which warp of a team runs the pass. Each pass is rounded
     * once and staged in the tile's Q rows for 16-byte stores. */
#pragma unroll 1 /* at the cap, unrolled passes spilled 132 bytes (hoisted V loads), rolled 36 */
    for (int pass = mate; pass < ND / NC; pass += team) {
        float o[NC][4];
#pragma unroll
        for (int nt = 0; nt < NC; nt++)
#pragma unroll
            for (int x = 0; x < 4; x++) o[nt][x] = 0.0f;
#pragma unroll
        for (int kb = 0; kb < KT; kb++) {
            if (kb >= nkt) break;
            const uint16_t *vr =
                Vs + (kb * 16 + (lane & 15)) * ldk + pass * 8 * NC + (lane >> 4) * 8;
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
            if (g < qrows)
                *(uint32_t *)(Qs + g * ldq + col) =
                    hrmt_rowops_cuda::pack_bf16x2_arith(o[nt][0], o[nt][1]);
            if (g + 8 < qrows)
                *(uint32_t *)(Qs + (g + 8) * ldq + col) =
                    hrmt_rowops_cuda::pack_bf16x2_arith(o[nt][2], o[nt][3]);
        }
    }
}

} // namespace

#endif
