// A C++ translation unit: the header compiles as C++ (extern "C", enums with a fixed uint32_t underlying type) and
// the library is usable with RAII and the standard library.
#include <cosid.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

static int passed = 0;
static int failed = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            passed++;                                                                \
        } else {                                                                     \
            failed++;                                                                \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

static_assert(std::is_same<std::underlying_type<cosid_result>::type, uint32_t>::value, "cosid_result is 32 bits");
static_assert(sizeof(cosid_layout) == 16, "cosid_layout is a plain 16-byte struct");

namespace {

struct ConfigDeleter {
    void operator()(cosid_config *c) const { cosid_config_free(c); }
};
struct RuntimeDeleter {
    void operator()(cosid_runtime *r) const { cosid_runtime_free(r); }
};
using Config = std::unique_ptr<cosid_config, ConfigDeleter>;
using Runtime = std::unique_ptr<cosid_runtime, RuntimeDeleter>;

std::string last_error() {
    std::size_t len = 0;
    char probe[1];
    if (cosid_last_error(probe, sizeof probe, &len) == COSID_RESULT_OK) {
        return std::string();
    }
    std::string text(len + 1, '\0');
    if (cosid_last_error(&text[0], text.size(), &len) != COSID_RESULT_OK) {
        return "(unreadable)";
    }
    text.resize(len);
    return text;
}

std::string friendly(const cosid_layout &layout, uint64_t id) {
    char buf[COSID_FRIENDLY_MAX_LEN + 1];
    std::size_t len = 0;
    return cosid_id_to_friendly(&layout, id, buf, sizeof buf, &len) == COSID_RESULT_OK ? std::string(buf, len)
                                                                                        : std::string();
}

}  // namespace

int main() {
    CHECK(std::string(cosid_version()) == COSID_VERSION);

    cosid_config *raw = nullptr;
    CHECK(cosid_config_new(&raw) == COSID_RESULT_OK);
    Config cfg(raw);
    CHECK(cosid_config_set(cfg.get(), "store", "memory:") == COSID_RESULT_OK);
    CHECK(cosid_config_set(cfg.get(), "namespace", "cpp") == COSID_RESULT_OK);
    CHECK(cosid_config_set(cfg.get(), "colour", "red") == COSID_RESULT_UNKNOWN_KEY);
    CHECK(last_error().find("colour") != std::string::npos);

    cosid_runtime *rt_raw = nullptr;
    CHECK(cosid_runtime_new(cfg.get(), &rt_raw) == COSID_RESULT_OK);
    Runtime rt(rt_raw);

    std::vector<std::vector<uint64_t>> per_thread(4, std::vector<uint64_t>(10000));
    std::vector<std::thread> threads;
    for (auto &ids : per_thread) {
        threads.emplace_back([&rt, &ids] {
            if (cosid_runtime_next_ids(rt.get(), ids.data(), ids.size()) != COSID_RESULT_OK) {
                ids.clear();
            }
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    std::set<uint64_t> unique;
    for (const auto &ids : per_thread) {
        CHECK(ids.size() == 10000);
        unique.insert(ids.begin(), ids.end());
    }
    CHECK(unique.size() == 40000);

    cosid_layout layout{};
    CHECK(cosid_runtime_layout(rt.get(), &layout) == COSID_RESULT_OK);
    uint64_t id = *unique.begin();
    std::string text = friendly(layout, id);
    CHECK(text.size() >= 21);
    uint64_t back = 0;
    CHECK(cosid_id_from_friendly(&layout, text.c_str(), &back) == COSID_RESULT_OK && back == id);

    cosid_status status{};
    CHECK(cosid_runtime_status(rt.get(), &status) == COSID_RESULT_OK);
    CHECK(status.state == COSID_STATE_ACTIVE && status.has_last_issued);
    cosid_event_kind kind = COSID_EVENT_KIND_SLOT_LOST;
    CHECK(static_cast<uint32_t>(kind) == 4);

    std::printf("test_cpp: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
