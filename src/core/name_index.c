/* See name_index.h. */
#define _GNU_SOURCE /* getrandom */
#include "core/name_index.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4]) {
    v[0] += v[1];
    v[1] = ROTL(v[1], 13);
    v[1] ^= v[0];
    v[0] = ROTL(v[0], 32);
    v[2] += v[3];
    v[3] = ROTL(v[3], 16);
    v[3] ^= v[2];
    v[0] += v[3];
    v[3] = ROTL(v[3], 21);
    v[3] ^= v[0];
    v[2] += v[1];
    v[1] = ROTL(v[1], 17);
    v[1] ^= v[2];
    v[2] = ROTL(v[2], 32);
}

static uint64_t load_le64(const unsigned char *p) {
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) x = (x << 8) | p[i];
    return x;
}

uint64_t hrmt_siphash(int c, int d, uint64_t k0, uint64_t k1, const void *data, size_t len) {
    const unsigned char *p = data;
    uint64_t v[4] = {k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
                     k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull};
    size_t whole = len / 8 * 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = load_le64(p + i);
        v[3] ^= m;
        for (int r = 0; r < c; r++) sip_round(v);
        v[0] ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = whole; i < len; i++) b |= (uint64_t)p[i] << (8 * (i - whole));
    v[3] ^= b;
    for (int r = 0; r < c; r++) sip_round(v);
    v[0] ^= b;
    v[2] ^= 0xff;
    for (int r = 0; r < d; r++) sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* A fresh key per index. Without getrandom (old kernels) the clock and an
 * address still make the key unknown to whoever wrote the file. */
static void random_key(hrmt_name_index *ix) {
    uint64_t k[2];
    if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k[0] = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)ix;
        k[1] = (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&k;
    }
    ix->k0 = k[0];
    ix->k1 = k[1];
}

static int alloc_table(hrmt_name_index *ix, size_t cap) {
    ix->slots = calloc(cap, sizeof *ix->slots);
    if (!ix->slots) return -1;
    ix->mask = cap - 1;
    ix->count = 0;
    return 0;
}

int hrmt_name_index_init(hrmt_name_index *ix, size_t n) {
    memset(ix, 0, sizeof *ix);
    size_t cap = 16;
    while (cap / 2 < n) {
        if (cap > SIZE_MAX / 4 / sizeof(hrmt_name_slot)) return -1;
        cap *= 2;
    }
    random_key(ix);
    return alloc_table(ix, cap);
}

void hrmt_name_index_free(hrmt_name_index *ix) {
    if (!ix) return;
    free(ix->slots);
    ix->slots = NULL;
    ix->count = 0;
}

/* The slot holding key, or the empty slot where it would go; the table is
 * never more than half full, so an empty slot exists. */
static hrmt_name_slot *probe(const hrmt_name_index *ix, const char *key) {
    size_t i = (size_t)hrmt_siphash(1, 3, ix->k0, ix->k1, key, strlen(key)) & ix->mask;
    while (ix->slots[i].key && strcmp(ix->slots[i].key, key) != 0) i = (i + 1) & ix->mask;
    return &ix->slots[i];
}

/* Doubles the table, re-inserting every name. */
static int grow(hrmt_name_index *ix) {
    hrmt_name_index old = *ix;
    size_t cap = (old.mask + 1) * 2;
    if (cap > SIZE_MAX / 2 / sizeof(hrmt_name_slot) || alloc_table(ix, cap) != 0) {
        *ix = old;
        return -1;
    }
    for (size_t i = 0; i <= old.mask; i++) {
        if (!old.slots[i].key) continue;
        *probe(ix, old.slots[i].key) = old.slots[i];
        ix->count++;
    }
    free(old.slots);
    return 0;
}

int hrmt_name_index_add(hrmt_name_index *ix, const char *key, size_t value,
                        const hrmt_name_slot **dup) {
    hrmt_name_slot *s = probe(ix, key);
    if (s->key) {
        if (dup) *dup = s;
        return 1;
    }
    if ((ix->count + 1) * 2 > ix->mask + 1) {
        if (grow(ix) != 0) return -1;
        s = probe(ix, key);
    }
    s->key = key;
    s->value = value;
    ix->count++;
    return 0;
}

const hrmt_name_slot *hrmt_name_index_find(const hrmt_name_index *ix, const char *key) {
    if (!ix->slots) return NULL;
    hrmt_name_slot *s = probe(ix, key);
    return s->key ? s : NULL;
}
