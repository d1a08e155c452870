/* Every misuse gives a clear code and leaves out-parameters alone: NULL for every pointer of every function,
 * non-UTF-8 and over-long strings, unknown keys, invalid values and settings, use after shutdown, and the
 * per-thread detail of the last error. */
#include "test_util.h"

#include <pthread.h>

/* A NULL argument is refused with NULL_POINTER, and the detail names the argument. */
#define CHECK_NULL(expr, argname)                                                        \
    do {                                                                                 \
        CHECK_RC(expr, COSID_RESULT_NULL_POINTER);                                       \
        CHECK(strstr(t_last_error(), "`" argname "` is NULL") != NULL);                  \
    } while (0)

static void on_event(void *userdata, const cosid_event *event) {
    (void)userdata;
    (void)event;
}

static void null_pointers(cosid_config *cfg, cosid_runtime *rt) {
    cosid_layout l;
    REQUIRE_OK(cosid_layout_named("millis", &l));
    uint64_t id = 0, ids[4];
    size_t len = 0;
    char buf[64];
    cosid_status st;
    cosid_parts parts;
    cosid_config *new_cfg = (cosid_config *)&l; /* a sentinel: must stay as it is */
    cosid_runtime *new_rt = (cosid_runtime *)&l;

    CHECK_RC(cosid_last_error(NULL, sizeof buf, &len), COSID_RESULT_NULL_POINTER);
    CHECK_RC(cosid_last_error(buf, sizeof buf, NULL), COSID_RESULT_NULL_POINTER);

    CHECK_NULL(cosid_config_new(NULL), "out");
    CHECK_NULL(cosid_config_from_env(NULL), "out");
    CHECK_NULL(cosid_config_set(NULL, "ttl", "1s"), "config");
    CHECK_NULL(cosid_config_set(cfg, NULL, "1s"), "key");
    CHECK_NULL(cosid_config_set(cfg, "ttl", NULL), "value");
    CHECK_NULL(cosid_config_set_layout(NULL, &l), "config");
    CHECK_NULL(cosid_config_set_layout(cfg, NULL), "layout");
    CHECK_NULL(cosid_config_subscribe(NULL, on_event, NULL), "config");
    CHECK_NULL(cosid_config_subscribe(cfg, NULL, NULL), "callback");
    cosid_config_free(NULL);

    CHECK_NULL(cosid_next_id(NULL), "out_id");
    CHECK_NULL(cosid_next_ids(NULL, 4), "buf");
    CHECK_NULL(cosid_next_ids(NULL, 0), "buf");
    CHECK_NULL(cosid_init(NULL), "config");
    CHECK_NULL(cosid_global_status(NULL), "out");
    CHECK_NULL(cosid_global_layout(NULL), "out");

    CHECK_NULL(cosid_layout_named(NULL, &l), "name");
    CHECK_NULL(cosid_layout_named("millis", NULL), "out");
    CHECK_NULL(cosid_layout_check(NULL), "layout");
    CHECK_NULL(cosid_layout_cap_per_second(NULL, &id), "layout");
    CHECK_NULL(cosid_layout_cap_per_second(&l, NULL), "out");
    CHECK_NULL(cosid_compose(NULL, 1, 1, 1, &id), "layout");
    CHECK_NULL(cosid_compose(&l, 1, 1, 1, NULL), "out_id");
    CHECK_NULL(cosid_decompose(NULL, 1, &parts), "layout");
    CHECK_NULL(cosid_decompose(&l, 1, NULL), "out");
    CHECK_NULL(cosid_id_to_friendly(NULL, 1, buf, sizeof buf, &len), "layout");
    CHECK_NULL(cosid_id_to_friendly(&l, 1, NULL, sizeof buf, &len), "buf");
    CHECK_NULL(cosid_id_to_friendly(&l, 1, buf, sizeof buf, NULL), "out_len");
    CHECK_NULL(cosid_id_from_friendly(NULL, "20191224160001234-5-67", &id), "layout");
    CHECK_NULL(cosid_id_from_friendly(&l, NULL, &id), "text");
    CHECK_NULL(cosid_id_from_friendly(&l, "20191224160001234-5-67", NULL), "out_id");
    CHECK_NULL(cosid_id_to_base62(1, NULL, sizeof buf, &len), "buf");
    CHECK_NULL(cosid_id_to_base62(1, buf, sizeof buf, NULL), "out_len");
    CHECK_NULL(cosid_id_from_base62(NULL, &id), "text");
    CHECK_NULL(cosid_id_from_base62("00000000010", NULL), "out_id");
    CHECK_NULL(cosid_id_from_decimal(NULL, &id), "text");
    CHECK_NULL(cosid_id_from_decimal("42", NULL), "out_id");

    CHECK_NULL(cosid_runtime_new(NULL, &new_rt), "config");
    CHECK_NULL(cosid_runtime_new(cfg, NULL), "out");
    CHECK_NULL(cosid_runtime_next_id(NULL, &id), "rt");
    CHECK_NULL(cosid_runtime_next_id(rt, NULL), "out_id");
    CHECK_NULL(cosid_runtime_next_ids(NULL, ids, 4), "rt");
    CHECK_NULL(cosid_runtime_next_ids(rt, NULL, 4), "buf");
    CHECK_NULL(cosid_runtime_status(NULL, &st), "rt");
    CHECK_NULL(cosid_runtime_status(rt, NULL), "out");
    CHECK_NULL(cosid_runtime_layout(NULL, &l), "rt");
    CHECK_NULL(cosid_runtime_layout(rt, NULL), "out");
    CHECK_NULL(cosid_runtime_subscribe(NULL, on_event, NULL), "rt");
    CHECK_NULL(cosid_runtime_subscribe(rt, NULL, NULL), "callback");
    CHECK_NULL(cosid_runtime_shutdown(NULL), "rt");
    cosid_runtime_free(NULL);

    CHECK(new_cfg == (cosid_config *)&l && new_rt == (cosid_runtime *)&l);
    /* userdata may be NULL. */
    CHECK_OK(cosid_config_subscribe(cfg, on_event, NULL));
    CHECK_OK(cosid_runtime_subscribe(rt, on_event, NULL));
}

static void strings(cosid_config *cfg) {
    CHECK_RC(cosid_config_set(cfg, "\xff\xfe", "1s"), COSID_RESULT_INVALID_UTF8);
    CHECK(strstr(t_last_error(), "`key` is not valid UTF-8") != NULL);
    CHECK_RC(cosid_config_set(cfg, "namespace", "ab\xc3\x28"), COSID_RESULT_INVALID_UTF8);
    CHECK(strstr(t_last_error(), "offset 2") != NULL);
    cosid_layout l;
    CHECK_RC(cosid_layout_named("mil\x80lis", &l), COSID_RESULT_INVALID_UTF8);
    uint64_t id = 3;
    CHECK_RC(cosid_id_from_base62("0000000001\xe9", &id), COSID_RESULT_INVALID_UTF8);
    CHECK(id == 3);

    /* Over-long: refused without reading past the bound, even with no NUL at all (ASan and valgrind watch). */
    char *no_nul = malloc(COSID_MAX_STRING_LEN + 1);
    if (!no_nul) {
        exit(2);
    }
    memset(no_nul, 'a', COSID_MAX_STRING_LEN + 1);
    CHECK_RC(cosid_config_set(cfg, no_nul, "x"), COSID_RESULT_STRING_TOO_LONG);
    CHECK_RC(cosid_config_set(cfg, "owner_key", no_nul), COSID_RESULT_STRING_TOO_LONG);
    CHECK_RC(cosid_id_from_decimal(no_nul, &id), COSID_RESULT_STRING_TOO_LONG);
    CHECK(strstr(t_last_error(), "longer than 4096 bytes") != NULL);
    /* At the bound it is read, and judged by the setting's own rules. */
    no_nul[COSID_MAX_STRING_LEN] = '\0';
    CHECK_RC(cosid_config_set(cfg, "namespace", no_nul), COSID_RESULT_CONFIG);
    CHECK(strstr(t_last_error(), "4096 bytes long") != NULL);
    CHECK_RC(cosid_id_from_decimal(no_nul, &id), COSID_RESULT_INVALID_ID);
    free(no_nul);
    CHECK(id == 3);
}

static void keys_and_values(cosid_config *cfg) {
    CHECK_RC(cosid_config_set(cfg, "colour", "blue"), COSID_RESULT_UNKNOWN_KEY);
    CHECK(strstr(t_last_error(), "\"colour\"") != NULL && strstr(t_last_error(), "preferred_slot") != NULL);
    CHECK_RC(cosid_config_set(cfg, "TTL", "1s"), COSID_RESULT_UNKNOWN_KEY);
    struct {
        const char *key, *value;
        cosid_result want;
    } bad[] = {
        {"ttl", "soon", COSID_RESULT_CONFIG},          {"ttl", "30", COSID_RESULT_CONFIG},
        {"tolerance", "-1s", COSID_RESULT_CONFIG},     {"bits", "ten", COSID_RESULT_CONFIG},
        {"bits", "+3", COSID_RESULT_CONFIG},           {"bits", "256", COSID_RESULT_CONFIG},
        {"preferred_slot", "-1", COSID_RESULT_CONFIG}, {"store", "ftp://host/x", COSID_RESULT_CONFIG},
        {"store", "sqlite:", COSID_RESULT_CONFIG},     {"namespace", "a\tb", COSID_RESULT_CONFIG},
        {"layout", "nanos", COSID_RESULT_LAYOUT},      {"on_fork", "ignore", COSID_RESULT_CONFIG},
        {"acquire_timeout", "1 fortnight", COSID_RESULT_CONFIG},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_RC(cosid_config_set(cfg, bad[i].key, bad[i].value), bad[i].want);
        /* The detail names the value (or, for one that needs escaping, the setting). */
        int named = strstr(t_last_error(), bad[i].value) != NULL || strstr(t_last_error(), bad[i].key) != NULL;
        CHECK(named);
        if (!named) {
            fprintf(stderr, "  %s=%s: %s\n", bad[i].key, bad[i].value, t_last_error());
        }
    }
    cosid_layout zero = {0, 1, 41, 0, 12};
    CHECK_RC(cosid_config_set_layout(cfg, &zero), COSID_RESULT_LAYOUT);

    /* The environment, read by cosid_config_from_env and by the first cosid_next_id. */
    cosid_config *from_env = NULL;
    setenv("COSID_TTL", "abc", 1);
    CHECK_RC(cosid_config_from_env(&from_env), COSID_RESULT_CONFIG);
    CHECK(strstr(t_last_error(), "COSID_TTL") != NULL);
    CHECK(from_env == NULL);
    unsetenv("COSID_TTL");
    setenv("COSID_ON_FORK", "maybe", 1);
    CHECK_RC(cosid_config_from_env(&from_env), COSID_RESULT_CONFIG);
    CHECK(strstr(t_last_error(), "COSID_ON_FORK") != NULL);
    unsetenv("COSID_ON_FORK");
    CHECK_OK(cosid_config_from_env(&from_env));
    cosid_config_free(from_env);
}

/* Settings that parse alone but not together, or that the store refuses. */
static void invalid_settings(void) {
    struct {
        const char *key, *value;
        const char *mention;
    } bad[] = {
        {"bits", "11", "bits"},
        {"preferred_slot", "1024", "preferred_slot"},
        {"tolerance", "1h", "tolerance"},
        {"owner_key", "", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!bad[i].mention) {
            continue;
        }
        cosid_config *cfg = t_config("invalid");
        CHECK_OK(cosid_config_set(cfg, bad[i].key, bad[i].value));
        cosid_runtime *rt = (cosid_runtime *)cfg;
        CHECK_RC(cosid_runtime_new(cfg, &rt), COSID_RESULT_CONFIG);
        CHECK(strstr(t_last_error(), bad[i].mention) != NULL);
        CHECK(rt == (cosid_runtime *)cfg);
        CHECK_RC(cosid_init(cfg), COSID_RESULT_CONFIG);
        cosid_config_free(cfg);
    }
    /* A duration out of its own range is refused when it is set, and the config keeps its value. */
    {
        cosid_config *cfg = t_config("invalid");
        CHECK_RC(cosid_config_set(cfg, "ttl", "10ms"), COSID_RESULT_CONFIG);
        CHECK(strstr(t_last_error(), "ttl") != NULL);
        cosid_runtime *rt = NULL;
        CHECK_OK(cosid_runtime_new(cfg, &rt));
        cosid_runtime_free(rt);
        cosid_config_free(cfg);
    }
    /* A 300-byte owner key passes the 4096-byte bound but not the setting's own. */
    char key[301];
    memset(key, 'k', 300);
    key[300] = '\0';
    cosid_config *cfg = t_config("invalid");
    CHECK_OK(cosid_config_set(cfg, "owner_key", key));
    cosid_runtime *rt = NULL;
    CHECK_RC(cosid_runtime_new(cfg, &rt), COSID_RESULT_CONFIG);
    CHECK(strstr(t_last_error(), "owner_key") != NULL);
    cosid_config_free(cfg);

    /* The namespace is recorded with the first runtime's settings; another is refused, naming both. */
    cosid_config *a = t_config("mismatch");
    CHECK_OK(cosid_config_set(a, "bits", "8"));
    cosid_runtime *ra = NULL;
    CHECK_OK(cosid_runtime_new(a, &ra));
    cosid_config *b = t_config("mismatch");
    CHECK_OK(cosid_config_set(b, "bits", "9"));
    cosid_runtime *rb = NULL;
    CHECK_RC(cosid_runtime_new(b, &rb), COSID_RESULT_NAMESPACE_MISMATCH);
    CHECK(strstr(t_last_error(), "bits") != NULL && rb == NULL);
    cosid_runtime_free(ra);
    cosid_config_free(a);
    cosid_config_free(b);

    /* Every slot held, and no wait allowed: EXHAUSTED. */
    cosid_config *small = t_config("exhausted");
    CHECK_OK(cosid_config_set(small, "bits", "1"));
    CHECK_OK(cosid_config_set(small, "acquire_timeout", "0s"));
    cosid_runtime *r1 = NULL, *r2 = NULL, *r3 = NULL;
    CHECK_OK(cosid_runtime_new(small, &r1));
    CHECK_OK(cosid_runtime_new(small, &r2));
    CHECK_RC(cosid_runtime_new(small, &r3), COSID_RESULT_EXHAUSTED);
    CHECK(r3 == NULL);
    /* Freeing one releases its slot for the next. */
    cosid_runtime_free(r1);
    CHECK_OK(cosid_runtime_new(small, &r3));
    cosid_runtime_free(r2);
    cosid_runtime_free(r3);
    cosid_config_free(small);
}

static void after_shutdown(void) {
    cosid_config *cfg = t_config("after");
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    CHECK_OK(cosid_runtime_shutdown(rt));
    uint64_t id = 9, ids[3] = {1, 2, 3};
    CHECK_RC(cosid_runtime_next_id(rt, &id), COSID_RESULT_CLOSED);
    CHECK_RC(cosid_runtime_next_ids(rt, ids, 3), COSID_RESULT_CLOSED);
    CHECK(id == 9 && ids[0] == 1 && ids[2] == 3);
    CHECK(strstr(t_last_error(), "shut down") != NULL);
    CHECK_OK(cosid_runtime_subscribe(rt, on_event, NULL));
    cosid_layout l;
    CHECK_OK(cosid_runtime_layout(rt, &l));
    CHECK_OK(cosid_runtime_shutdown(rt));
    cosid_runtime_free(rt);
    cosid_config_free(cfg);

    /* A count too large to buffer is refused before anything is written. */
    cosid_runtime *live = NULL;
    cfg = t_config("after");
    REQUIRE_OK(cosid_runtime_new(cfg, &live));
    CHECK_RC(cosid_runtime_next_ids(live, ids, SIZE_MAX), COSID_RESULT_INVALID_ARGUMENT);
    CHECK(ids[0] == 1);
    CHECK_OK(cosid_runtime_next_ids(live, ids, 0));
    cosid_runtime_free(live);
    cosid_config_free(cfg);
}

static void *read_last_error(void *out) {
    size_t len = 99;
    char buf[8];
    *(cosid_result *)out = cosid_last_error(buf, sizeof buf, &len);
    return len == 0 && buf[0] == '\0' ? out : NULL;
}

static void last_error(void) {
    cosid_layout l;
    CHECK_RC(cosid_layout_named("bogus", &l), COSID_RESULT_LAYOUT);
    char buf[256];
    size_t len = 0;
    CHECK_OK(cosid_last_error(buf, sizeof buf, &len));
    CHECK(len == strlen(buf) && strncmp(buf, "LAYOUT: ", 8) == 0 && strstr(buf, "bogus") != NULL);
    /* Too small: nothing written, the length told; the detail stays (also after success, and after a NULL). */
    char small[4] = "xyz";
    size_t needed = 0;
    CHECK_RC(cosid_last_error(small, sizeof small, &needed), COSID_RESULT_BUFFER_TOO_SMALL);
    CHECK(needed == len && strcmp(small, "xyz") == 0);
    CHECK_OK(cosid_layout_named("millis", &l));
    CHECK_RC(cosid_last_error(NULL, 0, &needed), COSID_RESULT_NULL_POINTER);
    char again[256];
    CHECK_OK(cosid_last_error(again, sizeof again, &needed));
    CHECK(strcmp(again, buf) == 0);
    /* Each thread has its own. */
    pthread_t t;
    cosid_result other = COSID_RESULT_INTERNAL;
    void *empty = NULL;
    CHECK(pthread_create(&t, NULL, read_last_error, &other) == 0);
    pthread_join(t, &empty);
    CHECK(other == COSID_RESULT_OK && empty == &other);

    /* Codes: a name and a message for each, something for the rest. */
    const cosid_result codes[] = {COSID_RESULT_OK, COSID_RESULT_NULL_POINTER, COSID_RESULT_INVALID_UTF8,
                                  COSID_RESULT_INVALID_ARGUMENT, COSID_RESULT_BUFFER_TOO_SMALL,
                                  COSID_RESULT_UNKNOWN_KEY, COSID_RESULT_STRING_TOO_LONG,
                                  COSID_RESULT_ALREADY_INITIALIZED, COSID_RESULT_REENTRANT, COSID_RESULT_CONFIG,
                                  COSID_RESULT_LAYOUT,
                                  COSID_RESULT_INVALID_ID, COSID_RESULT_SLOT_LOST, COSID_RESULT_WINDOW_CLOSED,
                                  COSID_RESULT_BEFORE_WINDOW, COSID_RESULT_CLOCK_MOVED_BACKWARDS,
                                  COSID_RESULT_EXHAUSTED, COSID_RESULT_NAMESPACE_MISMATCH, COSID_RESULT_CLOSED,
                                  COSID_RESULT_FORKED, COSID_RESULT_STORE_UNAVAILABLE, COSID_RESULT_CORRUPT_RECORD,
                                  COSID_RESULT_STORE, COSID_RESULT_STATE_FILE, COSID_RESULT_STORE_REGRESSION,
                                  COSID_RESULT_PANIC, COSID_RESULT_INTERNAL};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        CHECK(strcmp(cosid_result_name(codes[i]), "UNKNOWN") != 0);
        CHECK(strlen(cosid_result_message(codes[i])) > 3);
        for (size_t j = 0; j < i; j++) {
            CHECK(strcmp(cosid_result_name(codes[i]), cosid_result_name(codes[j])) != 0);
        }
    }
    CHECK(strcmp(cosid_result_name(COSID_RESULT_SLOT_LOST), "SLOT_LOST") == 0);
    CHECK(strcmp(cosid_result_name(12345), "UNKNOWN") == 0);
    CHECK(strcmp(cosid_result_message(12345), "unknown cosid_result code") == 0);
    CHECK(strcmp(cosid_result_message(COSID_RESULT_OK), "success") == 0);
}

int main(void) {
    t_setup();
    cosid_config *cfg = t_config("misuse");
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    null_pointers(cfg, rt);
    strings(cfg);
    keys_and_values(cfg);
    invalid_settings();
    after_shutdown();
    last_error();
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
    /* Nothing above touched the process-wide runtime: shutting it down before any use is harmless. */
    CHECK_OK(cosid_shutdown());
    uint64_t id = 1;
    CHECK_RC(cosid_next_id(&id), COSID_RESULT_CLOSED);
    CHECK(id == 1);
    t_cleanup();
    return t_finish("test_misuse");
}
