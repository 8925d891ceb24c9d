/* detect.c — one detection run: file access under the sysroot, notes, and
 * the order of the steps. The steps live beside it (mountinfo.c,
 * cgroup_path.c, cpu.c, memory.c, pids.c, shm.c, scheduler.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fitrun/envexport.h"
#include "fitrun/util.h"
#include "internal.h"

extern char **environ;

void fr_copy(char *dst, size_t n, const char *src)
{
    if (n == 0)
        return;
    snprintf(dst, n, "%s", src);
}

bool fr_dir_file(char *buf, size_t n, const char *dir, const char *name)
{
    int r = snprintf(buf, n, "%s/%s", strcmp(dir, "/") ? dir : "", name);
    if (r < 0 || (size_t)r >= n) {
        buf[0] = '\0';
        return false;
    }
    return true;
}

void fr_value_set(struct fr_value *v, double value, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->source, sizeof v->source, fmt, ap);
    va_end(ap);
    v->known = true;
    v->value = value;
}

void fr_detect_note(struct fr_resources *r, const char *fmt, ...)
{
    if (r->nnotes >= FR_NOTES_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->nnotes], FR_NOTE_MAX, fmt, ap);
    va_end(ap);
    /* The same problem seen twice (e.g. by two walks) is one note. */
    for (int i = 0; i < r->nnotes; i++)
        if (!strcmp(r->notes[i], r->notes[r->nnotes]))
            return;
    r->nnotes++;
}

char *fr_dx_read(const struct fr_dx *x, const char *path, size_t max)
{
    char full[FR_PATH];
    if (!fr_path_join(full, sizeof full, x->sysroot, path))
        return NULL;
    return fr_read_file(full, max, NULL);
}

char *fr_dx_read_noted(struct fr_dx *x, const char *path, size_t max, bool quiet_missing, const char *what)
{
    char *text = fr_dx_read(x, path, max);
    if (!text && !(quiet_missing && errno == ENOENT))
        fr_detect_note(x->res, "%s: %s: %s: ignored", what, path, fr_read_strerror(errno));
    return text;
}

bool fr_dx_is_dir(const struct fr_dx *x, const char *path)
{
    char full[FR_PATH];
    struct stat st;
    return fr_path_join(full, sizeof full, x->sysroot, path) && stat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *fr_dx_getenv(const struct fr_dx *x, const char *name)
{
    size_t l = strlen(name);
    for (char *const *e = x->envp; e && *e; e++)
        if (!strncmp(*e, name, l) && (*e)[l] == '=')
            return *e + l + 1;
    return NULL;
}

int fr_parse_cpus(const char *s, double *out)
{
    double v;
    if (fr_parse_double(s, &v) < 0 || !(v > 0) || v > FR_CPU_BITS)
        return -1;
    *out = v;
    return 0;
}

static void detect_cgroups(struct fr_dx *x)
{
    char *mi = fr_dx_read_noted(x, "/proc/self/mountinfo", FR_BIG_FILE, false, "mounts");
    if (mi) {
        fr_mounts_scan(x, mi, "/proc/self/mountinfo");
        free(mi);
    }
    char *cg = fr_dx_read_noted(x, "/proc/self/cgroup", FR_BIG_FILE, false, "cgroups");
    fr_cgroups_locate(x, cg);
    free(cg);
}

/* One candidate override: its value, how it is reported (source) and how a
 * note names the request ("--cpus 8", "FITRUN_CPUS=8"). */
struct ask {
    double value;
    char source[FR_SOURCE_MAX];
    char what[FR_SOURCE_MAX + 48];
};

/* FITRUN_CPUS from the environment: the user's override (returns true and
 * fills *a), or the value an outer fitrun exported (a bound: cpu_outer), or
 * garbage (noted). */
static bool env_override(struct fr_dx *x, struct ask *a)
{
    struct fr_resources *r = x->res;
    const char *env = fr_dx_getenv(x, "FITRUN_CPUS");
    double v;
    if (!env)
        return false;
    if (fr_parse_cpus(env, &v) < 0) {
        fr_detect_note(r, "FITRUN_CPUS='%.40s' is not a number of CPUs (above 0, at most %d): ignored", env,
                       FR_CPU_BITS);
        return false;
    }
    /* `fitrun -- fitrun run` (the Docker image), or fitrun inside a pool
     * job: the outer fitrun's export is not the user's request. Reporting
     * it as an override would hide the real source (a quota, a cpuset);
     * so detect again, and keep the value only as an upper bound, which
     * keeps a pool job's share (its threads) for a nested fitrun. */
    if (fr_env_from_outer(x->envp, "FITRUN_CPUS", env)) {
        fr_value_set(&r->cpu_outer, v, "FITRUN_CPUS=%.40s (exported by an outer fitrun)", env);
        fr_detect_note(r, "FITRUN_CPUS=%.40s was exported by an outer fitrun: detecting again (kept as an upper bound)", env);
        return false;
    }
    a->value = v;
    snprintf(a->source, sizeof a->source, "FITRUN_CPUS=%.40s", env);
    snprintf(a->what, sizeof a->what, "FITRUN_CPUS=%.40s", env);
    return true;
}

/* Overrides, strongest first: --cpus, the user's FITRUN_CPUS, the
 * profile's cpus (see fitrun/detect.h). The winner becomes cpu_override;
 * each loser is noted. Command line > environment > file, as usual. */
static void detect_override(struct fr_dx *x, const struct fr_detect_opts *o, struct ask *won)
{
    struct fr_resources *r = x->res;
    struct ask cand[3];
    int n = 0;
    if (o && o->cpus_override > 0) {
        const char *src = o->cpus_override_source ? o->cpus_override_source : "--cpus";
        cand[n].value = o->cpus_override;
        fr_copy(cand[n].source, sizeof cand[n].source, src);
        snprintf(cand[n].what, sizeof cand[n].what, "%.200s %g", src, o->cpus_override);
        n++;
    }
    if (env_override(x, &cand[n]))
        n++;
    if (o && o->cpus_profile > 0) {
        const char *src = o->cpus_profile_source ? o->cpus_profile_source : "profile";
        cand[n].value = o->cpus_profile;
        fr_copy(cand[n].source, sizeof cand[n].source, src);
        snprintf(cand[n].what, sizeof cand[n].what, "cpus = %g (%.200s)", o->cpus_profile, src);
        n++;
    }
    if (n == 0)
        return;
    *won = cand[0];
    fr_value_set(&r->cpu_override, cand[0].value, "%s", cand[0].source);
    for (int i = 1; i < n; i++)
        fr_detect_note(r, "%s ignored: %s given", cand[i].what, cand[0].source);
}

/* The tightest bound among the detected ones. On a tie a quota or a
 * scheduler allocation is named rather than the affinity it equals (it is
 * the limit someone set), the scheduler rather than a quota, and the outer
 * fitrun's FITRUN_CPUS never (it is a copy of one of them). */
const char *fr_cpu_detected_bound(const struct fr_resources *r, const char **source)
{
    double e = r->cpu_affinity > 0 ? r->cpu_affinity : 1;
    const char *name = "affinity", *src = r->cpu_affinity_source;
    const struct {
        const char *name;
        const struct fr_value *v;
    } b[] = {{"quota", &r->cpu_quota}, {"scheduler", &r->cpu_scheduler}, {"outer", &r->cpu_outer}};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i].v->known && (b[i].v->value < e || (b[i].v != &r->cpu_outer && b[i].v->value == e))) {
            e = b[i].v->value;
            name = b[i].name;
            src = b[i].v->source;
        }
    if (source)
        *source = src;
    return name;
}

const char *fr_cpu_bound(const struct fr_resources *r, const char **source)
{
    if (r->cpu_override.known) {
        if (source)
            *source = r->cpu_override.source;
        return "override";
    }
    return fr_cpu_detected_bound(r, source);
}

static double detected_cpus(const struct fr_resources *r)
{
    double e = r->cpu_affinity > 0 ? r->cpu_affinity : 1;
    const struct fr_value *b[] = {&r->cpu_quota, &r->cpu_scheduler, &r->cpu_outer};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (b[i]->known && b[i]->value < e)
            e = b[i]->value;
    return e;
}

static void combine(struct fr_dx *x, const struct ask *won)
{
    struct fr_resources *r = x->res;
    r->cpu_detected = detected_cpus(r);
    r->cpu_effective = r->cpu_detected;
    /* An override wins over everything. Above what was
     * detected it oversubscribes the kernel's limit: allowed, as asked,
     * but said. */
    if (r->cpu_override.known) {
        r->cpu_effective = r->cpu_override.value;
        if (r->cpu_override.value > r->cpu_detected + 1e-9)
            fr_detect_note(r, "%s exceeds the %g %s detected (%s); using %g as asked", won->what, r->cpu_detected,
                           r->cpu_detected == 1 ? "CPU" : "CPUs", fr_cpu_detected_bound(r, NULL), r->cpu_override.value);
    }

    /* A scheduler's memory allocation bounds us like a cgroup limit. */
    bool below_total = !r->mem_total || r->mem_scheduler.value < (double)r->mem_total;
    if (r->mem_scheduler.known && below_total && (!r->mem_limit.known || r->mem_scheduler.value < r->mem_limit.value))
        r->mem_limit = r->mem_scheduler;

    if (r->shm_size.known && r->mem_limit.known && r->shm_size.value > r->mem_limit.value) {
        char a[32], b[32];
        fr_detect_note(r, "/dev/shm (%s) is larger than the memory limit (%s): tmpfs pages count against the limit",
                       fr_format_size((uint64_t)r->shm_size.value, a, sizeof a), fr_format_size((uint64_t)r->mem_limit.value, b, sizeof b));
    }
}

static void detect_all(struct fr_dx *x, const struct fr_detect_opts *opts)
{
    detect_cgroups(x);
    fr_detect_cpu(x);
    fr_detect_memory(x);
    fr_detect_pids(x);
    fr_detect_shm(x);
    fr_detect_scheduler(x);
    struct ask won = {0};
    detect_override(x, opts, &won);
    combine(x, &won);
}

int fr_detect(const struct fr_detect_opts *opts, struct fr_resources *out)
{
    memset(out, 0, sizeof *out);
    const char *root = opts && opts->sysroot && opts->sysroot[0] ? opts->sysroot : "/";
    /* fr_dx holds a few paths per controller (~70 KiB): keep it off the stack. */
    struct fr_dx *x = calloc(1, sizeof *x);
    if (!x) {
        fr_detect_note(out, "out of memory: nothing detected");
        out->cpu_affinity = 1;
        out->cpu_detected = out->cpu_effective = 1;
        return 0;
    }
    x->sysroot = root;
    x->live = !strcmp(root, "/");
    x->envp = opts && opts->envp ? opts->envp : environ;
    x->res = out;
    detect_all(x, opts);
    free(x);
    return 0;
}
