/* holder.h — a child that takes something and holds it until it is
 * killed: a test's stand-in for another process (a run, a job) that owns
 * a cgroup or a lock. The child dies with the test (PR_SET_PDEATHSIG).
 * Include after the system headers and cmocka.h. */
#ifndef FITRUN_TEST_HOLDER_H
#define FITRUN_TEST_HOLDER_H

#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Fork a child that runs take(arg) and, once it returned true, says so
 * and waits to be killed; the parent returns its pid once it has taken
 * what it holds (the test fails if it could not). */
static pid_t hold(bool (*take)(const void *arg), const void *arg)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || !take(arg) || write(p[1], "h", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    close(p[1]);
    char c;
    assert_int_equal(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

#endif
