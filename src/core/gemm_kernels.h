/* GEMM micro-kernel table (one per CPU ISA), filled by src/cpu/gemm_<isa>.c.
 *
 * The framework (core/gemm.c) computes C = A * W^T in the BLIS way: W is
 * packed once into K blocks of NR-column panels, A is packed per call into
 * MR-row slivers, and a register-tile micro-kernel multiplies one A sliver by
 * one W panel over one K block.
 *
 * Summation order (the contract that makes results independent of blocking
 * and thread count): every output element is one F32 chain over k, started
 * at 0: for F32 W in increasing order k = 0..K-1; for BF16 W in pairs, each
 * pair's odd element first, k = 1, 0, 3, 2, 5, 4, ... (an odd K ends with a
 * zero pad, then K-1). That is vdpbf16ps's order, and the order of the
 * PyTorch build (oneDNN, AVX512_BF16) that made the model's bf16 golden
 * vectors; the F32 kernels follow it on pair-swapped panels and slivers
 * (core/gemm_pack.c), so BF16 A x BF16 W gives the same bits on every table
 * but amx. The amx table runs BF16 A x BF16 W on AMX tiles (bf16_tile below),
 * whose order is fixed per 32-wide K block instead: for each block, the 16
 * even-k and the 16 odd-k products each summed from +0 by fused multiply-adds,
 * the two sums added, that added to the running sum (denormals flushed);
 * tests/support/ref_amx.c is its scalar reference. Its other GEMMs (F32 A or
 * F32 W) are the avx512 table's.
 * A micro-kernel continues the chain of the previous K block by loading its
 * exact F32 partial sums, so where the K block boundaries fall never changes
 * a bit. Per k the F32 kernels do one fused multiply-add (the scalar
 * reference an exact portable fmaf, hrmt_fmaf); the BF16 kernel consumes k in pairs
 * (vdpbf16ps), pairs starting at even k. */
#ifndef HRMT_CORE_GEMM_KERNELS_H
#define HRMT_CORE_GEMM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "hrmt.h"

struct hrmt_gemm_deferred;
struct hrmt_gemm_kernels;

/* One (sample, head) of BF16 attention: q, k, v hold T rows of d (even)
 * elements at row stride ld (ld * 32 < 2^31), out T rows at stride ldo;
 * with rope_cos / rope_sin ([T, d] F32; NULL: none) Q and K are rotated
 * first, with the BF16 rope row op's bits (q and k are not written);
 * softmax(S * scale) on F32 scores with the F32 softmax row op's bits;
 * scratch holds hrmt_attend_tile_scratch_bytes(T, d) bytes, any alignment. */
typedef void (*hrmt_attend_bf16_fn)(const struct hrmt_gemm_kernels *t, size_t T, size_t d,
                                    const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                    size_t ld, float scale, const float *rope_cos,
                                    const float *rope_sin, uint16_t *out, size_t ldo,
                                    void *scratch);

/* attend_bf16's scratch: F32 scores of 32 query rows x T padded to 32, K and
 * V^T as 32-wide tile panels, one A sliver of 32 rows x max(3 T, d) padded
 * (Q's, then P's three parts), rotated copies of Q and K (T x d each), 64
 * bytes of alignment slack. */
static inline size_t hrmt_attend_tile_scratch_bytes(size_t T, size_t d) {
    const size_t tile = 32, Tp = (T + 31) / tile * tile, dp = (d + 31) / tile * tile;
    const size_t kmax = 3 * Tp > dp ? 3 * Tp : dp;
    return 64 + tile * Tp * 4 + 2 * Tp * dp * 2 + tile * kmax * 2 + 2 * T * d * 2;
}

/* Where a micro-kernel's MR x NR tile of sums goes. */
typedef struct hrmt_gemm_ukr_out {
    float *partial; /* full MR x NR F32 tile of partial sums, row stride ld_partial */
    size_t ld_partial;
    int load;        /* 1: continue the chains stored in *partial; 0: start at 0 */
    int final;       /* 0: write the sums to *partial; 1: write them to C */
    void *c;         /* final destination: element (0,0) of the tile in C */
    size_t ldc;      /* in elements */
    hrmt_dtype c_dt; /* HRMT_F32 or HRMT_BF16 (round to nearest even once) */
    int accumulate;  /* 1: C = C + sums (BF16: bf16(f32(C) + sums)) */
    size_t m, n;     /* valid rows / columns of the tile in C (<= MR, NR) */
    /* Optional (NULL / 0: none): bytes from `pf` on that the kernel may
     * prefetch into L2 while it runs, one line per k step -- the driver's
     * next W panel, which streams from L3 or memory. A hint: a kernel may
     * ignore it. */
    const void *pf;
    size_t pf_bytes;
    /* Optional (bf16_tile only; NULL: write C before returning): a finished
     * tile's sums may wait here and go to C during the kernel's next call on
     * this thread, under its products; tile_end writes what is left. */
    struct hrmt_gemm_deferred *deferred;
} hrmt_gemm_ukr_out;

/* A finished 32 x 32 tile whose write to C is put off (see `deferred`): its
 * F32 sums as four 16 x 16 tiles (C00, C01, C10, C11) and where they go. */
typedef struct hrmt_gemm_deferred {
    float sums[4][256] __attribute__((aligned(64)));
    hrmt_gemm_ukr_out to; /* c, ldc, c_dt, accumulate, m, n */
    int next;             /* 16-row blocks already written; 2: none pending */
} hrmt_gemm_deferred;

/* Micro-kernel: multiplies a packed A sliver (kc x MR, see pack_a) by a packed
 * W panel (kc x NR, layout in core/gemm_pack.c) and stores per `out`. For the
 * BF16 pair kernel kc is even. No pointer needs any particular alignment
 * (64 bytes is fastest). */
typedef void (*hrmt_gemm_ukr_fn)(size_t kc, const void *a, const void *b,
                                 const hrmt_gemm_ukr_out *out);

/* Packs rows [0, m) (m <= MR) and columns [0, kc) of A (row stride lda, dtype
 * a_dt) into one sliver: F32 kernels store k-major (MR floats per k), the
 * BF16 kernel k-pair-major (MR 32-bit words per pair, each word = A[i][2p] in
 * the low half, A[i][2p+1] in the high half). Rows m..MR-1 and the odd k tail
 * are zero. */
typedef void (*hrmt_gemm_pack_a_fn)(size_t m, size_t kc, const void *a, hrmt_dtype a_dt, size_t lda,
                                    void *dst);

typedef struct hrmt_gemm_ukernel {
    const char *name;     /* XNNPACK style, e.g. "f32_gemm__avx512_14x32" */
    size_t mr, nr;        /* register tile */
    size_t k_unit;        /* 1 (F32) or 2 (BF16 pairs): K blocks are multiples */
    hrmt_gemm_ukr_fn run; /* NULL: this table has no such kernel */
    hrmt_gemm_pack_a_fn pack_a;
} hrmt_gemm_ukernel;

typedef struct hrmt_gemm_kernels {
    size_t mr, nr;          /* register tile of the F32 kernel (sizes the tile plan) */
    hrmt_gemm_ukernel f32;  /* F32 products; BF16 operands widened while packing */
    hrmt_gemm_ukernel bf16; /* BF16 x BF16 products in pairs; run == NULL when the
                             * CPU lacks it. Same nr as f32 (W panels are shared). */
    /* With the pair kernel: bf16.pack_a with each pair's halves swapped, for
     * callers that pack their own W panels swapped likewise (the model's
     * attention), so that the pair kernel adds k = 2p before 2p + 1, the
     * F32 kernels' increasing order (see src/cpu/gemm_bf16_avx512.c). The
     * driver does not use it. NULL otherwise. */
    hrmt_gemm_pack_a_fn bf16_pack_a_ordered;
    /* amx table: the tile kernel the driver runs for BF16 A x BF16 W instead
     * of `bf16` (run == NULL elsewhere). Same nr as f32; k_unit 32, its
     * chains go by 32-wide K blocks (src/cpu/gemm_amx.c); packed W pads K to
     * a multiple of 32. */
    hrmt_gemm_ukernel bf16_tile;
    /* With bf16_tile: per-thread set-up before a run of its calls on that
     * thread, and tear-down after it; the driver brackets each unit of C
     * with them. The AMX kernel loads its tile configuration here (~230
     * cycles, up to a quarter of one 32 x 32 x 512 call) and releases the
     * tiles at the end. A deferred tile starts with next = 2 (none). */
    void (*tile_begin)(void);
    void (*tile_end)(struct hrmt_gemm_deferred *deferred); /* writes its pending tile first */
    /* amx table: BF16 attention of one (sample, head) on the tile kernel
     * (src/cpu/attention_amx.c); NULL elsewhere (the model's F32 kernels). */
    hrmt_attend_bf16_fn attend_bf16;
} hrmt_gemm_kernels;

int hrmt_gemm_supports(const hrmt_gemm_kernels *t, hrmt_op op, hrmt_dtype dtype);

#endif
