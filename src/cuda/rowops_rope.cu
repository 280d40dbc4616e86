/* RoPE and embedding lookup, bits of cpu/rope_scalar.c and
 * cpu/rowops_scalar.c. No reductions (rowops_tile.cuh's mapping):
 *  - rope: one thread per (token, head, i < head_dim / 2) pair, in place:
 *    y_i = x1 c_i + (-x2) s_i, y_{i+half} = x2 c_{i+half} + x1 s_{i+half},
 *    each product and the sum rounded once (an odd last element is left
 *    alone, as the reference);
 *  - embedding: row i = table[ids[i]]; same dtype is a raw copy (NaN bit
 *    patterns kept, as memcpy), F32 -> BF16 rounds to nearest even. */
#include "cuda/cuda_backend.h"
#include "cuda/rowops_common.cuh"
#include "cuda/rowops_tile.cuh"

using namespace hrmt_rowops_cuda;

namespace {

/* ---- RoPE ---------------------------------------------------------------- */
template <int BF>
struct RopeOp {
    char *x;
    const float *cs, *sn;
    size_t heads, half, ld_tok, ld_head, ld_cs;
    __device__ void operator()(size_t r, size_t i) const {
        const size_t t = r / heads, h = r - t * heads;
        char *v = x + (t * ld_tok + h * ld_head) * (BF ? 2 : 4);
        const float *c = cs + t * ld_cs, *s = sn + t * ld_cs;
        const float x1 = ld_el<BF>(v, i), x2 = ld_el<BF>(v, i + half);
        const float a = fmul(x1, c[i]), b = fmul(-x2, s[i]);
        const float p = fmul(x2, c[i + half]), q = fmul(x1, s[i + half]);
        st_el<BF>(v, i, fadd(a, b));
        st_el<BF>(v, i + half, fadd(p, q));
    }
};

template <int BF>
static void rope_cuda(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                      size_t ld_head, const float *cos_t, const float *sin_t, size_t ld_cs) {
    if (tokens == 0 || heads == 0 || hd / 2 == 0) return;
    tile_launch(RopeOp<BF>{(char *)x, cos_t, sin_t, heads, hd / 2, ld_tok, ld_head, ld_cs},
                tokens * heads, hd / 2);
}

/* ---- embedding ----------------------------------------------------------- */
/* Same dtype: raw bytes, 16 at a time when aligned, else one element. */
template <int ES, bool VEC>
struct EmbedCopyOp {
    const char *table;
    const int32_t *ids;
    char *out;
    size_t cols, ldt, ldo;
    __device__ void operator()(size_t i, size_t c) const {
        const char *src = table + (size_t)ids[i] * ldt * ES;
        char *dst = out + i * ldo * ES;
        const size_t nbytes = cols * ES;
        if (VEC && c * 16 + 16 <= nbytes) {
            *(uint4 *)(dst + c * 16) = *(const uint4 *)(src + c * 16);
            return;
        }
        const size_t j0 = VEC ? c * 16 / ES : c, j1 = VEC ? cols : c + 1;
        for (size_t j = j0; j < j1; j++) {
            if (ES == 2)
                ((uint16_t *)dst)[j] = ((const uint16_t *)src)[j];
            else
                ((uint32_t *)dst)[j] = ((const uint32_t *)src)[j];
        }
    }
};

/* Different dtypes: convert through F32. */
template <int TBF, int OBF, bool VEC>
struct EmbedCvtOp {
    const char *table;
    const int32_t *ids;
    char *out;
    size_t cols, ldt, ldo;
    __device__ void operator()(size_t i, size_t c) const {
        const char *src = table + (size_t)ids[i] * ldt * (TBF ? 2 : 4);
        char *dst = out + i * ldo * (OBF ? 2 : 4);
        if (VEC && c * HRMT_TILE_N + HRMT_TILE_N <= cols) {
            float v[HRMT_TILE_N];
            ld8<TBF>(src, c * HRMT_TILE_N, v);
            st8<OBF>(dst, c * HRMT_TILE_N, v, 0);
            return;
        }
        const size_t j0 = VEC ? c * HRMT_TILE_N : c, j1 = VEC ? cols : c + 1;
        for (size_t j = j0; j < j1; j++) st_el<OBF>(dst, j, ld_el<TBF>(src, j));
    }
};

template <int TBF, int OBF>
static void embedding_cuda(size_t n, size_t cols, const void *table, size_t ldt, const int32_t *ids,
                           void *out, size_t ldo) {
    if (n == 0 || cols == 0) return;
    const size_t tes = TBF ? 2 : 4, oes = OBF ? 2 : 4;
    const bool vec = rows_aligned(table, ldt, tes, 16) && rows_aligned(out, ldo, oes, 16);
    const char *t = (const char *)table;
    char *o = (char *)out;
    if (TBF == OBF) {
        if (vec)
            tile_launch(EmbedCopyOp < TBF ? 2 : 4, true > {t, ids, o, cols, ldt, ldo}, n,
                        cdiv(cols * tes, 16));
        else
            tile_launch(EmbedCopyOp < TBF ? 2 : 4, false > {t, ids, o, cols, ldt, ldo}, n, cols);
    } else if (vec) {
        tile_launch(EmbedCvtOp<TBF, OBF, true>{t, ids, o, cols, ldt, ldo}, n,
                    tile_chunks(cols, true));
    } else {
        tile_launch(EmbedCvtOp<TBF, OBF, false>{t, ids, o, cols, ldt, ldo}, n,
                    tile_chunks(cols, false));
    }
}

} // namespace

void hrmt_rowops_fill_cuda_rope(hrmt_rowops *t) {
    t->rope[HRMT_F32] = rope_cuda<0>;
    t->rope[HRMT_BF16] = rope_cuda<1>;
    t->embedding[HRMT_F32][HRMT_F32] = embedding_cuda<0, 0>;
    t->embedding[HRMT_F32][HRMT_BF16] = embedding_cuda<0, 1>;
    t->embedding[HRMT_BF16][HRMT_F32] = embedding_cuda<1, 0>;
    t->embedding[HRMT_BF16][HRMT_BF16] = embedding_cuda<1, 1>;
}
