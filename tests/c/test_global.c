/* The process-wide runtime: started from the environment on first use (a bad variable is reported, and the next
 * call tries again), cosid_init refused while running, cosid_shutdown then CLOSED, cosid_init again with
 * config events, and the atexit handler: a normal exit releases the slot, an _exit leaves it held. */
#include "test_util.h"

#include <pthread.h>
#include <sys/wait.h>

struct events {
    pthread_mutex_t lock;
    int acquired;
    int released;
    cosid_result reentry; /* what a call into the starting runtime from its own start event returned */
};

static struct events ev = {PTHREAD_MUTEX_INITIALIZER, 0, 0, COSID_RESULT_OK};

static void on_event(void *userdata, const cosid_event *e) {
    struct events *x = userdata;
    cosid_result r = COSID_RESULT_OK;
    if (e->kind == COSID_EVENT_KIND_ACQUIRED) {
        cosid_status s;
        r = cosid_global_status(&s); /* refused, not a deadlock, while the runtime starts */
    }
    pthread_mutex_lock(&x->lock);
    x->acquired += e->kind == COSID_EVENT_KIND_ACQUIRED;
    x->released += e->kind == COSID_EVENT_KIND_RELEASED;
    if (e->kind == COSID_EVENT_KIND_ACQUIRED) {
        x->reentry = r;
    }
    pthread_mutex_unlock(&x->lock);
}

/* In a fresh child: the first call reads the environment; a bad value is reported and the next call retries. */
static void environment(void) {
    pid_t pid = t_fork();
    if (pid == 0) {
        setenv("COSID_TTL", "soon", 1);
        uint64_t id = 5;
        int ok = cosid_next_id(&id) == COSID_RESULT_CONFIG && id == 5 && strstr(t_last_error(), "COSID_TTL");
        setenv("COSID_TTL", "5s", 1);
        setenv("COSID_NAMESPACE", "env-ns", 1);
        ok = ok && cosid_next_id(&id) == COSID_RESULT_OK;
        cosid_status s;
        ok = ok && cosid_global_status(&s) == COSID_RESULT_OK && s.expires_at_ms - s.store_now_ms <= 5000 &&
             s.expires_at_ms - s.store_now_ms > 1000;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A child takes a slot in `ns` and ends with exit() (atexit releases it) or _exit() (no handler runs). Returns the
 * child's slot. */
static uint32_t child_slot(int normal_exit) {
    int p[2];
    if (pipe(p) != 0) {
        exit(2);
    }
    pid_t pid = t_fork();
    if (pid == 0) {
        close(p[0]);
        uint64_t id;
        cosid_status s;
        if (cosid_next_id(&id) != COSID_RESULT_OK || cosid_global_status(&s) != COSID_RESULT_OK) {
            _exit(1);
        }
        if (write(p[1], &s.slot, sizeof s.slot) != sizeof s.slot) {
            _exit(1);
        }
        if (normal_exit) {
            exit(0);
        }
        _exit(0);
    }
    close(p[1]);
    uint32_t slot = UINT32_MAX;
    CHECK(read(p[0], &slot, sizeof slot) == sizeof slot);
    close(p[0]);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return slot;
}

/* Whether a runtime that prefers `slot` gets it: it does only if nobody holds it. */
static int slot_is_free(const char *ns, uint32_t slot) {
    cosid_config *cfg = t_config(ns);
    char text[16];
    snprintf(text, sizeof text, "%u", slot);
    CHECK_OK(cosid_config_set(cfg, "preferred_slot", text));
    cosid_runtime *rt = NULL;
    cosid_status s = {0};
    CHECK_OK(cosid_runtime_new(cfg, &rt));
    CHECK_OK(cosid_runtime_status(rt, &s));
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
    return s.slot == slot;
}

int main(void) {
    t_setup();
    environment();

    /* Lazy start from the environment. */
    setenv("COSID_NAMESPACE", "global", 1);
    cosid_layout l;
    CHECK_OK(cosid_global_layout(&l));
    CHECK(l.tick_ms == 1 && l.slot_bits == 10);
    uint64_t a = 0, b = 0, batch[100];
    CHECK_OK(cosid_next_id(&a));
    CHECK_OK(cosid_next_ids(batch, 100));
    CHECK_OK(cosid_next_id(&b));
    CHECK(a < batch[0] && batch[99] < b);
    cosid_status s;
    CHECK_OK(cosid_global_status(&s));
    CHECK(s.state == COSID_STATE_ACTIVE && s.has_last_issued);

    /* Configured explicitly: refused while running. */
    cosid_config *cfg = t_config("global-2");
    CHECK_OK(cosid_config_subscribe(cfg, on_event, &ev));
    CHECK_RC(cosid_init(cfg), COSID_RESULT_ALREADY_INITIALIZED);

    /* Shutdown: CLOSED afterwards, status still readable, harmless twice. */
    CHECK_OK(cosid_shutdown());
    uint64_t id = 3;
    CHECK_RC(cosid_next_id(&id), COSID_RESULT_CLOSED);
    CHECK_RC(cosid_next_ids(batch, 10), COSID_RESULT_CLOSED);
    CHECK(id == 3 && batch[0] < b);
    CHECK_OK(cosid_global_status(&s));
    CHECK(s.state == COSID_STATE_CLOSED);
    CHECK_OK(cosid_shutdown());
    /* The slot was released: it is free for another runtime. */
    CHECK(slot_is_free("global", s.slot));

    /* Started again from a config; its subscription sees the start, on the starting thread, where calling into the
     * starting runtime is refused instead of waiting for itself. */
    CHECK_OK(cosid_init(cfg));
    CHECK(ev.acquired == 1);
    CHECK(ev.reentry == COSID_RESULT_REENTRANT);
    CHECK_OK(cosid_next_id(&id));
    CHECK_OK(cosid_global_status(&s));
    CHECK(s.state == COSID_STATE_ACTIVE);

    /* atexit: a child's slot (the child re-acquires its own after fork) is released by exit(), not by _exit(). */
    uint32_t released = child_slot(1);
    CHECK(released != s.slot);
    CHECK(slot_is_free("global-2", released));
    uint32_t held = child_slot(0);
    CHECK(held != s.slot);
    CHECK(!slot_is_free("global-2", held));

    CHECK_OK(cosid_shutdown());
    CHECK(ev.released >= 1);
    cosid_config_free(cfg);
    t_cleanup();
    return t_finish("test_global");
}
