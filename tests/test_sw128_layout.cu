/* sm90a/mma_lanes.cuh's mma_sw128, where the benches that emulate a TMA
 * stage (bench/cuda_chain_latency.cu, bench/cuda_handoff_latency.cu) place
 * each 16-byte chunk of an operand row, run on the host against what the
 * copy engine is specified to do: with SWIZZLE_128B, a box of 64-k rows
 * (128 bytes) from a 1024-byte boundary has the address's 16-byte chunk
 * bits 4-6 XORed with its bits 7-9. Built with nvcc where the CUDA backend
 * is; needs no GPU. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "cuda/sm90a/mma_lanes.cuh"

namespace {

constexpr int BK = 64;

/* A stage block as the copy engine writes a box of `rows` x 64 BF16 k with
 * SWIZZLE_128B from a 1024-byte boundary: element (r, k) at r * 128 + k * 2,
 * then the address's bits 4-6 XORed with its bits 7-9. Values are small
 * integers stored as int16 (their BF16 bits do not matter here). */
void fill_block(int16_t *blk, int rows, int (*val)(int, int)) {
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < BK; k++) {
            const int lin = r * 128 + k * 2;
            const int addr = lin ^ (((lin >> 7) & 7) << 4);
            blk[addr / 2] = (int16_t)val(r, k);
        }
}

int a_val(int r, int k) { return (r * 7 + k * 3) % 11 - 5; }

} // namespace

/* Each chunk's eight elements where mma_sw128 says; and the check is not
 * vacuous: without the swizzle's XOR most chunks are found elsewhere. */
Test(sw128_layout, chunks_lie_where_the_copy_engine_puts_them) {
    static int16_t blk[64 * BK];
    fill_block(blk, 64, a_val);
    int wrong = 0;
    for (int r = 0; r < 64; r++)
        for (int ch = 0; ch < 8; ch++)
            if (blk[(r * 128 + ch * 16) / 2] != a_val(r, 8 * ch)) wrong++;
    cr_expect_gt(wrong, 64 * 8 / 2, "an unswizzled read finds the right chunk only by chance");
    for (int r = 0; r < 64; r++)
        for (int ch = 0; ch < 8; ch++)
            for (int e = 0; e < 8; e++)
                cr_expect_eq(blk[mma_sw128(r, ch) / 2 + e], a_val(r, 8 * ch + e),
                             "row %d chunk %d element %d", r, ch, e);
}
