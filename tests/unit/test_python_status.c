/* test_python_status.c — a job's STARTED taken from its worker's status
 * socket (launcher/runtime/python/status.c), on a real socketpair with
 * real pidfds, through a host that records what the runtime asks of it:
 * taken when needed, waited for (watched) when not there yet, dropped at
 * the job's end; a pending kill reaches the child as STARTED names it. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../launcher/runtime/python/internal.h"

/* The host, as the runtime sees it: what it was asked. */
struct fake_host {
    struct fr_host_base base;
    int watched_fd; /* -1 = none */
    pid_t cpu_pid;
    int64_t cpu_base;
};

static struct fake_host *FH(struct fr_host *h)
{
    return (struct fake_host *)(void *)h;
}

static int h_watch(struct fr_host *h, int fd, uint32_t events, int slot)
{
    (void)events;
    (void)slot;
    FH(h)->watched_fd = fd;
    return 0;
}

static void h_unwatch(struct fr_host *h, int fd)
{
    if (FH(h)->watched_fd == fd)
        FH(h)->watched_fd = -1;
}

static void h_watch_cpu(struct fr_host *h, int slot, pid_t pid, int pidfd, int64_t base_ns)
{
    (void)slot;
    (void)pidfd;
    FH(h)->cpu_pid = pid;
    FH(h)->cpu_base = base_ns;
}

static const struct fr_host_ops ops = {.watch = h_watch, .unwatch = h_unwatch, .watch_cpu = h_watch_cpu};

struct fixture {
    struct fake_host host;
    struct pyrt py;
    struct pyslot slot;
    struct fr_runtime rt;
    struct fr_job job;
    int theirs; /* the worker's end */
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    int sv[2];
    assert_non_null(f);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
    f->host = (struct fake_host){.base = {&ops}, .watched_fd = -1};
    f->slot = (struct pyslot){.chan = -1, .status = sv[0], .pidfd = -1, .job_w = -1, .child_fd = -1, .timer = -1};
    f->slot.job = &f->job;
    f->slot.seq = 3;
    f->py = (struct pyrt){.nslots = 1, .slots = &f->slot};
    f->rt = (struct fr_runtime){.priv = &f->py, .host = (struct fr_host *)(void *)&f->host};
    f->theirs = sv[1];
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    if (f->slot.child_fd >= 0)
        close(f->slot.child_fd);
    close(f->slot.status);
    close(f->theirs);
    free(f);
    return 0;
}

/* The worker's STARTED for job seq: pid, its CPU base, and a pidfd of pid. */
static void send_started(int sock, uint32_t seq, pid_t pid, int64_t base)
{
    char m[PY_MSG_STARTED_LEN] = {'S'};
    int32_t p = pid;
    memcpy(m + 4, &seq, 4);
    memcpy(m + 8, &p, 4);
    memcpy(m + 12, &base, 8);
    int fd = pidfd_open(pid, 0);
    assert_true(fd >= 0);
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct iovec iov = {m, sizeof m};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    assert_int_equal(sendmsg(sock, &mh, 0), (ssize_t)sizeof m);
    close(fd);
}

static bool socket_empty(int fd)
{
    char b;
    return recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK) < 0;
}

static void test_waited_for_then_taken(void **state)
{
    struct fixture *f = *state;
    /* Not there yet: the socket is watched until it comes. */
    assert_false(py_take_started(&f->rt, 0, true));
    assert_int_equal(f->host.watched_fd, f->slot.status);
    assert_true(f->slot.status_watched);
    /* An older job's (its EXITED came without it being read) is dropped. */
    send_started(f->theirs, 2, getpid(), 5);
    send_started(f->theirs, 3, getpid(), 1500);
    assert_true(py_take_started(&f->rt, 0, true));
    assert_int_equal(f->slot.child, getpid());
    assert_true(f->slot.child_fd >= 0);
    assert_int_equal(f->host.cpu_pid, getpid());
    assert_int_equal(f->host.cpu_base, 1500);
    assert_int_equal(f->host.watched_fd, -1); /* no longer watched */
    assert_false(f->slot.status_watched);
    /* Taken once: asking again reads nothing. */
    send_started(f->theirs, 3, getpid(), 7);
    assert_true(py_take_started(&f->rt, 0, true));
    assert_int_equal(f->host.cpu_base, 1500);
}

static void test_dropped_at_the_end(void **state)
{
    struct fixture *f = *state;
    send_started(f->theirs, 3, getpid(), 1);
    assert_false(py_take_started(&f->rt, 0, false));
    assert_int_equal(f->slot.child_fd, -1);
    assert_int_equal(f->host.cpu_pid, 0); /* the CPU clock is not watched */
    assert_int_equal(f->host.watched_fd, -1);
    assert_true(socket_empty(f->slot.status));
    /* With no job, whatever is there goes. */
    f->slot.job = NULL;
    send_started(f->theirs, 4, getpid(), 1);
    send_started(f->theirs, 5, getpid(), 1);
    assert_false(py_take_started(&f->rt, 0, false));
    assert_true(socket_empty(f->slot.status));
}

static void test_a_pending_kill_reaches_the_child(void **state)
{
    struct fixture *f = *state;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    f->slot.kill = PY_KILL_CPU; /* decided before STARTED was read */
    send_started(f->theirs, 3, child, 0);
    assert_true(py_take_started(&f->rt, 0, true));
    int ws;
    assert_int_equal(waitpid(child, &ws, 0), child);
    assert_true(WIFSIGNALED(ws));
    assert_int_equal(WTERMSIG(ws), SIGKILL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_waited_for_then_taken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_at_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_pending_kill_reaches_the_child, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
