/* fork(): a child never issues an id with its parent's lease. With the default policy (`reacquire`) each child
 * takes slots of its own on first use, for the process-wide runtime and for the handles it inherited, while the
 * parent (with a thread issuing ids throughout) keeps its own; all ids of all processes are unique. With the
 * policy `error`, and on the memory: store, the child's calls fail with FORKED, and freeing its copy leaves the
 * parent's lease alone. */
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#define CHILDREN 4

static long per_child;

/* What a child reports through its pipe. */
struct report {
    uint32_t global_slot;
    uint32_t handle_slot;
    uint32_t failures;
    uint32_t count;
};

static int write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n) {
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static void child(int fd, int hold, cosid_runtime *inherited) {
    struct report rep = {0, 0, 0, 0};
    uint64_t *ids = calloc((size_t)per_child * 2, sizeof(uint64_t));
    if (!ids) {
        _exit(3);
    }
    for (long i = 0; i < per_child; i++) {
        rep.failures += cosid_next_id(&ids[rep.count]) != COSID_RESULT_OK;
        rep.count++;
        rep.failures += cosid_runtime_next_id(inherited, &ids[rep.count]) != COSID_RESULT_OK;
        rep.count++;
    }
    cosid_status g, h;
    rep.failures += cosid_global_status(&g) != COSID_RESULT_OK;
    rep.failures += cosid_runtime_status(inherited, &h) != COSID_RESULT_OK;
    rep.global_slot = g.slot;
    rep.handle_slot = h.slot;
    if (write_all(fd, &rep, sizeof rep) != 0 || write_all(fd, ids, rep.count * sizeof(uint64_t)) != 0) {
        _exit(4);
    }
    free(ids);
    close(fd);
    /* The child's own runtimes are released at free and at exit (atexit); the parent's copies are left alone.
     * Keep the slots until every child has reported, so that all of them are held at once. */
    char c;
    while (read(hold, &c, 1) > 0) {
    }
    cosid_runtime_free(inherited);
    exit(0);
}

struct background {
    atomic_int stop;
    atomic_int started;
    uint64_t ids[200000];
    long count;
    int failures;
};

/* The parent keeps issuing while it forks: the children are copies of a busy process. */
static void *issue_until_stopped(void *arg) {
    struct background *b = arg;
    atomic_store(&b->started, 1);
    while (!atomic_load(&b->stop) && b->count < (long)(sizeof b->ids / sizeof b->ids[0])) {
        b->failures += cosid_next_id(&b->ids[b->count]) != COSID_RESULT_OK;
        b->count++;
        t_sleep_ms(b->count % 64 == 0);
    }
    return NULL;
}

static void reacquire(void) {
    setenv("COSID_NAMESPACE", "fork", 1);
    cosid_config *cfg = t_config("fork");
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    uint64_t first = 0;
    REQUIRE_OK(cosid_next_id(&first));
    cosid_status pg, ph;
    CHECK_OK(cosid_global_status(&pg));
    CHECK_OK(cosid_runtime_status(rt, &ph));

    static struct background bg;
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, issue_until_stopped, &bg) == 0);
    /* The issuing thread is running before the first fork (t_fork lets threads finish starting). */
    while (atomic_load(&bg.started) == 0) {
        t_sleep_ms(1);
    }

    int fds[CHILDREN];
    pid_t pids[CHILDREN];
    int hold[2];
    if (pipe(hold) != 0) {
        exit(2);
    }
    for (int c = 0; c < CHILDREN; c++) {
        int p[2];
        if (pipe(p) != 0) {
            exit(2);
        }
        pids[c] = t_fork();
        if (pids[c] < 0) {
            exit(2);
        }
        if (pids[c] == 0) {
            close(p[0]);
            close(hold[1]);
            child(p[1], hold[0], rt);
        }
        close(p[1]);
        fds[c] = p[0];
    }

    /* The parent issues from both while the children run. */
    uint64_t *mine = calloc((size_t)per_child * 2 + 1, sizeof(uint64_t));
    long n_mine = 0;
    int parent_failures = 0;
    mine[n_mine++] = first;
    for (long i = 0; i < per_child; i++) {
        parent_failures += cosid_next_id(&mine[n_mine++]) != COSID_RESULT_OK;
        parent_failures += cosid_runtime_next_id(rt, &mine[n_mine++]) != COSID_RESULT_OK;
    }
    CHECK(parent_failures == 0);

    size_t cap = (size_t)(n_mine + CHILDREN * per_child * 2 + (long)(sizeof bg.ids / sizeof bg.ids[0]));
    uint64_t *all = calloc(cap, sizeof(uint64_t));
    size_t n_all = 0;
    memcpy(all, mine, (size_t)n_mine * sizeof(uint64_t));
    n_all += (size_t)n_mine;

    uint32_t slots[2 + 2 * CHILDREN];
    int n_slots = 0;
    slots[n_slots++] = pg.slot;
    slots[n_slots++] = ph.slot;
    cosid_layout layout;
    CHECK_OK(cosid_global_layout(&layout));
    for (int c = 0; c < CHILDREN; c++) {
        struct report rep;
        CHECK(read_all(fds[c], &rep, sizeof rep) == 0);
        CHECK(rep.failures == 0);
        CHECK(rep.count == (uint32_t)(per_child * 2));
        if (rep.count > (uint32_t)(per_child * 2)) {
            rep.count = 0;
        }
        CHECK(read_all(fds[c], all + n_all, rep.count * sizeof(uint64_t)) == 0);
        /* Every id of the child is on one of the child's own slots. */
        long foreign = 0;
        for (uint32_t i = 0; i < rep.count; i++) {
            cosid_parts p;
            if (cosid_decompose(&layout, all[n_all + i], &p) != COSID_RESULT_OK ||
                (p.slot != rep.global_slot && p.slot != rep.handle_slot)) {
                foreign++;
            }
        }
        CHECK(foreign == 0);
        n_all += rep.count;
        slots[n_slots++] = rep.global_slot;
        slots[n_slots++] = rep.handle_slot;
        close(fds[c]);
    }
    close(hold[0]);
    close(hold[1]); /* every child reported: let them exit */
    for (int c = 0; c < CHILDREN; c++) {
        int status = 0;
        CHECK(waitpid(pids[c], &status, 0) == pids[c]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    atomic_store(&bg.stop, 1);
    pthread_join(thread, NULL);
    CHECK(bg.failures == 0);
    CHECK(bg.count > 0);
    memcpy(all + n_all, bg.ids, (size_t)bg.count * sizeof(uint64_t));
    n_all += (size_t)bg.count;

    /* Distinct slots: no child shares a slot with its parent or another child. */
    int shared = 0;
    for (int i = 0; i < n_slots; i++) {
        for (int j = 0; j < i; j++) {
            shared += slots[i] == slots[j];
        }
    }
    CHECK(shared == 0);
    size_t dups = t_duplicates(all, n_all);
    CHECK(dups == 0);
    if (dups || shared) {
        fprintf(stderr, "%zu duplicates among %zu ids; %d shared slots\n", dups, n_all, shared);
    }

    /* The parent's leases are untouched by the children's exits and frees. */
    cosid_status after;
    CHECK_OK(cosid_runtime_status(rt, &after));
    CHECK(after.slot == ph.slot && after.fence == ph.fence && after.state == COSID_STATE_ACTIVE);
    CHECK_OK(cosid_global_status(&after));
    CHECK(after.slot == pg.slot && after.fence == pg.fence && after.state == COSID_STATE_ACTIVE);

    free(all);
    free(mine);
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
}

static void policy_error(void) {
    cosid_config *cfg = t_config("fork-error");
    CHECK_OK(cosid_config_set(cfg, "on_fork", "error"));
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    cosid_status before;
    CHECK_OK(cosid_runtime_status(rt, &before));
    pid_t pid = t_fork();
    if (pid == 0) {
        uint64_t id = 7;
        cosid_status s;
        int ok = cosid_runtime_next_id(rt, &id) == COSID_RESULT_FORKED && id == 7 &&
                 cosid_runtime_status(rt, &s) == COSID_RESULT_FORKED &&
                 cosid_runtime_next_id(rt, &id) == COSID_RESULT_FORKED;
        char detail[512];
        size_t len = 0;
        ok = ok && cosid_last_error(detail, sizeof detail, &len) == COSID_RESULT_OK && strstr(detail, "fork");
        /* Shutting down and freeing the child's copy must not release the parent's lease. */
        ok = ok && cosid_runtime_shutdown(rt) == COSID_RESULT_OK;
        cosid_runtime_free(rt);
        /* A new handle in the child works, on a slot of its own. */
        cosid_runtime *own = NULL;
        ok = ok && cosid_runtime_new(cfg, &own) == COSID_RESULT_OK && cosid_runtime_next_id(own, &id) == COSID_RESULT_OK &&
             cosid_runtime_status(own, &s) == COSID_RESULT_OK && s.slot != before.slot;
        cosid_runtime_free(own);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    cosid_status after;
    CHECK_OK(cosid_runtime_status(rt, &after));
    CHECK(after.state == COSID_STATE_ACTIVE && after.fence == before.fence);
    uint64_t id = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &id));
    /* The slot is still the parent's: another runtime preferring it does not get it. */
    cosid_config *rival = t_config("fork-error");
    char slot[16];
    snprintf(slot, sizeof slot, "%u", before.slot);
    CHECK_OK(cosid_config_set(rival, "preferred_slot", slot));
    cosid_runtime *r2 = NULL;
    CHECK_OK(cosid_runtime_new(rival, &r2));
    cosid_status rs;
    CHECK_OK(cosid_runtime_status(r2, &rs));
    CHECK(rs.slot != before.slot);
    cosid_runtime_free(r2);
    cosid_config_free(rival);
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
}

/* The memory: store lives in the parent: a child never re-acquires on it (it would get the parent's slots). */
static void memory_store(void) {
    cosid_config *cfg = NULL;
    REQUIRE_OK(cosid_config_new(&cfg));
    REQUIRE_OK(cosid_config_set(cfg, "store", "memory:"));
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    uint64_t before = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &before));
    pid_t pid = t_fork();
    if (pid == 0) {
        uint64_t id = 7;
        int ok = cosid_runtime_next_id(rt, &id) == COSID_RESULT_FORKED && id == 7 && strstr(t_last_error(), "memory:");
        cosid_runtime_free(rt);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint64_t after = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &after));
    CHECK(after > before);
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
}

/* A fixed slot (manual:, static: without a state file) is the parent's: a child has none of its own to take, so its
 * calls fail with FORKED, and the parent keeps issuing. */
static void fixed_slot(const char *store, uint32_t slot) {
    cosid_config *cfg = NULL;
    REQUIRE_OK(cosid_config_new(&cfg));
    REQUIRE_OK(cosid_config_set(cfg, "store", store));
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    uint64_t before = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &before));
    pid_t pid = t_fork();
    if (pid == 0) {
        uint64_t id = 7;
        int ok = cosid_runtime_next_id(rt, &id) == COSID_RESULT_FORKED && id == 7 &&
                 cosid_runtime_next_id(rt, &id) == COSID_RESULT_FORKED;
        if (!ok) {
            fprintf(stderr, "%s: the child issued %" PRIu64 " (%s)\n", store, id, t_last_error());
        }
        cosid_runtime_free(rt);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    uint64_t after = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &after));
    CHECK(after > before);
    cosid_status s;
    CHECK_OK(cosid_runtime_status(rt, &s));
    CHECK(s.slot == slot);
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
}

int main(void) {
    t_setup();
    per_child = t_env_long("COSID_TEST_IDS", 20000);
    reacquire();
    policy_error();
    memory_store();
    fixed_slot("manual:3", 3);
    fixed_slot("static:4", 4);
    CHECK_OK(cosid_shutdown());
    t_cleanup();
    return t_finish("test_fork");
}
