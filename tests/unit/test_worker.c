/* test_worker.c — fork isolation's worker (sandbox/worker.c) driven as
 * fitrun drives it (PIPES, RUN; STARTED, EXITED, FAILED), with a stand-in
 * for the interpreter in each child: it writes what it finds (its job, the
 * apply result, its open descriptors, its backstop) on its report pipe and
 * exits. Real forks, pipes, pidfds and seccomp filters. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../launcher/runtime/python/internal.h"
#include "fitrun/sandbox.h"
#include "fitrun/sandbox_keys.h"

/* The policy of the current rig (NULL: none), applied by each child as
 * the interpreter does once the call returned. */
static struct fr_policy *g_policy;

/* What the stand-in child does: apply the policy (unless its job could not
 * be read), say what it holds, then what its job's text says. */
static void child_body(struct fr_worker_child *c)
{
    int rc = 0;
    if (!c->error[0])
        rc = g_policy ? fr_policy_apply_notify(g_policy, FR_PY_CHILD_NOTIFY_FD, 0) : close(FR_PY_CHILD_NOTIFY_FD);
    char out[512];
    int n = snprintf(out, sizeof out, "job=%.*s apply=%d error=%s fds=", c->error[0] ? 0 : (int)c->job_len,
                     c->job ? c->job : "", rc, c->error[0] ? c->error : "-");
    for (int fd = 0; fd < 16; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            n += snprintf(out + n, sizeof out - (size_t)n, "%d,", fd);
    struct itimerval it;
    getitimer(ITIMER_PROF, &it);
    n += snprintf(out + n, sizeof out - (size_t)n, " backstop=%ld", (long)it.it_value.tv_sec);
    if (write(FR_PY_CHILD_REPORT_FD, out, (size_t)n) != n)
        _exit(9);
    if (c->job && !strncmp(c->job, "exit3", 5))
        _exit(3);
    if (c->job && !strncmp(c->job, "socket", 6))
        (void)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
    if (c->job && !strncmp(c->job, "print", 5) && write(STDOUT_FILENO, "printed", 7) != 7)
        _exit(9);
    fr_worker_child_free(c);
    _exit(0);
}

struct rig {
    int chan, status;          /* fitrun's ends */
    int job_w, rep, out, err;  /* fitrun's ends of the worker's own pipes */
    int theirs[FR_PY_RUN_FDS]; /* their child ends (sent with PIPES, or kept for a per-job RUN) */
    pid_t worker;
};

static void rig_start(struct rig *r, const char *policy, bool send_pipes)
{
    int ch[2], st[2], p[4][2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st), 0);
    for (int i = 0; i < 4; i++)
        assert_int_equal(pipe2(p[i], O_CLOEXEC | O_NONBLOCK), 0);
    g_policy = NULL;
    char err[512];
    if (policy)
        assert_int_equal(fr_sandbox_text_build(policy, NULL, &g_policy, err, sizeof err), 0);
    r->worker = fork();
    assert_true(r->worker >= 0);
    if (r->worker == 0) {
        /* A worker holds only what comes on its channel (the zygote's do):
         * none of fitrun's ends, nor the child ends before PIPES or RUN
         * brings them. It dies with the test. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(ch[0]);
        close(st[0]);
        for (int i = 0; i < 4; i++) {
            close(p[i][0]);
            close(p[i][1]);
        }
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        struct fr_worker_config cfg = {
            .chan = ch[1], .status = st[1], .null_fd = null, .policy = g_policy, .slot = 0, .backstop_ms = 7000};
        struct fr_worker_child c;
        int rc = fr_worker_serve(&cfg, &c);
        if (rc == 1)
            child_body(&c);
        _exit(rc == 0 ? 0 : 99);
    }
    close(ch[1]);
    close(st[1]);
    r->chan = ch[0];
    r->status = st[0];
    r->job_w = p[0][1];
    r->rep = p[1][0];
    r->out = p[2][0];
    r->err = p[3][0];
    const int theirs[4] = {p[0][0], p[1][1], p[2][1], p[3][1]};
    memcpy(r->theirs, theirs, sizeof theirs);
    if (send_pipes) {
        assert_int_equal(py_send_pipes(r->chan, theirs), 0);
        for (int i = 1; i < 4; i++) /* the job's read end stays ours too: fitrun discards leftovers */
            close(theirs[i]);
    }
}

/* The worker ends when the channel closes, with status 0. */
static void rig_stop(struct rig *r)
{
    fr_policy_free(g_policy);
    g_policy = NULL;
    close(r->chan);
    int ws;
    assert_int_equal(waitpid(r->worker, &ws, 0), r->worker);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    close(r->status);
    const int fds[] = {r->job_w, r->rep, r->out, r->err, r->theirs[0]};
    for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
        close(fds[i]);
}

static void wait_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 10000), 1);
}

static void send_job(struct rig *r, const char *text, uint32_t claimed)
{
    uint32_t len = claimed ? claimed : (uint32_t)strlen(text);
    assert_int_equal(write(r->job_w, &len, sizeof len), (ssize_t)sizeof len);
    assert_int_equal(write(r->job_w, text, strlen(text)), (ssize_t)strlen(text));
}

/* The worker's next channel message (its text, for FAILED's reason, in a
 * static buffer: valid until the next call). */
static struct py_msg recv_chan(struct rig *r)
{
    static char m[PY_MSG_MAX];
    struct py_msg msg;
    wait_readable(r->chan);
    assert_int_equal(py_recv(r->chan, m, sizeof m, &msg), 1);
    return msg;
}

/* Its STARTED (seq, a pid, a pidfd) and EXITED; the report into buf. */
static struct py_msg run_job(struct rig *r, uint32_t seq, char *buf, size_t n)
{
    struct py_msg st[2];
    char bufs[2][PY_STATUS_MSG_MAX];
    wait_readable(r->status);
    assert_int_equal(py_recv_status(r->status, st, bufs, 1), 1);
    assert_int_equal(st[0].kind, 'S');
    assert_true(st[0].well_formed);
    assert_int_equal(st[0].seq, seq);
    assert_true(st[0].pid > 0);
    assert_true(st[0].fd >= 0); /* a pidfd of the child */
    close(st[0].fd);
    struct py_msg e = recv_chan(r);
    assert_int_equal(e.kind, 'E');
    assert_true(e.well_formed);
    assert_int_equal(e.seq, seq);
    ssize_t got = read(r->rep, buf, n - 1);
    buf[got > 0 ? got : 0] = '\0';
    return e;
}

static void test_runs_jobs_on_its_own_pipes(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, NULL, true);
    char rep[600];
    for (uint32_t seq = 1; seq <= 3; seq++) {
        assert_int_equal(py_send_run(r.chan, seq, 0, NULL, 0), 0);
        send_job(&r, "print", 0);
        struct py_msg e = run_job(&r, seq, rep, sizeof rep);
        /* 0 null, 1-3 the pipes, and nothing else (4: no filter, closed) */
        assert_string_equal(rep, "job=print apply=0 error=- fds=0,1,2,3, backstop=7");
        assert_true(WIFEXITED(e.facts.wstatus) && WEXITSTATUS(e.facts.wstatus) == 0);
        assert_true(e.facts.applied);
        assert_int_equal(e.facts.violation_nr, -1);
        char out[16] = "";
        assert_int_equal(read(r.out, out, sizeof out), 7);
        assert_memory_equal(out, "printed", 7);
    }
    assert_int_equal(py_send_run(r.chan, 4, 0, NULL, 0), 0);
    send_job(&r, "exit3", 0);
    struct py_msg e = run_job(&r, 4, rep, sizeof rep);
    assert_true(WIFEXITED(e.facts.wstatus) && WEXITSTATUS(e.facts.wstatus) == 3);
    rig_stop(&r);
}

static void test_a_short_job_is_the_childs_error(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, "preset=python", true);
    assert_int_equal(py_send_run(r.chan, 1, 0, NULL, 0), 0);
    send_job(&r, "0123456789", 100);
    close(r.job_w); /* the pipe ends after 10 of its 100 bytes */
    r.job_w = -1;
    close(r.theirs[0]);
    r.theirs[0] = -1;
    char rep[600];
    struct py_msg e = run_job(&r, 1, rep, sizeof rep);
    assert_non_null(strstr(rep, "error=the job pipe ended after 10 of 100 bytes"));
    /* Nothing was applied: its socket is still open (and the policy's
     * ruleset above it), and the worker says so. */
    assert_non_null(strstr(rep, "fds=0,1,2,3,4,"));
    assert_false(e.facts.applied);
    rig_stop(&r);
}

static void test_per_job_pipes_and_a_bad_message(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, NULL, false);
    /* A RUN without descriptors before PIPES: FAILED, and the worker goes on. */
    assert_int_equal(py_send_run(r.chan, 7, 0, NULL, 0), 0);
    struct py_msg f = recv_chan(&r);
    assert_int_equal(f.kind, 'F');
    assert_non_null(memmem(f.why, f.why_len, "fds", 3));
    assert_int_equal(py_send_run(r.chan, 8, 0, r.theirs, 4), 0);
    for (int i = 0; i < 4; i++)
        close(r.theirs[i]);
    r.theirs[0] = -1;
    send_job(&r, "per-job", 0);
    char rep[600];
    run_job(&r, 8, rep, sizeof rep);
    assert_string_equal(rep, "job=per-job apply=0 error=- fds=0,1,2,3, backstop=7");
    /* The worker closed its copies of a RUN's pipes: EOF once the child is gone. */
    assert_int_equal(read(r.rep, rep, sizeof rep), 0);
    rig_stop(&r);
}

static void test_a_denied_call_is_named_and_kills(void **state)
{
    (void)state;
    struct rig r;
    rig_start(&r, "preset=python", true);
    assert_int_equal(py_send_run(r.chan, 1, 0, NULL, 0), 0);
    send_job(&r, "socket", 0);
    char rep[600];
    struct py_msg e = run_job(&r, 1, rep, sizeof rep);
    /* Applied: its socket and the ruleset are closed, nothing else is open. */
    assert_non_null(strstr(rep, "apply=0 error=- fds=0,1,2,3, "));
    assert_true(e.facts.applied);
    assert_int_equal(e.facts.violation_nr, SYS_socket);
    assert_true(WIFSIGNALED(e.facts.wstatus) && WTERMSIG(e.facts.wstatus) == SIGKILL);
    rig_stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_jobs_on_its_own_pipes),
        cmocka_unit_test(test_a_short_job_is_the_childs_error),
        cmocka_unit_test(test_per_job_pipes_and_a_bad_message),
        cmocka_unit_test(test_a_denied_call_is_named_and_kills),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
