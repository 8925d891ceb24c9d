/* export.c — the export list: which variables a wrapped command or a pool
 * job gets from fitrun, with a reason for every one, and the
 * FITRUN_EXPORTED record that tells a nested fitrun its parent's values
 * from the user's. See include/fitrun/envexport.h for the rules.
 *
 * Pure: values come from the arguments only, so unit tests drive it with
 * literal resources and envp arrays. */
#include "fitrun/envexport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

/* The thread-count variables, and who reads each one. Every one of these
 * runtimes sizes itself from the online CPU count (or, at best, affinity)
 * and ignores cgroup CPU quotas unless told. */
static const struct {
    const char *name;
    const char *reader;
} thread_vars[] = {
    {"OMP_NUM_THREADS", "OpenMP runtimes (libgomp, libomp)"},
    {"OPENBLAS_NUM_THREADS", "OpenBLAS"},
    {"MKL_NUM_THREADS", "Intel MKL"},
    {"NUMEXPR_NUM_THREADS", "numexpr"},
    {"VECLIB_MAXIMUM_THREADS", "Apple Accelerate (vecLib)"},
    {"BLIS_NUM_THREADS", "BLIS"},
    {"RAYON_NUM_THREADS", "Rust rayon pools (polars, tokenizers)"},
    {"GOMAXPROCS", "the Go runtime"},
    {"JULIA_NUM_THREADS", "Julia"},
    {"LOKY_MAX_CPU_COUNT", "loky/joblib cpu_count()"},
    {"PYTHON_CPU_COUNT", "Python >= 3.13 os.cpu_count()"},
};

bool fr_env_is_thread_var(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof thread_vars / sizeof thread_vars[0]; i++)
        if (strlen(thread_vars[i].name) == len && !strncmp(name, thread_vars[i].name, len))
            return true;
    return false;
}

/* What fitrun itself exported, as "NAME=VALUE NAME=VALUE ...", so that a
 * nested fitrun (the Docker image runs `fitrun -- fitrun run`, and a pool
 * job may run fitrun again) can tell its parent's values from the user's:
 * a variable whose value is still the one recorded here was not set by the
 * user, and is recomputed (a pool job must get its worker's share, not the
 * whole allocation the outer wrapper exported). Only the counts are
 * recorded (JOBLIB_TEMP_FOLDER is a path, and the same decision anyway). */
#define MARKER_VAR "FITRUN_EXPORTED"

const char *fr_env_action_name(enum fr_env_action a)
{
    switch (a) {
    case FR_ENV_SET: return "set";
    case FR_ENV_KEPT: return "kept";
    case FR_ENV_FORCED: return "forced";
    case FR_ENV_SKIPPED: return "skipped";
    }
    return "?";
}

static struct fr_env_entry *find_mut(struct fr_env_export *ex, const char *name)
{
    for (size_t i = 0; i < ex->n; i++)
        if (!strcmp(ex->e[i].name, name))
            return &ex->e[i];
    return NULL;
}

const struct fr_env_entry *fr_env_find(const struct fr_env_export *ex, const char *name)
{
    return find_mut((struct fr_env_export *)ex, name);
}

/* Append (or, for an existing name, reset) an entry. Returns it, or NULL
 * on ENOMEM / full table. */
static struct fr_env_entry *put(struct fr_env_export *ex, const char *name, const char *value,
                                enum fr_env_action action)
{
    struct fr_env_entry *e = find_mut(ex, name);
    if (!e) {
        if (ex->n >= FR_ENV_MAX) {
            errno = E2BIG;
            return NULL;
        }
        e = &ex->e[ex->n];
        memset(e, 0, sizeof *e);
        if (!(e->name = strdup(name)))
            return NULL;
        ex->n++;
    }
    char *v = strdup(value ? value : "");
    if (!v)
        return NULL;
    free(e->value);
    e->value = v;
    e->action = action;
    e->make_dir = false;
    e->reason[0] = '\0';
    return e;
}

/* Reasons go through fr_seterr (common.h): truncating a long cgroup path in
 * a message is fine, and going through vsnprintf keeps -Wformat-truncation
 * quiet about it on purpose. */

#define reason(e, ...) fr_seterr((e)->reason, sizeof(e)->reason, __VA_ARGS__)

/* Does envp's FITRUN_EXPORTED record `name` with exactly `value`? */
bool fr_env_from_outer(char *const *envp, const char *name, const char *value)
{
    if (!name || !value)
        return false;
    const char *m = fr_env_lookup(envp, MARKER_VAR);
    size_t nl = strlen(name), vl = strlen(value);
    while (m && *m) {
        while (*m == ' ')
            m++;
        size_t tl = strcspn(m, " ");
        if (tl == nl + 1 + vl && !strncmp(m, name, nl) && m[nl] == '=' && !strncmp(m + nl + 1, value, vl))
            return true;
        m += tl;
    }
    return false;
}

/* The user's value of `name`: present in envp and not merely left there
 * by an outer fitrun (FITRUN_EXPORTED). Sets *outer when it was. */
static const char *user_value(char *const *envp, const char *name, bool *outer)
{
    const char *v = fr_env_lookup(envp, name);
    *outer = v && fr_env_from_outer(envp, name, v);
    return *outer ? NULL : v;
}

void fr_env_fitrun_cpus(char *const *envp, struct fr_detect_opts *o)
{
    bool outer;
    o->cpus_env = user_value(envp, "FITRUN_CPUS", &outer);
    o->cpus_outer = outer ? fr_env_lookup(envp, "FITRUN_CPUS") : NULL;
}

/* Export `value` as `name` unless the user already set it. `why` explains
 * the value; it ends up in the reason either way. */
static struct fr_env_entry *offer(struct fr_env_export *ex, char *const *envp, const char *name, const char *value,
                                  const char *why)
{
    bool outer;
    const char *user = user_value(envp, name, &outer);
    struct fr_env_entry *e = put(ex, name, user ? user : value, user ? FR_ENV_KEPT : FR_ENV_SET);
    if (!e)
        return NULL;
    if (user)
        reason(e, "already set in the environment, left alone (fitrun would export %s: %s)", value, why);
    else
        reason(e, "%s%s", why, outer ? " (replaces the value an outer fitrun exported)" : "");
    return e;
}

static const char *rounding_word(enum fr_rounding r)
{
    return r == FR_ROUND_CEIL ? "rounded up" : r == FR_ROUND_NEAREST ? "rounded to nearest" : "rounded down";
}

/* "1.5" / "2" / "0.25": effective CPUs without trailing zeros. */
static void format_cpus(double cpus, char *buf, size_t n)
{
    snprintf(buf, n, "%.2f", cpus);
    char *dot = strchr(buf, '.');
    if (!dot)
        return;
    char *end = buf + strlen(buf);
    while (end > dot + 1 && end[-1] == '0')
        *--end = '\0';
    if (end == dot + 1)
        *dot = '\0';
}

/* The limit that decided cpu_effective (detection's rule,
 * fr_cpu_binding), for the reasons. */
static void describe_cpus(const struct fr_resources *res, char *buf, size_t n)
{
    struct fr_cpu_limit b;
    char cpus[32];
    fr_cpu_binding(res, false, &b);
    format_cpus(res->cpu_effective, cpus, sizeof cpus);
    fr_seterr(buf, n, "%s effective CPUs, from the %s%s%s", cpus, b.what, b.source && b.source[0] ? " " : "",
              b.source ? b.source : "");
}

static int export_threads(struct fr_env_export *ex, const struct fr_resources *res, const struct fr_plan *plan,
                          int threads, char *const *envp)
{
    char cpus[256], why[FR_ENV_REASON_MAX], val[32], cpuval[32];
    describe_cpus(res, cpus, sizeof cpus);
    const bool per_worker = threads > 0;
    const char *per;
    if (per_worker) {
        per = "threads per pool worker";
        snprintf(cpuval, sizeof cpuval, "%d", threads);
    } else {
        threads = plan->threads_whole; /* the plan rounds; nobody else */
        per = rounding_word(plan->rounding);
        format_cpus(res->cpu_effective > 0 ? res->cpu_effective : threads, cpuval, sizeof cpuval);
    }
    snprintf(val, sizeof val, "%d", threads);
    ex->threads = threads;
    for (size_t i = 0; i < sizeof thread_vars / sizeof thread_vars[0]; i++) {
        fr_seterr(why, sizeof why, "%s: %s (%s)", thread_vars[i].reader, cpus, per);
        if (!offer(ex, envp, thread_vars[i].name, val, why))
            return -1;
    }
    /* A nested fitrun detects again but keeps an exported FITRUN_CPUS
     * (recorded in FITRUN_EXPORTED) as an upper bound, so a pool job's
     * children see the job's share, not the whole allocation. */
    if (per_worker)
        fr_seterr(why, sizeof why, "fitrun's CPU budget for this pool worker: %s threads (%s)", cpuval, cpus);
    else
        fr_seterr(why, sizeof why, "fitrun's CPU budget for this process tree: %s", cpus);
    return offer(ex, envp, "FITRUN_CPUS", cpuval, why) ? 0 : -1;
}

static int export_workers(struct fr_env_export *ex, const struct fr_plan *plan, char *const *envp)
{
    char val[32], why[FR_ENV_REASON_MAX];
    int w = plan->workers > 0 ? plan->workers : 1;
    snprintf(val, sizeof val, "%d", w);
    if (plan->nreasons > 0)
        fr_seterr(why, sizeof why, "worker processes that fit: %s", plan->reasons[0]);
    else
        fr_seterr(why, sizeof why, "worker processes that fit (plan)");
    return offer(ex, envp, "FITRUN_WORKERS", val, why) ? 0 : -1;
}

static int export_memory(struct fr_env_export *ex, const struct fr_resources *res, char *const *envp)
{
    char val[32], human[32], why[FR_ENV_REASON_MAX];
    if (!res->mem_limit.known) {
        /* Present (the user's, or an outer fitrun's that saw a limit this
         * one cannot): left as it is. */
        const char *user = fr_env_lookup(envp, "FITRUN_MEMORY_LIMIT");
        struct fr_env_entry *e = put(ex, "FITRUN_MEMORY_LIMIT", user, user ? FR_ENV_KEPT : FR_ENV_SKIPPED);
        if (!e)
            return -1;
        reason(e, user ? "already set in the environment, left alone (no memory limit detected)"
                       : "no memory limit detected: not exported");
        return 0;
    }
    snprintf(val, sizeof val, "%.0f", res->mem_limit.value);
    fr_format_size((uint64_t)res->mem_limit.value, human, sizeof human);
    fr_seterr(why, sizeof why, "memory limit %s in bytes%s%s", human, res->mem_limit.source[0] ? ", from " : "",
              res->mem_limit.source);
    return offer(ex, envp, "FITRUN_MEMORY_LIMIT", val, why) ? 0 : -1;
}

/* Disk-backed base directory for joblib: the user's TMPDIR when it is an
 * absolute path, else /var/tmp, which the FHS keeps on disk (unlike /tmp,
 * which is often a tmpfs and would defeat the purpose). */
static const char *joblib_base(char *const *envp)
{
    const char *t = fr_env_lookup(envp, "TMPDIR");
    return t && t[0] == '/' ? t : "/var/tmp";
}

/* An entry that says why JOBLIB_TEMP_FOLDER is not exported: kept when the
 * user set it, skipped otherwise. */
static int joblib_leave(struct fr_env_export *ex, char *const *envp, const char *why)
{
    const char *user = fr_env_lookup(envp, FR_ENV_JOBLIB_VAR);
    struct fr_env_entry *e = put(ex, FR_ENV_JOBLIB_VAR, user, user ? FR_ENV_KEPT : FR_ENV_SKIPPED);
    if (!e)
        return -1;
    reason(e, "%s%s", user ? "already set in the environment, left alone; " : "", why);
    return 0;
}

static int export_joblib(struct fr_env_export *ex, const struct fr_resources *res, char *const *envp,
                         const struct fr_env_opts *opts)
{
    uint64_t threshold = opts && opts->shm_threshold ? opts->shm_threshold : FR_ENV_SHM_THRESHOLD_DEFAULT;
    char have[32], lim[32], why[FR_ENV_REASON_MAX], dir[4096];
    fr_format_size(threshold, lim, sizeof lim);
    if (!res->shm_size.known)
        return joblib_leave(ex, envp, "/dev/shm size unknown: left to joblib");
    fr_format_size((uint64_t)res->shm_size.value, have, sizeof have);
    if (res->shm_size.value >= (double)threshold) {
        fr_seterr(why, sizeof why, "/dev/shm is %s, not below the %s threshold: joblib may use it", have, lim);
        return joblib_leave(ex, envp, why);
    }
    int r = snprintf(dir, sizeof dir, "%s/fitrun-joblib-%lu", joblib_base(envp), (unsigned long)(opts ? opts->uid : 0));
    if (r < 0 || (size_t)r >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fr_seterr(why, sizeof why,
              "/dev/shm is only %s (< %s): joblib memmaps go to a disk-backed directory instead of "
              "filling it (%s)",
              have, lim, res->shm_size.source[0] ? res->shm_size.source : "/dev/shm");
    struct fr_env_entry *e = offer(ex, envp, FR_ENV_JOBLIB_VAR, dir, why);
    if (!e)
        return -1;
    e->make_dir = e->action == FR_ENV_SET;
    return 0;
}

static bool valid_name(const char *s)
{
    return s && s[0] && !strchr(s, '=');
}

static int apply_forced(struct fr_env_export *ex, char *const *envp, const struct fr_env_forced *f)
{
    const char *origin = f->origin ? f->origin : "profile";
    for (int i = 0; i < f->n; i++) {
        const char *name = f->name[i], *value = f->value[i] ? f->value[i] : "";
        if (!valid_name(name)) {
            errno = EINVAL;
            return -1;
        }
        const struct fr_env_entry *old = fr_env_find(ex, name);
        char would[64] = "";
        /* Mention what fitrun itself would have exported, when it differs. */
        if (old && old->action == FR_ENV_SET && strcmp(old->value, value))
            fr_seterr(would, sizeof would, "; fitrun would export %.40s", old->value);
        const char *user = fr_env_lookup(envp, name);
        char prev[160];
        if (user)
            fr_seterr(prev, sizeof prev, "; the environment had '%.100s'", user);
        else
            prev[0] = '\0';
        struct fr_env_entry *e = put(ex, name, value, FR_ENV_FORCED);
        if (!e)
            return -1;
        reason(e, "forced by %s [env]%s%s", origin, prev, would);
    }
    return 0;
}

static bool recorded(const struct fr_env_entry *e)
{
    return e->action == FR_ENV_SET && strcmp(e->name, FR_ENV_JOBLIB_VAR) && strcmp(e->name, MARKER_VAR) &&
           !strchr(e->value, ' ');
}

/* FITRUN_EXPORTED: the counts fitrun SET (see MARKER_VAR). Always
 * exported (possibly empty), replacing an outer fitrun's record; a profile
 * that forces it wins like for any variable. */
static int export_marker(struct fr_env_export *ex)
{
    const struct fr_env_entry *old = fr_env_find(ex, MARKER_VAR);
    if (old && old->action == FR_ENV_FORCED)
        return 0;
    size_t len = 1;
    for (size_t i = 0; i < ex->n; i++)
        if (recorded(&ex->e[i]))
            len += strlen(ex->e[i].name) + strlen(ex->e[i].value) + 2;
    char *m = malloc(len), *p = m;
    if (!m)
        return -1;
    *p = '\0';
    for (size_t i = 0; i < ex->n; i++) {
        const struct fr_env_entry *e = &ex->e[i];
        if (recorded(e))
            p += sprintf(p, "%s%s=%s", p == m ? "" : " ", e->name, e->value);
    }
    struct fr_env_entry *e = put(ex, MARKER_VAR, m, FR_ENV_SET);
    free(m);
    if (!e)
        return -1;
    reason(e, "the variables fitrun set, so a nested fitrun can tell them from the user's");
    return 0;
}

int fr_env_compute(const struct fr_resources *res, const struct fr_plan *plan, int threads, char *const *envp,
                   const struct fr_env_forced *forced, const struct fr_env_opts *opts, struct fr_env_export *out)
{
    out->n = 0;
    out->threads = 0;
    if (!res || !plan) {
        errno = EINVAL;
        return -1;
    }
    if (export_threads(out, res, plan, threads, envp) < 0 || export_workers(out, plan, envp) < 0 ||
        export_memory(out, res, envp) < 0 || export_joblib(out, res, envp, opts) < 0)
        return -1;
    if (forced && apply_forced(out, envp, forced) < 0)
        return -1;
    return export_marker(out);
}

void fr_env_free(struct fr_env_export *ex)
{
    for (size_t i = 0; i < ex->n; i++) {
        free(ex->e[i].name);
        free(ex->e[i].value);
    }
    ex->n = 0;
}

void fr_env_print(const struct fr_env_export *ex, FILE *f)
{
    for (size_t i = 0; i < ex->n; i++) {
        const struct fr_env_entry *e = &ex->e[i];
        if (e->action == FR_ENV_SKIPPED)
            fprintf(f, "%-7s %s  # %s\n", fr_env_action_name(e->action), e->name, e->reason);
        else
            fprintf(f, "%-7s %s=%s  # %s\n", fr_env_action_name(e->action), e->name, e->value, e->reason);
    }
}
