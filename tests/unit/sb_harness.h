/* sb_harness.h — running tests/helpers/sb_run (one attack under one policy,
 * in a forked child; the parent prints the classified outcome) and reading
 * its OUTCOME line; the fresh directory each case writes into. Shared by
 * the hostile corpus and the least-privilege tests. Include after the
 * system headers and cmocka. */
#ifndef FITRUN_TEST_SB_HARNESS_H
#define FITRUN_TEST_SB_HARNESS_H

#include "fitrun/sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
#define FR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FR_ASAN 1
#endif
#endif
/* An exec'd ASan program reads /proc/self/maps at start-up, which Landlock
 * keeps from every job: in the sanitizer build, cases that exec sb_run
 * under Landlock are left out. */
#ifdef FR_ASAN
#define ASAN_EXEC_UNDER_LANDLOCK_BREAKS 1
#else
#define ASAN_EXEC_UNDER_LANDLOCK_BREAKS 0
#endif

#define SB_RUN FITRUN_BUILD "/tests/helpers/sb_run"

struct sb {
    char out[16384]; /* everything sb_run printed (the job's stdout too) */
    int exit_status; /* sb_run's own wait status */
    char status[32], timeout[16], syscall[40], signal[16];
    int exit;
    unsigned long long cpu_ms;
    long maxrss_kb;
};

static char g_tmp[PATH_MAX]; /* a fresh directory per test */

/* The running kernel's Landlock ABI (0 = none): cases that need it say so. */
static inline int landlock_abi(void)
{
    return fr_landlock_abi(NULL);
}

static inline int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/fitrun-test-sandbox-XXXXXX");
    return mkdtemp(g_tmp) ? 0 : -1;
}

/* Recursive: cases make subdirectories, and files owned by slot uids. */
static inline int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static inline void tmp_path(char *buf, size_t n, const char *name)
{
    if ((size_t)snprintf(buf, n, "%s/%s", g_tmp, name) >= n)
        fail_msg("path too long: %s/%s", g_tmp, name);
}

/* No process runs the sb_run binary any more (the fork bomb's children,
 * a relay, a job...). */
/* Every sb_run a case starts carries FITRUN_SB_OWNER=<this test's pid> in
 * its environment (exec'd jobs inherit it), so that test binaries running
 * side by side (ctest -j) only look at their own. */
#define SB_OWNER_VAR "FITRUN_SB_OWNER="

static inline bool owned_by_us(const char *pid)
{
    char path[300], env[16384], want[64];
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    snprintf(want, sizeof want, SB_OWNER_VAR "%d", (int)getpid());
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, env, sizeof env - 1) : -1;
    if (fd >= 0)
        close(fd);
    for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1) {
        env[n] = '\0';
        if (!strcmp(env + i, want))
            return true;
    }
    return false;
}

static inline void assert_no_leftover(void)
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
        if (strcmp(exe, self) == 0 && owned_by_us(e->d_name))
            fail_msg("process %s (sb_run) is still running", e->d_name);
    }
    closedir(d);
}

/* Run sb_run with argv (NULL-terminated, without argv[0]) and parse. */
static inline void sb_exec(struct sb *r, const char *const *args)
{
    const char *argv[16] = {SB_RUN};
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
        char owner[64];
        snprintf(owner, sizeof owner, "%d", (int)getppid());
        setenv("FITRUN_SB_OWNER", owner, 1);
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
    if (!line ||
        sscanf(line, "OUTCOME status=%31s timeout=%15s syscall=%39s signal=%15s exit=%d cpu_ms=%llu maxrss_kb=%ld",
               r->status, r->timeout, r->syscall, r->signal, &r->exit, &r->cpu_ms, &r->maxrss_kb) != 7)
        fail_msg("no OUTCOME line in:\n%s", r->out);
    assert_no_leftover();
}

#define SB(r, ...) sb_exec((r), (const char *const[]){__VA_ARGS__, NULL})

static inline void expect(const struct sb *r, const char *status, const char *syscall, const char *signal)
{
    if (strcmp(r->status, status) || strcmp(r->syscall, syscall) || strcmp(r->signal, signal))
        fail_msg("expected status=%s syscall=%s signal=%s, got:\n%s", status, syscall, signal, r->out);
}

/* Through the relay (fr_policy_apply with a report pipe): the relay dies
 * of SIGSYS after the violation; through fr_policy_apply_notify (--notify:
 * sb_run's parent supervises, as the Python worker does) the supervisor
 * kills the child: SIGKILL. The syscall name is the assertion either way. */
static inline void expect_violation_as(const struct sb *r, const char *syscall, const char *signal)
{
    expect(r, "violation", syscall, signal);
    /* The job was stopped at the call: nothing it meant to print after. */
    if (strstr(r->out, "done:"))
        fail_msg("the attack reports success:\n%s", r->out);
}

static inline void expect_violation(const struct sb *r, const char *syscall)
{
    expect_violation_as(r, syscall, "SIGSYS");
}

static inline void expect_notified(const struct sb *r, const char *syscall)
{
    expect_violation_as(r, syscall, "SIGKILL");
}

static inline bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

#endif
