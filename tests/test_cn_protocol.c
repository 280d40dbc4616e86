/* The synchronisation of the cluster projection + RMSNorm kernel's push form
 * (cluster_norm_kernel, src/cuda/sm90a/cluster_norm_wgmma.cu, PUSH true),
 * checked on the host: every warp of every CTA of one cluster (CL 8 or 16)
 * as a program of the kernel's barrier operations in its order, run by a
 * random scheduler over a model of the mbarriers (support/mbar_model.h), the
 * named barriers, the cluster barrier, the bulk copies and st.async stores
 * landing at random later times, and of what each warp has seen of its
 * CTA's shared memory. All three forms: OWN 0 (the owners' invs by st.async
 * to every CTA), OWN 1 (the consumer's warps normalise the owned rows) and
 * OWN 2 (the producer's warps take rows too; built for clusters of 8 only,
 * so modelled there). What must hold under every
 * interleaving tried:
 *  - no deadlock (some step can always run until every warp has exited);
 *  - a bulk copy reads only xs rows whose writers fenced them for the async
 *    proxy and that its issuer has seen (a barrier between), and goes only
 *    to a CTA whose barrier initialisation its issuer has seen;
 *  - no bytes land in a barrier's phase after it completed, nor in a CTA
 *    that has exited, and no CTA exits while a copy from its xs is in
 *    flight;
 *  - an owner warp reads row j's peer blocks only once landed and seen by
 *    its own xbar wait, and the own block only once written and seen
 *    through a barrier (bar.sync 1 for the consumer's warps, bar.sync 2 for
 *    the producer's in OWN 2), each block holding that CTA's row j where
 *    cn_push_at says the owner reads it;
 *  - every live row of the tile is taken by exactly one warp, no dead row by
 *    any; OWN 0: each CTA reads only invs that landed and it waited for.
 * The rules assumed (PTX ISA): barrier.cluster.wait waits until every
 *  non-exited thread of the cluster has arrived for the phase (exited
 *  threads no longer count; an arrive and a wait alternate in each thread);
 *  bar.sync / bar.arrive count whole warps up to the barrier's thread count,
 *  arrive releasing and sync acquiring; an mbarrier's phase completes when
 *  its pending arrivals and transaction bytes are both zero, the bytes of a
 *  transaction that comes before the arrive.expect_tx taking the count below
 *  zero (cluster_async.cuh: the relaxed cluster arrive does not order the
 *  expect_tx before a peer's sends, so the model lets it take effect late);
 *  a relaxed cluster arrive releases only what a release fence before it
 *  covers (thread 0's fence.mbarrier_init.release.cluster, ring_setup);
 *  proxy fences cover the fencing thread's own writes.
 * Not modelled: the TMA ring and the products (they feed only the rows
 * written into xs, and wait on nothing below), PDL, the global loads and
 * stores, the values, and the pull form (PUSH false). A warp is one agent:
 * consumer warp 0's lanes (thread 128's expect_tx, lanes tid < CL issuing
 * one copy each) run in lane order, each copy its own step; no lane waits
 * for another's work between the warp's barriers, so the order loses no
 * outcome.
 * Breaks of the protocol, one line each, must each be caught (the
 * model_catches_* tests). test_push_plan.cu checks the byte counts and
 * offsets for every row count; the device tests (test_cuda_model's
 * cluster_norm_*) check the bytes. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda/sm90a/cn_plan.h"
#include "support/mbar_model.h"

#define TILE 64
#define MAX_CL 16
#define WARPS 8 /* a CTA's: producer warps 0-3, consumer warps 4-7 */
#define MAX_AG (MAX_CL * WARPS)
#define MAX_OPS 48
#define MAX_EV (MAX_CL * MAX_CL + TILE * MAX_CL + 2 * MAX_CL)
#define MAX_PH 3  /* cluster barrier phases: the kernel uses two */
#define MAX_GEN 4 /* named barrier generations: at most two */
#define MAX_RP 8

/* ---- what a warp has seen of its CTA's shared memory -------------------- */

#define K_XSW(c) (1u << (c))        /* consumer warp c's 16 rows of xs written */
#define K_XSF(c) (1u << (4 + (c)))  /* ... and fenced for the async proxy */
#define K_OWN(j) (1u << (8 + (j)))  /* OWN 1/2: own row j stored in xr */
#define K_OCP(c) (1u << (16 + (c))) /* OWN 0: warp c's chunks of the own block in xr */

enum {
    O_INIT,      /* thread 0: mbar_init xbar, ibar; fence.mbarrier_init */
    O_NB_ARRIVE, /* a: named barrier, b: threads */
    O_NB_WAIT,   /* a: named barrier */
    O_CL_ARRIVE, /* a: 1 when a release fence precedes it */
    O_CL_WAIT,
    O_EXPECT,   /* a: barrier (B_X, B_I), b: bytes */
    O_XS_WRITE, /* step 1: the warp's rows of xs (OWN: and its own rows in xr) */
    O_FENCE,    /* fence.proxy.async */
    O_COPY,     /* a: the owner whose rows go (lane a of consumer warp 0) */
    O_XR_COPY,  /* OWN 0: the warp's chunks of the own block into xr */
    O_MB_WAIT,  /* a: barrier */
    O_ROW,      /* OWN 1/2: owned row a, read and normalised in place */
    O_INV_ROW,  /* OWN 0: owned row a read, its inv sent to every CTA */
    O_READ_INV  /* OWN 0: step 3's reads of xinv */
};
enum { B_X, B_I };
enum { E_EXPECT, E_COPY, E_INV };

/* One-line breaks of the protocol, each of which the model must catch. */
enum {
    M_NONE,
    M_NO_BAR2,         /* OWN 2: the producer's warps skip bar.sync 2 */
    M_NO_PROD_ARRIVE2, /* OWN 2: the producer's warps wait for phase 2 without arriving */
    M_NO_FINAL_WAIT,   /* the consumer exits without the phase-2 wait */
    M_SHORT_XBAR,      /* xbar expects one sender's copy fewer */
    M_ROW_SHORT,       /* xbar expects one row's bytes fewer */
    M_NO_FENCE,        /* no fence.proxy.async before bar.sync 1 */
    M_NO_XS_BAR,       /* no bar.sync 1 after xs */
    M_EARLY_COPY,      /* the copies issued before the phase-1 cluster wait */
    M_NO_XBAR_WAIT,    /* the owners skip the xbar wait */
    M_OWN1_ROWS,       /* OWN 2: the consumer's warps take OWN 1's rows */
    M_NO_IBAR_WAIT,    /* OWN 0: xinv read without the ibar wait */
    M_NO_XR_BAR,       /* OWN 0: no bar.sync 1 after the own block's copy */
    M_IBAR_OWN_ONLY,   /* OWN 0: ibar expects only the CTA's own rows' invs */
    M_COUNT
};

typedef struct {
    int kind, a, b;
} op;

typedef struct {
    op ops[MAX_OPS];
    int n, pc, cta, warp;
    int narr, nwait;    /* cluster barrier arrivals and waits done */
    int nb_gen[3];      /* the generation of each named barrier it joined */
    uint32_t kn, inits; /* K_ facts of its CTA; CTAs whose barrier init it saw */
    uint32_t xseen;     /* xr blocks landed when its xbar wait passed */
    uint64_t iseen;     /* xinv rows landed when its ibar wait passed */
} agent;

typedef struct {
    int count, arrived, gen;
    uint32_t kn, inits; /* released into the generation forming */
    uint32_t done_kn[MAX_GEN], done_inits[MAX_GEN];
} nbar;

typedef struct {
    int kind, src, dst, a, b, c;
} event;

typedef struct {
    int cl, rp, wn, h, live, own, mut, nag;
    agent ag[MAX_AG];
    bar xbar[MAX_CL], ibar[MAX_CL];
    nbar nb[MAX_CL][3];
    int exited[MAX_CL];
    uint32_t cl_rel[MAX_PH]; /* barrier inits released into each cluster phase */
    /* xr's 64 row slots of WN: the tag sender * TILE + tile row, -1 empty;
     * OWN 0's own slots filled in 16-byte chunks. */
    int xr[MAX_CL][TILE], chunks[MAX_CL][TILE];
    uint32_t landed[MAX_CL];  /* xr blocks landed, by sender */
    uint64_t inv[MAX_CL];     /* xinv rows landed */
    int proc[MAX_CL][MAX_RP]; /* the agent (+1) that took owned row j */
    event ev[MAX_EV];
    int nev, nexp; /* events; of them E_EXPECT */
    char problem[200];
} model;

static int rows_of(const model *m, int k) { return cn_push_rows(m->live, k, m->rp); }

static void emit(agent *g, int kind, int a, int b) {
    cr_assert_lt(g->n, MAX_OPS);
    g->ops[g->n++] = (op){kind, a, b};
}
static void nb_sync(agent *g, int id, int threads) {
    emit(g, O_NB_ARRIVE, id, threads);
    emit(g, O_NB_WAIT, id, 0);
}

/* Producer warp w of CTA k (warp 0 holds thread 0). */
static void producer(model *m, int k, int w) {
    agent *g = &m->ag[k * WARPS + w];
    const int mine = rows_of(m, k), oj = (m->rp + 7) / 8;
    if (w == 0) emit(g, O_INIT, 0, 0);
    nb_sync(g, 0, 256); /* ring_setup's __syncthreads */
    emit(g, O_CL_ARRIVE, w == 0, 0);
    emit(g, O_CL_WAIT, 0, 0);
    if (m->own != 2) return; /* OWN 0, 1: exit after phase 1 */
    if (m->mut != M_NO_BAR2) nb_sync(g, 2, 256);
    /* Only a warp with a row waits for the bytes (ow < mine). */
    if (4 + w < mine && m->mut != M_NO_XBAR_WAIT) emit(g, O_MB_WAIT, B_X, 0);
    if (m->mut != M_NO_PROD_ARRIVE2) emit(g, O_CL_ARRIVE, 0, 0);
    for (int u = 0; u < oj; u++) { /* owner warp 4 + w, NOW 8 */
        const int j = 4 + w + 8 * u;
        if (j >= mine) break;
        emit(g, O_ROW, j, 0);
    }
    emit(g, O_CL_WAIT, 0, 0);
}

/* Consumer warp c of CTA k (warp 0 holds thread 128 and the copy lanes). */
static void consumer(model *m, int k, int c) {
    agent *g = &m->ag[k * WARPS + 4 + c];
    const int mine = rows_of(m, k), own = m->own, mut = m->mut;
    const int now = own == 2 && mut != M_OWN1_ROWS ? 8 : 4, oj = (m->rp + now - 1) / now;
    nb_sync(g, 0, 256);
    if (c == 0) {
        int owed = cn_push_owed_rows(m->live, k, m->rp, m->wn, m->h);
        if (mut == M_SHORT_XBAR && owed > 0) owed -= mine * m->wn * 2;
        if (mut == M_ROW_SHORT && owed > 0) owed -= m->wn * 2;
        emit(g, O_EXPECT, B_X, owed);
        if (!own) emit(g, O_EXPECT, B_I, (mut == M_IBAR_OWN_ONLY ? mine : m->live) * 4);
    }
    emit(g, O_CL_ARRIVE, 0, 0);
    emit(g, O_XS_WRITE, 0, 0);
    if (mut != M_NO_FENCE) emit(g, O_FENCE, 0, 0);
    if (mut != M_NO_XS_BAR) nb_sync(g, 1, 128); /* xs whole */
    if (own == 2) emit(g, O_NB_ARRIVE, 2, 256);
    if (mut != M_EARLY_COPY) emit(g, O_CL_WAIT, 0, 0);
    if (c == 0)
        for (int tid = 0; tid < m->cl; tid++)
            if (tid != k && rows_of(m, tid) > 0) emit(g, O_COPY, tid, 0);
    if (mut == M_EARLY_COPY) emit(g, O_CL_WAIT, 0, 0);
    if (!own) {
        emit(g, O_XR_COPY, 0, 0);
        if (mut != M_NO_XR_BAR) nb_sync(g, 1, 128); /* own block in xr */
    }
    if (mine > 0 && mut != M_NO_XBAR_WAIT) emit(g, O_MB_WAIT, B_X, 0);
    if (own) {
        emit(g, O_CL_ARRIVE, 0, 0);
        for (int u = 0; u < oj; u++) {
            const int j = c + now * u;
            if (j >= mine) break;
            emit(g, O_ROW, j, 0);
        }
        if (mut != M_NO_FINAL_WAIT) emit(g, O_CL_WAIT, 0, 0);
    } else {
        for (int j = c; j < mine; j += 4) emit(g, O_INV_ROW, j, 0);
        if (mut != M_NO_IBAR_WAIT) emit(g, O_MB_WAIT, B_I, 0);
        emit(g, O_READ_INV, 0, 0);
    }
}

static void model_init(model *m, int cl, int wn, int live, int own, int mut) {
    memset(m, 0, sizeof *m);
    m->cl = cl, m->rp = TILE / cl, m->wn = wn, m->h = wn * cl;
    m->live = live, m->own = own, m->mut = mut, m->nag = cl * WARPS;
    cr_assert(cl <= MAX_CL && m->rp <= MAX_RP && live >= 1 && live <= TILE);
    for (int k = 0; k < cl; k++) {
        for (int s = 0; s < TILE; s++) m->xr[k][s] = -1;
        for (int w = 0; w < WARPS; w++) {
            m->ag[k * WARPS + w].cta = k;
            m->ag[k * WARPS + w].warp = w;
        }
        for (int w = 0; w < 4; w++) producer(m, k, w);
        for (int c = 0; c < 4; c++) consumer(m, k, c);
    }
}

/* ---- the run --------------------------------------------------------------- */

static int fail(model *m, const char *what) {
    if (!m->problem[0]) snprintf(m->problem, sizeof m->problem, "%s", what);
    return 0;
}
static int done(const model *m, int a) { return m->ag[a].pc == m->ag[a].n; }
static bar *bar_of(model *m, int k, int which) { return which == B_X ? &m->xbar[k] : &m->ibar[k]; }

/* cmin: the fewest cluster arrivals of a warp that has not exited. */
static int runnable(model *m, int a, int cmin) {
    const agent *g = &m->ag[a];
    if (done(m, a)) return 0;
    const op *o = &g->ops[g->pc];
    switch (o->kind) {
    case O_NB_WAIT: return m->nb[g->cta][o->a].gen > g->nb_gen[o->a];
    case O_CL_WAIT: return cmin > g->nwait;
    case O_MB_WAIT: return bar_ready(bar_of(m, g->cta, o->a), 0);
    default: return 1;
    }
}

static int push_event(model *m, event e) {
    cr_assert_lt(m->nev, MAX_EV);
    m->nexp += e.kind == E_EXPECT;
    m->ev[m->nev++] = e;
    return 1;
}

/* Owned row j of CTA k read by agent a: each CTA's block of it where the
 * owner reads column col (cn_push_at), landed and seen. */
static int read_row(model *m, int a, int j) {
    agent *g = &m->ag[a];
    const int k = g->cta, rp = m->rp, wn = m->wn, row = k * rp + j;
    if (row >= m->live) return fail(m, "a dead row processed");
    if (m->proc[k][j] && m->ag[m->proc[k][j] - 1].warp != g->warp)
        return fail(m, "a row processed by two warps");
    if (m->proc[k][j]) return fail(m, "a row processed twice");
    m->proc[k][j] = a + 1;
    for (int b = 0; b < m->cl; b++) {
        const int slot = cn_push_at(j, b * wn, wn, rp) / wn, tag = m->xr[k][slot];
        if (b == k) {
            int seen = 0;
            if (m->own) {
                seen = (g->kn & K_OWN(j)) != 0;
            } else { /* the warps whose chunks make row j (thread i % 128 copies chunk i) */
                seen = m->chunks[k][slot] == wn / 8;
                for (int i = j * wn / 8; i < (j + 1) * wn / 8; i++)
                    seen = seen && (g->kn & K_OCP((i % 128) / 32));
            }
            if (tag < 0 || !seen)
                return fail(m, "an owner reads its own block's row before seeing it written");
        } else if (tag < 0 || !(g->xseen & (1u << b))) {
            return fail(m, "an owner reads a peer's block before seeing it landed");
        }
        if (tag != b * TILE + row) return fail(m, "an owner reads another row's values");
    }
    return 1;
}

static void mark_exit(model *m, int k) {
    for (int w = 0; w < WARPS; w++)
        if (!done(m, k * WARPS + w)) return;
    m->exited[k] = 1;
    for (int e = 0; e < m->nev; e++) {
        if (m->ev[e].kind == E_COPY && m->ev[e].src == k)
            fail(m, "a CTA exits while a copy from its xs is in flight");
        else if (m->ev[e].kind != E_EXPECT && m->ev[e].dst == k)
            fail(m, "a CTA exits while bytes owed to it are in flight");
    }
}

/* Agent a's next operation; 0 with m->problem set when it breaks a rule. */
static int step(model *m, int a) {
    agent *g = &m->ag[a];
    const op *o = &g->ops[g->pc++];
    const int k = g->cta, c = g->warp - 4, wn = m->wn;
    int ok = 1;
    switch (o->kind) {
    case O_INIT:
        bar_init(&m->xbar[k], 1);
        bar_init(&m->ibar[k], 1);
        g->inits |= 1u << k;
        break;
    case O_NB_ARRIVE: {
        nbar *nb = &m->nb[k][o->a];
        if (nb->arrived == 0)
            nb->count = o->b;
        else if (nb->count != o->b)
            return fail(m, "a named barrier's thread counts differ");
        g->nb_gen[o->a] = nb->gen;
        nb->arrived += 32;
        nb->kn |= g->kn;
        nb->inits |= g->inits;
        if (nb->arrived == nb->count) {
            cr_assert_lt(nb->gen, MAX_GEN);
            nb->done_kn[nb->gen] = nb->kn;
            nb->done_inits[nb->gen] = nb->inits;
            nb->gen++;
            nb->arrived = 0;
            nb->kn = nb->inits = 0;
        }
        break;
    }
    case O_NB_WAIT:
        g->kn |= m->nb[k][o->a].done_kn[g->nb_gen[o->a]];
        g->inits |= m->nb[k][o->a].done_inits[g->nb_gen[o->a]];
        break;
    case O_CL_ARRIVE:
        if (g->narr != g->nwait) return fail(m, "a second cluster arrive without a wait");
        cr_assert_lt(g->narr, MAX_PH);
        if (o->a) m->cl_rel[g->narr] |= g->inits;
        g->narr++;
        break;
    case O_CL_WAIT: g->inits |= m->cl_rel[g->nwait++]; break;
    case O_EXPECT:
        if (!(g->inits & (1u << k))) return fail(m, "an expect_tx before its barrier's init");
        ok = push_event(m, (event){E_EXPECT, k, k, o->a, o->b, 0});
        break;
    case O_XS_WRITE:
        for (int r = 16 * c; r < 16 * c + 16; r++) {
            /* OWN: the own rows also into xr at tile row r's slot */
            if (m->own && r / m->rp == k) {
                if (m->xr[k][r] >= 0) return fail(m, "two writes into one xr row");
                m->xr[k][r] = k * TILE + r;
                g->kn |= K_OWN(r - k * m->rp);
            }
        }
        g->kn |= K_XSW(c);
        break;
    case O_FENCE:
        if (g->kn & K_XSW(c)) g->kn |= K_XSF(c);
        break;
    case O_COPY: {
        const int d = o->a, n = rows_of(m, d), r0 = cn_push_src(d, wn, m->rp) / wn;
        if (!(g->inits & (1u << d)))
            return fail(m, "a copy to a CTA whose barrier init it has not seen");
        for (int r = r0; r < r0 + n; r++) {
            if (!(g->kn & K_XSW(r / 16))) return fail(m, "a copy reads xs rows not seen written");
            if (!(g->kn & K_XSF(r / 16)))
                return fail(m, "a copy reads xs rows not fenced for the async proxy");
        }
        ok = push_event(m, (event){E_COPY, k, d, r0, cn_push_dst(k, wn, m->rp) / wn, n});
        break;
    }
    case O_XR_COPY: { /* for (i = tid; i < mine WN / 8; i += 128) to[i] = from[i] */
        const int src = cn_push_src(k, wn, m->rp), dst = cn_push_dst(k, wn, m->rp);
        const int n = rows_of(m, k) * wn / 8;
        for (int i = 0; i < n; i++) {
            if ((i % 128) / 32 != c) continue; /* thread i % 128's chunk */
            const int r = (src + 8 * i) / wn, slot = (dst + 8 * i) / wn;
            if (!(g->kn & K_XSW(r / 16)))
                return fail(m, "own rows copied from xs before seen written");
            if (m->xr[k][slot] >= 0 && m->xr[k][slot] != k * TILE + r)
                return fail(m, "two writes into one xr row");
            m->xr[k][slot] = k * TILE + r;
            m->chunks[k][slot]++;
        }
        g->kn |= K_OCP(c);
        break;
    }
    case O_MB_WAIT:
        if (o->a == B_X)
            g->xseen = m->landed[k];
        else
            g->iseen = m->inv[k];
        break;
    case O_ROW: ok = read_row(m, a, o->a); break;
    case O_INV_ROW:
        ok = read_row(m, a, o->a);
        for (int d = 0; ok && d < m->cl; d++) { /* lane d's st.async */
            if (!(g->inits & (1u << d)))
                return fail(m, "an inv sent to a CTA whose barrier init it has not seen");
            ok = push_event(m, (event){E_INV, k, d, k * m->rp + o->a, 0, 0});
        }
        break;
    case O_READ_INV:
        for (int r = 16 * c; r < 16 * c + 16 && r < m->live; r++)
            if (!(g->iseen & (1ull << r))) return fail(m, "an inv read before it landed");
        break;
    }
    if (ok && done(m, a)) mark_exit(m, k);
    return ok && !m->problem[0];
}

/* Bytes landing on barrier b, in the one phase it completes. The ISA lets
 * the count go below zero before the expect_tx (mbar_model.h's
 * bar_complete_tx does not: it fails the test). */
static int land_tx(model *m, bar *b, int bytes) {
    if (b->phase != 0) return fail(m, "bytes landed after the phase completed");
    b->tx -= bytes;
    bar_check(b);
    return 1;
}

static int land(model *m, int e) {
    const event v = m->ev[e];
    m->ev[e] = m->ev[--m->nev];
    if (v.kind == E_EXPECT) {
        m->nexp--;
        bar *b = bar_of(m, v.dst, v.a);
        if (b->pending < 1) return fail(m, "an expect_tx past the phase's arrivals");
        bar_expect_tx(b, v.b);
        return 1;
    }
    if (m->exited[v.dst]) return fail(m, "bytes land in a CTA that has exited");
    if (v.kind == E_COPY) {
        if (m->exited[v.src]) return fail(m, "a copy reads the xs of a CTA that has exited");
        for (int i = 0; i < v.c; i++) {
            if (m->xr[v.dst][v.b + i] >= 0) return fail(m, "two writes into one xr row");
            m->xr[v.dst][v.b + i] = v.src * TILE + v.a + i;
        }
        m->landed[v.dst] |= 1u << v.src;
        return land_tx(m, &m->xbar[v.dst], v.c * m->wn * 2);
    }
    if (m->inv[v.dst] & (1ull << v.a)) return fail(m, "an inv written twice");
    m->inv[v.dst] |= 1ull << v.a;
    return land_tx(m, &m->ibar[v.dst], 4);
}

static uint64_t rng_next(uint64_t *x) { /* splitmix64 */
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* After every warp exited: each live row taken once, no dead one. */
static const char *finish(model *m) {
    for (int r = 0; r < m->live; r++)
        if (!m->proc[r / m->rp][r % m->rp]) return fail(m, "a live row not processed"), m->problem;
    return NULL;
}

/* One schedule of the cluster's run; NULL when every rule held. The copies
 * and stores land at random later steps, each schedule with its own
 * leaning between running warps and landing them; one in four holds each
 * expect_tx back until nothing else can go (the ISA's late expect). */
static const char *run(model *m, uint64_t seed) {
    uint64_t x = seed;
    const uint64_t lean = 1 + rng_next(&x) % 7; /* in 8: how often a landing goes first */
    const int late = rng_next(&x) % 4 == 0;
    for (long steps = 0;; steps++) {
        int can[MAX_AG], n = 0, cmin = INT_MAX;
        for (int a = 0; a < m->nag; a++)
            if (!done(m, a) && m->ag[a].narr < cmin) cmin = m->ag[a].narr;
        for (int a = 0; a < m->nag; a++)
            if (runnable(m, a, cmin)) can[n++] = a;
        if (n == 0 && m->nev == 0) {
            for (int a = 0; a < m->nag; a++)
                if (!done(m, a)) return fail(m, "deadlock"), m->problem;
            return finish(m);
        }
        cr_assert_lt(steps, 1000000);
        const int free_ev = m->nev - (late ? m->nexp : 0); /* landings allowed now */
        int ok;
        if (free_ev > 0 && (n == 0 || rng_next(&x) % 8 < lean)) {
            int e;
            do e = (int)(rng_next(&x) % (uint64_t)m->nev);
            while (late && m->ev[e].kind == E_EXPECT);
            ok = land(m, e);
        } else if (n > 0) {
            ok = step(m, can[rng_next(&x) % (uint64_t)n]);
        } else { /* only held expect_tx left */
            ok = land(m, (int)(rng_next(&x) % (uint64_t)m->nev));
        }
        if (!ok) return m->problem;
    }
}

/* ---- the shapes ------------------------------------------------------------ */

/* (WN, CL) as cu_cluster_norm_clusters picks them: H 512 and 256. */
static const int k_shapes[][2] = {{64, 8}, {32, 8}, {32, 16}, {16, 16}};
/* Live rows of the tile: whole; one; ragged inside an owner's rows (18:
 * CL 8's CTA 2 owns two, CL 16's CTA 4 two; 62); owners with none (every
 * count below 64); 33 one row past half. */
static const int k_lives[] = {64, 1, 18, 62, 5, 33};
#define NSHAPE (int)(sizeof k_shapes / sizeof *k_shapes)
#define NLIVE (int)(sizeof k_lives / sizeof *k_lives)
#define SEEDS 16

/* Whether the kernel builds form OWN for clusters of CL: OWN 2 only where
 * a CTA owns more rows than the consumer has warps (cluster_norm_wgmma.cu's
 * cn_own8: clusters of 8). */
static int built(int own, int cl) { return own != 2 || TILE / cl > 4; }

static long sweep(int own) {
    static model m;
    long runs = 0;
    for (int si = 0; si < NSHAPE; si++) {
        if (!built(own, k_shapes[si][1])) continue;
        for (int li = 0; li < NLIVE; li++)
            for (uint64_t seed = 1; seed <= SEEDS; seed++, runs++) {
                model_init(&m, k_shapes[si][1], k_shapes[si][0], k_lives[li], own, M_NONE);
                const char *problem = run(&m, seed + 7919 * (uint64_t)runs);
                cr_assert_null(problem, "OWN %d WN %d CL %d live %d seed %llu: %s", own,
                               k_shapes[si][0], k_shapes[si][1], k_lives[li],
                               (unsigned long long)seed, problem);
            }
    }
    return runs;
}

Test(cn_protocol, random_interleavings_inv_push) {
    cr_expect_eq(sweep(0), (long)NSHAPE * NLIVE * SEEDS);
}
Test(cn_protocol, random_interleavings_owner) {
    cr_expect_eq(sweep(1), (long)NSHAPE * NLIVE * SEEDS);
}
Test(cn_protocol, random_interleavings_owner8) {
    cr_expect_eq(sweep(2), 2L * NLIVE * SEEDS); /* the two shapes of clusters of 8 */
}

/* Whether some schedule of some shape of the break (in form OWN) fails
 * with the problem it causes. */
static int caught(int own, int mut, const char *want) {
    static model m;
    for (int si = 0; si < NSHAPE; si++) {
        if (!built(own, k_shapes[si][1])) continue;
        for (int li = 0; li < NLIVE; li++)
            for (uint64_t seed = 1; seed <= 32; seed++) {
                model_init(&m, k_shapes[si][1], k_shapes[si][0], k_lives[li], own, mut);
                const char *problem = run(&m, seed);
                if (problem && !strcmp(problem, want)) return 1;
            }
    }
    return 0;
}
#define CATCHES(name, own, mut, want)                                                          \
    Test(cn_protocol, model_catches_##name) {                                                  \
        cr_expect(caught(own, mut, want), "break %s (OWN %d) did not cause \"%s\"", #mut, own, \
                  want);                                                                       \
    }

/* OWN 2's producer warps read the own block's rows the consumer stored in
 * xr with no barrier between (CL 8: the producer's warps own rows 4-7). */
CATCHES(producer_without_bar2, 2, M_NO_BAR2,
        "an owner reads its own block's row before seeing it written")
/* The producer's warps wait for phase 2 without arriving: every warp of the
 * cluster waits for them. */
CATCHES(producer_without_phase2_arrive, 2, M_NO_PROD_ARRIVE2, "deadlock")
/* OWN 1 with the producer gone after phase 1: a consumer that does not
 * wait for phase 2 frees xs while its copies may still read it (OWN 2's
 * producer waits for phase 2, so there the same line is harmless). */
CATCHES(consumer_without_phase2_wait, 1, M_NO_FINAL_WAIT,
        "a CTA exits while a copy from its xs is in flight")
/* xbar expecting one sender's copy fewer completes with that copy in
 * flight. */
CATCHES(xbar_one_copy_short, 1, M_SHORT_XBAR,
        "an owner reads a peer's block before seeing it landed")
/* One row's bytes fewer: the count passes zero without stopping there. */
CATCHES(xbar_one_row_short, 2, M_ROW_SHORT, "deadlock")
/* xs written by the generic proxy, read by the copy engine unfenced. */
CATCHES(no_proxy_fence, 1, M_NO_FENCE, "a copy reads xs rows not fenced for the async proxy")
/* The copies issued before the other warps' rows of xs are seen. */
CATCHES(no_xs_barrier, 1, M_NO_XS_BAR, "a copy reads xs rows not seen written")
/* A copy before the phase-1 wait may reach a barrier not yet made. */
CATCHES(copy_before_phase1_wait, 1, M_EARLY_COPY,
        "a copy to a CTA whose barrier init it has not seen")
CATCHES(owner_without_xbar_wait, 2, M_NO_XBAR_WAIT,
        "an owner reads a peer's block before seeing it landed")
/* OWN 2's consumer with OWN 1's rows (NOW 4, two a warp at CL 8). */
CATCHES(owner8_rows_twice, 2, M_OWN1_ROWS, "a row processed by two warps")
CATCHES(inv_push_without_ibar_wait, 0, M_NO_IBAR_WAIT, "an inv read before it landed")
CATCHES(inv_push_without_own_block_barrier, 0, M_NO_XR_BAR,
        "an owner reads its own block's row before seeing it written")
/* ibar counting only the CTA's own rows' invs: it reads the others' before
 * they land (so it would also exit with its copies in flight: its ibar
 * counting every live row's inv, each sent only after its owner's xbar
 * wait, is what keeps OWN 0's xs alive). */
CATCHES(inv_push_ibar_own_rows_only, 0, M_IBAR_OWN_ONLY, "an inv read before it landed")
