/* test_sandbox_apply.c — fr_policy_apply in real forked children: what the
 * kernel reports afterwards (/proc/self/status, getrlimit, signal masks),
 * what still works, and the exec preset's relay. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/sandbox.h"
#include "fitrun/sandbox_keys.h"

/* What a child left behind. */
struct result {
    int status;     /* wait status */
    int violation;  /* fr_report_read */
    char out[8192]; /* what the child wrote on its result pipe */
};

typedef void (*child_fn)(int out_fd);

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(fd, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* Copy this process's /proc/self/status to fd (read-only open: allowed by
 * every preset). */
static void dump_status(int fd)
{
    char buf[4096];
    int s = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = s >= 0 ? read(s, buf, sizeof buf) : -1;
    if (n > 0)
        (void)!write(fd, buf, (size_t)n);
    if (s >= 0)
        close(s);
}

/* Fork; the child applies `kv` (report on a pipe unless no_report) and runs fn. */
static void run(const char *kv, bool no_report, child_fn fn, struct result *r)
{
    char err[256];
    struct fr_policy *p = NULL;
    if (fr_sandbox_text_build(kv, NULL, &p, err, sizeof err) < 0)
        fail_msg("build %s: %s", kv, err);
    int rep[2], out[2];
    assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(rep[0]);
        close(out[0]);
        int rc = fr_policy_apply(p, no_report ? -1 : rep[1]);
        if (rc < 0) {
            say(out[1], "apply failed: %s\n", strerror(-rc));
            _exit(125);
        }
        fn(out[1]);
        _exit(0);
    }
    close(rep[1]);
    close(out[1]);
    memset(r, 0, sizeof *r);
    size_t have = 0;
    ssize_t n;
    while ((n = read(out[0], r->out + have, sizeof r->out - 1 - have)) > 0)
        have += (size_t)n;
    assert_int_equal(waitpid(pid, &r->status, 0), pid);
    r->violation = fr_report_read(rep[0]);
    close(rep[0]);
    close(out[0]);
    fr_policy_free(p);
}

/* The hex value of a "Name:\tvalue" line in a /proc/self/status dump. */
static unsigned long long status_field(const char *dump, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s:", name);
    const char *at = strstr(dump, key);
    if (!at)
        fail_msg("no %s in child status:\n%s", name, dump);
    return strtoull(at + strlen(key), NULL, strcmp(name, "NoNewPrivs") && strcmp(name, "Seccomp") ? 16 : 10);
}

static void expect_exit0(const struct result *r)
{
    if (!WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
        fail_msg("child status 0x%x, output:\n%s", r->status, r->out);
}

/* ---- children --------------------------------------------------------------------- */

static void c_status(int fd)
{
    dump_status(fd);
}

static void c_limits(int fd)
{
    static const int res[] = {RLIMIT_CPU,   RLIMIT_AS,    RLIMIT_FSIZE, RLIMIT_NOFILE,
                              RLIMIT_NPROC, RLIMIT_STACK, RLIMIT_CORE};
    for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
        struct rlimit r;
        if (getrlimit(res[i], &r) < 0)
            say(fd, "getrlimit %d failed\n", res[i]);
        else
            say(fd, "%d=%llu/%llu\n", res[i], (unsigned long long)r.rlim_cur, (unsigned long long)r.rlim_max);
    }
}

static volatile sig_atomic_t g_usr1;
static void on_usr1(int sig)
{
    (void)sig;
    g_usr1++;
}

/* What python-preset jobs legitimately do with signals: own handlers,
 * signalling themselves (abort/raise/os.kill(getpid())), masks. */
static void c_signals(int fd)
{
    struct sigaction sa = {.sa_handler = on_usr1};
    if (sigaction(SIGUSR1, &sa, NULL) < 0)
        say(fd, "sigaction failed\n");
    raise(SIGUSR1);          /* tgkill(own pid, own tid) */
    kill(getpid(), SIGUSR1); /* kill(own pid) */
    say(fd, "usr1=%d\n", (int)g_usr1);
    sigset_t block, old, now;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR2);
    sigaddset(&block, SIGSYS);
    int rc = sigprocmask(SIG_BLOCK, &block, &old);
    say(fd, "block=%d old_usr2=%d\n", rc, sigismember(&old, SIGUSR2));
    sigprocmask(SIG_BLOCK, NULL, &now); /* a query: allowed */
    say(fd, "usr2_blocked=%d sys_blocked=%d\n", sigismember(&now, SIGUSR2), sigismember(&now, SIGSYS));
    sigfillset(&block);
    rc = sigprocmask(SIG_SETMASK, &block, NULL);
    sigprocmask(SIG_BLOCK, NULL, &now);
    say(fd, "setmask=%d int_blocked=%d sys_blocked=%d\n", rc, sigismember(&now, SIGINT), sigismember(&now, SIGSYS));
    rc = (int)syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, NULL, 4); /* wrong sigsetsize */
    say(fd, "badsize=%d errno=%d\n", rc, errno);
    sigemptyset(&block);
    sigprocmask(SIG_SETMASK, &block, NULL);
    sigprocmask(SIG_BLOCK, NULL, &now);
    say(fd, "cleared_int=%d\n", sigismember(&now, SIGINT));
}

static void c_dumpable(int fd)
{
    say(fd, "dumpable=%d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
}

static void c_socket(int fd)
{
    (void)fd;
    (void)socket(AF_INET, SOCK_STREAM, 0);
}

static void c_exit7(int fd)
{
    say(fd, "job pid=%d\n", (int)getpid());
    _exit(7);
}

static void c_sigterm(int fd)
{
    (void)fd;
    kill(getpid(), SIGTERM);
    pause();
}

/* ---- tests ---------------------------------------------------------------------------- */

static void test_python_preset_state(void **state)
{
    (void)state;
    struct result r;
    run("preset=python", false, c_status, &r);
    expect_exit0(&r);
    assert_int_equal(status_field(r.out, "NoNewPrivs"), 1);
    assert_int_equal(status_field(r.out, "Seccomp"), 2); /* filter mode */
    assert_int_equal(status_field(r.out, "CapInh"), 0);
    assert_int_equal(status_field(r.out, "CapPrm"), 0);
    assert_int_equal(status_field(r.out, "CapEff"), 0);
    assert_int_equal(status_field(r.out, "CapBnd"), 0);
    assert_int_equal(status_field(r.out, "CapAmb"), 0);
    assert_int_equal(r.violation, -1);
}

static void test_keep_caps(void **state)
{
    (void)state;
    struct result r;
    run("preset=none;keep_caps=cap_net_raw", false, c_status, &r);
    expect_exit0(&r);
    unsigned long long raw = 1ull << 13;                 /* CAP_NET_RAW */
    assert_int_equal(status_field(r.out, "Seccomp"), 0); /* none: no filter */
    assert_int_equal(status_field(r.out, "NoNewPrivs"), 1);
    assert_int_equal(status_field(r.out, "CapEff"), raw);
    assert_int_equal(status_field(r.out, "CapPrm"), raw);
    assert_int_equal(status_field(r.out, "CapInh"), raw);
    assert_int_equal(status_field(r.out, "CapBnd"), raw);
    assert_int_equal(status_field(r.out, "CapAmb"), raw); /* survives an exec by a non-root uid */
}

static void test_rlimits(void **state)
{
    (void)state;
    struct result r;
    run("preset=python;cpu_time=1500ms;memory=1G;fsize=1M;nofile=64;processes=100;stack=4M", false, c_limits, &r);
    expect_exit0(&r);
    char want[512];
    snprintf(want, sizeof want,
             "%d=2/3\n%d=1073741824/1073741824\n%d=1048576/1048576\n%d=64/64\n"
             "%d=100/100\n%d=4194304/4194304\n%d=0/0\n",
             RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_STACK, RLIMIT_CORE);
    assert_string_equal(r.out, want);
}

static void c_limits_after_lowering(int fd)
{
    c_limits(fd);
}

/* A limit above the inherited hard limit is clamped to it, not refused —
 * unless the process may raise it (CAP_SYS_RESOURCE), then it is granted. */
static void test_rlimit_clamped_to_inherited_hard(void **state)
{
    (void)state;
    struct rlimit saved;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
    if (saved.rlim_max < 256)
        skip();
    char err[256];
    struct fr_policy *p;
    assert_int_equal(fr_sandbox_text_build("preset=none;nofile=100000000", NULL, &p, err, sizeof err), 0);
    int out[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(out[0]);
        struct rlimit low = {256, 256};
        if (setrlimit(RLIMIT_NOFILE, &low) < 0)
            _exit(3);
        int rc = fr_policy_apply(p, -1);
        if (rc < 0) {
            say(out[1], "apply failed: %s\n", strerror(-rc));
            _exit(125);
        }
        c_limits_after_lowering(out[1]);
        _exit(0);
    }
    close(out[1]);
    char buf[2048] = "";
    size_t have = 0;
    ssize_t n;
    while ((n = read(out[0], buf + have, sizeof buf - 1 - have)) > 0)
        have += (size_t)n;
    assert_true(have > 0);
    close(out[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    fr_policy_free(p);
    char want[64];
    snprintf(want, sizeof want, "\n%d=256/256\n", RLIMIT_NOFILE);
    char granted[64];
    snprintf(granted, sizeof granted, "\n%d=100000000/100000000\n", RLIMIT_NOFILE);
    if (!strstr(buf, want) && !strstr(buf, granted))
        fail_msg("nofile neither clamped to 256 nor granted:\n%s", buf);
}

static void test_signals_still_work(void **state)
{
    (void)state;
    struct result r;
    run("preset=python", false, c_signals, &r);
    expect_exit0(&r);
    assert_non_null(strstr(r.out, "usr1=2\n"));
    /* Masks are the job's business, SIGSYS included: violations reach the
     * supervisor as notifications, whatever is blocked. */
    assert_non_null(strstr(r.out, "block=0 old_usr2=0\n"));
    assert_non_null(strstr(r.out, "usr2_blocked=1 sys_blocked=1\n"));
    assert_non_null(strstr(r.out, "setmask=0 int_blocked=1 sys_blocked=1\n"));
    char badsize[64];
    snprintf(badsize, sizeof badsize, "badsize=-1 errno=%d\n", EINVAL);
    assert_non_null(strstr(r.out, badsize));
    assert_non_null(strstr(r.out, "cleared_int=0\n"));
}

static void test_violation_reported(void **state)
{
    (void)state;
    struct result r;
    run("preset=python", false, c_socket, &r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGSYS);
    char name[40];
    assert_string_equal(fr_syscall_name(r.violation, name, sizeof name), "socket");
    /* Without a report descriptor: the same death, no name. */
    run("preset=python", true, c_socket, &r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGSYS);
    assert_int_equal(r.violation, -1);
}

/* Other processes of the uid (other jobs) must not read a job's memory
 * through /proc/<pid>/mem: jobs are not dumpable — unless core files were
 * asked for, which needs it. */
static void test_not_dumpable(void **state)
{
    (void)state;
    struct result r;
    run("preset=python", false, c_dumpable, &r);
    expect_exit0(&r);
    assert_string_equal(r.out, "dumpable=0\n");
    run("preset=none", false, c_dumpable, &r);
    assert_string_equal(r.out, "dumpable=0\n");
    run("preset=python;core=1M", false, c_dumpable, &r);
    assert_string_equal(r.out, "dumpable=1\n");
}

/* A prepared worker: its own bounding set is gone (effective set intact),
 * and its jobs still end with everything dropped. Runs in a forked
 * "worker" so the test process keeps its bounding set. */
static void test_prepared_worker(void **state)
{
    (void)state;
    int out[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t worker = fork();
    assert_true(worker >= 0);
    if (worker == 0) {
        close(out[0]);
        char err[256];
        struct fr_policy *p;
        if (fr_sandbox_text_build("preset=python;keep_caps=cap_kill", NULL, &p, err, sizeof err) < 0 ||
            fr_policy_prepare_worker(p) < 0)
            _exit(3);
        say(out[1], "worker:");
        dump_status(out[1]);
        pid_t job = fork();
        if (job == 0) {
            if (fr_policy_apply(p, -1) < 0)
                _exit(4);
            say(out[1], "job:");
            dump_status(out[1]);
            _exit(0);
        }
        int st;
        _exit(waitpid(job, &st, 0) == job && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 5);
    }
    close(out[1]);
    static char buf[16384];
    size_t have = 0;
    ssize_t n;
    while ((n = read(out[0], buf + have, sizeof buf - 1 - have)) > 0)
        have += (size_t)n;
    buf[have] = '\0';
    close(out[0]);
    int st;
    assert_int_equal(waitpid(worker, &st, 0), worker);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail_msg("worker status 0x%x:\n%s", st, buf);
    char *job = strstr(buf, "job:");
    assert_non_null(job);
    *job = '\0';
    unsigned long long kill_cap = 1ull << 5; /* CAP_KILL */
    assert_int_equal(status_field(buf, "CapBnd"), kill_cap);
    assert_true(status_field(buf, "CapEff") != 0); /* the worker keeps its own */
    assert_int_equal(status_field(job + 1, "CapBnd"), kill_cap);
    assert_int_equal(status_field(job + 1, "CapEff"), kill_cap);
    assert_int_equal(status_field(job + 1, "Seccomp"), 2);
}

static void test_spec_allow_accepted(void **state)
{
    (void)state;
    struct result r;
    run("preset=python;spec_allow=yes", false, c_status, &r);
    expect_exit0(&r);
    assert_int_equal(status_field(r.out, "Seccomp"), 2);
}

static void test_deny_list_on_none(void **state)
{
    (void)state;
    struct result r;
    run("preset=none;deny=socket", false, c_socket, &r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGSYS);
    char name[40];
    assert_string_equal(fr_syscall_name(r.violation, name, sizeof name), "socket");
    run("preset=none;deny=socket", false, c_signals, &r);
    expect_exit0(&r);
    assert_non_null(strstr(r.out, "usr2_blocked=1 sys_blocked=1\n"));
}

/* exec preset with a report descriptor: the caller's child becomes the
 * relay, the job runs in its child and the relay mirrors the job. */
static void test_exec_relay_mirrors(void **state)
{
    (void)state;
    struct result r;
    run("preset=exec", false, c_exit7, &r);
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 7);
    assert_non_null(strstr(r.out, "job pid="));
    run("preset=exec", false, c_sigterm, &r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGTERM);
    assert_int_equal(r.violation, -1);
    run("preset=exec", false, c_socket, &r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGSYS);
    char name[40];
    assert_string_equal(fr_syscall_name(r.violation, name, sizeof name), "socket");
    run("preset=exec", false, c_status, &r);
    expect_exit0(&r);
    assert_int_equal(status_field(r.out, "Seccomp"), 2);
    assert_int_equal(status_field(r.out, "CapEff"), 0);
    assert_int_equal(status_field(r.out, "CapBnd"), 0);
}

/* A violation with SIGSYS blocked and a SIGSYS handler of the job's own is
 * still named: the notification does not depend on either. */
static void c_sigsys_hidden(int fd)
{
    (void)fd;
    struct sigaction sa = {.sa_handler = SIG_IGN};
    sigaction(SIGSYS, &sa, NULL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    (void)socket(AF_INET, SOCK_STREAM, 0);
}

static void test_violation_named_whatever_the_mask(void **state)
{
    (void)state;
    struct result r;
    char name[40];
    run("preset=python", false, c_sigsys_hidden, &r);
    assert_string_equal(fr_syscall_name(r.violation, name, sizeof name), "socket");
    run("preset=exec", false, c_sigsys_hidden, &r);
    assert_string_equal(fr_syscall_name(r.violation, name, sizeof name), "socket");
    run("preset=none;deny=socket", false, c_sigsys_hidden, &r);
    assert_string_equal(fr_syscall_name(r.violation, name, sizeof name), "socket");
}

/* The relay hands the job the caller's interval timers (fork does not
 * inherit them): a CPU timer armed before apply still fires in the job. */
static void c_spin(int fd)
{
    (void)fd;
    for (volatile unsigned long i = 0;; i++) {
    }
}

static void test_relay_keeps_timers(void **state)
{
    (void)state;
    char err[256];
    struct fr_policy *p;
    assert_int_equal(fr_sandbox_text_build("preset=python", NULL, &p, err, sizeof err), 0);
    int rep[2];
    assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct itimerval t = {.it_value = {.tv_usec = 200000}};
        setitimer(ITIMER_PROF, &t, NULL);
        if (fr_policy_apply(p, rep[1]) < 0)
            _exit(125);
        c_spin(-1);
        _exit(0);
    }
    close(rep[1]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(rep[0]);
    fr_policy_free(p);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGPROF);
}

/* exec preset without a report descriptor: no relay, violations kill. */
static void test_exec_without_report(void **state)
{
    (void)state;
    struct result r;
    run("preset=exec", true, c_socket, &r);
    assert_true(WIFSIGNALED(r.status));
    assert_int_equal(WTERMSIG(r.status), SIGSYS);
    assert_int_equal(r.violation, -1);
    run("preset=exec", true, c_exit7, &r);
    assert_true(WIFEXITED(r.status));
    assert_int_equal(WEXITSTATUS(r.status), 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_preset_state),
        cmocka_unit_test(test_keep_caps),
        cmocka_unit_test(test_rlimits),
        cmocka_unit_test(test_rlimit_clamped_to_inherited_hard),
        cmocka_unit_test(test_signals_still_work),
        cmocka_unit_test(test_violation_reported),
        cmocka_unit_test(test_not_dumpable),
        cmocka_unit_test(test_prepared_worker),
        cmocka_unit_test(test_spec_allow_accepted),
        cmocka_unit_test(test_deny_list_on_none),
        cmocka_unit_test(test_exec_relay_mirrors),
        cmocka_unit_test(test_exec_without_report),
        cmocka_unit_test(test_violation_named_whatever_the_mask),
        cmocka_unit_test(test_relay_keeps_timers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
