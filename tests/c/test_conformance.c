/* The C driver of the cross-language conformance table, tests/conformance/cases.txt (its header describes the
 * format): each case on a fresh config and runtime handle, a fork step with a real fork(). */
#include "test_util.h"

#include <signal.h>
#include <sys/wait.h>

#ifndef COSID_CASES
#error "COSID_CASES: the path of tests/conformance/cases.txt (the Makefile defines it)"
#endif

struct state {
    char name[128];
    char dir[256];
    cosid_config *cfg;
    cosid_runtime *rt;
    cosid_result set_error;
    char set_error_text[2048];
    char hidden[8][128];
    int n_hidden;
    int cases;
    int steps;
    int failures;
};

static void result_text(cosid_result r, char *out, size_t n) {
    snprintf(out, n, "%s", cosid_result_name(r));
}

static void end_case(struct state *st) {
    if (st->rt) {
        cosid_runtime_free(st->rt);
    }
    if (st->cfg) {
        cosid_config_free(st->cfg);
    }
    st->rt = NULL;
    st->cfg = NULL;
    if (st->dir[0]) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", st->dir);
        (void)!system(cmd);
        st->dir[0] = 0;
    }
}

static void begin_case(struct state *st, const char *name) {
    end_case(st);
    snprintf(st->name, sizeof st->name, "%s", name);
    const char *tmp = getenv("TMPDIR");
    snprintf(st->dir, sizeof st->dir, "%s/cosid-conformance-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(st->dir)) {
        perror("mkdtemp");
        exit(2);
    }
    REQUIRE_OK(cosid_config_new(&st->cfg));
    st->set_error = COSID_RESULT_OK;
    st->set_error_text[0] = 0;
    st->n_hidden = 0;
    st->cases++;
}

/* `value` with every `{dir}` replaced by the case's folder. */
static void expand(const struct state *st, const char *value, char *out, size_t n) {
    size_t o = 0;
    for (const char *p = value; *p && o + 1 < n;) {
        if (strncmp(p, "{dir}", 5) == 0) {
            o += (size_t)snprintf(out + o, n - o, "%s", st->dir);
            p += 5;
        } else {
            out[o++] = *p++;
        }
    }
    out[o < n ? o : n - 1] = 0;
}

static void fork_next_id(struct state *st, char *got, size_t n) {
    cosid_status parent;
    if (!st->rt || cosid_runtime_status(st->rt, &parent) != COSID_RESULT_OK) {
        snprintf(got, n, "NO_RUNTIME");
        return;
    }
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        exit(2);
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        alarm(60);
        char out[64];
        uint64_t id = 0;
        cosid_result r = cosid_runtime_next_id(st->rt, &id);
        cosid_status s;
        if (r == COSID_RESULT_OK && cosid_runtime_status(st->rt, &s) == COSID_RESULT_OK) {
            snprintf(out, sizeof out, "%s", s.slot != parent.slot ? "OK_OTHER_SLOT" : "OK_SAME_SLOT");
        } else {
            result_text(r, out, sizeof out);
        }
        (void)!write(fds[1], out, strlen(out) + 1);
        _exit(0);
    }
    close(fds[1]);
    ssize_t len = read(fds[0], got, n - 1);
    got[len > 0 ? (size_t)len : 0] = 0;
    if (len <= 0) {
        snprintf(got, n, "CHILD_DIED");
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
}

/* A failure for each of the case's `hidden` texts that `shown` (an error as C shows it) contains. */
static void check_hidden(struct state *st, const char *action, const char *shown) {
    for (int i = 0; i < st->n_hidden; i++) {
        if (strstr(shown, st->hidden[i])) {
            t_failed++;
            st->failures++;
            fprintf(stderr, "%s: %s: the error shows \"%s\": %s\n", st->name, action, st->hidden[i], shown);
        }
    }
}

static void step(struct state *st, const char *action, const char *expect) {
    char got[128] = "";
    if (strcmp(action, "start") == 0) {
        if (st->set_error != COSID_RESULT_OK) {
            result_text(st->set_error, got, sizeof got);
        } else {
            result_text(cosid_runtime_new(st->cfg, &st->rt), got, sizeof got);
        }
    } else if (!st->rt && strcmp(action, "fork_next_id") != 0) {
        snprintf(got, sizeof got, "NO_RUNTIME");
    } else if (strcmp(action, "next_id") == 0) {
        uint64_t id = 0;
        result_text(cosid_runtime_next_id(st->rt, &id), got, sizeof got);
    } else if (strcmp(action, "shutdown") == 0) {
        result_text(cosid_runtime_shutdown(st->rt), got, sizeof got);
    } else if (strcmp(action, "slot") == 0) {
        cosid_status s;
        cosid_result r = cosid_runtime_status(st->rt, &s);
        if (r == COSID_RESULT_OK) {
            snprintf(got, sizeof got, "%u", s.slot);
        } else {
            result_text(r, got, sizeof got);
        }
    } else if (strcmp(action, "fork_next_id") == 0) {
        fork_next_id(st, got, sizeof got);
    } else {
        fprintf(stderr, "unknown action %s\n", action);
        exit(2);
    }
    st->steps++;
    if (strcmp(action, "start") == 0 && st->set_error != COSID_RESULT_OK) {
        check_hidden(st, "set", st->set_error_text);
    } else if (strncmp(got, "OK", 2) != 0 && strspn(got, "0123456789") != strlen(got)) {
        check_hidden(st, action, t_last_error());
    }
    if (strcmp(got, expect) == 0) {
        t_passed++;
    } else {
        t_failed++;
        st->failures++;
        fprintf(stderr, "%s: %s: expected %s, got %s (%s)\n", st->name, action, expect, got, t_last_error());
    }
}

int main(void) {
    t_setup();
    /* The whole table is read before any case runs: a forked child shares the open file's offset with this
     * process, and a child whose exit runs libc's stdio clean-up (exit(), or any exit under valgrind, which calls
     * __libc_freeres) seeks it back to where the child's copy of the stream stood: the reader then read lines
     * again, from the middle of one, until the watchdog fired. */
    FILE *f = fopen(COSID_CASES, "r");
    if (!f) {
        perror(COSID_CASES);
        return 2;
    }
    static char table[1 << 20];
    size_t table_len = fread(table, 1, sizeof table - 1, f);
    if (ferror(f) || !feof(f)) {
        fprintf(stderr, "%s: unreadable or larger than %zu bytes\n", COSID_CASES, sizeof table - 1);
        return 2;
    }
    fclose(f);
    table[table_len] = 0;
    struct state st;
    memset(&st, 0, sizeof st);
    char line[1024];
    for (char *next = table; *next;) {
        size_t len = strcspn(next, "\n");
        if (len >= sizeof line) {
            fprintf(stderr, "line too long: %.40s...\n", next);
            return 2;
        }
        memcpy(line, next, len);
        line[len] = 0;
        next += len + (next[len] == '\n');
        if (line[0] == 0 || line[0] == '#') {
            continue;
        }
        char *rest = strchr(line, ' ');
        if (!rest) {
            fprintf(stderr, "unreadable line: %s\n", line);
            return 2;
        }
        *rest++ = 0;
        if (strcmp(line, "case") == 0) {
            begin_case(&st, rest);
        } else if (strcmp(line, "set") == 0) {
            char *value = strchr(rest, ' ');
            if (!value) {
                fprintf(stderr, "%s: set without a value\n", st.name);
                return 2;
            }
            *value++ = 0;
            char expanded[1024];
            expand(&st, value, expanded, sizeof expanded);
            cosid_result r = cosid_config_set(st.cfg, rest, expanded);
            if (r != COSID_RESULT_OK && st.set_error == COSID_RESULT_OK) {
                st.set_error = r;
                snprintf(st.set_error_text, sizeof st.set_error_text, "%s", t_last_error());
            }
        } else if (strcmp(line, "hidden") == 0) {
            if (st.n_hidden < 8) {
                snprintf(st.hidden[st.n_hidden++], sizeof st.hidden[0], "%s", rest);
            }
        } else {
            step(&st, line, rest);
        }
    }
    end_case(&st);
    printf("conformance: %d cases, %d steps, %d failed\n", st.cases, st.steps, st.failures);
    CHECK(st.cases >= 20);
    t_cleanup();
    return t_finish("test_conformance");
}
