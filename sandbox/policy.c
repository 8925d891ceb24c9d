/* policy.c — building and freeing a policy, the "key=value;..." form used
 * through ctypes, preset names and a one-line description.
 *
 * All the work happens here, in the parent: names are resolved (syscalls
 * with libseccomp, capabilities with libcap), limits are planned and the
 * filter compiled, so that fr_policy_apply in the child only makes
 * syscalls. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/util.h"
#include "internal.h"

static const char *const g_preset_names[] = {
    [FR_PRESET_NONE] = "none",
    [FR_PRESET_EXEC] = "exec",
    [FR_PRESET_PYTHON] = "python",
};

int fr_preset_parse(const char *s, enum fr_preset *out)
{
    for (size_t i = 0; s && i < sizeof g_preset_names / sizeof g_preset_names[0]; i++) {
        if (strcmp(s, g_preset_names[i]) == 0) {
            *out = (enum fr_preset)i;
            return 0;
        }
    }
    return -1;
}

const char *fr_preset_name(enum fr_preset p)
{
    if ((unsigned)p < sizeof g_preset_names / sizeof g_preset_names[0])
        return g_preset_names[p];
    return "unknown";
}

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
    if ((unsigned)spec->preset >= sizeof g_preset_names / sizeof g_preset_names[0]) {
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
    if (fr_rlimits_plan(spec, &p->rl, err, errlen) < 0 || fr_caps_plan(spec->keep_caps, &p->caps, err, errlen) < 0 ||
        fr_filter_build(spec, &p->filter, err, errlen) < 0) {
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
    free_list(p->allow);
    free_list(p->deny);
    free_list(p->keep);
    free(p);
}

/* ---- "key=value;key=value" ---------------------------------------------------------- */

#define FR_KV_LIST_MAX 64

struct kv_state {
    struct fr_policy_spec spec;
    const char *allow[FR_KV_LIST_MAX + 1];
    const char *deny[FR_KV_LIST_MAX + 1];
    const char *keep[FR_KV_LIST_MAX + 1];
};

/* Split a list value ("socket, connect bind") in place into list[]. */
static int parse_list(char *val, const char **list, const char *key, int item, char *err, size_t errlen)
{
    size_t n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(val, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
        if (n >= FR_KV_LIST_MAX) {
            fr_seterr(err, errlen, "sandbox kv item %d: more than %d names in %s", item, FR_KV_LIST_MAX, key);
            return -1;
        }
        list[n++] = tok;
    }
    list[n] = NULL;
    return 0;
}

static int parse_item(struct kv_state *st, const char *key, char *val, int item, char *err, size_t errlen)
{
    struct fr_policy_spec *s = &st->spec;
    uint64_t ignored;
    int rc;
    if (strcmp(key, "preset") == 0)
        rc = fr_preset_parse(val, &s->preset);
    else if (strcmp(key, "cpu_time") == 0)
        rc = fr_parse_duration_ms(val, &s->cpu_ms);
    else if (strcmp(key, "memory") == 0)
        rc = fr_parse_size(val, &s->as_bytes);
    else if (strcmp(key, "fsize") == 0)
        rc = fr_parse_size(val, &s->fsize_bytes);
    else if (strcmp(key, "nofile") == 0)
        rc = fr_parse_u64(val, &s->nofile);
    else if (strcmp(key, "processes") == 0)
        rc = fr_parse_u64(val, &s->nproc);
    else if (strcmp(key, "stack") == 0)
        rc = fr_parse_size(val, &s->stack_bytes);
    else if (strcmp(key, "core") == 0)
        rc = fr_parse_size(val, &s->core_bytes);
    else if (strcmp(key, "spec_allow") == 0)
        rc = fr_parse_bool(val, &s->spec_allow);
    else if (strcmp(key, "allow") == 0)
        return parse_list(val, st->allow, key, item, err, errlen);
    else if (strcmp(key, "deny") == 0)
        return parse_list(val, st->deny, key, item, err, errlen);
    else if (strcmp(key, "keep_caps") == 0)
        return parse_list(val, st->keep, key, item, err, errlen);
    /* The parent enforces these ([sandbox] keys too): accepted and checked
     * so a caller can pass the whole section through. */
    else if (strcmp(key, "wall_time") == 0)
        rc = fr_parse_duration_ms(val, &ignored);
    else if (strcmp(key, "output") == 0)
        rc = fr_parse_size(val, &ignored);
    else {
        fr_seterr(err, errlen,
                  "sandbox kv item %d: unknown key '%s' (known: preset, cpu_time, memory, fsize, nofile, "
                  "processes, stack, core, allow, deny, keep_caps, spec_allow, wall_time, output)",
                  item, key);
        return -1;
    }
    if (rc < 0) {
        fr_seterr(err, errlen, "sandbox kv item %d: bad value '%s' for %s", item, val, key);
        return -1;
    }
    return 0;
}

int fr_policy_build_kv(const char *kv, struct fr_policy **out, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    char *copy = strdup(kv ? kv : "");
    struct kv_state *st = calloc(1, sizeof *st);
    if (!copy || !st) {
        fr_seterr(err, errlen, "sandbox kv: out of memory");
        free(copy);
        free(st);
        return -1;
    }
    st->spec.preset = FR_PRESET_PYTHON; /* what the ctypes caller (the warm Python runtime) wants */
    int rc = 0, item = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ";", &save); tok && !rc; tok = strtok_r(NULL, ";", &save)) {
        char *it = fr_trim(tok);
        if (!*it)
            continue;
        item++;
        char *eq = strchr(it, '=');
        if (!eq) {
            fr_seterr(err, errlen, "sandbox kv item %d '%s': expected key=value", item, it);
            rc = -1;
            break;
        }
        *eq = '\0';
        rc = parse_item(st, fr_trim(it), fr_trim(eq + 1), item, err, errlen);
    }
    if (!rc) {
        st->spec.allow = st->allow[0] ? st->allow : NULL;
        st->spec.deny = st->deny[0] ? st->deny : NULL;
        st->spec.keep_caps = st->keep[0] ? st->keep : NULL;
        rc = fr_policy_build(&st->spec, out, err, errlen);
    }
    free(st);
    free(copy);
    return rc;
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
    struct sbuf b = { buf, len, 0 };
    if (len)
        buf[0] = '\0';
    static const char *const modes[] = { "off", "trap", "notify" };
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
    return b.used > (size_t)0x7fffffff ? -1 : (int)b.used;
}

int fr_policy_prepare_worker(struct fr_policy *p)
{
    if (!p)
        return -EINVAL;
    return fr_caps_prepare_worker(&p->caps);
}

const void *fr_policy_bpf(const struct fr_policy *p, size_t *ninsns)
{
    if (ninsns)
        *ninsns = p ? p->filter.len : 0;
    return p ? p->filter.insns : NULL;
}
