/* The push forms of the cluster kernels (HRMT_CUDA_CLUSTER_NORM_PUSH,
 * and HRMT_CUDA_QKV_ATTN_PUSH; sm90a/cluster_async.cuh)
 * wait on barriers that
 * count bytes: a CTA that expects more than it is sent waits for ever, one
 * that expects less may read rows still in flight. This replays, on the
 * host, each kernel's send loop as written in its .cu file (who sends which
 * rows to whom, in how many bytes) for every shape and row count the
 * kernels take, and checks each receiver's total against the bytes it
 * expects (sm90a/push_plan.cuh, what the kernels call), every row the
 * receiver then reads against what it was sent, the copies' sizes,
 * alignment and bounds against the buffers, and (with values) that each
 * row lands where its owner reads it. Built with nvcc where the CUDA
 * backend is; needs no GPU; the device tests cuda_model/..._push_... check the
 * kernels' bytes. */
#include <criterion/criterion.h>
#include <string.h>

#include "cuda/sm90a/push_plan.cuh"

namespace {

constexpr int TILE = 64;        /* rows of a cluster projection + norm tile */
constexpr int TX_MAX = 1 << 20; /* an mbarrier's tx-count range */

/* Cluster projection + norm, CL CTAs of WN columns: step 2' of
 * cluster_norm_kernel. */
void cluster_norm_plan(int wn, int cl, int live) {
    const int rp = TILE / cl, h = wn * cl, block = TILE * wn * 2;
    int got_x[16] = {0}, got_inv[16] = {0};
    int inv_rows[16][TILE];
    memset(inv_rows, 0, sizeof inv_rows);
    for (int src = 0; src < cl; src++)
        for (int tid = 0; tid < cl; tid++) { /* the copy thread tid sends owner tid's rows */
            const int n = cn_push_rows(live, tid, rp);
            /* Its own rows a CTA stores itself (no bulk copy to itself). */
            if (tid == src || n == 0) continue;
            const int bytes = n * wn * 2, soff = tid * rp * wn * 2, doff = src * rp * wn * 2;
            cr_assert(bytes % 16 == 0 && soff % 16 == 0 && doff % 16 == 0,
                      "WN %d CL %d live %d: copy %d -> %d not in 16-byte units", wn, cl, live, src,
                      tid);
            cr_assert(soff + bytes <= block && doff + bytes <= block,
                      "WN %d CL %d live %d: copy %d -> %d out of its block", wn, cl, live, src,
                      tid);
            got_x[tid] += bytes;
        }
    for (int k = 0; k < cl; k++) { /* owner k: a warp per row j < mine, lane l < CL to CTA l */
        const int mine = cn_push_rows(live, k, rp);
        for (int j = 0; j < mine; j++)
            for (int lane = 0; lane < cl; lane++) {
                got_inv[lane] += 4;
                inv_rows[lane][k * rp + j]++;
            }
    }
    for (int k = 0; k < cl; k++) {
        /* What the kernel expects (push_plan.cuh) against what the others
         * sent it in the replayed loops. */
        const int want = cn_push_owed_rows(live, k, rp, wn, h);
        cr_assert(want < TX_MAX);
        cr_assert_eq(got_x[k], want,
                     "WN %d CL %d live %d: CTA %d sent %d bytes of rows, expects %d", wn, cl, live,
                     k, got_x[k], want);
        cr_assert_eq(got_inv[k], live * 4, "WN %d CL %d live %d: CTA %d sent %d bytes of invs", wn,
                     cl, live, k, got_inv[k]);
        /* Step 3 reads the inv of every live row, once sent. */
        for (int r = 0; r < TILE; r++)
            cr_assert_eq(inv_rows[k][r], r < live ? 1 : 0,
                         "WN %d CL %d live %d: CTA %d got row %d's inv %d times", wn, cl, live, k,
                         r, inv_rows[k][r]);
    }
}

} // namespace

/* The rows' journey with values: each CTA's x block [64][WN] (x at tile
 * row r, column col of H = (r << 12) | col), the copies at the kernel's
 * offsets and sizes into each owner's buffer, then the owner's reads of
 * its row j, column col: every one must be x at (k RP + j, col). */
static void cluster_norm_rows_land(int wn, int cl, int live) {
    const int rp = TILE / cl, h = wn * cl;
    static int xs[16][TILE * 64], xr[16][TILE * 64];
    memset(xr, 0xff, sizeof xr);
    for (int src = 0; src < cl; src++)
        for (int r = 0; r < TILE; r++)
            for (int c = 0; c < wn; c++) xs[src][r * wn + c] = (r << 12) | (src * wn + c);
    for (int src = 0; src < cl; src++)
        for (int owner = 0; owner < cl; owner++) {
            const int n = cn_push_rows(live, owner, rp);
            memcpy(&xr[owner][cn_push_dst(src, wn, rp)], &xs[src][cn_push_src(owner, wn, rp)],
                   (size_t)(n * wn) * sizeof(int));
        }
    for (int k = 0; k < cl; k++)
        for (int j = 0; j < cn_push_rows(live, k, rp); j++)
            for (int col = 0; col < h; col++) {
                const int got = xr[k][cn_push_at(j, col, wn, rp)],
                          want = ((k * rp + j) << 12) | col;
                cr_assert_eq(got, want,
                             "WN %d CL %d live %d: CTA %d row %d col %d reads %#x, not %#x", wn, cl,
                             live, k, j, col, got, want);
            }
}

Test(push_plan, cluster_norm_rows_land_where_the_owner_reads) {
    const int shapes[4][2] = {{32, 16}, {16, 16}, {64, 8}, {32, 8}};
    for (int s = 0; s < 4; s++)
        for (int live = 1; live <= TILE; live++)
            cluster_norm_rows_land(shapes[s][0], shapes[s][1], live);
}

Test(push_plan, cluster_norm_every_shape_and_row_count) {
    const int shapes[4][2] = {{32, 16}, {16, 16}, {64, 8}, {32, 8}};
    for (int s = 0; s < 4; s++)
        for (int live = 1; live <= TILE; live++)
            cluster_norm_plan(shapes[s][0], shapes[s][1], live);
}

/* qkv + attention over a cluster: step 2 of qkv_attn_kernel (RT by T as
 * cu_qkv_attn_clusters picks it, head_dim 64), then the query tiles step 3
 * reads: the Q slot j / CL of tile j = rank + CL slot < nkt. */
Test(push_plan, qkv_attn_every_sequence_length) {
    constexpr int D = 64;
    for (int T = 1; T <= 128; T++) {
        const int rt = T <= 64 ? 1 : 2, cl = 3 * rt, nkt = (T + 15) / 16;
        long got[6] = {0};
        int krows[6][128], qrows[6][2][16];
        memset(krows, 0, sizeof krows);
        memset(qrows, 0, sizeof qrows);
        for (int rank = 0; rank < cl; rank++) {
            const int part = rank % 3, r = rank / 3;
            for (int e = 0; e < 64 * (D / 8); e++) {
                const int row = e / (D / 8), c = (e % (D / 8)) * 8, t = r * 64 + row;
                if (part == 0) {
                    const int j = t / 16;
                    if (j >= nkt) continue;
                    cr_assert(j / cl < 2, "T %d: q tile %d past the two Q slots", T, j);
                    got[j % cl] += 16;
                    if (c == 0) qrows[j % cl][j / cl][t % 16]++;
                } else if (t < nkt * 16) {
                    for (int d = 0; d < cl; d++) {
                        got[d] += 16;
                        if (c == 0 && part == 1) krows[d][t]++;
                    }
                }
            }
        }
        for (int d = 0; d < cl; d++) {
            const unsigned want = qa_push_owed(rt, nkt, d, D);
            cr_assert(want < (unsigned)TX_MAX);
            cr_assert_eq(got[d], (long)want, "T %d: CTA %d is sent %ld bytes, expects %u", T, d,
                         got[d], want);
            for (int t = 0; t < 64 * rt; t++)
                cr_assert_eq(krows[d][t], t < nkt * 16, "T %d: CTA %d got key row %d %d times", T,
                             d, t, krows[d][t]);
            for (int slot = 0; slot < 2; slot++) {
                const int j = d + cl * slot;
                if (j >= nkt) break;
                for (int i = 0; i < 16; i++)
                    cr_assert_eq(qrows[d][slot][i], 1, "T %d: CTA %d tile %d row %d sent %d times",
                                 T, d, j, i, qrows[d][slot][i]);
            }
        }
    }
}

/* The cluster form's pushes as copy-engine transfers (QA_BULK): every
 * copy of every CTA (its own by ordinary stores) replayed for each T, then
 * what step 3 reads: each K and V row below nkt 16 and each of the CTA's
 * query tiles' 16 q rows landed exactly once, from the sender's row of the
 * same index; each copy's size a multiple of 16 bytes, its rows inside the
 * sender's block and the receiver's buffer; and the bytes each CTA expects
 * equal to what the others send it. */
Test(push_plan, qkv_attn_bulk_every_sequence_length) {
    constexpr int LD = 72; /* qkv_attn_wgmma.cu's QA_LD */
    for (int T = 1; T <= 128; T++) {
        const int rt = T <= 64 ? 1 : 2, cl = 3 * rt, nkt = (T + 15) / 16;
        long got[6] = {0};
        int rows[6][3][128];
        memset(rows, 0, sizeof rows);
        for (int s = 0; s < cl; s++) {
            const int part = s % 3, r = s / 3;
            for (int k = 0; k < qa_bulk_copies(rt, nkt, s); k++) {
                const qa_copy c = qa_bulk_copy(rt, nkt, s, k);
                cr_assert(c.to >= 0 && c.to < cl && c.rows > 0, "T %d: sender %d copy %d", T, s, k);
                cr_assert_eq(c.buf, part, "T %d: sender %d's copy %d into the wrong buffer", T, s,
                             k);
                cr_assert((c.rows * LD * 2) % 16 == 0 && (c.src_row * LD * 2) % 16 == 0 &&
                          (c.dst_row * LD * 2) % 16 == 0);
                cr_assert(c.src_row >= 0 && c.src_row + c.rows <= 64, "T %d: past the block", T);
                cr_assert(c.dst_row + c.rows <= (c.buf == 0 ? 32 : 128), "T %d: past the buffer",
                          T);
                if (c.to != s) got[c.to] += c.rows * LD * 2;
                for (int i = 0; i < c.rows; i++) {
                    const int t = 64 * r + c.src_row + i; /* the row of the head it carries */
                    if (c.buf == 0) {
                        const int j = t / 16;
                        cr_assert_eq(c.to, j % cl, "T %d: q row %d to CTA %d", T, t, c.to);
                        cr_assert_eq(c.dst_row + i, (j / cl) * 16 + t % 16);
                        rows[c.to][0][c.dst_row + i]++;
                    } else {
                        cr_assert_eq(c.dst_row + i, t, "T %d: key row %d lands at %d", T, t,
                                     c.dst_row + i);
                        rows[c.to][c.buf][t]++;
                    }
                }
            }
        }
        for (int d = 0; d < cl; d++) {
            const unsigned want = qa_bulk_owed(rt, nkt, d, LD);
            cr_assert(want < (unsigned)TX_MAX);
            cr_assert_eq(got[d], (long)want, "T %d: CTA %d is sent %ld bytes, expects %u", T, d,
                         got[d], want);
            for (int t = 0; t < 64 * rt; t++)
                for (int b = 1; b <= 2; b++)
                    cr_assert_eq(rows[d][b][t], t < nkt * 16, "T %d: CTA %d got %s row %d %d times",
                                 T, d, b == 1 ? "key" : "value", t, rows[d][b][t]);
            for (int slot = 0; slot < 2; slot++) {
                const int j = d + cl * slot;
                for (int i = 0; i < 16; i++)
                    cr_assert_eq(rows[d][0][16 * slot + i], j < nkt,
                                 "T %d: CTA %d tile %d row %d landed %d times", T, d, j, i,
                                 rows[d][0][16 * slot + i]);
            }
        }
    }
}

/* What each CTA of a qkv + attention pair was sent (rows `width` BF16
 * wide) against what it expects, and each key row attention reads, its own
 * or its peer's, held exactly once. */
static void pair_check_received(int T, int nkt, int width, const long got[2],
                                const int krows[2][128]) {
    for (int d = 0; d < 2; d++) {
        const unsigned want = qp_push_owed(nkt, d, width);
        cr_assert(want > 0 && want < (unsigned)TX_MAX);
        cr_assert_eq(got[d], (long)want, "T %d: CTA %d is sent %ld bytes, expects %u", T, d, got[d],
                     want);
        for (int t = 0; t < nkt * 16; t++)
            cr_assert_eq(krows[d][t], 1, "T %d: CTA %d has key row %d %d times", T, d, t,
                         krows[d][t]);
    }
}

/* qkv + attention over a pair of CTAs: step 2 of qkv_attn_pair_kernel (CTA
 * r has rows 64 r .. 64 r + 63, T > 64, head_dim 64), then what step 3
 * reads: every K and V row below nkt 16, its own or its peer's, once. */
Test(push_plan, qkv_attn_pair_every_sequence_length) {
    constexpr int D = 64;
    for (int T = 65; T <= 128; T++) {
        const int nkt = (T + 15) / 16;
        long got[2] = {0, 0};
        int krows[2][128];
        memset(krows, 0, sizeof krows);
        for (int rank = 0; rank < 2; rank++) {
            const int peer = rank ^ 1, t0 = rank * 64, sent = qp_push_rows(nkt, rank);
            for (int e = 0; e < sent * (D / 8); e++) {
                const int t = t0 + e / (D / 8), c = (e % (D / 8)) * 8;
                cr_assert(t < 128, "T %d: row %d past K's 128 rows", T, t);
                got[peer] += 2 * 16; /* a K and a V chunk */
                if (c == 0) krows[peer][t]++;
            }
            for (int t = t0; t < t0 + 64; t++) krows[rank][t]++; /* its own rows, emitted */
        }
        pair_check_received(T, nkt, D, got, krows);
    }
}

/* The pair's bulk form (HRMT_CUDA_QKV_ATTN_BULK): CTA r copies its K rows
 * and its V rows below nkt 16 to the same rows of its peer's, one transfer
 * each of whole padded rows; each expects qp_push_owed at that width. */
Test(push_plan, qkv_attn_pair_bulk_every_sequence_length) {
    constexpr int LD = 72, KV_ROWS = 128; /* qkv_attn_pair_wgmma.cu's QP_LD, K's rows */
    for (int T = 65; T <= 128; T++) {
        const int nkt = (T + 15) / 16;
        long got[2] = {0, 0};
        int krows[2][KV_ROWS];
        memset(krows, 0, sizeof krows);
        for (int rank = 0; rank < 2; rank++) {
            const int peer = rank ^ 1, t0 = rank * 64, sent = qp_push_rows(nkt, rank);
            const int bytes = sent * LD * 2, off = t0 * LD * 2;
            cr_assert(sent > 0, "T %d: CTA %d sends nothing (a copy of 0 bytes)", T, rank);
            cr_assert(bytes % 16 == 0 && off % 16 == 0, "T %d: not in 16-byte units", T);
            cr_assert(off + bytes <= KV_ROWS * LD * 2, "T %d: CTA %d's copy past K", T, rank);
            got[peer] += 2 * bytes; /* K's and V's */
            for (int t = t0; t < t0 + sent; t++) krows[peer][t]++;
            for (int t = t0; t < t0 + 64; t++) krows[rank][t]++; /* its own rows, emitted */
        }
        pair_check_received(T, nkt, LD, got, krows);
    }
}
