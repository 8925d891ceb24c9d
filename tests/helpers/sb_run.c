/* sb_run — run one hostile action under a sandbox policy and print the
 * outcome. The hostile corpus (tests/unit/test_sandbox_hostile.c) drives it.
 *
 *   sb_run [options] POLICY ATTACK [ARG...]
 *
 * POLICY is sandbox text ("preset=python;cpu_time=1s", fitrun/sandbox_keys.h). The
 * parent builds the policy, forks; the child applies it and performs
 * ATTACK in-process (or, with --exec, execs `sb_run --attack ATTACK ARG...`
 * so the action happens in a freshly exec'd program, the exec preset's
 * case). The parent waits (killing at the wall limit), reads the report and
 * prints one line:
 *
 *   OUTCOME status=violation timeout=- syscall=socket signal=SIGSYS exit=-1 cpu_ms=3 maxrss_kb=2100
 *
 * Options: --exec, --wall MS (default 20000), --no-report, --stdout FILE
 * (the child's stdout, opened before apply), --uid N (switch the child to
 * uid/gid N before apply), --slot K (fr_policy_apply_slot / _notify with
 * slot K: the policy's per-slot identity), --cwd DIR (the child's working
 * directory), --notify (fr_policy_apply_notify: sb_run's parent is the
 * supervisor, as the Python worker is; the violation comes from
 * fr_notify_read, never from a pipe the child could write).
 *
 * Job protocol of this harness: an attack that sees an allocation fail
 * exits with SB_EXIT_NOMEM, which the parent passes as memory_hint. Every
 * attack prints what it managed to do on stdout ("done: ..."), or the
 * errno name of its failure ("failed: EPERM"). Dangerous actions are
 * bounded (the fork "bomb" forks 8 times, the memory bomb stops at 4 GiB)
 * so that a broken sandbox cannot take the shared machine down. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/sandbox.h"
#include "fitrun/sandbox_keys.h"
#include "fitrun/verdict.h"
#include "fitrun/common.h"

#define SB_EXIT_NOMEM 86

static int g_prepared_fd = -1; /* a descriptor opened before apply (connect) */

static int done(const char *what)
{
    printf("done: %s\n", what);
    fflush(stdout);
    return 0;
}

static int failed(void)
{
    int e = errno;
    printf("failed: %s\n", strerrorname_np(e) ? strerrorname_np(e) : "?");
    fflush(stdout);
    return 1;
}

/* ---- attacks (each returns the exit code) -------------------------------------- */

static int a_socket(char **argv)
{
    (void)argv;
    return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? done("socket") : failed();
}

static int a_connect(char **argv)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[0]))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(g_prepared_fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? done("connect") : failed();
}

static int a_exec_sh(char **argv)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "echo pwned > '%s'", argv[0]);
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    return failed();
}

static int a_forkbomb(char **argv)
{
    (void)argv;
    int n = 0, fork_errno = 0;
    for (int i = 0; i < 8; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            sleep(1);
            _exit(0);
        }
        if (pid > 0)
            n++;
        else if (!fork_errno)
            fork_errno = errno;
    }
    while (wait(NULL) > 0) {
    }
    printf("forks: %d of 8\n", n);
    errno = fork_errno;
    return n ? done("forked") : failed();
}

static void *noop(void *arg)
{
    return arg;
}

static int a_thread(char **argv)
{
    (void)argv;
    pthread_t t;
    int rc = pthread_create(&t, NULL, noop, NULL);
    if (rc) {
        errno = rc;
        return failed();
    }
    pthread_join(t, NULL);
    return done("thread");
}

static int a_ptrace(char **argv)
{
    (void)argv;
    return ptrace(PTRACE_ATTACH, getppid(), NULL, NULL) == 0 ? done("ptrace") : failed();
}

static int a_mount(char **argv)
{
    return mount("sb_run", argv[0], "tmpfs", 0, NULL) == 0 ? done("mount") : failed();
}

static int a_unshare(char **argv)
{
    (void)argv;
    return unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 ? done("unshare") : failed();
}

static int a_open_write(char **argv)
{
    int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return failed();
    if (write(fd, "pwned\n", 6) != 6)
        return failed();
    return done("open_write");
}

static int a_unlink(char **argv)
{
    return unlink(argv[0]) == 0 ? done("unlink") : failed();
}

static int a_chmod(char **argv)
{
    return chmod(argv[0], 0777) == 0 ? done("chmod") : failed();
}

static int a_kill_parent(char **argv)
{
    (void)argv;
    return kill(getppid(), SIGKILL) == 0 ? done("kill_parent") : failed();
}

static int a_kill_group(char **argv)
{
    (void)argv;
    return kill(0, SIGTERM) == 0 ? done("kill_group") : failed();
}

static int a_raise_rlimit(char **argv)
{
    (void)argv;
    struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
    return setrlimit(RLIMIT_CPU, &r) == 0 ? done("raise_rlimit") : failed();
}

static int a_membomb(char **argv)
{
    (void)argv;
    size_t total = 0;
    const size_t chunk = 16u << 20;
    while (total < (4ull << 30)) {
        char *p = malloc(chunk);
        if (!p) {
            printf("failed: ENOMEM after %zu MiB\n", total >> 20);
            fflush(stdout);
            return SB_EXIT_NOMEM;
        }
        memset(p, 0x5a, chunk);
        total += chunk;
    }
    return done("membomb");
}

static int a_cpuspin(char **argv)
{
    (void)argv;
    volatile uint64_t x = 0;
    for (;;)
        x++;
    return 0;
}

static int a_fsize(char **argv)
{
    (void)argv;
    char block[4096];
    memset(block, 'x', sizeof block);
    for (int i = 0; i < 256; i++) /* 1 MiB */
        if (write(STDOUT_FILENO, block, sizeof block) != (ssize_t)sizeof block)
            return failed();
    return done("fsize");
}

static volatile int g_depth_limit = 1 << 30; /* volatile: the compiler must not prove the recursion infinite */

static int recurse(int depth)
{
    volatile char pad[4096];
    pad[0] = (char)depth;
    if (depth >= g_depth_limit)
        return pad[0];
    return recurse(depth + 1) + pad[0];
}

static int a_stackoverflow(char **argv)
{
    (void)argv;
    return recurse(0);
}

static int a_rawsocket(char **argv)
{
    (void)argv;
    return socket(AF_INET, SOCK_RAW, IPPROTO_ICMP) >= 0 ? done("rawsocket") : failed();
}

static void on_sigsys(int sig)
{
    (void)sig;
    static const char msg[] = "done: own SIGSYS handler ran\n";
    (void)!write(STDOUT_FILENO, msg, sizeof msg - 1);
    _exit(0);
}

static int a_sigsys_handler(char **argv)
{
    (void)argv;
    struct sigaction sa = {.sa_handler = on_sigsys};
    if (sigaction(SIGSYS, &sa, NULL) < 0)
        return failed();
    socket(AF_INET, SOCK_STREAM, 0); /* would now land in our handler */
    return done("sigsys_handler");
}

static int a_block_sigsys(char **argv)
{
    (void)argv;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    sigprocmask(SIG_BLOCK, &set, NULL);
    return socket(AF_INET, SOCK_STREAM, 0) >= 0 ? done("socket with SIGSYS blocked") : failed();
}

static int a_forge_report(char **argv)
{
    /* A record shaped like the real one would be; the parent must ignore
     * it because we exit normally. */
    int fd = atoi(argv[0]);
    uint32_t rec[4] = {0x46525631u, 0, 41, 0};
    (void)!write(fd, rec, sizeof rec);
    return done("forged");
}

static int a_fcntl_setown(char **argv)
{
    (void)argv;
    return fcntl(STDOUT_FILENO, F_SETOWN, getppid()) == 0 ? done("F_SETOWN") : failed();
}

static int a_tiocsti(char **argv)
{
    (void)argv;
    char c = 'x';
    return ioctl(STDIN_FILENO, TIOCSTI, &c) == 0 ? done("TIOCSTI") : failed();
}

static int a_int80(char **argv)
{
    (void)argv;
#if defined(__x86_64__)
    long ret;
    /* A kernel without the 32-bit entry point raises SIGSEGV: the kernel's
     * default action, not the sanitizer's handler (which aborts). */
    signal(SIGSEGV, SIG_DFL);
    /* i386 getpid (20) through the 32-bit entry point. */
    __asm__ volatile("int $0x80" : "=a"(ret) : "0"(20L) : "memory");
    return ret > 0 ? done("int 0x80") : failed();
#else
    errno = ENOSYS;
    return failed();
#endif
}

static int a_abort(char **argv)
{
    (void)argv;
    abort();
}

static int a_read_file(char **argv)
{
    char buf[64];
    int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof buf) < 0)
        return failed();
    close(fd);
    return done("read");
}

/* Read the first bytes of a file given relative to the working directory. */
static int a_read_rel(char **argv)
{
    return a_read_file(argv);
}

/* The answer-key route: the parent's command line and environment. */
static int a_proc_parent(char **argv)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)getppid(), argv[0]);
    char *args[] = {path};
    return a_read_file(args);
}

static int a_mem_pid(char **argv)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/mem", argv[0]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return failed();
    close(fd);
    return done("open mem");
}

static int a_kill_pid(char **argv)
{
    return kill((pid_t)atoi(argv[0]), SIGKILL) == 0 ? done("kill") : failed();
}

static int a_ptrace_pid(char **argv)
{
    return ptrace(PTRACE_ATTACH, (pid_t)atoi(argv[0]), NULL, NULL) == 0 ? done("ptrace") : failed();
}

/* Write our pid to stdout, then wait to be killed: a victim for the others. */
static int a_linger(char **argv)
{
    (void)argv;
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    while (pause() < 0 && errno == EINTR) {
    }
    return 0;
}

/* A forged verdict: a well-formed relay record on a descriptor (as the old
 * report protocol had it), then SIGSYS raised by ourselves. */
static int a_forge_sigsys(char **argv)
{
    int fd = atoi(argv[0]);
    uint32_t rec[4] = {0x46525632u, 0xc000003eu, 101 /* ptrace */, 0};
    rec[3] = ~rec[0] ^ rec[1] ^ rec[2];
    (void)!write(fd, rec, sizeof rec);
    raise(SIGSYS);
    return done("survived SIGSYS");
}

static int a_raise_nproc(char **argv)
{
    (void)argv;
    struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
    return setrlimit(RLIMIT_NPROC, &r) == 0 ? done("raise_nproc") : failed();
}

/* arch_prctl: an XSTATE permission request (AMX users), and ARCH_SET_FS. */
static int a_xcomp(char **argv)
{
    (void)argv;
#if defined(__x86_64__)
    unsigned long supp = 0;
    if (syscall(SYS_arch_prctl, 0x1021 /* ARCH_GET_XCOMP_SUPP */, &supp) < 0)
        return failed();
    /* 18 = XFEATURE_XTILEDATA: EINVAL where there is no AMX, which is an answer too. */
    long r = syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18);
    printf("req_xcomp_perm=%ld errno=%s\n", r, r < 0 ? strerrorname_np(errno) : "-");
    return done("xcomp");
#else
    errno = ENOSYS;
    return failed();
#endif
}

static int a_set_fs(char **argv)
{
    (void)argv;
#if defined(__x86_64__)
    unsigned long fs = 0;
    if (syscall(SYS_arch_prctl, 0x1003 /* ARCH_GET_FS */, &fs) < 0)
        return failed();
    return syscall(SYS_arch_prctl, 0x1002 /* ARCH_SET_FS */, fs) == 0 ? done("set_fs") : failed();
#else
    errno = ENOSYS;
    return failed();
#endif
}

static int a_ids(char **argv)
{
    (void)argv;
    printf("uid=%d gid=%d euid=%d groups=%d\n", (int)getuid(), (int)getgid(), (int)geteuid(), getgroups(0, NULL));
    return done("ids");
}

/* The capability sets, as the kernel reports them. */
static int a_caps(char **argv)
{
    (void)argv;
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (n <= 0)
        return failed();
    buf[n] = '\0';
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, "Cap", 3))
            printf("%s\n", line);
    return done("caps");
}

/* Become someone else: root again, or (as root) another slot's uid. */
static int a_setuid0(char **argv)
{
    (void)argv;
    if (setgid(getgid()) < 0 || setuid(getuid()) < 0) /* busybox's privilege drop: must work */
        return failed();
    uid_t other = getuid() == 0 ? 61701 : 0;
    if (setuid(other) == 0 || setresuid(other, other, other) == 0 || setresgid(other, other, other) == 0)
        return done("setuid");
    return setgroups(0, NULL) == 0 ? done("setgroups") : failed();
}

static int a_hello(char **argv)
{
    (void)argv;
    return done("hello");
}

static int a_exit3(char **argv)
{
    (void)argv;
    return 3;
}

struct attack {
    const char *name;
    int nargs;
    int (*fn)(char **argv);
};

static const struct attack g_attacks[] = {
    {"socket", 0, a_socket},
    {"connect", 1, a_connect},
    {"exec_sh", 1, a_exec_sh},
    {"forkbomb", 0, a_forkbomb},
    {"thread", 0, a_thread},
    {"ptrace", 0, a_ptrace},
    {"mount", 1, a_mount},
    {"unshare", 0, a_unshare},
    {"open_write", 1, a_open_write},
    {"unlink", 1, a_unlink},
    {"chmod", 1, a_chmod},
    {"kill_parent", 0, a_kill_parent},
    {"kill_group", 0, a_kill_group},
    {"raise_rlimit", 0, a_raise_rlimit},
    {"membomb", 0, a_membomb},
    {"cpuspin", 0, a_cpuspin},
    {"fsize", 0, a_fsize},
    {"stackoverflow", 0, a_stackoverflow},
    {"rawsocket", 0, a_rawsocket},
    {"sigsys_handler", 0, a_sigsys_handler},
    {"block_sigsys", 0, a_block_sigsys},
    {"forge_report", 1, a_forge_report},
    {"fcntl_setown", 0, a_fcntl_setown},
    {"tiocsti", 0, a_tiocsti},
    {"int80", 0, a_int80},
    {"abort", 0, a_abort},
    {"read_file", 1, a_read_file},
    {"hello", 0, a_hello},
    {"exit3", 0, a_exit3},
    {"read_rel", 1, a_read_rel},
    {"proc_parent", 1, a_proc_parent},
    {"mem_pid", 1, a_mem_pid},
    {"kill_pid", 1, a_kill_pid},
    {"ptrace_pid", 1, a_ptrace_pid},
    {"linger", 0, a_linger},
    {"forge_sigsys", 1, a_forge_sigsys},
    {"raise_nproc", 0, a_raise_nproc},
    {"xcomp", 0, a_xcomp},
    {"set_fs", 0, a_set_fs},
    {"ids", 0, a_ids},
    {"caps", 0, a_caps},
    {"setuid0", 0, a_setuid0},
};

static const struct attack *find_attack(const char *name)
{
    for (size_t i = 0; i < sizeof g_attacks / sizeof g_attacks[0]; i++)
        if (strcmp(g_attacks[i].name, name) == 0)
            return &g_attacks[i];
    fr_die(2, "sb_run: unknown attack '%s'", name);
}

/* Trusted set-up in the child before apply (the leaked descriptor case). */
static void prepare(const char *name)
{
    if (strcmp(name, "connect") == 0) {
        g_prepared_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (g_prepared_fd < 0)
            fr_die_errno(2, "sb_run: socket (before apply)");
    }
}

/* ---- parent ------------------------------------------------------------------------ */

struct opts {
    bool exec, no_report, notify;
    uint64_t wall_ms;
    const char *stdout_path;
    const char *cwd;
    long uid;
    int slot;
    const char *policy;
    char **attack_argv; /* ATTACK ARG... */
};

static void child(const struct opts *o, const struct fr_policy *pol, int report_w, const char *self)
{
    if (o->cwd && chdir(o->cwd) < 0)
        fr_die_errno(125, "sb_run: chdir %s", o->cwd);
    if (o->stdout_path) {
        int fd = open(o->stdout_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
            fr_die_errno(125, "sb_run: %s", o->stdout_path);
    }
    if (o->uid >= 0 && (setresgid((gid_t)o->uid, (gid_t)o->uid, (gid_t)o->uid) < 0 ||
                        setresuid((uid_t)o->uid, (uid_t)o->uid, (uid_t)o->uid) < 0))
        fr_die_errno(125, "sb_run: switching to uid %ld", o->uid);
    const struct attack *a = find_attack(o->attack_argv[0]);
    if (!o->exec)
        prepare(a->name);
    fflush(NULL);
    int rc = o->notify ? fr_policy_apply_notify(pol, report_w, o->slot)
                       : fr_policy_apply_slot(pol, o->no_report ? -1 : report_w, o->slot);
    if (rc < 0) {
        fprintf(stderr, "sb_run: fr_policy_apply: %s\n", strerror(-rc));
        _exit(125);
    }
    if (o->exec) {
        /* In the ASan build the exec'd sb_run's sanitizer runtime lowers
         * RLIMIT_CORE at start-up (disable_coredump) and LeakSanitizer
         * spawns a tracer thread at exit: a prlimit64 and a clone the exec
         * preset denies like any other. Ignored without ASan. */
        const char *asan = getenv("ASAN_OPTIONS");
        char opts[1024];
        snprintf(opts, sizeof opts, "%s%sdisable_coredump=0:detect_leaks=0", asan ? asan : "",
                 asan && *asan ? ":" : "");
        setenv("ASAN_OPTIONS", opts, 1);
        char *argv[8] = {(char *)self, "--attack"};
        for (int i = 0; i < 5 && o->attack_argv[i]; i++)
            argv[2 + i] = o->attack_argv[i];
        execv(self, argv);
        _exit(127);
    }
    _exit(a->fn(o->attack_argv + 1));
}

static uint64_t cpu_ms_of(const char *policy)
{
    const char *p = strstr(policy, "cpu_time=");
    uint64_t ms = 0;
    if (p) {
        char buf[64];
        size_t n = strcspn(p + 9, ";");
        snprintf(buf, sizeof buf, "%.*s", (int)(n < 63 ? n : 63), p + 9);
        if (fr_parse_duration_ms(buf, &ms) < 0)
            ms = 0;
    }
    return ms;
}

static int run(const struct opts *o, const char *self)
{
    char err[256];
    struct fr_policy *pol;
    if (fr_sandbox_text_build(o->policy, NULL, &pol, err, sizeof err) < 0)
        fr_die(2, "sb_run: %s", err);
    int rep[2];
    if (o->notify ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rep) < 0 : pipe2(rep, O_CLOEXEC) < 0)
        fr_die_errno(2, "sb_run: pipe2/socketpair");
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        fr_die_errno(2, "sb_run: fork");
    if (pid == 0) {
        close(rep[0]);
        child(o, pol, rep[1], self);
    }
    close(rep[1]);
    int pidfd = pidfd_open(pid, 0);
    if (pidfd < 0)
        fr_die_errno(2, "sb_run: pidfd_open");
    bool wall = false;
    int violation = -1, listener = -1;
    if (o->notify) {
        listener = fr_notify_receive(rep[0]);
        if (listener < 0 && listener != -EPIPE && listener != -ENODATA)
            fr_die(2, "sb_run: fr_notify_receive: %s", strerror(-listener));
    }
    uint64_t deadline = fr_now_ns() / 1000000u + o->wall_ms;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = listener, .events = POLLIN}};
        uint64_t now = fr_now_ns() / 1000000u;
        int pr = poll(pfd, 2, now >= deadline ? 0 : (int)(deadline - now));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0) {
            wall = true;
            kill(pid, SIGKILL);
            break;
        }
        if (pfd[1].revents & POLLIN) {
            int nr, who;
            if (fr_notify_read(listener, &nr, &who) == 0 && violation < 0)
                violation = nr;
            kill(pid, SIGKILL); /* the supervisor's half of the protocol */
        }
        if (pfd[0].revents)
            break;
    }
    int status;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR)
            fr_die_errno(2, "sb_run: wait4");
    struct fr_classify_in in = {
        .wstatus = status,
        .ru = &ru,
        .cpu_limit_ms = cpu_ms_of(o->policy),
        .wall_expired = wall,
        .violation_nr = o->notify ? violation : fr_report_read(rep[0]),
        .memory_hint = WIFEXITED(status) && WEXITSTATUS(status) == SB_EXIT_NOMEM,
    };
    struct fr_outcome out;
    fr_classify(&in, &out);
    printf("OUTCOME status=%s timeout=%s syscall=%s signal=%s exit=%d cpu_ms=%llu maxrss_kb=%ld\n",
           fr_status_name(out.status), out.timeout ? fr_timeout_kind_name(out.timeout) : "-",
           out.syscall[0] ? out.syscall : "-", out.signal_name[0] ? out.signal_name : "-", out.exit_code,
           (unsigned long long)((uint64_t)ru.ru_utime.tv_sec * 1000 + (uint64_t)ru.ru_utime.tv_usec / 1000 +
                                (uint64_t)ru.ru_stime.tv_sec * 1000 + (uint64_t)ru.ru_stime.tv_usec / 1000),
           ru.ru_maxrss);
    fr_policy_free(pol);
    close(rep[0]);
    close(pidfd);
    if (listener >= 0)
        close(listener);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {.wall_ms = 20000, .uid = -1, .slot = -1};
    int i = 1;
    if (argc > 2 && strcmp(argv[1], "--attack") == 0) {
        const struct attack *a = find_attack(argv[2]);
        if (argc - 3 < a->nargs)
            fr_die(2, "sb_run: attack %s needs %d argument(s)", a->name, a->nargs);
        return a->fn(argv + 3);
    }
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--exec") == 0)
            o.exec = true;
        else if (strcmp(argv[i], "--no-report") == 0)
            o.no_report = true;
        else if (strcmp(argv[i], "--wall") == 0 && i + 1 < argc)
            o.wall_ms = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--stdout") == 0 && i + 1 < argc)
            o.stdout_path = argv[++i];
        else if (strcmp(argv[i], "--uid") == 0 && i + 1 < argc)
            o.uid = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--slot") == 0 && i + 1 < argc)
            o.slot = (int)strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--cwd") == 0 && i + 1 < argc)
            o.cwd = argv[++i];
        else if (strcmp(argv[i], "--notify") == 0)
            o.notify = true;
        else
            fr_die(2, "sb_run: unknown option %s", argv[i]);
    }
    if (argc - i < 2)
        fr_die(2, "usage: sb_run [--exec] [--notify] [--wall MS] [--no-report] [--stdout FILE] [--uid N] [--slot K] "
                  "[--cwd DIR] POLICY ATTACK [ARG...]");
    o.policy = argv[i];
    o.attack_argv = argv + i + 1;
    const struct attack *a = find_attack(o.attack_argv[0]);
    if (argc - i - 2 < a->nargs)
        fr_die(2, "sb_run: attack %s needs %d argument(s)", a->name, a->nargs);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0)
        fr_die_errno(2, "sb_run: readlink /proc/self/exe");
    self[n] = '\0';
    return run(&o, self);
}
