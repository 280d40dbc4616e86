/* Exact non-causal attention in F32, one (sample, head) at a time, on the
 * context's F32 GEMM micro-kernel (core/gemm_kernels.h):
 *     S = Q K^T,  P = softmax(S / sqrt(head_dim)),  O = P V,
 * O rounded once to the forward dtype. K^T and V are packed into the
 * micro-kernel's W panels in per-thread scratch (no allocation), Q and P are
 * packed into A slivers by the kernel table's own pack_a. Each S and O element
 * is one F32 chain in increasing index order, so a (sample, head) gives the
 * same bits however the samples are tiled. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/bf16.h"
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

size_t hrmt_level_ws_attn_floats(const hrmt_model *m) { return layout(m).total; }

static inline float ld_elem(const hrmt_model *m, const char *p, size_t i) {
    return m->dt == HRMT_F32 ? ((const float *)(const void *)p)[i]
                             : hrmt_bf16_to_f32(((const uint16_t *)(const void *)p)[i]);
}

/* The micro-kernel and this thread's A sliver / partial-tile scratch. */
typedef struct ukr_ctx {
    const hrmt_gemm_ukernel *uk;
    float *abuf, *part;
} ukr_ctx;

/* Runs the micro-kernel over C[rows, n] = A[rows, kc] * panels, A packed per
 * MR rows from `a` (row stride lda, dtype a_dt). */
static void kernel_rows(const ukr_ctx *x, size_t rows, size_t n, size_t kc, const void *a,
                        hrmt_dtype a_dt, size_t lda, size_t a_esz, const float *panels, void *c,
                        hrmt_dtype c_dt, size_t ldc, size_t c_esz) {
    const hrmt_gemm_ukernel *uk = x->uk;
    const size_t mr = uk->mr, nr = uk->nr;
    float *abuf = x->abuf, *part = x->part;
    for (size_t i0 = 0; i0 < rows; i0 += mr) {
        size_t mi = rows - i0 < mr ? rows - i0 : mr;
        uk->pack_a(mi, kc, (const char *)a + i0 * lda * a_esz, a_dt, lda, abuf);
        for (size_t j0 = 0; j0 < n; j0 += nr) {
            hrmt_gemm_ukr_out o = {part, nr,   0, 1,  (char *)c + (i0 * ldc + j0) * c_esz,
                                   ldc,  c_dt, 0, mi, n - j0 < nr ? n - j0 : nr};
            uk->run(kc, abuf, panels + (j0 / nr) * kc * nr, &o);
        }
    }
}

static void attend_one(const hrmt_model *m, const char *q, char *out, float *scr) {
    const hrmt_gemm_ukernel *uk = &m->ctx->be->gemm.f32;
    const attn_layout L = layout(m);
    const size_t T = m->T, d = m->head_dim, ld = 3 * m->hidden, nr = uk->nr, es = m->esz;
    const char *k = q + m->hidden * es, *v = q + 2 * m->hidden * es;
    float *S = scr + L.s, *KP = scr + L.kp, *VP = scr + L.vp;
    /* K^T panels: KP[p][c][j] = K[p*nr + j][c] (zero past T). */
    for (size_t p = 0; p * nr < T; p++) {
        float *dst = KP + p * d * nr;
        size_t nj = T - p * nr < nr ? T - p * nr : nr;
        if (nj < nr) memset(dst, 0, d * nr * sizeof(float));
        for (size_t j = 0; j < nj; j++) {
            const char *row = k + (p * nr + j) * ld * es;
            for (size_t c = 0; c < d; c++) dst[c * nr + j] = ld_elem(m, row, c);
        }
    }
    /* V panels: VP[p][j][c] = V[j][p*nr + c] (zero past head_dim). */
    for (size_t p = 0; p * nr < d; p++) {
        float *dst = VP + p * T * nr;
        size_t nc = d - p * nr < nr ? d - p * nr : nr;
        for (size_t j = 0; j < T; j++) {
            const char *row = v + j * ld * es;
            for (size_t c = 0; c < nc; c++) dst[j * nr + c] = ld_elem(m, row, p * nr + c);
            for (size_t c = nc; c < nr; c++) dst[j * nr + c] = 0.0f;
        }
    }
    const ukr_ctx x = {uk, scr + L.a, scr + L.part};
    kernel_rows(&x, T, T, d, q, m->dt, ld, es, KP, S, HRMT_F32, T, 4);
    m->ctx->be->rowops.softmax[HRMT_F32](T, T, S, T, (float)(1.0 / sqrt((double)d)), S, T);
    kernel_rows(&x, T, d, T, S, HRMT_F32, T, 4, VP, out, m->dt, m->hidden, es);
}

/* Job = one (sample, head): sample job / heads, head job % heads. */
static void attend_job(const hrmt_model *m, const void *qkv, void *att, long job, float *scr) {
    const size_t T = m->T, heads = m->heads, d = m->head_dim, es = m->esz;
    size_t s = (size_t)job / heads, h = (size_t)job % heads;
    const char *q = (const char *)qkv + (s * T * 3 * m->hidden + h * d) * es;
    char *o = (char *)att + (s * T * m->hidden + h * d) * es;
    attend_one(m, q, o, scr);
}

void hrmt_attention(const hrmt_model *m, void *qkv, void *att, size_t n, const hrmt_level_ws *ws) {
    const long jobs = (long)(n * m->heads);
    const long want = ws->attn_threads < 1 ? 1 : ws->attn_threads;
    const int nt = (int)(want < jobs ? want : jobs);
    if (nt <= 1) {
        for (long job = 0; job < jobs; job++) attend_job(m, qkv, att, job, ws->attn);
        return;
    }
#pragma omp parallel for num_threads(nt) schedule(static)
    for (long job = 0; job < jobs; job++)
        attend_job(m, qkv, att, job, ws->attn + (size_t)omp_get_thread_num() * ws->attn_stride);
}
