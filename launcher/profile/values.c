/* values.c — the value types of profile keys, checked when they are read
 * so that an error names the profile line.
 *
 * `none` (= `unlimited` = 0) means "no limit" for every limit that may be
 * switched off; the limits that may not (output, result: they bound what
 * fitrun itself holds in memory) refuse all three. */
#include <ctype.h>
#include <limits.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>

#include "fitrun/common.h"
#include "fitrun/profile.h"
#include "internal.h"

static bool is_none(const char *v)
{
    return !strcmp(v, "none") || !strcmp(v, "unlimited");
}

static int refuse_none(const char *what, const char *key, const char *v, const char *example, char *msg, size_t n)
{
    fr_seterr(msg, n,
              "bad %s '%s' for %s: %s cannot be switched off (none, unlimited and 0 all mean no limit); "
              "give a limit such as %s",
              what, v, key, key, example);
    return -1;
}

/* A limit written with a unit: a duration or a size. */
struct unit_value {
    const char *what;     /* "duration", "size" */
    const char *examples; /* "2s, 500ms, 1.5m" */
    const char *a_limit;  /* one example of a limit, for "cannot be switched off" */
    int (*parse)(const char *s, uint64_t *out, const char **why);
};

static const struct unit_value durations = {"duration", "2s, 500ms, 1.5m", "10s", fr_parse_duration_why};
static const struct unit_value sizes = {"size", "512M, 2G, 64k", "1M", fr_parse_size_why};

static int unit_value(const struct unit_value *u, const char *key, const char *v, enum fr_key_none none, uint64_t *out,
                      char *msg, size_t n)
{
    const char *why = "";
    bool none_ok = none == FR_NONE_NO_LIMIT;
    if (is_none(v)) {
        if (!none_ok)
            return refuse_none(u->what, key, v, u->a_limit, msg, n);
        *out = 0;
        return 0;
    }
    if (u->parse(v, out, &why) < 0) {
        fr_seterr(msg, n, "bad %s '%s' for %s: %s (examples: %s%s)", u->what, v, key, why, u->examples,
                  none_ok ? ", none" : "");
        return -1;
    }
    if (*out == 0 && !none_ok)
        return refuse_none(u->what, key, v, u->a_limit, msg, n);
    return 0;
}

int prof_duration(const char *key, const char *v, enum fr_key_none none, uint64_t *out, char *msg, size_t n)
{
    return unit_value(&durations, key, v, none, out, msg, n);
}

int prof_size(const char *key, const char *v, enum fr_key_none none, uint64_t *out, char *msg, size_t n)
{
    return unit_value(&sizes, key, v, none, out, msg, n);
}

int prof_count(const char *key, const char *v, enum fr_key_none none, uint64_t *out, char *msg, size_t n)
{
    bool none_ok = none == FR_NONE_NO_LIMIT;
    if (none_ok && is_none(v)) {
        *out = 0;
        return 0;
    }
    if (fr_parse_u64(v, out) < 0) {
        fr_seterr(msg, n, "bad number '%s' for %s (a whole number >= 0%s)", v, key, none_ok ? ", or none" : "");
        return -1;
    }
    return 0;
}

int prof_bool(const char *key, const char *v, bool *out, char *msg, size_t n)
{
    if (fr_parse_bool(v, out) < 0) {
        fr_seterr(msg, n, "bad value '%s' for %s (true or false)", v, key);
        return -1;
    }
    return 0;
}

void prof_free_names(char **names)
{
    for (size_t i = 0; names[i]; i++) {
        free(names[i]);
        names[i] = NULL;
    }
}

/* NAME or PREFIX*, NAME an identifier. */
static int check_env_pattern(const char *name, char *msg, size_t n)
{
    char pat[256];
    size_t len = strlen(name);
    bool prefix = len > 0 && name[len - 1] == '*';
    if (prefix)
        len--;
    if (len == 0 || len >= sizeof pat) {
        fr_seterr(msg, n, "bad name '%s' in pass_env (NAME or PREFIX*)", name);
        return -1;
    }
    memcpy(pat, name, len);
    pat[len] = '\0';
    if (!fr_is_identifier(pat)) {
        fr_seterr(msg, n, "bad name '%s' in pass_env (NAME or PREFIX*: letters, digits and _)", name);
        return -1;
    }
    return 0;
}

/* One list entry: a syscall libseccomp knows, a capability libcap knows,
 * an absolute path, an environment pattern. */
static int check_entry(const char *key, const char *name, enum prof_list kind, char *msg, size_t n)
{
    switch (kind) {
    case PROF_PATHS:
        if (name[0] != '/') {
            fr_seterr(msg, n, "path '%s' in %s is not absolute", name, key);
            return -1;
        }
        if (strlen(name) >= PATH_MAX) {
            fr_seterr(msg, n, "path in %s longer than %d bytes", key, PATH_MAX - 1);
            return -1;
        }
        return 0;
    case PROF_ENV: return check_env_pattern(name, msg, n);
    case PROF_CAPS: {
        cap_value_t cap;
        if (cap_from_name(name, &cap) < 0) {
            fr_seterr(msg, n, "unknown capability '%s' in %s (names like cap_net_raw)", name, key);
            return -1;
        }
        return 0;
    }
    case PROF_SYSCALLS: break;
    }
    if (seccomp_syscall_resolve_name(name) == __NR_SCMP_ERROR) {
        fr_seterr(msg, n, "unknown syscall '%s' in %s", name, key);
        return -1;
    }
    return 0;
}

int prof_list(const char *key, const char *v, enum prof_list kind, char **names, char *msg, size_t n)
{
    char *fresh[FR_PROFILE_MAX_NAMES + 1] = {0};
    size_t count = 0;
    const char *s = v;
    bool paths = kind == PROF_PATHS;
    while (*s) {
        while (*s == ',' || isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        size_t len = strcspn(s, paths ? "," : ", \t");
        while (paths && len && isspace((unsigned char)s[len - 1]))
            len--;
        if (count == FR_PROFILE_MAX_NAMES) {
            fr_seterr(msg, n, "too many names in %s (at most %d)", key, FR_PROFILE_MAX_NAMES);
            goto fail;
        }
        fresh[count] = strndup(s, len);
        if (!fresh[count]) {
            fr_seterr(msg, n, "out of memory");
            goto fail;
        }
        if (check_entry(key, fresh[count++], kind, msg, n) < 0)
            goto fail;
        s += len;
        while (paths && *s && *s != ',')
            s++;
    }
    prof_free_names(names);
    memcpy(names, fresh, sizeof fresh);
    return 0;
fail:
    prof_free_names(fresh);
    return -1;
}
