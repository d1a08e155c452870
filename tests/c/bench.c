/* Benchmark of the C API (prints figures, asserts nothing): ns per id of cosid_next_id() in bursts below the cap,
 * and sustained ids/s as a percent of the layout's cap; the same for cosid_runtime_next_id(). bench.sh runs it
 * beside the Rust API's figures (ffi/benches/rust_next_id.rs), measured the same way.
 *
 *   bench [seconds]      seconds of sustained issuing per figure (default 2) */
#define _GNU_SOURCE
#include <cosid.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BURST 1000

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sleep_us(long us) {
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static volatile uint64_t sink;

static void check(cosid_result r, const char *what) {
    if (r != COSID_RESULT_OK) {
        fprintf(stderr, "%s failed: %s\n", what, cosid_result_name(r));
        exit(1);
    }
}

/* One benchmark per call site, each a direct call in its loop (as the Rust side's is), not through a pointer. */
#define DEFINE_RUN(fn_name, label, CALL)                                                                          \
    static void fn_name(const cosid_runtime *rt, double seconds, int bursts, double cap) {                        \
        (void)rt;                                                                                                 \
        uint64_t id = 0;                                                                                          \
        /* Bursts of 1,000 ids (below the 4,096 a millisecond allows), each after a pause of 1.1 ms. */           \
        double *per_id = malloc(sizeof(double) * (size_t)bursts);                                                 \
        double total = 0;                                                                                         \
        for (int b = 0; b < bursts; b++) {                                                                        \
            sleep_us(1100);                                                                                       \
            double t = now_ns();                                                                                  \
            for (int i = 0; i < BURST; i++) {                                                                     \
                check(CALL, label);                                                                               \
                sink = id;                                                                                        \
            }                                                                                                     \
            double el = now_ns() - t;                                                                             \
            per_id[b] = el / BURST;                                                                               \
            total += el;                                                                                          \
        }                                                                                                         \
        qsort(per_id, (size_t)bursts, sizeof(double), cmp_double);                                                \
        printf("C    %-22s burst (1,000 ids): %6.2f ns/id mean, %6.2f median\n", label,                           \
               total / ((double)bursts * BURST), per_id[bursts / 2]);                                             \
        free(per_id);                                                                                             \
        /* Sustained: as fast as one thread can, against the cap. */                                              \
        long long n = 0;                                                                                          \
        double start = now_ns(), end = start + seconds * 1e9, t = start;                                          \
        while (t < end) {                                                                                         \
            for (int i = 0; i < 4096; i++) {                                                                      \
                check(CALL, label);                                                                               \
                sink = id;                                                                                        \
            }                                                                                                     \
            n += 4096;                                                                                            \
            t = now_ns();                                                                                         \
        }                                                                                                         \
        double rate = (double)n / ((t - start) / 1e9);                                                            \
        printf("C    %-22s sustained       : %12.0f ids/s = %6.2f%% of cap, %6.1f ns/id\n", label, rate,           \
               100.0 * rate / cap, 1e9 / rate);                                                                   \
    }

DEFINE_RUN(run_global, "cosid_next_id", cosid_next_id(&id))
DEFINE_RUN(run_handle, "cosid_runtime_next_id", cosid_runtime_next_id(rt, &id))

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    if (seconds <= 0) {
        seconds = 2.0;
    }
    int bursts = seconds < 1 ? 200 : 2000;
    setenv("COSID_STORE", "memory:", 1);
    setenv("COSID_NAMESPACE", "bench", 1);

    cosid_layout layout;
    uint64_t cap = 0;
    if (cosid_global_layout(&layout) != COSID_RESULT_OK || cosid_layout_cap_per_second(&layout, &cap) != COSID_RESULT_OK) {
        fprintf(stderr, "cannot start the process-wide runtime\n");
        return 1;
    }
    printf("C    layout cap: %llu ids/s per slot\n", (unsigned long long)cap);
    run_global(NULL, seconds, bursts, (double)cap);

    cosid_config *cfg = NULL;
    cosid_runtime *rt = NULL;
    if (cosid_config_new(&cfg) != COSID_RESULT_OK || cosid_config_set(cfg, "store", "memory:") != COSID_RESULT_OK ||
        cosid_runtime_new(cfg, &rt) != COSID_RESULT_OK) {
        fprintf(stderr, "cannot start a runtime\n");
        return 1;
    }
    run_handle(rt, seconds, bursts, (double)cap);
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
    cosid_shutdown();
    return 0;
}
