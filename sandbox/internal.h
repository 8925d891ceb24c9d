/* sandbox/internal.h — what the sandbox's files share; not installed.
 *
 * Each file does one job, and depends only on files listed below it:
 *   pack.c       a spec as one byte string, a policy built from one
 *   policy.c     build/free a policy, describe, info
 *   apply.c      the child's entry points: steps, then the filter
 *   worker.c     fork isolation's worker: a child per RUN, supervised, reported
 *   relay.c      the supervising relay process (fr_policy_apply with a report fd)
 *   steps.c      the ordered steps before the filter (rlimits ... Landlock)
 *   violation.c  the relay's report record, death by a given signal
 *   notify.c     handing the filter's listener to a supervisor, reading it
 *   filter.c     libseccomp -> BPF in memory (parent), install (child)
 *   presets.c    the syscall allow-lists, with the reasoning per group; preset names
 *   landlock.c   Landlock: ABI probe, ruleset (parent), restrict (child); base set names
 *   identity.c   per-slot uid/gid: plan (parent) and switch (child)
 *   caps.c       capability plan with libcap (parent) and drop (child)
 *   rlimits.c    rlimit plan (parent) and application (child)
 *   names.c      system call and signal names
 *
 * Everything called from the apply entry points (names ending in _apply,
 * fr_filter_install, fr_notify_send, the relay) is async-signal-safe:
 * system calls only, no malloc, no stdio, no locks, no file access by
 * path (the relay's parent-death sweep aside, which reads nothing). */
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
    cap_t relay;       /* E = P = CAP_KILL (when the builder had it): the relay's */
    uint64_t keep;     /* bit n set = capability n is kept */
    uint64_t bounding; /* the builder's bounding set when planned (children hold a subset) */
    int last_cap;      /* highest capability number the running kernel knows */
};
int fr_caps_plan(const char *const *keep, struct fr_caps_plan *out, char *err, size_t errlen);
void fr_caps_plan_free(struct fr_caps_plan *plan);
/* Child side, in two steps around an identity switch: the bounding set
 * (needs CAP_SETPCAP), then ambient + E/P/I. Each returns 0 or -errno. */
int fr_caps_drop_bounding(const struct fr_caps_plan *plan);
int fr_caps_set(const struct fr_caps_plan *plan);
/* The relay: everything dropped but CAP_KILL (it kills jobs of other uids). */
int fr_caps_relay(const struct fr_caps_plan *plan);
/* Parent side (fr_policy_prepare_worker): drop the bounding set in the
 * calling process and record what is left. Returns 0 or -errno. */
int fr_caps_prepare_worker(struct fr_caps_plan *plan);

/* ---- identity.c ----------------------------------------------------------- */
struct fr_identity_plan {
    bool enabled;         /* switch uid/gid in the child */
    bool keep_caps;       /* kept capabilities must survive the switch (PR_SET_KEEPCAPS) */
    uint32_t base;        /* slot k -> uid = gid = base + k */
    int slots;            /* slots checked against the namespace's id maps */
    unsigned builder_uid; /* euid of the builder */
    char why[200];        /* !enabled: why not */
};
int fr_identity_plan(const struct fr_policy_spec *spec, bool keep_caps, struct fr_identity_plan *out, char *err,
                     size_t errlen);
/* Child side: setgroups(0), setresgid, setresuid to slot's ids (nothing
 * for slot < 0 or a disabled plan). Returns 0 or -errno. */
int fr_identity_apply(const struct fr_identity_plan *plan, int slot);

/* ---- landlock.c ------------------------------------------------------------ */
struct fr_landlock {
    int abi;             /* running kernel's ABI, 0 = none */
    int fd;              /* the prepared ruleset (O_CLOEXEC), -1 = none */
    uint64_t handled_fs; /* access rights the ruleset handles (all of the ABI's) */
    uint64_t scoped;     /* LANDLOCK_SCOPE_* (ABI >= 6) */
    unsigned nread, nwrite;
    char **granted; /* realpaths with read access, NULL-terminated (fr_policy_may_read) */
    char why[200];  /* fs != off and fd < 0: why */
};
/* Parent side: build the ruleset for spec (fs, read_paths, write_paths).
 * Landlock missing is not an error unless spec->require_landlock; a
 * missing or relative path in read/write is. Returns 0 or -1 with err. */
int fr_landlock_build(const struct fr_policy_spec *spec, struct fr_landlock *out, char *err, size_t errlen);
/* The read or write list's paths (what: "read", "write"): absolute, and
 * existing unless marked optional. 0, or -1 with err. */
int fr_landlock_check_paths(const char *const *paths, const char *what, char *err, size_t errlen);
void fr_landlock_free(struct fr_landlock *ll);
/* Child side (after no_new_privs): restrict the calling thread, then close
 * the ruleset descriptor. Returns 0 or -errno. */
int fr_landlock_apply(const struct fr_landlock *ll);

/* ---- presets.c ------------------------------------------------------------ */
/* How much of open(2) the filter lets through (the rest of file-system
 * writing follows: Landlock rules paths, seccomp rules what Landlock cannot). */
enum fr_open_mode {
    FR_OPEN_READ_ONLY = 0, /* no Landlock: no write-ish flag at all */
    FR_OPEN_NO_TRUNC,      /* Landlock ABI 1-2: writes ruled by Landlock, but truncation is not: no O_TRUNC */
    FR_OPEN_ANY,           /* Landlock ABI >= 3 rules writes and truncation */
};
/* What the presets depend on besides the preset itself. */
struct fr_preset_ctx {
    enum fr_preset preset;
    enum fr_open_mode open;
    bool procs;    /* processes != 1: shells and pipelines (exec) */
    bool kill_any; /* signals cannot leave the job (Landlock scope, per-slot uid) */
};
/* Add the preset's rules to ctx, skipping the syscall numbers in
 * skip[0..nskip) (the caller's allow and deny lists). Rules that must
 * compare against the child's own pid use FR_PID_PLACEHOLDER (see
 * filter.c). Returns 0 or -1 with err set. */
int fr_presets_add(scmp_filter_ctx ctx, const struct fr_preset_ctx *pc, const int *skip, size_t nskip, char *err,
                   size_t errlen);

/* ---- filter.c ------------------------------------------------------------- */
/* Values no process or descriptor can have (pid_max is at most 2^22, a
 * descriptor number is below RLIMIT_NOFILE's 2^20 ceiling): the filter
 * compares kill/tkill/tgkill's target and sendmsg's socket against them,
 * and the child patches its real pid and its hand-off socket in (on a
 * stack copy of the program) just before installing it. */
#define FR_PID_PLACEHOLDER 0x7ff1d0d0u
#define FR_FD_PLACEHOLDER 0x7ff1fdfdu
/* Upper bound on the compiled program: the child copies it to its stack. */
#define FR_BPF_MAX_INSNS 2048
#define FR_PATCH_SLOTS_MAX 16

enum fr_filter_mode {
    FR_FILTER_OFF = 0, /* preset none without a deny list: no filter */
    FR_FILTER_NOTIFY,  /* denied -> SECCOMP_RET_USER_NOTIF -> a supervisor (relay.c, notify.c) */
};

struct fr_filter {
    enum fr_filter_mode mode;
    struct sock_filter *insns;
    unsigned short len;
    unsigned int flags;                        /* SECCOMP_FILTER_FLAG_* (spec_allow) */
    unsigned short pid_at[FR_PATCH_SLOTS_MAX]; /* instructions whose k is FR_PID_PLACEHOLDER */
    int npid;
    unsigned short fd_at[FR_PATCH_SLOTS_MAX]; /* instructions whose k is FR_FD_PLACEHOLDER */
    int nfd;
    uint32_t arch; /* native AUDIT_ARCH_* the filter accepts */
};
/* The allow and deny names: known system calls, none in both lists, none
 * that the sandbox itself needs denied, no allow without a preset's
 * filter. 0, or -1 with err and *key (the list at fault: "allow" or
 * "deny"). */
int fr_filter_check_names(const struct fr_policy_spec *spec, const char **key, char *err, size_t errlen);
int fr_filter_build(const struct fr_policy_spec *spec, const struct fr_preset_ctx *pc, struct fr_filter *out, char *err,
                    size_t errlen);
void fr_filter_free(struct fr_filter *f);
/* Child side: install f with `pid` and `sock` (the hand-off socket, -1 =
 * none) patched in. With listener, asks for a user-notification descriptor
 * and returns it (>= 0); without, the USER_NOTIF actions become
 * KILL_PROCESS and 0 is returned. Returns -errno on failure. */
int fr_filter_install(const struct fr_filter *f, int pid, int sock, bool listener);

/* ---- notify.c ------------------------------------------------------------- */
/* Child side: send listener (>= 0) over sock with SCM_RIGHTS, or (-1) a
 * message saying there is none. One sendmsg. Returns 0 or -errno. */
int fr_notify_send(int sock, int listener);
/* The violation number a notification's (arch, nr) stands for. */
int fr_violation_nr(uint32_t arch, int nr, uint32_t native_arch);

/* ---- violation.c ---------------------------------------------------------- */
/* The record the relay leaves on the report descriptor (one write(2), far
 * below PIPE_BUF, so it is atomic on a pipe). */
#define FR_REPORT_MAGIC 0x46525632u /* "FRV2" */
struct fr_report_record {
    uint32_t magic;
    uint32_t arch;  /* AUDIT_ARCH_* of the denied call */
    int32_t nr;     /* syscall number */
    uint32_t check; /* ~magic ^ arch ^ nr: rejects torn or shifted reads */
};
/* AS-safe: fill and write one record. Returns 0 or -errno. */
int fr_report_write(int fd, uint32_t arch, int nr);
/* AS-safe: terminate the calling process with `sig` (never returns). */
_Noreturn void fr_die_by_signal(int sig);

/* ---- the policy ------------------------------------------------------------ */
struct fr_policy {
    enum fr_preset preset;
    bool spec_allow;
    struct fr_policy_spec limits; /* scalar fields only (lists are NULL), for describe */
    struct fr_rlimit_plan rl;
    struct fr_caps_plan caps;
    struct fr_identity_plan id;
    struct fr_landlock ll;
    struct fr_preset_ctx pc;
    struct fr_filter filter;
    char **allow, **deny, **keep; /* owned copies, NULL-terminated (may be NULL) */
};

/* ---- steps.c / relay.c ------------------------------------------------------ */
/* Everything before the filter, in order: rlimits, no_new_privs, bounding
 * set, identity (slot), E/P/I + ambient, not dumpable, Landlock. A
 * PR_SET_PDEATHSIG the caller armed survives the identity switch (the
 * kernel clears it on a uid change): it is re-armed, and if the parent
 * died meanwhile, -ESRCH. Returns 0 or -errno. */
int fr_apply_steps(const struct fr_policy *p, int slot);
/* fr_policy_apply_slot with a report descriptor: forks the job. Returns 0
 * (or -errno) in the job; in the calling process it supervises the job and
 * never returns. */
int fr_relay_apply(const struct fr_policy *p, int report_fd, int slot);

#endif
