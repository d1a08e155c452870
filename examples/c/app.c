/* cosid from C: ids from the process-wide runtime (configured by the COSID_* environment variables; with none set,
 * an SQLite file in the user's state directory), their text forms, and the runtime's lease.
 *
 *   make && ./app            (after scripts/install-c.sh; see docs/c-api.md)
 *   COSID_STORE=memory: ./app 3
 */
#include <cosid.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, cosid_result r) {
    char detail[512];
    size_t len = 0;
    if (cosid_last_error(detail, sizeof detail, &len) != COSID_RESULT_OK) {
        detail[0] = '\0';
    }
    fprintf(stderr, "%s failed: %s (%s)\n", what, cosid_result_message(r), detail);
    return 1;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    if (n < 1 || n > 1000) {
        fprintf(stderr, "usage: %s [COUNT from 1 to 1000]\n", argv[0]);
        return 2;
    }
    cosid_layout layout;
    cosid_result r = cosid_global_layout(&layout); /* starts the runtime: opens the store, leases a slot */
    if (r != COSID_RESULT_OK) {
        return fail("starting cosid", r);
    }
    for (int i = 0; i < n; i++) {
        uint64_t id;
        if ((r = cosid_next_id(&id)) != COSID_RESULT_OK) {
            return fail("cosid_next_id", r);
        }
        char friendly[COSID_FRIENDLY_MAX_LEN + 1], base62[COSID_BASE62_LEN + 1];
        size_t len;
        if ((r = cosid_id_to_friendly(&layout, id, friendly, sizeof friendly, &len)) != COSID_RESULT_OK ||
            (r = cosid_id_to_base62(id, base62, sizeof base62, &len)) != COSID_RESULT_OK) {
            return fail("formatting an id", r);
        }
        printf("%" PRIu64 "  %s  %s\n", id, friendly, base62);
    }
    cosid_status status;
    if ((r = cosid_global_status(&status)) != COSID_RESULT_OK) {
        return fail("cosid_global_status", r);
    }
    printf("slot %u, fence %" PRIu64 ", window (%" PRIu64 ", %" PRIu64 "] ms, lease expires at %" PRIu64 " ms\n",
           status.slot, status.fence, status.floor_ms, status.ceiling_ms, status.expires_at_ms);
    /* Optional: exit() would do it too (an atexit handler); shutting down explicitly reports errors. */
    if ((r = cosid_shutdown()) != COSID_RESULT_OK) {
        return fail("cosid_shutdown", r);
    }
    return 0;
}
