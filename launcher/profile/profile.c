/* profile.c — INI profiles, parsed with inih. See include/fitrun/profile.h
 * and profiles/README.md (every key).
 *
 * inih (as packaged by Debian) does not pass line numbers to the handler,
 * so parsing goes through ini_parse_stream() with our own line reader: it
 * counts lines, so when the handler runs, `lines` is the line being
 * handled. The reader also sees raw lines, which lets it report unknown
 * [sections] (inih only calls the handler for key = value pairs, so an
 * empty misspelt section would otherwise pass silently) and lines longer
 * than the buffer (inih would split them into two bogus lines).
 *
 * Every problem is recorded with its line; the first one (by line) wins,
 * which is what a user fixing a file top to bottom wants. */
#include "fitrun/profile.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "fitrun/envexport.h"
#include "fitrun/sandbox_keys.h"
#include "internal.h"

extern char **environ;

/* Longest profile line we accept. inih keeps its line buffer on the stack,
 * sized by the (Debian runtime-configurable) ini_max_line; 4 KiB leaves
 * room for long allow lists and [env] values. */
#define PROFILE_MAX_LINE 4096

static const char *const sections[] = {"resources", "sandbox", "runtime", "env"};

/* Parse state shared by the reader and the handler. */
struct parse_ctx {
    struct fr_profile *p;
    const char *name;  /* where the file is (relative preludes resolve against it) */
    const char *shown; /* the name the user wrote, for messages and sources */
    const char *text;  /* remaining input */
    int lines;         /* lines handed to inih so far */
    int err_line;      /* first error found by us (0 = none) */
    char err[512];
    /* keys set by this file, to refuse duplicates ("section\0key") */
    int nseen;
    char seen[128][80];
};

const char *fr_runtime_kind_name(enum fr_runtime_kind k)
{
    return k == FR_RUNTIME_PYTHON ? "python" : "exec";
}

int fr_runtime_kind_parse(const char *s, enum fr_runtime_kind *out)
{
    if (!strcmp(s, "exec"))
        *out = FR_RUNTIME_EXEC;
    else if (!strcmp(s, "python"))
        *out = FR_RUNTIME_PYTHON;
    else
        return -1;
    return 0;
}

const char *fr_cgroup_mode_name(enum fr_cgroup_mode m)
{
    return m == FR_CGROUPS_REQUIRE ? "require" : m == FR_CGROUPS_OFF ? "off" : "auto";
}

int fr_cgroup_mode_parse(const char *s, enum fr_cgroup_mode *out)
{
    if (!strcmp(s, "auto"))
        *out = FR_CGROUPS_AUTO;
    else if (!strcmp(s, "require"))
        *out = FR_CGROUPS_REQUIRE;
    else if (!strcmp(s, "off"))
        *out = FR_CGROUPS_OFF;
    else
        return -1;
    return 0;
}

void fr_profile_defaults(struct fr_profile *p)
{
    /* Keep in step with profiles/default.ini (a unit test checks). */
    memset(p, 0, sizeof *p);
    p->cpus = 0;
    p->workers = 0;
    p->memory_per_worker = 512ull << 20;
    p->rounding = FR_ROUND_FLOOR;
    fr_sandbox_keys_defaults(p);
    p->kind = FR_RUNTIME_EXEC;
    snprintf(p->interpreter, sizeof p->interpreter, "/usr/bin/python3");
    snprintf(p->entry, sizeof p->entry, "transform");
    p->max_predictions = 1000;
    p->max_memory = 0; /* fr_profile_max_memory */
}

void fr_profile_free(struct fr_profile *p)
{
    prof_free_names(p->allow);
    prof_free_names(p->deny);
    prof_free_names(p->keep_caps);
    prof_free_names(p->read_paths);
    prof_free_names(p->write_paths);
    prof_free_names(p->pass_env);
    for (int i = 0; i < p->nenv; i++) {
        free(p->env_name[i]);
        free(p->env_value[i]);
        p->env_name[i] = p->env_value[i] = NULL;
    }
    p->nenv = 0;
}

/* ---- sections ----------------------------------------------------------- */

static int set_resources(struct fr_profile *p, const char *key, const char *v, char *msg, size_t n)
{
    if (!strcmp(key, "cpus")) {
        if (!strcmp(v, "auto")) {
            p->cpus = 0;
            return 0;
        }
        if (fr_parse_cpus(v, &p->cpus) < 0) {
            fr_seterr(msg, n, "bad value '%s' for cpus (auto, or a number above 0 and at most %d, such as 2 or 1.5)", v,
                      FR_CPU_BITS);
            return -1;
        }
        return 0;
    }
    if (!strcmp(key, "workers")) {
        int64_t w;
        if (!strcmp(v, "auto")) {
            p->workers = 0;
            return 0;
        }
        if (fr_parse_i64(v, &w) < 0 || w < 1 || w > FR_PROFILE_MAX_WORKERS) {
            fr_seterr(msg, n, "bad value '%s' for workers (auto, or a whole number from 1 to %d)", v,
                      FR_PROFILE_MAX_WORKERS);
            return -1;
        }
        p->workers = (int)w;
        return 0;
    }
    if (!strcmp(key, "memory_per_worker"))
        return prof_size(key, v, FR_NONE_NO_LIMIT, &p->memory_per_worker, msg, n);
    if (!strcmp(key, "rounding")) {
        if (fr_rounding_parse(v, &p->rounding) < 0) {
            fr_seterr(msg, n, "bad value '%s' for rounding (floor, ceil or nearest)", v);
            return -1;
        }
        return 0;
    }
    if (!strcmp(key, "cgroups")) {
        if (fr_cgroup_mode_parse(v, &p->cgroups) < 0) {
            fr_seterr(msg, n, "bad value '%s' for cgroups (auto, require or off)", v);
            return -1;
        }
        return 0;
    }
    fr_seterr(msg, n, "unknown key '%s' in [resources] (cpus, workers, memory_per_worker, rounding, cgroups)", key);
    return -1;
}

/* prelude: absolute, or relative to the profile's directory (`base`, NULL
 * or "" = keep it relative to the working directory). */
static int set_prelude(struct fr_profile *p, const char *v, const char *base, char *msg, size_t n)
{
    int r;
    if (!*v) {
        p->prelude[0] = '\0';
        return 0;
    }
    if (v[0] == '/' || !base || !*base)
        r = snprintf(p->prelude, sizeof p->prelude, "%s", v);
    else
        r = snprintf(p->prelude, sizeof p->prelude, "%s/%s", base, v);
    if (r < 0 || (size_t)r >= sizeof p->prelude) {
        fr_seterr(msg, n, "prelude path too long");
        return -1;
    }
    return 0;
}

/* isolation, max_predictions, max_memory: how the python runtime isolates
 * predictions from each other (docs/python-runtime.md). */
static int set_isolation(struct fr_profile *p, const char *key, const char *v, char *msg, size_t n)
{
    if (!strcmp(key, "isolation")) {
        if (strcmp(v, "fork") && strcmp(v, "reuse")) {
            fr_seterr(msg, n, "bad value '%s' for isolation (fork or reuse)", v);
            return -1;
        }
        p->reuse = !strcmp(v, "reuse");
        return 0;
    }
    if (!strcmp(key, "max_predictions")) {
        if (fr_parse_u64(v, &p->max_predictions) < 0 || p->max_predictions < 1 || p->max_predictions > INT32_MAX) {
            fr_seterr(msg, n, "bad value '%s' for max_predictions (a whole number from 1 to %d)", v, INT32_MAX);
            return -1;
        }
        return 0;
    }
    if (!strcmp(key, "max_memory")) {
        const char *why = NULL;
        if (fr_parse_size_why(v, &p->max_memory, &why) < 0 || p->max_memory < (1u << 20)) {
            fr_seterr(msg, n, "bad value '%s' for max_memory (a size of at least 1M, e.g. 512M)%s%s", v,
                      why ? ": " : "", why ? why : "");
            return -1;
        }
        return 0;
    }
    fr_seterr(msg, n,
              "unknown key '%s' in [runtime] (kind, interpreter, prelude, entry, isolation, max_predictions, "
              "max_memory)",
              key);
    return -1;
}

static int set_runtime(struct fr_profile *p, const char *key, const char *v, const char *base, char *msg, size_t n)
{
    if (!strcmp(key, "kind")) {
        if (fr_runtime_kind_parse(v, &p->kind) < 0) {
            fr_seterr(msg, n, "bad value '%s' for kind (exec or python)", v);
            return -1;
        }
        /* A runtime's default preset is its own: a python profile without
         * a preset line must not get the exec preset (which allows execve). */
        if (!p->preset_set)
            p->preset = p->kind == FR_RUNTIME_PYTHON ? FR_PRESET_PYTHON : FR_PRESET_EXEC;
        return 0;
    }
    if (!strcmp(key, "interpreter")) {
        if (!*v || strlen(v) >= sizeof p->interpreter) {
            fr_seterr(msg, n, "bad value '%s' for interpreter (a path or a command name)", v);
            return -1;
        }
        snprintf(p->interpreter, sizeof p->interpreter, "%s", v);
        return 0;
    }
    if (!strcmp(key, "prelude"))
        return set_prelude(p, v, base, msg, n);
    if (!strcmp(key, "entry")) {
        if (!fr_is_identifier(v) || strlen(v) >= sizeof p->entry) {
            fr_seterr(msg, n, "bad value '%s' for entry (a Python function name)", v);
            return -1;
        }
        snprintf(p->entry, sizeof p->entry, "%s", v);
        return 0;
    }
    return set_isolation(p, key, v, msg, n);
}

static int set_env(struct fr_profile *p, const char *name, const char *v, char *msg, size_t n)
{
    if (!fr_is_identifier(name)) {
        fr_seterr(msg, n, "bad variable name '%s' in [env] (letters, digits and _, not starting with a digit)", name);
        return -1;
    }
    for (int i = 0; i < p->nenv; i++) {
        if (strcmp(p->env_name[i], name))
            continue;
        char *nv = strdup(v);
        if (!nv) {
            fr_seterr(msg, n, "out of memory");
            return -1;
        }
        free(p->env_value[i]);
        p->env_value[i] = nv;
        return 0;
    }
    if (p->nenv == FR_PROFILE_MAX_ENV) {
        fr_seterr(msg, n, "too many variables in [env] (at most %d)", FR_PROFILE_MAX_ENV);
        return -1;
    }
    char *nn = strdup(name), *nv = strdup(v);
    if (!nn || !nv) {
        free(nn);
        free(nv);
        fr_seterr(msg, n, "out of memory");
        return -1;
    }
    p->env_name[p->nenv] = nn;
    p->env_value[p->nenv++] = nv;
    return 0;
}

static bool known_section(const char *s)
{
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (!strcmp(s, sections[i]))
            return true;
    return false;
}

static int apply(struct fr_profile *p, const char *section, const char *key, const char *value, const char *base,
                 char *msg, size_t n)
{
    if (!strcmp(section, "resources"))
        return set_resources(p, key, value, msg, n);
    if (!strcmp(section, "sandbox"))
        return fr_sandbox_key_set(p, key, value, msg, n);
    if (!strcmp(section, "runtime"))
        return set_runtime(p, key, value, base, msg, n);
    if (!strcmp(section, "env"))
        return set_env(p, key, value, msg, n);
    if (!*section)
        fr_seterr(msg, n, "key '%s' outside any section (start with [resources], [sandbox], [runtime] or [env])", key);
    else
        fr_seterr(msg, n, "unknown section [%s] (resources, sandbox, runtime, env)", section);
    return -1;
}

/* After [resources] cpus was set: remember who set it (fitrun/profile.h). */
static void cpus_set_by(struct fr_profile *p, bool cli, const char *file, int line)
{
    p->cpus_cli = cli && p->cpus > 0;
    if (!(p->cpus > 0))
        p->cpus_origin[0] = '\0'; /* auto */
    else if (cli)
        snprintf(p->cpus_origin, sizeof p->cpus_origin, "--cpus");
    else
        snprintf(p->cpus_origin, sizeof p->cpus_origin, "profile %.*s:%d", PATH_MAX, file, line);
}

static bool is_cpus(const char *section, const char *key)
{
    return !strcmp(section, "resources") && !strcmp(key, "cpus");
}

/* [section] key was set at line (0: on the command line). */
static void note_line(struct fr_profile *p, const char *section, const char *key, int line)
{
    char tag[sizeof p->lines[0].tag];
    snprintf(tag, sizeof tag, "%s.%s", section, key);
    int i = 0;
    while (i < p->nlines && strcmp(p->lines[i].tag, tag))
        i++;
    if (i == p->nlines) {
        if (p->nlines == FR_PROFILE_MAX_KEYS)
            return;
        p->nlines++;
        snprintf(p->lines[i].tag, sizeof p->lines[i].tag, "%s", tag);
    }
    p->lines[i].line = line;
}

void fr_profile_where(const struct fr_profile *p, const char *section, const char *key, char *buf, size_t n)
{
    char tag[sizeof p->lines[0].tag];
    snprintf(tag, sizeof tag, "%s.%s", section, key);
    for (int i = 0; i < p->nlines; i++)
        if (!strcmp(p->lines[i].tag, tag)) {
            if (p->lines[i].line > 0)
                snprintf(buf, n, "%s:%d", p->path[0] ? p->path : "profile", p->lines[i].line);
            else
                snprintf(buf, n, "the command line");
            return;
        }
    snprintf(buf, n, "%s", p->path[0] ? p->path : "the built-in profile");
}

int fr_profile_set(struct fr_profile *p, const char *section, const char *key, const char *value, char *err,
                   size_t errlen)
{
    /* The file's cpus, replaced by the command line's, stays known: detection
     * notes that it lost. */
    double file_cpus = p->cpus_cli ? p->cpus_file : p->cpus;
    char file_origin[sizeof p->cpus_origin];
    snprintf(file_origin, sizeof file_origin, "%s", p->cpus_cli ? p->cpus_file_origin : p->cpus_origin);
    if (apply(p, section, key, value, NULL, err, errlen) < 0)
        return -1;
    note_line(p, section, key, 0);
    if (is_cpus(section, key)) {
        p->cpus_file = file_cpus;
        snprintf(p->cpus_file_origin, sizeof p->cpus_file_origin, "%s", file_origin);
    }
    if (is_cpus(section, key))
        cpus_set_by(p, true, NULL, 0);
    return 0;
}

void fr_profile_detect_opts(const struct fr_profile *p, char *const *envp, struct fr_detect_opts *out)
{
    memset(out, 0, sizeof *out);
    out->envp = envp ? envp : environ;
    fr_env_fitrun_cpus(out->envp, out);
    if (p->cpus > 0 && p->cpus_cli) {
        out->cpus_override = p->cpus;
        out->cpus_override_source = p->cpus_origin;
    }
    /* A file's value stays a candidate even under --cpus: detection notes
     * that it lost. */
    if (p->cpus > 0 && !p->cpus_cli) {
        out->cpus_profile = p->cpus;
        out->cpus_profile_source = p->cpus_origin[0] ? p->cpus_origin : "profile";
    } else if (p->cpus_cli && p->cpus_file > 0) {
        out->cpus_profile = p->cpus_file;
        out->cpus_profile_source = p->cpus_file_origin[0] ? p->cpus_file_origin : "profile";
    }
}

static bool allows(const struct fr_profile *p, const char *name)
{
    for (char *const *a = p->allow; *a; a++)
        if (!strcmp(*a, name))
            return true;
    return false;
}

int fr_profile_job_threads(const struct fr_profile *p, const char **why)
{
    if (p->preset != FR_PRESET_PYTHON)
        return 0;
    if ((allows(p, "clone") || allows(p, "clone3")) && p->processes != 1)
        return 0;
    if (why)
        *why = "the python preset refuses thread creation (a library that starts threads would be a violation); "
               "[sandbox] allow = clone, clone3 with processes above 1, or preset = none, lifts it";
    return 1;
}

int fr_profile_reuse_check(const struct fr_profile *p, char *err, size_t errlen)
{
    static const char *const spawners[] = {"fork", "vfork", "clone", "clone3"};
    if (!p->reuse)
        return 0;
    char at[PATH_MAX + 64], other[PATH_MAX + 64];
    fr_profile_where(p, "runtime", "isolation", at, sizeof at);
    if (p->preset != FR_PRESET_PYTHON) {
        fr_profile_where(p, "sandbox", "preset", other, sizeof other);
        fr_seterr(err, errlen,
                  "%s: [runtime] isolation = reuse needs [sandbox] preset = python (%s; its seccomp filter "
                  "keeps a prediction from leaving processes or threads behind for later ones)",
                  at, other);
        return -1;
    }
    for (size_t i = 0; i < sizeof spawners / sizeof *spawners; i++)
        if (allows(p, spawners[i])) {
            fr_profile_where(p, "sandbox", "allow", other, sizeof other);
            fr_seterr(err, errlen,
                      "%s: [runtime] isolation = reuse cannot be combined with [sandbox] allow = %s (%s): a process or "
                      "thread left running by one prediction would share the process of later ones (use isolation = "
                      "fork)",
                      at, spawners[i], other);
            return -1;
        }
    return 0;
}

uint64_t fr_profile_max_memory(const struct fr_profile *p)
{
    if (p->max_memory)
        return p->max_memory;
    if (!p->memory)
        return 512ull << 20;
    return p->memory / 2 > (1u << 20) ? p->memory / 2 : 1u << 20;
}

void fr_profile_plan_opts(const struct fr_profile *p, struct fr_plan_opts *out)
{
    memset(out, 0, sizeof *out);
    out->rounding = p->rounding;
    out->memory_per_worker = p->memory_per_worker;
    out->workers_override = p->workers;
    out->job_threads_max = fr_profile_job_threads(p, &out->job_threads_why);
}

int fr_profile_job_env(const struct fr_profile *p, const struct fr_resources *res, const struct fr_plan *plan,
                       char *const *envp, struct fr_env_export *ex)
{
    struct fr_env_forced forced = {
        .n = p->nenv, .name = p->env_name, .value = p->env_value, .origin = p->path[0] ? p->path : "profile"};
    struct fr_env_opts eo = {.uid = getuid()};
    return fr_env_compute(res, plan, plan->threads_per_job, envp, &forced, &eo, ex);
}

void fr_profile_detect_plan(const struct fr_profile *p, const char *sysroot, struct fr_resources *res,
                            struct fr_plan *plan, struct fr_plan_opts *popts)
{
    struct fr_detect_opts dopts;
    struct fr_plan_opts own;
    if (!popts)
        popts = &own;
    fr_profile_detect_opts(p, NULL, &dopts);
    dopts.sysroot = sysroot;
    fr_detect(&dopts, res);
    fr_profile_plan_opts(p, popts);
    fr_plan_make(res, popts, plan);
}

/* ---- inih glue ---------------------------------------------------------- */

static void record(struct parse_ctx *c, int line, const char *msg)
{
    if (c->err_line && c->err_line <= line)
        return;
    c->err_line = line;
    snprintf(c->err, sizeof c->err, "%s", msg);
}

/* Unknown or malformed [section] headers, seen on the raw line. */
static void check_section_line(struct parse_ctx *c, const char *line)
{
    while (isspace((unsigned char)*line))
        line++;
    if (*line != '[')
        return;
    const char *end = strchr(line, ']');
    if (!end)
        return; /* inih reports the missing ']' */
    char name[64], msg[128];
    size_t len = (size_t)(end - line - 1);
    if (len >= sizeof name)
        len = sizeof name - 1;
    memcpy(name, line + 1, len);
    name[len] = '\0';
    if (!known_section(name)) {
        snprintf(msg, sizeof msg, "unknown section [%s] (resources, sandbox, runtime, env)", name);
        record(c, c->lines, msg);
    }
}

/* fgets() over c->text that counts lines. */
static char *reader(char *buf, int size, void *stream)
{
    struct parse_ctx *c = stream;
    if (!*c->text || size < 2)
        return NULL;
    const char *nl = strchr(c->text, '\n');
    size_t len = nl ? (size_t)(nl - c->text) + 1 : strlen(c->text);
    c->lines++;
    if (len > (size_t)size - 1) {
        /* inih needs the line, its '\n' and a NUL in `size` bytes. */
        char msg[96];
        snprintf(msg, sizeof msg, "line too long (more than %d characters)", size - 2);
        record(c, c->lines, msg);
        c->text += len;
        buf[0] = '\0'; /* hand inih an empty line, keep counting */
        return buf;
    }
    memcpy(buf, c->text, len);
    buf[len] = '\0';
    c->text += len;
    check_section_line(c, buf);
    return buf;
}

static const char *profile_dir(const char *name, char *buf, size_t n)
{
    const char *slash = strrchr(name, '/');
    if (!slash)
        return NULL;
    size_t len = slash == name ? 1 : (size_t)(slash - name);
    if (len >= n)
        return NULL;
    memcpy(buf, name, len);
    buf[len] = '\0';
    return buf;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
    struct parse_ctx *c = user;
    char msg[384], base[PATH_MAX];

    /* A key set twice in one file is almost always a copy-paste mistake. */
    char tag[80];
    snprintf(tag, sizeof tag, "%s.%s", section, key);
    for (int i = 0; i < c->nseen; i++) {
        if (!strcmp(c->seen[i], tag)) {
            snprintf(msg, sizeof msg, "duplicate key '%s' in [%s]", key, section);
            record(c, c->lines, msg);
            return 0;
        }
    }
    if (c->nseen < (int)(sizeof c->seen / sizeof c->seen[0]))
        snprintf(c->seen[c->nseen++], sizeof c->seen[0], "%s", tag);

    if (apply(c->p, section, key, value, profile_dir(c->name, base, sizeof base), msg, sizeof msg) < 0) {
        record(c, c->lines, msg);
        return 0;
    }
    note_line(c->p, section, key, c->lines);
    if (is_cpus(section, key))
        cpus_set_by(c->p, false, c->shown, c->lines);
    return 1;
}

/* Parse `text`; messages say `shown`, relative preludes resolve against
 * the directory of `located` (the file's absolute path when loading). */
static int parse_text(struct fr_profile *p, const char *text, const char *shown, const char *located, char *err,
                      size_t errlen)
{
    struct parse_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "%s: out of memory", shown);
        return -1;
    }
    c->p = p;
    c->name = located;
    c->shown = shown;
    c->text = text;
    /* Debian's inih takes these at run time; one logical line per line. */
    ini_max_line = PROFILE_MAX_LINE;
    ini_allow_multiline = false;
    int r = ini_parse_stream(reader, c, handler, c);
    int rc = 0;
    if (r == -2) {
        snprintf(err, errlen, "%s: out of memory", shown);
        rc = -1;
    } else if (r > 0 && (!c->err_line || r < c->err_line)) {
        /* inih's own syntax error, before any of ours */
        snprintf(err, errlen, "%s:%d: syntax error: expected '[section]' or 'key = value'", shown, r);
        rc = -1;
    } else if (c->err_line) {
        snprintf(err, errlen, "%s:%d: %s", shown, c->err_line, c->err);
        rc = -1;
    }
    free(c);
    return rc;
}

int fr_profile_parse(struct fr_profile *p, const char *text, const char *name, char *err, size_t errlen)
{
    return parse_text(p, text, name, name, err, errlen);
}

int fr_profile_load(struct fr_profile *p, const char *path, char *err, size_t errlen)
{
    size_t len;
    char *text = fr_read_file(path, 1 << 20, &len);
    if (!text) {
        snprintf(err, errlen, "cannot read profile %s: %s", path,
                 errno == EFBIG ? "larger than 1 MiB" : fr_read_strerror(errno));
        return -1;
    }
    size_t nul = strlen(text);
    if (nul != len) {
        long line = 1;
        for (const char *c = text; (c = memchr(c, '\n', (size_t)(text + nul - c))); c++)
            line++;
        snprintf(err, errlen, "%s:%ld: a NUL byte; not a text file", path, line);
        free(text);
        return -1;
    }
    /* Absolute path: recorded in p->path, and relative preludes resolve
     * against its directory whatever the working directory is when the
     * runtime starts. Messages keep the name the user wrote. */
    char abs[PATH_MAX];
    if (!realpath(path, abs))
        snprintf(abs, sizeof abs, "%s", path);
    snprintf(p->path, sizeof p->path, "%s", abs);
    int r = parse_text(p, text, path, abs, err, errlen);
    free(text);
    return r;
}
