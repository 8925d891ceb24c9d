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

#include "sb_harness.h"

/* ---- network -------------------------------------------------------------------------- */

static void test_socket(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "socket");
    expect_violation(&r, "socket");
    SB(&r, "--notify", "preset=python", "socket");
    expect_notified(&r, "socket");
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
    struct sockaddr_in sa = {.sin_family = AF_INET};
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
    /* With Landlock (ABI >= 3) the open reaches the kernel, which refuses
     * it: the shell reports the error and exits 2. */
    if (landlock_abi() >= 3 && !ASAN_EXEC_UNDER_LANDLOCK_BREAKS) {
        SB(&r, "--exec", "preset=exec;fs=system;read=" FITRUN_BUILD, "exec_sh", marker);
        expect(&r, "error", "-", "-");
        assert_int_equal(r.exit, 2);
        assert_false(exists(marker));
    }
}

static void test_fork_bomb(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "forkbomb");
    expect_violation(&r, "clone"); /* glibc's fork() is clone(2) */
    SB(&r, "--notify", "preset=python", "forkbomb");
    expect_notified(&r, "clone");
    /* exec: process creation only with processes != 1 (kv default: inherited) */
    SB(&r, "--exec", "preset=exec;processes=1", "forkbomb");
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
    SB(&r, "--notify", "preset=python", "thread");
    expect_notified(&r, "clone3");
    SB(&r, "--exec", "preset=exec;processes=1", "thread");
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
    SB(&r, "--notify", "preset=python", "open_write", path);
    expect_notified(&r, "openat");
    assert_false(exists(path));
    /* Under Landlock the filter lets the open through and Landlock says no. */
    if (landlock_abi() >= 1) {
        SB(&r, "--notify", "preset=python;fs=libs", "open_write", path);
        expect(&r, "error", "-", "-");
        assert_non_null(strstr(r.out, "failed: EACCES"));
        assert_false(exists(path));
        if (ASAN_EXEC_UNDER_LANDLOCK_BREAKS)
            return;
        SB(&r, "--exec", "preset=exec;fs=system;read=" FITRUN_BUILD, "open_write", path);
        expect(&r, "error", "-", "-");
        assert_non_null(strstr(r.out, "failed: EACCES"));
        assert_false(exists(path));
    }
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
    /* A slot's own uid: the job is that uid's only process, so
     * processes=1 means exactly "no fork". */
    SB(&r, "--slot", "0", "preset=none;processes=1;user=slot;uid_base=61500", "forkbomb");
    expect(&r, "error", "-", "-");
    assert_non_null(strstr(r.out, "failed: EAGAIN"));
    SB(&r, "--slot", "0", "preset=none;processes=4;user=slot;uid_base=61500", "forkbomb");
    expect(&r, "ok", "-", "-");
    assert_non_null(strstr(r.out, "forks: 3 of 8"));
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
    SB(&r, "--uid", "65534", "--notify", "preset=python", "socket");
    expect_notified(&r, "socket");
}

/* ---- the violation mechanism itself ------------------------------------------------------------ */

/* A SIGSYS handler of the job's own changes nothing: the violation is a
 * notification to the supervisor, never a signal to the job. */
static void test_own_sigsys_handler(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "sigsys_handler");
    expect_violation(&r, "socket");
    assert_null(strstr(r.out, "own SIGSYS handler ran"));
    SB(&r, "--notify", "preset=python", "sigsys_handler");
    expect_notified(&r, "socket");
    assert_null(strstr(r.out, "own SIGSYS handler ran"));
}

static void test_block_sigsys(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "block_sigsys");
    expect_violation(&r, "socket");
    SB(&r, "--notify", "preset=python", "block_sigsys");
    expect_notified(&r, "socket");
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

/* The old forgery: a well-formed record on the report descriptor, then
 * SIGSYS raised by the job itself. Whatever SIGSYS is, it is a signal; a
 * violation is only what a supervisor saw. sb_run's report descriptor is
 * 3 or 4 in the child (a pipe end, or the notify socket). */
static void test_forged_sigsys_is_a_signal(void **state)
{
    (void)state;
    struct sb r;
    const char *fds[] = {"3", "4"};
    for (int i = 0; i < 2; i++) {
        SB(&r, "preset=python", "forge_sigsys", fds[i]);
        expect(&r, "signal", "-", "SIGSYS");
        SB(&r, "--notify", "preset=python", "forge_sigsys", fds[i]);
        expect(&r, "signal", "-", "SIGSYS");
        SB(&r, "--exec", "preset=exec", "forge_sigsys", fds[i]);
        expect(&r, "signal", "-", "SIGSYS");
        SB(&r, "--exec", "preset=none;deny=socket", "forge_sigsys", fds[i]);
        expect(&r, "signal", "-", "SIGSYS");
    }
}

/* arch_prctl under the python preset: the XSTATE permission requests of
 * AMX users (oneDNN) pass, whatever the CPU answers; ARCH_SET_FS does not. */
static void test_xstate_permission(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    struct sb r;
    SB(&r, "preset=python", "xcomp");
    expect(&r, "ok", "-", "-");
    assert_non_null(strstr(r.out, "req_xcomp_perm="));
    SB(&r, "--notify", "preset=python", "xcomp");
    expect(&r, "ok", "-", "-");
    SB(&r, "preset=python", "set_fs");
    expect_violation(&r, "arch_prctl");
    SB(&r, "--notify", "preset=python", "set_fs");
    expect_notified(&r, "arch_prctl");
}

static void test_tty_injection(void **state)
{
    (void)state;
    struct sb r;
    SB(&r, "preset=python", "tiocsti");
    expect_violation(&r, "ioctl");
}

/* A foreign syscall ABI (int 0x80) is caught by the architecture check
 * before any rule, and notified like any denied call. */
static void test_foreign_abi(void **state)
{
    (void)state;
#if !defined(__x86_64__)
    skip();
#endif
    struct sb r;
    /* Some kernels never enter a system call through int 0x80 (IA32
     * emulation off, or a paravirtualised guest such as PVM, which raises
     * SIGSEGV): there the filter never sees one, and the attack must
     * still fail, the same way under every preset. */
    SB(&r, "preset=none", "int80");
    if (strcmp(r.status, "signal") == 0 && strcmp(r.signal, "SIGSEGV") == 0) {
        const char *const presets[][3] = {{"preset=python"}, {"--notify", "preset=python"}, {"--exec", "preset=exec"}};
        for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
            if (presets[i][1])
                SB(&r, presets[i][0], presets[i][1], "int80");
            else
                SB(&r, presets[i][0], "int80");
            expect(&r, "signal", "-", "SIGSEGV");
        }
        print_message("int 0x80 is not a system call on this kernel (SIGSEGV without a filter)\n");
        return;
    }
    expect(&r, "ok", "-", "-");
    SB(&r, "preset=python", "int80");
    expect_violation(&r, "foreign_abi");
    SB(&r, "--notify", "preset=python", "int80");
    expect_notified(&r, "foreign_abi");
    SB(&r, "--exec", "preset=exec", "int80");
    expect_violation(&r, "foreign_abi");
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
    /* Named in every preset, exec'd programs included. */
    SB(&r, "--exec", "preset=none;deny=socket", "socket");
    expect_violation(&r, "socket");
    SB(&r, "--notify", "preset=none;deny=socket", "socket");
    expect_notified(&r, "socket");
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
        cmocka_unit_test_setup_teardown(test_forged_sigsys_is_a_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_xstate_permission, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tty_injection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_abi, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allow_and_deny_lists, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
