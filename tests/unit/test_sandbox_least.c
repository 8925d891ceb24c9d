/* test_sandbox_least.c — least privilege: Landlock (what a job may read and
 * write), per-slot identities (what one slot can do to another), and the
 * notify supervisor protocol the Python worker uses (fr_policy_apply_notify,
 * fr_notify_receive, fr_notify_read), including its supervisor's death.
 *
 * Each attack runs in sb_run's child (tests/helpers/sb_run.c) and each case
 * asserts the exact outcome and that the effect is absent. Cases that need
 * Landlock or root say so and are skipped without. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/sandbox_keys.h"
#include "sb_harness.h"

#define UID_BASE "61700" /* away from the default 60000: a concurrent fitrun run keeps its uids */

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

/* g_tmp with a world-readable file "public", a root-only "secret" and a
 * world-writable directory "out" (slot uids must be able to get in). */
static int setup_tree(void **state)
{
    if (setup(state) < 0 || chmod(g_tmp, 0755) < 0)
        return -1;
    char p[PATH_MAX];
    tmp_path(p, sizeof p, "public");
    write_file(p, "public\n", 0644);
    tmp_path(p, sizeof p, "secret");
    write_file(p, "secret\n", 0600);
    tmp_path(p, sizeof p, "out");
    return mkdir(p, 0777) == 0 && chmod(p, 01777) == 0 ? 0 : -1;
}

static void need_landlock(int abi)
{
    if (landlock_abi() < abi)
        skip();
}

static void need_root(void)
{
    if (geteuid() != 0)
        skip();
}

static void expect_denied(const struct sb *r, const char *errname)
{
    expect(r, "error", "-", "-");
    char want[64];
    snprintf(want, sizeof want, "failed: %s", errname);
    if (!strstr(r->out, want) || strstr(r->out, "done:"))
        fail_msg("expected '%s', got:\n%s", want, r->out);
}

static void expect_done(const struct sb *r)
{
    expect(r, "ok", "-", "-");
    assert_non_null(strstr(r->out, "done:"));
}

/* ---- Landlock: reading ------------------------------------------------------------------ */

static void test_reads_confined(void **state)
{
    (void)state;
    need_landlock(1);
    char pub[PATH_MAX], secret[PATH_MAX], kv[PATH_MAX + 64];
    tmp_path(pub, sizeof pub, "public");
    tmp_path(secret, sizeof secret, "secret");
    struct sb r;
    /* The python base: libraries, not /etc, not the caller's files. */
    SB(&r, "--notify", "preset=python;fs=libs", "read_file", "/etc/shadow");
    expect_denied(&r, "EACCES");
    SB(&r, "--notify", "preset=python;fs=libs", "read_file", "/etc/passwd");
    expect_denied(&r, "EACCES");
    SB(&r, "--notify", "preset=python;fs=libs", "read_file", pub);
    expect_denied(&r, "EACCES");
    SB(&r, "--notify", "preset=python;fs=libs", "read_file", "/etc/ld.so.cache");
    expect_done(&r);
    SB(&r, "--notify", "preset=python;fs=libs", "read_file", "/dev/urandom");
    expect_done(&r);
    /* Relative to an inherited working directory: the same answer. */
    SB(&r, "--notify", "--cwd", g_tmp, "preset=python;fs=libs", "read_rel", "public");
    expect_denied(&r, "EACCES");
    /* The answer-key route: the parent's command line and environment. */
    SB(&r, "--notify", "preset=python;fs=libs", "proc_parent", "cmdline");
    expect_denied(&r, "EACCES");
    SB(&r, "--notify", "preset=python;fs=libs", "proc_parent", "environ");
    expect_denied(&r, "EACCES");
    /* read = adds a tree; a 0600 file in it stays the owner's. */
    snprintf(kv, sizeof kv, "preset=python;fs=libs;read=%s", g_tmp);
    SB(&r, "--notify", kv, "read_file", pub);
    expect_done(&r);
    SB(&r, "--notify", "--cwd", g_tmp, kv, "read_rel", "public");
    expect_done(&r);
    if (geteuid() == 0) {
        snprintf(kv, sizeof kv, "preset=python;fs=libs;user=slot;uid_base=" UID_BASE ";read=%s", g_tmp);
        SB(&r, "--notify", "--slot", "0", kv, "read_file", secret);
        expect_denied(&r, "EACCES");
        SB(&r, "--notify", "--slot", "0", kv, "read_file", pub);
        expect_done(&r);
    }
    /* The exec base: programs and their start-up files, still no secrets. */
    SB(&r, "--notify", "preset=python;fs=system", "read_file", "/usr/bin/env");
    expect_done(&r);
    SB(&r, "--notify", "preset=python;fs=system", "read_file", "/etc/passwd");
    expect_denied(&r, "EACCES");
    SB(&r, "--notify", "preset=python;fs=system", "read_file", "/etc/shadow");
    expect_denied(&r, "EACCES");
    /* Control: without Landlock (and as root) the same read succeeds. */
    if (geteuid() == 0) {
        SB(&r, "--notify", "preset=python", "read_file", secret);
        expect_done(&r);
    }
}

/* ---- Landlock: writing ------------------------------------------------------------------ */

static void test_writes_confined(void **state)
{
    (void)state;
    need_landlock(1);
    char out[PATH_MAX], inside[PATH_MAX], outside[PATH_MAX], kv[PATH_MAX + 64];
    tmp_path(out, sizeof out, "out");
    tmp_path(inside, sizeof inside, "out/written");
    tmp_path(outside, sizeof outside, "written");
    snprintf(kv, sizeof kv, "preset=python;fs=libs;write=%s", out);
    struct sb r;
    if (landlock_abi() >= 3) {
        SB(&r, "--notify", kv, "open_write", inside);
        expect_done(&r);
        assert_true(exists(inside));
        SB(&r, "--notify", kv, "open_write", outside);
        expect_denied(&r, "EACCES");
        assert_false(exists(outside));
        SB(&r, "--notify", "preset=python;fs=libs", "open_write", "/dev/null");
        expect_done(&r);
        /* The same through the exec preset's relay, in an exec'd program. */
        if (ASAN_EXEC_UNDER_LANDLOCK_BREAKS)
            return;
        unlink(inside);
        snprintf(kv, sizeof kv, "preset=exec;fs=system;read=%s;write=%s", FITRUN_BUILD, out);
        SB(&r, "--exec", kv, "open_write", inside);
        expect_done(&r);
        assert_true(exists(inside));
        SB(&r, "--exec", kv, "open_write", outside);
        expect_denied(&r, "EACCES");
        assert_false(exists(outside));
    } else {
        /* ABI 1-2 cannot rule truncation: an O_TRUNC open stays denied. */
        SB(&r, "--notify", kv, "open_write", inside);
        expect_notified(&r, "openat");
        assert_false(exists(inside));
    }
    /* Without write = nothing is writable; preset none has no filter, so
     * this is Landlock alone. */
    SB(&r, "--notify", "preset=none;fs=libs", "open_write", outside);
    expect_denied(&r, "EACCES");
    assert_false(exists(outside));
}

/* ---- building: paths, errors, may_read ------------------------------------------------------- */

static void test_paths_checked(void **state)
{
    (void)state;
    char err[512];
    struct fr_policy *p = NULL;
    assert_int_equal(fr_sandbox_text_build("preset=python;fs=libs;read=/nonexistent-fitrun", NULL, &p, err, sizeof err),
                     -1);
    assert_null(p);
    assert_string_equal(err, "read path '/nonexistent-fitrun': No such file or directory");
    /* Checked even where Landlock is off or absent: a typo is a typo (the
     * library's own check, below the profile's). */
    const char *rel[] = {"relative/dir", NULL};
    struct fr_policy_spec spec = {.preset = FR_PRESET_PYTHON, .write_paths = rel};
    assert_int_equal(fr_policy_build(&spec, &p, err, sizeof err), -1);
    assert_string_equal(err, "write path 'relative/dir' is not absolute");
    /* "PATH?" is optional: skipped where it does not exist. */
    assert_int_equal(
        fr_sandbox_text_build("preset=python;fs=libs;read=/nonexistent-fitrun?,/usr/lib?", NULL, &p, err, sizeof err),
        0);
    fr_policy_free(p);
}

static void test_build_paths_and_may_read(void **state)
{
    (void)state;
    need_landlock(1);
    char err[512], pub[PATH_MAX], weird[PATH_MAX];
    tmp_path(pub, sizeof pub, "public");
    /* A path with a comma and a space cannot go through kv text. */
    tmp_path(weird, sizeof weird, "a, b");
    assert_int_equal(mkdir(weird, 0755), 0);
    const char *reads[] = {weird, NULL};
    struct fr_policy *p = NULL;
    if (fr_sandbox_text_build("preset=python;fs=libs", reads, &p, err, sizeof err) < 0)
        fail_msg("%s", err);
    assert_true(fr_policy_may_read(p, weird));
    assert_true(fr_policy_may_read(p, "/usr/lib"));
    assert_false(fr_policy_may_read(p, pub));
    assert_false(fr_policy_may_read(p, "/etc/shadow"));
    assert_false(fr_policy_may_read(p, "/usr/bin/env")); /* libs, not system */
    struct fr_policy_info in;
    fr_policy_info(p, &in);
    assert_true(in.landlock);
    assert_int_equal(in.landlock_abi, landlock_abi());
    assert_string_equal(in.landlock_why, "");
    assert_string_equal(in.seccomp, "notify");
    char d[512];
    assert_true(fr_policy_describe(p, d, sizeof d) > 0);
    assert_non_null(strstr(d, " landlock=libs(abi "));
    fr_policy_free(p);
    assert_int_equal(fr_sandbox_text_build("preset=exec;fs=system", NULL, &p, err, sizeof err), 0);
    assert_true(fr_policy_may_read(p, "/usr/bin/env"));
    assert_false(fr_policy_may_read(p, "/etc/passwd"));
    fr_policy_free(p);
    assert_int_equal(fr_sandbox_text_build("preset=exec", NULL, &p, err, sizeof err), 0);
    fr_policy_info(p, &in);
    assert_false(in.landlock);
    assert_string_equal(in.landlock_why, "not asked for (fs=off)");
    assert_false(fr_policy_may_read(p, "/usr/bin/env")); /* not confined: not "granted" */
    fr_policy_free(p);
}

/* ---- identity -------------------------------------------------------------------------------- */

static void test_slot_identity(void **state)
{
    (void)state;
    need_root();
    struct sb r;
    SB(&r, "--slot", "1", "preset=python;user=slot;slots=2;uid_base=" UID_BASE, "ids");
    expect_done(&r);
    assert_non_null(strstr(r.out, "uid=61701 gid=61701 euid=61701 groups=0\n"));
    SB(&r, "--notify", "--slot", "0", "preset=python;user=slot;slots=2;uid_base=" UID_BASE, "ids");
    assert_non_null(strstr(r.out, "uid=61700 gid=61700 euid=61700 groups=0\n"));
    SB(&r, "--exec", "--slot", "1", "preset=exec;user=slot;slots=2;uid_base=" UID_BASE, "ids");
    assert_non_null(strstr(r.out, "uid=61701 gid=61701 euid=61701 groups=0\n"));
    /* user=root, or no slot: the caller's identity. */
    SB(&r, "--slot", "1", "preset=python;user=root;slots=2", "ids");
    assert_non_null(strstr(r.out, "uid=0 gid=0 euid=0 "));
    SB(&r, "preset=python;user=slot;slots=2", "ids");
    assert_non_null(strstr(r.out, "uid=0 gid=0 euid=0 "));
    /* A slot outside the range checked against the id maps: apply fails
     * (ERANGE) and sb_run's child exits 125 without running the attack. */
    SB(&r, "--slot", "2", "preset=python;user=slot;slots=2;uid_base=" UID_BASE, "ids");
    expect(&r, "error", "-", "-");
    assert_int_equal(r.exit, 125);
    assert_null(strstr(r.out, "done:"));
}

/* The exec preset lets set*id calls through (busybox drops privileges with
 * them): without CAP_SETUID/SETGID they change nothing. */
static void test_setuid_changes_nothing(void **state)
{
    (void)state;
    need_root();
    struct sb r;
    SB(&r, "--exec", "--slot", "0", "preset=exec;user=slot;uid_base=" UID_BASE, "setuid0");
    expect_denied(&r, "EPERM");
    SB(&r, "--exec", "preset=exec;user=root", "setuid0"); /* uid 0 without capabilities: the same */
    expect_denied(&r, "EPERM");
}

/* keep_caps survives the switch to a slot's uid, in all five sets. */
static void test_keep_caps_after_switch(void **state)
{
    (void)state;
    need_root();
    struct sb r;
    SB(&r, "--slot", "0", "preset=none;user=slot;uid_base=" UID_BASE ";keep_caps=cap_net_raw", "caps");
    expect_done(&r);
    const char *sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (size_t i = 0; i < 5; i++) {
        char want[64];
        snprintf(want, sizeof want, "%s:\t0000000000002000\n", sets[i]);
        if (!strstr(r.out, want))
            fail_msg("no '%s' in:\n%s", want, r.out);
    }
    SB(&r, "--slot", "0", "preset=none;user=slot;uid_base=" UID_BASE ";keep_caps=cap_net_raw", "rawsocket");
    expect_done(&r);
    SB(&r, "--slot", "0", "preset=none;user=slot;uid_base=" UID_BASE, "rawsocket");
    expect_denied(&r, "EPERM");
}

/* The kernel clears PR_SET_PDEATHSIG on a uid change; apply re-arms the
 * caller's, or a slot job would outlive its supervisor. */
static void test_pdeathsig_survives_switch(void **state)
{
    (void)state;
    need_root();
    char err[256];
    struct fr_policy *p;
    assert_int_equal(fr_sandbox_text_build("preset=python;user=slot;uid_base=" UID_BASE, NULL, &p, err, sizeof err), 0);
    int out[2];
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || fr_policy_apply_slot(p, -1, 0) < 0)
            _exit(125);
        int sig = -1;
        prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0);
        int msg[2] = {sig, (int)getuid()};
        (void)!write(out[1], msg, sizeof msg);
        _exit(0);
    }
    close(out[1]);
    int msg[2] = {-1, -1};
    assert_int_equal(read(out[0], msg, sizeof msg), (ssize_t)sizeof msg);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    close(out[0]);
    fr_policy_free(p);
    assert_int_equal(msg[1], 61700);
    assert_int_equal(msg[0], SIGKILL);
}

static pid_t g_victim; /* the victim of the running case, 0 = none */

/* A victim: a job of slot 1 that waits to be killed (a child of ours, not
 * an sb_run: sb_exec checks that no sb_run outlives a case). */
static pid_t start_victim(struct fr_policy **p)
{
    char err[256];
    assert_int_equal(
        fr_sandbox_text_build("preset=python;user=slot;slots=2;uid_base=" UID_BASE, NULL, p, err, sizeof err), 0);
    int ready[2];
    assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Dies with this test process, even if a failed assertion skips the
         * kill below (apply re-arms the signal after the uid switch). */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || fr_policy_apply_slot(*p, -1, 1) < 0)
            _exit(125);
        close(ready[1]);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 0); /* EOF: it applied the policy */
    close(ready[0]);
    return pid;
}

static void test_other_slot_untouchable(void **state)
{
    (void)state;
    need_root();
    struct fr_policy *vp;
    pid_t victim = start_victim(&vp);
    g_victim = victim;
    char pid[16];
    snprintf(pid, sizeof pid, "%d", (int)victim);
    const char *kv = "preset=none;user=slot;slots=2;uid_base=" UID_BASE; /* the kernel alone: no filter */
    struct sb r;
    SB(&r, "--notify", "--slot", "0", kv, "kill_pid", pid);
    expect_denied(&r, "EPERM");
    SB(&r, "--notify", "--slot", "0", kv, "ptrace_pid", pid);
    expect_denied(&r, "EPERM");
    SB(&r, "--notify", "--slot", "0", kv, "mem_pid", pid);
    expect_denied(&r, "EACCES");
    /* Under the exec preset with processes (kill to any pid allowed). */
    SB(&r, "--notify", "--slot", "0", "preset=exec;processes=8;user=slot;slots=2;uid_base=" UID_BASE, "kill_pid", pid);
    expect_denied(&r, "EPERM");
    /* The victim lived through all of it. */
    int st;
    assert_int_equal(waitpid(victim, &st, WNOHANG), 0);
    kill(victim, SIGKILL);
    g_victim = 0;
    assert_int_equal(waitpid(victim, &st, 0), victim);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    fr_policy_free(vp);
}

/* A failed assertion jumps past the kill: the victim dies here then. */
static int teardown_victim(void **state)
{
    if (g_victim > 0) {
        kill(g_victim, SIGKILL);
        waitpid(g_victim, NULL, 0);
        g_victim = 0;
    }
    return teardown(state);
}

/* ---- the notify protocol (what the Python worker does) ----------------------------------------- */

struct child_run {
    pid_t pid;
    int sock; /* supervisor's end */
};

static void notify_fork(const struct fr_policy *p, void (*job)(void), struct child_run *c)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        close(sv[0]);
        if (!job)
            _exit(3); /* dies before applying */
        if (fr_policy_apply_notify(p, sv[1], -1) < 0)
            _exit(125);
        job();
        _exit(0);
    }
    close(sv[1]);
    c->sock = sv[0];
}

static void job_socket(void)
{
    (void)socket(AF_INET, SOCK_STREAM, 0);
}

static void job_nothing(void)
{
}

static void test_notify_api(void **state)
{
    (void)state;
    char err[256];
    struct fr_policy *p;
    assert_int_equal(fr_sandbox_text_build("preset=python", NULL, &p, err, sizeof err), 0);
    struct child_run c;
    notify_fork(p, job_socket, &c);
    int l = fr_notify_receive(c.sock);
    assert_true(l >= 0);
    assert_true(fcntl(l, F_GETFD) & FD_CLOEXEC);
    int nr = -1, who = -1;
    assert_int_equal(fr_notify_read(l, &nr, &who), 0);
    char name[40];
    assert_string_equal(fr_syscall_name(nr, name, sizeof name), "socket");
    assert_int_equal(who, c.pid);
    kill(c.pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(c.pid, &st, 0), c.pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    close(l);
    close(c.sock);
    /* A child that dies before applying: EPIPE. */
    notify_fork(p, NULL, &c);
    assert_int_equal(fr_notify_receive(c.sock), -EPIPE);
    assert_int_equal(waitpid(c.pid, &st, 0), c.pid);
    close(c.sock);
    fr_policy_free(p);
    /* No filter: nothing to supervise. */
    assert_int_equal(fr_sandbox_text_build("preset=none", NULL, &p, err, sizeof err), 0);
    notify_fork(p, job_nothing, &c);
    assert_int_equal(fr_notify_receive(c.sock), -ENODATA);
    assert_int_equal(waitpid(c.pid, &st, 0), c.pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(c.sock);
    fr_policy_free(p);
}

/* The supervisor dies while its child is parked in a denied call: the
 * kernel then answers ENOSYS (the call does not run) and the child's
 * PR_SET_PDEATHSIG kills it. Whatever it retries meanwhile never runs. */
static int g_escape_fd = -1;

static void job_retry_socket(void)
{
    for (;;) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        (void)!write(g_escape_fd, s >= 0 ? "E" : "n", 1);
    }
}

static void test_supervisor_death(void **state)
{
    (void)state;
    char err[256];
    struct fr_policy *p;
    assert_int_equal(fr_sandbox_text_build("preset=python", NULL, &p, err, sizeof err), 0);
    int esc[2], info[2];
    assert_int_equal(pipe2(esc, O_CLOEXEC), 0);
    assert_int_equal(pipe2(info, O_CLOEXEC), 0);
    /* We adopt the orphaned child, so that we can reap it. */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    pid_t worker = fork();
    assert_true(worker >= 0);
    if (worker == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0); /* never outlives a failed case */
        close(esc[0]);
        close(info[0]);
        g_escape_fd = esc[1];
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
            _exit(2);
        pid_t me = getpid();
        pid_t child = fork();
        if (child == 0) {
            close(sv[0]);
            if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != me ||
                fr_policy_apply_notify(p, sv[1], -1) < 0)
                _exit(125);
            job_retry_socket();
        }
        close(sv[1]);
        int l = fr_notify_receive(sv[0]);
        int msg[2] = {(int)child, l};
        (void)!write(info[1], msg, sizeof msg);
        pause(); /* holds the listener, never reads it */
        _exit(0);
    }
    close(esc[1]);
    close(info[1]);
    int msg[2] = {-1, -1};
    assert_int_equal(read(info[0], msg, sizeof msg), (ssize_t)sizeof msg);
    assert_true(msg[1] >= 0);
    usleep(100 * 1000); /* the child is parked in its first socket() */
    kill(worker, SIGKILL);
    int st;
    assert_int_equal(waitpid(worker, &st, 0), worker);
    assert_int_equal(waitpid(msg[0], &st, 0), msg[0]);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    char buf[4096];
    ssize_t n = read(esc[0], buf, sizeof buf);
    if (n > 0 && memchr(buf, 'E', (size_t)n))
        fail_msg("a denied call ran after the supervisor died");
    close(esc[0]);
    close(info[0]);
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
    fr_policy_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_confined, setup_tree, teardown),
        cmocka_unit_test_setup_teardown(test_writes_confined, setup_tree, teardown),
        cmocka_unit_test(test_paths_checked),
        cmocka_unit_test_setup_teardown(test_build_paths_and_may_read, setup_tree, teardown),
        cmocka_unit_test_setup_teardown(test_slot_identity, setup_tree, teardown),
        cmocka_unit_test_setup_teardown(test_keep_caps_after_switch, setup_tree, teardown),
        cmocka_unit_test_setup_teardown(test_setuid_changes_nothing, setup_tree, teardown),
        cmocka_unit_test(test_pdeathsig_survives_switch),
        cmocka_unit_test_setup_teardown(test_other_slot_untouchable, setup_tree, teardown_victim),
        cmocka_unit_test(test_notify_api),
        cmocka_unit_test(test_supervisor_death),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
