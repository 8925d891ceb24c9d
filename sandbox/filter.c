/* filter.c — the seccomp filter: compiled once with libseccomp in the
 * parent, installed with one seccomp(2) in the child.
 *
 * libseccomp 2.5.4 (Debian 12) has no seccomp_export_bpf_mem() (2.6+), so
 * the parent exports the program to a memfd and reads it back into memory;
 * the child never touches libseccomp (which allocates) or a file.
 *
 * Every filter's deny action is SECCOMP_RET_USER_NOTIF: the denied call
 * parks the thread and a supervisor reads its number from the listener
 * (notify.c, relay.c). That is the only record of a violation, and the job
 * cannot write it.
 *   python, exec  an allow-list (presets.c); anything else notifies
 *   none          no filter, unless a deny list is given: then default
 *                 allow, and the listed calls notify
 * Foreign-ABI calls (i386 int 0x80, x32) notify too (the bad-arch action),
 * named FR_VIOLATION_FOREIGN. Without a supervisor (fr_policy_apply with
 * report_fd < 0) the child turns every notify into KILL_PROCESS: violations
 * then kill with an unnamed SIGSYS.
 *
 * Besides the preset, every filter lets sendmsg through on one descriptor:
 * the hand-off socket on which the job passes the listener to its
 * supervisor right after installing the filter (FR_FD_PLACEHOLDER, patched
 * by the child like the pid). */
#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* The library's own protocol needs these (the listener is handed over with
 * sendmsg and closed, exiting is exit_group; read and write carry the jobs'
 * own pipes): denying them would turn every job into a hang or an
 * unreported kill. */
static const char *const g_reserved[] = {"read", "write", "close", "sendmsg", "exit", "exit_group", NULL};

#define FR_NAMES_MAX 256

/* Resolve a NULL-terminated list of names; `what` is "allow" or "deny". */
static int resolve_names(const char *const *names, const char *what, int *nrs, size_t *n, char *err, size_t errlen)
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

static bool skipped_nr(int nr, const int *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == nr)
            return true;
    return false;
}

static int check_lists(const struct fr_policy_spec *spec, const int *deny, size_t ndeny, const int *allow,
                       size_t nallow, char *err, size_t errlen)
{
    for (size_t i = 0; i < ndeny; i++) {
        for (size_t r = 0; g_reserved[r]; r++) {
            if (deny[i] == seccomp_syscall_resolve_name(g_reserved[r])) {
                fr_seterr(err, errlen, "cannot deny '%s': the sandbox's own violation reporting and exit need it",
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
        fr_seterr(err, errlen,
                  "sandbox: compiled seccomp program has %lld bytes (want a multiple of %zu, at most %d instructions)",
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

/* Remember where a placeholder sits (see FR_PID_PLACEHOLDER). */
static int find_slots(struct fr_filter *f, uint32_t placeholder, unsigned short *at, int *n, char *err, size_t errlen)
{
    for (unsigned short i = 0; i < f->len; i++) {
        if (f->insns[i].code != (BPF_JMP | BPF_JEQ | BPF_K) || f->insns[i].k != placeholder)
            continue;
        if (*n >= FR_PATCH_SLOTS_MAX) {
            fr_seterr(err, errlen, "sandbox: more than %d placeholder comparisons in the seccomp program",
                      FR_PATCH_SLOTS_MAX);
            return -1;
        }
        at[(*n)++] = i;
    }
    return 0;
}

static int add_lists(scmp_filter_ctx ctx, const struct fr_policy_spec *spec, const struct fr_preset_ctx *pc,
                     const int *deny, size_t ndeny, const int *allow, size_t nallow, char *err, size_t errlen)
{
    int rc = 0;
    if (spec->preset == FR_PRESET_NONE) {
        for (size_t i = 0; !rc && i < ndeny; i++)
            rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, deny[i], 0);
        if (rc < 0) {
            fr_seterr(err, errlen, "sandbox: seccomp_rule_add(deny): %s", strerror(-rc));
            return -1;
        }
        return 0; /* default allow: sendmsg (reserved) passes anyway */
    }
    /* The preset skips what the caller lists: a denied call falls to the
     * default action, an allowed one gets the caller's unconditional rule
     * (which would win over the preset's argument rules anyway). */
    int skip[2 * 256];
    size_t nskip = 0;
    for (size_t i = 0; i < ndeny && nskip < sizeof skip / sizeof skip[0]; i++)
        skip[nskip++] = deny[i];
    for (size_t i = 0; i < nallow && nskip < sizeof skip / sizeof skip[0]; i++)
        skip[nskip++] = allow[i];
    if (fr_presets_add(ctx, pc, skip, nskip, err, errlen) < 0)
        return -1;
    for (size_t i = 0; !rc && i < nallow; i++)
        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow[i], 0);
    if (rc < 0) {
        fr_seterr(err, errlen, "sandbox: seccomp_rule_add(allow): %s", strerror(-rc));
        return -1;
    }
    /* The listener hand-off (notify.c), unless the caller allowed sendmsg
     * outright. */
    if (!skipped_nr(SCMP_SYS(sendmsg), allow, nallow)) {
        struct scmp_arg_cmp c = SCMP_CMP(0, SCMP_CMP_EQ, FR_FD_PLACEHOLDER, 0);
        rc = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sendmsg), 1, &c);
        if (rc < 0) {
            fr_seterr(err, errlen, "sandbox: seccomp_rule_add(sendmsg hand-off): %s", strerror(-rc));
            return -1;
        }
    }
    return 0;
}

int fr_filter_check_names(const struct fr_policy_spec *spec, const char **key, char *err, size_t errlen)
{
    int deny[FR_NAMES_MAX], allow[FR_NAMES_MAX];
    size_t ndeny, nallow;
    const char *at = "deny";
    int r = resolve_names(spec->deny, "deny", deny, &ndeny, err, errlen);
    if (r == 0 && (r = resolve_names(spec->allow, "allow", allow, &nallow, err, errlen)) < 0)
        at = "allow";
    if (r == 0)
        r = check_lists(spec, deny, ndeny, allow, nallow, err, errlen);
    if (r == 0 && spec->preset == FR_PRESET_NONE && nallow) {
        fr_seterr(err, errlen, "allow needs preset python or exec (preset none has no filter to add to)");
        at = "allow";
        r = -1;
    }
    if (r < 0 && key)
        *key = at;
    return r;
}

int fr_filter_build(const struct fr_policy_spec *spec, const struct fr_preset_ctx *pc, struct fr_filter *out, char *err,
                    size_t errlen)
{
    *out = (struct fr_filter){0};
    out->arch = seccomp_arch_native();
    int deny[FR_NAMES_MAX], allow[FR_NAMES_MAX];
    size_t ndeny, nallow;
    if (fr_filter_check_names(spec, NULL, err, errlen) < 0)
        return -1;
    /* Checked: these resolve. */
    (void)resolve_names(spec->deny, "deny", deny, &ndeny, err, errlen);
    (void)resolve_names(spec->allow, "allow", allow, &nallow, err, errlen);

    uint32_t def;
    switch (spec->preset) {
    case FR_PRESET_NONE:
        if (!ndeny)
            return 0; /* FR_FILTER_OFF */
        def = SCMP_ACT_ALLOW;
        break;
    case FR_PRESET_PYTHON:
    case FR_PRESET_EXEC: def = SCMP_ACT_NOTIFY; break;
    default: fr_seterr(err, errlen, "sandbox: unknown preset %d", (int)spec->preset); return -1;
    }
    out->mode = FR_FILTER_NOTIFY;

    scmp_filter_ctx ctx = seccomp_init(def);
    if (!ctx) {
        fr_seterr(err, errlen, "sandbox: seccomp_init failed (out of memory?)");
        return -1;
    }
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_NOTIFY);
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
    rc = add_lists(ctx, spec, pc, deny, ndeny, allow, nallow, err, errlen);
    if (!rc)
        rc = export_program(ctx, out, err, errlen);
    seccomp_release(ctx);
    if (!rc)
        rc = find_slots(out, FR_PID_PLACEHOLDER, out->pid_at, &out->npid, err, errlen);
    if (!rc)
        rc = find_slots(out, FR_FD_PLACEHOLDER, out->fd_at, &out->nfd, err, errlen);
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
 * job's pid and hand-off socket; without a listener, notify becomes a
 * kill): the policy itself is never written, so a parent's copy stays valid
 * even if the caller used vfork-like sharing. */
int fr_filter_install(const struct fr_filter *f, int pid, int sock, bool listener)
{
    struct sock_filter insns[FR_BPF_MAX_INSNS];
    memcpy(insns, f->insns, (size_t)f->len * sizeof insns[0]);
    for (int i = 0; i < f->npid; i++)
        insns[f->pid_at[i]].k = (uint32_t)pid;
    /* No socket: a descriptor number no process can have keeps the rule dead. */
    for (int i = 0; i < f->nfd; i++)
        insns[f->fd_at[i]].k = sock >= 0 ? (uint32_t)sock : FR_FD_PLACEHOLDER;
    unsigned long flags = f->flags;
    if (listener) {
        flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    } else {
        for (unsigned short i = 0; i < f->len; i++)
            if (insns[i].code == (BPF_RET | BPF_K) && (insns[i].k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF)
                insns[i].k = SECCOMP_RET_KILL_PROCESS;
    }
    struct sock_fprog prog = {.len = f->len, .filter = insns};
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
    if (rc < 0)
        return -errno;
    return listener ? (int)rc : 0;
}
