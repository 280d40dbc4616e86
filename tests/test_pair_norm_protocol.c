/* The synchronisation of the two-CTA projection + norm kernel
 * (src/cuda/sm90a/proj_norm_wgmma.cu), checked on the host: each CTA's
 * producer thread and two consumer warpgroups as programs of the kernel's
 * barrier operations in its order, run by a random scheduler over a model
 * of mbarriers (arrival counts, transaction counts, phases, try_wait.parity's
 * rule), of the TMA copies landing at random later times, of the products in
 * flight (wgmma.wait_group), and of the distributed-shared-memory exchange
 * (CTA 0's lane chains into CTA 1's xpart, CTA 1's inv into CTA 0's xinv).
 * What must hold under every interleaving tried:
 *  - no deadlock (some step can always run until all programs end);
 *  - a product reads a stage only once both its copies (W, A) have landed,
 *    holding that tile's and k block's data; no copy is issued into, or
 *    lands in, a stage a product in flight reads;
 *  - an exchange read sees the tile's own values, and no write replaces
 *    values the other CTA has not read yet;
 *  - nothing is written or arrived into a CTA that has exited.
 * The GPU tests (test_cuda_model's fused_norm_*) check the bytes; this checks
 * the protocol where no GPU is at hand, over ring depths, k blocks and tile
 * counts (including the prefetched first stages with fewer k blocks than
 * stages, as at hidden 256), and shows that each of six one-line breaks of
 * it is caught. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define CTAS 2
#define WGS 2
#define AGENTS (CTAS * (1 + WGS)) /* per CTA: producer, consumer warpgroups */
#define MAX_S 8
#define MAX_OPS 4096
#define MAX_EV 64

typedef struct {
    int init, pending, tx;
    unsigned phase; /* phases completed */
} bar;

static void bar_init(bar *b, int count) { *b = (bar){count, count, 0, 0}; }
static int bar_check(bar *b) {
    if (b->pending < 0 || b->tx < 0) return 0;
    if (b->pending == 0 && b->tx == 0) {
        b->phase++;
        b->pending = b->init;
    }
    return 1;
}
/* try_wait.parity: true once the phase of that parity completed. */
static int bar_ready(const bar *b, unsigned parity) { return (b->phase & 1u) != parity; }

enum { WAIT, ARRIVE, EXPECT, LOAD, ISSUE, RETIRE1, RETIRE0, XWRITE, XREAD };
enum { B_FULL, B_EMPTY, B_XREADY, B_INVREADY };
enum { X_PART, X_INV };

typedef struct {
    int kind, cta, bar, idx; /* the barrier or buffer: CTA, kind, index */
    int a, b;                /* wait: parity; arrive: count; expect: copies; load: part; tag */
} op;

typedef struct {
    op ops[MAX_OPS];
    int n, pc;
} prog;

typedef struct {
    int tag[2], landed[2], reads; /* per part (W, A); products in flight reading it */
} stage;

typedef struct {
    int cta, s, part, tag;
} copy;

typedef struct {
    int S, kb_n, nt, mut;
    bar full[CTAS][MAX_S], empty[CTAS][MAX_S], xready[CTAS], invready[CTAS];
    stage st[CTAS][MAX_S];
    struct {
        int tag, read;
    } x[CTAS][2][WGS]; /* [CTA holding it][xpart, xinv][warpgroup's rows] */
    prog p[AGENTS];
    int fl[AGENTS][2], nfl[AGENTS]; /* stages of the products in flight */
    copy ev[MAX_EV];
    int nev, exited[CTAS];
    char problem[256];
} model;

/* One-line breaks of the protocol, each of which the model must catch. */
enum {
    M_NONE,
    M_NO_INV_WAIT,     /* CTA 0 reads xinv without waiting for invready */
    M_INV_BEFORE_READ, /* CTA 1 arrives on invready before it reads xpart */
    M_HALF_ARRIVALS,   /* CTA 0's warpgroups arrive with half the count */
    M_NO_FIRST_WAITS,  /* the producer skips the empty waits of the whole first tile */
    M_NO_LAST_RELEASE, /* consumers keep a tile's last stage */
    M_FIXED_PARITY,    /* the exchange's parity does not flip per tile */
    M_COUNT
};

static bar *bar_of(model *m, int cta, int kind, int idx) {
    switch (kind) {
    case B_FULL: return &m->full[cta][idx];
    case B_EMPTY: return &m->empty[cta][idx];
    case B_XREADY: return &m->xready[cta];
    default: return &m->invready[cta];
    }
}
static void emit(prog *p, op o) {
    cr_assert_lt(p->n, MAX_OPS);
    p->ops[p->n++] = o;
}
static int tag_of(int j, int kb) { return j * 64 + kb; }

/* proj_norm_kernel's producer thread in CTA r. */
static void producer(model *m, int r) {
    prog *p = &m->p[r * (1 + WGS)];
    const int S = m->S, kb_n = m->kb_n;
    const int pre = m->nt > 0 ? (kb_n < S ? kb_n : S) : 0;
    for (int kb = 0; kb < pre; kb++) {
        emit(p, (op){EXPECT, r, B_FULL, kb, 2, 0});
        emit(p, (op){LOAD, r, 0, kb, 0, tag_of(0, kb)});
    }
    int s = 0;
    unsigned ph = 0;
    for (int j = 0; j < m->nt; j++)
        for (int kb = 0; kb < kb_n; kb++) {
            const int first = j == 0 && (kb < pre || m->mut == M_NO_FIRST_WAITS);
            if (!(j == 0 && kb < pre)) {
                if (!first) emit(p, (op){WAIT, r, B_EMPTY, s, (int)(ph ^ 1u), 0});
                emit(p, (op){EXPECT, r, B_FULL, s, 2, 0});
                emit(p, (op){LOAD, r, 0, s, 0, tag_of(j, kb)});
            }
            emit(p, (op){LOAD, r, 0, s, 1, tag_of(j, kb)});
            if (++s == S) {
                s = 0;
                ph ^= 1u;
            }
        }
}

/* proj_norm_kernel's consumer warpgroup cw in CTA r: ring_products over the
 * tile's k blocks, the last stage given back, then the exchange. */
static void consumer(model *m, int r, int cw) {
    prog *p = &m->p[r * (1 + WGS) + 1 + cw];
    const int S = m->S, kb_n = m->kb_n, peer = 1 - r;
    const int count = m->mut == M_HALF_ARRIVALS && r == 0 ? 64 : 128;
    int s = 0;
    unsigned ph = 0, xph = 0;
    for (int j = 0; j < m->nt; j++) {
        int prev = -1;
        for (int kb = 0; kb < kb_n; kb++) {
            emit(p, (op){WAIT, r, B_FULL, s, (int)ph, 0});
            emit(p, (op){ISSUE, r, 0, s, 0, tag_of(j, kb)});
            emit(p, (op){RETIRE1, r, 0, 0, 0, 0});
            if (prev >= 0) emit(p, (op){ARRIVE, r, B_EMPTY, prev, 4, 0});
            prev = s;
            if (++s == S) {
                s = 0;
                ph ^= 1u;
            }
        }
        emit(p, (op){RETIRE0, r, 0, 0, 0, 0});
        if (prev >= 0 && m->mut != M_NO_LAST_RELEASE) emit(p, (op){ARRIVE, r, B_EMPTY, prev, 4, 0});
        if (r == 1) {
            emit(p, (op){WAIT, r, B_XREADY, 0, (int)xph, 0});
            if (m->mut == M_INV_BEFORE_READ) {
                emit(p, (op){XWRITE, peer, X_INV, cw, 0, j});
                emit(p, (op){ARRIVE, peer, B_INVREADY, 0, 128, 0});
                emit(p, (op){XREAD, r, X_PART, cw, 0, j});
            } else {
                emit(p, (op){XREAD, r, X_PART, cw, 0, j});
                emit(p, (op){XWRITE, peer, X_INV, cw, 0, j});
                emit(p, (op){ARRIVE, peer, B_INVREADY, 0, 128, 0});
            }
        } else {
            emit(p, (op){XWRITE, peer, X_PART, cw, 0, j});
            emit(p, (op){ARRIVE, peer, B_XREADY, 0, count, 0});
            if (m->mut != M_NO_INV_WAIT) emit(p, (op){WAIT, r, B_INVREADY, 0, (int)xph, 0});
            emit(p, (op){XREAD, r, X_INV, cw, 0, j});
        }
        if (m->mut != M_FIXED_PARITY) xph ^= 1u;
    }
}

static void model_init(model *m, int S, int kb_n, int nt, int mut) {
    memset(m, 0, sizeof *m);
    m->S = S;
    m->kb_n = kb_n;
    m->nt = nt;
    m->mut = mut;
    for (int r = 0; r < CTAS; r++) {
        for (int s = 0; s < S; s++) {
            bar_init(&m->full[r][s], 1);
            bar_init(&m->empty[r][s], 8); /* one arrival per consumer warp */
            m->st[r][s] = (stage){{-1, -1}, {0, 0}, 0};
        }
        bar_init(&m->xready[r], 256);
        bar_init(&m->invready[r], 256);
        for (int b = 0; b < 2; b++)
            for (int w = 0; w < WGS; w++) {
                m->x[r][b][w].tag = -1;
                m->x[r][b][w].read = 1;
            }
        producer(m, r);
        for (int w = 0; w < WGS; w++) consumer(m, r, w);
    }
}

static int fail(model *m, const char *what) {
    if (!m->problem[0]) snprintf(m->problem, sizeof m->problem, "%s", what);
    return 0;
}
static int done(const model *m, int a) { return m->p[a].pc == m->p[a].n; }
static int runnable(model *m, int a) {
    if (done(m, a)) return 0;
    const op *o = &m->p[a].ops[m->p[a].pc];
    return o->kind != WAIT || bar_ready(bar_of(m, o->cta, o->bar, o->idx), (unsigned)o->a);
}
static void retire(model *m, int a, int keep) {
    const int r = a / (1 + WGS);
    while (m->nfl[a] > keep) {
        m->st[r][m->fl[a][0]].reads--;
        m->fl[a][0] = m->fl[a][1];
        m->nfl[a]--;
    }
}
static void mark_exits(model *m) {
    for (int r = 0; r < CTAS; r++) {
        int all = 1;
        for (int a = 0; a < 1 + WGS; a++) all &= done(m, r * (1 + WGS) + a);
        m->exited[r] = all;
    }
}

/* Agent a's next operation; 0 with m->problem set when it breaks a rule. */
static int step(model *m, int a) {
    const op *o = &m->p[a].ops[m->p[a].pc++];
    const int r = a / (1 + WGS);
    stage *st = &m->st[r][o->idx];
    switch (o->kind) {
    case WAIT: break;
    case ARRIVE: {
        if (m->exited[o->cta]) return fail(m, "an arrival on a CTA that has exited");
        bar *b = bar_of(m, o->cta, o->bar, o->idx);
        b->pending -= o->a;
        if (!bar_check(b)) return fail(m, "more arrivals than the phase expects");
        break;
    }
    case EXPECT: {
        bar *b = bar_of(m, o->cta, o->bar, o->idx);
        b->tx += o->a;
        b->pending -= 1;
        if (!bar_check(b)) return fail(m, "an expect_tx past the phase's arrivals");
        break;
    }
    case LOAD:
        if (st->reads) return fail(m, "a copy issued into a stage a product reads");
        cr_assert_lt(m->nev, MAX_EV);
        st->landed[o->a] = 0;
        m->ev[m->nev++] = (copy){r, o->idx, o->a, o->b};
        break;
    case ISSUE:
        if (!st->landed[0] || !st->landed[1])
            return fail(m, "a product reads a stage before its copies land");
        if (st->tag[0] != o->b || st->tag[1] != o->b)
            return fail(m, "a product reads another tile's or k block's data");
        st->reads++;
        m->fl[a][m->nfl[a]++] = o->idx;
        break;
    case RETIRE1: retire(m, a, 1); break;
    case RETIRE0: retire(m, a, 0); break;
    case XWRITE:
        if (m->exited[o->cta]) return fail(m, "a write into a CTA that has exited");
        if (!m->x[o->cta][o->bar][o->idx].read)
            return fail(m, "an exchange write over values not read yet");
        m->x[o->cta][o->bar][o->idx].tag = o->b;
        m->x[o->cta][o->bar][o->idx].read = 0;
        break;
    case XREAD:
        if (m->x[r][o->bar][o->idx].tag != o->b)
            return fail(m, "an exchange read sees another tile's values");
        m->x[r][o->bar][o->idx].read = 1;
        break;
    }
    mark_exits(m);
    return 1;
}
static int land(model *m, int e) {
    const copy c = m->ev[e];
    m->ev[e] = m->ev[--m->nev];
    stage *st = &m->st[c.cta][c.s];
    if (st->reads) return fail(m, "a copy lands in a stage a product reads");
    st->tag[c.part] = c.tag;
    st->landed[c.part] = 1;
    bar *b = &m->full[c.cta][c.s];
    b->tx -= 1;
    if (!bar_check(b)) return fail(m, "more bytes than expected");
    return 1;
}

static uint64_t rng_next(uint64_t *x) { /* splitmix64 */
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One schedule of the cluster's run; NULL when every rule held. */
static const char *run(model *m, uint64_t seed) {
    uint64_t x = seed;
    for (long steps = 0;; steps++) {
        int can[AGENTS + MAX_EV], n = 0;
        for (int a = 0; a < AGENTS; a++)
            if (runnable(m, a)) can[n++] = a;
        for (int e = 0; e < m->nev; e++) can[n++] = AGENTS + e;
        if (n == 0) {
            for (int a = 0; a < AGENTS; a++)
                if (!done(m, a)) return fail(m, "deadlock"), m->problem;
            return NULL;
        }
        cr_assert_lt(steps, 10000000);
        const int pick = can[rng_next(&x) % (uint64_t)n];
        if (!(pick < AGENTS ? step(m, pick) : land(m, pick - AGENTS))) return m->problem;
    }
}

static const int k_stages[] = {2, 3, 4, 6}, k_kbs[] = {1, 2, 3, 4, 5, 8, 12},
                 k_nts[] = {0, 1, 2, 3, 5};
#define NS (int)(sizeof k_stages / sizeof *k_stages)
#define NK (int)(sizeof k_kbs / sizeof *k_kbs)
#define NT (int)(sizeof k_nts / sizeof *k_nts)

Test(pair_norm_protocol, random_interleavings) {
    static model m;
    long runs = 0;
    for (int si = 0; si < NS; si++)
        for (int ki = 0; ki < NK; ki++)
            for (int ti = 0; ti < NT; ti++)
                for (uint64_t seed = 1; seed <= 16; seed++, runs++) {
                    model_init(&m, k_stages[si], k_kbs[ki], k_nts[ti], M_NONE);
                    const char *problem = run(&m, seed + 7919 * (uint64_t)runs);
                    cr_assert_null(problem, "S %d, %d k blocks, %d tiles, seed %llu: %s",
                                   k_stages[si], k_kbs[ki], k_nts[ti], (unsigned long long)seed,
                                   problem);
                }
    cr_expect_eq(runs, (long)NS * NK * NT * 16);
}

/* Each break of the protocol fails in some schedule of some shape, with
 * the problem it causes. */
Test(pair_norm_protocol, model_catches_each_break) {
    static const char *const want[M_COUNT] = {
        [M_NO_INV_WAIT] = "an exchange read sees another tile's values",
        [M_INV_BEFORE_READ] = "an exchange write over values not read yet",
        [M_HALF_ARRIVALS] = "deadlock",
        [M_NO_FIRST_WAITS] = "a copy issued into a stage a product reads",
        [M_NO_LAST_RELEASE] = "deadlock",
        [M_FIXED_PARITY] = "an exchange read sees another tile's values",
    };
    static model m;
    for (int mut = M_NONE + 1; mut < M_COUNT; mut++) {
        int caught = 0;
        for (int si = 0; si < NS && !caught; si++)
            for (int ki = 0; ki < NK && !caught; ki++)
                for (int ti = 0; ti < NT && !caught; ti++)
                    for (uint64_t seed = 1; seed <= 16 && !caught; seed++) {
                        model_init(&m, k_stages[si], k_kbs[ki], k_nts[ti], mut);
                        const char *problem = run(&m, seed);
                        caught = problem && !strcmp(problem, want[mut]);
                    }
        cr_expect(caught, "break %d of the protocol did not cause \"%s\"", mut, want[mut]);
    }
}
