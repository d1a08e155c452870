/* libcosid on every network store it carries (cosid_stores()), against the real servers in
 * COSID_TEST_{REDIS,POSTGRES,MYSQL,ETCD,ZOOKEEPER,MONGODB}_URL, and through the `cosid serve` of COSID_TEST_HTTP_URL
 * with the `http://` store (scripts/test-all.sh starts them and sets the variables; a store whose variable is unset
 * is skipped, saying so): two runtimes on one namespace take two slots and never share an id, and after a shutdown
 * the next holder of the released slot starts past the last id. A store the library does not carry is refused
 * with COSID_RESULT_CONFIG, saying how to reach it, and nothing is left behind. */
#include "test_util.h"

#define IDS 2000

/* Each store: its name, the variable with its server's URL, and a URL that needs no server. */
static const char *const STORES[][3] = {
    {"redis", "COSID_TEST_REDIS_URL", "redis://127.0.0.1:1/0"},
    {"postgres", "COSID_TEST_POSTGRES_URL", "postgres://u:p@127.0.0.1:1/db"},
    {"mysql", "COSID_TEST_MYSQL_URL", "mysql://u:p@127.0.0.1:1/db"},
    {"etcd", "COSID_TEST_ETCD_URL", "etcd://127.0.0.1:1"},
    {"zookeeper", "COSID_TEST_ZOOKEEPER_URL", "zookeeper://127.0.0.1:1"},
    {"mongodb", "COSID_TEST_MONGODB_URL", "mongodb://127.0.0.1:1/ids"},
    {"http", "COSID_TEST_HTTP_URL", "http://127.0.0.1:1"},
};

static cosid_runtime *start(const char *url, const char *ns) {
    cosid_config *cfg = NULL;
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_config_new(&cfg));
    REQUIRE_OK(cosid_config_set(cfg, "store", url));
    REQUIRE_OK(cosid_config_set(cfg, "namespace", ns));
    REQUIRE_OK(cosid_config_set(cfg, "bits", "4"));
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    cosid_config_free(cfg);
    return rt;
}

static void on_store(const char *kind, const char *url) {
    char ns[96];
    snprintf(ns, sizeof ns, "c-%s-%ld-%ld", kind, (long)getpid(), (long)time(NULL));
    cosid_runtime *a = start(url, ns);
    cosid_runtime *b = start(url, ns);
    cosid_status sa, sb;
    CHECK_OK(cosid_runtime_status(a, &sa));
    CHECK_OK(cosid_runtime_status(b, &sb));
    CHECK(sa.slot != sb.slot);
    uint64_t *ids = calloc(2 * IDS, sizeof *ids);
    CHECK_OK(cosid_runtime_next_ids(a, ids, IDS));
    CHECK_OK(cosid_runtime_next_ids(b, ids + IDS, IDS));
    CHECK(t_duplicates(ids, 2 * IDS) == 0);
    uint64_t last = 0;
    CHECK_OK(cosid_runtime_next_id(a, &last));
    uint32_t released = sa.slot;
    CHECK_OK(cosid_runtime_shutdown(a));
    cosid_runtime_free(a);
    /* The next runtime takes the released slot (the lowest free one) and starts past the last id. */
    cosid_runtime *c = start(url, ns);
    cosid_status sc;
    CHECK_OK(cosid_runtime_status(c, &sc));
    CHECK(sc.slot == released);
    uint64_t next = 0;
    CHECK_OK(cosid_runtime_next_id(c, &next));
    CHECK(next > last);
    CHECK_OK(cosid_runtime_shutdown(b));
    CHECK_OK(cosid_runtime_shutdown(c));
    cosid_runtime_free(b);
    cosid_runtime_free(c);
    free(ids);
    printf("test_stores: %s: 2 runtimes, %d ids, no duplicate\n", kind, 2 * IDS + 1);
}

/* Whether the comma-separated list has `name` as one of its items. */
static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

static void on_store_not_built(const char *kind, const char *url) {
    cosid_config *cfg = NULL;
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_config_new(&cfg));
    CHECK_OK(cosid_config_set(cfg, "store", url));
    CHECK_OK(cosid_config_set(cfg, "acquire_timeout", "1s"));
    CHECK_RC(cosid_runtime_new(cfg, &rt), COSID_RESULT_CONFIG);
    CHECK(rt == NULL);
    const char *why = t_last_error();
    CHECK(strstr(why, "not in this build") != NULL);
    CHECK(strstr(why, "cosid serve") != NULL);
    cosid_config_free(cfg);
    printf("test_stores: %s: not in this library (%s): refused with CONFIG\n", kind, cosid_stores());
}

int main(void) {
    /* t_setup clears COSID_*; the servers' URLs are read first. */
    char urls[sizeof STORES / sizeof STORES[0]][512];
    for (size_t i = 0; i < sizeof STORES / sizeof STORES[0]; i++) {
        const char *url = getenv(STORES[i][1]);
        snprintf(urls[i], sizeof urls[i], "%s", url ? url : "");
    }
    t_setup();
    const char *built = cosid_stores();
    CHECK(built != NULL && strncmp(built, "memory,sqlite", 13) == 0);
    CHECK(cosid_stores() == built); /* static */
    for (size_t i = 0; i < sizeof STORES / sizeof STORES[0]; i++) {
        if (!listed(built, STORES[i][0])) {
            /* No server needed: the URL is refused before any connection is tried. */
            on_store_not_built(STORES[i][0], STORES[i][2]);
            continue;
        }
        if (!urls[i][0]) {
            printf("test_stores: %s skipped: %s is not set (.ci/services/ starts a server)\n", STORES[i][0],
                   STORES[i][1]);
            continue;
        }
        on_store(STORES[i][0], urls[i]);
    }
    t_cleanup();
    return t_finish("test_stores");
}
