/* Ring buffer of tier events (see tier_events.h). */
#include "core/tier_events.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

static hrmt_tier_event *alloc_events(size_t cap, hrmt_status *s) {
    size_t bytes;
    if (!hrmt_mul_ok(cap, sizeof(hrmt_tier_event), &bytes)) {
        *s = HRMT_ERR_OVERFLOW;
        return NULL;
    }
    hrmt_tier_event *b = malloc(bytes);
    *s = b ? HRMT_OK : HRMT_ERR_OUT_OF_MEMORY;
    return b;
}

hrmt_status hrmt_event_ring_init(hrmt_event_ring *r, size_t cap) {
    memset(r, 0, sizeof *r);
    if (cap == 0) return HRMT_ERR_INVALID_ARG;
    hrmt_status s;
    r->buf = alloc_events(cap, &s);
    if (!r->buf) return s;
    r->cap = cap;
    return HRMT_OK;
}

void hrmt_event_ring_destroy(hrmt_event_ring *r) {
    free(r->buf);
    memset(r, 0, sizeof *r);
}

void hrmt_event_ring_push(hrmt_event_ring *r, const hrmt_tier_event *e) {
    if (r->count < r->cap) {
        r->buf[(r->head + r->count) % r->cap] = *e;
        r->count++;
        return;
    }
    /* Full: the oldest slot takes the new event and the ring turns by one. */
    r->buf[r->head] = *e;
    r->head = (r->head + 1) % r->cap;
    r->dropped++;
}

size_t hrmt_event_ring_copy(const hrmt_event_ring *r, hrmt_tier_event *out, size_t n) {
    size_t k = n < r->count ? n : r->count;
    size_t first = r->count - k; /* skip the oldest count - k */
    for (size_t i = 0; i < k; i++) out[i] = r->buf[(r->head + first + i) % r->cap];
    return k;
}

hrmt_status hrmt_event_ring_resize(hrmt_event_ring *r, size_t cap) {
    if (cap == 0) return HRMT_ERR_INVALID_ARG;
    if (cap == r->cap) return HRMT_OK;
    hrmt_status s;
    hrmt_tier_event *b = alloc_events(cap, &s);
    if (!b) return s;
    size_t kept = hrmt_event_ring_copy(r, b, cap);
    r->dropped += r->count - kept;
    free(r->buf);
    r->buf = b;
    r->cap = cap;
    r->head = 0;
    r->count = kept;
    return HRMT_OK;
}

void hrmt_event_ring_clear(hrmt_event_ring *r) {
    r->head = 0;
    r->count = 0;
    r->dropped = 0;
}
