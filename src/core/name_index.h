/* A set of NUL-terminated names with a value each, for duplicate detection
 * and lookup in untrusted input (safetensors headers, config keys) in
 * expected constant time per name.
 *
 * Open addressing over a power-of-two table at most half full, hashed with
 * SipHash-1-3 under a key drawn per index from getrandom(): a file cannot be
 * crafted to make names collide (a fixed hash such as FNV would let it, and
 * the index would turn quadratic again). The keys are borrowed, not copied. */
#ifndef HRMT_CORE_NAME_INDEX_H
#define HRMT_CORE_NAME_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct hrmt_name_slot {
    const char *key; /* NULL: empty */
    size_t value;
} hrmt_name_slot;

typedef struct hrmt_name_index {
    hrmt_name_slot *slots;
    size_t mask;  /* table size - 1 */
    size_t count; /* names held */
    uint64_t k0, k1;
} hrmt_name_index;

/* An empty index with room for `n` names before it grows. Returns 0, or -1
 * when out of memory. */
int hrmt_name_index_init(hrmt_name_index *ix, size_t n);
void hrmt_name_index_free(hrmt_name_index *ix);

/* Adds key -> value. Returns 0 when added; 1 when an equal key is already
 * there (*dup, may be NULL, points at its slot; nothing changes); -1 when
 * out of memory. */
int hrmt_name_index_add(hrmt_name_index *ix, const char *key, size_t value,
                        const hrmt_name_slot **dup);
/* The slot holding key, or NULL. */
const hrmt_name_slot *hrmt_name_index_find(const hrmt_name_index *ix, const char *key);

/* SipHash-c-d of `len` bytes under the key (k0, k1); the index uses c = 1,
 * d = 3 (as Rust's HashMap), tests check c = 2, d = 4 against the paper. */
uint64_t hrmt_siphash(int c, int d, uint64_t k0, uint64_t k1, const void *data, size_t len);

#endif
