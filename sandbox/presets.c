/* presets.c — the syscall allow-lists behind the `python` and `exec` presets.
 *
 * Both presets are allow-lists: anything not listed here is denied (the
 * default action set in filter.c reports it as a violation naming the
 * syscall). The lists were derived from strace of /usr/bin/python3 running
 * numpy matrix work, lazy stdlib imports, exceptions and printing after
 * start-up (python), and of dynamically linked programs from execve to
 * exit_group (exec: python's list + program start-up). docs/sandbox.md
 * repeats the reasoning for users.
 *
 * Argument filters and the 32-bit trap. On x86_64 the kernel truncates
 * `int` arguments to 32 bits, while seccomp sees all 64. A rule written as
 * "allow unless arg == X" can therefore be bypassed by passing X with junk
 * in the upper half. Every argument rule below is written so that the
 * *allowed* set is pinned in all 64 bits (EQ, LT, MASKED_EQ with a mask
 * covering the upper half) — junk in the upper half is denied, never
 * allowed. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>

#include "fitrun/util.h"
#include "internal.h"

enum fr_argcheck {
    ARG_ANY = 0,
    ARG_OPEN_RDONLY,     /* open/openat: the flags argument (index in .arg) asks for no write access */
    ARG_SIGACTION,       /* rt_sigaction: anything but installing a handler for SIGSYS */
    ARG_SIGMASK_NOBLOCK, /* rt_sigprocmask: SIG_UNBLOCK, or no new set (query) */
    ARG_SELF_PID,        /* kill/tkill/tgkill: first argument is the job's own pid */
    ARG_PRLIMIT_GET,     /* prlimit64(0, res, NULL, old): read own limits only */
    ARG_IOCTL_SAFE,      /* ioctl: the terminal/descriptor queries in ioctl_ok[] */
    ARG_FCNTL_SAFE,      /* fcntl: the commands in fcntl_ok[] (no F_SETOWN/F_SETSIG) */
    ARG_PRCTL_SAFE,      /* prctl: the read-only options in prctl_ok[] + PR_SET_NAME */
};

struct fr_rule {
    const char *name;
    enum fr_argcheck check;
    unsigned arg; /* argument index for ARG_OPEN_RDONLY */
};

#define PY (1u << FR_PRESET_PYTHON)
#define EX (1u << FR_PRESET_EXEC)

struct fr_group {
    const char *what;
    unsigned presets;
    const struct fr_rule *rules;
    size_t n;
};

/* Memory management: CPython's allocator (obmalloc arenas via mmap), glibc
 * malloc (brk, mmap for large blocks, madvise/munmap on free), numpy's
 * large buffers (mremap on resize), and the dynamic loader mapping the .so
 * of a lazily imported extension module (mmap PROT_EXEC + mprotect).
 * Executable mappings are allowed: ctypes/cffi closures and the loader need
 * them, and they give no access the job's own code does not already have. */
static const struct fr_rule g_memory[] = {
    { "brk", 0, 0 }, { "mmap", 0, 0 }, { "munmap", 0, 0 }, { "mremap", 0, 0 },
    { "mprotect", 0, 0 }, { "madvise", 0, 0 },
};

/* Synchronisation and scheduling queries: futex for the GIL, locks and
 * OpenBLAS's (single) thread; sched_getaffinity for os.cpu_count-style
 * sizing; sched_yield. Changing affinity or priority is not allowed. */
static const struct fr_rule g_sync[] = {
    { "futex", 0, 0 }, { "sched_yield", 0, 0 }, { "sched_getaffinity", 0, 0 },
    { "sched_getparam", 0, 0 }, { "sched_getscheduler", 0, 0 }, { "getcpu", 0, 0 },
};

/* Clocks, sleeps and the process's own timers (time.sleep is
 * clock_nanosleep; signal.alarm/setitimer only ever signal this process).
 * Setting the system clock (settimeofday, clock_settime, adjtimex) is not
 * listed. */
static const struct fr_rule g_time[] = {
    { "clock_gettime", 0, 0 }, { "clock_getres", 0, 0 }, { "clock_nanosleep", 0, 0 },
    { "nanosleep", 0, 0 }, { "gettimeofday", 0, 0 }, { "time", 0, 0 },
    { "alarm", 0, 0 }, { "setitimer", 0, 0 }, { "getitimer", 0, 0 },
};

/* Signals, within the process. rt_sigaction is allowed except to install a
 * SIGSYS handler: that handler is how violations get reported, so the job
 * must not replace it (such an attempt is itself reported as a violation
 * of rt_sigaction, while our handler is still in place). Sending signals is
 * limited to the job's own pid (abort(), os.kill(os.getpid(), ...)):
 * killing the parent or other jobs of the same uid is denied. Queued
 * signals (rt_sigqueueinfo) and pidfd_send_signal are not listed. */
static const struct fr_rule g_signals[] = {
    { "rt_sigaction", ARG_SIGACTION, 0 }, { "rt_sigreturn", 0, 0 },
    { "sigaltstack", 0, 0 }, { "rt_sigpending", 0, 0 }, { "rt_sigsuspend", 0, 0 },
    { "rt_sigtimedwait", 0, 0 }, { "restart_syscall", 0, 0 }, { "pause", 0, 0 },
    { "kill", ARG_SELF_PID, 0 }, { "tkill", ARG_SELF_PID, 0 }, { "tgkill", ARG_SELF_PID, 0 },
};

/* Signal masks, python: SIGSYS must never be blocked, or a violation kills
 * without running our handler (no name). glibc blocks *all* signals around
 * clone3 in pthread_create (and posix_spawn, CPython's subprocess do the
 * same around vfork), so without this a thread attempt would be an
 * anonymous SIGSYS. Only unblocking and querying pass the filter; a call
 * that may block something traps, and the SIGSYS handler performs it
 * itself, minus SIGSYS (violation.c, emulate_sigprocmask): the job's mask
 * is what it asked for except that SIGSYS stays deliverable, and the
 * thread attempt that follows is reported as clone3. */
static const struct fr_rule g_sigmask_py[] = {
    { "rt_sigprocmask", ARG_SIGMASK_NOBLOCK, 0 },
};

/* Signal masks, exec: violations go to the relay as notifications, which
 * do not depend on the signal mask, so masks are the program's business. */
static const struct fr_rule g_sigmask_exec[] = {
    { "rt_sigprocmask", 0, 0 },
};

/* I/O on descriptors the job already holds: stdin/stdout/stderr, the
 * result pipe, files it opened read-only. Writes through an inherited
 * writable descriptor are possible by design — the launcher must not leak
 * any (close-on-exec / close before apply). poll/select/epoll only wait on
 * existing descriptors; sendfile/splice/tee/copy_file_range only move data
 * between descriptors already held (cat and shutil use them). pipe/pipe2
 * are not listed: with process creation
 * denied a job has no one to talk to through a new pipe.
 * ioctl: only isatty (TCGETS), terminal size, FIONREAD, FIONBIO and
 * close-on-exec toggles (CPython's os.set_inheritable uses FIOCLEX) —
 * never TIOCSTI (typing into the controlling terminal) and friends.
 * fcntl: flags, descriptors and locks, but not F_SETOWN/F_SETOWN_EX/F_SETSIG
 * (SIGIO would let the job signal any process of its uid, bypassing the
 * kill rule) nor leases and notifications. */
static const struct fr_rule g_fdio[] = {
    { "read", 0, 0 }, { "write", 0, 0 }, { "readv", 0, 0 }, { "writev", 0, 0 },
    { "pread64", 0, 0 }, { "pwrite64", 0, 0 }, { "preadv", 0, 0 }, { "pwritev", 0, 0 },
    { "preadv2", 0, 0 }, { "pwritev2", 0, 0 }, { "lseek", 0, 0 }, { "close", 0, 0 },
    { "close_range", 0, 0 }, { "dup", 0, 0 }, { "dup2", 0, 0 }, { "dup3", 0, 0 },
    { "fcntl", ARG_FCNTL_SAFE, 0 }, { "ioctl", ARG_IOCTL_SAFE, 0 },
    { "poll", 0, 0 }, { "ppoll", 0, 0 }, { "select", 0, 0 }, { "pselect6", 0, 0 },
    { "epoll_create1", 0, 0 }, { "epoll_ctl", 0, 0 }, { "epoll_wait", 0, 0 },
    { "epoll_pwait", 0, 0 }, { "epoll_pwait2", 0, 0 }, { "sendfile", 0, 0 }, { "splice", 0, 0 },
    { "tee", 0, 0 }, { "copy_file_range", 0, 0 },
};

/* Reading the file system: lazy imports open .py/.pyc/.so read-only, stat
 * and list directories (getdents64), follow symlinks (readlink). open and
 * openat are allowed only without O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or
 * O_TMPFILE (Linux truncates even on an O_RDONLY|O_TRUNC open).
 * openat2 is not listed: its flags live in a struct seccomp cannot read.
 * Every call that changes the file system (unlink, rename, mkdir, rmdir,
 * chmod, chown, truncate, link, symlink, mknod, utimes, xattrs...) is
 * absent, as are open_by_handle_at and name_to_handle_at. chdir/fchdir/
 * umask only change this process's own state. */
static const struct fr_rule g_fsread[] = {
    { "open", ARG_OPEN_RDONLY, 1 }, { "openat", ARG_OPEN_RDONLY, 2 },
    { "stat", 0, 0 }, { "lstat", 0, 0 }, { "fstat", 0, 0 }, { "newfstatat", 0, 0 },
    { "statx", 0, 0 }, { "statfs", 0, 0 }, { "fstatfs", 0, 0 }, { "access", 0, 0 },
    { "faccessat", 0, 0 }, { "faccessat2", 0, 0 }, { "readlink", 0, 0 },
    { "readlinkat", 0, 0 }, { "getdents", 0, 0 }, { "getdents64", 0, 0 },
    { "getcwd", 0, 0 }, { "chdir", 0, 0 }, { "fchdir", 0, 0 }, { "umask", 0, 0 },
    { "fadvise64", 0, 0 },
};

/* Who and where am I, and randomness: ids (getuid... for os/pwd/tempfile
 * logic), uname, sysinfo (CPython start-up, numpy), getrandom (hash seeds,
 * random, secrets), getrusage/times (time.process_time, resource), reading
 * the own rlimits (prlimit64 with no new limit — setting is denied, so a
 * job cannot raise its limits back), and the read-only prctl options.
 * No setuid/setgid family, personality, sethostname, reboot, etc. */
static const struct fr_rule g_info[] = {
    { "getpid", 0, 0 }, { "getppid", 0, 0 }, { "gettid", 0, 0 }, { "getuid", 0, 0 },
    { "geteuid", 0, 0 }, { "getgid", 0, 0 }, { "getegid", 0, 0 }, { "getgroups", 0, 0 },
    { "getresuid", 0, 0 }, { "getresgid", 0, 0 }, { "getpgrp", 0, 0 }, { "getpgid", 0, 0 },
    { "getsid", 0, 0 }, { "uname", 0, 0 }, { "sysinfo", 0, 0 }, { "getrandom", 0, 0 },
    { "getrusage", 0, 0 }, { "times", 0, 0 }, { "getpriority", 0, 0 }, { "getrlimit", 0, 0 },
    { "prlimit64", ARG_PRLIMIT_GET, 0 }, { "prctl", ARG_PRCTL_SAFE, 0 },
};

/* Leaving. */
static const struct fr_rule g_exit[] = {
    { "exit", 0, 0 }, { "exit_group", 0, 0 },
};

/* exec only — starting a program: execve/execveat (the launcher's own exec
 * of the command; the program may exec again, see docs: a filter cannot
 * count, and an exec'd program stays under the same filter, rlimits,
 * capability sets and no_new_privs, so it gains nothing), and what the
 * dynamic loader and libc do at start-up: TLS (arch_prctl), thread
 * bookkeeping for the main thread (set_tid_address, set_robust_list, rseq).
 * Process creation (fork/vfork/clone/clone3) stays denied. */
static const struct fr_rule g_start[] = {
    { "execve", 0, 0 }, { "execveat", 0, 0 }, { "arch_prctl", 0, 0 },
    { "set_tid_address", 0, 0 }, { "set_robust_list", 0, 0 }, { "rseq", 0, 0 },
};

#define GROUP(what, presets, rules) { what, presets, rules, sizeof rules / sizeof rules[0] }
static const struct fr_group g_groups[] = {
    GROUP("memory", PY | EX, g_memory),
    GROUP("sync", PY | EX, g_sync),
    GROUP("time", PY | EX, g_time),
    GROUP("signals", PY | EX, g_signals),
    GROUP("sigmask", PY, g_sigmask_py),
    GROUP("sigmask", EX, g_sigmask_exec),
    GROUP("fd-io", PY | EX, g_fdio),
    GROUP("fs-read", PY | EX, g_fsread),
    GROUP("info", PY | EX, g_info),
    GROUP("exit", PY | EX, g_exit),
    GROUP("start", EX, g_start),
};

/* ---- argument rules --------------------------------------------------------- */

static const unsigned long ioctl_ok[] = { TCGETS, TIOCGWINSZ, TIOCGPGRP, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX };
static const int fcntl_ok[] = {
    F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_SETLK, F_SETLKW,
    F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GETPIPE_SZ, F_GET_SEALS,
};
static const int prctl_ok[] = {
    PR_GET_NAME, PR_SET_NAME, PR_GET_DUMPABLE, PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP,
    PR_CAPBSET_READ, PR_GET_KEEPCAPS, PR_GET_PDEATHSIG, PR_GET_TIMERSLACK,
};

/* The tmpfile bit alone (O_TMPFILE also contains O_DIRECTORY, which is a
 * legitimate read-only flag). */
#define FR_O_TMPFILE_BIT (O_TMPFILE & ~O_DIRECTORY)
#define FR_OPEN_WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | FR_O_TMPFILE_BIT)

/* The mask trick in ARG_SIGACTION (32..63 in one comparison) needs SIGSYS
 * to be 31, as on every architecture we build for. */
_Static_assert(SIGSYS == 31, "rt_sigaction rule assumes SIGSYS == 31");

static int add(scmp_filter_ctx ctx, int nr, unsigned n, const struct scmp_arg_cmp *cmp)
{
    return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n, cmp);
}

static int add_rule(scmp_filter_ctx ctx, int nr, const struct fr_rule *r)
{
    int rc = 0;
    switch (r->check) {
    case ARG_ANY:
        return add(ctx, nr, 0, NULL);
    case ARG_OPEN_RDONLY: {
        /* flags & write-ish bits == 0; the mask's upper 32 bits are zero, so
         * junk there is ignored by both seccomp and the kernel. */
        struct scmp_arg_cmp c = SCMP_CMP(r->arg, SCMP_CMP_MASKED_EQ, FR_OPEN_WRITE_FLAGS, 0);
        return add(ctx, nr, 1, &c);
    }
    case ARG_SIGACTION: {
        /* Allowed: signals 1..30 (any action), 32..63, 64 (any action),
         * and SIGSYS with act == NULL (querying the handler). libseccomp
         * refuses two comparisons on one argument, hence four rules. */
        struct scmp_arg_cmp lo = SCMP_CMP(0, SCMP_CMP_LT, SIGSYS);
        struct scmp_arg_cmp mid = SCMP_CMP(0, SCMP_CMP_MASKED_EQ, ~(uint64_t)0x1f, 0x20);
        struct scmp_arg_cmp top = SCMP_CMP(0, SCMP_CMP_EQ, 64);
        struct scmp_arg_cmp query[2] = { SCMP_CMP(0, SCMP_CMP_EQ, SIGSYS), SCMP_CMP(1, SCMP_CMP_EQ, 0) };
        rc = add(ctx, nr, 1, &lo);
        if (!rc)
            rc = add(ctx, nr, 1, &mid);
        if (!rc)
            rc = add(ctx, nr, 1, &top);
        if (!rc)
            rc = add(ctx, nr, 2, query);
        return rc;
    }
    case ARG_SIGMASK_NOBLOCK: {
        struct scmp_arg_cmp unblock = SCMP_CMP(0, SCMP_CMP_EQ, SIG_UNBLOCK);
        struct scmp_arg_cmp query = SCMP_CMP(1, SCMP_CMP_EQ, 0);
        rc = add(ctx, nr, 1, &unblock);
        if (!rc)
            rc = add(ctx, nr, 1, &query);
        return rc;
    }
    case ARG_SELF_PID: {
        struct scmp_arg_cmp c = SCMP_CMP(0, SCMP_CMP_EQ, FR_PID_PLACEHOLDER);
        return add(ctx, nr, 1, &c);
    }
    case ARG_PRLIMIT_GET: {
        struct scmp_arg_cmp c[2] = { SCMP_CMP(0, SCMP_CMP_EQ, 0), SCMP_CMP(2, SCMP_CMP_EQ, 0) };
        return add(ctx, nr, 2, c);
    }
    case ARG_IOCTL_SAFE:
        for (size_t i = 0; !rc && i < sizeof ioctl_ok / sizeof ioctl_ok[0]; i++) {
            struct scmp_arg_cmp c = SCMP_CMP(1, SCMP_CMP_EQ, ioctl_ok[i]);
            rc = add(ctx, nr, 1, &c);
        }
        return rc;
    case ARG_FCNTL_SAFE:
        for (size_t i = 0; !rc && i < sizeof fcntl_ok / sizeof fcntl_ok[0]; i++) {
            struct scmp_arg_cmp c = SCMP_CMP(1, SCMP_CMP_EQ, (uint64_t)fcntl_ok[i]);
            rc = add(ctx, nr, 1, &c);
        }
        return rc;
    case ARG_PRCTL_SAFE:
        for (size_t i = 0; !rc && i < sizeof prctl_ok / sizeof prctl_ok[0]; i++) {
            struct scmp_arg_cmp c = SCMP_CMP(0, SCMP_CMP_EQ, (uint64_t)prctl_ok[i]);
            rc = add(ctx, nr, 1, &c);
        }
        return rc;
    }
    return -EINVAL; /* unknown check (cannot happen) */
}

static bool skipped(int nr, const int *skip, size_t nskip)
{
    for (size_t i = 0; i < nskip; i++)
        if (skip[i] == nr)
            return true;
    return false;
}

int fr_presets_add(scmp_filter_ctx ctx, enum fr_preset preset, const int *skip, size_t nskip,
                   char *err, size_t errlen)
{
    unsigned bit = 1u << preset;
    for (size_t g = 0; g < sizeof g_groups / sizeof g_groups[0]; g++) {
        if (!(g_groups[g].presets & bit))
            continue;
        for (size_t i = 0; i < g_groups[g].n; i++) {
            const struct fr_rule *r = &g_groups[g].rules[i];
            int nr = seccomp_syscall_resolve_name(r->name);
            /* Negative: the syscall does not exist on this architecture
             * (e.g. open/stat on aarch64); there is nothing to allow. */
            if (nr < 0 || skipped(nr, skip, nskip))
                continue;
            int rc = add_rule(ctx, nr, r);
            if (rc < 0) {
                fr_seterr(err, errlen, "sandbox: seccomp_rule_add(%s, preset %s, group %s): %s", r->name,
                          fr_preset_name(preset), g_groups[g].what, strerror(-rc));
                return -1;
            }
        }
    }
    return 0;
}

int fr_presets_protect_handler(scmp_filter_ctx ctx, char *err, size_t errlen)
{
    /* Default-allow filter: trap rt_sigaction(SIGSYS, act != NULL), and
     * rt_sigprocmask calls that may block (SIG_BLOCK/SIG_SETMASK with a
     * set; the handler emulates them minus SIGSYS). The kernel only reads
     * the low 32 bits of these int arguments, so compare exactly those (a
     * mask with the upper half cleared). */
    struct scmp_arg_cmp act[2] = {
        SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffffffffu, SIGSYS),
        SCMP_CMP(1, SCMP_CMP_NE, 0),
    };
    struct scmp_arg_cmp block[2] = {
        SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffffffffu, SIG_BLOCK),
        SCMP_CMP(1, SCMP_CMP_NE, 0),
    };
    struct scmp_arg_cmp setmask[2] = {
        SCMP_CMP(0, SCMP_CMP_MASKED_EQ, 0xffffffffu, SIG_SETMASK),
        SCMP_CMP(1, SCMP_CMP_NE, 0),
    };
    int rc = seccomp_rule_add_array(ctx, SCMP_ACT_TRAP, SCMP_SYS(rt_sigaction), 2, act);
    if (!rc)
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_TRAP, SCMP_SYS(rt_sigprocmask), 2, block);
    if (!rc)
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_TRAP, SCMP_SYS(rt_sigprocmask), 2, setmask);
    if (rc < 0) {
        fr_seterr(err, errlen, "sandbox: seccomp_rule_add(rt_sigaction guard): %s", strerror(-rc));
        return -1;
    }
    return 0;
}
