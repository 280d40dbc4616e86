/* A host model of an mbarrier for the protocol tests (test_wres_protocol.c,
 * test_ring_turns.c): an arrival count per phase, transaction units
 * (bytes, or copies) and the phases completed, with mbarrier.try_wait.
 * parity's rule. A phase completes when its pending arrivals and
 * transactions both reach zero; more arrivals than a phase expects, or
 * more transactions than expected, fail the test. */
#ifndef HRMT_TEST_MBAR_MODEL_H
#define HRMT_TEST_MBAR_MODEL_H

#include <criterion/criterion.h>

typedef struct {
    int init, pending, tx;
    unsigned phase; /* phases completed */
} bar;

static inline void bar_init(bar *b, int count) { *b = (bar){count, count, 0, 0}; }
static inline void bar_check(bar *b) {
    if (b->pending == 0 && b->tx == 0) {
        b->phase++;
        b->pending = b->init;
    }
}
static inline void bar_arrive(bar *b, int n) {
    cr_assert_leq(n, b->pending, "more arrivals than the phase expects");
    b->pending -= n;
    bar_check(b);
}
/* mbarrier.arrive.expect_tx: tx more units, and one arrival. */
static inline void bar_expect_tx(bar *b, int tx) {
    b->tx += tx;
    bar_arrive(b, 1);
}
static inline void bar_complete_tx(bar *b, int tx) {
    b->tx -= tx;
    cr_assert_geq(b->tx, 0, "more bytes than expected");
    bar_check(b);
}
/* mbarrier.try_wait.parity: true once the phase of that parity completed,
 * i.e. when the current (incomplete) phase's parity differs. */
static inline int bar_ready(const bar *b, unsigned parity) { return (b->phase & 1u) != parity; }

#endif
