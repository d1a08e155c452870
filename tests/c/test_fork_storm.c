/* A fork storm: hundreds of forks of a process whose runtime renews a 100 ms lease on an SQLite store (a write
 * every ~33 ms, so many forks land while the background thread is inside one). Each child issues one id on a slot
 * of its own and exits. No store call may be in flight across fork(): a child that inherits SQLite's mutexes
 * locked blocks forever or fails "database is locked". Every child must succeed within its timeout.
 *
 * COSID_TEST_FORKS sets the number of forks (default 300). */
#include "test_util.h"

#include <signal.h>
#include <sys/wait.h>

/* A child that has not issued its id by then is stuck: SIGALRM ends it (SQLite's busy timeout is 10 s). */
#define CHILD_TIMEOUT_S 40

int main(void) {
    t_setup();
    long forks = t_env_long("COSID_TEST_FORKS", 300);
    cosid_config *cfg = t_config("storm");
    REQUIRE_OK(cosid_config_set(cfg, "ttl", "100ms"));
    REQUIRE_OK(cosid_config_set(cfg, "acquire_timeout", "20s"));
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    uint64_t id = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &id));
    cosid_status parent;
    CHECK_OK(cosid_runtime_status(rt, &parent));

    long failed = 0, hung = 0, same_slot = 0;
    for (long i = 0; i < forks; i++) {
        int fds[2];
        if (pipe(fds) != 0) {
            perror("pipe");
            exit(2);
        }
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            exit(2);
        }
        if (pid == 0) {
            close(fds[0]);
            alarm(CHILD_TIMEOUT_S);
            uint64_t cid = 0;
            cosid_result r = cosid_runtime_next_id(rt, &cid);
            cosid_status s;
            uint32_t slot = UINT32_MAX;
            if (r == COSID_RESULT_OK && cosid_runtime_status(rt, &s) == COSID_RESULT_OK) {
                slot = s.slot;
            }
            if (r != COSID_RESULT_OK) {
                fprintf(stderr, "fork %ld: child: %s: %s\n", i, cosid_result_name(r), t_last_error());
            }
            (void)!write(fds[1], &slot, sizeof slot);
            /* Release the child's slot, so the storm does not run the namespace out of slots. */
            cosid_runtime_shutdown(rt);
            _exit(r == COSID_RESULT_OK ? 0 : 1);
        }
        close(fds[1]);
        uint32_t slot = UINT32_MAX;
        if (read(fds[0], &slot, sizeof slot) != (ssize_t)sizeof slot) {
            slot = UINT32_MAX;
        }
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
            hung++;
            fprintf(stderr, "fork %ld: child hung (no id within %d s)\n", i, CHILD_TIMEOUT_S);
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failed++;
        } else if (slot == parent.slot) {
            same_slot++;
        }
    }
    printf("fork storm: %ld forks with a 100 ms lease: %ld failed, %ld hung, %ld on the parent's slot\n", forks,
           failed, hung, same_slot);
    CHECK(failed == 0);
    CHECK(hung == 0);
    CHECK(same_slot == 0);
    /* The parent was never disturbed. */
    CHECK_OK(cosid_runtime_next_id(rt, &id));
    cosid_status after;
    CHECK_OK(cosid_runtime_status(rt, &after));
    CHECK(after.slot == parent.slot && after.fence == parent.fence);
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
    t_cleanup();
    return t_finish("test_fork_storm");
}
