/* The synchronisation of the W-resident gate_up loop
 * (src/cuda/sm90a/ring_wres.cuh), checked on the host: one CTA's producer
 * and two consumer warpgroups as programs of the kernel's barrier
 * operations, run by a random scheduler over a model of mbarriers (arrival
 * counts, transaction bytes, phases, try_wait.parity's rule) and of the
 * asynchronous copies and products. The schedule's decisions (each CTA's
 * run of tiles, a warpgroup's last tile of a W generation, a generation of
 * one tile) are the kernel's own functions (sm90a/wres_plan.h). What must
 * hold under every interleaving tried:
 *  - no deadlock (some step can always run until all programs end);
 *  - a product reads a ring stage or a W block only once its copy has
 *    landed, and holding the tile's own data (row tile and k block; W
 *    generation);
 *  - no copy is issued into, or lands in, a buffer that a product in flight
 *    still reads;
 *  - the CTAs' runs cover every tile once, in order.
 * The GPU tests (test_cuda_model's glu_wres_* and shape tests) check the
 * bytes; this checks the protocol where a GPU is not at hand, over run and
 * ring shapes the device tests do not reach. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "cuda/sm90a/wres_plan.h"
#include "support/mbar_model.h"

#define WGS 2
#define MAX_S 8
#define MAX_KB 4
#define MAX_OPS 4096
#define MAX_EVENTS 64

/* ---- buffers: A stages and W blocks -------------------------------------- */

typedef struct {
    int tag, landed, writing; /* tag: (tile j, k block) or W generation */
} buf;

/* ---- the CTA ------------------------------------------------------------- */

enum { OP_WAIT, OP_ARRIVE, OP_LOAD_W, OP_LOAD_A, OP_ISSUE, OP_WAIT1, OP_WAIT0 };
enum { B_FULL, B_EMPTY, B_ORDER, B_WFULL, B_WEMPTY };

typedef struct {
    int kind, bar, idx; /* barrier kind and index */
    int a, b, c;        /* wait: parity; arrive: count; loads / issue: operands */
} op;

typedef struct {
    op ops[MAX_OPS];
    int n, pc;
} prog;

typedef struct { /* one product group in flight: stage s, W block kb */
    int s, kb;
} flight;

typedef struct {
    int S, kb_n, mt, lo, hi;
    bar full[MAX_S], empty[MAX_S], order[WGS], wfull, wempty;
    buf stage[MAX_S], w[MAX_KB];
    prog p[1 + WGS]; /* producer, consumer warpgroups */
    flight fl[WGS][2];
    int nfl[WGS];
    struct { /* copies issued, not landed */
        int is_w, idx, tag;
    } ev[MAX_EVENTS];
    int nev;
} cta;

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

/* The producer thread's program, as ring_wres_kernel's warpgroup 0. */
static void producer(cta *c) {
    prog *p = &c->p[0];
    const int col0 = c->lo / c->mt;
    unsigned gen = 0, ph = 0;
    int s = 0, col = col0;
    if (c->lo < c->hi) emit(p, (op){OP_LOAD_W, 0, 0, 0, 0, 0});
    for (int j = c->lo; j < c->hi; j++) {
        if (j / c->mt != col) {
            emit(p, o_wait(B_WEMPTY, 0, gen & 1u));
            gen++;
            col = j / c->mt;
            emit(p, (op){OP_LOAD_W, 0, 0, (int)gen, 0, 0});
        }
        for (int kb = 0; kb < c->kb_n; kb++) {
            emit(p, o_wait(B_EMPTY, s, ph ^ 1u));
            emit(p, (op){OP_LOAD_A, 0, s, a_tag(j, kb), 0, 0});
            if (++s == c->S) {
                s = 0;
                ph ^= 1u;
            }
        }
    }
}

/* Consumer warpgroup cw's program, as ring_wres_kernel's consumer loop:
 * the four warps' arrivals as one of four (eight for a lone tile). */
static void consumer(cta *c, int cw) {
    prog *p = &c->p[1 + cw];
    const int col0 = c->lo / c->mt;
    unsigned turn = 0;
    int have = -1;
    for (int li = cw; c->lo + li < c->hi; li += WGS) {
        const int j = c->lo + li, g = j / c->mt - col0;
        const unsigned base = (unsigned)li * (unsigned)c->kb_n;
        int s = (int)(base % (unsigned)c->S), prev = -1;
        unsigned ph = (base / (unsigned)c->S) & 1u;
        emit(p, o_wait(B_ORDER, cw, turn));
        turn ^= 1u;
        if (g != have) {
            emit(p, o_wait(B_WFULL, 0, (unsigned)g & 1u));
            have = g;
        }
        for (int kb = 0; kb < c->kb_n; kb++) {
            emit(p, o_wait(B_FULL, s, ph));
            emit(p, (op){OP_ISSUE, 0, s, a_tag(j, kb), kb, g});
            emit(p, (op){OP_WAIT1, 0, 0, 0, 0, 0});
            if (prev >= 0) emit(p, o_arrive(B_EMPTY, prev, 4));
            prev = s;
            if (++s == c->S) {
                s = 0;
                ph ^= 1u;
            }
        }
        emit(p, o_arrive(B_ORDER, (cw + 1) % WGS, 1));
        emit(p, (op){OP_WAIT0, 0, 0, 0, 0, 0});
        if (prev >= 0) emit(p, o_arrive(B_EMPTY, prev, 4));
        if (wres_last(j, c->hi, c->mt, WGS))
            emit(p, o_arrive(B_WEMPTY, 0, wres_alone(j, c->lo, c->hi, c->mt) ? 8 : 4));
    }
}

static void cta_init(cta *c, int S, int kb_n, int mt, int lo, int hi) {
    memset(c, 0, sizeof *c);
    c->S = S, c->kb_n = kb_n, c->mt = mt, c->lo = lo, c->hi = hi;
    for (int s = 0; s < S; s++) {
        bar_init(&c->full[s], 1);
        bar_init(&c->empty[s], 4);
        c->stage[s].tag = -1;
    }
    for (int w = 0; w < WGS; w++) bar_init(&c->order[w], 1);
    bar_init(&c->wfull, 1);
    bar_init(&c->wempty, 4 * WGS);
    bar_arrive(&c->order[0], 1); /* tile 0's turn */
    for (int kb = 0; kb < MAX_KB; kb++) c->w[kb].tag = -1;
    producer(c);
    for (int w = 0; w < WGS; w++) consumer(c, w);
}

/* Whether a product in flight reads the buffer (W block or stage idx). */
static int read_in_flight(const cta *c, int is_w, int idx) {
    for (int w = 0; w < WGS; w++)
        for (int i = 0; i < c->nfl[w]; i++)
            if (is_w ? c->fl[w][i].kb == idx : c->fl[w][i].s == idx) return 1;
    return 0;
}

static void issue_copy(cta *c, int is_w, int idx, int tag) {
    buf *b = is_w ? &c->w[idx] : &c->stage[idx];
    cr_assert(!read_in_flight(c, is_w, idx), "a copy into %s %d while a product reads it",
              is_w ? "W block" : "stage", idx);
    cr_assert(!b->writing, "two copies into one buffer at once");
    b->writing = 1;
    b->landed = 0;
    cr_assert_lt(c->nev, MAX_EVENTS);
    c->ev[c->nev].is_w = is_w, c->ev[c->nev].idx = idx, c->ev[c->nev].tag = tag;
    c->nev++;
}

static void land(cta *c, int e) {
    const int is_w = c->ev[e].is_w, idx = c->ev[e].idx;
    buf *b = is_w ? &c->w[idx] : &c->stage[idx];
    cr_assert(!read_in_flight(c, is_w, idx), "a copy landed in %s %d while a product reads it",
              is_w ? "W block" : "stage", idx);
    b->tag = c->ev[e].tag;
    b->landed = 1;
    b->writing = 0;
    bar_complete_tx(is_w ? &c->wfull : &c->full[idx], 1);
    c->ev[e] = c->ev[--c->nev];
}

/* Whether actor a's next op can run now. */
static int runnable(cta *c, int a) {
    const prog *p = &c->p[a];
    if (p->pc >= p->n) return 0;
    const op *o = &p->ops[p->pc];
    return o->kind != OP_WAIT || bar_ready(bar_of(c, o->bar, o->idx), (unsigned)o->a);
}

static void step(cta *c, int a) {
    prog *p = &c->p[a];
    const op *o = &p->ops[p->pc++];
    const int w = a - 1;
    switch (o->kind) {
    case OP_WAIT: break;
    case OP_ARRIVE: bar_arrive(bar_of(c, o->bar, o->idx), o->a); break;
    case OP_LOAD_W:
        bar_expect_tx(&c->wfull, c->kb_n);
        for (int kb = 0; kb < c->kb_n; kb++) issue_copy(c, 1, kb, o->a);
        break;
    case OP_LOAD_A:
        bar_expect_tx(&c->full[o->idx], 1);
        issue_copy(c, 0, o->idx, o->a);
        break;
    case OP_ISSUE: {
        const buf *st = &c->stage[o->idx], *wb = &c->w[o->b];
        cr_assert(st->landed && !st->writing && st->tag == o->a,
                  "stage %d read for tile %d k block %d: holds %d (landed %d)", o->idx,
                  o->a / MAX_KB, o->a % MAX_KB, st->tag, st->landed);
        cr_assert(wb->landed && !wb->writing && wb->tag == o->c,
                  "W block %d read for generation %d: holds %d (landed %d)", o->b, o->c, wb->tag,
                  wb->landed);
        cr_assert_lt(c->nfl[w], 2);
        c->fl[w][c->nfl[w]].s = o->idx, c->fl[w][c->nfl[w]].kb = o->b;
        c->nfl[w]++;
        break;
    }
    case OP_WAIT1: /* all but the newest group done */
        if (c->nfl[w] == 2) {
            c->fl[w][0] = c->fl[w][1];
            c->nfl[w] = 1;
        }
        break;
    case OP_WAIT0: c->nfl[w] = 0; break;
    }
}

static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* One CTA's run under a random schedule; the copies land at random too. */
static void run_cta(int S, int kb_n, int mt, int lo, int hi, uint64_t seed) {
    static cta c;
    cta_init(&c, S, kb_n, mt, lo, hi);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (long steps = 0;; steps++) {
        int can[1 + WGS + MAX_EVENTS], n = 0;
        for (int a = 0; a < 1 + WGS; a++)
            if (runnable(&c, a)) can[n++] = a;
        for (int e = 0; e < c.nev; e++) can[n++] = 1 + WGS + e;
        const int done = c.p[0].pc == c.p[0].n && c.p[1].pc == c.p[1].n && c.p[2].pc == c.p[2].n;
        if (n == 0) {
            cr_assert(done && c.nev == 0,
                      "deadlock: S %d kb %d mt %d run [%d, %d): producer at %d/%d, consumers at "
                      "%d/%d and %d/%d",
                      S, kb_n, mt, lo, hi, c.p[0].pc, c.p[0].n, c.p[1].pc, c.p[1].n, c.p[2].pc,
                      c.p[2].n);
            return;
        }
        cr_assert_lt(steps, 1000000);
        const int pick = can[rng_next(&x) % (uint64_t)n];
        if (pick < 1 + WGS)
            step(&c, pick);
        else
            land(&c, pick - 1 - WGS);
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

Test(wres_protocol, random_interleavings) {
    const int stages[] = {2, 3, 5}, kbs[] = {1, 2, 3, 4}, mts[] = {1, 2, 3, 5};
    const int nts[] = {1, 2, 3, 4}, grids[] = {1, 2, 3, 5, 7};
    long runs = 0;
    for (int si = 0; si < 3; si++)
        for (int ki = 0; ki < 4; ki++)
            for (int mi = 0; mi < 4; mi++)
                for (int ni = 0; ni < 4; ni++)
                    for (int gi = 0; gi < 5; gi++) {
                        const long long tiles = (long long)mts[mi] * nts[ni];
                        const unsigned G = (unsigned)grids[gi];
                        if (G > tiles) continue;
                        for (unsigned b = 0; b < G; b++) {
                            int lo = 0, hi = 0;
                            wres_range(tiles, b, G, &lo, &hi);
                            for (uint64_t seed = 1; seed <= 12; seed++, runs++)
                                run_cta(stages[si], kbs[ki], mts[mi], lo, hi,
                                        seed + 977 * (uint64_t)runs);
                        }
                    }
    cr_expect_gt(runs, 10000, "runs: %ld", runs);
}

/* The model itself catches a protocol error: consumers that wait for the W
 * generation before their turn (the order the kernel avoids) read a slice
 * that is not theirs in some interleaving. */
Test(wres_protocol, model_catches_an_early_w_wait) {
    /* mt 1: every tile its own generation; run of 6 tiles. */
    int failures = 0;
    for (uint64_t seed = 1; seed <= 200 && !failures; seed++) {
        static cta c;
        cta_init(&c, 2, 1, 1, 0, 6);
        /* Move each consumer's W wait before its order wait. */
        for (int w = 0; w < WGS; w++) {
            prog *p = &c.p[1 + w];
            for (int i = 0; i + 1 < p->n; i++)
                if (p->ops[i].kind == OP_WAIT && p->ops[i].bar == B_ORDER &&
                    p->ops[i + 1].kind == OP_WAIT && p->ops[i + 1].bar == B_WFULL) {
                    const op t = p->ops[i];
                    p->ops[i] = p->ops[i + 1];
                    p->ops[i + 1] = t;
                }
        }
        uint64_t x = seed;
        for (long steps = 0; steps < 100000; steps++) {
            int can[1 + WGS + MAX_EVENTS], n = 0;
            for (int a = 0; a < 1 + WGS; a++)
                if (runnable(&c, a)) can[n++] = a;
            for (int e = 0; e < c.nev; e++) can[n++] = 1 + WGS + e;
            if (n == 0) break;
            const int pick = can[rng_next(&x) % (uint64_t)n];
            if (pick < 1 + WGS) {
                const op *o = &c.p[pick].ops[c.p[pick].pc];
                if (o->kind == OP_ISSUE) {
                    const buf *wb = &c.w[o->b];
                    if (!(wb->landed && !wb->writing && wb->tag == o->c)) {
                        failures++;
                        break;
                    }
                }
                if (o->kind == OP_LOAD_W || o->kind == OP_LOAD_A) {
                    const int is_w = o->kind == OP_LOAD_W;
                    if (read_in_flight(&c, is_w, is_w ? 0 : o->idx)) {
                        failures++;
                        break;
                    }
                }
                step(&c, pick);
            } else {
                land(&c, pick - 1 - WGS);
            }
        }
    }
    cr_expect_gt(failures, 0, "reordering the waits went unnoticed in 200 schedules");
}
