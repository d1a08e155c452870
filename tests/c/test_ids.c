/* Layouts, compose and decompose, and the friendly, base-62 and decimal text forms, into caller buffers. */
#include "test_util.h"

static void presets(void) {
    cosid_layout l;
    CHECK_OK(cosid_layout_named("millis", &l));
    CHECK(l.epoch_ms == 1577203200000ULL && l.tick_ms == 1 && l.timestamp_bits == 41 && l.slot_bits == 10 &&
          l.sequence_bits == 12);
    uint64_t cap = 0;
    CHECK_OK(cosid_layout_cap_per_second(&l, &cap));
    CHECK(cap == 4096000);
    CHECK_OK(cosid_layout_named("seconds", &l));
    CHECK(l.tick_ms == COSID_TICK_SECOND && l.timestamp_bits == 31 && l.sequence_bits == 22);
    CHECK_OK(cosid_layout_named("js-safe", &l));
    CHECK(l.timestamp_bits + l.slot_bits + l.sequence_bits == 53);
    cosid_layout untouched = {7, 7, 7, 7, 7};
    CHECK_RC(cosid_layout_named("nanos", &untouched), COSID_RESULT_LAYOUT);
    CHECK(strstr(t_last_error(), "nanos") != NULL);
    CHECK(untouched.epoch_ms == 7 && untouched.tick_ms == 7);
}

static void custom_layouts(void) {
    cosid_layout ok = {1700000000000ULL, COSID_TICK_SECOND, 32, 8, 20};
    CHECK_OK(cosid_layout_check(&ok));
    cosid_layout zero = {0, 1, 41, 0, 12};
    CHECK_RC(cosid_layout_check(&zero), COSID_RESULT_LAYOUT);
    CHECK(strstr(t_last_error(), "slot") != NULL);
    cosid_layout wide = {0, 1, 41, 11, 12};
    CHECK_RC(cosid_layout_check(&wide), COSID_RESULT_LAYOUT);
    CHECK(strstr(t_last_error(), "64 bits") != NULL);
    cosid_layout tick = {0, 7, 41, 10, 12};
    CHECK_RC(cosid_layout_check(&tick), COSID_RESULT_LAYOUT);
    CHECK(strstr(t_last_error(), "tick_ms = 7") != NULL);
    cosid_layout unaligned = {1500, COSID_TICK_SECOND, 31, 10, 22};
    CHECK_RC(cosid_layout_check(&unaligned), COSID_RESULT_LAYOUT);
    uint64_t id = 99;
    CHECK_RC(cosid_compose(&wide, 1, 1, 1, &id), COSID_RESULT_LAYOUT);
    CHECK(id == 99);
}

static void compose_decompose(void) {
    cosid_layout l;
    CHECK_OK(cosid_layout_named("millis", &l));
    uint64_t id = 0;
    CHECK_OK(cosid_compose(&l, 1000, 3, 7, &id));
    CHECK(id == ((1000ULL << 22) | (3ULL << 12) | 7));
    cosid_parts p;
    CHECK_OK(cosid_decompose(&l, id, &p));
    CHECK(p.tick == 1000 && p.slot == 3 && p.sequence == 7 && p.timestamp_ms == l.epoch_ms + 1000);

    uint64_t kept = 42;
    CHECK_RC(cosid_compose(&l, 0, 1024, 0, &kept), COSID_RESULT_INVALID_ID);
    CHECK(strstr(t_last_error(), "slot 1024") != NULL);
    CHECK_RC(cosid_compose(&l, 0, 0, 4096, &kept), COSID_RESULT_INVALID_ID);
    CHECK_RC(cosid_compose(&l, 1ULL << 41, 0, 0, &kept), COSID_RESULT_INVALID_ID);
    CHECK(kept == 42);
    cosid_parts untouched = {1, 2, 3, 4};
    CHECK_RC(cosid_decompose(&l, UINT64_MAX, &untouched), COSID_RESULT_INVALID_ID);
    CHECK(strstr(t_last_error(), "sign bit") != NULL);
    cosid_layout js;
    CHECK_OK(cosid_layout_named("js-safe", &js));
    CHECK_RC(cosid_decompose(&js, 1ULL << 53, &untouched), COSID_RESULT_INVALID_ID);
    CHECK(untouched.tick == 1 && untouched.sequence == 4);
}

static void friendly(void) {
    cosid_layout l;
    CHECK_OK(cosid_layout_named("millis", &l));
    uint64_t id = 0;
    CHECK_OK(cosid_compose(&l, 1234, 5, 67, &id));
    char buf[COSID_FRIENDLY_MAX_LEN + 1];
    size_t len = 0;
    CHECK_OK(cosid_id_to_friendly(&l, id, buf, sizeof buf, &len));
    CHECK(strcmp(buf, "20191224160001234-5-67") == 0);
    CHECK(len == strlen("20191224160001234-5-67"));
    uint64_t back = 0;
    CHECK_OK(cosid_id_from_friendly(&l, buf, &back));
    CHECK(back == id);

    /* Too small by one: nothing written to the buffer, the needed length reported. */
    char small[22];
    memset(small, 'x', sizeof small);
    size_t needed = 0;
    CHECK_RC(cosid_id_to_friendly(&l, id, small, sizeof small, &needed), COSID_RESULT_BUFFER_TOO_SMALL);
    CHECK(needed == 22);
    CHECK(small[0] == 'x' && small[21] == 'x');
    char exact[23];
    CHECK_OK(cosid_id_to_friendly(&l, id, exact, sizeof exact, &needed));
    CHECK(needed == 22 && exact[22] == '\0');
    CHECK_RC(cosid_id_to_friendly(&l, id, small, 0, &needed), COSID_RESULT_BUFFER_TOO_SMALL);

    /* Strict parsing. */
    const char *bad[] = {"", "20191224160001234-5", "20191224160001234-05-67", "20191224160001234-5-+67",
                         "20191324160001234-5-67", "2019122416000123-5-67", "20191224160001234-1024-0",
                         " 20191224160001234-5-67", "20191224160001234-5-67-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t out = 77;
        CHECK_RC(cosid_id_from_friendly(&l, bad[i], &out), COSID_RESULT_INVALID_ID);
        CHECK(out == 77);
    }
    cosid_layout s;
    CHECK_OK(cosid_layout_named("seconds", &s));
    uint64_t out = 0;
    CHECK_RC(cosid_id_from_friendly(&s, "20240229120000500-3-0", &out), COSID_RESULT_INVALID_ID);
    CHECK(strstr(t_last_error(), "tick") != NULL);
    CHECK_OK(cosid_id_from_friendly(&s, "20240229120000000-3-0", &out));
    CHECK_OK(cosid_id_to_friendly(&s, out, buf, sizeof buf, &len));
    CHECK(strcmp(buf, "20240229120000000-3-0") == 0);
}

static void base62_and_decimal(void) {
    char buf[COSID_BASE62_LEN + 1];
    size_t len = 0;
    CHECK_OK(cosid_id_to_base62(0, buf, sizeof buf, &len));
    CHECK(strcmp(buf, "00000000000") == 0 && len == COSID_BASE62_LEN);
    CHECK_OK(cosid_id_to_base62(UINT64_MAX, buf, sizeof buf, &len));
    CHECK(strcmp(buf, "LygHa16AHYF") == 0);
    CHECK_OK(cosid_id_to_base62(61, buf, sizeof buf, &len));
    CHECK(strcmp(buf, "0000000000z") == 0);
    char small[COSID_BASE62_LEN];
    CHECK_RC(cosid_id_to_base62(61, small, sizeof small, &len), COSID_RESULT_BUFFER_TOO_SMALL);
    CHECK(len == COSID_BASE62_LEN);

    uint64_t id = 0;
    CHECK_OK(cosid_id_from_base62("00000000010", &id));
    CHECK(id == 62);
    CHECK_OK(cosid_id_from_base62("LygHa16AHYF", &id));
    CHECK(id == UINT64_MAX);
    const char *bad62[] = {"", "0000000010", "zzzzzzzzzzz", "0000000000-", "000000000000"};
    for (size_t i = 0; i < sizeof bad62 / sizeof bad62[0]; i++) {
        uint64_t out = 5;
        CHECK_RC(cosid_id_from_base62(bad62[i], &out), COSID_RESULT_INVALID_ID);
        CHECK(out == 5);
    }
    /* Round trip of ordering: base-62 text sorts like the number. */
    char a[COSID_BASE62_LEN + 1], b[COSID_BASE62_LEN + 1];
    CHECK_OK(cosid_id_to_base62(123456789, a, sizeof a, &len));
    CHECK_OK(cosid_id_to_base62(123456790, b, sizeof b, &len));
    CHECK(strcmp(a, b) < 0);

    CHECK_OK(cosid_id_from_decimal("42", &id));
    CHECK(id == 42);
    CHECK_OK(cosid_id_from_decimal("18446744073709551615", &id));
    CHECK(id == UINT64_MAX);
    const char *baddec[] = {"", "+42", "-1", "042", " 42", "42 ", "18446744073709551616", "4x"};
    for (size_t i = 0; i < sizeof baddec / sizeof baddec[0]; i++) {
        uint64_t out = 5;
        CHECK_RC(cosid_id_from_decimal(baddec[i], &out), COSID_RESULT_INVALID_ID);
        CHECK(out == 5);
    }
}

static void version(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", COSID_VERSION_MAJOR, COSID_VERSION_MINOR, COSID_VERSION_PATCH);
    CHECK(strcmp(expected, COSID_VERSION) == 0);
    CHECK(strcmp(cosid_version(), COSID_VERSION) == 0);
}

int main(void) {
    presets();
    custom_layouts();
    compose_decompose();
    friendly();
    base62_and_decimal();
    version();
    return t_finish("test_ids");
}
