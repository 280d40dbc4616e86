/* The tier manager (the seed's MemoryTierManager, completed): named tensors in
 * an SRAM arena sized to the SRAM tier or on the 64-byte-aligned heap (DRAM),
 * per-tier statistics, a bounded event log and per-thread tier scopes.
 *
 * Choices the seed leaves open:
 *  - A tensor that alloc_sram spills to DRAM is a DRAM tensor: it counts in
 *    DRAM's bytes, SRAM counts the miss. A spill also happens when the bytes
 *    would fit the capacity but no free arena extent is large enough
 *    (fragmentation, or the 64-byte rounding of each block).
 *  - Transfers allocate their destination through the normal alloc path (so
 *    it counts in that tier's bytes and, for SRAM, as a hit or miss) and are
 *    counted on the tier the source actually lives in, timing the copy only.
 *  - reset_stats keeps the bytes of live tensors as current (and peak starts
 *    there), so a later free never drives current below zero.
 *  - Event timestamps are taken when the event is logged, under the lock, so
 *    the log is ordered even with many threads.
 * Every public function locks `mu`; the mutex makes concurrent use from
 * OpenMP threads safe. */
#define _POSIX_C_SOURCE 200809L
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/checked.h"
#include "core/huge_alloc.h"
#include "core/tier_arena.h"
#include "core/tier_events.h"
#include "core/tiers.h"

typedef struct tier_entry {
    struct tier_entry *next; /* hash chain */
    char *name;
    hrmt_tensor t;
    size_t nbytes;
    size_t granted; /* arena bytes when in the arena, else 0 */
    int external;   /* data is the caller's (hrmt_tiers_register_sram): never freed */
} tier_entry;

typedef struct scope_frame {
    pthread_t owner;
    hrmt_tier tier;
    double resume_s;  /* when this frame last became the innermost one */
    int prev_threads; /* team size to restore at scope_end */
} scope_frame;

struct hrmt_tiers {
    pthread_mutex_t mu;
    size_t sram_capacity;
    hrmt_arena arena;
    tier_entry **buckets;
    size_t nbuckets, count;
    hrmt_tier_stats st[2]; /* raw counters; means and hit_rate are filled on read */
    hrmt_event_ring ring;
    int log_enabled;
    double created_s;
    scope_frame *frames;
    size_t nframes, frames_cap;
    double scope_us[2];
    int scope_threads[2];
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int valid_tier(hrmt_tier t) { return t == HRMT_TIER_DRAM || t == HRMT_TIER_SRAM; }

/* The const accessors still need the lock; the mutex is the one field that is
 * not part of the manager's logical state. */
static void lock(const hrmt_tiers *tm) { pthread_mutex_lock((pthread_mutex_t *)&tm->mu); }
static void unlock(const hrmt_tiers *tm) { pthread_mutex_unlock((pthread_mutex_t *)&tm->mu); }

/* ---- name registry: chained hash table (FNV-1a) ------------------------- */

static size_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static tier_entry **find_slot(hrmt_tiers *tm, const char *name) {
    tier_entry **p = &tm->buckets[hash_name(name) & (tm->nbuckets - 1)];
    while (*p && strcmp((*p)->name, name) != 0) p = &(*p)->next;
    return p;
}

/* Doubles the table when it is full; 0 on allocation failure. */
static int reserve_slot(hrmt_tiers *tm) {
    if (tm->count < tm->nbuckets) return 1;
    size_t n = tm->nbuckets * 2;
    tier_entry **b = calloc(n, sizeof(tier_entry *));
    if (!b) return 0;
    for (size_t i = 0; i < tm->nbuckets; i++) {
        tier_entry *e = tm->buckets[i];
        while (e) {
            tier_entry *next = e->next;
            size_t h = hash_name(e->name) & (n - 1);
            e->next = b[h];
            b[h] = e;
            e = next;
        }
    }
    free(tm->buckets);
    tm->buckets = b;
    tm->nbuckets = n;
    return 1;
}

/* ---- bookkeeping (lock held) -------------------------------------------- */

static void log_event(hrmt_tiers *tm, hrmt_tier tier, hrmt_tier_op op, size_t bytes, double us) {
    if (!tm->log_enabled) return;
    hrmt_tier_event e = {tier, op, bytes, us, now_s() - tm->created_s};
    hrmt_event_ring_push(&tm->ring, &e);
}

static void count_alloc(hrmt_tier_stats *s, size_t bytes) {
    s->total_alloc_bytes += bytes;
    s->current_alloc_bytes += bytes;
    if (s->current_alloc_bytes > s->peak_alloc_bytes) s->peak_alloc_bytes = s->current_alloc_bytes;
}

static void release_memory(hrmt_tiers *tm, tier_entry *e) {
    if (e->external) return;
    if (e->granted)
        hrmt_arena_free(&tm->arena, e->t.data, e->granted);
    else
        free(e->t.data);
}

static void destroy_entry(hrmt_tiers *tm, tier_entry *e) {
    release_memory(tm, e);
    free(e->name);
    free(e);
}

/* Creates tensor `name`; in the SRAM arena when want_sram and it fits (a hit),
 * else on the heap (a miss when want_sram). With ext the tensor is ext's
 * memory on device ext_dev instead: placed and counted by the same rule,
 * nothing allocated or zeroed. */
static hrmt_status alloc_locked(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                hrmt_dtype dtype, int want_sram, void *ext, hrmt_device ext_dev,
                                hrmt_tensor *out, tier_entry **made) {
    hrmt_tensor t;
    size_t nbytes, heap_bytes, name_len;
    hrmt_status s = hrmt_tensor_init(&t, NULL, dtype, ndim, shape);
    if (s != HRMT_OK) return s;
    if ((s = hrmt_tensor_nbytes(&t, &nbytes)) != HRMT_OK) return s;
    if (!hrmt_add_ok(nbytes, HRMT_ARENA_ALIGN - 1, &heap_bytes)) return HRMT_ERR_OVERFLOW;
    heap_bytes = heap_bytes / HRMT_ARENA_ALIGN * HRMT_ARENA_ALIGN;
    if (*find_slot(tm, name)) return HRMT_ERR_EXISTS;
    if (!reserve_slot(tm)) return HRMT_ERR_OUT_OF_MEMORY;

    tier_entry *e = calloc(1, sizeof *e);
    name_len = strlen(name);
    if (e) e->name = malloc(name_len + 1);
    if (!e || !e->name) {
        free(e);
        return HRMT_ERR_OUT_OF_MEMORY;
    }
    memcpy(e->name, name, name_len + 1);

    double t0 = now_s();
    hrmt_tier tier = HRMT_TIER_DRAM;
    void *p = NULL;
    size_t room;
    const int fits = want_sram &&
                     hrmt_add_ok(tm->st[HRMT_TIER_SRAM].current_alloc_bytes, nbytes, &room) &&
                     room <= tm->sram_capacity;
    if (ext) {
        p = ext;
        e->external = 1;
        if (fits) tier = HRMT_TIER_SRAM;
    } else if (fits) {
        int oom;
        p = hrmt_arena_alloc(&tm->arena, nbytes, &e->granted, &oom);
        if (p) tier = HRMT_TIER_SRAM;
    }
    if (!p) {
        e->granted = 0;
        p = hrmt_huge_alloc(heap_bytes);
        if (!p) {
            free(e->name);
            free(e);
            return HRMT_ERR_OUT_OF_MEMORY;
        }
    }
    if (!ext) memset(p, 0, nbytes);
    double us = (now_s() - t0) * 1e6;

    if (want_sram) {
        if (tier == HRMT_TIER_SRAM)
            tm->st[HRMT_TIER_SRAM].hit_count++;
        else
            tm->st[HRMT_TIER_SRAM].miss_count++;
    }
    count_alloc(&tm->st[tier], nbytes);
    log_event(tm, tier, HRMT_TIER_OP_ALLOC, nbytes, us);

    t.data = p;
    t.tier = tier;
    t.device = ext ? ext_dev : HRMT_DEVICE_HOST;
    e->t = t;
    e->nbytes = nbytes;
    tier_entry **slot = &tm->buckets[hash_name(name) & (tm->nbuckets - 1)];
    e->next = *slot;
    *slot = e;
    tm->count++;
    if (out) *out = t;
    if (made) *made = e;
    return HRMT_OK;
}

/* ---- lifetime ------------------------------------------------------------ */

hrmt_status hrmt_tiers_create(size_t sram_capacity_bytes, size_t event_cap, hrmt_tiers **out) {
    if (!out || sram_capacity_bytes == 0) return HRMT_ERR_INVALID_ARG;
    *out = NULL;
    hrmt_tiers *tm = calloc(1, sizeof *tm);
    if (!tm) return HRMT_ERR_OUT_OF_MEMORY;
    hrmt_status s = hrmt_arena_init(&tm->arena, sram_capacity_bytes);
    if (s == HRMT_OK)
        s = hrmt_event_ring_init(&tm->ring, event_cap ? event_cap : HRMT_EVENT_LOG_DEFAULT_CAP);
    tm->nbuckets = 64;
    tm->buckets = calloc(tm->nbuckets, sizeof(tier_entry *));
    if (s == HRMT_OK && !tm->buckets) s = HRMT_ERR_OUT_OF_MEMORY;
    if (s == HRMT_OK && pthread_mutex_init(&tm->mu, NULL) != 0) s = HRMT_ERR_OUT_OF_MEMORY;
    if (s != HRMT_OK) {
        hrmt_arena_destroy(&tm->arena);
        hrmt_event_ring_destroy(&tm->ring);
        free(tm->buckets);
        free(tm);
        return s;
    }
    tm->sram_capacity = sram_capacity_bytes;
    tm->log_enabled = 1;
    tm->created_s = now_s();
    *out = tm;
    return HRMT_OK;
}

void hrmt_tiers_destroy(hrmt_tiers *tm) {
    if (!tm) return;
    hrmt_tiers_free_all(tm);
    pthread_mutex_destroy(&tm->mu);
    hrmt_arena_destroy(&tm->arena);
    hrmt_event_ring_destroy(&tm->ring);
    free(tm->buckets);
    free(tm->frames);
    free(tm);
}

hrmt_status hrmt_tiers_set_sram_capacity(hrmt_tiers *tm, size_t bytes) {
    if (!tm || bytes == 0) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    hrmt_status s = HRMT_OK;
    if (tm->arena.nblocks > 0) {
        s = HRMT_ERR_INVALID_ARG; /* live SRAM tensors would lose their memory */
    } else {
        hrmt_arena fresh;
        s = hrmt_arena_init(&fresh, bytes);
        if (s == HRMT_OK) {
            hrmt_arena_destroy(&tm->arena);
            tm->arena = fresh;
            tm->sram_capacity = bytes;
        }
    }
    unlock(tm);
    return s;
}

size_t hrmt_tiers_sram_capacity(const hrmt_tiers *tm) {
    if (!tm) return 0;
    lock(tm);
    size_t c = tm->sram_capacity;
    unlock(tm);
    return c;
}

hrmt_status hrmt_tiers_set_event_log(hrmt_tiers *tm, int enabled, size_t cap) {
    if (!tm) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    hrmt_status s = cap ? hrmt_event_ring_resize(&tm->ring, cap) : HRMT_OK;
    if (s == HRMT_OK) tm->log_enabled = enabled != 0;
    unlock(tm);
    return s;
}

/* ---- tensors ------------------------------------------------------------- */

static hrmt_status alloc_public(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                hrmt_dtype dtype, int want_sram, hrmt_tensor *out) {
    if (!tm || !name || !*name || !shape || !out) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    hrmt_status s =
        alloc_locked(tm, name, ndim, shape, dtype, want_sram, NULL, HRMT_DEVICE_HOST, out, NULL);
    unlock(tm);
    return s;
}

hrmt_status hrmt_tiers_alloc_sram(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                  hrmt_dtype dtype, hrmt_tensor *out) {
    return alloc_public(tm, name, ndim, shape, dtype, 1, out);
}

hrmt_status hrmt_tiers_register_sram(hrmt_tiers *tm, const char *name, int ndim,
                                     const size_t *shape, hrmt_dtype dtype, void *data,
                                     hrmt_device device, hrmt_tensor *out) {
    if (!tm || !name || !*name || !shape || !data) return HRMT_ERR_INVALID_ARG;
    if (device != HRMT_DEVICE_HOST && device != HRMT_DEVICE_CUDA) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    hrmt_status s = alloc_locked(tm, name, ndim, shape, dtype, 1, data, device, out, NULL);
    unlock(tm);
    return s;
}

hrmt_status hrmt_tiers_alloc_dram(hrmt_tiers *tm, const char *name, int ndim, const size_t *shape,
                                  hrmt_dtype dtype, hrmt_tensor *out) {
    return alloc_public(tm, name, ndim, shape, dtype, 0, out);
}

hrmt_status hrmt_tiers_get(hrmt_tiers *tm, const char *name, hrmt_tensor *out) {
    if (!tm || !name || !out) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    tier_entry *e = *find_slot(tm, name);
    if (e) *out = e->t;
    unlock(tm);
    return e ? HRMT_OK : HRMT_ERR_NOT_FOUND;
}

hrmt_status hrmt_tiers_free(hrmt_tiers *tm, const char *name) {
    if (!tm || !name) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    tier_entry **slot = find_slot(tm, name);
    tier_entry *e = *slot;
    if (e) {
        *slot = e->next;
        tm->count--;
        hrmt_tier tier = e->t.tier;
        size_t bytes = e->nbytes;
        double t0 = now_s();
        destroy_entry(tm, e);
        tm->st[tier].current_alloc_bytes -= bytes;
        log_event(tm, tier, HRMT_TIER_OP_FREE, bytes, (now_s() - t0) * 1e6);
    }
    unlock(tm);
    return e ? HRMT_OK : HRMT_ERR_NOT_FOUND;
}

void hrmt_tiers_free_all(hrmt_tiers *tm) {
    if (!tm) return;
    lock(tm);
    for (size_t i = 0; i < tm->nbuckets; i++) {
        tier_entry *e = tm->buckets[i];
        while (e) {
            tier_entry *next = e->next;
            if (!e->granted && !e->external) free(e->t.data); /* arena blocks: the reset */
            free(e->name);
            free(e);
            e = next;
        }
        tm->buckets[i] = NULL;
    }
    tm->count = 0;
    hrmt_arena_reset(&tm->arena);
    tm->st[HRMT_TIER_SRAM].current_alloc_bytes = 0;
    tm->st[HRMT_TIER_DRAM].current_alloc_bytes = 0;
    unlock(tm);
}

/* ---- transfers ----------------------------------------------------------- */

static void count_transfer(hrmt_tiers *tm, hrmt_tier from, size_t bytes, double us) {
    tm->st[from].num_transfers++;
    tm->st[from].total_transfer_us += us;
    log_event(tm, from, HRMT_TIER_OP_TRANSFER, bytes, us);
}

/* Copies `name` into a new tensor `<name><suffix>` allocated toward `to`. */
static hrmt_status transfer(hrmt_tiers *tm, const char *name, hrmt_tier to, const char *suffix,
                            hrmt_tensor *out) {
    if (!tm || !name || !out) return HRMT_ERR_INVALID_ARG;
    size_t n = strlen(name), k = strlen(suffix), len;
    if (!hrmt_add_ok(n, k + 1, &len)) return HRMT_ERR_OVERFLOW;
    char *dst_name = malloc(len);
    if (!dst_name) return HRMT_ERR_OUT_OF_MEMORY;
    snprintf(dst_name, len, "%s%s", name, suffix);

    lock(tm);
    tier_entry *src = *find_slot(tm, name);
    tier_entry *dst = NULL;
    hrmt_status s = HRMT_ERR_NOT_FOUND;
    if (src && src->t.device != HRMT_DEVICE_HOST)
        s = HRMT_ERR_UNSUPPORTED; /* registered device memory: not the host's to copy */
    else if (src)
        s = alloc_locked(tm, dst_name, src->t.ndim, src->t.shape, src->t.dtype,
                         to == HRMT_TIER_SRAM, NULL, HRMT_DEVICE_HOST, NULL, &dst);
    if (s == HRMT_OK) {
        double t0 = now_s();
        memcpy(dst->t.data, src->t.data, src->nbytes);
        count_transfer(tm, src->t.tier, src->nbytes, (now_s() - t0) * 1e6);
        *out = dst->t;
    }
    unlock(tm);
    free(dst_name);
    return s;
}

hrmt_status hrmt_tiers_transfer_sram_to_dram(hrmt_tiers *tm, const char *name, hrmt_tensor *out) {
    return transfer(tm, name, HRMT_TIER_DRAM, "_from_sram", out);
}

hrmt_status hrmt_tiers_transfer_dram_to_sram(hrmt_tiers *tm, const char *name, hrmt_tensor *out) {
    return transfer(tm, name, HRMT_TIER_SRAM, "_from_dram", out);
}

static int is_contiguous(const hrmt_tensor *t) {
    size_t want = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] > 1 && t->stride[i] != want) return 0;
        want *= t->shape[i];
    }
    return 1;
}

hrmt_status hrmt_tiers_copy(hrmt_tiers *tm, const hrmt_tensor *dst, const hrmt_tensor *src) {
    if (!tm || !dst || !src || !dst->data || !src->data || !valid_tier(src->tier))
        return HRMT_ERR_INVALID_ARG;
    if (dst->device != HRMT_DEVICE_HOST || src->device != HRMT_DEVICE_HOST)
        return HRMT_ERR_UNSUPPORTED;
    if (dst->dtype != src->dtype) return HRMT_ERR_DTYPE;
    size_t nd, ns;
    hrmt_status s = hrmt_tensor_nbytes(dst, &nd);
    if (s == HRMT_OK) s = hrmt_tensor_nbytes(src, &ns);
    if (s != HRMT_OK) return s;
    if (nd != ns || !is_contiguous(dst) || !is_contiguous(src)) return HRMT_ERR_SHAPE;
    /* The copy runs outside the lock: the caller owns both buffers. */
    double t0 = now_s();
    memmove(dst->data, src->data, ns);
    double us = (now_s() - t0) * 1e6;
    lock(tm);
    count_transfer(tm, src->tier, ns, us);
    unlock(tm);
    return HRMT_OK;
}

/* ---- statistics and the event log ---------------------------------------- */

hrmt_status hrmt_tiers_record(hrmt_tiers *tm, hrmt_tier tier, hrmt_tier_op op, size_t bytes,
                              double duration_us) {
    if (!tm || !valid_tier(tier) || !(duration_us >= 0.0) || duration_us > 1e300)
        return HRMT_ERR_INVALID_ARG;
    if (op != HRMT_TIER_OP_LOAD && op != HRMT_TIER_OP_STORE && op != HRMT_TIER_OP_TRANSFER)
        return HRMT_ERR_INVALID_ARG; /* allocs and frees are the manager's own bookkeeping */
    lock(tm);
    hrmt_tier_stats *st = &tm->st[tier];
    if (op == HRMT_TIER_OP_LOAD) {
        st->num_loads++;
        st->total_load_us += duration_us;
        log_event(tm, tier, op, bytes, duration_us);
    } else if (op == HRMT_TIER_OP_STORE) {
        st->num_stores++;
        st->total_store_us += duration_us;
        log_event(tm, tier, op, bytes, duration_us);
    } else {
        count_transfer(tm, tier, bytes, duration_us);
    }
    unlock(tm);
    return HRMT_OK;
}

static double mean(double total, uint64_t n) { return n ? total / (double)n : 0.0; }

hrmt_status hrmt_tiers_stats(hrmt_tiers *tm, hrmt_tier tier, hrmt_tier_stats *out) {
    if (!tm || !out || !valid_tier(tier)) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    hrmt_tier_stats s = tm->st[tier];
    unlock(tm);
    s.mean_load_us = mean(s.total_load_us, s.num_loads);
    s.mean_store_us = mean(s.total_store_us, s.num_stores);
    s.mean_transfer_us = mean(s.total_transfer_us, s.num_transfers);
    uint64_t lookups = s.hit_count + s.miss_count;
    s.hit_rate = lookups ? (double)s.hit_count / (double)lookups : 0.0;
    *out = s;
    return HRMT_OK;
}

hrmt_status hrmt_tiers_events(hrmt_tiers *tm, hrmt_tier_event *out, size_t cap, size_t *n) {
    if (!tm || !n || (!out && cap > 0)) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    *n = hrmt_event_ring_copy(&tm->ring, out, cap);
    unlock(tm);
    return HRMT_OK;
}

void hrmt_tiers_reset_stats(hrmt_tiers *tm) {
    if (!tm) return;
    lock(tm);
    for (int i = 0; i < 2; i++) {
        size_t live = tm->st[i].current_alloc_bytes;
        memset(&tm->st[i], 0, sizeof tm->st[i]);
        tm->st[i].current_alloc_bytes = live;
        tm->st[i].peak_alloc_bytes = live;
        tm->scope_us[i] = 0.0;
    }
    hrmt_event_ring_clear(&tm->ring);
    unlock(tm);
}

void hrmt_tiers_log_info_get(hrmt_tiers *tm, hrmt_tiers_log_info *out) {
    lock(tm);
    out->enabled = tm->log_enabled;
    out->cap = tm->ring.cap;
    out->held = tm->ring.count;
    out->dropped = tm->ring.dropped;
    out->num_tensors = tm->count;
    unlock(tm);
}

/* ---- SRAM/DRAM scopes ------------------------------------------------------ */

hrmt_status hrmt_tiers_set_scope_threads(hrmt_tiers *tm, hrmt_tier tier, int n) {
    if (!tm || !valid_tier(tier) || n < 0) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    tm->scope_threads[tier] = n;
    unlock(tm);
    return HRMT_OK;
}

int hrmt_tiers_scope_threads(const hrmt_tiers *tm, hrmt_tier tier) {
    if (!tm || !valid_tier(tier)) return 0;
    lock(tm);
    int n = tm->scope_threads[tier];
    unlock(tm);
    return n;
}

/* Innermost open frame of the calling thread, or NULL. */
static scope_frame *innermost(hrmt_tiers *tm, size_t *index) {
    pthread_t self = pthread_self();
    for (size_t i = tm->nframes; i-- > 0;) {
        if (pthread_equal(tm->frames[i].owner, self)) {
            if (index) *index = i;
            return &tm->frames[i];
        }
    }
    return NULL;
}

/* Time is exclusive: while a scope is open inside another on the same thread,
 * it is charged to the inner scope's tier only, so SRAM + DRAM scope time is
 * the wall time spent inside scopes (summed over threads). */
hrmt_status hrmt_tiers_scope_begin(hrmt_tiers *tm, hrmt_tier tier) {
    if (!tm || !valid_tier(tier)) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    if (tm->nframes == tm->frames_cap) {
        size_t cap = tm->frames_cap ? tm->frames_cap * 2 : 8;
        scope_frame *f = realloc(tm->frames, cap * sizeof *f);
        if (!f) {
            unlock(tm);
            return HRMT_ERR_OUT_OF_MEMORY;
        }
        tm->frames = f;
        tm->frames_cap = cap;
    }
    double t = now_s();
    scope_frame *outer = innermost(tm, NULL);
    if (outer) tm->scope_us[outer->tier] += (t - outer->resume_s) * 1e6;
    scope_frame *f = &tm->frames[tm->nframes++];
    f->owner = pthread_self();
    f->tier = tier;
    f->resume_s = t;
    f->prev_threads = omp_get_max_threads();
    int want = tm->scope_threads[tier];
    unlock(tm);
    if (want > 0) omp_set_num_threads(want); /* the calling thread's ICV only */
    return HRMT_OK;
}

hrmt_status hrmt_tiers_scope_end(hrmt_tiers *tm, hrmt_tier tier) {
    if (!tm || !valid_tier(tier)) return HRMT_ERR_INVALID_ARG;
    lock(tm);
    size_t i;
    scope_frame *f = innermost(tm, &i);
    if (!f || f->tier != tier) {
        unlock(tm);
        return HRMT_ERR_INVALID_ARG; /* no open scope of this tier on this thread */
    }
    double t = now_s();
    tm->scope_us[tier] += (t - f->resume_s) * 1e6;
    int prev = f->prev_threads;
    memmove(f, f + 1, (tm->nframes - i - 1) * sizeof *f);
    tm->nframes--;
    scope_frame *outer = innermost(tm, NULL);
    if (outer) outer->resume_s = t;
    unlock(tm);
    if (omp_get_max_threads() != prev) omp_set_num_threads(prev);
    return HRMT_OK;
}

double hrmt_tiers_scope_time_us(const hrmt_tiers *tm, hrmt_tier tier) {
    if (!tm || !valid_tier(tier)) return 0.0;
    lock(tm);
    double us = tm->scope_us[tier];
    unlock(tm);
    return us;
}
