/* Exact non-causal attention in F32, one (sample, head) at a time, on the
 * context's GEMM micro-kernels (core/gemm_kernels.h):
 *     S = Q K^T,  P = softmax(S / sqrt(head_dim)),  O = P V,
 * O rounded once to the forward dtype. K^T and V are packed into the
 * micro-kernels' W panels in per-thread scratch (no allocation), Q and P are
 * packed into A slivers by the kernel table's own packing.
 *
 * With BF16 activations and a BF16 pair kernel, S = Q K^T runs on that kernel
 * (twice the F32 kernel's rate) with both operands packed by the table's
 * bf16_pack_a_ordered: each pair adds k = 2p, then 2p + 1, the same chain as
 * the F32 kernels and the scalar table (same bits for normal numbers; the
 * pair kernel flushes denormals). O = P V stays on the F32 kernel: P is F32.
 * Every element is one deterministic chain, so a (sample, head) gives the
 * same bits however the samples are tiled. The amx table runs BF16 models'
 * attention on AMX tiles instead (gemm.attend_bf16, src/cpu/attention_amx.c):
 * AMX's K order, P split into three exact BF16 parts for O = P V. */
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "model/model.h"

#define UP(x, m) (((x) + (m)-1) / (m) * (m))

typedef struct attn_layout {
    size_t s, kp, vp, a, part, total; /* float offsets of each piece */
} attn_layout;

static attn_layout layout(const hrmt_model *m) {
    const hrmt_gemm_ukernel *uk = &m->ctx->be->gemm.f32;
    const size_t T = m->T, d = m->head_dim, mr = uk->mr, nr = uk->nr;
    attn_layout l;
    size_t kmax = T > d ? T : d;
    l.s = 0;                             /* S / P [T, T] */
    l.kp = UP(T * T, 16);                /* K^T panels: ceil(T/nr) x d x nr */
    l.vp = l.kp + UP(UP(T, nr) * d, 16); /* V panels: ceil(d/nr) x T x nr */
    l.a = l.vp + UP(UP(d, nr) * T, 16);  /* one A sliver: kmax x mr */
    l.part = l.a + UP(kmax * mr, 16);    /* micro-kernel partial tile */
    l.total = l.part + UP(mr * nr, 16);
    return l;
}

/* The table's tile attention (amx) when it applies to this model: BF16
 * activations, an even head_dim, row strides its gathers can index. */
static hrmt_attend_bf16_fn tile_attention(const hrmt_model *m) {
    const hrmt_attend_bf16_fn f = m->ctx->be->gemm.attend_bf16;
    if (!f || m->dt != HRMT_BF16 || m->head_dim % 2 || 3 * m->hidden > (size_t)INT32_MAX / 32)
        return NULL;
    return f;
}

size_t hrmt_level_ws_attn_floats(const hrmt_model *m) {
    size_t floats = layout(m).total;
    if (tile_attention(m)) {
        const size_t t = (hrmt_attend_tile_scratch_bytes(m->T, m->head_dim) + 3) / 4;
        if (t > floats) floats = t;
    }
    return floats;
}

/* A micro-kernel with the A packing to feed it, and this thread's A sliver /
 * partial-tile scratch. */
typedef struct ukr_ctx {
    const hrmt_gemm_ukernel *uk;
    hrmt_gemm_pack_a_fn pack_a;
    float *abuf, *part;
} ukr_ctx;

/* The pair kernel for S = Q K^T when it applies (BF16 activations, an even
 * head_dim, a table that has it), else NULL. */
static const hrmt_gemm_kernels *pair_kernels(const hrmt_model *m) {
    const hrmt_gemm_kernels *t = &m->ctx->be->gemm;
    if (m->dt != HRMT_BF16 || m->head_dim % 2 || !t->bf16.run || !t->bf16_pack_a_ordered ||
        t->bf16.nr != t->f32.nr || t->bf16.mr > t->f32.mr)
        return NULL;
    return t;
}

/* Runs the micro-kernel over C[rows, n] = A[rows, kc] * panels (panel j at
 * j * panel_bytes), A packed per MR rows from `a` (row stride lda, dtype a_dt). */
static void kernel_rows(const ukr_ctx *x, size_t rows, size_t n, size_t kc, const void *a,
                        hrmt_dtype a_dt, size_t lda, const void *panels, size_t panel_bytes,
                        void *c, hrmt_dtype c_dt, size_t ldc) {
    const hrmt_gemm_ukernel *uk = x->uk;
    const size_t mr = uk->mr, nr = uk->nr, a_esz = hrmt_dtype_size(a_dt);
    const size_t c_esz = hrmt_dtype_size(c_dt);
    float *abuf = x->abuf, *part = x->part;
    for (size_t i0 = 0; i0 < rows; i0 += mr) {
        size_t mi = rows - i0 < mr ? rows - i0 : mr;
        x->pack_a(mi, kc, (const char *)a + i0 * lda * a_esz, a_dt, lda, abuf);
        for (size_t j0 = 0; j0 < n; j0 += nr) {
            hrmt_gemm_ukr_out o = {part, nr,   0,   1,  (char *)c + (i0 * ldc + j0) * c_esz,
                                   ldc,  c_dt, 0,   mi, n - j0 < nr ? n - j0 : nr,
                                   NULL, 0,    NULL};
            uk->run(kc, abuf, (const char *)panels + (j0 / nr) * panel_bytes, &o);
        }
    }
}

/* K^T as W panels (panel p = keys p*nr .., k = head_dim), built with an A
 * packing: its sliver holds, per k (F32) or k pair (BF16 pairs), MR 32-bit
 * words, and the W panel NR words (core/gemm_pack.c), so copying the MR-wide
 * sliver columns into the NR-wide panel transposes K with the ISA's packing
 * code. `kw` is the words per key (head_dim or head_dim / 2). Keys past T
 * are zero. */
static void pack_k(const ukr_ctx *x, size_t kw, const hrmt_model *m, const char *k, size_t ld,
                   float *panels, float *sliver) {
    const size_t T = m->T, d = m->head_dim, mr = x->uk->mr, nr = x->uk->nr;
    for (size_t p = 0; p * nr < T; p++) {
        float *dst = panels + p * kw * nr;
        for (size_t c0 = 0; c0 < nr; c0 += mr) {
            size_t w = nr - c0 < mr ? nr - c0 : mr, j0 = p * nr + c0;
            size_t valid = j0 >= T ? 0 : T - j0 < w ? T - j0 : w;
            if (valid == 0) {
                for (size_t c = 0; c < kw; c++) memset(dst + c * nr + c0, 0, w * sizeof(float));
                continue;
            }
            x->pack_a(valid, d, k + j0 * ld * m->esz, m->dt, ld, sliver);
            for (size_t c = 0; c < kw; c++)
                memcpy(dst + c * nr + c0, sliver + c * mr, w * sizeof(float));
        }
    }
}

/* V in F32 panels: VP[p][j][c] = V[j][p*nr + c], zero past head_dim. BF16
 * values widen straight into their panel with the table's SIMD conversion
 * (exact: a shift). */
static void pack_v(const hrmt_model *m, const char *v, size_t ld, size_t nr, float *VP) {
    const size_t T = m->T, d = m->head_dim;
    const hrmt_cvt_bf16_f32_fn widen = m->ctx->be->rowops.cvt_bf16_f32;
    for (size_t j = 0; j < T; j++) {
        const char *row = v + j * ld * m->esz;
        for (size_t p = 0; p * nr < d; p++) {
            float *dst = VP + (p * T + j) * nr;
            size_t nc = d - p * nr < nr ? d - p * nr : nr;
            if (m->dt == HRMT_F32)
                memcpy(dst, (const float *)row + p * nr, nc * sizeof(float));
            else
                widen(dst, (const uint16_t *)row + p * nr, nc);
            if (nc < nr) memset(dst + nc, 0, (nr - nc) * sizeof(float));
        }
    }
}

/* `rope`: Q and K were rotated in place (the F32 kernels' path), or are
 * rotated by the tile attention on their way into its panels. */
static void attend_one(const hrmt_model *m, const char *q, char *out, float *scr, int rope) {
    const size_t T = m->T, d = m->head_dim, ld = 3 * m->hidden, es = m->esz;
    const char *k = q + m->hidden * es, *v = q + 2 * m->hidden * es;
    const float scale = (float)(1.0 / sqrt((double)d));
    const hrmt_attend_bf16_fn tile = tile_attention(m);
    if (tile) {
        tile(&m->ctx->be->gemm, T, d, (const uint16_t *)q, (const uint16_t *)k, (const uint16_t *)v,
             ld, scale, rope ? m->rope_cos : NULL, rope ? m->rope_sin : NULL, (uint16_t *)out,
             m->hidden, scr);
        return;
    }
    const hrmt_gemm_ukernel *uk = &m->ctx->be->gemm.f32;
    const attn_layout L = layout(m);
    const size_t nr = uk->nr;
    float *S = scr + L.s, *KP = scr + L.kp, *VP = scr + L.vp;
    /* The A-sliver area is free until the kernels run: it holds K's slivers
     * on their way into the panels. */
    float *tmp = scr + L.a;
    pack_v(m, v, ld, nr, VP);
    const ukr_ctx x = {uk, uk->pack_a, scr + L.a, scr + L.part};
    const hrmt_gemm_kernels *pk = pair_kernels(m);
    if (pk) {
        const ukr_ctx x2 = {&pk->bf16, pk->bf16_pack_a_ordered, scr + L.a, scr + L.part};
        pack_k(&x2, d / 2, m, k, ld, KP, tmp);
        kernel_rows(&x2, T, T, d, q, m->dt, ld, KP, d / 2 * nr * 4, S, HRMT_F32, T);
    } else {
        pack_k(&x, d, m, k, ld, KP, tmp);
        kernel_rows(&x, T, T, d, q, m->dt, ld, KP, d * nr * 4, S, HRMT_F32, T);
    }
    m->ctx->be->rowops.softmax[HRMT_F32](T, T, S, T, scale, S, T);
    kernel_rows(&x, T, d, T, S, HRMT_F32, T, VP, T * nr * 4, out, m->dt, m->hidden);
}

/* Job = one (sample, head): sample job / heads, head job % heads. With
 * `rope`, first rotates this head's Q and K in place (the row op on these two
 * head vectors of every token: the same bits as one pass over all heads,
 * while the rows are on their way into the caches anyway); the tile
 * attention rotates them on their way into its panels instead. */
static char *head_q(const hrmt_model *m, void *qkv, long job) {
    size_t s = (size_t)job / m->heads, h = (size_t)job % m->heads;
    return (char *)qkv + (s * m->T * 3 * m->hidden + h * m->head_dim) * m->esz;
}

/* Prefetches (into L2) one job's Q, K and V: T strided head slices that the
 * hardware prefetchers do not follow, each line a miss to L3 otherwise. */
static void prefetch_head(const hrmt_model *m, const char *q) {
    const size_t row = 3 * m->hidden * m->esz, part = m->hidden * m->esz;
    const size_t bytes = m->head_dim * m->esz;
    for (size_t t = 0; t < m->T; t++)
        for (size_t x = 0; x < 3; x++)
            for (size_t off = 0; off < bytes; off += 64)
                __builtin_prefetch(q + t * row + x * part + off, 0, 2);
}

static void attend_job(const hrmt_model *m, void *qkv, void *att, long job, long next, float *scr,
                       int rope) {
    const size_t T = m->T, heads = m->heads, d = m->head_dim, es = m->esz;
    size_t s = (size_t)job / heads, h = (size_t)job % heads;
    char *q = head_q(m, qkv, job);
    char *o = (char *)att + (s * T * m->hidden + h * d) * es;
    /* The next job's rows arrive while this one computes. */
    if (next >= 0) prefetch_head(m, head_q(m, qkv, next));
    if (rope && !tile_attention(m))
        m->ctx->be->rowops.rope[m->dt](T, 2, d, q, 3 * m->hidden, m->hidden, m->rope_cos,
                                       m->rope_sin, d);
    attend_one(m, q, o, scr, rope);
}

/* Claims the next run of jobs [first, *end) from `counter`; jobs when none
 * is left. */
static long claim_run(atomic_long *counter, long jobs, long threads, long *end) {
    long first = atomic_load(counter), n;
    do {
        if (first >= jobs) return jobs;
        n = (jobs - first) / (2 * threads);
        if (n < 1) n = 1;
    } while (!atomic_compare_exchange_weak(counter, &first, first + n));
    *end = first + n;
    return first;
}

static void attention_run(const hrmt_model *m, void *qkv, void *att, size_t n,
                          const hrmt_level_ws *ws, int rope) {
    const long jobs = (long)(n * m->heads);
    const long want = ws->threads < 1 ? 1 : ws->threads;
    const int nt = (int)(want < jobs ? want : jobs);
    if (nt <= 1) {
        prefetch_head(m, head_q(m, qkv, 0));
        for (long job = 0; job < jobs; job++)
            attend_job(m, qkv, att, job, job + 1 < jobs ? job + 1 : -1, ws->attn, rope);
        return;
    }
    /* Jobs go out in shrinking runs of consecutive jobs (guided: a run is a
     * (2 threads)-th of what is left), each thread claiming its next run
     * before the last job of the current one, so that it always knows the
     * job to prefetch. With fixed ranges one thread's share took 1.5x the
     * other's on the 2-core guest (a busy host) while the other waited; runs
     * of consecutive heads keep the locality of ranges (one job a claim put
     * the rows of neighbouring heads on both cores: RoPE took twice as long).
     * Which thread runs a job changes no bit. */
    atomic_long counter = 0;
    /* The level's whole team (gemm.c's run_units says why); threads past
     * the jobs find none to claim. */
#pragma omp parallel num_threads((int)want)
    {
        float *scr = ws->attn + (size_t)omp_get_thread_num() * ws->attn_stride;
        long end = 0, job = claim_run(&counter, jobs, nt, &end);
        if (job < jobs) prefetch_head(m, head_q(m, qkv, job));
        while (job < jobs) {
            long next = job + 1, next_end = end;
            if (next >= end) next = claim_run(&counter, jobs, nt, &next_end);
            attend_job(m, qkv, att, job, next < jobs ? next : -1, scr, rope);
            job = next;
            end = next_end;
        }
    }
}

void hrmt_attention(const hrmt_model *m, void *qkv, void *att, size_t n, const hrmt_level_ws *ws) {
    attention_run(m, qkv, att, n, ws, 0);
}

void hrmt_rope_attention(const hrmt_model *m, void *qkv, void *att, size_t n,
                         const hrmt_level_ws *ws) {
    attention_run(m, qkv, att, n, ws, m->rope_cos != NULL);
}
