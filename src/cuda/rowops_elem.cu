/* Element-wise row ops: copy, F32 <-> BF16 conversion, add, SwiGLU; bits of
 * cpu/rowops_scalar.c and cpu/act_scalar.c. No reductions: each output
 * element is the reference's expression of its own inputs, op for op
 * (rowops_tile.cuh maps threads to 8-element chunks, 16-byte accesses when
 * every row start is 16-byte aligned, element accesses otherwise).
 *  - add: out = a + b, rounded once to the storage dtype;
 *  - swiglu F32: g / (1 + exp(-g)) * u; BF16: e = bf16(exp(-g)),
 *    s = bf16(g / bf16(1 + e)), out = bf16(s * u); exp is expf_fma;
 *  - copy is hrmt_cuda_copy_bytes (runtime.cu). */
#include "cuda/cuda_backend.h"
#include "cuda/cuda_internal.cuh"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_tile.cuh"

using namespace hrmt_rowops_cuda;

namespace {

/* ---- copy, conversions -------------------------------------------------- */
static void copy_cuda(void *dst, const void *src, size_t nbytes) {
    /* A failure stays pending for the caller's launch check. */
    char err[8];
    (void)hrmt_cuda_copy_bytes(dst, src, nbytes, err, sizeof err);
}

/* dst (OBF) = src (IBF) converted, n contiguous elements (one row). */
template <int IBF, int OBF, bool VEC>
struct CvtOp {
    const void *src;
    void *dst;
    size_t n;
    __device__ void operator()(size_t, size_t c) const {
        if (VEC && c * HRMT_TILE_N + HRMT_TILE_N <= n) {
            float v[HRMT_TILE_N];
            ld8<IBF>(src, c * HRMT_TILE_N, v);
            st8<OBF>(dst, c * HRMT_TILE_N, v, 0);
            return;
        }
        const size_t j0 = VEC ? c * HRMT_TILE_N : c, j1 = VEC ? n : c + 1;
        for (size_t j = j0; j < j1; j++) st_el<OBF>(dst, j, ld_el<IBF>(src, j));
    }
};

template <int IBF, int OBF>
static void cvt_launch(void *dst, const void *src, size_t n) {
    if (((uintptr_t)dst | (uintptr_t)src) % 16 == 0)
        tile_launch(CvtOp<IBF, OBF, true>{src, dst, n}, 1, tile_chunks(n, true));
    else
        tile_launch(CvtOp<IBF, OBF, false>{src, dst, n}, 1, tile_chunks(n, false));
}

static void cvt_f32_bf16_cuda(uint16_t *dst, const float *src, size_t n) {
    cvt_launch<0, 1>(dst, src, n);
}
static void cvt_bf16_f32_cuda(float *dst, const uint16_t *src, size_t n) {
    cvt_launch<1, 0>(dst, src, n);
}

/* ---- add ----------------------------------------------------------------- */
template <int BF, bool VEC>
struct AddOp {
    const char *a, *b;
    char *o;
    size_t lda, ldb, ldo, cols;
    __device__ void operator()(size_t r, size_t c) const {
        constexpr size_t es = BF ? 2 : 4;
        const char *ar = a + r * lda * es, *br = b + r * ldb * es;
        char *orow = o + r * ldo * es;
        if (VEC && c * HRMT_TILE_N + HRMT_TILE_N <= cols) {
            float x[HRMT_TILE_N], y[HRMT_TILE_N];
            ld8<BF>(ar, c * HRMT_TILE_N, x);
            ld8<BF>(br, c * HRMT_TILE_N, y);
            HRMT_UNROLL
            for (int k = 0; k < HRMT_TILE_N; k++) x[k] = fadd(x[k], y[k]);
            st8<BF, true>(orow, c * HRMT_TILE_N, x, 0);
            return;
        }
        const size_t j0 = VEC ? c * HRMT_TILE_N : c, j1 = VEC ? cols : c + 1;
        for (size_t j = j0; j < j1; j++)
            st_el<BF>(orow, j, fadd(ld_el<BF>(ar, j), ld_el<BF>(br, j)));
    }
};

template <int BF>
static void add_cuda(size_t rows, size_t cols, const void *a, size_t lda, const void *b, size_t ldb,
                     void *out, size_t ldo) {
    if (rows == 0 || cols == 0) return;
    const size_t es = BF ? 2 : 4;
    bool vec = rows_aligned(a, lda, es, 16) && rows_aligned(b, ldb, es, 16) &&
               rows_aligned(out, ldo, es, 16);
    if (lda == cols && ldb == cols && ldo == cols) { /* one long row */
        vec = ((uintptr_t)a | (uintptr_t)b | (uintptr_t)out) % 16 == 0;
        cols *= rows;
        rows = 1;
    }
    const char *ac = (const char *)a, *bc = (const char *)b;
    if (vec)
        tile_launch(AddOp<BF, true>{ac, bc, (char *)out, lda, ldb, ldo, cols}, rows,
                    tile_chunks(cols, true));
    else
        tile_launch(AddOp<BF, false>{ac, bc, (char *)out, lda, ldb, ldo, cols}, rows,
                    tile_chunks(cols, false));
}

/* ---- SwiGLU -------------------------------------------------------------- */
/* Every value rounded here comes out of device arithmetic (a NaN input turns
 * into the canonical NaN in expf_fma's clamp), so the hardware conversion
 * gives f_to_bf16's bits: round_bf16_arith. */
/* BF16: s(g) = bf16(g / bf16(1 + bf16(exp(-g)))), the factor of u. */
__device__ __forceinline__ float silu_bf16(float g) {
    const float e = round_bf16_arith(expf_fma(-g));
    return round_bf16_arith(fdiv(g, round_bf16_arith(fadd(1.0f, e))));
}

template <int BF>
__device__ __forceinline__ float swiglu_el(float g, float u) {
    if (BF) return fmul(silu_bf16(g), u);
    return fmul(fdiv(g, fadd(1.0f, expf_fma(-g))), u);
}

template <int BF, bool VEC>
struct SwigluOp {
    const char *gu;
    char *o;
    size_t ldg, ldo, inter;
    int nt;
    __device__ void operator()(size_t r, size_t c) const {
        constexpr size_t es = BF ? 2 : 4;
        const char *g = gu + r * ldg * es, *u = g + inter * es;
        char *orow = o + r * ldo * es;
        if (VEC && c * HRMT_TILE_N + HRMT_TILE_N <= inter) {
            float x[HRMT_TILE_N], y[HRMT_TILE_N];
            ld8<BF>(g, c * HRMT_TILE_N, x);
            ld8<BF>(u, c * HRMT_TILE_N, y);
            HRMT_UNROLL
            for (int k = 0; k < HRMT_TILE_N; k++) x[k] = swiglu_el<BF>(x[k], y[k]);
            st8<BF, true>(orow, c * HRMT_TILE_N, x, nt);
            return;
        }
        const size_t j0 = VEC ? c * HRMT_TILE_N : c, j1 = VEC ? inter : c + 1;
        for (size_t j = j0; j < j1; j++)
            st_el<BF>(orow, j, swiglu_el<BF>(ld_el<BF>(g, j), ld_el<BF>(u, j)));
    }
};

template <int BF>
static void swiglu_cuda(size_t rows, size_t inter, const void *gu, size_t ldg, void *out,
                        size_t ldo, int nt) {
    if (rows == 0 || inter == 0) return;
    const size_t es = BF ? 2 : 4;
    const bool vec =
        rows_aligned(gu, ldg, es, 16) && (inter * es) % 16 == 0 && rows_aligned(out, ldo, es, 16);
    const char *g = (const char *)gu;
    if (vec)
        tile_launch(SwigluOp<BF, true>{g, (char *)out, ldg, ldo, inter, nt}, rows,
                    tile_chunks(inter, true));
    else
        tile_launch(SwigluOp<BF, false>{g, (char *)out, ldg, ldo, inter, nt}, rows,
                    tile_chunks(inter, false));
}

/* ---- BF16 SwiGLU through a table ------------------------------------------
 * s depends on the 16 bits of g alone, so a context computes s once for all
 * 65536 gates (silu_table, with silu_bf16 itself) and the op becomes a
 * lookup, one product and the storage rounding: the same bits as swiglu_el,
 * by construction, at memory speed instead of issuing ~40 instructions per
 * element (exp, an IEEE division, four roundings). */
__global__ void silu_table(uint16_t *t) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < HRMT_CUDA_SILU_ENTRIES)
        t[i] = (uint16_t)(fbits(silu_bf16(bf16_to_f((uint16_t)i))) >> 16);
}

template <bool VEC>
struct SwigluLutOp {
    const uint16_t *gu, *lut;
    uint16_t *o;
    size_t ldg, ldo, inter;
    int nt;
    __device__ void operator()(size_t r, size_t c) const {
        const uint16_t *g = gu + r * ldg, *u = g + inter;
        uint16_t *orow = o + r * ldo;
        if (VEC && c * HRMT_TILE_N + HRMT_TILE_N <= inter) {
            const uint4 gq = *(const uint4 *)(g + c * HRMT_TILE_N);
            const uint32_t w[4] = {gq.x, gq.y, gq.z, gq.w};
            float x[HRMT_TILE_N], y[HRMT_TILE_N];
            ld8<1>(u, c * HRMT_TILE_N, y);
            HRMT_UNROLL
            for (int k = 0; k < 4; k++) {
                x[2 * k] = fmul(bf16_to_f(__ldg(lut + (w[k] & 0xffffu))), y[2 * k]);
                x[2 * k + 1] = fmul(bf16_to_f(__ldg(lut + (w[k] >> 16))), y[2 * k + 1]);
            }
            st8<1, true>(orow, c * HRMT_TILE_N, x, nt);
            return;
        }
        const size_t j0 = VEC ? c * HRMT_TILE_N : c, j1 = VEC ? inter : c + 1;
        for (size_t j = j0; j < j1; j++)
            st_el<1>(orow, j, fmul(bf16_to_f(__ldg(lut + g[j])), ld_el<1>(u, j)));
    }
};

} // namespace

hrmt_status hrmt_cuda_silu_table_fill(uint16_t *table, char *err, size_t errlen) {
    silu_table<<<HRMT_CUDA_SILU_ENTRIES / 256, 256, 0, cudaStreamPerThread>>>(table);
    return hrmt_cuda_check("cuda swiglu table", err, errlen);
}

void hrmt_cuda_swiglu(const hrmt_cuda *cu, hrmt_dtype dt, size_t rows, size_t inter, const void *gu,
                      size_t ldg, void *out, size_t ldo, int nt) {
    if (dt != HRMT_BF16) {
        swiglu_cuda<0>(rows, inter, gu, ldg, out, ldo, nt);
        return;
    }
    if (rows == 0 || inter == 0) return;
    const uint16_t *table = cu->silu_bf16;
    const bool vec =
        rows_aligned(gu, ldg, 2, 16) && (inter * 2) % 16 == 0 && rows_aligned(out, ldo, 2, 16);
    const uint16_t *g = (const uint16_t *)gu;
    uint16_t *o = (uint16_t *)out;
    if (vec)
        tile_launch(SwigluLutOp<true>{g, table, o, ldg, ldo, inter, nt}, rows,
                    tile_chunks(inter, true));
    else
        tile_launch(SwigluLutOp<false>{g, table, o, ldg, ldo, inter, nt}, rows,
                    tile_chunks(inter, false));
}

void hrmt_rowops_fill_cuda_elem(hrmt_rowops *t) {
    t->copy = copy_cuda;
    t->cvt_f32_bf16 = cvt_f32_bf16_cuda;
    t->cvt_bf16_f32 = cvt_bf16_f32_cuda;
    t->add[HRMT_F32] = add_cuda<0>;
    t->add[HRMT_BF16] = add_cuda<1>;
    t->swiglu[HRMT_F32] = swiglu_cuda<0>;
    t->swiglu[HRMT_BF16] = swiglu_cuda<1>;
}
