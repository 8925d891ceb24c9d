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
 * Async-signal-safe. Returns 0 or -errno of the first failing step. */
int fr_policy_apply(const struct fr_policy *p, int report_fd);

/* Parent side: read the child's report (non-blocking is fine) after it has
 * exited. Returns the violating syscall number, or -1 if none was reported. */
int fr_report_read(int report_fd);

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
