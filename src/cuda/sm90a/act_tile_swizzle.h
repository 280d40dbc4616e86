/* The copy engine's 128-byte swizzle (sw128_offset), and where the fused
 * gate_up's epilogue puts an act pair in the 64 x 64 BF16 tile it stages
 * for a TMA store (glu_wgmma.cu's glu_epi_ts), as plain C so that
 * tests/test_act_tile_swizzle.c checks the layout on the host. The
 * tile's tensor map uses the 128-byte swizzle: row r (128 bytes) keeps its
 * eight 16-byte chunks, chunk i at position i ^ (r % 8), and the buffer is
 * 1024-byte aligned (the pattern repeats every 8 rows). A thread writes the
 * pair of columns 8 i + 2 q, + 1 (q = lane % 4) of row r: 4 bytes at
 * byte q * 4 of that chunk. */
#ifndef HRMT_CUDA_SM90A_ACT_TILE_SWIZZLE_H
#define HRMT_CUDA_SM90A_ACT_TILE_SWIZZLE_H

#ifdef __CUDACC__
#define ACT_HD static inline __host__ __device__
#else
#define ACT_HD static inline
#endif

/* Byte offset of row r's 16-byte chunk c in a block of 128-byte rows the
 * copy engine reads or writes with that swizzle (a TMA stage of 64 BF16 k a
 * row; the benches that emulate one place their operands with it). */
ACT_HD int sw128_offset(int r, int c) { return r * 128 + ((c ^ (r & 7)) << 4); }

/* Byte offset in the tile of row r's pair q in 8-column group i. */
ACT_HD int act_tile_offset(int r, int i, int q) { return sw128_offset(r, i) + 4 * q; }

#undef ACT_HD

#endif
