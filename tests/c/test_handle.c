/* The handle API: start from a config, issue ids, status, events from config and runtime subscriptions (from the
 * background thread, which may call back into the runtime), shutdown with its RELEASED event, and the next holder
 * of the released slot starting after the last id. */
#include "test_util.h"

#include <pthread.h>

#define MAX_EVENTS 256

struct recorder {
    pthread_mutex_t lock;
    int count;
    cosid_event events[MAX_EVENTS];
    char details[MAX_EVENTS][128];
    pthread_t threads[MAX_EVENTS];
    /* Set: the callback calls cosid_runtime_status on this runtime, as the rules allow. */
    cosid_runtime *const *rt;
    int status_calls;
    int status_failures;
};

static void record(void *userdata, const cosid_event *e) {
    struct recorder *r = userdata;
    int status_ok = 1;
    if (r->rt && *r->rt && e->kind == COSID_EVENT_KIND_RENEWED) {
        cosid_status s;
        status_ok = cosid_runtime_status(*r->rt, &s) == COSID_RESULT_OK && s.slot == e->slot;
    }
    pthread_mutex_lock(&r->lock);
    if (r->count < MAX_EVENTS) {
        r->events[r->count] = *e;
        snprintf(r->details[r->count], sizeof r->details[0], "%s", e->detail);
        r->events[r->count].detail = NULL; /* valid only during the call */
        r->threads[r->count] = pthread_self();
        r->count++;
    }
    if (r->rt && e->kind == COSID_EVENT_KIND_RENEWED) {
        r->status_calls++;
        r->status_failures += !status_ok;
    }
    pthread_mutex_unlock(&r->lock);
}

/* Index of the first event of `kind` at or after `from`, or -1. */
static int find(struct recorder *r, cosid_event_kind kind, int from) {
    pthread_mutex_lock(&r->lock);
    int found = -1;
    for (int i = from; i < r->count; i++) {
        if (r->events[i].kind == kind) {
            found = i;
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return found;
}

/* Waits (polling, up to 10 s: a bound for slow machines, not a timing assertion) for an event of `kind`. */
static int wait_for(struct recorder *r, cosid_event_kind kind, int from) {
    for (int i = 0; i < 1000; i++) {
        int at = find(r, kind, from);
        if (at >= 0) {
            return at;
        }
        t_sleep_ms(10);
    }
    return -1;
}

int main(void) {
    t_setup();
    static struct recorder from_config = {.lock = PTHREAD_MUTEX_INITIALIZER};
    static struct recorder from_runtime = {.lock = PTHREAD_MUTEX_INITIALIZER};
    static cosid_runtime *rt = NULL;
    from_runtime.rt = &rt;

    cosid_config *cfg = t_config("handle");
    CHECK_OK(cosid_config_set(cfg, "ttl", "300ms"));
    CHECK_OK(cosid_config_set(cfg, "owner_key", "test-handle"));
    CHECK_OK(cosid_config_subscribe(cfg, record, &from_config));
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    CHECK(rt != NULL);
    CHECK_OK(cosid_runtime_subscribe(rt, record, &from_runtime));

    /* The config subscription saw the start. */
    int acquired = find(&from_config, COSID_EVENT_KIND_ACQUIRED, 0);
    CHECK(acquired == 0);
    cosid_status s;
    CHECK_OK(cosid_runtime_status(rt, &s));
    CHECK(s.state == COSID_STATE_ACTIVE);
    CHECK(!s.has_last_issued);
    if (acquired >= 0) {
        cosid_event a = from_config.events[acquired];
        CHECK(a.slot == s.slot);
        CHECK(a.fence == s.fence);
        CHECK(a.floor_ms == s.floor_ms);
        CHECK(a.floor_ms < a.ceiling_ms);
        CHECK(a.expires_at_ms <= a.ceiling_ms);
        CHECK(strcmp(from_config.details[acquired], "") == 0);
    }

    /* Ids: increasing, on the runtime's slot, and the status follows them. */
    uint64_t first = 0, batch[1000];
    CHECK_OK(cosid_runtime_next_id(rt, &first));
    CHECK_OK(cosid_runtime_next_ids(rt, batch, 1000));
    CHECK(batch[0] > first);
    int increasing = 1;
    for (int i = 1; i < 1000; i++) {
        increasing &= batch[i] > batch[i - 1];
    }
    CHECK(increasing);
    cosid_layout layout;
    CHECK_OK(cosid_runtime_layout(rt, &layout));
    CHECK(layout.tick_ms == COSID_TICK_MILLISECOND && layout.slot_bits == 10 && layout.sequence_bits == 12);
    cosid_parts p;
    CHECK_OK(cosid_decompose(&layout, batch[999], &p));
    CHECK(p.slot == s.slot);
    CHECK_OK(cosid_runtime_status(rt, &s));
    CHECK(s.has_last_issued);
    CHECK(s.last_issued_ms >= p.timestamp_ms);
    CHECK(s.last_issued_ms > s.floor_ms && s.last_issued_ms <= s.ceiling_ms);

    /* Renewals (every ttl/3) reach the runtime subscription on the keeper's thread, which may read the status. */
    int renewed = wait_for(&from_runtime, COSID_EVENT_KIND_RENEWED, 0);
    CHECK(renewed >= 0);
    if (renewed >= 0) {
        CHECK(from_runtime.events[renewed].slot == s.slot);
        CHECK(from_runtime.events[renewed].ceiling_ms >= s.ceiling_ms);
        CHECK(!pthread_equal(from_runtime.threads[renewed], pthread_self()));
        pthread_mutex_lock(&from_runtime.lock);
        CHECK(from_runtime.status_calls >= 1 && from_runtime.status_failures == 0);
        pthread_mutex_unlock(&from_runtime.lock);
    }
    cosid_status renewed_status;
    CHECK_OK(cosid_runtime_status(rt, &renewed_status));
    CHECK(renewed_status.ceiling_ms >= s.ceiling_ms);
    CHECK(renewed_status.fence == s.fence);

    /* A second runtime from the same config takes another slot. */
    cosid_runtime *other = NULL;
    CHECK_OK(cosid_runtime_new(cfg, &other));
    cosid_status os;
    CHECK_OK(cosid_runtime_status(other, &os));
    CHECK(os.slot != s.slot);
    cosid_runtime_free(other);

    /* Shutdown: RELEASED with the exact last millisecond; then CLOSED, status still readable, idempotent. */
    uint64_t last_id = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &last_id));
    CHECK_OK(cosid_runtime_status(rt, &s));
    int released_before = find(&from_runtime, COSID_EVENT_KIND_RELEASED, 0);
    CHECK(released_before < 0);
    CHECK_OK(cosid_runtime_shutdown(rt));
    int released = find(&from_runtime, COSID_EVENT_KIND_RELEASED, 0); /* delivered before shutdown returns */
    CHECK(released >= 0);
    uint64_t last_ms = 0;
    if (released >= 0) {
        cosid_event e = from_runtime.events[released];
        CHECK(e.slot == s.slot);
        CHECK(e.has_last_issued);
        CHECK(e.last_issued_ms == s.last_issued_ms);
        last_ms = e.last_issued_ms;
    }
    uint64_t id = 12345;
    CHECK_RC(cosid_runtime_next_id(rt, &id), COSID_RESULT_CLOSED);
    CHECK(id == 12345);
    CHECK_RC(cosid_runtime_next_ids(rt, batch, 10), COSID_RESULT_CLOSED);
    cosid_status closed;
    CHECK_OK(cosid_runtime_status(rt, &closed));
    CHECK(closed.state == COSID_STATE_CLOSED);
    CHECK_OK(cosid_runtime_shutdown(rt));
    int events_after_shutdown = from_runtime.count;
    cosid_runtime_free(rt);
    rt = NULL;
    CHECK(from_runtime.count == events_after_shutdown);

    /* The next holder of the released slot starts after the last id: its window's floor is at least it. */
    cosid_config *next = t_config("handle");
    char slot_text[16];
    snprintf(slot_text, sizeof slot_text, "%u", s.slot);
    CHECK_OK(cosid_config_set(next, "preferred_slot", slot_text));
    cosid_runtime *successor = NULL;
    CHECK_OK(cosid_runtime_new(next, &successor));
    cosid_status ss;
    CHECK_OK(cosid_runtime_status(successor, &ss));
    CHECK(ss.slot == s.slot);
    CHECK(ss.fence > s.fence);
    CHECK(ss.floor_ms >= last_ms);
    uint64_t succ_id = 0;
    CHECK_OK(cosid_runtime_next_id(successor, &succ_id));
    CHECK(succ_id > last_id);
    cosid_runtime_free(successor);
    cosid_config_free(next);
    cosid_config_free(cfg);

    t_cleanup();
    return t_finish("test_handle");
}
