/* RoPE and embedding lookup, bits of cpu/rope_scalar.c and
 * cpu/rowops_scalar.c. No reductions (rowops_tile.cuh's mapping):
 *  - rope: one thread per (batch, token, head) and 8 pairs i (one pair when
 *    the rows are not 16-byte aligned), in place:
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
/* (batch, token, head) of flattened row r = (b*T + t)*heads + h; 32-bit
 * division when everything fits (64-bit division is a long routine). */
__device__ __forceinline__ void rope_row(size_t r, size_t heads, size_t tokens, size_t *b,
                                         size_t *t, size_t *h) {
    if ((r | heads | tokens) <= 0xffffffffu) {
        const uint32_t r32 = (uint32_t)r, bt = r32 / (uint32_t)heads;
        *h = r32 - bt * (uint32_t)heads;
        *b = bt / (uint32_t)tokens;
        *t = bt - (uint32_t)*b * (uint32_t)tokens;
        return;
    }
    const size_t bt = r / heads;
    *h = r - bt * heads;
    *b = bt / tokens;
    *t = bt - *b * tokens;
}

/* VEC: a chunk is 8 consecutive pairs i..i+8 (16-byte loads of x and of the
 * F32 tables; half % 8 == 0 and every row start aligned), else one pair. */
template <int BF, bool VEC>
struct RopeOp {
    char *x;
    const float *cs, *sn;
    size_t heads, half, ld_tok, ld_head, ld_cs, tokens, ld_b; /* batch: rows = b*T + t */
    __device__ void operator()(size_t r, size_t chunk) const {
        size_t b, t, h;
        rope_row(r, heads, tokens, &b, &t, &h);
        char *v = x + (b * ld_b + t * ld_tok + h * ld_head) * (BF ? 2 : 4);
        const float *c = cs + t * ld_cs, *s = sn + t * ld_cs;
        if (VEC) {
            const size_t i = chunk * HRMT_TILE_N;
            float x1[HRMT_TILE_N], x2[HRMT_TILE_N], c1[HRMT_TILE_N], c2[HRMT_TILE_N],
                s1[HRMT_TILE_N], s2[HRMT_TILE_N];
            ld8<BF>(v, i, x1);
            ld8<BF>(v, i + half, x2);
            ld8<0>(c, i, c1);
            ld8<0>(c, i + half, c2);
            ld8<0>(s, i, s1);
            ld8<0>(s, i + half, s2);
            float y1[HRMT_TILE_N], y2[HRMT_TILE_N];
            HRMT_UNROLL
            for (int k = 0; k < HRMT_TILE_N; k++) {
                y1[k] = fadd(fmul(x1[k], c1[k]), fmul(-x2[k], s1[k]));
                y2[k] = fadd(fmul(x2[k], c2[k]), fmul(x1[k], s2[k]));
            }
            st8<BF>(v, i, y1, 0);
            st8<BF>(v, i + half, y2, 0);
            return;
        }
        const size_t i = chunk;
        const float x1 = ld_el<BF>(v, i), x2 = ld_el<BF>(v, i + half);
        const float a = fmul(x1, c[i]), bq = fmul(-x2, s[i]);
        const float p = fmul(x2, c[i + half]), q = fmul(x1, s[i + half]);
        st_el<BF>(v, i, fadd(a, bq));
        st_el<BF>(v, i + half, fadd(p, q));
    }
};

template <int BF>
static void rope_launch(size_t batch, size_t tokens, size_t heads, size_t hd, void *x, size_t ld_b,
                        size_t ld_tok, size_t ld_head, const float *cos_t, const float *sin_t,
                        size_t ld_cs) {
    if (batch == 0 || tokens == 0 || heads == 0 || hd / 2 == 0) return;
    const size_t es = BF ? 2 : 4, half = hd / 2, rows = batch * tokens * heads;
    const bool vec = half % HRMT_TILE_N == 0 && rows_aligned(x, ld_head, es, 16) &&
                     rows_aligned(x, ld_tok, es, 16) && (batch == 1 || (ld_b * es) % 16 == 0) &&
                     rows_aligned(cos_t, ld_cs, 4, 16) && rows_aligned(sin_t, ld_cs, 4, 16);
    if (vec)
        tile_launch(RopeOp<BF, true>{(char *)x, cos_t, sin_t, heads, half, ld_tok, ld_head, ld_cs,
                                     tokens, ld_b},
                    rows, half / HRMT_TILE_N);
    else
        tile_launch(RopeOp<BF, false>{(char *)x, cos_t, sin_t, heads, half, ld_tok, ld_head, ld_cs,
                                      tokens, ld_b},
                    rows, half);
}

template <int BF>
static void rope_cuda(size_t tokens, size_t heads, size_t hd, void *x, size_t ld_tok,
                      size_t ld_head, const float *cos_t, const float *sin_t, size_t ld_cs) {
    rope_launch<BF>(1, tokens, heads, hd, x, 0, ld_tok, ld_head, cos_t, sin_t, ld_cs);
}

template <int BF>
static void rope_batched_cuda(size_t batch, size_t tokens, size_t heads, size_t hd, void *x,
                              size_t ld_b, size_t ld_tok, size_t ld_head, const float *cos_t,
                              const float *sin_t, size_t ld_cs) {
    rope_launch<BF>(batch, tokens, heads, hd, x, ld_b, ld_tok, ld_head, cos_t, sin_t, ld_cs);
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
    t->rope_batched[HRMT_F32] = rope_batched_cuda<0>;
    t->rope_batched[HRMT_BF16] = rope_batched_cuda<1>;
    t->embedding[HRMT_F32][HRMT_F32] = embedding_cuda<0, 0>;
    t->embedding[HRMT_F32][HRMT_BF16] = embedding_cuda<0, 1>;
    t->embedding[HRMT_BF16][HRMT_F32] = embedding_cuda<1, 0>;
    t->embedding[HRMT_BF16][HRMT_BF16] = embedding_cuda<1, 1>;
}
