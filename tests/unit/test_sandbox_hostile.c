/* test_sandbox_hostile.c — the hostile corpus, C side.
 *
 * Each case runs build/tests/helpers/sb_run (tests/helpers/sb_run.c): the
 * policy is built in sb_run's parent, a forked child applies it and
 * performs the attack, and the parent prints the classified outcome. Every
 * case asserts both halves: the exact outcome (status, syscall or signal
 * name, timeout kind, exit code) AND that the action did not happen (file
 * absent or unchanged, no connection reached the listener, nothing
 * mounted, the parent alive, no process left behind).
 *
 * Under AddressSanitizer the cases that need a small address space or a
 * stack overflow are skipped: ASan reserves terabytes of shadow memory and
 * handles SIGSEGV itself. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#if defined(__SANITIZE_ADDRESS__)
#define FR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FR_ASAN 1
#endif
#endif

#define SB_RUN FITRUN_BUILD "/tests/helpers/sb_run"

struct sb {
    char out[16384];      /* everything sb_run printed (the job's stdout too) */
    int exit_status;      /* sb_run's own wait status */
    char status[32], timeout[16], syscall[40], signal[16];
    int exit;
    unsigned long long cpu_ms;
    long maxrss_kb;
};

static char g_tmp[PATH_MAX]; /* a fresh directory per test */

static int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/fitrun-test-sandbox-XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(g_tmp);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
                char p[PATH_MAX + 256];
                snprintf(p, sizeof p, "%s/%s", g_tmp, e->d_name);
                unlink(p);
            }
        }
        closedir(d);
    }
    return rmdir(g_tmp);
}

static void tmp_path(char *buf, size_t n, const char *name)
{
    if ((size_t)snprintf(buf, n, "%s/%s", g_tmp, name) >= n)
        fail_msg("path too long: %s/%s", g_tmp, name);
}

/* No process runs the sb_run binary any more (the fork bomb's children,
 * a relay, a job...). */
static void assert_no_leftover(void)
{
    char self[PATH_MAX];
    if (!realpath(SB_RUN, self))
        fail_msg("realpath %s: %s", SB_RUN, strerror(errno));
    DIR *d = opendir("/proc");
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char link[300], exe[PATH_MAX];
        snprintf(link, sizeof link, "/proc/%s/exe", e->d_name);
        ssize_t n = readlink(link, exe, sizeof exe - 1);
        if (n <= 0)
            continue;
        exe[n] = '\0';
        if (strcmp(exe, self) == 0)
            fail_msg("process %s (sb_run) is still running", e->d_name);
    }
    closedir(d);
}

/* Run sb_run with argv (NULL-terminated, without argv[0]) and parse. */
static void sb_exec(struct sb *r, const char *const *args)
{
    const char *argv[16] = { SB_RUN };
    size_t i = 1;
    for (; args[i - 1] && i < 15; i++)
        argv[i] = args[i - 1];
    argv[i] = NULL;
    int out[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        execv(SB_RUN, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    memset(r, 0, sizeof *r);
    size_t have = 0;
    ssize_t n;
    while ((n = read(out[0], r->out + have, sizeof r->out - 1 - have)) > 0)
        have += (size_t)n;
    close(out[0]);
    assert_int_equal(waitpid(pid, &r->exit_status, 0), pid);
    /* The parent survived whatever its child tried, and reported. */
    if (!WIFEXITED(r->exit_status) || WEXITSTATUS(r->exit_status) != 0)
        fail_msg("sb_run itself ended with status 0x%x:\n%s", r->exit_status, r->out);
    const char *line = strstr(r->out, "OUTCOME ");
    if (!line || sscanf(line, "OUTCOME status=%31s timeout=%15s syscall=%39s signal=%15s exit=%d cpu_ms=%llu maxrss_kb=%ld",
                        r->status, r->timeout, r->syscall, r->signal, &r->exit, &r->cpu_ms, &r->maxrss_kb) != 7)
        fail_msg("no OUTCOME line in:\n%s", r->out);
    assert_no_leftover();
}

#define SB(r, ...) sb_exec((r), (const char *const[]){ __VA_ARGS__, NULL })

static void expect(const struct sb *r, const char *status, const char *syscall, const char *signal)
{
    if (strcmp(r->status, status) || strcmp(r->syscall, syscall) || strcmp(r->signal, signal))
        fail_msg("expected status=%s syscall=%s signal=%s, got:\n%s", status, syscall, signal, r->out);
}

static void expect_violation(const struct sb *r, const char *syscall)
{
    expect(r, "violation", syscall, "SIGSYS");
    /* The job was stopped at the call: nothing it meant to print after. */
    if (strstr(r->out, "done:"))
        fail_msg("the attack reports success:\n%s", r->out);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- network -------------------------------------------------------------------------- */

static void test_socket(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "socket");
    expect_violation(&r, "socket");
    SB(&r, "--exec", "preset=exec", "socket");
    expect_violation(&r, "socket");
}

/* A listener on loopback; the child holds a socket it was given before the
 * sandbox (a leaked descriptor) and tries to connect out with it. */
static void test_connect(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    assert_true(l >= 0);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(l, 4), 0);
    socklen_t len = sizeof sa;
    assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
    char port[16];
    snprintf(port, sizeof port, "%u", (unsigned)ntohs(sa.sin_port));

    struct sb r;
    SB(&r, "preset=python", "connect", port);
    expect_violation(&r, "connect");
    /* No connection reached the listener (a completed handshake would be
     * waiting in the accept queue even though nobody accepted it). */
    assert_int_equal(accept(l, NULL, NULL), -1);
    assert_int_equal(errno, EAGAIN);
    /* Control: without the sandbox's filter the same attack connects, so
     * the assertion above can fail. */
    SB(&r, "preset=none", "connect", port);
    expect(&r, "ok", "-", "-");
    int c = accept(l, NULL, NULL);
    assert_true(c >= 0);
    close(c);
    close(l);
}

static void test_raw_socket_needs_capability(void **state)
{
    (void)state;
    struct sb r;
    /* preset none: no filter, only the capability drop stands in the way. */
    SB(&r, "preset=none", "rawsocket");
    expect(&r, "error", "-", "-");
    assert_int_equal(r.exit, 1);
    assert_non_null(strstr(r.out, "failed: EPERM"));
    SB(&r, "preset=none;keep_caps=cap_net_raw", "rawsocket");
    expect(&r, "ok", "-", "-");
    assert_non_null(strstr(r.out, "done: rawsocket"));
    SB(&r, "preset=python;keep_caps=cap_net_raw", "rawsocket");
    expect_violation(&r, "socket");
}

/* ---- processes ------------------------------------------------------------------------- */

static void test_exec_shell(void **state)
{
    (void)state;
    char marker[PATH_MAX];
    tmp_path(marker, sizeof marker, "pwned");
    struct sb r;
    SB(&r, "preset=python", "exec_sh", marker);
    expect_violation(&r, "execve");
    assert_false(exists(marker));
    /* exec preset: a second exec is allowed (see docs), but the shell is
     * still under the filter: its redirection is an open for writing. */
    SB(&r, "--exec", "preset=exec", "exec_sh", marker);
    expect(&r, "violation", "openat", "SIGSYS");
    assert_false(exists(marker));
}

static void test_fork_bomb(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "forkbomb");
    expect_violation(&r, "clone"); /* glibc's fork() is clone(2) */
    SB(&r, "--exec", "preset=exec", "forkbomb");
    expect_violation(&r, "clone");
    /* sb_exec already checked that no sb_run process is left. */
}

static void test_thread(void **state)
{
    (void)state;
    struct sb r;
    /* pthread_create blocks every signal around clone3: still named. */
    SB(&r, "preset=python", "thread");
    expect_violation(&r, "clone3");
    SB(&r, "--exec", "preset=exec", "thread");
    expect_violation(&r, "clone3");
}

static void test_ptrace(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "ptrace");
    expect_violation(&r, "ptrace");
}

static void test_kill_parent(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "kill_parent"); /* sb_exec: the parent exited 0 */
    expect_violation(&r, "kill");
    SB(&r, "--exec", "preset=exec", "kill_parent"); /* the relay, here */
    expect_violation(&r, "kill");
    SB(&r, "preset=python", "kill_group");
    expect_violation(&r, "kill");
    /* F_SETOWN would route SIGIO to the parent: denied too. */
    SB(&r, "preset=python", "fcntl_setown");
    expect_violation(&r, "fcntl");
}

/* Signalling itself is allowed: abort() ends in tgkill(own pid). */
static void test_abort_is_a_signal(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "abort");
    expect(&r, "signal", "-", "SIGABRT");
}

/* ---- namespaces and mounts --------------------------------------------------------------- */

static void test_mount(void **state)
{
    (void)state;
    struct stat before, after;
    assert_int_equal(stat(g_tmp, &before), 0);
    struct sb r;
    SB(&r, "preset=python", "mount", g_tmp);
    expect_violation(&r, "mount");
    assert_int_equal(stat(g_tmp, &after), 0);
    assert_int_equal(before.st_dev, after.st_dev); /* not a new mount point */
}

static void test_unshare(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "unshare");
    expect_violation(&r, "unshare");
}

/* ---- the file system --------------------------------------------------------------------- */

static void test_open_for_writing(void **state)
{
    (void)state;
    char path[PATH_MAX];
    tmp_path(path, sizeof path, "written");
    struct sb r;
    SB(&r, "preset=python", "open_write", path);
    expect_violation(&r, "openat");
    assert_false(exists(path));
    SB(&r, "--exec", "preset=exec", "open_write", path);
    expect_violation(&r, "openat");
    assert_false(exists(path));
}

static void make_file(const char *path, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "keep\n", 5), 5);
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_unlink_and_chmod(void **state)
{
    (void)state;
    char path[PATH_MAX];
    tmp_path(path, sizeof path, "victim");
    make_file(path, 0600);
    struct sb r;
    SB(&r, "preset=python", "unlink", path);
    expect_violation(&r, "unlink");
    assert_true(exists(path));
    SB(&r, "preset=python", "chmod", path);
    expect_violation(&r, "chmod");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    /* Reading is what the preset is for. */
    SB(&r, "preset=python", "read_file", path);
    expect(&r, "ok", "-", "-");
    assert_non_null(strstr(r.out, "done: read"));
}

/* RLIMIT_FSIZE on a regular-file stdout: the write past the limit is cut
 * and the kernel sends SIGXFSZ. */
static void test_write_past_file_size_limit(void **state)
{
    (void)state;
    char path[PATH_MAX];
    tmp_path(path, sizeof path, "stdout");
    struct sb r;
    SB(&r, "--stdout", path, "preset=python;fsize=64K", "fsize");
    expect(&r, "signal", "-", "SIGXFSZ");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 64 * 1024);
}

/* ---- limits ---------------------------------------------------------------------------------- */

static void test_raise_rlimit(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python;cpu_time=5s", "raise_rlimit");
    expect_violation(&r, "prlimit64"); /* glibc's setrlimit */
    /* Without the filter the kernel refuses: no CAP_SYS_RESOURCE left. */
    SB(&r, "preset=none;cpu_time=5s", "raise_rlimit");
    expect(&r, "error", "-", "-");
    assert_non_null(strstr(r.out, "failed: EPERM"));
}

static void test_memory_bomb(void **state)
{
    (void)state;
#ifdef FR_ASAN
    skip();
#endif
    struct sb r;
    SB(&r, "preset=python;memory=256M", "membomb");
    expect(&r, "memory", "-", "-");
    assert_int_equal(r.exit, 86);
    assert_non_null(strstr(r.out, "failed: ENOMEM"));
    assert_true(r.maxrss_kb < 300 * 1024); /* it never got past the limit */
}

static void test_cpu_spin(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "--wall", "30000", "preset=python;cpu_time=1s", "cpuspin");
    expect(&r, "timeout", "-", "SIGXCPU");
    assert_string_equal(r.timeout, "cpu");
    /* rusage splits CPU time from sampled ticks and reads up to ~10% low
     * on this kind of VM; the class and signal above are the assertion,
     * this only checks the spin really ran on the CPU for about a second. */
    assert_true(r.cpu_ms >= 500 && r.cpu_ms < 10000);
    SB(&r, "--exec", "--wall", "30000", "preset=exec;cpu_time=1s", "cpuspin");
    expect(&r, "timeout", "-", "SIGXCPU");
    assert_string_equal(r.timeout, "cpu");
    /* No CPU limit: the parent's wall clock ends it. */
    SB(&r, "--wall", "300", "preset=python", "cpuspin");
    expect(&r, "timeout", "-", "SIGKILL");
    assert_string_equal(r.timeout, "wall");
}

static void test_stack_overflow(void **state)
{
    (void)state;
#ifdef FR_ASAN
    skip();
#endif
    struct sb r;
    SB(&r, "preset=python;stack=8M", "stackoverflow");
    expect(&r, "signal", "-", "SIGSEGV");
}

/* RLIMIT_NPROC counts processes per real uid and is not enforced for uid 0
 * (measured here, documented in docs/sandbox.md). preset none, so fork is
 * not filtered. */
static void test_nproc_is_per_user(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    struct sb r;
    SB(&r, "preset=none;processes=1", "forkbomb");
    expect(&r, "ok", "-", "-"); /* root: the limit does not apply */
    assert_non_null(strstr(r.out, "done: forked"));
    SB(&r, "--uid", "65534", "preset=none;processes=1", "forkbomb");
    expect(&r, "error", "-", "-"); /* one process of that uid already: no fork at all */
    assert_non_null(strstr(r.out, "failed: EAGAIN"));
}

/* A caller that switched to an unprivileged uid before apply (the kernel
 * then marks it non-dumpable): the exec relay must still take the
 * listener and name violations; the python preset is unaffected. */
static void test_unprivileged_uid(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip();
    struct sb r;
    SB(&r, "--uid", "65534", "--exec", "preset=exec", "socket");
    expect_violation(&r, "socket");
    SB(&r, "--uid", "65534", "--exec", "preset=exec", "hello");
    expect(&r, "ok", "-", "-");
    SB(&r, "--uid", "65534", "preset=python", "socket");
    expect_violation(&r, "socket");
    SB(&r, "--uid", "65534", "preset=python", "ptrace");
    expect_violation(&r, "ptrace");
}

/* ---- the violation mechanism itself ------------------------------------------------------------ */

static void test_own_sigsys_handler(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "sigsys_handler");
    expect_violation(&r, "rt_sigaction");
    assert_null(strstr(r.out, "own SIGSYS handler ran"));
}

static void test_block_sigsys(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "block_sigsys");
    expect_violation(&r, "socket");
}

static void test_forged_report_ignored(void **state)
{
    (void)state;
    struct sb r;
    /* sb_run's report pipe is the child's descriptor 3 or 4: forge both. */
    SB(&r, "preset=python", "forge_report", "4");
    expect(&r, "ok", "-", "-");
    SB(&r, "preset=python", "forge_report", "3");
    expect(&r, "ok", "-", "-");
}

static void test_tty_injection(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "tiocsti");
    expect_violation(&r, "ioctl");
}

/* A foreign syscall ABI (int 0x80) is killed by the architecture check
 * before any rule: a violation whose name we cannot know (documented). */
static void test_foreign_abi(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    struct sb r;
    SB(&r, "preset=python", "int80");
    expect_violation(&r, "unknown");
}

/* ---- profile lists ------------------------------------------------------------------------------- */

static void test_allow_and_deny_lists(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python;allow=socket", "socket");
    expect(&r, "ok", "-", "-");
    SB(&r, "preset=none;deny=socket", "socket");
    expect_violation(&r, "socket");
    SB(&r, "preset=python;deny=chdir", "hello");
    expect(&r, "ok", "-", "-");
    SB(&r, "preset=python", "exit3");
    expect(&r, "error", "-", "-");
    assert_int_equal(r.exit, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_socket_needs_capability, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exec_shell, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fork_bomb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ptrace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abort_is_a_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unshare, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_for_writing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlink_and_chmod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_past_file_size_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raise_rlimit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_bomb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cpu_spin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stack_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nproc_is_per_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unprivileged_uid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_own_sigsys_handler, setup, teardown),
        cmocka_unit_test_setup_teardown(test_block_sigsys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_forged_report_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tty_injection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_abi, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow_and_deny_lists, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
