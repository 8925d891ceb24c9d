/* filter.c — the seccomp filter: compiled once with libseccomp in the
 * parent, installed with one seccomp(2) in the child.
 *
 * libseccomp 2.5.4 (Debian 12) has no seccomp_export_bpf_mem() (2.6+), so
 * the parent exports the program to a memfd and reads it back into memory;
 * the child never touches libseccomp (which allocates) or a file.
 *
 * The filter is an allow-list (presets.c) whose default action reports a
 * violation:
 *   python  SECCOMP_RET_TRAP: the kernel raises SIGSYS in the job, whose
 *           handler (violation.c) writes the syscall number to the report
 *           descriptor and dies of SIGSYS. Cheap, in-process, and the job
 *           cannot take the handler over (rt_sigaction(SIGSYS) is denied).
 *   exec    SECCOMP_RET_USER_NOTIF: a handler would not survive execve,
 *           so a relay process reads the notification instead (relay.c).
 *   none    no filter, unless a deny list is given: then default allow and
 *           SECCOMP_RET_TRAP for the listed syscalls.
 * Foreign-ABI calls (i386 int 0x80, x32) are killed outright
 * (SCMP_FLTATR_ACT_BADARCH = KILL_PROCESS): they show up as a violation
 * whose syscall is unknown, and docs/sandbox.md lists that limit. */
#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fitrun/util.h"
#include "internal.h"

/* The library's own protocol needs these (the report is a write(2), the
 * relay handshake reads and closes, exiting is exit_group): denying them
 * would turn every job into a hang or an unreported kill. */
static const char *const g_reserved[] = { "read", "write", "close", "exit", "exit_group", NULL };

#define FR_NAMES_MAX 256

/* Resolve a NULL-terminated list of names; `what` is "allow" or "deny". */
static int resolve_names(const char *const *names, const char *what, int *nrs, size_t *n, char *err,
                         size_t errlen)
{
    *n = 0;
    for (size_t i = 0; names && names[i]; i++) {
        if (*n >= FR_NAMES_MAX) {
            fr_seterr(err, errlen, "too many syscalls in %s (max %d)", what, FR_NAMES_MAX);
            return -1;
        }
        int nr = seccomp_syscall_resolve_name(names[i]);
        if (nr == __NR_SCMP_ERROR) {
            fr_seterr(err, errlen, "unknown syscall '%s' in %s", names[i], what);
            return -1;
        }
        nrs[(*n)++] = nr;
    }
    return 0;
}

static int check_lists(const struct fr_policy_spec *spec, const int *deny, size_t ndeny, const int *allow,
                       size_t nallow, char *err, size_t errlen)
{
    for (size_t i = 0; i < ndeny; i++) {
        for (size_t r = 0; g_reserved[r]; r++) {
            if (deny[i] == seccomp_syscall_resolve_name(g_reserved[r])) {
                fr_seterr(err, errlen,
                          "cannot deny '%s': the sandbox's own violation reporting and exit need it",
                          spec->deny[i]);
                return -1;
            }
        }
        for (size_t a = 0; a < nallow; a++) {
            if (deny[i] == allow[a]) {
                fr_seterr(err, errlen, "syscall '%s' is in both allow and deny", spec->deny[i]);
                return -1;
            }
        }
    }
    return 0;
}

/* Export ctx's program through a memfd into out->insns. */
static int export_program(scmp_filter_ctx ctx, struct fr_filter *out, char *err, size_t errlen)
{
    int fd = memfd_create("fitrun-seccomp-bpf", MFD_CLOEXEC);
    if (fd < 0) {
        fr_seterr(err, errlen, "sandbox: memfd_create for the seccomp program: %s", strerror(errno));
        return -1;
    }
    int rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0) {
        fr_seterr(err, errlen, "sandbox: seccomp_export_bpf: %s", strerror(-rc));
        close(fd);
        return -1;
    }
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
        size / (off_t)sizeof(struct sock_filter) > FR_BPF_MAX_INSNS) {
        fr_seterr(err, errlen, "sandbox: compiled seccomp program has %lld bytes (want a multiple of %zu, at most %d instructions)",
                  (long long)size, sizeof(struct sock_filter), FR_BPF_MAX_INSNS);
        close(fd);
        return -1;
    }
    out->insns = malloc((size_t)size);
    if (!out->insns) {
        fr_seterr(err, errlen, "sandbox: out of memory for the seccomp program");
        close(fd);
        return -1;
    }
    ssize_t got = pread(fd, out->insns, (size_t)size, 0);
    int saved = errno;
    close(fd);
    if (got != (ssize_t)size) {
        fr_seterr(err, errlen, "sandbox: reading back the seccomp program: %s",
                  got < 0 ? strerror(saved) : "short read");
        return -1;
    }
    out->len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
    return 0;
}

/* Remember where the pid placeholder sits (see FR_PID_PLACEHOLDER). */
static int find_pid_slots(struct fr_filter *f, char *err, size_t errlen)
{
    for (unsigned short i = 0; i < f->len; i++) {
        if (f->insns[i].code != (BPF_JMP | BPF_JEQ | BPF_K) || f->insns[i].k != FR_PID_PLACEHOLDER)
            continue;
        if (f->npid >= FR_PID_SLOTS_MAX) {
            fr_seterr(err, errlen, "sandbox: more than %d pid comparisons in the seccomp program", FR_PID_SLOTS_MAX);
            return -1;
        }
        f->pid_at[f->npid++] = i;
    }
    return 0;
}

static int add_lists(scmp_filter_ctx ctx, const struct fr_policy_spec *spec, const int *deny, size_t ndeny,
                     const int *allow, size_t nallow, char *err, size_t errlen)
{
    int rc = 0;
    if (spec->preset == FR_PRESET_NONE) {
        for (size_t i = 0; !rc && i < ndeny; i++)
            rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, deny[i], 0);
        if (rc < 0) {
            fr_seterr(err, errlen, "sandbox: seccomp_rule_add(deny): %s", strerror(-rc));
            return -1;
        }
        return fr_presets_protect_handler(ctx, err, errlen);
    }
    if (fr_presets_add(ctx, spec->preset, deny, ndeny, err, errlen) < 0)
        return -1;
    /* An explicit allow is unconditional: it replaces the preset's argument
     * rules for that syscall (libseccomp lets the broader rule win). */
    for (size_t i = 0; !rc && i < nallow; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow[i], 0);
    if (rc < 0) {
        fr_seterr(err, errlen, "sandbox: seccomp_rule_add(allow): %s", strerror(-rc));
        return -1;
    }
    return 0;
}

int fr_filter_build(const struct fr_policy_spec *spec, struct fr_filter *out, char *err, size_t errlen)
{
    *out = (struct fr_filter){ 0 };
    out->arch = seccomp_arch_native();
    int deny[FR_NAMES_MAX], allow[FR_NAMES_MAX];
    size_t ndeny, nallow;
    if (resolve_names(spec->deny, "deny", deny, &ndeny, err, errlen) < 0 ||
        resolve_names(spec->allow, "allow", allow, &nallow, err, errlen) < 0 ||
        check_lists(spec, deny, ndeny, allow, nallow, err, errlen) < 0)
        return -1;

    uint32_t def;
    switch (spec->preset) {
    case FR_PRESET_NONE:
        if (nallow) {
            fr_seterr(err, errlen, "allow needs preset python or exec (preset none has no filter to add to)");
            return -1;
        }
        if (!ndeny)
            return 0; /* FR_FILTER_OFF */
        out->mode = FR_FILTER_TRAP;
        def = SCMP_ACT_ALLOW;
        break;
    case FR_PRESET_PYTHON:
        out->mode = FR_FILTER_TRAP;
        def = SCMP_ACT_TRAP;
        break;
    case FR_PRESET_EXEC:
        out->mode = FR_FILTER_NOTIFY;
        def = SCMP_ACT_NOTIFY;
        break;
    default:
        fr_seterr(err, errlen, "sandbox: unknown preset %d", (int)spec->preset);
        return -1;
    }

    scmp_filter_ctx ctx = seccomp_init(def);
    if (!ctx) {
        fr_seterr(err, errlen, "sandbox: seccomp_init failed (out of memory?)");
        return -1;
    }
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    /* A binary search over syscall numbers instead of a linear chain: the
     * presets list ~130 syscalls, and every syscall the job makes walks
     * the program. */
    if (!rc)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    if (rc < 0) {
        fr_seterr(err, errlen, "sandbox: seccomp_attr_set: %s", strerror(-rc));
        seccomp_release(ctx);
        return -1;
    }
    rc = add_lists(ctx, spec, deny, ndeny, allow, nallow, err, errlen);
    if (!rc)
        rc = export_program(ctx, out, err, errlen);
    seccomp_release(ctx);
    if (!rc)
        rc = find_pid_slots(out, err, errlen);
    if (rc < 0) {
        fr_filter_free(out);
        return -1;
    }
    if (spec->spec_allow)
        out->flags |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;
    return 0;
}

void fr_filter_free(struct fr_filter *f)
{
    free(f->insns);
    f->insns = NULL;
    f->len = 0;
}

/* Child side. The program is copied to the stack and patched there (the
 * job's pid; for exec without a relay, the notify action becomes a kill):
 * the policy itself is never written, so a parent's copy stays valid even
 * if the caller used vfork-like sharing. */
int fr_filter_install(const struct fr_filter *f, int pid, bool listener)
{
    struct sock_filter insns[FR_BPF_MAX_INSNS];
    memcpy(insns, f->insns, (size_t)f->len * sizeof insns[0]);
    for (int i = 0; i < f->npid; i++)
        insns[f->pid_at[i]].k = (uint32_t)pid;
    unsigned long flags = f->flags;
    if (f->mode == FR_FILTER_NOTIFY && listener) {
        flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    } else if (f->mode == FR_FILTER_NOTIFY) {
        for (unsigned short i = 0; i < f->len; i++)
            if (insns[i].code == (BPF_RET | BPF_K) &&
                (insns[i].k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF)
                insns[i].k = SECCOMP_RET_KILL_PROCESS;
    }
    struct sock_fprog prog = { .len = f->len, .filter = insns };
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
    if (rc < 0)
        return -errno;
    return (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) ? (int)rc : 0;
}
