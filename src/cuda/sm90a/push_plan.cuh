/* Who pushes how many bytes to whom in the cluster kernels' push forms
 * (HRMT_CUDA_CLUSTER_NORM_PUSH, HRMT_CUDA_QKV_ATTN_PUSH), as __host__
 * __device__ functions: the kernels send and expect by them, and
 * tests/test_push_plan.cu replays the kernels' send loops on the host
 * against them. A receiver that expects more than it is sent waits for
 * ever, so this is checked without a GPU for every shape the kernels take. */
#ifndef HRMT_CUDA_SM90A_PUSH_PLAN_CUH
#define HRMT_CUDA_SM90A_PUSH_PLAN_CUH

#include "cuda/rowops_common.cuh"
#include "cuda/sm90a/cn_plan.h" /* the cluster projection + norm's */

namespace {

/* qkv + attention over a cluster of cl CTAs whose `rows` computed key rows
 * (64 a row tile) are pushed to every CTA: the bytes CTA `rank` is owed,
 * the K and V rows attention reads (the nkt 16-key tiles', of those rows;
 * d BF16 wide) and 16 q rows for each of its query tiles rank, rank + cl,
 * ... below nkt. */
HRMT_HD unsigned qkv_push_owed(int cl, int rows, int nkt, int rank, int d) {
    const int tiles = rank < nkt ? (nkt - 1 - rank) / cl + 1 : 0;
    const int keys = nkt * 16 < rows ? nkt * 16 : rows;
    return (unsigned)((2 * keys + 16 * tiles) * d * 2);
}
/* The cluster form: 3 rt CTAs, rt row tiles (qkv_attn_wgmma.cu). */
HRMT_HD unsigned qa_push_owed(int rt, int nkt, int rank, int d) {
    return qkv_push_owed(3 * rt, 64 * rt, nkt, rank, d);
}

/* qkv + attention over a pair of CTAs (qkv_attn_pair_wgmma.cu), CTA r
 * computing the head's rows 64 r .. 64 r + 63: the key rows CTA `sender`
 * sends its peer (those below nkt 16 of its 64), and the bytes CTA `rank`
 * is owed, its peer's K and V rows (d BF16 wide); its Q rows are its own. */
HRMT_HD int qp_push_rows(int nkt, int sender) {
    const int n = nkt * 16 - 64 * sender;
    return n < 0 ? 0 : n < 64 ? n : 64;
}
HRMT_HD unsigned qp_push_owed(int nkt, int rank, int d) {
    return (unsigned)(2 * qp_push_rows(nkt, 1 - rank) * d * 2);
}

/* The cluster form's pushes as copy-engine transfers (qkv_attn_wgmma.cu,
 * QA_BULK): sender CTA s (row tile s / 3, part s % 3) copies rows
 * [src_row, src_row + rows) of its block, whole rows of the padded stride,
 * to CTA `to`'s Q (buf 0), K (1) or V (2) from row dst_row. The k and v
 * CTAs send their rows below nkt 16 (qp_push_rows of their row tile) to every CTA (their own copy
 * by ordinary stores: a bulk copy must go to another CTA), the q CTA each of its row tile's query
 * tiles below nkt to the tile's owner (tile j: CTA j % cl, slot j / cl). */
struct qa_copy {
    int to, buf, dst_row, src_row, rows;
};
HRMT_HD int qa_bulk_copies(int rt, int nkt, int sender) {
    const int r = sender / 3, part = sender % 3;
    if (part > 0) return qp_push_rows(nkt, r) > 0 ? 3 * rt : 0;
    const int tiles = nkt - 4 * r;
    return tiles < 0 ? 0 : tiles < 4 ? tiles : 4;
}
HRMT_HD qa_copy qa_bulk_copy(int rt, int nkt, int sender, int k) {
    const int r = sender / 3, part = sender % 3, cl = 3 * rt;
    if (part > 0) return {k, part, 64 * r, 0, qp_push_rows(nkt, r)};
    const int j = 4 * r + k;
    return {j % cl, 0, (j / cl) * 16, 16 * k, 16};
}
/* The bytes CTA `rank` is owed by the others' copies (rows ld BF16 wide). */
HRMT_HD unsigned qa_bulk_owed(int rt, int nkt, int rank, int ld) {
    unsigned b = 0;
    for (int s = 0; s < 3 * rt; s++)
        for (int k = 0; s != rank && k < qa_bulk_copies(rt, nkt, s); k++) {
            const qa_copy c = qa_bulk_copy(rt, nkt, s, k);
            if (c.to == rank) b += (unsigned)(c.rows * ld * 2);
        }
    return b;
}

} // namespace

#endif
