/* A fork storm: hundreds of forks of a process whose runtime renews a 100 ms lease on an SQLite store (a write
 * every ~33 ms, so many forks land while the background thread is inside one). Each child issues one id on a slot
 * of its own and exits. No store call may be in flight across fork(): a child that inherits SQLite's mutexes
 * locked blocks forever or fails "database is locked" (without the fork gate, 300 forks saw 7 such failures and
 * 2 hangs). Every child must succeed within its timeout. (Which slot a child gets is test_fork.c's subject.)
 *
 * COSID_TEST_FORKS sets the number of forks (default 300), COSID_TEST_STORM_TTL the lease (default 100ms: valgrind,
 * about 50 times slower, runs it with a longer one, else a child's first renewal can come too late for its lease). */
#include "test_util.h"

#include <signal.h>
#include <sys/wait.h>

/* A child that has not issued its id by then is stuck: SIGALRM ends it (SQLite's busy timeout is 10 s). */
#define CHILD_TIMEOUT_S 40

int main(void) {
    t_setup();
    long forks = t_env_long("COSID_TEST_FORKS", 300);
    cosid_config *cfg = t_config("storm");
    const char *ttl = getenv("COSID_TEST_STORM_TTL");
    if (!ttl || !*ttl) {
        ttl = "100ms";
    }
    REQUIRE_OK(cosid_config_set(cfg, "ttl", ttl));
    REQUIRE_OK(cosid_config_set(cfg, "acquire_timeout", "20s"));
    cosid_runtime *rt = NULL;
    REQUIRE_OK(cosid_runtime_new(cfg, &rt));
    uint64_t id = 0;
    CHECK_OK(cosid_runtime_next_id(rt, &id));
    long failed = 0, hung = 0;
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
            if (r != COSID_RESULT_OK) {
                fprintf(stderr, "fork %ld: child: %s: %s\n", i, cosid_result_name(r), t_last_error());
            }
            char done = 1;
            (void)!write(fds[1], &done, 1);
            /* Release the child's slot, so the storm does not run the namespace out of slots. */
            cosid_runtime_shutdown(rt);
            _exit(r == COSID_RESULT_OK ? 0 : 1);
        }
        close(fds[1]);
        char done = 0;
        (void)!read(fds[0], &done, 1);
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
            hung++;
            fprintf(stderr, "fork %ld: child hung (no id within %d s)\n", i, CHILD_TIMEOUT_S);
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failed++;
        }
    }
    printf("fork storm: %ld forks with a %s lease: %ld failed, %ld hung\n", forks, ttl, failed, hung);
    CHECK(failed == 0);
    CHECK(hung == 0);
    /* The parent still issues (on a loaded machine its short lease may have been replaced meanwhile: wait for it). */
    cosid_result r = COSID_RESULT_INTERNAL;
    for (int tries = 0; tries < 3000 && r != COSID_RESULT_OK; tries++) {
        r = cosid_runtime_next_id(rt, &id);
        if (r != COSID_RESULT_OK) {
            t_sleep_ms(10);
        }
    }
    CHECK_OK(r);
    cosid_runtime_free(rt);
    cosid_config_free(cfg);
    t_cleanup();
    return t_finish("test_fork_storm");
}
