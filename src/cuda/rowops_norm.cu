/* rmsnorm and residual + rmsnorm (SRAM and DRAM forms), bits of
 * cpu/norm_scalar.c.
 *
 * Mapping: one warp per row, 4 rows per 128-thread block (grid-stride over
 * rows). Order: the sum of squares is cpu/sumsq_order.h's, kept lane for lane
 * by rowops_sumsq.cuh (warp lane l = the reference's accumulator lane l);
 * h = f32(x) or bf16(x + r) is formed exactly as the reference; then
 * inv = 1 / sqrt(sum / cols + eps) and out = (h * inv) [* w], each op rounded
 * once. The scale pass is element-wise, so any thread may do any element.
 *
 * Forms: rows of up to 512 columns (all of HRM's) live in a warp's
 * registers, one global read of x (and r) in either form; the DRAM form
 * differs only by its non-temporal stores where asked. Longer rows: the
 * SRAM form (and rmsnorm) stages the row's h in shared memory in the
 * storage dtype (exact, as the reference parks h in `out`): one global
 * read of x (and r) with 16-byte loads where aligned. Rows longer than
 * HRMT_ROW_SMEM_MAX bytes (48 KiB: 12288 F32, 24576 BF16), and the DRAM
 * form, read x and r twice from global memory instead (reduction pass,
 * then scale pass); same bits. The register kernels' DRAM form keeps h
 * in registers too: the seed's DRAM kernel is the SRAM one's code, differing
 * only by its calling context. */
#include "cuda/cuda_backend.h"
#include "cuda/model_internal.cuh"
#include "cuda/pdl.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_sumsq.cuh"
#include "cuda/rowops_vec.cuh"

using namespace hrmt_rowops_cuda;

namespace {

#define HRMT_NORM_WARPS 4 /* rows per block at most */

/* h of element j: f32(x), or x + r rounded to the storage dtype. */
template <int BF, bool RES>
__device__ __forceinline__ float norm_h(const void *x, const void *r, size_t j) {
    if (!RES) return ld_el<BF>(x, j);
    return to_storage<BF>(fadd(ld_el<BF>(x, j), ld_el<BF>(r, j)));
}

/* out[j] for one element: (h * inv) * w[j] or h * inv. */
__device__ __forceinline__ float norm_scale(float h, float inv, const float *w, size_t j) {
    const float s = fmul(h, inv);
    return w ? fmul(s, w[j]) : s;
}

template <int BF, bool RES, bool SMEM, bool VEC>
__global__ void norm_kernel(size_t rows, size_t cols, const void *x, size_t ldx, const void *r,
                            size_t ldr, const float *w, float eps, void *out, size_t ldo, int nt) {
    constexpr size_t es = BF ? 2 : 4;
    constexpr int N = VecN<BF>::N;
    extern __shared__ uint4 norm_smem[];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const size_t nv = VEC ? cols / N : 0, tail = nv * N;
    char *buf = (char *)(norm_smem + (size_t)warp * cdiv(cols * es, 16));
    for (size_t row = (size_t)blockIdx.x * nw + warp; row < rows; row += (size_t)gridDim.x * nw) {
        const char *xr = (const char *)x + row * ldx * es;
        const char *rr = RES ? (const char *)r + row * ldr * es : nullptr;
        char *o = (char *)out + row * ldo * es;
        float sum;
        if (SMEM) {
            /* Stage h in the storage dtype: exact. */
            for (size_t v = lane; VEC && v < nv; v += 32) {
                float a[8], b[8];
                ld_vec<BF>(xr, v * N, a);
                if (RES) {
                    ld_vec<BF>(rr, v * N, b);
                    HRMT_UNROLL
                    for (int k = 0; k < N; k++) a[k] = to_storage<BF>(fadd(a[k], b[k]));
                }
                *(uint4 *)(buf + v * 16) = pack_vec<BF>(a);
            }
            for (size_t j = tail + lane; j < cols; j += 32)
                st_el<BF>(buf, j, norm_h<BF, RES>(xr, rr, j));
            __syncwarp();
            sum = sumsq_warp(cols, lane, [&](size_t j) {
                const float h = ld_el<BF>(buf, j);
                return fmul(h, h);
            });
        } else {
            sum = sumsq_warp(cols, lane, [&](size_t j) {
                const float h = norm_h<BF, RES>(xr, rr, j);
                return fmul(h, h);
            });
        }
        const float inv = fdiv(1.0f, fsqrt(fadd(fdiv(sum, size_to_f(cols)), eps)));
        for (size_t v = lane; VEC && v < nv; v += 32) {
            float a[8], b[8];
            if (SMEM) {
                ld_vec<BF>(buf, v * N, a);
            } else {
                ld_vec<BF>(xr, v * N, a);
                if (RES) {
                    ld_vec<BF>(rr, v * N, b);
                    HRMT_UNROLL
                    for (int k = 0; k < N; k++) a[k] = to_storage<BF>(fadd(a[k], b[k]));
                }
            }
            if (w) {
                ld_w<BF>(w, v * N, b);
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = fmul(fmul(a[k], inv), b[k]);
            } else {
                HRMT_UNROLL
                for (int k = 0; k < N; k++) a[k] = fmul(a[k], inv);
            }
            st_vec<BF>(o, v * N, a, nt);
        }
        for (size_t j = tail + lane; j < cols; j += 32) {
            const float h = SMEM ? ld_el<BF>(buf, j) : norm_h<BF, RES>(xr, rr, j);
            st_el<BF>(o, j, norm_scale(h, inv, w, j));
        }
        if (SMEM) __syncwarp(); /* the next row reuses buf */
    }
}

/* Rows of G whole warp-groups (cols = 32 G, G <= 16; HRM's hidden 512 is
 * G = 16): one warp per row, the row in registers, no shared memory. Lane l
 * holds elements g * 32 + l (coalesced 2- or 4-byte accesses), which is the
 * reference's accumulator lane l; with G <= 16 groups that lane's cascade
 * (sumsq_order.h: levels of 2^4 groups) never mixes anything but +0 into the
 * chain, so its sum is the plain sequential sum over g, then the same finish
 * as sumsq_warp (quarters, lanes 0..7 folded from 0; every lane folds the
 * broadcast partials itself, same bits). h stays in registers across the
 * reduction and the scale (on-chip, like the staging buffer), in either
 * form. */
#define HRMT_NORM_REG_G 16 /* groups of 32 a lane keeps in registers at most */

/* DESC: the rows last first (HRMT_CUDA_NORM_DESCEND): row i is rows - 1 - i,
 * so that the kernel starts on the rows the GEMM before wrote last, the
 * ones most likely still in L2. A row's arithmetic is its own: same bits. */
template <int BF, bool RES, bool DESC = false>
__global__ void __launch_bounds__(HRMT_NORM_WARPS * 32)
    norm_reg_kernel(size_t rows, unsigned G, const void *x, size_t ldx, const void *r, size_t ldr,
                    const float *w, float eps, void *out, size_t ldo, int nt) {
    constexpr size_t es = BF ? 2 : 4;
    constexpr int GM = HRMT_NORM_REG_G;
    pdl_wait(); /* launched that way by the model's step (pdl.cuh) */
    pdl_trigger();
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const float cols_f = (float)(32 * G);
    /* Loads keep the raw bits; the values are used after the loop, so the
     * loads' latencies overlap. */
    auto ld_raw = [&](const char *p, int g) -> uint32_t {
        return BF ? ((const uint16_t *)p)[g * 32] : ((const uint32_t *)p)[g * 32];
    };
    auto val = [&](uint32_t u) { return BF ? bf16_to_f((uint16_t)u) : ffrom(u); };
    for (size_t i = (size_t)blockIdx.x * HRMT_NORM_WARPS + warp; i < rows;
         i += (size_t)gridDim.x * HRMT_NORM_WARPS) {
        const size_t row = DESC ? rows - 1 - i : i;
        const char *xr = (const char *)x + (row * ldx + lane) * es;
        const char *rr = RES ? (const char *)r + (row * ldr + lane) * es : nullptr;
        /* h[g] = f32(x) or bf16(x + r), all loads issued before any use. */
        float h[GM];
        auto load_h = [&]() {
            uint32_t ux[GM], ur[GM];
            HRMT_UNROLL
            for (int g = 0; g < GM; g++) {
                if ((unsigned)g >= G) break;
                ux[g] = ld_raw(xr, g);
                if (RES) ur[g] = ld_raw(rr, g);
            }
            HRMT_UNROLL
            for (int g = 0; g < GM; g++) {
                if ((unsigned)g >= G) break;
                h[g] = val(ux[g]);
                if (RES) {
                    const float t = fadd(h[g], val(ur[g]));
                    h[g] = BF ? round_bf16_arith(t) : t;
                }
            }
        };
        load_h();
        float a = 0.0f;
        HRMT_UNROLL
        for (int g = 0; g < GM; g++) {
            if ((unsigned)g >= G) break;
            a = fadd(a, fmul(h[g], h[g]));
        }
        const float inv = rmsnorm_reg_inv(a, cols_f, eps);
        char *o = (char *)out + (row * ldo + lane) * es;
        HRMT_UNROLL
        for (int g = 0; g < GM; g++) {
            if ((unsigned)g >= G) break;
            float v = fmul(h[g], inv);
            if (w) v = fmul(v, w[g * 32 + lane]);
            if (BF) {
                uint16_t *d = (uint16_t *)o + g * 32;
                if (nt)
                    __stcs(d, bf16_bits_arith(v));
                else
                    *d = bf16_bits_arith(v);
            } else {
                float *d = (float *)o + g * 32;
                if (nt)
                    __stcs(d, v);
                else
                    *d = v;
            }
        }
    }
}

/* Residual + RMSNorm on BF16 rows of 256 C columns (C = 1 or 2; HRM's
 * hidden 512 is C = 2) with 16-byte accesses: the model's norm between
 * blocks (HRMT_CUDA_NORM_VEC). norm_reg_kernel's lane l reads elements
 * g * 32 + l, 2-byte accesses (~630 instructions a row at 512 columns);
 * here lane l reads chunks l + 32 c of 8 elements, forms h = bf16(x + r)
 * on pairs, parks h in its warp's 512 C bytes of shared memory and reads
 * back elements g * 32 + l for the sum of squares, so each lane runs
 * reference lane l's chain in g order, as norm_reg_kernel does; the finish
 * is the same rmsnorm_reg_inv and each output bf16(h inv) is rounded by
 * the same conversion. Same bits, every operation the same, in a
 * different lane. */
/* CS: x and r loaded as streaming data (ld.global.cs: evict-first in L2;
 * HRMT_CUDA_NORM_STREAM): the block's norms read each of them for the last
 * time, so they should leave the L2 before the output the next GEMM reads. */
template <int C, bool DESC, bool CS>
__global__ void __launch_bounds__(HRMT_NORM_WARPS * 32)
    norm_vec_kernel(size_t rows, const void *x, size_t ldx, const void *r, size_t ldr, float eps,
                    void *out, size_t ldo) {
    constexpr int G = 8 * C; /* groups of 32 elements */
    __shared__ uint4 park[HRMT_NORM_WARPS][32 * C];
    pdl_wait(); /* launched that way by the model's step (pdl.cuh) */
    pdl_trigger();
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (size_t i = (size_t)blockIdx.x * HRMT_NORM_WARPS + warp; i < rows;
         i += (size_t)gridDim.x * HRMT_NORM_WARPS) {
        const size_t row = DESC ? rows - 1 - i : i; /* norm_reg_kernel's DESC */
        const uint4 *xr = (const uint4 *)((const uint16_t *)x + row * ldx);
        const uint4 *rr = (const uint4 *)((const uint16_t *)r + row * ldr);
        uint4 h[C];
        auto load_h = [&]() {
            uint4 a[C], b[C];
            HRMT_UNROLL
            for (int c = 0; c < C; c++) {
                a[c] = CS ? __ldcs(xr + lane + 32 * c) : xr[lane + 32 * c];
                b[c] = CS ? __ldcs(rr + lane + 32 * c) : rr[lane + 32 * c];
            }
            HRMT_UNROLL
            for (int c = 0; c < C; c++)
                h[c] =
                    make_uint4(add_bf16x2_arith(a[c].x, b[c].x), add_bf16x2_arith(a[c].y, b[c].y),
                               add_bf16x2_arith(a[c].z, b[c].z), add_bf16x2_arith(a[c].w, b[c].w));
        };
        load_h();
        HRMT_UNROLL
        for (int c = 0; c < C; c++) park[warp][lane + 32 * c] = h[c];
        __syncwarp();
        const uint16_t *hp = (const uint16_t *)park[warp];
        float a = 0.0f;
        HRMT_UNROLL
        for (int g = 0; g < G; g++) {
            const float v = bf16_to_f(hp[g * 32 + lane]);
            a = fadd(a, fmul(v, v));
        }
        const float inv = rmsnorm_reg_inv(a, (float)(256 * C), eps);
        uint4 *o = (uint4 *)((uint16_t *)out + row * ldo);
        auto scale = [&](uint32_t p) {
            return pack_bf16x2_arith(fmul(bf16_to_f((uint16_t)p), inv),
                                     fmul(bf16_to_f((uint16_t)(p >> 16)), inv));
        };
        HRMT_UNROLL
        for (int c = 0; c < C; c++)
            o[lane + 32 * c] =
                make_uint4(scale(h[c].x), scale(h[c].y), scale(h[c].z), scale(h[c].w));
        __syncwarp(); /* the next row reuses the park */
    }
}

/* The 16-byte form's columns (256 C), 0 where it does not apply: BF16, and
 * every row start 16-byte aligned. */
static int norm_vec_cols(size_t cols, const void *x, size_t ldx, const void *r, size_t ldr,
                         const void *out, size_t ldo) {
    if (cols != 256 && cols != 512) return 0;
    if (!rows_aligned(x, ldx, 2, 16) || !rows_aligned(r, ldr, 2, 16) ||
        !rows_aligned(out, ldo, 2, 16))
        return 0;
    return (int)cols;
}

/* Picks the instantiation: smem staging when asked and the rows fit, 16-byte
 * vectors when every row start (and w) is 16-byte aligned. */
template <int BF, bool RES>
static void norm_launch(size_t rows, size_t cols, const void *x, size_t ldx, const void *r,
                        size_t ldr, const float *w, float eps, void *out, size_t ldo, int nt,
                        bool want_smem) {
    if (rows == 0 || cols == 0) return;
    if (cols % 32 == 0 && cols <= 32 * HRMT_NORM_REG_G) {
        const unsigned blocks = row_blocks(rows, HRMT_NORM_WARPS), G = (unsigned)(cols / 32);
        norm_reg_kernel<BF, RES><<<blocks, HRMT_NORM_WARPS * 32, 0, cudaStreamPerThread>>>(
            rows, G, x, ldx, r, ldr, w, eps, out, ldo, nt);
        return;
    }
    const size_t es = BF ? 2 : 4;
    const unsigned nw = want_smem ? row_warps(cdiv(cols * es, 16) * 16, HRMT_NORM_WARPS) : 0;
    const bool use_smem = nw != 0;
    const bool vec = rows_aligned(x, ldx, es, 16) && (!RES || rows_aligned(r, ldr, es, 16)) &&
                     rows_aligned(out, ldo, es, 16) && (!w || (uintptr_t)w % 16 == 0);
    const unsigned w_blk = use_smem ? nw : HRMT_NORM_WARPS;
    const dim3 grid(row_blocks(rows, w_blk)), block(w_blk * 32);
    const cudaStream_t s = cudaStreamPerThread;
    const size_t sm = use_smem ? w_blk * cdiv(cols * es, 16) * 16 : 0;
#define HRMT_NORM_GO(SM, V)     \
    norm_kernel<BF, RES, SM, V> \
        <<<grid, block, sm, s>>>(rows, cols, x, ldx, r, ldr, w, eps, out, ldo, nt)
    if (use_smem)
        vec ? HRMT_NORM_GO(true, true) : HRMT_NORM_GO(true, false);
    else
        vec ? HRMT_NORM_GO(false, true) : HRMT_NORM_GO(false, false);
#undef HRMT_NORM_GO
}

template <int BF>
static void rmsnorm_cuda(size_t rows, size_t cols, const void *x, size_t ldx, const float *w,
                         float eps, void *out, size_t ldo) {
    norm_launch<BF, false>(rows, cols, x, ldx, nullptr, 0, w, eps, out, ldo, 0, true);
}

template <int BF>
static void resid_sram_cuda(size_t rows, size_t cols, const void *x, size_t ldx, const void *r,
                            size_t ldr, float eps, void *out, size_t ldo) {
    norm_launch<BF, true>(rows, cols, x, ldx, r, ldr, nullptr, eps, out, ldo, 0, true);
}

template <int BF>
static void resid_dram_cuda(size_t rows, size_t cols, const void *x, size_t ldx, const void *r,
                            size_t ldr, float eps, void *out, size_t ldo, int nt) {
    norm_launch<BF, true>(rows, cols, x, ldx, r, ldr, nullptr, eps, out, ldo, nt, false);
}

} // namespace

int hrmt_cuda_residual_rmsnorm_pdl_applies(hrmt_dtype dt, size_t cols) {
    return dt == HRMT_BF16 && cols % 32 == 0 && cols <= 32 * HRMT_NORM_REG_G;
}

int hrmt_cuda_residual_rmsnorm_pdl(hrmt_dtype dt, size_t rows, size_t cols, const void *x,
                                   size_t ldx, const void *r, size_t ldr, float eps, void *out,
                                   size_t ldo, int pdl, int vec, int desc, int stream,
                                   cudaStream_t st) {
    if (rows == 0 || !hrmt_cuda_residual_rmsnorm_pdl_applies(dt, cols)) return 0;
    const unsigned blocks = row_blocks(rows, HRMT_NORM_WARPS), G = (unsigned)(cols / 32);
    const int vcols = vec ? norm_vec_cols(cols, x, ldx, r, ldr, out, ldo) : 0;
    if (vcols) {
        using kv_t = decltype(&norm_vec_kernel<1, false, false>);
        static const kv_t kvs[2][2][2] = {
            {{norm_vec_kernel<1, false, false>, norm_vec_kernel<1, false, true>},
             {norm_vec_kernel<1, true, false>, norm_vec_kernel<1, true, true>}},
            {{norm_vec_kernel<2, false, false>, norm_vec_kernel<2, false, true>},
             {norm_vec_kernel<2, true, false>, norm_vec_kernel<2, true, true>}}};
        const kv_t kv = kvs[vcols == 512][desc != 0][stream != 0];
        (void)pdl_launch(kv, dim3(blocks), dim3(HRMT_NORM_WARPS * 32), 0, st, pdl, rows, x, ldx, r,
                         ldr, eps, out, ldo);
        return 1;
    }
    auto kern = desc ? norm_reg_kernel<1, true, true> : norm_reg_kernel<1, true, false>;
    const float *w = nullptr;
    const int nt = 0;
    (void)pdl_launch(kern, dim3(blocks), dim3(HRMT_NORM_WARPS * 32), 0, st, pdl, rows, G, x, ldx, r,
                     ldr, w, eps, out, ldo, nt);
    return 1;
}

void hrmt_rowops_fill_cuda_norm(hrmt_rowops *t) {
    t->rmsnorm[HRMT_F32] = rmsnorm_cuda<0>;
    t->rmsnorm[HRMT_BF16] = rmsnorm_cuda<1>;
    t->residual_rmsnorm_sram[HRMT_F32] = resid_sram_cuda<0>;
    t->residual_rmsnorm_sram[HRMT_BF16] = resid_sram_cuda<1>;
    t->residual_rmsnorm_dram[HRMT_F32] = resid_dram_cuda<0>;
    t->residual_rmsnorm_dram[HRMT_BF16] = resid_dram_cuda<1>;
}
