/* The mma.sync form of a ring's products (sm90a/ring_mma.cuh: the fused
 * gate_up's HRMT_CUDA_GLU_MMA shapes) reads its operands at addresses and
 * leaves its results in places that sm90a/mma_lanes.cuh computes; this
 * runs those functions on the host, over an emulated TMA stage, against
 * what the hardware is specified to do: the copy engine's
 * 128-byte swizzle (16-byte chunk bits 4-6 of the address XORed with bits
 * 7-9), ldmatrix.x4 (matrix j's rows addressed by lanes 8 j .. 8 j + 7;
 * lane t receives row t / 4, elements 2 (t % 4) and + 1 of each matrix),
 * mma.m16n8k16.row.col (a0-a3: rows g, g + 8 at k 2 c .., then k 8 + 2 c
 * ..; b0, b1: k 2 c .. and 8 + 2 c .. of column g; d0-d3: rows g, g + 8,
 * columns 2 c, 2 c + 1; g = lane / 4, c = lane % 4) and the m64nNk16
 * accumulator layout the epilogue reads (acc[4 i + 2 hf + e] = row 16 warp
 * + lane / 4 + 8 hf, column 8 i + 2 (lane % 4) + e). Products of small
 * integers, summed exactly: a wrong address, lane or place gives a wrong
 * sum. Built with nvcc where the CUDA backend is; needs no GPU; the device
 * tests cuda_model/glu_shapes_equal_launches_* check the kernels. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

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
int w_val(int n, int k) { return (n * 5 + k * 13) % 9 - 4; }

/* ldmatrix.x4 from the per-lane byte offsets: out[t][j] = the two elements
 * lane t receives of matrix j. */
void ldmatrix_x4(const int16_t *blk, const int (&off)[32], int (&out)[32][4][2]) {
    for (int t = 0; t < 32; t++)
        for (int j = 0; j < 4; j++) {
            const int row_off = off[8 * j + t / 4]; /* the lane that addressed row t / 4 */
            for (int e = 0; e < 2; e++) out[t][j][e] = blk[row_off / 2 + 2 * (t % 4) + e];
        }
}

template <int N>
void check_products() {
    static int16_t a_blk[64 * BK], w_blk[N * BK];
    fill_block(a_blk, 64, a_val);
    fill_block(w_blk, N, w_val);
    /* acc[warp][lane][N / 2], as ring_products_mma leaves it over one stage. */
    static long acc[4][32][N / 2];
    memset(acc, 0, sizeof acc);
    for (int warp = 0; warp < 4; warp++)
        for (int kk = 0; kk < BK / 16; kk++) {
            int aoff[32], row, chunk, a[32][4][2];
            for (int l = 0; l < 32; l++) {
                mma_a_lane(warp, l, kk, &row, &chunk);
                aoff[l] = mma_sw128(row, chunk);
            }
            ldmatrix_x4(a_blk, aoff, a);
            for (int np = 0; np < N / 16; np++) {
                int woff[32], b[32][4][2];
                for (int l = 0; l < 32; l++) {
                    mma_w_lane(np, l, kk, &row, &chunk);
                    woff[l] = mma_sw128(row, chunk);
                }
                ldmatrix_x4(w_blk, woff, b);
                for (int h = 0; h < 2; h++) {
                    /* mma.m16n8k16 on the registers as the kernel passes
                     * them: A = a[.][0..3], B = b[.][2 h], b[.][2 h + 1]. */
                    for (int t = 0; t < 32; t++) {
                        const int g = t / 4, c = t % 4;
                        for (int x = 0; x < 4; x++) {
                            const int m = g + 8 * (x / 2), n = 2 * c + x % 2;
                            long s = 0;
                            for (int k = 0; k < 16; k++) {
                                /* A's element (m, k): register a_{(m >= 8) + 2 (k >= 8)}
                                 * of lane 4 (m % 8) + (k % 8) / 2, half k % 2. */
                                const int al = 4 * (m % 8) + (k % 8) / 2;
                                const int av = a[al][(m >= 8) + 2 * (k >= 8)][k % 2];
                                /* B's element (k, n): b_{k >= 8} of lane 4 n + (k % 8) / 2. */
                                const int bl = 4 * n + (k % 8) / 2;
                                const int bv = b[bl][2 * h + (k >= 8)][k % 2];
                                s += (long)av * bv;
                            }
                            acc[warp][t][mma_acc(2 * np + h, x)] += s;
                        }
                    }
                }
            }
        }
    /* The epilogue's reading of the accumulators, against A W^T. */
    int bad = 0;
    for (int warp = 0; warp < 4; warp++)
        for (int t = 0; t < 32; t++)
            for (int i = 0; i < N / 8; i++)
                for (int hf = 0; hf < 2; hf++)
                    for (int e = 0; e < 2; e++) {
                        const int row = 16 * warp + t / 4 + 8 * hf, col = 8 * i + 2 * (t % 4) + e;
                        long want = 0;
                        for (int k = 0; k < BK; k++) want += (long)a_val(row, k) * w_val(col, k);
                        if (acc[warp][t][4 * i + 2 * hf + e] != want && bad++ < 5)
                            cr_log_error("N %d: row %d col %d: %ld, want %ld", N, row, col,
                                         acc[warp][t][4 * i + 2 * hf + e], want);
                    }
    cr_expect_eq(bad, 0, "N %d: %d of %d outputs wrong", N, bad, 64 * N);
}

} // namespace

Test(ring_mma_layout, products_land_where_the_epilogue_reads_them) {
    check_products<16>();
    check_products<32>();
    check_products<64>();
}

/* The emulation is not vacuous: without the swizzle's XOR the same lanes
 * read other k, and the sums differ. */
Test(ring_mma_layout, an_unswizzled_read_is_caught) {
    static int16_t blk[64 * BK];
    fill_block(blk, 64, a_val);
    int wrong = 0;
    for (int r = 0; r < 64; r++)
        for (int ch = 0; ch < 8; ch++)
            if (blk[(r * 128 + ch * 16) / 2] != a_val(r, 8 * ch)) wrong++;
    cr_expect_gt(wrong, 64 * 8 / 2, "an unswizzled read finds the right chunk only by chance");
    for (int r = 0; r < 64; r++)
        for (int ch = 0; ch < 8; ch++)
            cr_expect_eq(blk[mma_sw128(r, ch) / 2], a_val(r, 8 * ch), "row %d chunk %d", r, ch);
}
