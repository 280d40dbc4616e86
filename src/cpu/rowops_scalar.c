/* Scalar reference table: copy, conversions, add, embedding, memory streams,
 * and the fill function that assembles the whole scalar table. */
#include <string.h>

#include "core/backend.h"
#include "cpu/rowops_scalar.h"

static void copy__scalar(void *dst, const void *src, size_t nbytes) { memcpy(dst, src, nbytes); }

static void f32_bf16_cvt__scalar_u1(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = hrmt_f32_to_bf16(src[i]);
}

static void bf16_f32_cvt__scalar_u1(float *dst, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = hrmt_bf16_to_f32(src[i]);
}

static inline void add_rows(int bf, size_t rows, size_t cols, const void *a, size_t lda,
                            const void *b, size_t ldb, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const void *ar = hrmt_row_c(a, r, lda, es), *br = hrmt_row_c(b, r, ldb, es);
        void *o = hrmt_row(out, r, ldo, es);
        for (size_t j = 0; j < cols; j++)
            hrmt_st(o, j, hrmt_ld(ar, j, bf) + hrmt_ld(br, j, bf), bf);
    }
}

static void f32_add__scalar_u1(size_t rows, size_t cols, const void *a, size_t lda, const void *b,
                               size_t ldb, void *out, size_t ldo) {
    add_rows(0, rows, cols, a, lda, b, ldb, out, ldo);
}

static void bf16_add__scalar_u1(size_t rows, size_t cols, const void *a, size_t lda, const void *b,
                                size_t ldb, void *out, size_t ldo) {
    add_rows(1, rows, cols, a, lda, b, ldb, out, ldo);
}

static inline void embedding_rows(int tbf, int obf, size_t n, size_t cols, const void *table,
                                  size_t ldt, const int32_t *ids, void *out, size_t ldo) {
    const size_t tes = tbf ? 2 : 4, oes = obf ? 2 : 4;
    for (size_t i = 0; i < n; i++) {
        const void *src = hrmt_row_c(table, (size_t)ids[i], ldt, tes);
        void *dst = hrmt_row(out, i, ldo, oes);
        if (tbf == obf)
            memcpy(dst, src, cols * tes);
        else
            for (size_t j = 0; j < cols; j++) hrmt_st(dst, j, hrmt_ld(src, j, tbf), obf);
    }
}

#define HRMT_EMBEDDING_SCALAR(name, tbf, obf)                                                  \
    static void name(size_t n, size_t cols, const void *table, size_t ldt, const int32_t *ids, \
                     void *out, size_t ldo) {                                                  \
        embedding_rows(tbf, obf, n, cols, table, ldt, ids, out, ldo);                          \
    }
HRMT_EMBEDDING_SCALAR(f32_f32_embedding__scalar, 0, 0)
HRMT_EMBEDDING_SCALAR(f32_bf16_embedding__scalar, 0, 1)
HRMT_EMBEDDING_SCALAR(bf16_f32_embedding__scalar, 1, 0)
HRMT_EMBEDDING_SCALAR(bf16_bf16_embedding__scalar, 1, 1)

/* Eight independent 64-bit lanes so the compiler can vectorise the loads. */
static uint64_t stream_read__scalar(const void *p, size_t nbytes) {
    const uint64_t *q = p;
    uint64_t acc[8] = {0};
    size_t n = nbytes / 8, i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] ^= q[i + (size_t)k];
    for (; i < n; i++) acc[0] ^= q[i];
    uint64_t r = 0;
    for (int k = 0; k < 8; k++) r ^= acc[k];
    for (size_t b = n * 8; b < nbytes; b++) r ^= ((const uint8_t *)p)[b];
    return r;
}

static void stream_write__scalar(void *p, size_t nbytes, uint8_t v) { memset(p, v, nbytes); }

void hrmt_rowops_fill_scalar(hrmt_rowops *t) {
    memset(t, 0, sizeof *t);
    t->copy = copy__scalar;
    t->cvt_f32_bf16 = f32_bf16_cvt__scalar_u1;
    t->cvt_bf16_f32 = bf16_f32_cvt__scalar_u1;
    t->add[HRMT_F32] = f32_add__scalar_u1;
    t->add[HRMT_BF16] = bf16_add__scalar_u1;
    t->embedding[HRMT_F32][HRMT_F32] = f32_f32_embedding__scalar;
    t->embedding[HRMT_F32][HRMT_BF16] = f32_bf16_embedding__scalar;
    t->embedding[HRMT_BF16][HRMT_F32] = bf16_f32_embedding__scalar;
    t->embedding[HRMT_BF16][HRMT_BF16] = bf16_bf16_embedding__scalar;
    t->stream_read = stream_read__scalar;
    t->stream_write = stream_write__scalar;
    hrmt_norm_fill_scalar(t);
    hrmt_act_fill_scalar(t);
    hrmt_softmax_fill_scalar(t);
    hrmt_rope_fill_scalar(t);
    hrmt_engram_fill_scalar(t);
}
