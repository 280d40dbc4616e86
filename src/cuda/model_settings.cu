/* The block's kernel choices a CUDA model reads from the environment at load
 * (docs/USAGE.md): each a 0 / 1 switch, anything else INVALID_ARG, and on
 * only where its kernels serve this model and device. */
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/model_internal.cuh"

/* Where the cluster projection + norm changes cluster size and where it
 * stops, in 64-row tiles (cu_block_settings says how they were found). */
enum { CN16_TILES = 6, CN8_TILES = 15 };

hrmt_status cu_env_switch(hrmt_model *m, const char *name, int dflt, int *on) {
    const char *env = getenv(name);
    *on = dflt;
    if (!env) return HRMT_OK;
    if (strcmp(env, "0") != 0 && strcmp(env, "1") != 0)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "%s='%s' is not 0 or 1", name, env);
    *on = env[0] == '1';
    return HRMT_OK;
}

hrmt_status cu_block_settings(hrmt_model *m) {
    struct hrmt_model_cuda *g = cu_model(m);
    int glu = 0, pnorm = 0, pdl = 0, inject = 0, npro = 0, cnorm = 0, teams = 0, heads = 0, qa = 0,
        slut = 0, pin = 0, reset = 0, fold = 0, prof = 0, qa_cta = 0, qa_pair = 0, fast = 0,
        nvec = 0, once = 0, mul = 0, wres = 0, cpush = 0, cown = 0, qpush = 0, qbulk = 0, early = 0,
        ctaw1 = 0, wres3 = 0, tstore = 0, cown8 = 0, desc = 0, ndesc = 0, nstream = 0, astream = 0,
        tlinks = 0;
    hrmt_status s;
    if ((s = cu_env_switch(m, "HRMT_CUDA_FUSED_GLU", 1, &glu)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_FUSED_NORM", 0, &pnorm)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_PDL", 1, &pdl)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_FUSED_INJECT", 1, &inject)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_NORM_PROLOGUE", 0, &npro)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_CLUSTER_NORM", 1, &cnorm)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_ATTN_TEAMS", 1, &teams)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_FUSED_HEADS", 1, &heads)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_QKV_ATTN", 1, &qa)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_GLU_SMEM_TABLE", 1, &slut)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_PINNED_IO", 1, &pin)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_FUSED_RESET", 1, &reset)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_FOLD_INJECT", 1, &fold)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_PROFILE_STEPS", 0, &prof)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_QKV_ATTN_CTA", 1, &qa_cta)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_QKV_ATTN_PAIR", 1, &qa_pair)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_GLU_FAST_SILU", 1, &fast)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_NORM_VEC", 1, &nvec)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_ATTN_ROPE_ONCE", 1, &once)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_GLU_MUL", 0, &mul)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_GLU_WRES", 1, &wres)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_CLUSTER_NORM_PUSH", 1, &cpush)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_CLUSTER_NORM_OWNER", 1, &cown)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_QKV_ATTN_PUSH", 1, &qpush)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_QKV_ATTN_BULK", 1, &qbulk)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_ROPE_EARLY", 1, &early)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_QKV_ATTN_CTA_W1", 0, &ctaw1)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_GLU_WRES3", 1, &wres3)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_GLU_WRES_TSTORE", 1, &tstore)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_CLUSTER_NORM_OWNER8", 1, &cown8)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_ATTN_DESCEND", 1, &desc)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_NORM_DESCEND", 1, &ndesc)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_NORM_STREAM", 1, &nstream)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_ATTN_STREAM", 1, &astream)) != HRMT_OK ||
        (s = cu_env_switch(m, "HRMT_CUDA_TILE_LINKS", 0, &tlinks)) != HRMT_OK)
        return s;
    /* A profiler attached with its collection off from the start (ncu
     * --profile-from-start off) sees the steps' kernels only, not the GEMM
     * tuner's thousands of timing launches (bench/gpu_profile.sh). */
    g->profile_steps = prof;
    /* The reset of halted samples and the embedding as one kernel where the
     * eight-wide kernels apply (model_kernels.cu), same values. */
    g->fused_reset = reset && m->hidden % 8 == 0;
    /* Each level's input injection folded into the kernel before it (the
     * level before's last cluster projection + norm; the reset + embedding
     * for the first), same bits: one link fewer per level at small batches
     * (model_step.cu). */
    g->fold_inject = fold && m->dt == HRMT_BF16;
    /* The tiered schedule's copy into a tile, its injection and the first L
     * level's injection as one kernel, the later injections folded as the
     * baseline's are, and the copy back (with the H level's injection where
     * it was not folded) as another, both by programmatic dependent launch
     * (model_inject.cu, model_step.cu), same bits: at batch 1 two links a
     * tile and H cycle instead of six, three of which cut the PDL chain
     * (session 61, opt-in until measured). */
    g->tile_links = tlinks && m->dt == HRMT_BF16;
    /* A step's inputs and outputs through page-locked staging, the copies
     * asynchronous (model_mem.cu, model_step.cu): same results. */
    g->pin_io = pin;
    /* qkv + attention over a cluster per (sample, head) while the batch's
     * pairs fit one wave of clusters (sm90a/qkv_attn_wgmma.cu), same bits:
     * one link of the block's chain instead of two. */
    g->qa_clusters = qa ? cu_qkv_attn_clusters(m) : 0;
    /* ... past that, a pair of CTAs per (sample, head) while the pairs fit
     * one wave (sm90a/qkv_attn_pair_wgmma.cu), same bits: half of the CTA
     * form's products on each of twice the SMs. */
    g->qa_pairs = qa && qa_pair ? cu_qkv_attn_pairs(m) : 0;
    /* ... and past that wave, one CTA per (sample, head) while those fit
     * one wave (sm90a/qkv_attn_cta_wgmma.cu), same bits. */
    g->qa_ctas = qa && qa_cta ? cu_qkv_attn_ctas(m) : 0;
    g->qa = g->qa_clusters > 0 || g->qa_pairs > 0 || g->qa_ctas > 0;
    /* The cluster form's pushes of K, V and Q counted in bytes on each
     * receiver's barrier instead of a cluster barrier after them
     * (sm90a/cluster_async.cuh), same bits: on by default since session 34
     * (H100, with HRMT_CUDA_ROPE_EARLY and HRMT_CUDA_CLUSTER_NORM_PUSH:
     * 0.916 / 0.914 of the step at batch 1 / 8). */
    g->qa_push = g->qa_clusters > 0 && qpush;
    /* In both qkv + attention kernels the RoPE factors are loaded into
     * registers before the wait for the kernel before instead of after the
     * products (an L2 round trip off the epilogue), same values, same bits:
     * on by default since session 34 (with the push forms). */
    g->rope_early = g->qa && early && m->cfg.pos_encodings == HRMT_POS_ROPE;
    /* The output heads and the ACT finish as one kernel (model_heads.cu),
     * same bits: one link at the step's end instead of three. */
    g->heads = heads && cu_heads_applies(m);
    /* Attention at small batches: each query tile's O column passes shared
     * by a team of the block's warps (model_attn_mma.cu), same bits. */
    g->attn_teams = teams;
    /* ... and K's and Q's RoPE from one factor load per (row, chunk)
     * (attn_rope.cuh), same bits: for models with RoPE whose attention is
     * the register kernel. On by default since session 31 (H200: 0.988 /
     * 0.987 of the step at batch 64 / 256; docs/CUDA-KERNELS.md). */
    g->attn_rope_once =
        once && m->cfg.pos_encodings == HRMT_POS_ROPE && cu_attention_mma_applies(m);
    /* ... and its blocks taking the samples last first (session 57, on by
     * default): at batch 256 the qkv GEMM's 64 MB output outgrows the 50 MB
     * L2, and the rows it wrote last are the ones still there, so reading
     * them first should turn part of the reads into hits (H100: 0.983 of the
     * step at batch 256 in session 57; 0.998 in session 58's alternating
     * rounds, within the noise). A row's arithmetic depends on its
     * (sample, head) only: same bits. */
    g->attn_descend = desc && cu_attention_mma_applies(m);
    /* ... and its q, k and v copies evict-first in L2 (session 58, opt-in
     * until measured): each is read there for the last time, and o_proj
     * reads att next, so att rather than qkv should stay in the L2. The
     * same bytes copied: same bits. */
    g->attn_stream = astream && cu_attention_mma_applies(m);
    /* Fused gate_up: on wherever it applies (faster than cuBLASLt + the table
     * kernel, or level with it, at every batch on the H200: docs/CUDA-KERNELS.md). */
    g->glu = glu && cu_glu_applies(m);
    /* Its SwiGLU's s(g) by the special-function units instead of table
     * lookups (sm90a/silu_fast.cuh), same bits: on only where a check of all
     * 65536 gates against the table passes on this device. The step's
     * fused gate_up 14% faster at 20992 rows on the H200 (docs/CUDA-KERNELS.md). */
    g->glu_fast = 0;
    if (g->glu && fast && (s = cu_silu_fast_exact(m, &g->glu_fast)) != HRMT_OK) return s;
    /* Else its lookups from a shared-memory copy of the table's busy window
     * (sm90a/glu_wgmma.cu), same bits; with s(g) computed nothing reads it. */
    g->glu_slut = slut && !g->glu_fast;
    /* The tuner also times the gate_up shape with each CTA's W slice
     * resident (sm90a/ring_wres.cuh), kept where it gives the launches'
     * bytes and is faster, as every shape. On by default since session 31
     * (H200: 0.980 of the step at batch 256, level at 16 / 64). */
    g->glu_wres = g->glu && wres;
    /* That shape as 64-row tiles over three consumer warpgroups instead of
     * 128-row tiles over two, same bits (session 39, on by default;
     * ring_wres.cuh): the step 0.962 / 0.959 / 0.994 of the two's time at
     * batch 8 / 64 / 256 (H200), 0.991 / 0.904 / 0.976 / 1.007 at 1 / 8 /
     * 64 / 256 (H100): where rows are few, 64-row tiles give the SMs more
     * tiles (the tuner's pick at batch 8's rows, session 40; at 256 the
     * tile is no faster). */
    g->glu_wres3 = g->glu_wres && wres3 && cu_glu_wres_form_applies(m, 1);
    /* HRMT_CUDA_GLU_WRES_TSTORE (session 44, on by default): the tuner
     * also times the W-resident shape's three-warpgroup form staging each
     * act tile in shared memory for one TMA store (glu_wgmma.cu's shape
     * GLU_WRES_TS, glu_epi_ts), same bits. H100, session 44: 114.7 -> 107.3
     * us a call at batch 256 (ncu), the step 0.994 at 64 and 256, but
     * 1.006-1.009 at 8 where each CTA takes two tiles, so a shape the
     * tuner weighs per row count rather than a form that replaces the
     * plain one. */
    g->glu_wres_ts = g->glu_wres && tstore && cu_glu_wres_ts_applies(m);
    /* Opt-in: its product s(g) u by one mul.rn.bf16x2 a pair instead of
     * unpacking, two F32 products and a conversion, same bits: only where a
     * check of all 2^32 BF16 pairs on this device agrees. Level with the
     * default on the H200 (session 31: 1.005 / 1.000 / 0.999 / 1.005 of the
     * step at batch 1 / 8 / 64 / 256). */
    g->glu_mul = 0;
    if (g->glu && mul && (s = cu_glu_mul_exact(m, &g->glu_mul)) != HRMT_OK) return s;
    /* Projection + norm in one kernel past the cluster form's wave (two-CTA
     * clusters per 128-row tile, sm90a/proj_norm_wgmma.cu), same bits:
     * opt-in, slower than the GEMM + row kernel on the H200 (session 31:
     * 1.71 / 1.19 / 1.20 / 1.10 of the step at batch 16 / 64 / 128 / 256). */
    g->pnorm = pnorm ? cu_proj_norm_clusters(m) : 0;
    g->pdl = pdl && m->ctx->cuda->prop.major >= 9;
    /* The norm between projections with 16-byte accesses (rowops_norm.cu),
     * same bits: on by default since session 31 (H200: 0.965 / 0.958 /
     * 0.980 of the step at batch 16 / 64 / 256; the 2-byte form issues ~630
     * instructions a row). Where the block launches the row kernel with
     * PDL: BF16 rows of 256 or 512. */
    g->norm_vec = nvec && g->pdl && m->dt == HRMT_BF16 && (m->hidden == 256 || m->hidden == 512);
    /* ... and its rows last first, with (next) its loads as streaming data
     * (session 58, both on by default; H100, together: 0.993 / 0.995 of the
     * step at batch 256 / 128 over six rounds): the norm reads o_proj's or
     * down_proj's output, whose rows written last are the ones still in L2,
     * and the next GEMM then reads first the rows the norm wrote last. A
     * row's arithmetic is its own: same bits. Where the block launches the
     * row kernel with PDL (hrmt_cuda_residual_rmsnorm_pdl). */
    g->norm_descend = ndesc && g->pdl && hrmt_cuda_residual_rmsnorm_pdl_applies(m->dt, m->hidden);
    /* ld.global.cs (evict-first in L2): both inputs are read for the last
     * time there and the output is the next GEMM's input, so the inputs
     * should be the lines the L2 gives up first. Same values: same bits. */
    g->norm_stream = nstream && g->norm_vec;
    g->inject = inject;
    /* Norm prologue: opt-in, slower than the row kernel + GEMM on the H200
     * (every CTA of a row tile forms the same 64 rows, 128 threads doing what
     * the row kernel spreads over the GPU). It needs the fused gate_up (the
     * norm after o_proj goes into its prologue), and not the projection +
     * norm kernel, which does that norm. */
    g->npro = npro && g->glu && !g->pnorm && cu_glu_norm_applies(m) && cu_wgemm_norm_applies(m);
    /* Projection + norm over a cluster at small batches (one wave of
     * clusters), so that the block's two norms are not links of their own:
     * on by default. Clusters of 16 up to CN16_TILES 64-row tiles, then of 8
     * (more tiles fit a wave) up to CN8_TILES, then the GEMM and the row
     * kernel: the H200's crossovers (docs/CUDA-KERNELS.md; session 24: 8 against 16
     * 0.941 / 0.960 / 0.958 / 1.009 of the step at 8 / 11 / 13 / 16 tiles,
     * 8 against the launches 0.955 / 0.989 at 15 / 16; session 23: 16 against
     * 8 0.896 / 0.914 / 0.949 at 2 / 3 / 6). A device without
     * clusters of 16 takes 8 from the first tile. HRMT_CUDA_CLUSTER_NORM_CTAS
     * forces one size wherever its wave holds the tiles, and the projection
     * + norm kernel above, when asked for, takes the batches past it. The
     * norm prologue, when asked for, takes precedence. */
    const char *env = getenv("HRMT_CUDA_CLUSTER_NORM_CTAS");
    if (env && strcmp(env, "8") != 0 && strcmp(env, "16") != 0)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG,
                         "HRMT_CUDA_CLUSTER_NORM_CTAS='%s' is not 8 or 16", env);
    g->cnorm = g->cnorm16_max = g->cnorm8_max = 0;
    if (cnorm && !g->npro) {
        const int force = env ? atoi(env) : 0;
        const int fit16 = force == 8 ? 0 : cu_cluster_norm_clusters(m, 16);
        const int fit8 = force == 16 ? 0 : cu_cluster_norm_clusters(m, 8);
        g->cnorm16_max = force ? fit16 : (fit16 < CN16_TILES ? fit16 : CN16_TILES);
        g->cnorm8_max = force ? fit8 : (fit8 < CN8_TILES ? fit8 : CN8_TILES);
        g->cnorm = g->cnorm16_max > 0 || g->cnorm8_max > 0;
    }
    /* Its norm's row exchange and invs pushed (bulk copies, st.async) into
     * barriers that count bytes, one split cluster barrier at the start
     * instead of two after the products (sm90a/cluster_async.cuh), same
     * bits: on by default since session 34 (with the cluster qkv +
     * attention's pushes and HRMT_CUDA_ROPE_EARLY). */
    g->cnorm_push = g->cnorm && cpush;
    /* With the pushes, the CTA that computes a row's inv normalises and
     * stores the whole row from the rows it was sent, so no inv goes back
     * to the row's other CTAs (sm90a/cluster_norm_wgmma.cu, OWN), same bits. */
    g->cnorm_own = g->cnorm_push && cown;
    /* HRMT_CUDA_CLUSTER_NORM_OWNER8 (written in session 55, on by default
     * since session 56): in clusters of 8, where a CTA owns eight rows, the
     * producer warpgroup's warps take owned rows too, one a warp; the same
     * rows' arithmetic, the same bits. H100: 0.981 / 0.982 of the step at
     * batch 8 / 11; clusters of 16 (four rows a CTA) keep the consumer's
     * four warps, where the eight-warp form was 1.012 / 1.013 at 1 / 4.
     * Only where clusters of 8 serve, so the path query says whether it runs. */
    g->cnorm_own8 = g->cnorm_own && cown8 && g->cnorm8_max > 0;
    /* Its ring's stages, and the cluster qkv + attention's, as one TMA copy
     * of A and one of W over 1, 2 or 4 k blocks (wgmma_common.cuh's
     * encode_kb), same bits: their push forms only. Four by default since
     * session 37 (H100): the batch-1 down_proj ring's
     * products at 143 / 109 / 72 ns a 64-k stage with 1 / 2 / 4 k blocks a
     * copy (bench/cuda_ring_feed.cu), the step 0.969 / 0.966 / 0.975 /
     * 0.968 of one's time at batches 1 / 2 / 4 / 8 (2: 0.98-1.02). */
    env = getenv("HRMT_CUDA_RING_KB");
    if (env && strcmp(env, "1") != 0 && strcmp(env, "2") != 0 && strcmp(env, "4") != 0)
        return hrmt_fail(m->ctx, HRMT_ERR_INVALID_ARG, "HRMT_CUDA_RING_KB='%s' is not 1, 2 or 4",
                         env);
    const int ring_kb = env ? atoi(env) : 4;
    g->cnorm_kb = g->cnorm_push ? ring_kb : 1;
    g->qa_kb = g->qa_push ? ring_kb : 1;
    /* The cluster qkv + attention's pushes as copy-engine transfers of
     * whole rows (sm90a/push_plan.cuh's qa_bulk_copy), same bits: built with
     * the four-block stages only. */
    g->qa_bulk = g->qa_push && qbulk && g->qa_kb == 4;
    /* ... and the pair form's, one transfer of K rows and one of V rows. */
    g->qp_bulk = g->qa_pairs > 0 && qbulk;
    /* The CTA form's W's three parts (the head's q, k and v rows) as one
     * copy of a 4-D map instead of three (wgmma_common.cuh's encode_parts),
     * same bits: opt-in, to be timed (the ring-feed bench's lesson: fewer,
     * larger copies feed faster). */
    g->qa_cta_w1 = g->qa_ctas > 0 && ctaw1;
    return HRMT_OK;
}

int cu_cluster_norm_ctas(const hrmt_model *m, size_t rows) {
    const struct hrmt_model_cuda *g = cu_model(m);
    const size_t tiles = (rows + 63) / 64;
    if (!g->cnorm || rows == 0) return 0;
    if (tiles <= (size_t)g->cnorm16_max) return 16;
    return tiles <= (size_t)g->cnorm8_max ? 8 : 0;
}

int hrmt_cuda_model_uses(const hrmt_model *m, hrmt_model_path p) {
    const struct hrmt_model_cuda *g = cu_model(m);
    switch (p) {
    case HRMT_PATH_FUSED_GLU: return g->glu != 0;
    case HRMT_PATH_FUSED_NORM: return g->pnorm != 0;
    case HRMT_PATH_NORM_PROLOGUE: return g->npro != 0;
    case HRMT_PATH_CLUSTER_NORM: return g->cnorm != 0;
    case HRMT_PATH_FUSED_HEADS: return g->heads != 0;
    case HRMT_PATH_QKV_ATTN: return g->qa != 0;
    case HRMT_PATH_GEMM_TUNE_EXACT: return g->tune_exact != 0;
    case HRMT_PATH_PINNED_IO: return g->pin_io != 0;
    case HRMT_PATH_FUSED_RESET: return g->fused_reset != 0;
    case HRMT_PATH_FOLD_INJECT: return g->fold_inject != 0;
    case HRMT_PATH_GLU_FAST_SILU: return g->glu_fast != 0;
    case HRMT_PATH_NORM_VEC: return g->norm_vec != 0;
    case HRMT_PATH_ATTN_ROPE_ONCE: return g->attn_rope_once != 0;
    case HRMT_PATH_ATTN_DESCEND: return g->attn_descend != 0;
    case HRMT_PATH_NORM_DESCEND: return g->norm_descend != 0;
    case HRMT_PATH_NORM_STREAM: return g->norm_stream != 0;
    case HRMT_PATH_ATTN_STREAM: return g->attn_stream != 0;
    case HRMT_PATH_TILE_LINKS: return g->tile_links != 0;
    case HRMT_PATH_GLU_MUL: return g->glu_mul != 0;
    case HRMT_PATH_ROPE_EARLY: return g->rope_early != 0;
    case HRMT_PATH_CLUSTER_NORM_PUSH: return g->cnorm_push != 0;
    case HRMT_PATH_CLUSTER_NORM_OWNER: return g->cnorm_own != 0;
    case HRMT_PATH_CLUSTER_NORM_OWNER8: return g->cnorm_own8 != 0;
    case HRMT_PATH_QKV_ATTN_PUSH: return g->qa_push != 0;
    case HRMT_PATH_QKV_ATTN_BULK: return g->qa_bulk != 0 || g->qp_bulk != 0;
    case HRMT_PATH_RING_KB: return g->cnorm_kb > 1 || g->qa_kb > 1;
    case HRMT_PATH_QKV_ATTN_CTA_W1: return g->qa_cta_w1 != 0;
    case HRMT_PATH_GLU_WRES3: return g->glu_wres3 != 0;
    case HRMT_PATH_GLU_WRES_TSTORE: return g->glu_wres_ts != 0;
    case HRMT_PATH_QKV_ATTN_PAIR: return g->qa_pairs > 0;
    }
    return 0;
}
