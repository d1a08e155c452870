/* Helpers of the Go binding: each runs a cosid call and, when it fails, reads the failure's detail in the same C
 * call. The detail (cosid_last_error) is kept per OS thread, and a goroutine may run its next cgo call on another
 * thread, so it cannot be fetched by a second call from Go. */
#ifndef COSID_GO_H
#define COSID_GO_H

#include <stdint.h>
#include <stdlib.h>
#include <cosid.h>

/* The detail of the last failure on this thread in memory from malloc (the caller frees it), or NULL if there is
 * none or it cannot be copied. */
static inline char *go_cosid_detail(void) {
    char probe[1];
    size_t n = 0;
    if (cosid_last_error(probe, sizeof probe, &n) != COSID_RESULT_BUFFER_TOO_SMALL) {
        return NULL; /* "" (no detail), or the call failed */
    }
    char *buf = malloc(n + 1);
    if (buf == NULL) {
        return NULL;
    }
    if (cosid_last_error(buf, n + 1, &n) != COSID_RESULT_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* Returns the result of CALL; on failure also writes the detail into *detail. */
#define GO_COSID_CHECKED(call)                                                                                    \
    do {                                                                                                          \
        cosid_result go_r_ = (call);                                                                              \
        if (go_r_ != COSID_RESULT_OK) {                                                                           \
            *detail = go_cosid_detail();                                                                          \
        }                                                                                                         \
        return go_r_;                                                                                             \
    } while (0)

/* The process-wide runtime. */
static inline cosid_result go_cosid_next_id(uint64_t *out, char **detail) {
    GO_COSID_CHECKED(cosid_next_id(out));
}
static inline cosid_result go_cosid_next_ids(uint64_t *buf, size_t n, char **detail) {
    GO_COSID_CHECKED(cosid_next_ids(buf, n));
}
static inline cosid_result go_cosid_init(const cosid_config *config, char **detail) {
    GO_COSID_CHECKED(cosid_init(config));
}
static inline cosid_result go_cosid_shutdown(char **detail) {
    GO_COSID_CHECKED(cosid_shutdown());
}
static inline cosid_result go_cosid_global_status(cosid_status *out, char **detail) {
    GO_COSID_CHECKED(cosid_global_status(out));
}
static inline cosid_result go_cosid_global_layout(cosid_layout *out, char **detail) {
    GO_COSID_CHECKED(cosid_global_layout(out));
}

/* Configs. */
static inline cosid_result go_cosid_config_from_env(cosid_config **out, char **detail) {
    GO_COSID_CHECKED(cosid_config_from_env(out));
}
static inline cosid_result go_cosid_config_set(cosid_config *config, const char *key, const char *value,
                                               char **detail) {
    GO_COSID_CHECKED(cosid_config_set(config, key, value));
}
static inline cosid_result go_cosid_config_set_layout(cosid_config *config, const cosid_layout *layout,
                                                      char **detail) {
    GO_COSID_CHECKED(cosid_config_set_layout(config, layout));
}

/* Runtimes. */
static inline cosid_result go_cosid_runtime_new(const cosid_config *config, cosid_runtime **out, char **detail) {
    GO_COSID_CHECKED(cosid_runtime_new(config, out));
}
static inline cosid_result go_cosid_runtime_next_id(const cosid_runtime *rt, uint64_t *out, char **detail) {
    GO_COSID_CHECKED(cosid_runtime_next_id(rt, out));
}
static inline cosid_result go_cosid_runtime_next_ids(const cosid_runtime *rt, uint64_t *buf, size_t n,
                                                     char **detail) {
    GO_COSID_CHECKED(cosid_runtime_next_ids(rt, buf, n));
}
static inline cosid_result go_cosid_runtime_status(const cosid_runtime *rt, cosid_status *out, char **detail) {
    GO_COSID_CHECKED(cosid_runtime_status(rt, out));
}
static inline cosid_result go_cosid_runtime_layout(const cosid_runtime *rt, cosid_layout *out, char **detail) {
    GO_COSID_CHECKED(cosid_runtime_layout(rt, out));
}
static inline cosid_result go_cosid_runtime_shutdown(const cosid_runtime *rt, char **detail) {
    GO_COSID_CHECKED(cosid_runtime_shutdown(rt));
}

/* Layouts and ids. */
static inline cosid_result go_cosid_layout_named(const char *name, cosid_layout *out, char **detail) {
    GO_COSID_CHECKED(cosid_layout_named(name, out));
}
static inline cosid_result go_cosid_layout_check(const cosid_layout *layout, char **detail) {
    GO_COSID_CHECKED(cosid_layout_check(layout));
}
static inline cosid_result go_cosid_layout_cap_per_second(const cosid_layout *layout, uint64_t *out,
                                                          char **detail) {
    GO_COSID_CHECKED(cosid_layout_cap_per_second(layout, out));
}
static inline cosid_result go_cosid_compose(const cosid_layout *layout, uint64_t tick, uint64_t slot,
                                            uint64_t sequence, uint64_t *out, char **detail) {
    GO_COSID_CHECKED(cosid_compose(layout, tick, slot, sequence, out));
}
static inline cosid_result go_cosid_decompose(const cosid_layout *layout, uint64_t id, cosid_parts *out,
                                              char **detail) {
    GO_COSID_CHECKED(cosid_decompose(layout, id, out));
}
static inline cosid_result go_cosid_id_to_friendly(const cosid_layout *layout, uint64_t id, char *buf,
                                                   size_t buf_len, size_t *out_len, char **detail) {
    GO_COSID_CHECKED(cosid_id_to_friendly(layout, id, buf, buf_len, out_len));
}
static inline cosid_result go_cosid_id_from_friendly(const cosid_layout *layout, const char *text, uint64_t *out,
                                                     char **detail) {
    GO_COSID_CHECKED(cosid_id_from_friendly(layout, text, out));
}
static inline cosid_result go_cosid_id_to_base62(uint64_t id, char *buf, size_t buf_len, size_t *out_len,
                                                 char **detail) {
    GO_COSID_CHECKED(cosid_id_to_base62(id, buf, buf_len, out_len));
}
static inline cosid_result go_cosid_id_from_base62(const char *text, uint64_t *out, char **detail) {
    GO_COSID_CHECKED(cosid_id_from_base62(text, out));
}
static inline cosid_result go_cosid_id_from_decimal(const char *text, uint64_t *out, char **detail) {
    GO_COSID_CHECKED(cosid_id_from_decimal(text, out));
}

/* Events: go_cosid_on_event (events.c) hands each event to the Go function goCosidEvent with the cgo.Handle of the
 * subscriber; the handle travels as the callback's userdata. */
void go_cosid_on_event(void *userdata, const cosid_event *event);
static inline cosid_result go_cosid_config_subscribe(cosid_config *config, uintptr_t handle, char **detail) {
    GO_COSID_CHECKED(cosid_config_subscribe(config, go_cosid_on_event, (void *)handle));
}

#endif
