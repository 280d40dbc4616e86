/* Softmax, bits of cpu/softmax_scalar.c.
 *
 * Mapping: rows of 8..128 elements: eight (BF16 pairs: four) lanes per row,
 * in registers (softmax_short_kernel, softmax_pair_kernel); rows of 129..512
 * (or shorter than 8): a half-warp per row, in registers (softmax_reg_kernel);
 * longer rows: one warp per row, 1, 2 or 4 rows per block (grid-stride), as
 * below.
 * Order:
 *  - m = max(scale * x): order-free (fmax_nan: a NaN anywhere gives NaN;
 *    which of +0 and -0 wins cannot change exp(v - m)), lane maxima then
 *    shuffles;
 *  - e_j = expf_fma(scale * x_j - m) (expf_fma_nonpos: the argument is <= 0
 *    or NaN), every lane, parked in shared memory as
 *    F32 (the reference parks them in `out` for F32 and recomputes the same
 *    bits for BF16);
 *  - the sum is the reference's 8 lane chains: warp lane k < 8 adds e_j for
 *    j = k, k + 8, ... in increasing j (one chain per thread, never split),
 *    then lane 0 folds them as cpu/softmax_order.h;
 *  - out_j = e_j * (1 / sum), element-wise.
 * Rows longer than HRMT_ROW_SMEM_MAX / 4 (12288) recompute e_j in the chain
 * and scale passes instead of parking them (same bits, slower). */
#include "cuda/cuda_backend.h"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_vec.cuh"

using namespace hrmt_rowops_cuda;

namespace {

#define HRMT_SOFTMAX_WARPS 4

/* The reference's fold of its 8 chain sums (cpu/softmax_order.h): halves,
 * then quarters; rows shorter than 8 have `cols` chains, added in order. */
__device__ __forceinline__ float fold8(const float ls[8], size_t cols) {
    if (cols < 8) {
        float sum = ls[0];
        HRMT_UNROLL
        for (int k = 1; k < 8; k++)
            if ((size_t)k < cols) sum = fadd(sum, ls[k]);
        return sum;
    }
    const float h0 = fadd(ls[0], ls[4]), h1 = fadd(ls[1], ls[5]);
    const float h2 = fadd(ls[2], ls[6]), h3 = fadd(ls[3], ls[7]);
    return fadd(fadd(h0, h2), fadd(h1, h3));
}

template <int BF, bool SMEM, bool VEC>
__global__ void __launch_bounds__(HRMT_SOFTMAX_WARPS * 32)
    softmax_kernel(size_t rows, size_t cols, const void *x, size_t ldx, float scale, void *out,
                   size_t ldo) {
    constexpr size_t es = BF ? 2 : 4;
    constexpr int N = VecN<BF>::N;
    extern __shared__ float4 softmax_smem[];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const size_t nv = VEC ? cols / N : 0, tail = nv * N;
    float *e = (float *)(softmax_smem + (size_t)warp * cdiv(cols, 4));
    for (size_t row = (size_t)blockIdx.x * nw + warp; row < rows; row += (size_t)gridDim.x * nw) {
        const char *xr = (const char *)x + row * ldx * es;
        char *o = (char *)out + row * ldo * es;
        float m = -INFINITY;
        for (size_t v = lane; VEC && v < nv; v += 32) {
            float a[8];
            ld_vec<BF>(xr, v * N, a);
            HRMT_UNROLL
            for (int k = 0; k < N; k++) m = fmax_nan(m, fmul(scale, a[k]));
        }
        for (size_t j = tail + lane; j < cols; j += 32)
            m = fmax_nan(m, fmul(scale, ld_el<BF>(xr, j)));
        HRMT_UNROLL
        for (int d = 16; d >= 1; d /= 2) m = fmax_nan(m, __shfl_xor_sync(HRMT_FULL_MASK, m, d));
        auto ex = [&](size_t j) { return expf_fma_nonpos(fsub(fmul(scale, ld_el<BF>(xr, j)), m)); };
        if (SMEM) {
            for (size_t v = lane; VEC && v < nv; v += 32) {
                float a[8];
                ld_vec<BF>(xr, v * N, a);
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = expf_fma_nonpos(fsub(fmul(scale, a[k]), m));
                HRMT_UNROLL
                for (int k = 0; k < N; k += 4)
                    *(float4 *)(e + v * N + k) = make_float4(a[k], a[k + 1], a[k + 2], a[k + 3]);
            }
            for (size_t j = tail + lane; j < cols; j += 32) e[j] = ex(j);
            __syncwarp();
        }
        /* Lane k < 8: the reference's lane k, in increasing j. */
        float l = 0.0f;
        if (lane < 8) {
            size_t j = lane;
            if (SMEM) {
                for (; j + 7 * 8 < cols; j += 8 * 8) {
                    float t[8];
                    HRMT_UNROLL
                    for (int k = 0; k < 8; k++) t[k] = e[j + 8 * k];
                    HRMT_UNROLL
                    for (int k = 0; k < 8; k++) l = fadd(l, t[k]);
                }
            }
            for (; j < cols; j += 8) l = fadd(l, SMEM ? e[j] : ex(j));
        }
        float ls[8];
        HRMT_UNROLL
        for (int k = 0; k < 8; k++) ls[k] = __shfl_sync(HRMT_FULL_MASK, l, k);
        const float inv = fdiv(1.0f, fold8(ls, cols));
        for (size_t v = lane; VEC && v < nv; v += 32) {
            float a[8];
            if (SMEM) {
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = e[v * N + k];
            } else {
                ld_vec<BF>(xr, v * N, a);
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = expf_fma_nonpos(fsub(fmul(scale, a[k]), m));
            }
            HRMT_UNROLL
            for (int k = 0; k < N; k++) a[k] = fmul(a[k], inv);
            st_vec<BF>(o, v * N, a, 0);
        }
        for (size_t j = tail + lane; j < cols; j += 32)
            st_el<BF>(o, j, fmul(SMEM ? e[j] : ex(j), inv));
        if (SMEM) __syncwarp(); /* the next row reuses e */
    }
}

/* Short rows (8 <= cols <= 8 * SHORT_PER): eight lanes per row, four rows per
 * warp, everything in registers. Lane k of a row's group is the reference's
 * chain k (j = k, k + 8, ... in increasing j), so the bits are the same as
 * above; the point is four rows in flight per warp instead of one (HRM's
 * attention rows are 82 wide). NCH = ceil(cols / 8), the longest chain, is a
 * template argument, so the loops are straight code: every lane owns slots
 * 0..NCH-2, and only the last slot belongs to some lanes alone (k < the
 * last chunk's width). All loads go first (their latencies overlap); a lane
 * without a last element, or a row past the end, loads a valid element it
 * then ignores (no branch around loads). Stores round through the hardware
 * conversion (results of arithmetic: round_bf16_arith). */
#define HRMT_SOFTMAX_SHORT_PER 16

template <int BF, int NCH>
__global__ void __launch_bounds__(HRMT_SOFTMAX_WARPS * 32)
    softmax_short_kernel(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                         void *out, size_t ldo) {
    constexpr size_t es = BF ? 2 : 4;
    const unsigned lane = threadIdx.x & 31, k = lane & 7, grp = lane >> 3;
    /* Does this lane own element k + 8 (NCH - 1)? */
    const bool has_last = (size_t)k + 8 * (NCH - 1) < cols;
    const size_t per_block = (size_t)(blockDim.x >> 5) * 4;
    for (size_t r0 = (size_t)blockIdx.x * per_block; r0 < rows;
         r0 += (size_t)gridDim.x * per_block) {
        const size_t row = r0 + (threadIdx.x >> 5) * 4 + grp;
        const bool live = row < rows;
        const char *xr = (const char *)x + ((live ? row : 0) * ldx + k) * es;
        uint32_t raw[NCH];
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) {
            const unsigned j = i < NCH - 1 || has_last ? 8u * i : 0u;
            raw[i] = BF ? ((const uint16_t *)xr)[j] : ((const uint32_t *)xr)[j];
        }
        float v[NCH];
        float m = -INFINITY;
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) {
            v[i] = fmul(scale, BF ? bf16_to_f((uint16_t)raw[i]) : ffrom(raw[i]));
            if (i < NCH - 1 || has_last) m = fmax_nan(m, v[i]);
        }
        HRMT_UNROLL
        for (int d = 4; d >= 1; d /= 2) m = fmax_nan(m, __shfl_xor_sync(HRMT_FULL_MASK, m, d));
        float l = 0.0f;
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) {
            v[i] = expf_fma_nonpos(fsub(v[i], m));
            if (i < NCH - 1 || has_last) l = fadd(l, v[i]);
        }
        float ls[8];
        HRMT_UNROLL
        for (int q = 0; q < 8; q++) ls[q] = __shfl_sync(HRMT_FULL_MASK, l, (int)(grp * 8 + q));
        const float inv = fdiv(1.0f, fold8(ls, cols));
        if (!live) continue;
        char *o = (char *)out + (row * ldo + k) * es;
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) {
            if (i == NCH - 1 && !has_last) break;
            const float r = fmul(v[i], inv);
            if (BF)
                ((uint16_t *)o)[8 * i] = bf16_bits_arith(r);
            else
                ((float *)o)[8 * i] = r;
        }
    }
}

/* BF16 short rows of even width in 4-byte aligned rows: four lanes per row,
 * eight rows per warp. Lane c owns chains 2c and 2c + 1, whose elements
 * 2c + 8i and 2c + 1 + 8i are one 4-byte word: half the loads, stores and
 * conversions of softmax_short_kernel, and the per-row shuffles and division
 * shared by twice the rows. Same chains, same order, same bits. */
template <int NCH>
__global__ void __launch_bounds__(HRMT_SOFTMAX_WARPS * 32)
    softmax_pair_kernel(size_t rows, size_t cols, const void *x, size_t ldx, float scale, void *out,
                        size_t ldo) {
    const unsigned lane = threadIdx.x & 31, c = lane & 3, grp = lane >> 2;
    /* Does this lane own the pair 2c + 8 (NCH - 1)? (cols is even) */
    const bool has_last = 2 * (size_t)c + 8 * (NCH - 1) < cols;
    const size_t per_block = (size_t)(blockDim.x >> 5) * 8;
    for (size_t r0 = (size_t)blockIdx.x * per_block; r0 < rows;
         r0 += (size_t)gridDim.x * per_block) {
        const size_t row = r0 + (threadIdx.x >> 5) * 8 + grp;
        const bool live = row < rows;
        const uint32_t *xr =
            (const uint32_t *)((const uint16_t *)x + (live ? row : 0) * ldx + 2 * c);
        uint32_t raw[NCH];
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) raw[i] = xr[i < NCH - 1 || has_last ? 4 * i : 0];
        float v0[NCH], v1[NCH];
        float m = -INFINITY;
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) {
            v0[i] = fmul(scale, bf16_to_f((uint16_t)(raw[i] & 0xffffu)));
            v1[i] = fmul(scale, bf16_to_f((uint16_t)(raw[i] >> 16)));
            if (i < NCH - 1 || has_last) m = fmax_nan(m, fmax_nan(v0[i], v1[i]));
        }
        m = fmax_nan(m, __shfl_xor_sync(HRMT_FULL_MASK, m, 2));
        m = fmax_nan(m, __shfl_xor_sync(HRMT_FULL_MASK, m, 1));
        float l0 = 0.0f, l1 = 0.0f;
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) {
            v0[i] = expf_fma_nonpos(fsub(v0[i], m));
            v1[i] = expf_fma_nonpos(fsub(v1[i], m));
            if (i < NCH - 1 || has_last) {
                l0 = fadd(l0, v0[i]);
                l1 = fadd(l1, v1[i]);
            }
        }
        float ls[8];
        HRMT_UNROLL
        for (int q = 0; q < 4; q++) {
            ls[2 * q] = __shfl_sync(HRMT_FULL_MASK, l0, (int)(grp * 4 + q));
            ls[2 * q + 1] = __shfl_sync(HRMT_FULL_MASK, l1, (int)(grp * 4 + q));
        }
        const float inv = fdiv(1.0f, fold8(ls, cols));
        if (!live) continue;
        uint32_t *o = (uint32_t *)((uint16_t *)out + row * ldo + 2 * c);
        HRMT_UNROLL
        for (int i = 0; i < NCH; i++) {
            if (i == NCH - 1 && !has_last) break;
            o[4 * i] = pack_bf16x2_arith(fmul(v0[i], inv), fmul(v1[i], inv));
        }
    }
}

template <int BF, int NCH>
static void softmax_short_launch(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                                 void *out, size_t ldo) {
    if ((size_t)NCH != (cols + 7) / 8) {
        if constexpr (NCH > 1)
            softmax_short_launch<BF, NCH - 1>(rows, cols, x, ldx, scale, out, ldo);
        return;
    }
    const size_t es = BF ? 2 : 4;
    if (BF && cols % 2 == 0 && rows_aligned(x, ldx, es, 4) && rows_aligned(out, ldo, es, 4)) {
        softmax_pair_kernel<NCH>
            <<<row_blocks(rows, HRMT_SOFTMAX_WARPS * 8), HRMT_SOFTMAX_WARPS * 32, 0,
               cudaStreamPerThread>>>(rows, cols, x, ldx, scale, out, ldo);
        return;
    }
    const unsigned blocks = row_blocks(rows, HRMT_SOFTMAX_WARPS * 4);
    softmax_short_kernel<BF, NCH><<<blocks, HRMT_SOFTMAX_WARPS * 32, 0, cudaStreamPerThread>>>(
        rows, cols, x, ldx, scale, out, ldo);
}

/* Rows of 129..512 elements: two rows per warp, a half-warp (16 lanes) per
 * row, the row in registers (32 elements per lane: 16-byte vectors where
 * aligned, else element j at lane j % 16). The chains' sums need element
 * j = k + 8t in chain k at position t: each lane writes its exps to its
 * half's transposed buffer eT[k][t] (row stride REG_TS floats, the halves
 * REG_HALF apart: conflict-free writes, and 16-byte reads that stay
 * conflict-free across the 8 chains), zero past each chain's end (adding +0
 * to a positive sum changes nothing), and lane k < 8 of each half adds its
 * chain in increasing t, four values per read: one instruction stream for two
 * rows' chains. Same order, same bits as the reference; one global read and
 * one write per element. */
#define HRMT_SOFTMAX_REG_COLS 512
#define HRMT_SOFTMAX_REG_TS (HRMT_SOFTMAX_REG_COLS / 8 + 4)
#define HRMT_SOFTMAX_REG_HALF (8 * HRMT_SOFTMAX_REG_TS + 16)

template <int BF, bool VEC>
__global__ void __launch_bounds__(HRMT_SOFTMAX_WARPS * 32)
    softmax_reg_kernel(size_t rows, size_t cols, const void *x, size_t ldx, float scale, void *out,
                       size_t ldo) {
    constexpr size_t es = BF ? 2 : 4;
    constexpr int PER = HRMT_SOFTMAX_REG_COLS / 16, TS = HRMT_SOFTMAX_REG_TS;
    constexpr int HALF = HRMT_SOFTMAX_REG_HALF;
    constexpr int N = VEC ? VecN<BF>::N : 1; /* elements per access */
    constexpr int NA = PER / N;              /* accesses per lane */
    __shared__ __align__(16) float eT_all[HRMT_SOFTMAX_WARPS][2 * HALF];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned hl = lane & 15, half = lane >> 4;
    const unsigned c = (unsigned)cols;
    float *eT = eT_all[warp] + half * HALF;
    for (unsigned i = lane; i < 2 * HALF; i += 32) eT_all[warp][i] = 0.0f;
    __syncwarp();
    /* eT slot of element j = col(a, p) is (j % 8) * TS + j / 8, which is
     * eb + (VEC ? p * TS + 2 a N : 2 a): N * hl % 8 + p < 8 never carries. */
    const unsigned eb = VEC ? ((N * hl) & 7) * TS + (N * hl) / 8 : (hl & 7) * TS + hl / 8;
    /* Element index of slot (a, p): access a of this lane, position p. */
    auto col = [&](int a, int p) { return VEC ? (hl + 16u * a) * N + p : hl + 16u * a; };
    for (size_t r0 = (size_t)blockIdx.x * HRMT_SOFTMAX_WARPS * 2; r0 < rows;
         r0 += (size_t)gridDim.x * HRMT_SOFTMAX_WARPS * 2) {
        const size_t row = r0 + warp * 2 + half;
        const bool live = row < rows;
        const char *xr = (const char *)x + (live ? row : 0) * ldx * es;
        float v[PER];
        HRMT_UNROLL
        for (int a = 0; a < NA; a++) {
            if (VEC) {
                if (col(a, 0) < c) {
                    ld_vec<BF>(xr, col(a, 0), v + a * N);
                } else {
                    HRMT_UNROLL
                    for (int p = 0; p < N; p++) v[a * N + p] = 0.0f;
                }
            } else {
                v[a] = col(a, 0) < c ? ld_el<BF>(xr, col(a, 0)) : 0.0f;
            }
        }
        float m = -INFINITY;
        HRMT_UNROLL
        for (int a = 0; a < NA; a++) {
            HRMT_UNROLL
            for (int p = 0; p < N; p++) {
                v[a * N + p] = fmul(scale, v[a * N + p]);
                /* Vectors are whole (cols % N == 0): one test per access. */
                if (col(a, VEC ? 0 : p) < c) m = fmax_nan(m, v[a * N + p]);
            }
        }
        HRMT_UNROLL
        for (int d = 8; d >= 1; d /= 2) m = fmax_nan(m, __shfl_xor_sync(HRMT_FULL_MASK, m, d));
        HRMT_UNROLL
        for (int a = 0; a < NA; a++) {
            HRMT_UNROLL
            for (int p = 0; p < N; p++) {
                v[a * N + p] = expf_fma_nonpos(fsub(v[a * N + p], m));
                if (col(a, VEC ? 0 : p) < c)
                    eT[eb + (VEC ? p * TS + 2 * a * N : 2 * a)] = v[a * N + p];
            }
        }
        __syncwarp();
        float l = 0.0f;
        if (hl < 8) {
            const unsigned nt4 = (c + 31) / 32; /* 16-byte reads of the longest chain */
            HRMT_UNROLL
            for (int s4 = 0; s4 < TS / 4 - 1; s4++) { /* chains of up to 64 */
                if ((unsigned)s4 >= nt4) break;
                const float4 q = *(const float4 *)(eT + hl * TS + 4 * s4);
                l = fadd(fadd(fadd(fadd(l, q.x), q.y), q.z), q.w);
            }
        }
        float ls[8];
        HRMT_UNROLL
        for (int k = 0; k < 8; k++) ls[k] = __shfl_sync(HRMT_FULL_MASK, l, (int)(half * 16 + k));
        const float inv = fdiv(1.0f, fold8(ls, cols));
        char *o = (char *)out + (live ? row : 0) * ldo * es;
        HRMT_UNROLL
        for (int a = 0; a < NA; a++) {
            if (!live || col(a, 0) >= c) continue;
            float r[N];
            HRMT_UNROLL
            for (int p = 0; p < N; p++) r[p] = fmul(v[a * N + p], inv);
            if (VEC) {
                uint32_t w[4];
                HRMT_UNROLL
                for (int q = 0; q < 4; q++)
                    w[q] = BF ? pack_bf16x2_arith(r[2 * q], r[2 * q + 1]) : fbits(r[q]);
                *(uint4 *)(o + (size_t)col(a, 0) * es) = make_uint4(w[0], w[1], w[2], w[3]);
            } else if (BF) {
                ((uint16_t *)o)[col(a, 0)] = bf16_bits_arith(r[0]);
            } else {
                ((float *)o)[col(a, 0)] = r[0];
            }
        }
        __syncwarp(); /* the next rows rewrite eT */
    }
}

template <int BF>
static void softmax_cuda(size_t rows, size_t cols, const void *x, size_t ldx, float scale,
                         void *out, size_t ldo) {
    if (rows == 0 || cols == 0) return;
    if (cols >= 8 && cols <= 8 * HRMT_SOFTMAX_SHORT_PER) {
        softmax_short_launch<BF, HRMT_SOFTMAX_SHORT_PER>(rows, cols, x, ldx, scale, out, ldo);
        return;
    }
    const size_t es = BF ? 2 : 4, row_bytes = cdiv(cols, 4) * 16;
    const bool vec = rows_aligned(x, ldx, es, 16) && rows_aligned(out, ldo, es, 16);
    if (cols <= HRMT_SOFTMAX_REG_COLS) {
        const unsigned blocks = row_blocks(rows, HRMT_SOFTMAX_WARPS * 2);
        /* Vectors need whole vectors: a row width that is a multiple of N. */
        if (vec && cols % VecN<BF>::N == 0)
            softmax_reg_kernel<BF, true>
                <<<blocks, HRMT_SOFTMAX_WARPS * 32, 0, cudaStreamPerThread>>>(rows, cols, x, ldx,
                                                                              scale, out, ldo);
        else
            softmax_reg_kernel<BF, false>
                <<<blocks, HRMT_SOFTMAX_WARPS * 32, 0, cudaStreamPerThread>>>(rows, cols, x, ldx,
                                                                              scale, out, ldo);
        return;
    }
    const unsigned nw = row_warps(row_bytes, HRMT_SOFTMAX_WARPS);
    const unsigned w_blk = nw ? nw : HRMT_SOFTMAX_WARPS;
    const dim3 grid(row_blocks(rows, w_blk)), block(w_blk * 32);
    const size_t sm = nw ? w_blk * row_bytes : 0;
    const cudaStream_t s = cudaStreamPerThread;
#define HRMT_SOFTMAX_GO(SM, V) \
    softmax_kernel<BF, SM, V><<<grid, block, sm, s>>>(rows, cols, x, ldx, scale, out, ldo)
    if (nw)
        vec ? HRMT_SOFTMAX_GO(true, true) : HRMT_SOFTMAX_GO(true, false);
    else
        vec ? HRMT_SOFTMAX_GO(false, true) : HRMT_SOFTMAX_GO(false, false);
#undef HRMT_SOFTMAX_GO
}

} // namespace

void hrmt_rowops_fill_cuda_softmax(hrmt_rowops *t) {
    t->softmax[HRMT_F32] = softmax_cuda<0>;
    t->softmax[HRMT_BF16] = softmax_cuda<1>;
}
