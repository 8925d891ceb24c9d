/* test_python_status.c — a job's STARTED taken from its worker's status
 * socket (launcher/runtime/python/status.c), on a real socketpair with
 * real pidfds, through a host that records what the runtime asks of it:
 * taken when needed, waited for (watched) when not there yet; the slot's
 * pidfd kept while its process lives on, the STARTEDs then read in
 * batches; a pending kill reaches the child as STARTED names it. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <fcntl.h>
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
    f->slot = (struct pyslot){.chan = -1, .status = sv[0], .pidfd = -1, .job_w = -1, .child_fd = -1, .proc_fd = -1};
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
    py_status_close(&f->rt, &f->slot);
    close(f->theirs);
    free(f);
    return 0;
}

/* The worker's STARTED for job seq: pid, its CPU base and, with_fd, a
 * pidfd of pid. */
static void send_started(int sock, uint32_t seq, pid_t pid, int64_t base, bool with_fd)
{
    char m[FR_PY_MSG_STARTED_LEN] = {'S'};
    int32_t p = pid;
    memcpy(m + 4, &seq, 4);
    memcpy(m + 8, &p, 4);
    memcpy(m + 12, &base, 8);
    struct iovec iov = {m, sizeof m};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    int fd = -1;
    if (with_fd) {
        fd = pidfd_open(pid, 0);
        assert_true(fd >= 0);
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof u.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    assert_int_equal(sendmsg(sock, &mh, 0), (ssize_t)sizeof m);
    if (fd >= 0)
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
    assert_false(py_take_started(&f->rt, 0));
    assert_int_equal(f->host.watched_fd, f->slot.status);
    assert_true(f->slot.status_watched);
    /* An earlier job's, with the process's pidfd, then this job's. */
    send_started(f->theirs, 2, getpid(), 5, true);
    send_started(f->theirs, 3, getpid(), 1500, false);
    assert_true(py_take_started(&f->rt, 0));
    assert_int_equal(f->slot.child, getpid());
    assert_true(f->slot.proc_fd >= 0);
    assert_int_equal(f->slot.child_fd, f->slot.proc_fd);
    assert_int_equal(f->host.cpu_pid, getpid());
    assert_int_equal(f->host.cpu_base, 1500);
    assert_int_equal(f->host.watched_fd, -1); /* no longer watched */
    assert_false(f->slot.status_watched);
    /* Taken once: asking again reads nothing. */
    send_started(f->theirs, 3, getpid(), 7, false);
    assert_true(py_take_started(&f->rt, 0));
    assert_int_equal(f->host.cpu_base, 1500);
    assert_false(socket_empty(f->slot.status));
}

static void test_a_pid_without_its_pidfd_is_not_taken(void **state)
{
    struct fixture *f = *state;
    send_started(f->theirs, 3, getpid(), 1, false);
    assert_false(py_take_started(&f->rt, 0));
    assert_int_equal(f->slot.child_fd, -1);
    assert_int_equal(f->host.cpu_pid, 0);
    assert_true(f->slot.status_watched); /* still waiting */
}

/* A job's end under reuse: a process that lives on keeps its pidfd, and
 * its STARTEDs are read every PY_STATUS_BATCH jobs, all in one call. */
static void test_read_in_batches_while_the_process_lives_on(void **state)
{
    struct fixture *f = *state;
    f->py.reuse = true;
    send_started(f->theirs, 3, getpid(), 0, true);
    f->slot.exited = true;    /* its EXITED: no replacement reason */
    py_status_end(&f->rt, 0); /* the pidfd was new: read now */
    assert_true(f->slot.proc_fd >= 0);
    assert_true(socket_empty(f->slot.status));
    int proc = f->slot.proc_fd;
    for (uint32_t seq = 4; seq < 4 + PY_STATUS_BATCH; seq++) {
        f->slot.seq = seq;
        send_started(f->theirs, seq, getpid(), 0, false);
        py_status_end(&f->rt, 0);
        assert_int_equal(f->slot.proc_fd, proc);
        if (seq < 3 + PY_STATUS_BATCH)
            assert_false(socket_empty(f->slot.status));
    }
    assert_true(socket_empty(f->slot.status));
    assert_int_equal(f->slot.queued, 0);
    /* Replaced after a job: its pidfd goes. */
    strcpy(f->slot.facts.replaced, "max_predictions: 1000 predictions run");
    py_status_end(&f->rt, 0);
    assert_int_equal(f->slot.proc_fd, -1);
    assert_int_equal(fcntl(proc, F_GETFD), -1);
}

/* Under fork every job's process is new: read and closed at its end. */
static void test_fork_reads_every_end(void **state)
{
    struct fixture *f = *state;
    f->slot.exited = true;
    send_started(f->theirs, 3, getpid(), 0, true);
    py_status_end(&f->rt, 0);
    assert_true(socket_empty(f->slot.status));
    assert_int_equal(f->slot.proc_fd, -1);
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
    send_started(f->theirs, 3, child, 0, true);
    assert_true(py_take_started(&f->rt, 0));
    int ws;
    assert_int_equal(waitpid(child, &ws, 0), child);
    assert_true(WIFSIGNALED(ws));
    assert_int_equal(WTERMSIG(ws), SIGKILL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_waited_for_then_taken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_pid_without_its_pidfd_is_not_taken, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_in_batches_while_the_process_lives_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_reads_every_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_pending_kill_reaches_the_child, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
