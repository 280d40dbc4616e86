/* Bounded event log of the tier manager: a ring that keeps the most recent
 * `cap` events, so long benchmarks do not grow memory. Not thread-safe: the
 * tier manager locks. */
#ifndef HRMT_CORE_TIER_EVENTS_H
#define HRMT_CORE_TIER_EVENTS_H

#include <stdint.h>

#include "hrmt.h"

#define HRMT_EVENT_LOG_DEFAULT_CAP 4096

typedef struct hrmt_event_ring {
    hrmt_tier_event *buf;
    size_t cap;       /* > 0 */
    size_t head;      /* index of the oldest event */
    size_t count;     /* events held, <= cap */
    uint64_t dropped; /* events overwritten since the last clear */
} hrmt_event_ring;

hrmt_status hrmt_event_ring_init(hrmt_event_ring *r, size_t cap);
void hrmt_event_ring_destroy(hrmt_event_ring *r);
void hrmt_event_ring_push(hrmt_event_ring *r, const hrmt_tier_event *e);
/* New capacity keeping the most recent min(count, cap) events. On failure the
 * ring is unchanged. */
hrmt_status hrmt_event_ring_resize(hrmt_event_ring *r, size_t cap);
/* Copies the min(count, n) most recent events, oldest first; returns how many. */
size_t hrmt_event_ring_copy(const hrmt_event_ring *r, hrmt_tier_event *out, size_t n);
void hrmt_event_ring_clear(hrmt_event_ring *r);

#endif
