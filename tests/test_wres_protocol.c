/* The synchronisation of the W-resident gate_up loop
 * (src/cuda/sm90a/ring_wres.cuh), checked on the host: one CTA's producer
 * and two or three consumer warpgroups (WGS; three: HRMT_CUDA_GLU_WRES3),
 * each leaving one product group in flight, as programs of the kernel's
 * barrier operations, run by a random scheduler over a model of mbarriers
 * (arrival counts, transaction bytes, phases, try_wait.parity's rule) and
 * of the asynchronous copies and products. The schedule's decisions (each CTA's
 * run of tiles, a warpgroup's last tile of a W generation, the arrivals it
 * owes the W slice's give-back) are the kernel's own functions
 * (sm90a/wres_plan.h). What must hold under every interleaving tried:
 *  - no deadlock (some step can always run until all programs end);
 *  - a product reads a ring stage or a W block only once its copy has
 *    landed, and holding the tile's own data (row tile and k block; W
 *    generation);
 *  - no copy is issued into, or lands in, a buffer that a product in flight
 *    still reads;
 *  - a copy lands in the fill of the buffer it was issued for;
 *  - the CTAs' runs cover every tile once, in order.
 * The GPU tests (test_cuda_model's glu_wres_* and shape tests) check the
 * bytes; this checks the protocol where a GPU is not at hand, over run and
 * ring shapes the device tests do not reach. (Until session 45 it also
 * modelled the kernel's clusters sharing A by multicast, removed then.) */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "cuda/sm90a/wres_plan.h"
#include "support/mbar_model.h"

#define MAX_WGS 3
#define MAX_S 8
#define MAX_KB 4
#define MAX_OPS 4096
#define MAX_EVENTS 256

/* ---- buffers: A stages and W blocks ------------------------------------- */

typedef struct {
    int tag, landed, writing; /* tag: (tile j, k block) or W generation */
} buf;

/* ---- the CTA -------------------------------------------------------------- */

enum { OP_WAIT, OP_ARRIVE, OP_LOAD_W, OP_LOAD_A, OP_ISSUE, OP_WAIT1, OP_WAIT0 };
enum { B_FULL, B_EMPTY, B_ORDER, B_WFULL, B_WEMPTY };

typedef struct {
    int kind, bar, idx; /* barrier kind and index */
    int a, b, c;        /* wait: parity; arrive: count; loads: tag, fill; issue:
                           operands */
} op;

typedef struct {
    op ops[MAX_OPS];
    int n, pc;
} prog;

typedef struct { /* one product group in flight: stage s, W block kb */
    int s, kb;
} flight;

typedef struct {
    int S, kb_n, mt, lo, hi, wgs; /* wgs: consumer warpgroups (ring_wres.cuh's WGS) */
    /* probe: count protocol violations instead of failing (the tests that
     * show the model sees an error). */
    int probe, violations;
    bar full[MAX_S], empty[MAX_S], order[MAX_WGS], wfull, wempty;
    buf stage[MAX_S], w[MAX_KB];
    prog p[1 + MAX_WGS]; /* producer, consumer warpgroups */
    flight fl[MAX_WGS][2];
    int nfl[MAX_WGS];
    struct { /* copies issued, not landed */
        int is_w, idx, tag, fill;
    } ev[MAX_EVENTS];
    int nev;
} cta;

#define CHECK(k, cond, ...)                  \
    do {                                     \
        if (!(cond)) {                       \
            if ((k)->probe)                  \
                (k)->violations++;           \
            else                             \
                cr_assert_fail(__VA_ARGS__); \
        }                                    \
    } while (0)

static bar *bar_of(cta *c, int kind, int idx) {
    switch (kind) {
    case B_FULL: return &c->full[idx];
    case B_EMPTY: return &c->empty[idx];
    case B_ORDER: return &c->order[idx];
    case B_WFULL: return &c->wfull;
    default: return &c->wempty;
    }
}

static void emit(prog *p, op o) {
    cr_assert_lt(p->n, MAX_OPS);
    p->ops[p->n++] = o;
}
static op o_wait(int kind, int idx, unsigned parity) {
    return (op){OP_WAIT, kind, idx, (int)parity, 0, 0};
}
static op o_arrive(int kind, int idx, int n) { return (op){OP_ARRIVE, kind, idx, n, 0, 0}; }

static int a_tag(int j, int kb) { return j * MAX_KB + kb; }

/* The producer thread, as ring_wres_kernel's warpgroup 0 (the loads carry
 * the fill of their buffer: the phase their barrier must be in). */
static void producer(cta *k) {
    prog *p = &k->p[0];
    const int col0 = k->lo / k->mt;
    unsigned gen = 0, ph = 0;
    int s = 0, col = col0, fill = 0;
    if (k->lo < k->hi) emit(p, (op){OP_LOAD_W, 0, 0, 0, 0, 0});
    for (int j = k->lo; j < k->hi; j++) {
        if (j / k->mt != col) {
            emit(p, o_wait(B_WEMPTY, 0, gen & 1u));
            gen++;
            col = j / k->mt;
            emit(p, (op){OP_LOAD_W, 0, 0, (int)gen, (int)gen, 0});
        }
        for (int kb = 0; kb < k->kb_n; kb++) {
            emit(p, o_wait(B_EMPTY, s, ph ^ 1u));
            emit(p, (op){OP_LOAD_A, 0, s, a_tag(j, kb), fill, 0});
            if (++s == k->S) {
                s = 0;
                ph ^= 1u;
                fill++;
            }
        }
    }
}

/* Consumer warpgroup cw, as ring_wres_kernel's consumer loop: the four
 * warps' arrivals as one of four (eight for a lone tile). */
static void consumer(cta *k, int cw) {
    prog *p = &k->p[1 + cw];
    const int col0 = k->lo / k->mt;
    unsigned turn = 0;
    int have = -1;
    for (int li = cw; k->lo + li < k->hi; li += k->wgs) {
        const int j = k->lo + li, g = j / k->mt - col0;
        const unsigned base = (unsigned)li * (unsigned)k->kb_n;
        int s = (int)(base % (unsigned)k->S), prev = -1;
        unsigned ph = (base / (unsigned)k->S) & 1u;
        emit(p, o_wait(B_ORDER, cw, turn));
        turn ^= 1u;
        if (g != have) {
            emit(p, o_wait(B_WFULL, 0, (unsigned)g & 1u));
            have = g;
        }
        for (int kb = 0; kb < k->kb_n; kb++) {
            emit(p, o_wait(B_FULL, s, ph));
            emit(p, (op){OP_ISSUE, 0, s, a_tag(j, kb), kb, g});
            emit(p, (op){OP_WAIT1, 0, 0, 0, 0, 0});
            if (prev >= 0) emit(p, o_arrive(B_EMPTY, prev, 4));
            prev = s;
            if (++s == k->S) {
                s = 0;
                ph ^= 1u;
            }
        }
        emit(p, o_arrive(B_ORDER, (cw + 1) % k->wgs, 1));
        emit(p, (op){OP_WAIT0, 0, 0, 0, 0, 0});
        if (prev >= 0) emit(p, o_arrive(B_EMPTY, prev, 4));
        const unsigned na = wres_arrivals(j, k->lo, k->hi, k->mt, k->wgs);
        if (na > 0) emit(p, o_arrive(B_WEMPTY, 0, 4 * (int)na));
    }
}

static void cta_init(cta *k, int S, int kb_n, int mt, int lo, int hi, int wgs) {
    memset(k, 0, sizeof *k);
    k->S = S, k->kb_n = kb_n, k->mt = mt, k->lo = lo, k->hi = hi, k->wgs = wgs;
    for (int s = 0; s < S; s++) {
        bar_init(&k->full[s], 1);
        bar_init(&k->empty[s], 4); /* the consuming warpgroup's warps */
        k->stage[s].tag = -1;
    }
    for (int w = 0; w < wgs; w++) bar_init(&k->order[w], 1);
    bar_init(&k->wfull, 1);
    bar_init(&k->wempty, 4 * wgs);
    bar_arrive(&k->order[0], 1); /* tile 0's turn */
    for (int kb = 0; kb < MAX_KB; kb++) k->w[kb].tag = -1;
    producer(k);
    for (int w = 0; w < wgs; w++) consumer(k, w);
}

/* Whether a product in flight reads the buffer (W block or stage idx). */
static int read_in_flight(const cta *c, int is_w, int idx) {
    for (int w = 0; w < MAX_WGS; w++)
        for (int i = 0; i < c->nfl[w]; i++)
            if (is_w ? c->fl[w][i].kb == idx : c->fl[w][i].s == idx) return 1;
    return 0;
}

/* A copy into a buffer (stage or W block idx). */
static void issue_copy(cta *k, int is_w, int idx, int tag, int fill) {
    buf *b = is_w ? &k->w[idx] : &k->stage[idx];
    CHECK(k, !read_in_flight(k, is_w, idx), "a copy into %s %d while a product reads it",
          is_w ? "W block" : "stage", idx);
    CHECK(k, !b->writing, "two copies into one buffer at once");
    b->writing = 1;
    b->landed = 0;
    cr_assert_lt(k->nev, MAX_EVENTS);
    k->ev[k->nev].is_w = is_w, k->ev[k->nev].idx = idx;
    k->ev[k->nev].tag = tag, k->ev[k->nev].fill = fill;
    k->nev++;
}

static void land(cta *k, int e) {
    const int is_w = k->ev[e].is_w, idx = k->ev[e].idx;
    buf *b = is_w ? &k->w[idx] : &k->stage[idx];
    bar *fb = is_w ? &k->wfull : &k->full[idx];
    CHECK(k, !read_in_flight(k, is_w, idx), "a copy landed in %s %d while a product reads it",
          is_w ? "W block" : "stage", idx);
    CHECK(k, fb->phase == (unsigned)k->ev[e].fill,
          "a copy for fill %d of %s %d landed in its barrier's phase %u", k->ev[e].fill,
          is_w ? "W block" : "stage", idx, fb->phase);
    b->tag = k->ev[e].tag;
    b->landed = 1;
    b->writing = 0;
    bar_complete_tx(fb, 1);
    k->ev[e] = k->ev[--k->nev];
}

/* Whether actor a can run its next op now. */
static int runnable(cta *k, int a) {
    const prog *p = &k->p[a];
    if (p->pc >= p->n) return 0;
    const op *o = &p->ops[p->pc];
    return o->kind != OP_WAIT || bar_ready(bar_of(k, o->bar, o->idx), (unsigned)o->a);
}

static void step(cta *k, int a) {
    prog *p = &k->p[a];
    const op *o = &p->ops[p->pc++];
    const int w = a - 1;
    switch (o->kind) {
    case OP_WAIT: break;
    case OP_ARRIVE: bar_arrive(bar_of(k, o->bar, o->idx), o->a); break;
    case OP_LOAD_W:
        bar_expect_tx(&k->wfull, k->kb_n);
        for (int kb = 0; kb < k->kb_n; kb++) issue_copy(k, 1, kb, o->a, o->b);
        break;
    case OP_LOAD_A:
        bar_expect_tx(&k->full[o->idx], 1);
        issue_copy(k, 0, o->idx, o->a, o->b);
        break;
    case OP_ISSUE: {
        const buf *wb = &k->w[o->b], *st = &k->stage[o->idx];
        CHECK(k, st->landed && !st->writing && st->tag == o->a,
              "stage %d read for tile %d k block %d: holds %d (landed %d)", o->idx, o->a / MAX_KB,
              o->a % MAX_KB, st->tag, st->landed);
        CHECK(k, wb->landed && !wb->writing && wb->tag == o->c,
              "W block %d read for generation %d: holds %d (landed %d)", o->b, o->c, wb->tag,
              wb->landed);
        cr_assert_lt(k->nfl[w], 2);
        k->fl[w][k->nfl[w]].s = o->idx, k->fl[w][k->nfl[w]].kb = o->b;
        k->nfl[w]++;
        break;
    }
    case OP_WAIT1: /* all but the newest group done */
        if (k->nfl[w] == 2) {
            k->fl[w][0] = k->fl[w][1];
            k->nfl[w] = 1;
        }
        break;
    case OP_WAIT0: k->nfl[w] = 0; break;
    }
}

static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* One CTA's run under a random schedule, the copies landing at random
 * too; returns 1 when every program ended, 0 on a deadlock (probe) and
 * fails the test on one otherwise. */
static int run_cta(cta *k, uint64_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    const int actors = 1 + k->wgs;
    for (long steps = 0;; steps++) {
        int can[1 + MAX_WGS + MAX_EVENTS], n = 0;
        for (int a = 0; a < actors; a++)
            if (runnable(k, a)) can[n++] = a;
        for (int e = 0; e < k->nev; e++) can[n++] = actors + e;
        if (n == 0) {
            int done = k->nev == 0;
            for (int a = 0; a < actors; a++) done = done && k->p[a].pc == k->p[a].n;
            CHECK(k, done, "deadlock: WGS %d S %d kb %d mt %d run [%d, %d)", k->wgs, k->S, k->kb_n,
                  k->mt, k->lo, k->hi);
            return done;
        }
        cr_assert_lt(steps, 4000000);
        const int pick = can[rng_next(&x) % (uint64_t)n];
        if (pick < actors)
            step(k, pick);
        else
            land(k, pick - actors);
    }
}

Test(wres_protocol, runs_cover_every_tile_once) {
    for (long long tiles = 1; tiles <= 400; tiles++)
        for (unsigned G = 1; G <= 140; G++) {
            int prev = 0;
            for (unsigned b = 0; b < G; b++) {
                int lo = 0, hi = 0;
                wres_range(tiles, b, G, &lo, &hi);
                cr_assert_eq(lo, prev, "tiles %lld G %u CTA %u", tiles, G, b);
                cr_assert_geq(hi, lo);
                if (G <= tiles) cr_assert_gt(hi, lo, "an empty run with G <= tiles");
                prev = hi;
            }
            cr_assert_eq(prev, (int)tiles);
        }
}

/* Every ring and run shape in the lists: tiles are row tiles x W slices,
 * each CTA's run that of wres_range over the grid. */
static long sweep(int wgs, int seeds) {
    const int stages[] = {2, 3, 5}, kbs[] = {1, 2, 3, 4}, mts[] = {1, 2, 3, 5};
    const int nts[] = {1, 2, 3, 4}, grids[] = {1, 2, 3, 5, 7};
    static cta k;
    long runs = 0;
    for (int si = 0; si < 3; si++)
        for (int ki = 0; ki < 4; ki++)
            for (int mi = 0; mi < 4; mi++)
                for (int ni = 0; ni < 4; ni++)
                    for (int gi = 0; gi < 5; gi++) {
                        const long long units = (long long)mts[mi] * nts[ni];
                        const unsigned G = (unsigned)grids[gi];
                        if (G > units) continue;
                        for (unsigned b = 0; b < G; b++) {
                            int lo = 0, hi = 0;
                            wres_range(units, b, G, &lo, &hi);
                            for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++, runs++) {
                                cta_init(&k, stages[si], kbs[ki], mts[mi], lo, hi, wgs);
                                run_cta(&k, seed + 977 * (uint64_t)runs);
                            }
                        }
                    }
    return runs;
}

Test(wres_protocol, random_interleavings) {
    const long runs = sweep(2, 12);
    cr_expect_gt(runs, 10000, "runs: %ld", runs);
}

/* Its 64-row form over three consumer warpgroups (HRMT_CUDA_GLU_WRES3):
 * runs with generations of one or two tiles, fewer than the warpgroups,
 * whose last tile arrives on wempty for those with none (wres_arrivals). */
Test(wres_protocol, random_interleavings_three_warpgroups) {
    const long runs = sweep(3, 8);
    cr_expect_gt(runs, 5000, "runs: %ld", runs);
}

/* Whether 200 random schedules of a broken protocol (made by `setup`)
 * show a violation: the model can see the error it guards against. */
static int caught(void (*setup)(cta *)) {
    for (uint64_t seed = 1; seed <= 200; seed++) {
        static cta k;
        setup(&k);
        k.probe = 1;
        run_cta(&k, seed);
        if (k.violations > 0) return 1;
    }
    return 0;
}

/* Consumers that wait for the W generation before their turn (the order
 * the kernel avoids) read a slice that is not theirs in some interleaving
 * (mt 1: every tile its own generation; a run of 6 tiles). */
static void early_w_wait(cta *k) {
    cta_init(k, 2, 1, 1, 0, 6, 2);
    for (int w = 0; w < k->wgs; w++) { /* each consumer's W wait before its order wait */
        prog *p = &k->p[1 + w];
        for (int i = 0; i + 1 < p->n; i++)
            if (p->ops[i].kind == OP_WAIT && p->ops[i].bar == B_ORDER &&
                p->ops[i + 1].kind == OP_WAIT && p->ops[i + 1].bar == B_WFULL) {
                const op t = p->ops[i];
                p->ops[i] = p->ops[i + 1];
                p->ops[i + 1] = t;
            }
    }
}
Test(wres_protocol, model_catches_an_early_w_wait) {
    cr_expect(caught(early_w_wait), "reordering the waits went unnoticed in 200 schedules");
}

/* Three warpgroups with the two-warpgroup rule's arrivals (a lone tile
 * arriving for one more warpgroup, not for every one without a tile): a
 * run whose generations hold two tiles leaves wempty one warpgroup short,
 * and the producer never loads the next slice. */
static void short_wempty(cta *k) {
    cta_init(k, 2, 1, 2, 0, 6, 3);
    for (int w = 0; w < k->wgs; w++) {
        prog *p = &k->p[1 + w];
        for (int i = 0; i < p->n; i++)
            if (p->ops[i].kind == OP_ARRIVE && p->ops[i].bar == B_WEMPTY && p->ops[i].a > 4)
                p->ops[i].a -= 4;
    }
}
Test(wres_protocol, model_catches_short_wempty_arrivals) {
    cr_expect(caught(short_wempty), "a wempty one warpgroup short went unnoticed in 200 schedules");
}
