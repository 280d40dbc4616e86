/* The SRAM-tier arena: one 64-byte-aligned block carved first-fit, with a
 * sorted free list that coalesces neighbours on free, so freeing one tensor
 * really gives its bytes back. Not thread-safe: the tier manager locks. */
#ifndef HRMT_CORE_TIER_ARENA_H
#define HRMT_CORE_TIER_ARENA_H

#include <stddef.h>

#include "hrmt.h"

#define HRMT_ARENA_ALIGN 64

typedef struct hrmt_arena_extent {
    size_t off, len;
} hrmt_arena_extent;

typedef struct hrmt_arena {
    unsigned char *base;
    size_t size;             /* bytes, a multiple of HRMT_ARENA_ALIGN */
    hrmt_arena_extent *free; /* sorted by offset, never adjacent (coalesced) */
    size_t nfree, free_cap;
    size_t nblocks; /* live allocations */
} hrmt_arena;

/* Allocates the block (size rounded up to the alignment). OVERFLOW, OUT_OF_MEMORY. */
hrmt_status hrmt_arena_init(hrmt_arena *a, size_t size);
void hrmt_arena_destroy(hrmt_arena *a);
/* First fit of `bytes` rounded up to the alignment (*granted). NULL when no
 * free extent is large enough, or bytes is 0; *oom is set when the free-list
 * bookkeeping could not grow. */
void *hrmt_arena_alloc(hrmt_arena *a, size_t bytes, size_t *granted, int *oom);
/* Returns a block (p, granted) from hrmt_arena_alloc. */
void hrmt_arena_free(hrmt_arena *a, void *p, size_t granted);
/* Forgets every allocation: one free extent spanning the arena. */
void hrmt_arena_reset(hrmt_arena *a);
/* Largest free extent in bytes. */
size_t hrmt_arena_largest_free(const hrmt_arena *a);

#endif
