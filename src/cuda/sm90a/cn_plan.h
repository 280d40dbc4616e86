/* The cluster projection + norm's push plan (cluster_norm_wgmma.cu's push
 * form), as plain C so that tests/test_cn_protocol.c models the kernel's
 * cluster protocol with the offsets and byte counts the kernel uses;
 * push_plan.cuh includes it for the kernels and tests/test_push_plan.cu. */
#ifndef HRMT_CUDA_SM90A_CN_PLAN_H
#define HRMT_CUDA_SM90A_CN_PLAN_H

#ifdef __CUDACC__
#define CN_HD static inline __host__ __device__
#else
#define CN_HD static inline
#endif

/* Of a 64-row tile's `live` rows (1-64), those CTA k normalises (rows k rp
 * .. k rp + rp - 1, rp = 64 / CL), 0 to rp. */
CN_HD int cn_push_rows(int live, int k, int rp) {
    const int n = live - k * rp;
    return n < 0 ? 0 : n < rp ? n : rp;
}

/* Where the rows travel, in BF16 elements: a CTA's x block is [64][WN]
 * (tile row, its column); the block owner k's rows start at cn_push_src(k)
 * in it and land in k's [CL][RP][WN] buffer at cn_push_dst(sender), so the
 * owner finds its row j, column col (of H) at cn_push_at(j, col). */
CN_HD int cn_push_src(int owner, int wn, int rp) { return owner * rp * wn; }
CN_HD int cn_push_dst(int sender, int wn, int rp) { return sender * rp * wn; }
CN_HD int cn_push_at(int j, int col, int wn, int rp) {
    return (col / wn) * rp * wn + j * wn + col % wn;
}

/* The bytes of rows owner k is sent: its rows of the other CTAs' blocks
 * (its own block's rows it stores itself: a bulk copy from a CTA's shared
 * memory must go to another CTA's, PTX ISA cp.async.bulk; st.async, which
 * carries the invs, may target the executing CTA in a cluster of more
 * than one). */
CN_HD int cn_push_owed_rows(int live, int k, int rp, int wn, int h) {
    return cn_push_rows(live, k, rp) * (h - wn) * 2;
}

#endif
