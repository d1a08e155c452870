/* libcosid on every network store, against the real servers in COSID_TEST_{REDIS,POSTGRES,MYSQL,ETCD,ZOOKEEPER,
 * MONGODB}_URL, and through the `cosid serve` of COSID_TEST_HTTP_URL with the `http://` store (scripts/test-all.sh
 * starts them and sets the variables; a store whose variable is unset is skipped, saying so): two runtimes on one namespace take two slots and never share an id, and after a shutdown the next
 * holder of the released slot starts past the last id. */
#include "test_util.h"

#define IDS 2000

static const char *const STORES[][2] = {
    {"redis", "COSID_TEST_REDIS_URL"},         {"postgres", "COSID_TEST_POSTGRES_URL"},
    {"mysql", "COSID_TEST_MYSQL_URL"},         {"etcd", "COSID_TEST_ETCD_URL"},
    {"zookeeper", "COSID_TEST_ZOOKEEPER_URL"}, {"mongodb", "COSID_TEST_MONGODB_URL"},
    {"http", "COSID_TEST_HTTP_URL"},
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

int main(void) {
    /* t_setup clears COSID_*; the servers' URLs are read first. */
    char urls[sizeof STORES / sizeof STORES[0]][512];
    for (size_t i = 0; i < sizeof STORES / sizeof STORES[0]; i++) {
        const char *url = getenv(STORES[i][1]);
        snprintf(urls[i], sizeof urls[i], "%s", url ? url : "");
    }
    t_setup();
    for (size_t i = 0; i < sizeof STORES / sizeof STORES[0]; i++) {
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
