/* A tiny harness for the C tests: checks that count, a fresh store per test, and a closing
 * "NAME: N passed, N failed" line. Checks run on the main thread only (workers report back). */
#ifndef COSID_TEST_UTIL_H
#define COSID_TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* setenv, mkdtemp, nanosleep */
#endif

#include <cosid.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int t_passed;
static int t_failed;
static char t_store_dir[256];
static char t_store_url[512];

/* The detail of the last failure on this thread, for messages. */
static inline const char *t_last_error(void) {
    static char buf[2048];
    size_t len = 0;
    if (cosid_last_error(buf, sizeof buf, &len) != COSID_RESULT_OK) {
        snprintf(buf, sizeof buf, "(cosid_last_error failed)");
    }
    return buf;
}

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (cond) {                                                                      \
            t_passed++;                                                                  \
        } else {                                                                         \
            t_failed++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
        }                                                                                \
    } while (0)

#define CHECK_RC(expr, want)                                                             \
    do {                                                                                 \
        cosid_result got_ = (expr);                                                      \
        cosid_result want_ = (want);                                                     \
        if (got_ == want_) {                                                             \
            t_passed++;                                                                  \
        } else {                                                                         \
            t_failed++;                                                                  \
            fprintf(stderr, "%s:%d: %s returned %s (%u), expected %s (%u); last error: %s\n", \
                    __FILE__, __LINE__, #expr, cosid_result_name(got_), (unsigned)got_,  \
                    cosid_result_name(want_), (unsigned)want_, t_last_error());          \
        }                                                                                \
    } while (0)

#define CHECK_OK(expr) CHECK_RC(expr, COSID_RESULT_OK)

/* Stops the test at once: for set-up steps that later checks depend on. */
#define REQUIRE_OK(expr)                                                                 \
    do {                                                                                 \
        cosid_result got_ = (expr);                                                      \
        if (got_ != COSID_RESULT_OK) {                                                   \
            fprintf(stderr, "%s:%d: %s returned %s; last error: %s\n", __FILE__, __LINE__, \
                    #expr, cosid_result_name(got_), t_last_error());                     \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

/* Clears the COSID_* variables a developer may have set, and points COSID_STORE at a fresh SQLite file. Arms a
 * watchdog: a test that hangs fails instead of holding up the whole run. */
static inline void t_setup(void) {
    /* valgrind runs code about 50 times slower: its runs set a longer watchdog (COSID_TEST_ALARM, seconds). */
    const char *alarm_s = getenv("COSID_TEST_ALARM");
    alarm(alarm_s && atoi(alarm_s) > 0 ? (unsigned)atoi(alarm_s) : 300);
    static const char *vars[] = {"COSID_STORE", "COSID_NAMESPACE", "COSID_LAYOUT", "COSID_TTL",
                                 "COSID_TOLERANCE", "COSID_BITS", "COSID_OWNER_KEY", "COSID_PREFERRED_SLOT",
                                 "COSID_ACQUIRE_TIMEOUT", "COSID_MAX_WAIT", "COSID_BACKWARDS_WAIT",
                                 "COSID_ON_FORK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        unsetenv(vars[i]);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(t_store_dir, sizeof t_store_dir, "%s/cosid-c-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(t_store_dir)) {
        perror("mkdtemp");
        exit(2);
    }
    snprintf(t_store_url, sizeof t_store_url, "sqlite://%s/leases.db", t_store_dir);
    setenv("COSID_STORE", t_store_url, 1);
}

/* Removes the store folder (one level: the database and its journal files). */
static inline void t_cleanup(void) {
    DIR *d = opendir(t_store_dir);
    if (d) {
        struct dirent *e;
        char path[1024];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                snprintf(path, sizeof path, "%s/%s", t_store_dir, e->d_name);
                unlink(path);
            }
        }
        closedir(d);
        rmdir(t_store_dir);
    }
}

static inline int t_finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, t_passed, t_failed);
    return t_failed == 0 ? 0 : 1;
}

/* A config on the test's store, in namespace `ns`. */
static inline cosid_config *t_config(const char *ns) {
    cosid_config *cfg = NULL;
    REQUIRE_OK(cosid_config_new(&cfg));
    REQUIRE_OK(cosid_config_set(cfg, "store", t_store_url));
    REQUIRE_OK(cosid_config_set(cfg, "namespace", ns));
    return cfg;
}

/* A positive whole number from the environment, or `fallback`: lets valgrind runs use smaller counts. */
static inline long t_env_long(const char *name, long fallback) {
    const char *v = getenv(name);
    if (!v || !*v) {
        return fallback;
    }
    long n = strtol(v, NULL, 10);
    return n > 0 ? n : fallback;
}

static inline int t_cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts `ids` and counts values that appear more than once. */
static inline size_t t_duplicates(uint64_t *ids, size_t n) {
    qsort(ids, n, sizeof ids[0], t_cmp_u64);
    size_t dups = 0;
    for (size_t i = 1; i < n; i++) {
        if (ids[i] == ids[i - 1]) {
            dups++;
        }
    }
    return dups;
}

static inline void t_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* fork(), after letting the process's threads finish starting: under AddressSanitizer a fork while another thread
 * is inside the allocator (as a thread is while it starts) leaves the allocator's lock held in the child; glibc's
 * malloc guards against that, GCC 12's sanitizer allocator does not. The child gets its own watchdog (alarms are
 * not inherited). */
static inline pid_t t_fork(void) {
    t_sleep_ms(100);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(60);
    }
    return pid;
}

#endif
