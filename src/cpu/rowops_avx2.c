/* AVX2 table: conversions, add, embedding, memory streams, and the fill
 * function that assembles the table (norm/act/rope/engram files add theirs). */
#include <string.h>

#include "core/backend.h"
#include "cpu/simd_avx2.h"

static void copy__avx2(void *dst, const void *src, size_t nbytes) { memcpy(dst, src, nbytes); }

static void f32_bf16_cvt__avx2_u32(uint16_t *dst, const float *src, size_t n) {
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (size_t k = 0; k < 32; k += 8)
            _mm_storeu_si128((__m128i *)(dst + i + k),
                             hrmt8_cvt_bf16(_mm256_loadu_ps(src + i + k)));
    for (; i < n; i += 8) {
        const size_t c = n - i >= 8 ? 8 : n - i;
        hrmt8_st(dst, i, hrmt8_ld(src, i, 0, c), 1, c);
    }
}

static void bf16_f32_cvt__avx2_u32(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (size_t k = 0; k < 32; k += 8)
            _mm256_storeu_ps(dst + i + k, hrmt8_ld(src, i + k, 1, 8));
    for (; i < n; i += 8) {
        const size_t c = n - i >= 8 ? 8 : n - i;
        hrmt8_st(dst, i, hrmt8_ld(src, i, 1, c), 0, c);
    }
}

HRMT_AI void add_rows(int bf, size_t rows, size_t cols, const void *a, size_t lda, const void *b,
                      size_t ldb, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const char *ar = (const char *)a + r * lda * es, *br = (const char *)b + r * ldb * es;
        char *o = (char *)out + r * ldo * es;
        HRMT_AVX2_STORE_ROW(cols, o, bf, 0,
                            _mm256_add_ps(hrmt8_ld(ar, j_, bf, n_), hrmt8_ld(br, j_, bf, n_)));
    }
}

static void f32_add__avx2_u8(size_t rows, size_t cols, const void *a, size_t lda, const void *b,
                             size_t ldb, void *out, size_t ldo) {
    add_rows(0, rows, cols, a, lda, b, ldb, out, ldo);
}
static void bf16_add__avx2_u8(size_t rows, size_t cols, const void *a, size_t lda, const void *b,
                              size_t ldb, void *out, size_t ldo) {
    add_rows(1, rows, cols, a, lda, b, ldb, out, ldo);
}

HRMT_AI void embedding_rows(int tbf, int obf, size_t n, size_t cols, const void *table, size_t ldt,
                            const int32_t *ids, void *out, size_t ldo) {
    const size_t tes = tbf ? 2 : 4, oes = obf ? 2 : 4;
    for (size_t i = 0; i < n; i++) {
        const char *src = (const char *)table + (size_t)ids[i] * ldt * tes;
        char *dst = (char *)out + i * ldo * oes;
        if (tbf == obf)
            memcpy(dst, src, cols * tes);
        else if (tbf)
            bf16_f32_cvt__avx2_u32((float *)dst, (const uint16_t *)src, cols);
        else
            f32_bf16_cvt__avx2_u32((uint16_t *)dst, (const float *)src, cols);
    }
}

#define EMB(name, tbf, obf)                                                                    \
    static void name(size_t n, size_t cols, const void *table, size_t ldt, const int32_t *ids, \
                     void *out, size_t ldo) {                                                  \
        embedding_rows(tbf, obf, n, cols, table, ldt, ids, out, ldo);                          \
    }
EMB(f32_f32_embedding__avx2, 0, 0)
EMB(bf16_bf16_embedding__avx2, 1, 1)
EMB(bf16_f32_embedding__avx2, 1, 0)
EMB(f32_bf16_embedding__avx2, 0, 1)

static uint64_t stream_read__avx2_u128(const void *p, size_t nbytes) {
    const char *c = p;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 128 <= nbytes; i += 128) {
        a0 = _mm256_xor_si256(a0, _mm256_loadu_si256((const __m256i *)(c + i)));
        a1 = _mm256_xor_si256(a1, _mm256_loadu_si256((const __m256i *)(c + i + 32)));
        a2 = _mm256_xor_si256(a2, _mm256_loadu_si256((const __m256i *)(c + i + 64)));
        a3 = _mm256_xor_si256(a3, _mm256_loadu_si256((const __m256i *)(c + i + 96)));
    }
    const __m256i x = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    uint64_t r = (uint64_t)_mm256_extract_epi64(x, 0) ^ (uint64_t)_mm256_extract_epi64(x, 1) ^
                 (uint64_t)_mm256_extract_epi64(x, 2) ^ (uint64_t)_mm256_extract_epi64(x, 3);
    for (; i < nbytes; i++) r ^= (uint8_t)c[i];
    return r;
}

static void stream_write__avx2_u128(void *p, size_t nbytes, uint8_t v) {
    char *c = p;
    const __m256i x = _mm256_set1_epi8((char)v);
    size_t i = 0;
    for (; i + 128 <= nbytes; i += 128) {
        _mm256_storeu_si256((__m256i *)(c + i), x);
        _mm256_storeu_si256((__m256i *)(c + i + 32), x);
        _mm256_storeu_si256((__m256i *)(c + i + 64), x);
        _mm256_storeu_si256((__m256i *)(c + i + 96), x);
    }
    for (; i < nbytes; i++) c[i] = (char)v;
}

void hrmt_rowops_fill_avx2(hrmt_rowops *t) {
    hrmt_rowops_fill_scalar(t); /* every entry defined, then overridden */
    t->copy = copy__avx2;
    t->cvt_f32_bf16 = f32_bf16_cvt__avx2_u32;
    t->cvt_bf16_f32 = bf16_f32_cvt__avx2_u32;
    t->add[HRMT_F32] = f32_add__avx2_u8;
    t->add[HRMT_BF16] = bf16_add__avx2_u8;
    t->embedding[HRMT_F32][HRMT_F32] = f32_f32_embedding__avx2;
    t->embedding[HRMT_BF16][HRMT_BF16] = bf16_bf16_embedding__avx2;
    t->embedding[HRMT_BF16][HRMT_F32] = bf16_f32_embedding__avx2;
    t->embedding[HRMT_F32][HRMT_BF16] = f32_bf16_embedding__avx2;
    t->stream_read = stream_read__avx2_u128;
    t->stream_write = stream_write__avx2_u128;
    hrmt_norm_fill_avx2(t);
    hrmt_act_fill_avx2(t);
    hrmt_softmax_fill_avx2(t);
    hrmt_rope_fill_avx2(t);
    hrmt_engram_fill_avx2(t);
}
