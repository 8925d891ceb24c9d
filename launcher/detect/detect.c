/* detect.c — one detection run: file access under the sysroot, notes, and
 * the order of the steps. The steps live beside it (mountinfo.c,
 * cgroup_path.c, cpu.c, memory.c, pids.c, shm.c, scheduler.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
        fr_detect_note(x->res, "%s: %s: %s: ignored", what, path, strerror(errno));
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

/* --cpus wins over FITRUN_CPUS; both are one more bound in the minimum. */
static void detect_override(struct fr_dx *x, double cli)
{
    struct fr_resources *r = x->res;
    const char *env = fr_dx_getenv(x, "FITRUN_CPUS");
    double v;
    if (cli > 0) {
        fr_value_set(&r->cpu_override, cli, "--cpus");
        if (env)
            fr_detect_note(r, "FITRUN_CPUS=%.40s ignored: --cpus given", env);
    } else if (env) {
        if (fr_parse_double(env, &v) == 0 && v > 0)
            fr_value_set(&r->cpu_override, v, "FITRUN_CPUS=%.40s", env);
        else
            fr_detect_note(r, "FITRUN_CPUS='%.40s' is not a positive number: ignored", env);
    }
}

static void combine(struct fr_dx *x)
{
    struct fr_resources *r = x->res;
    double e = r->cpu_affinity > 0 ? r->cpu_affinity : 1;
    if (r->cpu_quota.known && r->cpu_quota.value < e)
        e = r->cpu_quota.value;
    if (r->cpu_scheduler.known && r->cpu_scheduler.value < e)
        e = r->cpu_scheduler.value;
    r->cpu_detected = e;
    if (r->cpu_override.known && r->cpu_override.value < e)
        e = r->cpu_override.value;
    else if (r->cpu_override.known && r->cpu_override.value > e)
        fr_detect_note(r, "%s asks for %g CPUs but only %g may be used here: the override cannot raise the limit (use --workers to oversubscribe)",
                       r->cpu_override.source, r->cpu_override.value, r->cpu_detected);
    r->cpu_effective = e;

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
    detect_override(x, opts ? opts->cpus_override : 0);
    combine(x);
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
