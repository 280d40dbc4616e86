/* The copy engine's 128-byte swizzle as the benches place TMA stages with it
 * (sw128_offset) and the fused gate_up's staged act tile
 * (src/cuda/sm90a/act_tile_swizzle.h, HRMT_CUDA_GLU_WRES_TSTORE), checked on the host against the
 * copy engine's 128-byte swizzle written independently, as an operation on the linear address (bits
 * 4-6 of a byte offset XORed with bits 7-9, the pattern of CU_TENSOR_MAP_SWIZZLE_128B over a
 * 1024-byte aligned box with 128-byte rows): every pair of the 64 x 64 BF16 tile lands where the
 * TMA store reads that pair's columns, the tile's 8 KB are covered once, and a warp's store of one
 * (n8 group, half) lands on 32 distinct banks. The GPU test cuda_model/glu_wres_tstore checks the
 * bytes end to end. */
#include <criterion/criterion.h>
#include <string.h>

#include "cuda/sm90a/act_tile_swizzle.h"

/* Where the copy engine reads row r, byte b of the box. */
static int tma_swizzle_128(int r, int b) {
    const int linear = r * 128 + b;
    return linear ^ (((linear >> 7) & 7) << 4);
}

/* A 64-row block of 64-k rows as the copy engine writes it (each element's
 * bytes through tma_swizzle_128), values small integers: each 16-byte
 * chunk's eight elements are where sw128_offset says; and the check is not
 * vacuous: without the swizzle's XOR most chunks are found elsewhere. */
static int a_val(int r, int k) { return (r * 7 + k * 3) % 11 - 5; }

Test(act_tile_swizzle, chunks_lie_where_the_copy_engine_puts_them) {
    static short blk[64 * 64];
    for (int r = 0; r < 64; r++)
        for (int k = 0; k < 64; k++) blk[tma_swizzle_128(r, 2 * k) / 2] = (short)a_val(r, k);
    int wrong = 0;
    for (int r = 0; r < 64; r++)
        for (int ch = 0; ch < 8; ch++)
            if (blk[(r * 128 + ch * 16) / 2] != a_val(r, 8 * ch)) wrong++;
    cr_expect_gt(wrong, 64 * 8 / 2, "an unswizzled read finds the right chunk only by chance");
    for (int r = 0; r < 64; r++)
        for (int ch = 0; ch < 8; ch++)
            for (int e = 0; e < 8; e++)
                cr_expect_eq(blk[sw128_offset(r, ch) / 2 + e], a_val(r, 8 * ch + e),
                             "row %d chunk %d element %d", r, ch, e);
}

Test(act_tile_swizzle, pairs_land_where_the_tma_store_reads_them) {
    for (int r = 0; r < 64; r++)
        for (int i = 0; i < 8; i++)
            for (int q = 0; q < 4; q++) {
                /* the pair's columns 8 i + 2 q, + 1: bytes 16 i + 4 q .. + 3 */
                const int want = tma_swizzle_128(r, 16 * i + 4 * q);
                cr_assert_eq(act_tile_offset(r, i, q), want, "row %d group %d pair %d", r, i, q);
            }
}

Test(act_tile_swizzle, the_tile_is_covered_once) {
    static unsigned char seen[64 * 128 / 4];
    memset(seen, 0, sizeof seen);
    for (int r = 0; r < 64; r++)
        for (int i = 0; i < 8; i++)
            for (int q = 0; q < 4; q++) {
                const int off = act_tile_offset(r, i, q);
                cr_assert(off >= 0 && off + 4 <= 64 * 128 && off % 4 == 0, "offset %d", off);
                cr_assert_eq(seen[off / 4]++, 0, "offset %d written twice", off);
            }
}

/* Lane l of warp w writes row w 16 + l / 4 + 8 hf, pair q = l % 4, of
 * group i: one store instruction a (w, hf, i). */
Test(act_tile_swizzle, a_warps_store_hits_32_banks) {
    for (int w = 0; w < 4; w++)
        for (int hf = 0; hf < 2; hf++)
            for (int i = 0; i < 8; i++) {
                unsigned banks = 0;
                for (int l = 0; l < 32; l++) {
                    const int off = act_tile_offset(w * 16 + l / 4 + 8 * hf, i, l % 4);
                    banks |= 1u << (off / 4 % 32);
                }
                cr_assert_eq(banks, 0xffffffffu, "warp %d half %d group %d: banks %08x", w, hf, i,
                             banks);
            }
}
