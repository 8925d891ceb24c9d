/* fitrun/sandbox.h — isolate one untrusted job in a freshly forked child.
 *
 * Prepare once, apply cheaply: fr_policy_build() resolves syscall names and
 * compiles the seccomp filter to BPF in the parent; fr_policy_apply() runs
 * in the forked child and only makes syscalls (rlimits, no_new_privs,
 * capability drop, seccomp) — no allocation, no file access — so it is also
 * safe in a child forked from a multithreaded or Python parent.
 *
 * This header is the contract used by the launcher's runtimes and, through
 * libfitrun_sandbox.so + ctypes, by the warm Python runtime.
 *
 * Kernel behaviours that matter (measured in docs/sandbox.md):
 *  - Before Linux 5.16, installing a seccomp filter also forces the SSBD
 *    (and, with it, STIBP) Spectre mitigations on the process unless the
 *    filter is installed with SECCOMP_FILTER_FLAG_SPEC_ALLOW — a large
 *    slowdown for CPU-bound code. spec_allow sets that flag: faster on old
 *    kernels, at the price of leaving the job exposed to (and able to
 *    mount) speculative store-bypass attacks. Off by default; 5.16+ no
 *    longer ties the mitigation to seccomp, so it changes nothing there.
 *  - RLIMIT_NPROC counts all processes of the job's real uid, system-wide,
 *    and is not enforced for uid 0: it is not a per-job process cap. The
 *    presets deny process creation outright instead.
 *  - RLIMIT_AS limits reserved address space: allocators and runtimes that
 *    reserve large ranges (Go, the JVM, ASan, glibc's 64 MiB per-thread
 *    arenas) fail well below the memory they actually use.
 *  - Violations: python preset = SECCOMP_RET_TRAP + a SIGSYS handler that
 *    reports the syscall on report_fd; exec preset = SECCOMP_RET_USER_NOTIF
 *    read by a relay process (a handler does not survive execve). A job
 *    that blocks SIGSYS, or uses a foreign syscall ABI (int 0x80), dies of
 *    SIGSYS without a name: classified `violation` with syscall "unknown".
 * (Owner: sandbox/. Extend, but do not rename what is here.) */
#ifndef FITRUN_SANDBOX_H
#define FITRUN_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

enum fr_preset { FR_PRESET_NONE = 0, FR_PRESET_EXEC, FR_PRESET_PYTHON };

/* 0 in a limit field = "leave as inherited"; core is always set to 0
 * unless core_bytes is set (documented default: no core files). */
struct fr_policy_spec {
    enum fr_preset preset;
    uint64_t cpu_ms;            /* RLIMIT_CPU (rounded up to whole seconds; soft, hard = soft+1) */
    uint64_t as_bytes;          /* RLIMIT_AS */
    uint64_t fsize_bytes;       /* RLIMIT_FSIZE */
    uint64_t nofile;            /* RLIMIT_NOFILE */
    uint64_t nproc;             /* RLIMIT_NPROC (per user! see docs) */
    uint64_t stack_bytes;       /* RLIMIT_STACK */
    uint64_t core_bytes;        /* RLIMIT_CORE, default 0 */
    const char *const *allow;   /* NULL-terminated syscall names added to the preset */
    const char *const *deny;    /* NULL-terminated syscall names removed from it */
    const char *const *keep_caps; /* NULL-terminated capability names ("cap_net_raw") */
    bool spec_allow;            /* SECCOMP_FILTER_FLAG_SPEC_ALLOW */
};

struct fr_policy; /* opaque; immutable once built */

/* Build (and compile) a policy. Returns 0, or -1 with a message in err
 * naming the culprit (e.g. "unknown syscall 'sockett' in allow"). */
int fr_policy_build(const struct fr_policy_spec *spec, struct fr_policy **out, char *err, size_t errlen);
/* The same from "key=value;key=value" text (keys as in the profile's
 * [sandbox] section: preset, cpu_time, memory, fsize, nofile, processes,
 * stack, allow, deny, keep_caps, spec_allow) — for ctypes callers. */
int fr_policy_build_kv(const char *kv, struct fr_policy **out, char *err, size_t errlen);
void fr_policy_free(struct fr_policy *p);

/* In the child, after fork and before exec/running the job. report_fd is a
 * pre-opened descriptor on which a violation record is written (may be -1).
 * Async-signal-safe. Returns 0 or -errno of the first failing step.
 *
 * Notes for callers (docs/sandbox.md has the details):
 *  - call it last, right before execve/the job: the filter denies most of
 *    what set-up code uses (setpgid, dup2 is fine, pipe, ...).
 *  - the child must own its memory (fork/_Fork, not vfork/CLONE_VM).
 *  - report_fd: the write end of a pipe; the parent closes its copy of the
 *    write end after fork and reads with fr_report_read after the child
 *    has been reaped.
 *  - exec preset with report_fd >= 0: the calling process becomes a relay
 *    that never returns; the job runs in a new child of it, in which this
 *    call returns 0 (the relay mirrors the job's exit status or fatal
 *    signal, so the caller's wait4 sees the job; getpid() in the job is not
 *    the pid the caller forked). The job's copy of report_fd is closed.
 *  - on failure the caller should _exit (e.g. 125) without running the job. */
int fr_policy_apply(const struct fr_policy *p, int report_fd);

/* Parent side: read the child's report (non-blocking is fine) after it has
 * exited. Returns the violating syscall number, or -1 if none was reported. */
int fr_report_read(int report_fd);

/* ---- additions (sandbox owner) ---- */

/* Optional, for a long-lived process that only forks jobs (a warm Python
 * worker): drop the capability bounding set (except kept capabilities) in
 * the CALLING process once, so that each fr_policy_apply skips ~40 prctl
 * calls (about a third of its cost for uid 0). Irreversible for the caller;
 * its effective/permitted capabilities are untouched. Returns 0 or -errno. */
int fr_policy_prepare_worker(struct fr_policy *p);

/* One line for logs and `describe`: "preset=python seccomp=trap(301 insns)
 * spec_allow=no cpu=2s(hard 3s) as=1.0 GiB core=0 caps=none". Returns the
 * length it needed (snprintf-style), or -1. */
int fr_policy_describe(const struct fr_policy *p, char *buf, size_t len);
/* The compiled seccomp program (struct sock_filter[], 8 bytes each) as the
 * parent holds it — kill/tkill/tgkill compare against a pid placeholder the
 * child patches. NULL with *ninsns = 0 when the policy has no filter. */
const void *fr_policy_bpf(const struct fr_policy *p, size_t *ninsns);
/* Names: "socket" (libseccomp, native arch; "unknown" for nr < 0,
 * "syscall_<nr>" if unnamed) and "SIGSEGV" / "SIGRTMIN+3". Return buf. */
const char *fr_syscall_name(int nr, char *buf, size_t n);
const char *fr_signal_name(int sig, char *buf, size_t n);

/* Outcome classification. */
enum fr_status {
    FR_STATUS_OK = 0,
    FR_STATUS_ERROR,
    FR_STATUS_TIMEOUT,
    FR_STATUS_MEMORY,
    FR_STATUS_VIOLATION,
    FR_STATUS_SIGNAL,
    FR_STATUS_OUTPUT_LIMIT,
    FR_STATUS_INVALID,
    FR_STATUS_CRASH,
};
enum fr_timeout_kind { FR_TIMEOUT_NONE = 0, FR_TIMEOUT_CPU, FR_TIMEOUT_WALL };

struct fr_classify_in {
    int wstatus;                /* from wait4 */
    const struct rusage *ru;    /* may be NULL */
    uint64_t cpu_limit_ms;      /* 0 = none */
    bool wall_expired;          /* the parent killed it for wall time */
    bool output_exceeded;       /* the parent killed it for output */
    int violation_nr;           /* from fr_report_read, -1 = none */
    bool memory_hint;           /* the job itself reported an allocation failure (MemoryError, ENOMEM) */
    bool oom_killed;            /* a memory cgroup reported an OOM kill */
};

struct fr_outcome {
    enum fr_status status;
    int exit_code;              /* -1 when killed by a signal */
    int signal;                 /* 0 when exited */
    enum fr_timeout_kind timeout;
    char syscall[40];           /* violation: syscall name (libseccomp), else "" */
    char signal_name[16];       /* "SIGSEGV", else "" */
};

void fr_classify(const struct fr_classify_in *in, struct fr_outcome *out);
const char *fr_status_name(enum fr_status s);          /* "ok", "timeout", ... */
const char *fr_timeout_kind_name(enum fr_timeout_kind k); /* "cpu", "wall", NULL */
int fr_preset_parse(const char *s, enum fr_preset *out);
const char *fr_preset_name(enum fr_preset p);

#endif
