/* Packing W [N, K] once into the micro-kernels' panel layout.
 *
 * Layout: N is cut into panels of nr columns, K into nblk blocks of kc (the
 * last one shorter). Panel j holds all of its K blocks back to back, block p
 * (kc_p deep) at p * kc * nr elements, so a walk over j, then p, then k (the
 * driver's order) reads W as one forward stream:
 *   F32 from F32 W:  block[k * nr + jj]             = W[j*nr + jj][k0 + k]
 *   F32 from BF16 W: block[(k ^ 1) * nr + jj]       = W[j*nr + jj][k0 + k]
 *   BF16X2:          block[(k/2) * 2nr + 2jj + k%2] = W[j*nr + jj][k0 + k] (bf16)
 * BF16 W sets the pair order of every chain (core/gemm_kernels.h): each pair
 * adds k = 2p + 1, then 2p. A BF16X2 pair keeps memory order (even k low);
 * vdpbf16ps adds the high halves' product first, which is that order
 * (src/cpu/gemm_bf16_avx512.c). F32 panels of BF16 W hold each pair swapped
 * and the driver swaps the A slivers likewise, so the F32 kernels run the
 * same chain. K is padded to even for BF16 W.
 * Columns past N and k past K are zero. Panel j starts at j * k_pad * nr
 * elements: 64-byte aligned for nr * esz a multiple of 64 (every x86 table).
 *
 * KC: F32 panels take the plan's gemm_kc (the kc x nr panel block stays in
 * L1). BF16X2 panels (the pair kernel) are blocked for L2 instead: that
 * kernel keeps its peak rate with both the A sliver and the B panel streaming
 * from L2 (measured on Zen 4 up to kc = 1536: 14 x 4 + 32 x 4 bytes per 28
 * vdpbf16ps), while every K block boundary costs a partial-sum round trip
 * (store and reload of the 14 x 32 tile: ~3% at kc = 256). So a pair block
 * may hold a B panel block of up to a quarter of the plan's L2 budget for the
 * A block (gemm_mc x gemm_kc F32): K = 512 and 1536 run in one block on Zen 4.
 * The K blocks are then balanced (same count, equal sizes) so no block is a
 * sliver: K = 512 with KC = 146 gives 4 blocks of 128. Where blocks fall never
 * changes a result (the kernels continue each chain across blocks), only
 * speed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/bf16.h"
#include "core/checked.h"
#include "core/context.h"
#include "core/gemm.h"
#include "core/huge_alloc.h"

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

/* Zeroed storage for `bytes` of panels, on huge pages where they fit
 * (core/huge_alloc.h): a GEMM walks W panel by panel, and huge pages make
 * M = 82 GEMMs with W from L3 or memory 6% faster (M = 656 ~1%). */
static void *alloc_panels(size_t bytes) {
    void *p = hrmt_huge_alloc(bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

const void *hrmt_gemm_packed_panel(const hrmt_packed_w *w, size_t p, size_t j, size_t *kc_p) {
    size_t k0 = p * w->kc;
    *kc_p = w->k_pad - k0 < w->kc ? w->k_pad - k0 : w->kc;
    return (const char *)w->data + (j * w->k_pad + k0) * w->nr * w->esz;
}

static float load_w(const void *w, hrmt_dtype dt, size_t idx) {
    return dt == HRMT_F32 ? ((const float *)w)[idx] : hrmt_bf16_to_f32(((const uint16_t *)w)[idx]);
}

/* Copies W row (column of B) `col` of block p into its panel. */
static void pack_column(hrmt_packed_w *pw, const void *w, size_t ldw, size_t col, size_t p) {
    size_t kc_p;
    size_t j = col / pw->nr, jj = col % pw->nr;
    void *panel = (void *)hrmt_gemm_packed_panel(pw, p, j, &kc_p);
    size_t k0 = p * pw->kc;
    size_t kv = pw->k - k0 < kc_p ? pw->k - k0 : kc_p; /* valid k in this block */
    size_t row = col * ldw + k0;
    if (pw->fmt == HRMT_GEMM_PACK_F32) {
        float *d = (float *)panel + jj;
        const size_t swap = pw->src_dtype == HRMT_BF16; /* k0 is even then */
        for (size_t k = 0; k < kv; k++) d[(k ^ swap) * pw->nr] = load_w(w, pw->src_dtype, row + k);
    } else {
        const uint16_t *s = (const uint16_t *)w + row;
        uint16_t *d = (uint16_t *)panel + 2 * jj;
        for (size_t k = 0; k < kv; k++) d[(k / 2) * 2 * pw->nr + k % 2] = s[k];
    }
}

void hrmt_packed_w_shape(const hrmt_packed_w *w, size_t *n, size_t *k) {
    if (n) *n = w ? w->n : 0;
    if (k) *k = w ? w->k : 0;
}

hrmt_status hrmt_gemm_pack_w_raw(hrmt_context *ctx, size_t n, size_t k, const void *w,
                                 hrmt_dtype w_dt, size_t ldw, hrmt_packed_w **out) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    if (!out) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm_pack_w: out is NULL");
    *out = NULL;
    if (!w) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm_pack_w: W data is NULL");
    if (n == 0 || k == 0)
        return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm_pack_w: W is [%zu, %zu]; zero dims", n,
                         k);
    if (w_dt != HRMT_F32 && w_dt != HRMT_BF16)
        return hrmt_fail(ctx, HRMT_ERR_DTYPE, "gemm_pack_w: W dtype %s (want F32 or BF16)",
                         hrmt_dtype_name(w_dt));
    if (ldw < k)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm_pack_w: row stride %zu < K %zu", ldw, k);
    const hrmt_gemm_kernels *t = &ctx->be->gemm;
    if (!t->f32.run)
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED, "gemm_pack_w: backend %s has no GEMM",
                         ctx->be->name);

    hrmt_packed_w *pw = calloc(1, sizeof *pw);
    if (!pw) return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "gemm_pack_w: out of memory");
    pw->n = n;
    pw->k = k;
    pw->nr = t->f32.nr;
    pw->src_dtype = w_dt;
    pw->isa = ctx->isa;
    /* BF16 W stays BF16 when a pair kernel exists (BF16 A then uses it; F32 A
     * widens each panel on the fly); otherwise it is widened once, here. */
    pw->fmt = (w_dt == HRMT_BF16 && t->bf16.run) ? HRMT_GEMM_PACK_BF16X2 : HRMT_GEMM_PACK_F32;
    /* Pairs never straddle K blocks; the tile kernel's 32-wide blocks neither. */
    pw->k_unit = w_dt != HRMT_BF16                                      ? 1
                 : pw->fmt == HRMT_GEMM_PACK_BF16X2 && t->bf16_tile.run ? t->bf16_tile.k_unit
                                                                        : 2;
    pw->esz = pw->fmt == HRMT_GEMM_PACK_BF16X2 ? 2 : 4;
    pw->n_pad = round_up(n, pw->nr);
    pw->k_pad = round_up(k, pw->k_unit);

    size_t kc_target, l2_a;
    if (pw->fmt == HRMT_GEMM_PACK_BF16X2 && t->bf16_tile.run) {
        /* Tile kernel: the panel block takes two thirds of the bytes of the
         * plan's F32 L1 micro-panel (KC x NR x 4), about a third of L1, so it
         * stays there while A slivers stream through the tiles from L2 (tile
         * loads read both operands at the TMUL's pace; measured on Emerald
         * Rapids, 48 KiB L1: 256-deep blocks beat 384 and 512 by 10-40%). */
        kc_target = ctx->plan.gemm_kc * 4 / pw->esz * 2 / 3;
    } else if (pw->fmt == HRMT_GEMM_PACK_BF16X2) {
        if (!hrmt_mul_ok(ctx->plan.gemm_kc, ctx->plan.gemm_mc, &l2_a) ||
            !hrmt_mul_ok(l2_a, 4, &l2_a))
            l2_a = SIZE_MAX;
        kc_target = l2_a / 4 / (pw->nr * pw->esz);
    } else {
        kc_target = ctx->plan.gemm_kc;
    }
    if (kc_target > pw->k_pad) kc_target = pw->k_pad; /* one block */
    if (kc_target < pw->k_unit) kc_target = pw->k_unit;
    size_t nblk = (pw->k_pad + kc_target - 1) / kc_target;
    pw->kc = round_up((pw->k_pad + nblk - 1) / nblk, pw->k_unit);
    pw->nblk = (pw->k_pad + pw->kc - 1) / pw->kc;

    size_t elems;
    if (n > SIZE_MAX / ldw || !hrmt_mul_ok(pw->n_pad, pw->k_pad, &elems) ||
        !hrmt_mul_ok(elems, pw->esz, &pw->bytes) || pw->bytes > SIZE_MAX - 64) {
        free(pw);
        return hrmt_fail(ctx, HRMT_ERR_OVERFLOW, "gemm_pack_w: [%zu, %zu] is too large", n, k);
    }
    size_t bytes = pw->bytes;
    pw->data = alloc_panels(bytes);
    if (!pw->data) {
        free(pw);
        return hrmt_fail(ctx, HRMT_ERR_OUT_OF_MEMORY, "gemm_pack_w: cannot allocate %zu bytes",
                         bytes);
    }
    for (size_t p = 0; p < pw->nblk; p++)
        for (size_t col = 0; col < n; col++) pack_column(pw, w, ldw, col, p);
    *out = pw;
    return HRMT_OK;
}

void hrmt_packed_w_destroy(hrmt_packed_w *pw) {
    if (!pw) return;
    free(pw->data);
    free(pw);
}

hrmt_status hrmt_gemm_pack_w(hrmt_context *ctx, const hrmt_tensor *w, hrmt_packed_w **out) {
    if (!ctx) return HRMT_ERR_INVALID_ARG;
    if (out) *out = NULL;
    if (!w) return hrmt_fail(ctx, HRMT_ERR_INVALID_ARG, "gemm_pack_w: w is NULL");
    if (w->device != HRMT_DEVICE_HOST)
        return hrmt_fail(ctx, HRMT_ERR_UNSUPPORTED, "gemm_pack_w: w is not in host memory");
    if (w->ndim != 2)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm_pack_w: w must be 2-D [N, K], has %d dims",
                         w->ndim);
    if (w->stride[1] != 1)
        return hrmt_fail(ctx, HRMT_ERR_SHAPE, "gemm_pack_w: w's last dim must be contiguous");
    return hrmt_gemm_pack_w_raw(ctx, w->shape[0], w->shape[1], w->data, w->dtype, w->stride[0],
                                out);
}
