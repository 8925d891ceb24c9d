/* sandbox/internal.h — what the sandbox's files share; not installed.
 *
 * Each file does one job:
 *   policy.c     build/free a policy, "key=value;..." parsing, describe
 *   rlimits.c    rlimit plan (parent) and application (child)
 *   caps.c       capability plan with libcap (parent) and drop (child)
 *   presets.c    the syscall allow-lists, with the reasoning per group
 *   filter.c     libseccomp -> BPF in memory (parent), install (child)
 *   violation.c  the SIGSYS handler and the report record (python preset)
 *   relay.c      the user-notification relay (exec preset)
 *   apply.c      fr_policy_apply: the ordered, async-signal-safe child side
 *   classify.c   outcome classification and names
 *
 * Everything called from fr_policy_apply() (names ending in _apply,
 * fr_filter_install, fr_violation_arm, the relay) is async-signal-safe:
 * system calls only, no malloc, no stdio, no locks, no file access. */
#ifndef FITRUN_SANDBOX_INTERNAL_H
#define FITRUN_SANDBOX_INTERNAL_H

#include <linux/filter.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include "fitrun/sandbox.h"

/* printf-style message into err (never overflows, always terminated). */

/* ---- rlimits.c ---------------------------------------------------------- */
#define FR_RLIMIT_MAX 8
struct fr_rlimit_plan {
    int n;
    int resource[FR_RLIMIT_MAX];
    struct rlimit value[FR_RLIMIT_MAX];
};
int fr_rlimits_plan(const struct fr_policy_spec *spec, struct fr_rlimit_plan *out, char *err, size_t errlen);
/* Child side. Returns 0 or -errno. */
int fr_rlimits_apply(const struct fr_rlimit_plan *plan);

/* ---- caps.c --------------------------------------------------------------- */
struct fr_caps_plan {
    cap_t state;       /* E = P = I = the kept capabilities (libcap, built in the parent) */
    uint64_t keep;     /* bit n set = capability n is kept */
    uint64_t bounding; /* the builder's bounding set when planned (children hold a subset) */
    int last_cap;      /* highest capability number the running kernel knows */
};
int fr_caps_plan(const char *const *keep, struct fr_caps_plan *out, char *err, size_t errlen);
void fr_caps_plan_free(struct fr_caps_plan *plan);
/* Child side. Returns 0 or -errno. */
int fr_caps_apply(const struct fr_caps_plan *plan);
/* Parent side (fr_policy_prepare_worker): drop the bounding set in the
 * calling process and record what is left. Returns 0 or -errno. */
int fr_caps_prepare_worker(struct fr_caps_plan *plan);

/* ---- presets.c ------------------------------------------------------------ */
/* Add the preset's allow rules to ctx, skipping the syscall numbers in
 * skip[0..nskip). Rules that must compare against the child's own pid use
 * FR_PID_PLACEHOLDER (see filter.c). Returns 0 or -1 with err set. */
int fr_presets_add(scmp_filter_ctx ctx, enum fr_preset preset, const int *skip, size_t nskip,
                   char *err, size_t errlen);
/* Rules that keep the SIGSYS handler ours when the default action is
 * "allow" (preset none with a deny list). */
int fr_presets_protect_handler(scmp_filter_ctx ctx, char *err, size_t errlen);

/* ---- filter.c ------------------------------------------------------------- */
/* A pid no process can have (pid_max is at most 2^22): the filter compares
 * kill/tkill/tgkill's target against it, and the child patches its real
 * pid in (on a stack copy of the program) just before installing it. */
#define FR_PID_PLACEHOLDER 0x7ff1d0d0u
/* Upper bound on the compiled program: the child copies it to its stack. */
#define FR_BPF_MAX_INSNS 2048
#define FR_PID_SLOTS_MAX 16

enum fr_filter_mode {
    FR_FILTER_OFF = 0,   /* preset none without a deny list: no filter */
    FR_FILTER_TRAP,      /* denied -> SECCOMP_RET_TRAP -> our SIGSYS handler (violation.c) */
    FR_FILTER_NOTIFY,    /* denied -> SECCOMP_RET_USER_NOTIF -> the relay (relay.c) */
};

struct fr_filter {
    enum fr_filter_mode mode;
    struct sock_filter *insns;
    unsigned short len;
    unsigned int flags;                    /* SECCOMP_FILTER_FLAG_* (spec_allow) */
    unsigned short pid_at[FR_PID_SLOTS_MAX]; /* instructions whose k is FR_PID_PLACEHOLDER */
    int npid;
    uint32_t arch;                         /* native AUDIT_ARCH_* the filter accepts */
};
int fr_filter_build(const struct fr_policy_spec *spec, struct fr_filter *out, char *err, size_t errlen);
void fr_filter_free(struct fr_filter *f);
/* Child side: install f with `pid` patched in. With listener, asks for a
 * user-notification descriptor and returns it (>= 0); without, the
 * USER_NOTIF action is turned into KILL_PROCESS and 0 is returned.
 * Returns -errno on failure. */
int fr_filter_install(const struct fr_filter *f, int pid, bool listener);

/* ---- violation.c ---------------------------------------------------------- */
/* The record a violation leaves on the report descriptor (one write(2),
 * far below PIPE_BUF, so it is atomic on a pipe). */
#define FR_REPORT_MAGIC 0x46525631u /* "FRV1" */
struct fr_report_record {
    uint32_t magic;
    uint32_t arch;      /* AUDIT_ARCH_* of the trapped call */
    int32_t nr;         /* syscall number */
    uint32_t check;     /* ~magic ^ arch ^ nr: rejects torn or shifted reads */
};
/* AS-safe: fill and write one record. Returns 0 or -errno. */
int fr_report_write(int fd, uint32_t arch, int nr);
/* Child side: install the SIGSYS handler writing to report_fd and make
 * sure SIGSYS is not blocked. Returns 0 or -errno. */
int fr_violation_arm(int report_fd, uint32_t native_arch);
/* AS-safe: terminate the calling process with SIGSYS (never returns). */
_Noreturn void fr_die_by_signal(int sig);

/* ---- the policy ------------------------------------------------------------ */
struct fr_policy {
    enum fr_preset preset;
    bool spec_allow;
    struct fr_policy_spec limits;  /* scalar fields only (lists are NULL), for describe */
    struct fr_rlimit_plan rl;
    struct fr_caps_plan caps;
    struct fr_filter filter;
    char **allow, **deny, **keep;  /* owned copies, NULL-terminated (may be NULL) */
};

/* ---- relay.c ---------------------------------------------------------------- */
/* Child side for FR_FILTER_NOTIFY with a report descriptor: forks the job.
 * Returns 0 (or -errno) in the job; in the calling process it supervises
 * the job and never returns. */
int fr_relay_apply(const struct fr_policy *p, int report_fd);
/* The steps the job itself runs (apply.c): rlimits, no_new_privs, caps. */
int fr_apply_common(const struct fr_policy *p);

#endif
