/* envp.c — the envp arrays children are started with: the wrapper's (the
 * caller's environment with fitrun's exports, like env(1)) and a `fitrun
 * run` job's (scrubbed to an allow-list, the thread variables, the
 * profile's pass_env and [env]). See include/fitrun/envexport.h. Pure. */
#include "fitrun/envexport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

static bool exported(const struct fr_env_entry *e)
{
    return e->action == FR_ENV_SET || e->action == FR_ENV_FORCED;
}

/* Is the "NAME=value" string s one of the variables fitrun replaces? */
static bool replaced(const struct fr_env_export *ex, const char *s)
{
    for (size_t i = 0; i < ex->n; i++) {
        size_t l = strlen(ex->e[i].name);
        if (exported(&ex->e[i]) && !strncmp(s, ex->e[i].name, l) && s[l] == '=')
            return true;
    }
    return false;
}

/* ---- the job environment: what a `fitrun run` job may see -------------- */

/* The caller's variables every job may see. PATH (commands are looked up
 * in it), the locale and the time zone (how text and times are read), and
 * fitrun's own FITRUN_* family; beside these only fitrun's variables (the
 * export list), the profile's [env] and its pass_env patterns. */
static const char *const job_allow[] = {"PATH", "LANG", "LANGUAGE", "LC_*", "TZ", "FITRUN_*", NULL};

/* Variables programs expect that the scrub removes, given a neutral value
 * unless pass_env or [env] provide them. Without HOME, glibc looks the
 * user up to find a home (Python's site module does so at start-up):
 * getpwuid asks nscd over a socket, which the exec preset refuses, and a
 * slot uid has no passwd entry anyway. /nonexistent is Debian's home for
 * users without one. */
static const struct {
    const char *name, *value;
} job_fixed[] = {
    {"HOME", "/nonexistent"},
};

const char *const *fr_env_job_allowed(void)
{
    return job_allow;
}

/* Does "NAME=..." (or the bare NAME, name_len bytes) match `pattern`, a
 * NAME or a PREFIX* (profile pass_env)? */
static bool name_matches(const char *name, size_t len, const char *pattern)
{
    size_t pl = strlen(pattern);
    if (pl && pattern[pl - 1] == '*')
        return len >= pl - 1 && !strncmp(name, pattern, pl - 1);
    return len == pl && !strncmp(name, pattern, pl);
}

enum fr_env_keep fr_env_job_keeps(const struct fr_env_export *ex, const char *name, size_t len, char *const *pass_env)
{
    for (const char *const *a = job_allow; *a; a++)
        if (name_matches(name, len, *a))
            return FR_ENV_KEEP_ALLOWED;
    if (fr_env_is_thread_var(name, len))
        return FR_ENV_KEEP_FITRUN;
    for (size_t i = 0; ex && i < ex->n; i++)
        if (name_matches(name, len, ex->e[i].name))
            return FR_ENV_KEEP_FITRUN;
    for (char *const *p = pass_env; p && *p; p++)
        if (name_matches(name, len, *p))
            return FR_ENV_KEEP_PASSED;
    return FR_ENV_KEEP_NONE;
}

const char *fr_env_job_allowlist(char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (const char *const *a = job_allow; *a && k < n; a++) {
        int r = snprintf(buf + k, n - k, "%s%s", k ? ", " : "", *a);
        k += r > 0 ? (size_t)r : 0;
    }
    if (k < n)
        k += (size_t)snprintf(buf + k, n - k,
                              ", the thread variables (OMP_NUM_THREADS ... PYTHON_CPU_COUNT) and "
                              "fitrun's other exports (JOBLIB_TEMP_FOLDER)");
    for (size_t i = 0; i < sizeof job_fixed / sizeof job_fixed[0] && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "; %s=%s unless passed", job_fixed[i].name, job_fixed[i].value);
    return buf;
}

static size_t name_len(const char *entry)
{
    const char *eq = strchr(entry, '=');
    return eq ? (size_t)(eq - entry) : strlen(entry);
}

/* A caller's entry goes to the child: not one fitrun replaces, and (for a
 * job) one the scrub keeps. An entry without '=' is not a variable. */
static bool passes(const struct fr_env_export *ex, const char *entry, bool scrub, char *const *pass_env)
{
    if (!strchr(entry, '=') || replaced(ex, entry))
        return false;
    return !scrub || fr_env_job_keeps(ex, entry, name_len(entry), pass_env) != FR_ENV_KEEP_NONE;
}

static char **build(const struct fr_env_export *ex, char *const *envp, bool scrub, char *const *pass_env)
{
    size_t n = 0;
    for (char *const *p = envp; p && *p; p++)
        n++;
    char **out = calloc(n + ex->n + sizeof job_fixed / sizeof job_fixed[0] + 1, sizeof *out);
    if (!out)
        return NULL;
    size_t k = 0;
    for (char *const *p = envp; p && *p; p++) {
        if (!passes(ex, *p, scrub, pass_env))
            continue;
        if (!(out[k++] = strdup(*p)))
            goto oom;
    }
    for (size_t i = 0; i < ex->n; i++) {
        if (!exported(&ex->e[i]))
            continue;
        size_t l = strlen(ex->e[i].name) + strlen(ex->e[i].value) + 2;
        if (!(out[k] = malloc(l)))
            goto oom;
        snprintf(out[k++], l, "%s=%s", ex->e[i].name, ex->e[i].value);
    }
    for (size_t i = 0; scrub && i < sizeof job_fixed / sizeof job_fixed[0]; i++) {
        if (fr_env_lookup(out, job_fixed[i].name))
            continue;
        size_t l = strlen(job_fixed[i].name) + strlen(job_fixed[i].value) + 2;
        if (!(out[k] = malloc(l)))
            goto oom;
        snprintf(out[k++], l, "%s=%s", job_fixed[i].name, job_fixed[i].value);
    }
    out[k] = NULL;
    return out;
oom:
    fr_envp_free(out);
    errno = ENOMEM;
    return NULL;
}

char **fr_env_build_envp(const struct fr_env_export *ex, char *const *envp)
{
    return build(ex, envp, false, NULL);
}

char **fr_env_build_job_envp(const struct fr_env_export *ex, char *const *envp, char *const *pass_env)
{
    return build(ex, envp, true, pass_env);
}

char **fr_env_scrubbed(const struct fr_env_export *ex, char *const *envp, char *const *pass_env)
{
    size_t n = 0, k = 0;
    for (char *const *p = envp; p && *p; p++)
        n++;
    char **out = calloc(n + 1, sizeof *out);
    if (!out)
        return NULL;
    for (char *const *p = envp; p && *p; p++) {
        size_t l = name_len(*p);
        if (!strchr(*p, '=') || fr_env_job_keeps(ex, *p, l, pass_env) != FR_ENV_KEEP_NONE)
            continue;
        bool dup = false; /* a name twice in envp is listed once */
        for (size_t i = 0; i < k && !dup; i++)
            dup = strlen(out[i]) == l && !strncmp(out[i], *p, l);
        if (!dup && !(out[k++] = strndup(*p, l))) {
            fr_envp_free(out);
            errno = ENOMEM;
            return NULL;
        }
    }
    return out;
}

void fr_envp_free(char **envp)
{
    if (!envp)
        return;
    for (char **p = envp; *p; p++)
        free(*p);
    free(envp);
}
