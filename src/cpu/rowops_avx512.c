/* AVX-512 table: conversions, add, embedding, memory streams, and the fill
 * function that assembles the table (norm/act/rope/engram files add theirs).
 * BF16 stores use vcvtneps2bf16 only when the CPU reports AVX512-BF16. */
#include <string.h>

#include "core/backend.h"
#include "core/cpu_features.h"
#include "cpu/simd_avx512.h"

static void copy__avx512(void *dst, const void *src, size_t nbytes) { memcpy(dst, src, nbytes); }

HRMT_AI void cvt_f32_bf16(uint16_t *dst, const float *src, size_t n, int hw) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512 a = _mm512_loadu_ps(src + i), b = _mm512_loadu_ps(src + i + 16);
        const __m512 c = _mm512_loadu_ps(src + i + 32), d = _mm512_loadu_ps(src + i + 48);
        _mm256_storeu_si256((__m256i *)(dst + i), hrmt_cvt_bf16(a, hw));
        _mm256_storeu_si256((__m256i *)(dst + i + 16), hrmt_cvt_bf16(b, hw));
        _mm256_storeu_si256((__m256i *)(dst + i + 32), hrmt_cvt_bf16(c, hw));
        _mm256_storeu_si256((__m256i *)(dst + i + 48), hrmt_cvt_bf16(d, hw));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : hrmt_m16(n - i);
        _mm256_mask_storeu_epi16(dst + i, m, hrmt_cvt_bf16(_mm512_maskz_loadu_ps(m, src + i), hw));
    }
}

static void f32_bf16_cvt__avx512_u64(uint16_t *dst, const float *src, size_t n) {
    cvt_f32_bf16(dst, src, n, 0);
}
static void f32_bf16_cvt__avx512bf16_u64(uint16_t *dst, const float *src, size_t n) {
    cvt_f32_bf16(dst, src, n, 1);
}

static void bf16_f32_cvt__avx512_u64(float *dst, const uint16_t *src, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64)
        for (size_t k = 0; k < 64; k += 16) _mm512_storeu_ps(dst + i + k, hrmt_ld16(src, i + k, 1));
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : hrmt_m16(n - i);
        _mm512_mask_storeu_ps(dst + i, m, hrmt_ld16m(src, i, 1, m));
    }
}

HRMT_AI void add_rows(int bf, int hw, size_t rows, size_t cols, const void *a, size_t lda,
                      const void *b, size_t ldb, void *out, size_t ldo) {
    const size_t es = bf ? 2 : 4;
    for (size_t r = 0; r < rows; r++) {
        const char *ar = (const char *)a + r * lda * es, *br = (const char *)b + r * ldb * es;
        char *o = (char *)out + r * ldo * es;
        HRMT_AVX512_STORE_ROW(
            cols, o, bf, hw, 0,
            _mm512_add_ps(hrmt_ld16m(ar, j_, bf, m_), hrmt_ld16m(br, j_, bf, m_)));
    }
}

#define ADD(name, bf, hw)                                                                \
    static void name(size_t rows, size_t cols, const void *a, size_t lda, const void *b, \
                     size_t ldb, void *out, size_t ldo) {                                \
        add_rows(bf, hw, rows, cols, a, lda, b, ldb, out, ldo);                          \
    }
ADD(f32_add__avx512_u16, 0, 0)
ADD(bf16_add__avx512_u16, 1, 0)
ADD(bf16_add__avx512bf16_u16, 1, 1)

/* Gathers rows; a dtype change goes through the conversion kernels. */
HRMT_AI void embedding_rows(int tbf, int obf, int hw, size_t n, size_t cols, const void *table,
                            size_t ldt, const int32_t *ids, void *out, size_t ldo) {
    const size_t tes = tbf ? 2 : 4, oes = obf ? 2 : 4;
    for (size_t i = 0; i < n; i++) {
        const char *src = (const char *)table + (size_t)ids[i] * ldt * tes;
        char *dst = (char *)out + i * ldo * oes;
        if (tbf == obf)
            memcpy(dst, src, cols * tes);
        else if (tbf)
            bf16_f32_cvt__avx512_u64((float *)dst, (const uint16_t *)src, cols);
        else
            cvt_f32_bf16((uint16_t *)dst, (const float *)src, cols, hw);
    }
}

#define EMB(name, tbf, obf, hw)                                                                \
    static void name(size_t n, size_t cols, const void *table, size_t ldt, const int32_t *ids, \
                     void *out, size_t ldo) {                                                  \
        embedding_rows(tbf, obf, hw, n, cols, table, ldt, ids, out, ldo);                      \
    }
EMB(f32_f32_embedding__avx512, 0, 0, 0)
EMB(bf16_bf16_embedding__avx512, 1, 1, 0)
EMB(bf16_f32_embedding__avx512, 1, 0, 0)
EMB(f32_bf16_embedding__avx512, 0, 1, 0)
EMB(f32_bf16_embedding__avx512bf16, 0, 1, 1)

/* Four independent 64-byte loads per step keep several lines in flight. */
static uint64_t stream_read__avx512_u256(const void *p, size_t nbytes) {
    const char *c = p;
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 256 <= nbytes; i += 256) {
        a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(c + i));
        a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(c + i + 64));
        a2 = _mm512_xor_si512(a2, _mm512_loadu_si512(c + i + 128));
        a3 = _mm512_xor_si512(a3, _mm512_loadu_si512(c + i + 192));
    }
    uint64_t r = (uint64_t)_mm512_reduce_or_epi64(
        _mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)));
    for (; i < nbytes; i++) r ^= (uint8_t)c[i];
    return r;
}

/* Regular (cached) stores: the probe wants each level's write bandwidth. */
static void stream_write__avx512_u256(void *p, size_t nbytes, uint8_t v) {
    char *c = p;
    const __m512i x = _mm512_set1_epi8((char)v);
    size_t i = 0;
    for (; i + 256 <= nbytes; i += 256) {
        _mm512_storeu_si512(c + i, x);
        _mm512_storeu_si512(c + i + 64, x);
        _mm512_storeu_si512(c + i + 128, x);
        _mm512_storeu_si512(c + i + 192, x);
    }
    for (; i < nbytes; i++) c[i] = (char)v;
}

void hrmt_rowops_fill_avx512(hrmt_rowops *t) {
    const int hw = hrmt_cpu_features_get()->avx512_bf16;
    hrmt_rowops_fill_scalar(t); /* every entry defined, then overridden */
    t->copy = copy__avx512;
    t->cvt_f32_bf16 = hw ? f32_bf16_cvt__avx512bf16_u64 : f32_bf16_cvt__avx512_u64;
    t->cvt_bf16_f32 = bf16_f32_cvt__avx512_u64;
    t->add[HRMT_F32] = f32_add__avx512_u16;
    t->add[HRMT_BF16] = hw ? bf16_add__avx512bf16_u16 : bf16_add__avx512_u16;
    t->embedding[HRMT_F32][HRMT_F32] = f32_f32_embedding__avx512;
    t->embedding[HRMT_BF16][HRMT_BF16] = bf16_bf16_embedding__avx512;
    t->embedding[HRMT_BF16][HRMT_F32] = bf16_f32_embedding__avx512;
    t->embedding[HRMT_F32][HRMT_BF16] =
        hw ? f32_bf16_embedding__avx512bf16 : f32_bf16_embedding__avx512;
    t->stream_read = stream_read__avx512_u256;
    t->stream_write = stream_write__avx512_u256;
    hrmt_norm_fill_avx512(t, hw);
    hrmt_act_fill_avx512(t, hw);
    hrmt_softmax_fill_avx512(t, hw);
    hrmt_rope_fill_avx512(t, hw);
    hrmt_engram_fill_avx512(t, hw);
}
