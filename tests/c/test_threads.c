/* Many threads issue ids at once, from the process-wide runtime and from a handle on the same namespace: every id
 * is unique, and each thread's ids increase. */
#include "test_util.h"

#include <pthread.h>

#define THREADS 8

struct worker {
    cosid_runtime *rt; /* NULL: the process-wide runtime */
    long n;
    uint64_t *ids;
    long issued;
    cosid_result failure;
    int increasing;
};

static void *work(void *arg) {
    struct worker *w = arg;
    w->increasing = 1;
    w->failure = COSID_RESULT_OK;
    for (long i = 0; i < w->n;) {
        cosid_result r;
        if (w->rt == NULL && (i % 3) == 2 && i + 16 <= w->n) {
            r = cosid_next_ids(&w->ids[i], 16); /* batches interleaved with single ids */
            if (r == COSID_RESULT_OK) {
                i += 16;
            }
        } else if (w->rt == NULL) {
            r = cosid_next_id(&w->ids[i]);
            i += r == COSID_RESULT_OK;
        } else {
            r = cosid_runtime_next_id(w->rt, &w->ids[i]);
            i += r == COSID_RESULT_OK;
        }
        if (r != COSID_RESULT_OK) {
            w->failure = r;
            break;
        }
        w->issued = i;
    }
    for (long i = 1; i < w->issued; i++) {
        if (w->ids[i] <= w->ids[i - 1]) {
            w->increasing = 0;
        }
    }
    return NULL;
}

int main(void) {
    t_setup();
    setenv("COSID_NAMESPACE", "threads", 1);
    long per_thread = t_env_long("COSID_TEST_IDS", 50000);

    cosid_config *cfg = t_config("threads");
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    cosid_config_free(cfg);

    struct worker workers[THREADS];
    pthread_t threads[THREADS];
    uint64_t *all = calloc((size_t)(per_thread * THREADS), sizeof(uint64_t));
    if (!all) {
        return 2;
    }
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (struct worker){.rt = t % 2 ? rt : NULL, .n = per_thread, .ids = all + t * per_thread};
        if (pthread_create(&threads[t], NULL, work, &workers[t]) != 0) {
            return 2;
        }
    }
    long total = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK_RC(workers[t].failure, COSID_RESULT_OK);
        CHECK(workers[t].issued == per_thread);
        CHECK(workers[t].increasing);
        total += workers[t].issued;
    }
    CHECK(total == per_thread * THREADS);

    /* The two runtimes hold different slots of one namespace. */
    cosid_status g, h;
    CHECK_OK(cosid_global_status(&g));
    CHECK_OK(cosid_runtime_status(rt, &h));
    CHECK(g.slot != h.slot);
    CHECK(g.has_last_issued && h.has_last_issued);

    size_t dups = t_duplicates(all, (size_t)total);
    CHECK(dups == 0);
    if (dups) {
        fprintf(stderr, "%zu duplicate ids among %ld\n", dups, total);
    }

    /* Every id decomposes to one of the two slots. */
    cosid_layout layout;
    CHECK_OK(cosid_global_layout(&layout));
    long foreign = 0;
    for (long i = 0; i < total; i++) {
        cosid_parts p;
        if (cosid_decompose(&layout, all[i], &p) != COSID_RESULT_OK || (p.slot != g.slot && p.slot != h.slot)) {
            foreign++;
        }
    }
    CHECK(foreign == 0);

    free(all);
    cosid_runtime_free(rt);
    CHECK_OK(cosid_shutdown());
    t_cleanup();
    return t_finish("test_threads");
}
