/* test_idrange.c — the slot uid reservation (sandbox/idrange.c) against the
 * machine's real registry (/run/fitrun, root only; skipped elsewhere).
 *
 * A run's pid means nothing to a run in another pid namespace, so what
 * says a range is in use is the OFD lock its run holds on the range's
 * bytes of uids.lock. Here a child holds such a lock with no registry
 * entry (as when a fitrun that checks pids alone dropped the entry of a
 * live run in another namespace): the range must not be taken while the
 * child lives, and is free again once it is gone. The uids used are far
 * above any fitrun default (uid_base 60000) and differ per test process. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/sandbox.h"
#include "holder.h"

#define SLOTS 2

static uint32_t want;

/* Take an OFD lock on bytes *first..*first+SLOTS-1 of the registry's lock
 * file (in a holder: held until it is killed). */
static bool lock_range(const void *first)
{
    int fd = open("/run/fitrun/uids.lock", O_RDWR | O_CLOEXEC);
    struct flock fl = {
        .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t) * (const uint32_t *)first, .l_len = SLOTS};
    return fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0;
}

static void need_registry(void)
{
    char err[256];
    uint32_t got;
    if (geteuid() != 0)
        skip();
    /* A reservation in a child makes the registry and its lock file. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fr_identity_reserve(want, SLOTS, &got, err, sizeof err) == 0 ? 0 : 1);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || access("/run/fitrun/uids.lock", F_OK) < 0)
        skip(); /* no /run/fitrun here (the /tmp fallback is not what this checks) */
}

/* In a child, reserve from want: the first uid it got (its reservation
 * ends with it). */
static uint32_t reserve_in_child(void)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[256];
        uint32_t got = 0;
        if (fr_identity_reserve(want, SLOTS, &got, err, sizeof err) < 0)
            fprintf(stderr, "test_idrange: %s\n", err);
        _exit(write(p[1], &got, sizeof got) == sizeof got ? 0 : 1);
    }
    close(p[1]);
    uint32_t got = 0;
    assert_int_equal(read(p[0], &got, sizeof got), (ssize_t)sizeof got);
    close(p[0]);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return got;
}

static void test_locked_range_is_in_use(void **state)
{
    (void)state;
    need_registry();
    assert_int_equal(reserve_in_child(), want); /* free */
    pid_t holder = hold(lock_range, &want);
    uint32_t got = reserve_in_child();
    assert_true(got >= want + SLOTS); /* the locked range was skipped */
    kill(holder, SIGKILL);
    assert_int_equal(waitpid(holder, NULL, 0), holder);
    assert_int_equal(reserve_in_child(), want); /* its holder is gone: free again */
}

int main(void)
{
    want = 3500000000u + (uint32_t)(getpid() % 100000) * 4u;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_locked_range_is_in_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
