/* sandbox_keys.c — the [sandbox] keys: one table (fitrun/sandbox_keys.h),
 * and everything that reads it: setting a key of a profile, the profile's
 * defaults, the profile -> policy spec map, and "key=value;..." text.
 *
 * A value lives where the row says: in the profile for the profile's keys
 * (so that --set, a file and the defaults agree), in the spec for the
 * keys only the text form sets (fs, slots, core). The spec field of a
 * profile key gets the profile's value by the row's type; fs comes from
 * the runtime kind and slots from the pool (the caller sets them). */
#include "fitrun/sandbox_keys.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

#define PROF(f) ((long)offsetof(struct fr_profile, f))
#define SPEC(f) ((long)offsetof(struct fr_policy_spec, f))
#define NOWHERE FR_KEY_NOWHERE

/* Slots the text form accepts (the sandbox's own bound: uids must fit). */
#define TEXT_SLOTS_MAX 65536

const struct fr_sandbox_key fr_sandbox_keys[] = {
    {"preset", FR_KEY_PRESET, FR_NONE_NA, "exec", PROF(preset), SPEC(preset)},
    {"cpu_time", FR_KEY_DURATION, FR_NONE_NO_LIMIT, "2s", PROF(cpu_time_ms), SPEC(cpu_ms)},
    {"wall_time", FR_KEY_DURATION, FR_NONE_NO_LIMIT, "10s", PROF(wall_time_ms), NOWHERE},
    {"memory", FR_KEY_SIZE, FR_NONE_NO_LIMIT, "512M", PROF(memory), SPEC(as_bytes)},
    {"output", FR_KEY_SIZE, FR_NONE_REFUSED, "1M", PROF(output), NOWHERE},
    {"result", FR_KEY_SIZE, FR_NONE_REFUSED, "1M", PROF(result), NOWHERE},
    {"processes", FR_KEY_COUNT, FR_NONE_NO_LIMIT, "1", PROF(processes), SPEC(nproc)},
    {"fsize", FR_KEY_SIZE, FR_NONE_NO_LIMIT, "none", PROF(fsize), SPEC(fsize_bytes)},
    {"nofile", FR_KEY_COUNT, FR_NONE_NO_LIMIT, "none", PROF(nofile), SPEC(nofile)},
    {"stack", FR_KEY_SIZE, FR_NONE_NO_LIMIT, "none", PROF(stack), SPEC(stack_bytes)},
    {"allow", FR_KEY_SYSCALLS, FR_NONE_NA, "", PROF(allow), SPEC(allow)},
    {"deny", FR_KEY_SYSCALLS, FR_NONE_NA, "", PROF(deny), SPEC(deny)},
    {"keep_caps", FR_KEY_CAPS, FR_NONE_NA, "", PROF(keep_caps), SPEC(keep_caps)},
    {"spec_allow", FR_KEY_BOOL, FR_NONE_NA, "false", PROF(spec_allow), SPEC(spec_allow)},
    {"read", FR_KEY_PATHS, FR_NONE_NA, "", PROF(read_paths), SPEC(read_paths)},
    {"write", FR_KEY_PATHS, FR_NONE_NA, "", PROF(write_paths), SPEC(write_paths)},
    {"require_landlock", FR_KEY_BOOL, FR_NONE_NA, "false", PROF(require_landlock), SPEC(require_landlock)},
    {"user", FR_KEY_USER, FR_NONE_NA, "slot", PROF(user), SPEC(slot_identity)},
    {"uid_base", FR_KEY_UID, FR_NONE_NA, "60000", PROF(uid_base), SPEC(uid_base)},
    {"pass_env", FR_KEY_ENV, FR_NONE_NA, "", PROF(pass_env), NOWHERE},
    /* Only the text form: the runtime picks the Landlock base set, the pool
     * the number of slots; core files stay off for fitrun's jobs. */
    {"fs", FR_KEY_FS, FR_NONE_NA, NULL, NOWHERE, SPEC(fs)},
    {"slots", FR_KEY_SLOTS, FR_NONE_NA, NULL, NOWHERE, SPEC(slots)},
    {"core", FR_KEY_SIZE, FR_NONE_NO_LIMIT, NULL, NOWHERE, SPEC(core_bytes)},
};
const size_t fr_sandbox_nkeys = sizeof fr_sandbox_keys / sizeof fr_sandbox_keys[0];

const struct fr_sandbox_key *fr_sandbox_key(const char *name)
{
    for (size_t i = 0; name && i < fr_sandbox_nkeys; i++)
        if (!strcmp(fr_sandbox_keys[i].name, name))
            return &fr_sandbox_keys[i];
    return NULL;
}

/* ---- one value ------------------------------------------------------------ */

static int parse_enum(const struct fr_sandbox_key *k, const char *v, int *out, char *msg, size_t n)
{
    int rc = -1;
    const char *words = "";
    if (k->type == FR_KEY_PRESET) {
        enum fr_preset p;
        rc = fr_preset_parse(v, &p);
        *out = (int)p;
        words = "python, exec or none";
    } else if (k->type == FR_KEY_FS) {
        enum fr_fs_base fs;
        rc = fr_fs_base_parse(v, &fs);
        *out = (int)fs;
        words = "off, libs or system";
    } else if (k->type == FR_KEY_USER) {
        rc = !strcmp(v, "slot") ? 0 : !strcmp(v, "root") ? 0 : -1;
        *out = !strcmp(v, "root") ? FR_USER_ROOT : FR_USER_SLOT;
        words = "slot or root";
    }
    if (rc < 0)
        fr_seterr(msg, n, "bad value '%s' for %s (%s)", v, k->name, words);
    return rc;
}

static int parse_number(const struct fr_sandbox_key *k, const char *v, uint64_t lo, uint64_t hi, uint64_t *out,
                        char *msg, size_t n)
{
    if (fr_parse_u64(v, out) < 0 || *out < lo || *out > hi) {
        fr_seterr(msg, n, "bad value '%s' for %s (a whole number from %llu to %llu)", v, k->name,
                  (unsigned long long)lo, (unsigned long long)hi);
        return -1;
    }
    return 0;
}

static enum prof_list list_kind(enum fr_key_type t)
{
    return t == FR_KEY_CAPS ? PROF_CAPS : t == FR_KEY_PATHS ? PROF_PATHS : t == FR_KEY_ENV ? PROF_ENV : PROF_SYSCALLS;
}

static bool is_list(enum fr_key_type t)
{
    return t == FR_KEY_SYSCALLS || t == FR_KEY_CAPS || t == FR_KEY_PATHS || t == FR_KEY_ENV;
}

/* Parse v as k's type and store it at base + off (a profile or a spec). */
static int store(const struct fr_sandbox_key *k, const char *v, char *base, long off, char *msg, size_t n)
{
    void *at = base + off;
    uint64_t u = 0;
    int e = 0;
    switch (k->type) {
    case FR_KEY_DURATION: return prof_duration(k->name, v, k->none, (uint64_t *)at, msg, n);
    case FR_KEY_SIZE: return prof_size(k->name, v, k->none, (uint64_t *)at, msg, n);
    case FR_KEY_COUNT: return prof_count(k->name, v, k->none, (uint64_t *)at, msg, n);
    case FR_KEY_BOOL: return prof_bool(k->name, v, (bool *)at, msg, n);
    case FR_KEY_PRESET:
    case FR_KEY_FS:
        if (parse_enum(k, v, &e, msg, n) < 0)
            return -1;
        *(int *)at = e; /* enum fr_preset, enum fr_fs_base */
        return 0;
    case FR_KEY_USER:
        if (parse_enum(k, v, &e, msg, n) < 0)
            return -1;
        *(enum fr_user_mode *)at = (enum fr_user_mode)e;
        return 0;
    case FR_KEY_UID:
        /* uid_base + the last slot must stay a valid id below the kernel's
         * overflow id (65534 is nobody; (uid_t)-1 is "unchanged"). */
        if (parse_number(k, v, 1, UINT32_MAX - 1 - FR_PROFILE_MAX_WORKERS, &u, msg, n) < 0)
            return -1;
        *(uint32_t *)at = (uint32_t)u;
        return 0;
    case FR_KEY_SLOTS:
        if (parse_number(k, v, 1, TEXT_SLOTS_MAX, &u, msg, n) < 0)
            return -1;
        *(int *)at = (int)u;
        return 0;
    case FR_KEY_SYSCALLS:
    case FR_KEY_CAPS:
    case FR_KEY_PATHS:
    case FR_KEY_ENV: return prof_list(k->name, v, list_kind(k->type), (char **)at, msg, n);
    }
    return -1;
}

/* "preset, cpu_time, ..." — the profile's keys, for messages. */
static void profile_key_names(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < fr_sandbox_nkeys && used < n; i++)
        if (fr_sandbox_keys[i].profile != NOWHERE) {
            int w = snprintf(buf + used, n - used, "%s%s", used ? ", " : "", fr_sandbox_keys[i].name);
            if (w > 0)
                used += (size_t)w;
        }
}

int fr_sandbox_key_set(struct fr_profile *p, const char *key, const char *value, char *msg, size_t n)
{
    const struct fr_sandbox_key *k = fr_sandbox_key(key);
    if (!k || k->profile == NOWHERE) {
        char names[512];
        profile_key_names(names, sizeof names);
        fr_seterr(msg, n, "unknown key '%s' in [sandbox] (%s)", key, names);
        return -1;
    }
    if (store(k, value, (char *)p, k->profile, msg, n) < 0)
        return -1;
    if (k->type == FR_KEY_PRESET)
        p->preset_set = true;
    return 0;
}

void fr_sandbox_keys_defaults(struct fr_profile *p)
{
    for (size_t i = 0; i < fr_sandbox_nkeys; i++) {
        const struct fr_sandbox_key *k = &fr_sandbox_keys[i];
        char msg[256];
        if (k->profile != NOWHERE && store(k, k->dflt, (char *)p, k->profile, msg, sizeof msg) < 0)
            fr_die(FR_EXIT_USAGE, "built-in [sandbox] default: %s", msg); /* a bug in the table */
    }
}

/* ---- profile -> spec ------------------------------------------------------ */

/* The spec field of profile key k gets the profile's value. */
static void map_key(const struct fr_sandbox_key *k, const struct fr_profile *p, struct fr_policy_spec *spec)
{
    const char *from = (const char *)p + k->profile;
    char *to = (char *)spec + k->spec;
    switch (k->type) {
    case FR_KEY_DURATION:
    case FR_KEY_SIZE:
    case FR_KEY_COUNT: memcpy(to, from, sizeof(uint64_t)); break;
    case FR_KEY_BOOL: memcpy(to, from, sizeof(bool)); break;
    case FR_KEY_PRESET:
    case FR_KEY_FS:
    case FR_KEY_SLOTS: memcpy(to, from, sizeof(int)); break;
    case FR_KEY_USER: *(bool *)to = *(const enum fr_user_mode *)from == FR_USER_SLOT; break;
    case FR_KEY_UID: memcpy(to, from, sizeof(uint32_t)); break;
    case FR_KEY_SYSCALLS:
    case FR_KEY_CAPS:
    case FR_KEY_PATHS:
    case FR_KEY_ENV:
        /* the profile's NULL-terminated array itself */
        *(const char *const **)(void *)to = (const char *const *)(const void *)from;
        break;
    }
}

static void map_profile_keys(const struct fr_profile *p, struct fr_policy_spec *spec)
{
    for (size_t i = 0; i < fr_sandbox_nkeys; i++) {
        const struct fr_sandbox_key *k = &fr_sandbox_keys[i];
        if (k->profile != NOWHERE && k->spec != NOWHERE)
            map_key(k, p, spec);
    }
}

void fr_profile_policy_spec(const struct fr_profile *p, struct fr_policy_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    map_profile_keys(p, spec);
    /* Landlock: exec jobs may read the system's programs; a python
     * runtime's children only the libraries (the interpreter adds its own
     * tree, which only it knows). */
    spec->fs = p->kind == FR_RUNTIME_EXEC ? FR_FS_SYSTEM : FR_FS_LIBS;
}

/* ---- "key=value;..." ------------------------------------------------------ */

static int text_item(struct fr_sandbox_text *t, char *item, int nr, char *err, size_t errlen)
{
    char *eq = strchr(item, '=');
    if (!eq) {
        fr_seterr(err, errlen, "sandbox text item %d '%s': expected key=value", nr, item);
        return -1;
    }
    *eq = '\0';
    const char *key = fr_trim(item), *value = fr_trim(eq + 1);
    const struct fr_sandbox_key *k = fr_sandbox_key(key);
    if (!k) {
        fr_seterr(err, errlen, "sandbox text item %d: unknown key '%s'", nr, key);
        return -1;
    }
    if (k->profile != NOWHERE)
        return store(k, value, (char *)&t->profile, k->profile, err, errlen);
    return store(k, value, (char *)&t->spec, k->spec, err, errlen);
}

int fr_sandbox_text_spec(const char *text, struct fr_sandbox_text *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->profile.preset = FR_PRESET_PYTHON;
    t->profile.user = FR_USER_ROOT;
    char *copy = strdup(text ? text : "");
    if (!copy) {
        fr_seterr(err, errlen, "sandbox text: out of memory");
        return -1;
    }
    int rc = 0, nr = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ";", &save); tok && !rc; tok = strtok_r(NULL, ";", &save)) {
        char *item = fr_trim(tok);
        if (*item)
            rc = text_item(t, item, ++nr, err, errlen);
    }
    free(copy);
    if (rc < 0) {
        fr_sandbox_text_free(t);
        return -1;
    }
    /* The text-only keys are in t->spec already; the map writes the others. */
    map_profile_keys(&t->profile, &t->spec);
    return 0;
}

void fr_sandbox_text_free(struct fr_sandbox_text *t)
{
    for (size_t i = 0; i < fr_sandbox_nkeys; i++)
        if (fr_sandbox_keys[i].profile != NOWHERE && is_list(fr_sandbox_keys[i].type))
            prof_free_names((char **)((char *)&t->profile + fr_sandbox_keys[i].profile));
}

int fr_sandbox_text_build(const char *text, const char *const *more_read, struct fr_policy **out, char *err,
                          size_t errlen)
{
    if (out)
        *out = NULL;
    struct fr_sandbox_text *t = malloc(sizeof *t);
    if (!t) {
        fr_seterr(err, errlen, "sandbox text: out of memory");
        return -1;
    }
    int rc = fr_sandbox_text_spec(text, t, err, errlen);
    if (rc == 0) {
        /* the text's read paths, then more_read */
        size_t n = 0, m = 0;
        while (t->profile.read_paths[n])
            n++;
        while (more_read && more_read[m])
            m++;
        const char **reads = calloc(n + m + 1, sizeof *reads);
        if (!reads) {
            fr_seterr(err, errlen, "sandbox text: out of memory");
            rc = -1;
        } else {
            for (size_t i = 0; i < n; i++)
                reads[i] = t->profile.read_paths[i];
            for (size_t i = 0; i < m; i++)
                reads[n + i] = more_read[i];
            t->spec.read_paths = reads;
            rc = fr_policy_build(&t->spec, out, err, errlen);
            free(reads);
        }
        fr_sandbox_text_free(t);
    }
    free(t);
    return rc;
}
