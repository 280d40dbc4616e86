/* The synchronisation of the persistent ring GEMM loop
 * (src/cuda/sm90a/ring_gemm.cuh), checked on the host: one CTA's producer
 * and its consumers as programs of the kernel's barrier operations, run by
 * a random scheduler over a model of mbarriers (arrival counts,
 * transaction units, phases, try_wait.parity's rule) and of the copies
 * that land asynchronously. Consumers: wgmma ties a warpgroup's four
 * warps together, so each warpgroup is one program (four arrivals on a
 * stage's empty barrier, one ending its tile's turn). The tiles' ring
 * positions are the kernel's own function (sm90a/ring_plan.h). What must
 * hold under every interleaving tried:
 *  - no deadlock (some step can run until every program ends);
 *  - a consumer reads a stage only holding its own tile's k block, and no
 *    copy is issued into, or lands in, a stage a consumer still reads.
 * And two one-line breaks of the kernel's rule (a stage given back by one
 * arrive instead of the warpgroup's four; a tile's turn never passed on)
 * must each deadlock under some interleaving: the model can see the hang
 * it guards against. The device tests (test_cuda_model's shape tests)
 * check the bytes. */
#include <criterion/criterion.h>
#include <string.h>

#include "cuda/sm90a/ring_plan.h"
#include "support/mbar_model.h"

#define MAX_S 8
#define MAX_WGS 2
#define MAX_PROGS MAX_WGS
#define MAX_EVENTS (2 * MAX_S)

/* The consumers' rule: the kernel's, or one of two breaks of it. */
enum { RULE_KERNEL, RULE_ONE_EMPTY_ARRIVE, RULE_NO_TURN };

/* ---- the CTA ------------------------------------------------------------- */

typedef struct {
    int wg, k, kb, s, st; /* st: 0 turn, 1 full, 2 read, 3 turn over, 4 done */
    unsigned ph, turn;
} consumer;

typedef struct {
    int S, kb_n, nt, wgs, rule;
    bar full[MAX_S], empty[MAX_S], order[MAX_WGS];
    int tag[MAX_S][2], readers[MAX_S]; /* tag: tile u, k block kb as u 64 + kb + 1 */
    struct {
        int s, part, tag;
    } ev[MAX_EVENTS];
    int nev;
    /* producer */
    int pu, pkb, ps, pdone;
    unsigned pph;
    consumer c[MAX_PROGS];
    int nc;
} cta;

static unsigned rng_next(unsigned *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

static void issue(cta *c, int s, int part, int tag) {
    cr_assert_eq(c->readers[s], 0, "a copy issued into stage %d while a consumer reads it", s);
    cr_assert_lt(c->nev, MAX_EVENTS);
    c->ev[c->nev].s = s;
    c->ev[c->nev].part = part;
    c->ev[c->nev].tag = tag;
    c->nev++;
}

static void setup(cta *c, int S, int kb_n, int nt, int wgs, int rule) {
    memset(c, 0, sizeof *c);
    c->rule = rule;
    c->S = S;
    c->kb_n = kb_n;
    c->nt = nt;
    c->wgs = wgs;
    for (int s = 0; s < S; s++) {
        bar_init(&c->full[s], 1);
        bar_init(&c->empty[s], 4); /* one arrive per warp */
    }
    for (int w = 0; w < wgs; w++) bar_init(&c->order[w], 1);
    bar_arrive(&c->order[0], 1); /* tile 0's turn */
    c->nc = wgs;
    for (int i = 0; i < c->nc; i++) c->c[i].wg = i;
    /* W's first stages before the wait for the kernel before. */
    const int pre = nt > 0 ? (kb_n < S ? kb_n : S) : 0;
    for (int kb = 0; kb < pre; kb++) {
        bar_expect_tx(&c->full[kb], 2);
        issue(c, kb, 1, kb + 1);
    }
    c->pdone = nt == 0;
}

/* One step of the producer; 0 when it is blocked. */
static int producer_step(cta *c) {
    const int pre = c->kb_n < c->S ? c->kb_n : c->S;
    const int tag = c->pu * 64 + c->pkb + 1, s = c->ps;
    if (c->pu == 0 && c->pkb < pre) {
        issue(c, s, 0, tag);
    } else {
        if (!bar_ready(&c->empty[s], c->pph ^ 1u)) return 0;
        bar_expect_tx(&c->full[s], 2);
        issue(c, s, 0, tag);
        issue(c, s, 1, tag);
    }
    if (++c->ps == c->S) {
        c->ps = 0;
        c->pph ^= 1u;
    }
    if (++c->pkb == c->kb_n) {
        c->pkb = 0;
        if (++c->pu == c->nt) c->pdone = 1;
    }
    return 1;
}

/* One step of consumer i; 0 when it is blocked or done. */
static int consumer_step(cta *c, int i) {
    consumer *w = &c->c[i];
    const int u = w->k * c->wgs + w->wg; /* the CTA's tile this warpgroup is on */
    switch (w->st) {
    case 0:
        if (u >= c->nt) {
            w->st = 4;
            return 1;
        }
        if (!bar_ready(&c->order[w->wg], w->turn)) return 0;
        w->turn ^= 1u;
        ring_tile_start(u, c->kb_n, c->S, &w->s, &w->ph);
        w->kb = 0;
        w->st = 1;
        return 1;
    case 1:
        if (!bar_ready(&c->full[w->s], w->ph)) return 0;
        c->readers[w->s]++;
        w->st = 2;
        return 1;
    case 2: {
        const int want = u * 64 + w->kb + 1;
        cr_assert(c->tag[w->s][0] == want && c->tag[w->s][1] == want,
                  "tile %d k block %d read stage %d holding A %d, W %d", u, w->kb, w->s,
                  c->tag[w->s][0], c->tag[w->s][1]);
        c->readers[w->s]--;
        bar_arrive(&c->empty[w->s], c->rule == RULE_ONE_EMPTY_ARRIVE ? 1 : 4);
        if (++w->s == c->S) {
            w->s = 0;
            w->ph ^= 1u;
        }
        w->st = ++w->kb == c->kb_n ? 3 : 1;
        return 1;
    }
    case 3:
        /* The next tile's turn (the kernel: thread 0 of the warpgroup). */
        if (c->rule != RULE_NO_TURN) bar_arrive(&c->order[(w->wg + 1) % c->wgs], 1);
        w->k++;
        w->st = 0;
        return 1;
    default: return 0;
    }
}

/* A copy lands. */
static void land(cta *c, int e) {
    const int s = c->ev[e].s;
    cr_assert_eq(c->readers[s], 0, "a copy landed in stage %d while a consumer reads it", s);
    c->tag[s][c->ev[e].part] = c->ev[e].tag;
    bar_complete_tx(&c->full[s], 1);
    c->ev[e] = c->ev[--c->nev];
}

/* Runs the CTA under one random schedule (each program's weight random
 * too, so some warpgroups lag); 1 when every program ended, 0 on a deadlock. */
static int run(cta *c, unsigned seed) {
    unsigned x = seed * 2654435761u + 1u, wt[1 + MAX_PROGS + 1];
    for (int i = 0; i < 2 + c->nc; i++) wt[i] = 1 + rng_next(&x) % 8;
    for (long step = 0; step < 1000000; step++) {
        int runnable[2 + MAX_PROGS], n = 0;
        unsigned total = 0;
        /* Try each candidate in a random order until one moves. */
        if (c->nev) runnable[n++] = -1;
        if (!c->pdone) runnable[n++] = -2;
        for (int i = 0; i < c->nc; i++)
            if (c->c[i].st != 4) runnable[n++] = i;
        if (n == 0) return 1;
        for (int i = 0; i < n; i++) total += wt[runnable[i] + 2];
        int moved = 0;
        for (int tries = 0; tries < 4 * n && !moved; tries++) {
            unsigned r = rng_next(&x) % total;
            int pick = 0;
            while (r >= wt[runnable[pick] + 2]) r -= wt[runnable[pick++] + 2];
            const int p = runnable[pick];
            if (p == -1)
                land(c, (int)(rng_next(&x) % (unsigned)c->nev)), moved = 1;
            else if (p == -2)
                moved = producer_step(c);
            else
                moved = consumer_step(c, p);
        }
        for (int i = 0; i < n && !moved; i++) { /* every candidate, in order */
            const int p = runnable[i];
            if (p == -1)
                land(c, 0), moved = 1;
            else if (p == -2)
                moved = producer_step(c);
            else
                moved = consumer_step(c, p);
        }
        if (!moved) return 0;
    }
    cr_assert_fail("a schedule ran a million steps");
    return 0;
}

/* Every ring depth, k blocks, tile count and warpgroup count the kernels
 * take (HRM's gate_up: 8 k blocks at hidden 512, 4 at 256) under `rule`;
 * returns the deadlocks seen. */
static int sweep(int rule) {
    static cta c;
    int dead = 0;
    for (int wgs = 1; wgs <= MAX_WGS; wgs++)
        for (int S = 2; S <= 6; S++)
            for (int kb_n = 1; kb_n <= 8; kb_n++)
                for (int nt = 0; nt <= 9; nt++)
                    for (unsigned seed = 1; seed <= 12; seed++) {
                        setup(&c, S, kb_n, nt, wgs, rule);
                        dead += !run(&c, seed + 977u * (unsigned)(nt + 16 * (kb_n + 16 * S)));
                    }
    return dead;
}

Test(ring_turns, wgmma_warpgroups_never_deadlock) { cr_assert_eq(sweep(RULE_KERNEL), 0); }

Test(ring_turns, a_stage_given_back_by_one_arrive_deadlocks) {
    cr_assert_gt(sweep(RULE_ONE_EMPTY_ARRIVE), 0,
                 "one arrive a stage never deadlocked: the model cannot see the hang");
}

Test(ring_turns, a_turn_never_passed_on_deadlocks) {
    cr_assert_gt(sweep(RULE_NO_TURN), 0,
                 "a turn never passed on never deadlocked: the model cannot see the hang");
}
