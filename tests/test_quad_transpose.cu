/* sm90a/quad_transpose.cuh's exchange steps over four emulated threads on
 * the host, as the device's quad_transpose runs them (each step: every
 * thread's send computed, then each receives its partner's). The expected
 * words come from the row itself, not from the steps: the two-CTA projection
 * + norm kernel (proj_norm_wgmma.cu) loads 16-byte chunk 4 j + c of a row in
 * quad thread c and must end with the column pairs of the wgmma layout,
 * 8 (4 j + q) + 2 c for q = 0..3, and store them back as chunks. Built with
 * nvcc where the CUDA backend is; needs no GPU; the device tests
 * cuda_model/fused_norm_* check the kernel's bytes. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "cuda/sm90a/quad_transpose.cuh"

namespace {

/* quad_transpose on the host: the four threads' words v[c][k]. */
void host_quad_transpose(uint32_t (&v)[4][4]) {
    for (int m = 2; m >= 1; m /= 2)
        for (int t = 0; t < 2; t++) {
            uint32_t sent[4];
            for (int c = 0; c < 4; c++) sent[c] = qt_send(v[c], c, m, t);
            for (int c = 0; c < 4; c++) qt_recv(v[c], c, m, t, sent[c ^ m]);
        }
}

uint32_t next_word(uint64_t &s) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(s >> 32);
}

} // namespace

Test(quad_transpose, thread_c_word_k_goes_to_thread_k_word_c) {
    uint64_t seed = 7;
    for (int trial = 0; trial < 1000; trial++) {
        uint32_t v[4][4], orig[4][4];
        for (int c = 0; c < 4; c++)
            for (int k = 0; k < 4; k++) orig[c][k] = v[c][k] = next_word(seed);
        host_quad_transpose(v);
        for (int c = 0; c < 4; c++)
            for (int k = 0; k < 4; k++)
                cr_assert_eq(v[c][k], orig[k][c], "trial %d: thread %d word %d", trial, c, k);
    }
}

/* A row of 8 j-groups (256 BF16 columns: NH = 256's half row), each 4-byte
 * word the column pair it holds: chunks in, the wgmma layout's pairs out,
 * and chunks again after the second transpose (the stores). */
Test(quad_transpose, chunks_become_wgmma_pairs_and_back) {
    constexpr int COLS = 256, NJ = COLS / 32;
    uint32_t row[COLS / 2]; /* pair p: columns 2 p, 2 p + 1 */
    uint64_t seed = 11;
    for (int p = 0; p < COLS / 2; p++) row[p] = next_word(seed);
    for (int j = 0; j < NJ; j++) {
        uint32_t v[4][4];
        for (int c = 0; c < 4; c++) /* thread c: chunk 4 j + c, columns 8 (4 j + c) + 2 k */
            for (int k = 0; k < 4; k++) v[c][k] = row[(8 * (4 * j + c) + 2 * k) / 2];
        host_quad_transpose(v);
        for (int c = 0; c < 4; c++)
            for (int q = 0; q < 4; q++)
                cr_assert_eq(v[c][q], row[(8 * (4 * j + q) + 2 * c) / 2],
                             "j %d: thread %d should hold columns %d-%d as its word %d", j, c,
                             8 * (4 * j + q) + 2 * c, 8 * (4 * j + q) + 2 * c + 1, q);
        host_quad_transpose(v);
        for (int c = 0; c < 4; c++)
            for (int k = 0; k < 4; k++)
                cr_assert_eq(v[c][k], row[(8 * (4 * j + c) + 2 * k) / 2],
                             "j %d: thread %d's chunk word %d after the store transpose", j, c, k);
    }
}
