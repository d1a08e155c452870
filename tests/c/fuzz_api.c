/* Drives the C API of libcosid with random call sequences, to be run under AddressSanitizer and
 * UndefinedBehaviorSanitizer (.ci/fuzz.sh builds and runs it).
 *
 * Each step picks a function and arguments at random: live, freed-then-replaced and NULL handles (never a dangling
 * one: that is undefined behaviour no library can catch), NULL out-parameters, buffers of every size down to 0,
 * strings that are valid, empty, not UTF-8 or longer than COSID_MAX_STRING_LEN, layouts of any widths. It checks
 * what the header promises of every answer: a known result code, COSID_RESULT_NULL_POINTER for a NULL required
 * pointer, out-parameters untouched on failure, ids of a runtime strictly increasing, text forms that read back.
 *
 *   fuzz_api [STEPS [SEED]]      (or COSID_FUZZ_STEPS, COSID_FUZZ_SEED; the seed is printed for replay)
 *
 * Stores: `memory:` and SQLite files in a temporary folder only; ttl and acquire timeouts stay short, so no step
 * waits long. Ends with "fuzz_api: N passed, N failed". */
#define _GNU_SOURCE /* setenv, mkdtemp */

#include <cosid.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng_state;
static unsigned long step_no;
static unsigned long checks;
static uint64_t seed;

static uint64_t rnd(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ULL;
}

static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }

#define FAIL(...)                                                                                     \
    do {                                                                                              \
        fprintf(stderr, "fuzz_api: step %lu (seed %" PRIu64 "): ", step_no, seed);                  \
        fprintf(stderr, __VA_ARGS__);                                                                 \
        fprintf(stderr, "\nfuzz_api: 0 passed, 1 failed\n");                                         \
        abort();                                                                                      \
    } while (0)

#define CHECK(cond)                                                                                   \
    do {                                                                                              \
        checks++;                                                                                     \
        if (!(cond)) FAIL("%s:%d: %s", __FILE__, __LINE__, #cond);                                  \
    } while (0)

/* Every answer is a code the header names. */
static cosid_result known(cosid_result r) {
    checks++;
    if (strcmp(cosid_result_name(r), "UNKNOWN") == 0) FAIL("unknown result code %u", (unsigned)r);
    return r;
}

static char dir[256];
static char text[COSID_MAX_STRING_LEN + 64];

/* A string argument: valid settings, garbage, invalid UTF-8, too long, empty. */
static const char *random_text(void) {
    static const char *pool[] = {
        "", "memory:", "millis", "seconds", "js-safe", "javascript", "30ms", "100ms", "1s", "0s", "5", "1",
        "0", "10", "64", "18446744073709551616", "-1", "+3", "reacquire", "error", "ordinal", "static:3",
        "manual:1", "bogus:", "redis://", "sqlite:", "fuzz", "a:b{c}", "20191224160001234-5-67",
        "19700101000000000-0-0", "00000000000", "LygHa16AHYF", "zzzzzzzzzzz", "123456789",
        "18446744073709551615", "042", " 1",
    };
    switch (below(6)) {
    case 0: { /* bytes, maybe not UTF-8 */
        size_t n = below(24);
        for (size_t i = 0; i < n; i++) text[i] = (char)(1 + below(255));
        text[n] = 0;
        return text;
    }
    case 1: /* too long by a little, or exactly at the limit */
        memset(text, 'x', COSID_MAX_STRING_LEN + 1);
        text[COSID_MAX_STRING_LEN + below(2)] = 0;
        return text;
    case 2:
        snprintf(text, sizeof text, "sqlite://%s/db%u.sqlite", dir, (unsigned)below(3));
        return text;
    default:
        return pool[below(sizeof pool / sizeof *pool)];
    }
}

static const char *random_key(void) {
    static const char *keys[] = {"store", "namespace", "layout", "ttl", "tolerance", "bits", "owner_key",
                                 "preferred_slot", "acquire_timeout", "max_wait", "backwards_wait", "on_fork",
                                 "", "STORE", "unknown"};
    return keys[below(sizeof keys / sizeof *keys)];
}

/* Keeps waits short: a long ttl or timeout would only make the run slow. */
static int slow(const char *key, const char *value) {
    int timed = !strcmp(key, "ttl") || !strcmp(key, "acquire_timeout") || !strcmp(key, "max_wait") ||
                !strcmp(key, "backwards_wait") || !strcmp(key, "tolerance");
    return timed && strcmp(value, "30ms") && strcmp(value, "100ms") && strcmp(value, "0s");
}

static struct cosid_layout random_layout(void) {
    struct cosid_layout l;
    if (below(2) && cosid_layout_named(below(2) ? "millis" : "js-safe", &l) == COSID_RESULT_OK) {
        if (below(2)) l.sequence_bits = (uint8_t)below(70);
        return l;
    }
    l.epoch_ms = below(3) ? below(2000000000000ULL) : rnd();
    l.tick_ms = below(3) ? (below(2) ? COSID_TICK_MILLISECOND : COSID_TICK_SECOND) : (uint32_t)rnd();
    l.timestamp_bits = (uint8_t)below(66);
    l.slot_bits = (uint8_t)below(66);
    l.sequence_bits = (uint8_t)below(66);
    return l;
}

static void on_event(void *userdata, const struct cosid_event *e) {
    unsigned long *n = userdata;
    (*n)++;
    /* The name and detail are readable during the call. */
    if (e->name == NULL || e->detail == NULL || strlen(e->name) == 0) abort();
}

#define CONFIGS 2
#define RUNTIMES 3
static struct cosid_config *configs[CONFIGS];
static struct cosid_runtime *runtimes[RUNTIMES];
static uint64_t last_id[RUNTIMES];
static unsigned long events;

static void check_increasing(int r, const uint64_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (ids[i] <= last_id[r]) {
            struct cosid_layout l = {0, 0, 0, 0, 0};
            struct cosid_status s;
            memset(&s, 0, sizeof s);
            cosid_runtime_layout(runtimes[r], &l);
            cosid_runtime_status(runtimes[r], &s);
            FAIL("runtime %d issued %" PRIu64 " after %" PRIu64 " (id %zu of %zu; layout epoch %" PRIu64
                 " tick %u bits %u/%u/%u; slot %u fence %" PRIu64 " window (%" PRIu64 ", %" PRIu64
                 "] state %u)",
                 r, ids[i], last_id[r], i, n, l.epoch_ms, l.tick_ms, l.timestamp_bits, l.slot_bits,
                 l.sequence_bits, s.slot, s.fence, s.floor_ms, s.ceiling_ms, (unsigned)s.state);
        }
        last_id[r] = ids[i];
    }
}

static void text_forms(void) {
    struct cosid_layout l = random_layout();
    uint64_t id = below(2) ? rnd() >> below(64) : rnd();
    char buf[COSID_FRIENDLY_MAX_LEN + 8];
    size_t len = 12345, cap = below(2) ? sizeof buf : below(sizeof buf);
    cosid_result r = known(cosid_id_to_friendly(&l, id, buf, cap, &len));
    if (r == COSID_RESULT_OK) {
        CHECK(len == strlen(buf) && len <= COSID_FRIENDLY_MAX_LEN);
        uint64_t back = 0;
        CHECK(cosid_id_from_friendly(&l, buf, &back) == COSID_RESULT_OK && back == id);
    } else if (r == COSID_RESULT_BUFFER_TOO_SMALL) {
        CHECK(len + 1 > cap);
    } else {
        CHECK(len == 12345);
    }
    len = 12345;
    cap = below(2) ? sizeof buf : below(COSID_BASE62_LEN + 2);
    r = known(cosid_id_to_base62(id, buf, cap, &len));
    if (r == COSID_RESULT_OK) {
        uint64_t back = 0;
        CHECK(len == COSID_BASE62_LEN && cosid_id_from_base62(buf, &back) == COSID_RESULT_OK && back == id);
    } else {
        CHECK(r == COSID_RESULT_BUFFER_TOO_SMALL && cap < COSID_BASE62_LEN + 1);
    }
    uint64_t out = 777;
    const char *t = random_text();
    r = known(cosid_id_from_decimal(t, &out));
    if (r != COSID_RESULT_OK) CHECK(out == 777);
    out = 777;
    r = known(cosid_id_from_base62(t, &out));
    if (r != COSID_RESULT_OK) CHECK(out == 777);
    out = 777;
    r = known(cosid_id_from_friendly(&l, t, &out));
    if (r != COSID_RESULT_OK) CHECK(out == 777);
    /* A NULL pointer is refused as such when the arguments before it are fine (they are checked in order). */
    struct cosid_layout m;
    CHECK(cosid_layout_named("millis", &m) == COSID_RESULT_OK);
    CHECK(cosid_id_from_decimal(NULL, &out) == COSID_RESULT_NULL_POINTER);
    CHECK(cosid_id_from_decimal("1", NULL) == COSID_RESULT_NULL_POINTER);
    CHECK(cosid_id_to_friendly(&m, 0, NULL, 8, &len) == COSID_RESULT_NULL_POINTER);
    CHECK(cosid_id_to_friendly(&m, 0, buf, sizeof buf, NULL) == COSID_RESULT_NULL_POINTER);
    CHECK(cosid_id_to_friendly(NULL, 0, buf, sizeof buf, &len) == COSID_RESULT_NULL_POINTER);
}

static void layouts(void) {
    struct cosid_layout l = random_layout();
    cosid_result ok = known(cosid_layout_check(&l));
    uint64_t cap = 99;
    CHECK(known(cosid_layout_cap_per_second(&l, &cap)) == ok);
    if (ok != COSID_RESULT_OK) CHECK(cap == 99);
    uint64_t id = 5;
    uint64_t tick = below(3) ? below(1000) : rnd(), slot = below(3) ? below(8) : rnd(),
             seq = below(3) ? below(8) : rnd();
    cosid_result r = known(cosid_compose(&l, tick, slot, seq, &id));
    if (r == COSID_RESULT_OK) {
        struct cosid_parts p;
        CHECK(cosid_decompose(&l, id, &p) == COSID_RESULT_OK && p.tick == tick && p.slot == slot &&
              p.sequence == seq);
    } else {
        CHECK(id == 5);
    }
    struct cosid_parts p = {1, 2, 3, 4};
    r = known(cosid_decompose(&l, rnd() >> below(64), &p));
    if (r != COSID_RESULT_OK) CHECK(p.tick == 1 && p.timestamp_ms == 2 && p.slot == 3 && p.sequence == 4);
    CHECK(cosid_layout_check(NULL) == COSID_RESULT_NULL_POINTER);
    CHECK(known(cosid_layout_named(random_text(), below(4) ? &l : NULL)) != COSID_RESULT_PANIC);
}

static void config_step(void) {
    int c = (int)below(CONFIGS);
    switch (below(6)) {
    case 0:
        cosid_config_free(configs[c]);
        configs[c] = NULL;
        CHECK(known(cosid_config_new(&configs[c])) == COSID_RESULT_OK);
        /* Short waits before anything else. */
        CHECK(cosid_config_set(configs[c], "acquire_timeout", "100ms") == COSID_RESULT_OK);
        CHECK(cosid_config_set(configs[c], "max_wait", "100ms") == COSID_RESULT_OK);
        CHECK(cosid_config_set(configs[c], "ttl", "100ms") == COSID_RESULT_OK);
        CHECK(cosid_config_set(configs[c], "store", "memory:") == COSID_RESULT_OK);
        break;
    case 1:
        cosid_config_free(configs[c]);
        configs[c] = NULL;
        break;
    case 2: {
        struct cosid_layout l = random_layout();
        cosid_result r = known(cosid_config_set_layout(configs[c], &l));
        if (configs[c] == NULL) CHECK(r == COSID_RESULT_NULL_POINTER);
        else CHECK(r == cosid_layout_check(&l));
        break;
    }
    case 3: {
        cosid_result r = known(cosid_config_subscribe(configs[c], below(4) ? on_event : NULL, &events));
        if (configs[c] == NULL) CHECK(r == COSID_RESULT_NULL_POINTER);
        break;
    }
    default: {
        const char *key = random_key();
        const char *value = random_text();
        if (slow(key, value)) value = "100ms";
        cosid_result r = known(cosid_config_set(configs[c], below(16) ? key : NULL, value));
        if (configs[c] == NULL) CHECK(r == COSID_RESULT_NULL_POINTER);
        break;
    }
    }
}

static void runtime_step(void) {
    int r = (int)below(RUNTIMES);
    struct cosid_runtime *rt = runtimes[r];
    uint64_t ids[64];
    switch (below(9)) {
    case 0: {
        if (rt != NULL) break;
        struct cosid_config *c = configs[below(CONFIGS)];
        struct cosid_runtime *out = (struct cosid_runtime *)&text; /* a sentinel: must stay as it is on failure */
        cosid_result res = known(cosid_runtime_new(c, &out));
        if (res == COSID_RESULT_OK) {
            runtimes[r] = out;
            last_id[r] = 0;
        } else {
            CHECK(out == (struct cosid_runtime *)&text);
            if (c == NULL) CHECK(res == COSID_RESULT_NULL_POINTER);
        }
        break;
    }
    case 1:
    case 2: {
        uint64_t id = 0;
        cosid_result res = known(cosid_runtime_next_id(rt, below(16) ? &id : NULL));
        if (res == COSID_RESULT_OK) check_increasing(r, &id, 1);
        if (rt == NULL) CHECK(res == COSID_RESULT_NULL_POINTER);
        break;
    }
    case 3: {
        size_t n = below(4) ? below(65) : (size_t)rnd();
        size_t fill = n < 64 ? n : 64;
        if (n > 64 && below(2)) n = (size_t)-1 / (1 + below(4));
        cosid_result res = known(cosid_runtime_next_ids(rt, n <= 64 ? ids : NULL, n));
        if (res == COSID_RESULT_OK) check_increasing(r, ids, fill);
        break;
    }
    case 4: {
        struct cosid_status s;
        cosid_result res = known(cosid_runtime_status(rt, &s));
        if (res == COSID_RESULT_OK) CHECK(s.floor_ms <= s.ceiling_ms);
        struct cosid_layout l;
        known(cosid_runtime_layout(rt, below(8) ? &l : NULL));
        break;
    }
    case 5:
        known(cosid_runtime_subscribe(rt, below(8) ? on_event : NULL, &events));
        break;
    case 6:
        known(cosid_runtime_shutdown(rt));
        if (rt != NULL) CHECK(cosid_runtime_next_id(rt, &ids[0]) == COSID_RESULT_CLOSED);
        break;
    default:
        cosid_runtime_free(rt);
        runtimes[r] = NULL;
        break;
    }
}

static void global_step(void) {
    uint64_t id[4];
    switch (below(6)) {
    case 0:
        known(cosid_init(configs[below(CONFIGS)]));
        break;
    case 1:
        known(cosid_shutdown());
        break;
    case 2: {
        struct cosid_status s;
        known(cosid_global_status(&s));
        struct cosid_layout l;
        known(cosid_global_layout(&l));
        break;
    }
    default:
        known(cosid_next_ids(id, below(5)));
        known(cosid_next_id(below(16) ? id : NULL));
        break;
    }
}

static void misc_step(void) {
    uint32_t code = below(2) ? (uint32_t)below(10000) : (uint32_t)rnd();
    CHECK(cosid_result_message(code) != NULL && cosid_result_name(code) != NULL);
    char buf[64];
    size_t len = 4242, cap = below(sizeof buf);
    cosid_result r = known(cosid_last_error(below(8) ? buf : NULL, cap, below(8) ? &len : NULL));
    if (r == COSID_RESULT_OK) CHECK(len < cap && strlen(buf) == len);
    if (r == COSID_RESULT_BUFFER_TOO_SMALL) CHECK(len + 1 > cap);
    CHECK(strcmp(cosid_version(), COSID_VERSION) == 0);
}

int main(int argc, char **argv) {
    const char *steps_s = argc > 1 ? argv[1] : getenv("COSID_FUZZ_STEPS");
    const char *seed_s = argc > 2 ? argv[2] : getenv("COSID_FUZZ_SEED");
    unsigned long steps = steps_s ? strtoul(steps_s, NULL, 10) : 3000;
    seed = seed_s ? strtoull(seed_s, NULL, 10) : ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
    rng_state = seed ? seed : 1;
    printf("fuzz_api: %lu steps, seed %" PRIu64 " (replay with COSID_FUZZ_SEED=%" PRIu64 ")\n", steps, seed,
           seed);
    fflush(stdout);
    alarm(600);

    snprintf(dir, sizeof dir, "%s/cosid-fuzz-api-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    /* The process-wide runtime reads the environment: keep it in memory and off the user's state folder. */
    setenv("COSID_STORE", "memory:", 1);
    setenv("COSID_TTL", "100ms", 1);
    setenv("COSID_ACQUIRE_TIMEOUT", "100ms", 1);
    setenv("XDG_STATE_HOME", dir, 1);

    for (step_no = 0; step_no < steps; step_no++) {
        switch (below(10)) {
        case 0: text_forms(); break;
        case 1: layouts(); break;
        case 2:
        case 3: config_step(); break;
        case 4:
        case 5:
        case 6: runtime_step(); break;
        case 7: global_step(); break;
        default: misc_step(); break;
        }
    }
    for (int r = 0; r < RUNTIMES; r++) cosid_runtime_free(runtimes[r]);
    for (int c = 0; c < CONFIGS; c++) cosid_config_free(configs[c]);
    known(cosid_shutdown());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "fuzz_api: could not remove %s\n", dir);
    printf("fuzz_api: %lu events seen\n", events);
    printf("fuzz_api: %lu passed, 0 failed\n", checks);
    return 0;
}
