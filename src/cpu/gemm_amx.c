/* GEMM micro-kernel for BF16 A and W on AMX-BF16 tiles: a 32 x 32 F32 tile
 * of C in four tile registers (2 x 2 of 16 x 16), K in blocks of 32.
 *
 * Per 32-wide K block, TDPBF16PS computes for each output two F32 chains
 * from +0, one over the block's 16 even-k products and one over the 16 odd-k
 * products (each step a fused multiply-add rounded to nearest even, with
 * denormal inputs and results flushed to zero), adds the two chains (one
 * rounding) and adds that to C (one rounding): Intel's SDM pseudocode,
 * measured so on Sapphire/Emerald Rapids. The order is fixed by where the
 * 32-blocks fall, k = 0, 32, 64, ..., so a K block of the driver (a multiple
 * of 32) that continues the previous block's partial sums gives the same bits
 * as one block, and no M or N tiling changes a bit (core/gemm_kernels.h;
 * tests/support/ref_amx.c computes the same order in scalar code).
 *
 * Operands:
 *   A sliver (pack_a): per K block of 32, rows 0..31 of 32 bf16 each (64
 *     bytes), i.e. tile A0 (rows 0..15) then tile A1 (rows 16..31), 2 KiB;
 *   W panel: the driver's BF16X2 panel of NR = 32 columns (core/gemm_pack.c),
 *     per k pair 32 columns x 2 bf16 = 128 bytes, which is AMX's pair-
 *     interleaved B layout: tile B0 (columns 0..15) is 16 pair rows of 64
 *     bytes at stride 128, tile B1 the same 64 bytes further.
 *
 * The tile configuration is a static const (ldtilecfg reads 64 bytes; gcc
 * 12's _tile_loadconfig tells the compiler it reads 8, so a configuration
 * built on the stack lost its stores at -O2), and the tile loads and stores
 * are asm with a memory clobber (cpu/amx_tile.h: gcc's tileloadd has none). */
#include <immintrin.h>
#include <stdint.h>

#include "core/backend.h"
#include "cpu/amx_tile.h"
#include "cpu/gemm_avx512_common.h"

#define MR 32
#define NR 32
#define KB 32 /* k per TDPBF16PS */
/* Bytes per 32-wide K block: of an A sliver (two 16 x 64-byte tiles) and of
 * a W panel (16 pair rows of 32 columns x 2 bf16). */
#define A_BLOCK ((size_t)2 * 16 * 64)
#define B_BLOCK ((size_t)16 * 128)

/* Tiles: 0..3 = C (C00, C01, C10, C11: row block, column block), 4, 5 = A0,
 * A1, 6, 7 = B0, B1. Palette 1, every tile 16 rows x 64 bytes. */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

static const tile_config k_config __attribute__((aligned(64))) = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* The driver's begin/end around each unit (core/gemm_kernels.h): the tile
 * configuration is per thread and costs ~230 cycles to load, so it is
 * loaded once per unit, not per call; tilerelease returns the tiles to
 * their init state, so context switches stop saving 8 KiB of tile data. */
static void amx_begin(void) { __asm__ volatile("ldtilecfg %0" ::"m"(k_config) : "memory"); }

/* Writes row block rb (16 rows: tiles C(rb,0) and C(rb,1)) of a deferred
 * tile to C, a whole 32-column row per store where the tile is 32 wide;
 * BF16 through the hardware conversion (hrmt_cvt_bf16 with hw: the same
 * bits as the rounding in hrmt_gemm_store16__avx512). */
static inline void put_deferred(hrmt_gemm_deferred *d) {
    const size_t rb = (size_t)d->next++;
    const hrmt_gemm_ukr_out *o = &d->to;
    if (o->m <= 16 * rb) return;
    const size_t rows = o->m - 16 * rb < 16 ? o->m - 16 * rb : 16;
    const size_t esz = o->c_dt == HRMT_F32 ? 4 : 2;
    const float *s0 = d->sums[2 * rb], *s1 = d->sums[2 * rb + 1];
    char *c = (char *)o->c + 16 * rb * o->ldc * esz;
    for (size_t r = 0; r < rows; r++, c += o->ldc * esz) {
        const __m512 v0 = _mm512_load_ps(s0 + 16 * r), v1 = _mm512_load_ps(s1 + 16 * r);
        if (o->n < NR) {
            hrmt_gemm_store16__avx512(v0, o->n, c, o->c_dt, o->accumulate);
            if (o->n > 16)
                hrmt_gemm_store16__avx512(v1, o->n - 16, c + 16 * esz, o->c_dt, o->accumulate);
        } else {
            hrmt_gemm_store_row32__avx512(v0, v1, c, o->c_dt, o->accumulate, 1);
        }
    }
}

static inline void flush_deferred(hrmt_gemm_deferred *d) {
    while (d && d->next < 2) put_deferred(d);
}

static void amx_end(hrmt_gemm_deferred *d) {
    flush_deferred(d);
    __asm__ volatile("tilerelease" ::: "memory");
}

/* Loads (or zeroes) the C tiles of `rows2` (1: both row blocks) from a
 * partial tile of row stride ld floats. */
static inline void start_c(const hrmt_gemm_ukr_out *o, int rows2) {
    if (o->load) {
        const float *p = o->partial;
        const size_t ld = o->ld_partial * sizeof(float);
        TILE_LOAD(0, p, ld);
        TILE_LOAD(1, p + 16, ld);
        if (rows2) {
            TILE_LOAD(2, p + 16 * o->ld_partial, ld);
            TILE_LOAD(3, p + 16 * o->ld_partial + 16, ld);
        }
    } else {
        TILE_ZERO(0);
        TILE_ZERO(1);
        if (rows2) {
            TILE_ZERO(2);
            TILE_ZERO(3);
        }
    }
}

/* p is written by the tile stores (asm), which clang-tidy cannot see. */
// NOLINTNEXTLINE(readability-non-const-parameter)
static inline void store_c(float *p, size_t ld_floats, int rows2) {
    const size_t ld = ld_floats * sizeof(float);
    TILE_STORE(0, p, ld);
    TILE_STORE(1, p + 16, ld);
    if (rows2) {
        TILE_STORE(2, p + 16 * ld_floats, ld);
        TILE_STORE(3, p + 16 * ld_floats + 16, ld);
    }
}

/* `lines` lines of the driver's next W panel (see hrmt_gemm_ukr_out). */
static inline const char *prefetch_next(const char *pf, const char *end, size_t lines) {
    for (size_t l = 0; l < lines && pf < end; l++, pf += 64) _mm_prefetch(pf, _MM_HINT_T1);
    return pf;
}

/* Tile registers are not renamed: a tile load waits until every earlier
 * TDPBF16PS reading that tile is done. So each load is issued right after the
 * last product that reads its tile, and the products of consecutive K blocks
 * run in orders that leave the TMUL busy meanwhile. Two rows of tiles (m > 16):
 * even blocks C00 C01 C11 C10, odd blocks C01 C00 C10 C11; then the first
 * product of a block needs tiles the previous block freed two products
 * before its end. One row (m <= 16): C10 and C11 are free, so A and B are
 * double-buffered (A in 4/5, B in 6,7 / 2,3). Each C tile still adds its K
 * blocks in increasing order: the same bits. */
static inline void blocks_2x2(size_t nblk, const char *a, const char *b, const char *pf,
                              const char *pf_end, size_t pf_lines, hrmt_gemm_deferred *d) {
    const size_t a1 = A_BLOCK / 2;
    TILE_LOAD(4, a, 64);
    TILE_LOAD(6, b, 128);
    TILE_LOAD(7, b + 64, 128);
    TILE_LOAD(5, a + a1, 64);
    size_t kb = 0;
    for (; kb + 2 <= nblk; kb += 2) {
        const char *an = a + A_BLOCK, *bn = b + B_BLOCK; /* block kb + 1 */
        TILE_DP(0, 4, 6);
        TILE_DP(1, 4, 7);
        /* 16 rows of the previous call's result per 8 products: vector
         * work the core can do while the TMUL runs them. */
        if (d && d->next < 2) put_deferred(d);
        TILE_LOAD(4, an, 64);
        TILE_DP(3, 5, 7);
        TILE_LOAD(7, bn + 64, 128);
        TILE_DP(2, 5, 6);
        TILE_LOAD(5, an + a1, 64);
        TILE_LOAD(6, bn, 128);
        a = an + A_BLOCK; /* block kb + 2 */
        b = bn + B_BLOCK;
        const int more = kb + 2 < nblk;
        TILE_DP(1, 4, 7);
        TILE_DP(0, 4, 6);
        if (more) TILE_LOAD(4, a, 64);
        TILE_DP(2, 5, 6);
        if (more) TILE_LOAD(6, b, 128);
        TILE_DP(3, 5, 7);
        if (more) {
            TILE_LOAD(5, a + a1, 64);
            TILE_LOAD(7, b + 64, 128);
        }
        pf = prefetch_next(pf, pf_end, 2 * pf_lines);
    }
    if (kb < nblk) { /* an odd last block, already loaded */
        TILE_DP(0, 4, 6);
        TILE_DP(1, 4, 7);
        TILE_DP(3, 5, 7);
        TILE_DP(2, 5, 6);
        (void)prefetch_next(pf, pf_end, pf_lines);
    }
}

static inline void blocks_1x2(size_t nblk, const char *a, const char *b, const char *pf,
                              const char *pf_end, size_t pf_lines, hrmt_gemm_deferred *d) {
    TILE_LOAD(4, a, 64);
    TILE_LOAD(6, b, 128);
    TILE_LOAD(7, b + 64, 128);
    if (nblk > 1) {
        TILE_LOAD(5, a + A_BLOCK, 64);
        TILE_LOAD(2, b + B_BLOCK, 128);
        TILE_LOAD(3, b + B_BLOCK + 64, 128);
    }
    size_t kb = 0;
    for (; kb + 2 <= nblk; kb += 2) {
        a += 2 * A_BLOCK; /* block kb + 2 */
        b += 2 * B_BLOCK;
        TILE_DP(0, 4, 6);
        TILE_DP(1, 4, 7);
        if (kb + 2 < nblk) {
            TILE_LOAD(4, a, 64);
            TILE_LOAD(6, b, 128);
            TILE_LOAD(7, b + 64, 128);
        }
        TILE_DP(0, 5, 2);
        TILE_DP(1, 5, 3);
        if (kb + 3 < nblk) {
            TILE_LOAD(5, a + A_BLOCK, 64);
            TILE_LOAD(2, b + B_BLOCK, 128);
            TILE_LOAD(3, b + B_BLOCK + 64, 128);
        }
        pf = prefetch_next(pf, pf_end, 2 * pf_lines);
        if (d && d->next < 2) put_deferred(d); /* as in blocks_2x2 */
    }
    if (kb < nblk) {
        TILE_DP(0, 4, 6);
        TILE_DP(1, 4, 7);
        (void)prefetch_next(pf, pf_end, pf_lines);
    }
}

/* Writes C tile (rb, cb) (rows 16 rb.., columns 16 cb..) to C per `o`
 * through `buf` (16 x 16 floats): the tile store waits for the tile's last
 * product only, so while this tile is converted and written the TMUL works
 * on the tiles after it. */
#define PUT_TILE(t, rb, cb, buf)                                    \
    do {                                                            \
        if (o->m > (size_t)16 * (rb) && o->n > (size_t)16 * (cb)) { \
            TILE_STORE(t, buf, 64);                                 \
            put_tile(buf, o, rb, cb);                               \
        }                                                           \
    } while (0)

static inline void put_tile(const float *buf, const hrmt_gemm_ukr_out *o, size_t rb, size_t cb) {
    const size_t esz = o->c_dt == HRMT_F32 ? 4 : 2;
    const size_t rows = o->m - 16 * rb < 16 ? o->m - 16 * rb : 16;
    const size_t cols = o->n - 16 * cb < 16 ? o->n - 16 * cb : 16;
    char *c = (char *)o->c + (16 * rb * o->ldc + 16 * cb) * esz;
    for (size_t r = 0; r < rows; r++)
        hrmt_gemm_store16__avx512(_mm512_load_ps(buf + r * 16), cols, c + r * o->ldc * esz, o->c_dt,
                                  o->accumulate);
}

static void bf16_gemm_ukr__amx_32x32(size_t kc, const void *a, const void *b,
                                     const hrmt_gemm_ukr_out *o) {
    const int rows2 = o->m > 16;
    const size_t nblk = kc / KB;
    const char *pf = o->pf, *pf_end = pf ? pf + o->pf_bytes : pf;
    const size_t pf_lines = nblk ? (o->pf_bytes / 64 + nblk) / nblk : 0; /* per K block */
    hrmt_gemm_deferred *d = o->deferred;
    start_c(o, rows2);
    if (nblk) {
        if (rows2)
            blocks_2x2(nblk, a, b, pf, pf_end, pf_lines, d);
        else
            blocks_1x2(nblk, a, b, pf, pf_end, pf_lines, d);
    }
    flush_deferred(d); /* what the products did not cover (short K) */
    if (!o->final) {
        store_c(o->partial, o->ld_partial, rows2);
        return;
    }
    if (d) {
        /* Park the sums; the next call (or tile_end) writes them to C. */
        TILE_STORE(0, d->sums[0], 64);
        TILE_STORE(1, d->sums[1], 64);
        if (rows2) {
            TILE_STORE(2, d->sums[2], 64);
            TILE_STORE(3, d->sums[3], 64);
        }
        d->to = *o;
        d->next = 0;
        return;
    }
    /* Finished tiles in the order their last products run (blocks_2x2: an
     * even last block C00 C01 C11 C10, an odd one C01 C00 C10 C11). */
    float buf[4][256] __attribute__((aligned(64)));
    if (!rows2 || nblk % 2) {
        PUT_TILE(0, 0, 0, buf[0]);
        PUT_TILE(1, 0, 1, buf[1]);
        PUT_TILE(3, 1, 1, buf[3]);
        PUT_TILE(2, 1, 0, buf[2]);
    } else {
        PUT_TILE(1, 0, 1, buf[1]);
        PUT_TILE(0, 0, 0, buf[0]);
        PUT_TILE(2, 1, 0, buf[2]);
        PUT_TILE(3, 1, 1, buf[3]);
    }
}
#undef PUT_TILE

/* BF16 rows [0, m) x k [0, kc) of A -> the sliver layout above; rows m..31
 * and k from kc to the next multiple of 32 are zero. */
static void bf16_gemm_pack_a__amx_32(size_t m, size_t kc, const void *a, hrmt_dtype a_dt,
                                     size_t lda, void *dst) {
    (void)a_dt; /* always BF16 for this kernel */
    const uint16_t *ah = a;
    uint16_t *d = dst;
    const size_t nblk = (kc + KB - 1) / KB;
    for (size_t kb = 0; kb < nblk; kb++) {
        const size_t k0 = kb * KB, nk = kc - k0 < KB ? kc - k0 : KB;
        const __mmask32 mask = nk == KB ? 0xffffffffu : (1u << nk) - 1u;
        uint16_t *blk = d + kb * MR * KB;
        for (size_t i = 0; i < MR; i++) {
            const __m512i r =
                i < m ? _mm512_maskz_loadu_epi16(mask, ah + i * lda + k0) : _mm512_setzero_si512();
            _mm512_storeu_si512(blk + i * KB, r);
        }
    }
}

void hrmt_gemm_fill_amx(hrmt_gemm_kernels *t) {
    t->bf16_tile = (hrmt_gemm_ukernel){
        "bf16_gemm__amx_32x32", MR, NR, KB, bf16_gemm_ukr__amx_32x32, bf16_gemm_pack_a__amx_32};
    t->tile_begin = amx_begin;
    t->tile_end = amx_end;
}
