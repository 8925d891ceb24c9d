/* policy.c — building and freeing a policy, a one-line description of it
 * and what it will enforce (fr_policy_info).
 *
 * All the work happens here, in the parent: names are resolved (syscalls
 * with libseccomp, capabilities with libcap), limits and the identity are
 * planned, the Landlock ruleset is built and the filter compiled (it
 * depends on what Landlock and the identity cover), so that
 * fr_policy_apply in the child only makes syscalls. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

/* ---- build / free -------------------------------------------------------------- */

static void free_list(char **list)
{
    for (size_t i = 0; list && list[i]; i++)
        free(list[i]);
    free(list);
}

/* NULL-terminated deep copy; NULL in, NULL out. */
static int copy_list(const char *const *in, char ***out)
{
    *out = NULL;
    if (!in)
        return 0;
    size_t n = 0;
    while (in[n])
        n++;
    char **copy = calloc(n + 1, sizeof *copy);
    if (!copy)
        return -1;
    for (size_t i = 0; i < n; i++) {
        copy[i] = strdup(in[i]);
        if (!copy[i]) {
            free_list(copy);
            return -1;
        }
    }
    *out = copy;
    return 0;
}

/* What the filter may leave to the kernel's other rules. */
static void plan_presets(const struct fr_policy_spec *spec, struct fr_policy *p)
{
    p->pc.preset = spec->preset;
    p->pc.open = p->ll.fd < 0 ? FR_OPEN_READ_ONLY : p->ll.abi >= 3 ? FR_OPEN_ANY : FR_OPEN_NO_TRUNC;
    p->pc.procs = spec->nproc != 1;
    p->pc.kill_any =
        spec->preset == FR_PRESET_EXEC && p->pc.procs && ((p->ll.fd >= 0 && p->ll.scoped) || p->id.enabled);
}

int fr_policy_check_lists(const struct fr_policy_spec *spec, const char **key, char *err, size_t errlen)
{
    const char *at = "read";
    int r = fr_landlock_check_paths(spec->read_paths, "read", err, errlen);
    if (r == 0 && (r = fr_landlock_check_paths(spec->write_paths, "write", err, errlen)) < 0)
        at = "write";
    if (r == 0)
        r = fr_filter_check_names(spec, &at, err, errlen);
    if (r < 0 && key)
        *key = at;
    return r;
}

int fr_policy_build(const struct fr_policy_spec *spec, struct fr_policy **out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!out) {
        fr_seterr(err, errlen, "sandbox: fr_policy_build needs somewhere to put the policy");
        return -1;
    }
    *out = NULL;
    if (!spec) {
        fr_seterr(err, errlen, "sandbox: no policy spec given");
        return -1;
    }
    if (spec->preset != FR_PRESET_NONE && spec->preset != FR_PRESET_EXEC && spec->preset != FR_PRESET_PYTHON) {
        fr_seterr(err, errlen, "sandbox: unknown preset %d (expected none, exec or python)", (int)spec->preset);
        return -1;
    }
    struct fr_policy *p = calloc(1, sizeof *p);
    if (!p) {
        fr_seterr(err, errlen, "sandbox: out of memory for a policy");
        return -1;
    }
    p->preset = spec->preset;
    p->spec_allow = spec->spec_allow;
    p->limits = *spec;
    p->limits.allow = p->limits.deny = p->limits.keep_caps = NULL;
    p->limits.read_paths = p->limits.write_paths = NULL;
    p->ll.fd = -1;
    if (fr_rlimits_plan(spec, &p->rl, err, errlen) < 0 || fr_caps_plan(spec->keep_caps, &p->caps, err, errlen) < 0 ||
        fr_identity_plan(spec, p->caps.keep != 0, &p->id, err, errlen) < 0 ||
        fr_landlock_build(spec, &p->ll, err, errlen) < 0) {
        fr_policy_free(p);
        return -1;
    }
    plan_presets(spec, p);
    if (fr_filter_build(spec, &p->pc, &p->filter, err, errlen) < 0) {
        fr_policy_free(p);
        return -1;
    }
    if (copy_list(spec->allow, &p->allow) < 0 || copy_list(spec->deny, &p->deny) < 0 ||
        copy_list(spec->keep_caps, &p->keep) < 0) {
        fr_seterr(err, errlen, "sandbox: out of memory copying the policy's lists");
        fr_policy_free(p);
        return -1;
    }
    *out = p;
    return 0;
}

void fr_policy_free(struct fr_policy *p)
{
    if (!p)
        return;
    fr_filter_free(&p->filter);
    fr_caps_plan_free(&p->caps);
    fr_landlock_free(&p->ll);
    free_list(p->allow);
    free_list(p->deny);
    free_list(p->keep);
    free(p);
}

/* ---- description --------------------------------------------------------------- */

struct sbuf {
    char *buf;
    size_t len, used; /* used may exceed len: snprintf semantics */
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->used < b->len ? b->len - b->used : 0;
    int n = vsnprintf(room ? b->buf + b->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        b->used += (size_t)n;
}

static void sb_size(struct sbuf *b, const char *name, uint64_t v)
{
    char tmp[32];
    if (v)
        sb_printf(b, " %s=%s", name, fr_format_size(v, tmp, sizeof tmp));
}

static void sb_list(struct sbuf *b, const char *name, char *const *list)
{
    if (!list || !list[0])
        return;
    sb_printf(b, " %s=", name);
    for (size_t i = 0; list[i]; i++)
        sb_printf(b, "%s%s", i ? "," : "", list[i]);
}

int fr_policy_describe(const struct fr_policy *p, char *buf, size_t len)
{
    struct sbuf b = {buf, len, 0};
    if (len)
        buf[0] = '\0';
    static const char *const modes[] = {"off", "notify"};
    sb_printf(&b, "preset=%s seccomp=%s", fr_preset_name(p->preset), modes[p->filter.mode]);
    if (p->filter.mode != FR_FILTER_OFF)
        sb_printf(&b, "(%u insns)", p->filter.len);
    sb_printf(&b, " spec_allow=%s", p->spec_allow ? "yes" : "no");
    const struct fr_policy_spec *s = &p->limits;
    if (s->cpu_ms) {
        uint64_t soft = (s->cpu_ms + 999) / 1000;
        sb_printf(&b, " cpu=%llus(hard %llus)", (unsigned long long)soft, (unsigned long long)soft + 1);
    }
    sb_size(&b, "as", s->as_bytes);
    sb_size(&b, "fsize", s->fsize_bytes);
    if (s->nofile)
        sb_printf(&b, " nofile=%llu", (unsigned long long)s->nofile);
    if (s->nproc)
        sb_printf(&b, " nproc=%llu", (unsigned long long)s->nproc);
    sb_size(&b, "stack", s->stack_bytes);
    sb_printf(&b, " core=%llu", (unsigned long long)s->core_bytes);
    if (p->keep && p->keep[0])
        sb_list(&b, "caps", p->keep);
    else
        sb_printf(&b, " caps=none");
    sb_list(&b, "allow", p->allow);
    sb_list(&b, "deny", p->deny);
    if (p->limits.fs != FR_FS_OFF) {
        if (p->ll.fd >= 0)
            sb_printf(&b, " landlock=%s(abi %d, %u read, %u write)", fr_fs_base_name(p->limits.fs), p->ll.abi,
                      p->ll.nread, p->ll.nwrite);
        else
            sb_printf(&b, " landlock=unavailable");
    }
    if (p->id.enabled)
        sb_printf(&b, " uids=%u-%u", p->id.base, p->id.base + (unsigned)p->id.slots - 1);
    return b.used > (size_t)0x7fffffff ? -1 : (int)b.used;
}

/* ---- what will be enforced -------------------------------------------------------- */

/* Does an allow list add a call that creates a process (or a thread)? */
static bool allows_processes(char *const *allow)
{
    static const char *const calls[] = {"fork", "vfork", "clone", "clone3"};
    for (size_t i = 0; allow && allow[i]; i++)
        for (size_t j = 0; j < sizeof calls / sizeof *calls; j++)
            if (!strcmp(allow[i], calls[j]))
                return true;
    return false;
}

void fr_policy_info(const struct fr_policy *p, struct fr_policy_info *out)
{
    memset(out, 0, sizeof *out);
    out->preset = p->preset;
    out->seccomp = p->filter.mode == FR_FILTER_OFF ? "off" : "notify";
    out->filter_insns = p->filter.len;
    out->spec_allow = p->spec_allow;
    out->fs = p->limits.fs;
    out->landlock_abi = p->ll.abi;
    out->landlock = p->ll.fd >= 0;
    snprintf(out->landlock_why, sizeof out->landlock_why, "%s",
             p->limits.fs == FR_FS_OFF ? "not asked for (fs=off)" : p->ll.why);
    if (out->landlock)
        out->landlock_why[0] = '\0';
    static const char *const opens[] = {
        [FR_OPEN_READ_ONLY] = "denied", [FR_OPEN_NO_TRUNC] = "landlock, no O_TRUNC", [FR_OPEN_ANY] = "landlock"};
    out->write_opens = p->filter.mode == FR_FILTER_OFF ? (out->landlock ? "landlock" : "allowed") : opens[p->pc.open];
    out->scoped = out->landlock && p->ll.scoped;
    out->nread = p->ll.nread;
    out->nwrite = p->ll.nwrite;
    out->processes =
        p->filter.mode == FR_FILTER_OFF || (p->preset == FR_PRESET_EXEC && p->pc.procs) || allows_processes(p->allow);
    out->identity = p->id.enabled;
    out->uid_first = p->id.base;
    out->uid_last = p->id.base + (uint32_t)p->id.slots - 1;
    snprintf(out->identity_why, sizeof out->identity_why, "%s", p->id.enabled ? "" : p->id.why);
    out->uid = p->id.builder_uid;
    out->keep_caps = p->caps.keep;
    /* Dropping the bounding set needs CAP_SETPCAP in the effective set. */
    cap_t cur = cap_get_proc();
    cap_flag_value_t v = CAP_CLEAR;
    out->bounding = cur && cap_get_flag(cur, CAP_SETPCAP, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
    if (cur)
        cap_free(cur);
}

bool fr_policy_may_read(const struct fr_policy *p, const char *path)
{
    char real[PATH_MAX];
    if (!p || p->ll.fd < 0 || !realpath(path, real))
        return false;
    for (size_t i = 0; p->ll.granted && p->ll.granted[i]; i++) {
        const char *g = p->ll.granted[i];
        size_t n = strlen(g);
        if (!strncmp(real, g, n) && (real[n] == '\0' || real[n] == '/' || (n == 1 && g[0] == '/')))
            return true;
    }
    return false;
}

int fr_policy_prepare_worker(struct fr_policy *p)
{
    if (!p)
        return -EINVAL;
    return fr_caps_prepare_worker(&p->caps);
}

int fr_policy_fd(const struct fr_policy *p)
{
    return p ? p->ll.fd : -1;
}

const void *fr_policy_bpf(const struct fr_policy *p, size_t *ninsns)
{
    if (ninsns)
        *ninsns = p ? p->filter.len : 0;
    return p ? p->filter.insns : NULL;
}
