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
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include "fitrun/common.h"
#include "internal.h"

static const char *const g_preset_names[] = {
    [FR_PRESET_NONE] = "none",
    [FR_PRESET_EXEC] = "exec",
    [FR_PRESET_PYTHON] = "python",
};

int fr_preset_parse(const char *s, enum fr_preset *out)
{
    for (size_t i = 0; s && i < sizeof g_preset_names / sizeof g_preset_names[0]; i++)
        if (strcmp(s, g_preset_names[i]) == 0) {
            *out = (enum fr_preset)i;
            return 0;
        }
    return -1;
}

const char *fr_preset_name(enum fr_preset p)
{
    if ((unsigned)p < sizeof g_preset_names / sizeof g_preset_names[0])
        return g_preset_names[p];
    return "unknown";
}

enum fr_argcheck {
    ARG_ANY = 0,
    ARG_OPEN,        /* open/openat: the flags argument (index in .arg), per enum fr_open_mode */
    ARG_SELF_PID,    /* kill/tkill/tgkill: first argument is the job's own pid (unless kill_any) */
    ARG_PRLIMIT_GET, /* prlimit64(0, res, NULL, old): read own limits only */
    ARG_IOCTL_SAFE,  /* ioctl: the terminal/descriptor queries in ioctl_ok[] */
    ARG_FCNTL_SAFE,  /* fcntl: the commands in fcntl_ok[] (no F_SETOWN/F_SETSIG) */
    ARG_PRCTL_SAFE,  /* prctl: the read-only options in prctl_ok[] + PR_SET_NAME */
    ARG_XCOMP,       /* arch_prctl: the XSTATE permission requests in xcomp_ok[] only */
    ARG_CLONE_NO_NS, /* clone: no CLONE_NEW* flag */
    ARG_UNIX_SOCKET, /* socket(AF_UNIX, ...): refused with EACCES instead of a violation */
    ARG_ENOSYS,      /* refused with ENOSYS (clone3: libc falls back to clone, which is filtered) */
};

struct fr_rule {
    const char *name;
    enum fr_argcheck check;
    unsigned arg; /* argument index for ARG_OPEN */
};

#define PY (1u << FR_PRESET_PYTHON)
#define EX (1u << FR_PRESET_EXEC)

/* When a group applies besides its presets. */
enum fr_cond {
    WHEN_ALWAYS = 0,
    WHEN_PROCS,    /* processes != 1 */
    WHEN_FS_WRITE, /* Landlock rules file-system writes (open mode NO_TRUNC or ANY) */
    WHEN_TRUNCATE, /* Landlock also rules truncation (open mode ANY) */
};

struct fr_group {
    const char *what;
    unsigned presets;
    enum fr_cond when;
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
    {"brk", 0, 0}, {"mmap", 0, 0}, {"munmap", 0, 0}, {"mremap", 0, 0}, {"mprotect", 0, 0}, {"madvise", 0, 0},
};

/* Synchronisation and scheduling queries: futex for the GIL, locks and
 * OpenBLAS's (single) thread; sched_getaffinity for os.cpu_count-style
 * sizing; sched_yield. Changing affinity or priority is not allowed. */
static const struct fr_rule g_sync[] = {
    {"futex", 0, 0},          {"sched_yield", 0, 0},        {"sched_getaffinity", 0, 0},
    {"sched_getparam", 0, 0}, {"sched_getscheduler", 0, 0}, {"getcpu", 0, 0},
};

/* Clocks, sleeps and the process's own timers (time.sleep is
 * clock_nanosleep; signal.alarm/setitimer only ever signal this process).
 * Setting the system clock (settimeofday, clock_settime, adjtimex) is not
 * listed. */
static const struct fr_rule g_time[] = {
    {"clock_gettime", 0, 0}, {"clock_getres", 0, 0}, {"clock_nanosleep", 0, 0},
    {"nanosleep", 0, 0},     {"gettimeofday", 0, 0}, {"time", 0, 0},
    {"alarm", 0, 0},         {"setitimer", 0, 0},    {"getitimer", 0, 0},
};

/* Signals, within the process: handlers of any signal (SIGSYS is an
 * ordinary signal here: violations reach a supervisor as notifications,
 * whatever the job does with its handlers and masks), masks, waiting.
 * Sending signals is limited to the job's own pid (abort(),
 * os.kill(os.getpid(), ...)) — unless the kernel already keeps signals
 * inside the job (kill_any: Landlock's signal scope, or a per-slot uid
 * without CAP_KILL), which shells need to kill their own children. Queued
 * signals (rt_sigqueueinfo) and pidfd_send_signal are not listed. */
static const struct fr_rule g_signals[] = {
    {"rt_sigaction", 0, 0},  {"rt_sigreturn", 0, 0},    {"rt_sigprocmask", 0, 0},   {"sigaltstack", 0, 0},
    {"rt_sigpending", 0, 0}, {"rt_sigsuspend", 0, 0},   {"rt_sigtimedwait", 0, 0},  {"restart_syscall", 0, 0},
    {"pause", 0, 0},         {"kill", ARG_SELF_PID, 0}, {"tkill", ARG_SELF_PID, 0}, {"tgkill", ARG_SELF_PID, 0},
};

/* I/O on descriptors the job already holds: stdin/stdout/stderr, the
 * result pipe, files it opened read-only. Writes through an inherited
 * writable descriptor are possible by design — the launcher must not leak
 * any (close-on-exec / close before apply). poll/select/epoll only wait on
 * existing descriptors; sendfile/splice/tee/copy_file_range only move data
 * between descriptors already held (cat and shutil use them). pipe/pipe2
 * are in the processes group: with process creation denied a job has no
 * one to talk to through a new pipe.
 * ioctl: only isatty (TCGETS), terminal size, FIONREAD, FIONBIO and
 * close-on-exec toggles (CPython's os.set_inheritable uses FIOCLEX) —
 * never TIOCSTI (typing into the controlling terminal) and friends.
 * fcntl: flags, descriptors and locks, but not F_SETOWN/F_SETOWN_EX/F_SETSIG
 * (SIGIO would let the job signal any process of its uid, bypassing the
 * kill rule) nor leases and notifications. getsockname/getpeername only
 * ask a descriptor the job holds for its address (bash asks its stdin
 * whether it is a network connection). */
static const struct fr_rule g_fdio[] = {
    {"read", 0, 0},
    {"write", 0, 0},
    {"readv", 0, 0},
    {"writev", 0, 0},
    {"pread64", 0, 0},
    {"pwrite64", 0, 0},
    {"preadv", 0, 0},
    {"pwritev", 0, 0},
    {"preadv2", 0, 0},
    {"pwritev2", 0, 0},
    {"lseek", 0, 0},
    {"close", 0, 0},
    {"close_range", 0, 0},
    {"dup", 0, 0},
    {"dup2", 0, 0},
    {"dup3", 0, 0},
    {"fcntl", ARG_FCNTL_SAFE, 0},
    {"ioctl", ARG_IOCTL_SAFE, 0},
    {"poll", 0, 0},
    {"ppoll", 0, 0},
    {"select", 0, 0},
    {"pselect6", 0, 0},
    {"epoll_create1", 0, 0},
    {"epoll_ctl", 0, 0},
    {"epoll_wait", 0, 0},
    {"epoll_pwait", 0, 0},
    {"epoll_pwait2", 0, 0},
    {"sendfile", 0, 0},
    {"splice", 0, 0},
    {"tee", 0, 0},
    {"copy_file_range", 0, 0},
    {"getsockname", 0, 0},
    {"getpeername", 0, 0},
};

/* Reading the file system: lazy imports open .py/.pyc/.so, stat and list
 * directories (getdents64), follow symlinks (readlink). Which paths can be
 * read is Landlock's business (landlock.c); what open(2) may ask for
 * depends on what Landlock rules (ARG_OPEN): without Landlock, no
 * O_WRONLY, O_RDWR, O_CREAT, O_TRUNC or O_TMPFILE (Linux truncates even on
 * an O_RDONLY|O_TRUNC open); with Landlock ABI 1-2 anything but O_TRUNC
 * (truncation is only ruled from ABI 3); with ABI >= 3 anything.
 * openat2 is not listed: its flags live in a struct seccomp cannot read.
 * chdir/fchdir/umask only change this process's own state. */
static const struct fr_rule g_fsread[] = {
    {"open", ARG_OPEN, 1}, {"openat", ARG_OPEN, 2}, {"stat", 0, 0},     {"lstat", 0, 0},      {"fstat", 0, 0},
    {"newfstatat", 0, 0},  {"statx", 0, 0},         {"statfs", 0, 0},   {"fstatfs", 0, 0},    {"access", 0, 0},
    {"faccessat", 0, 0},   {"faccessat2", 0, 0},    {"readlink", 0, 0}, {"readlinkat", 0, 0}, {"getdents", 0, 0},
    {"getdents64", 0, 0},  {"getcwd", 0, 0},        {"chdir", 0, 0},    {"fchdir", 0, 0},     {"umask", 0, 0},
    {"fadvise64", 0, 0},
};

/* Extended attributes, read only (exec): `ls -l` asks every file for its
 * ACL and security label. Metadata, like stat; never set. */
static const struct fr_rule g_xattr_read[] = {
    {"getxattr", 0, 0},  {"lgetxattr", 0, 0},  {"fgetxattr", 0, 0},
    {"listxattr", 0, 0}, {"llistxattr", 0, 0}, {"flistxattr", 0, 0},
};

/* Writing files, only where Landlock rules it (a profile's `write =`;
 * everywhere else Landlock answers EACCES): create, remove, rename and link
 * (Landlock's MAKE_*, REMOVE_*, REFER rights), flush. Not listed, because
 * Landlock does not rule them: chmod/chown/utime*, setxattr, mknod. */
static const struct fr_rule g_fswrite[] = {
    {"creat", 0, 0},     {"mkdir", 0, 0},  {"mkdirat", 0, 0},  {"unlink", 0, 0},    {"unlinkat", 0, 0},
    {"rmdir", 0, 0},     {"rename", 0, 0}, {"renameat", 0, 0}, {"renameat2", 0, 0}, {"symlink", 0, 0},
    {"symlinkat", 0, 0}, {"link", 0, 0},   {"linkat", 0, 0},   {"fsync", 0, 0},     {"fdatasync", 0, 0},
};

/* Truncation, where Landlock rules it too (ABI >= 3). */
static const struct fr_rule g_truncate[] = {
    {"truncate", 0, 0},
    {"ftruncate", 0, 0},
    {"fallocate", 0, 0},
};

/* Service sockets: glibc asks nscd over a unix socket before reading
 * /etc/passwd (`ls -l`, getpwuid), syslog() opens /dev/log. socket(AF_UNIX)
 * fails with EACCES — what these clients expect of a missing service —
 * instead of being a violation. Any other domain is a violation; a
 * profile's `allow = socket` replaces this rule. */
static const struct fr_rule g_service_socket[] = {
    {"socket", ARG_UNIX_SOCKET, 0},
};

/* Who and where am I, and randomness: ids (getuid... for os/pwd/tempfile
 * logic), uname, sysinfo (CPython start-up, numpy), getrandom (hash seeds,
 * random, secrets), getrusage/times (time.process_time, resource), reading
 * the own rlimits (prlimit64 with no new limit — setting is denied, so a
 * job cannot raise its limits back), and the read-only prctl options.
 * No setuid/setgid family, personality, sethostname, reboot, etc. */
static const struct fr_rule g_info[] = {
    {"getpid", 0, 0},
    {"getppid", 0, 0},
    {"gettid", 0, 0},
    {"getuid", 0, 0},
    {"geteuid", 0, 0},
    {"getgid", 0, 0},
    {"getegid", 0, 0},
    {"getgroups", 0, 0},
    {"getresuid", 0, 0},
    {"getresgid", 0, 0},
    {"getpgrp", 0, 0},
    {"getpgid", 0, 0},
    {"getsid", 0, 0},
    {"uname", 0, 0},
    {"sysinfo", 0, 0},
    {"getrandom", 0, 0},
    {"getrusage", 0, 0},
    {"times", 0, 0},
    {"getpriority", 0, 0},
    {"getrlimit", 0, 0},
    {"prlimit64", ARG_PRLIMIT_GET, 0},
    {"prctl", ARG_PRCTL_SAFE, 0},
};

/* Leaving. */
static const struct fr_rule g_exit[] = {
    {"exit", 0, 0},
    {"exit_group", 0, 0},
};

/* exec only — starting a program: execve/execveat (the launcher's own exec
 * of the command; the program may exec again, see docs: a filter cannot
 * count, and an exec'd program stays under the same filter, rlimits,
 * capability sets, Landlock domain and no_new_privs, so it gains nothing),
 * and what the dynamic loader and libc do at start-up: TLS and CET set-up
 * (arch_prctl, which only changes the calling thread's own registers),
 * thread bookkeeping for the main thread (set_tid_address,
 * set_robust_list, rseq). */
static const struct fr_rule g_start[] = {
    {"execve", 0, 0},          {"execveat", 0, 0},        {"arch_prctl", 0, 0},
    {"set_tid_address", 0, 0}, {"set_robust_list", 0, 0}, {"rseq", 0, 0},
};

/* exec only — setting ids to the ones the process already has. busybox
 * drops privileges at every applet start when not run by root, with
 * setgid(getgid()) and setuid(getuid()). Without CAP_SETUID/CAP_SETGID
 * (dropped, unless a profile keeps them) the kernel lets a process pick
 * only among its own real, effective and saved ids — which a job's are all
 * the same — and refuses setgroups: these calls cannot change who the job
 * is. */
static const struct fr_rule g_ids[] = {
    {"setuid", 0, 0},    {"setgid", 0, 0},   {"setreuid", 0, 0}, {"setregid", 0, 0},  {"setresuid", 0, 0},
    {"setresgid", 0, 0}, {"setfsuid", 0, 0}, {"setfsgid", 0, 0}, {"setgroups", 0, 0},
};

/* python only — XSTATE permissions: oneDNN (torch), TensorFlow and other
 * AMX users ask the kernel for the AMX tile state with
 * arch_prctl(ARCH_REQ_XCOMP_PERM) and query it with ARCH_GET_XCOMP_SUPP/
 * ARCH_GET_XCOMP_PERM; without the permission an AMX instruction faults.
 * It enlarges only the process's own signal frames and FPU state. Nothing
 * else of arch_prctl: not ARCH_SET_FS/GS (TLS was set up long before),
 * nor the *_GUEST_PERM variants, which size the FPU of KVM guests (only a
 * virtual machine monitor needs them). */
static const struct fr_rule g_xstate[] = {
    {"arch_prctl", ARG_XCOMP, 0},
};

/* exec with processes != 1 — what shells and pipelines need: fork, vfork
 * and clone without any CLONE_NEW* flag (no namespaces: unshare and setns
 * stay denied too), pipes, waiting for children. clone3 passes its flags
 * in a struct seccomp cannot read, so it is refused with ENOSYS, and glibc
 * (posix_spawn, pthread_create) falls back to clone, whose flags are
 * checked. Threads are clones too: allowed here (RLIMIT_NPROC counts
 * them). setsid and setpgid stay denied, so the whole tree stays in the
 * job's process group, which is how fitrun and the relay kill all of it.
 * How many processes: RLIMIT_NPROC, which counts per uid — a per-job cap
 * only with per-slot uids (identity.c); for uid 0 it is not enforced. */
static const struct fr_rule g_procs[] = {
    {"fork", 0, 0},
    {"vfork", 0, 0},
    {"clone", ARG_CLONE_NO_NS, 0},
    {"clone3", ARG_ENOSYS, 0},
    {"pipe", 0, 0},
    {"pipe2", 0, 0},
    {"wait4", 0, 0},
    {"waitid", 0, 0},
};

#define GROUP(what, presets, when, rules)                                                                              \
    {                                                                                                                  \
        what, presets, when, rules, sizeof rules / sizeof rules[0]                                                     \
    }
static const struct fr_group g_groups[] = {
    GROUP("memory", PY | EX, WHEN_ALWAYS, g_memory),
    GROUP("sync", PY | EX, WHEN_ALWAYS, g_sync),
    GROUP("time", PY | EX, WHEN_ALWAYS, g_time),
    GROUP("signals", PY | EX, WHEN_ALWAYS, g_signals),
    GROUP("fd-io", PY | EX, WHEN_ALWAYS, g_fdio),
    GROUP("fs-read", PY | EX, WHEN_ALWAYS, g_fsread),
    GROUP("xattr-read", EX, WHEN_ALWAYS, g_xattr_read),
    GROUP("fs-write", PY | EX, WHEN_FS_WRITE, g_fswrite),
    GROUP("truncate", PY | EX, WHEN_TRUNCATE, g_truncate),
    GROUP("service-socket", PY | EX, WHEN_ALWAYS, g_service_socket),
    GROUP("info", PY | EX, WHEN_ALWAYS, g_info),
    GROUP("exit", PY | EX, WHEN_ALWAYS, g_exit),
    GROUP("start", EX, WHEN_ALWAYS, g_start),
    GROUP("ids", EX, WHEN_ALWAYS, g_ids),
    GROUP("xstate", PY, WHEN_ALWAYS, g_xstate),
    GROUP("processes", EX, WHEN_PROCS, g_procs),
};

/* ---- argument rules --------------------------------------------------------- */

static const unsigned long ioctl_ok[] = {TCGETS, TIOCGWINSZ, TIOCGPGRP, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX};
static const int fcntl_ok[] = {
    F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD,     F_SETFD,     F_GETFL,      F_SETFL,      F_GETLK,
    F_SETLK, F_SETLKW,        F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GETPIPE_SZ, F_GET_SEALS,
};
static const int prctl_ok[] = {
    PR_GET_NAME,     PR_SET_NAME,     PR_GET_DUMPABLE,  PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP,
    PR_CAPBSET_READ, PR_GET_KEEPCAPS, PR_GET_PDEATHSIG, PR_GET_TIMERSLACK,
};
/* <asm/prctl.h> of the build host may predate them (Linux 5.16). */
static const int xcomp_ok[] = {0x1021 /* ARCH_GET_XCOMP_SUPP */, 0x1022 /* ARCH_GET_XCOMP_PERM */,
                               0x1023 /* ARCH_REQ_XCOMP_PERM */};

/* The tmpfile bit alone (O_TMPFILE also contains O_DIRECTORY, which is a
 * legitimate read-only flag). */
#define FR_O_TMPFILE_BIT (O_TMPFILE & ~O_DIRECTORY)
#define FR_OPEN_WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | FR_O_TMPFILE_BIT)
#define FR_CLONE_NS_FLAGS                                                                                              \
    (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

static int add(scmp_filter_ctx ctx, int nr, unsigned n, const struct scmp_arg_cmp *cmp)
{
    return seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n, cmp);
}

/* One ALLOW rule per value of argument `arg` in vals[0..n). */
static int add_each(scmp_filter_ctx ctx, int nr, unsigned arg, const uint64_t *vals, size_t n)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        struct scmp_arg_cmp c = SCMP_CMP(arg, SCMP_CMP_EQ, vals[i], 0);
        rc = add(ctx, nr, 1, &c);
    }
    return rc;
}

#define EACH(ctx, nr, arg, list)                                                                                       \
    ({                                                                                                                 \
        uint64_t v_[sizeof list / sizeof list[0]];                                                                     \
        for (size_t i_ = 0; i_ < sizeof list / sizeof list[0]; i_++)                                                   \
            v_[i_] = (uint64_t)list[i_];                                                                               \
        add_each(ctx, nr, arg, v_, sizeof list / sizeof list[0]);                                                      \
    })

static int add_rule(scmp_filter_ctx ctx, int nr, const struct fr_rule *r, const struct fr_preset_ctx *pc)
{
    switch (r->check) {
    case ARG_ANY: return add(ctx, nr, 0, NULL);
    case ARG_OPEN: {
        /* flags & forbidden bits == 0; the mask's upper 32 bits are zero, so
         * junk there is ignored by both seccomp and the kernel. */
        uint64_t forbidden = pc->open == FR_OPEN_ANY ? 0 : pc->open == FR_OPEN_NO_TRUNC ? O_TRUNC : FR_OPEN_WRITE_FLAGS;
        if (!forbidden)
            return add(ctx, nr, 0, NULL);
        struct scmp_arg_cmp c = SCMP_CMP(r->arg, SCMP_CMP_MASKED_EQ, forbidden, 0);
        return add(ctx, nr, 1, &c);
    }
    case ARG_SELF_PID: {
        if (pc->kill_any)
            return add(ctx, nr, 0, NULL);
        struct scmp_arg_cmp c = SCMP_CMP(0, SCMP_CMP_EQ, FR_PID_PLACEHOLDER, 0);
        return add(ctx, nr, 1, &c);
    }
    case ARG_PRLIMIT_GET: {
        struct scmp_arg_cmp c[2] = {SCMP_CMP(0, SCMP_CMP_EQ, 0, 0), SCMP_CMP(2, SCMP_CMP_EQ, 0, 0)};
        return add(ctx, nr, 2, c);
    }
    case ARG_IOCTL_SAFE: return EACH(ctx, nr, 1, ioctl_ok);
    case ARG_FCNTL_SAFE: return EACH(ctx, nr, 1, fcntl_ok);
    case ARG_PRCTL_SAFE: return EACH(ctx, nr, 0, prctl_ok);
    case ARG_XCOMP: return EACH(ctx, nr, 0, xcomp_ok);
    case ARG_CLONE_NO_NS: {
        /* The kernel reads the lower 32 bits of clone's flags; the mask has
         * its upper half clear, so junk there changes nothing either way. */
        struct scmp_arg_cmp c = SCMP_CMP(0, SCMP_CMP_MASKED_EQ, FR_CLONE_NS_FLAGS, 0);
        return add(ctx, nr, 1, &c);
    }
    case ARG_UNIX_SOCKET: {
        /* Exactly AF_UNIX in all 64 bits; anything else falls to the
         * default action (a named violation). */
        struct scmp_arg_cmp c = SCMP_CMP(0, SCMP_CMP_EQ, AF_UNIX, 0);
        return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EACCES), nr, 1, &c);
    }
    case ARG_ENOSYS: return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0, NULL);
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

static bool group_applies(const struct fr_group *g, const struct fr_preset_ctx *pc)
{
    if (!(g->presets & (1u << pc->preset)))
        return false;
    switch (g->when) {
    case WHEN_ALWAYS: return true;
    case WHEN_PROCS: return pc->procs;
    case WHEN_FS_WRITE: return pc->open != FR_OPEN_READ_ONLY;
    case WHEN_TRUNCATE: return pc->open == FR_OPEN_ANY;
    }
    return false;
}

int fr_presets_add(scmp_filter_ctx ctx, const struct fr_preset_ctx *pc, const int *skip, size_t nskip, char *err,
                   size_t errlen)
{
    for (size_t g = 0; g < sizeof g_groups / sizeof g_groups[0]; g++) {
        if (!group_applies(&g_groups[g], pc))
            continue;
        for (size_t i = 0; i < g_groups[g].n; i++) {
            const struct fr_rule *r = &g_groups[g].rules[i];
            int nr = seccomp_syscall_resolve_name(r->name);
            /* Negative: the syscall does not exist on this architecture
             * (e.g. open/stat on aarch64); there is nothing to allow. */
            if (nr < 0 || skipped(nr, skip, nskip))
                continue;
            int rc = add_rule(ctx, nr, r, pc);
            if (rc < 0) {
                fr_seterr(err, errlen, "sandbox: seccomp_rule_add(%s, preset %s, group %s): %s", r->name,
                          fr_preset_name(pc->preset), g_groups[g].what, strerror(-rc));
                return -1;
            }
        }
    }
    return 0;
}
