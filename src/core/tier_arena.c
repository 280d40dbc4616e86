/* First-fit arena with a coalescing free list (see tier_arena.h). */
#include "core/tier_arena.h"

#include <stdlib.h>
#include <string.h>

#include "core/huge_alloc.h"

static int round_up(size_t x, size_t *out) {
    size_t r;
    if (__builtin_add_overflow(x, (size_t)(HRMT_ARENA_ALIGN - 1), &r)) return 0;
    *out = r / HRMT_ARENA_ALIGN * HRMT_ARENA_ALIGN;
    return 1;
}

hrmt_status hrmt_arena_init(hrmt_arena *a, size_t size) {
    memset(a, 0, sizeof *a);
    size_t rounded;
    if (size == 0) return HRMT_ERR_INVALID_ARG;
    if (!round_up(size, &rounded)) return HRMT_ERR_OVERFLOW;
    a->base = hrmt_huge_alloc(rounded);
    a->free = malloc(4 * sizeof *a->free);
    if (!a->base || !a->free) {
        hrmt_arena_destroy(a);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    a->size = rounded;
    a->free_cap = 4;
    hrmt_arena_reset(a);
    return HRMT_OK;
}

void hrmt_arena_destroy(hrmt_arena *a) {
    free(a->base);
    free(a->free);
    memset(a, 0, sizeof *a);
}

void hrmt_arena_reset(hrmt_arena *a) {
    a->free[0] = (hrmt_arena_extent){0, a->size};
    a->nfree = 1;
    a->nblocks = 0;
}

/* Free extents never outnumber live blocks + 1, so growing the list here,
 * where failure can be reported, means hrmt_arena_free never allocates. */
static int reserve_extents(hrmt_arena *a) {
    size_t need = a->nblocks + 2;
    if (need <= a->free_cap) return 1;
    size_t cap = a->free_cap * 2 > need ? a->free_cap * 2 : need;
    hrmt_arena_extent *f = realloc(a->free, cap * sizeof *f);
    if (!f) return 0;
    a->free = f;
    a->free_cap = cap;
    return 1;
}

void *hrmt_arena_alloc(hrmt_arena *a, size_t bytes, size_t *granted, int *oom) {
    size_t need;
    *oom = 0;
    if (bytes == 0 || !round_up(bytes, &need)) return NULL;
    if (!reserve_extents(a)) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < a->nfree; i++) {
        hrmt_arena_extent *e = &a->free[i];
        if (e->len < need) continue;
        void *p = a->base + e->off;
        e->off += need;
        e->len -= need;
        if (e->len == 0) {
            memmove(e, e + 1, (a->nfree - i - 1) * sizeof *e);
            a->nfree--;
        }
        a->nblocks++;
        *granted = need;
        return p;
    }
    return NULL;
}

void hrmt_arena_free(hrmt_arena *a, void *p, size_t granted) {
    size_t off = (size_t)((unsigned char *)p - a->base);
    size_t i = 0;
    while (i < a->nfree && a->free[i].off < off) i++;
    int join_prev = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
    int join_next = i < a->nfree && off + granted == a->free[i].off;
    if (join_prev && join_next) {
        a->free[i - 1].len += granted + a->free[i].len;
        memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof a->free[0]);
        a->nfree--;
    } else if (join_prev) {
        a->free[i - 1].len += granted;
    } else if (join_next) {
        a->free[i].off = off;
        a->free[i].len += granted;
    } else {
        memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof a->free[0]);
        a->free[i] = (hrmt_arena_extent){off, granted};
        a->nfree++;
    }
    a->nblocks--;
}

size_t hrmt_arena_largest_free(const hrmt_arena *a) {
    size_t m = 0;
    for (size_t i = 0; i < a->nfree; i++)
        if (a->free[i].len > m) m = a->free[i].len;
    return m;
}
