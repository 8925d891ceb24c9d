/* fuzz_detect.c — a whole detection run (fr_detect under a sysroot, as
 * `fitrun detect --sysroot` and the fixture tests do), then the pool plan
 * and the environment a job gets. The input describes a file tree and an
 * environment, in the form tests/fuzz/make-seeds.sh writes the fixture
 * trees (tests/fixtures/) in:
 *
 *   @@ /proc/self/mountinfo
 *   30 22 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw
 *   @@ /sys/fs/cgroup/cpu.max
 *   50000 100000
 *   @@ /sys/fs/cgroup/system.slice/
 *   @@ env
 *   SLURM_CPUS_PER_TASK=2
 *
 * A "@@ " line starts a record: an absolute path (printable ASCII, no ".."
 * component; a trailing "/" makes a directory) whose file holds the bytes
 * up to the next record, or "env": the environment, NAME=value per line.
 * The tree is written under a private directory (in FITRUN_FUZZ_TMPDIR,
 * else on /dev/shm when there is one), detected, and removed.
 *
 * Invariants:
 *  - the CPU counts are finite numbers above 0: effective and detected
 *    (and at most FR_CPU_BITS, the most CPUs a kernel has), affinity 1 to
 *    FR_CPU_BITS, every known quota, scheduler, override or outer value;
 *    the binding limit (fr_cpu_binding) is the effective and the detected
 *    count;
 *  - a memory limit is finite, at least 0 (memory.max may say 0) and
 *    below MemTotal when that is known; the integers the report prints
 *    (memory, pids, shares, /dev/shm) fit in a signed 64-bit JSON integer;
 *  - each controller found has an absolute directory and mount point;
 *  - notes are at most FR_NOTES_MAX, each terminated;
 *  - the plan, for every rounding, has 1 to 10^6 workers and at least one
 *    thread per worker and per job;
 *  - a job's environment has every entry NAME=value, each variable fitrun
 *    sets once and with fitrun's value, and of the caller's variables only
 *    those the scrub lets through (fr_env_job_keeps). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/detect.h"
#include "fitrun/envexport.h"
#include "fitrun/plan.h"
#include "fitrun/common.h"
#include "fuzz.h"

#define MAX_RECORDS 64
#define MAX_VARS 64
#define MAX_PATH_IN 300

static char root[256];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if (remove(path) < 0 && errno != ENOENT) {
        perror(path);
        abort();
    }
    return 0;
}

static void remove_tree(void)
{
    if (root[0] && nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT) {
        perror(root);
        abort();
    }
}

static void cleanup(void)
{
    remove_tree();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* tmpfs: a disk file system's journal makes each run a hundred times
     * slower (the tree is written and removed every time). */
    struct stat st;
    const char *tmp = getenv("FITRUN_FUZZ_TMPDIR"); /* scripts/dev fuzz: removed after the runs, crashes too */
    if (!tmp || !*tmp)
        tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                                                                 : getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/fitrun-fuzz-detect-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        perror(root);
        abort();
    }
    atexit(cleanup);
    fr_quiet = true;
    return 0;
}

/* A path the harness writes: absolute, printable, no "..", not too deep. */
static bool path_ok(const char *p, size_t n)
{
    if (n == 0 || n > MAX_PATH_IN || p[0] != '/')
        return false;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
            return false;
        if (p[i] == '/') {
            if (++depth > 16)
                return false;
            if (i + 2 < n && p[i + 1] == '.' && p[i + 2] == '.' && (i + 3 == n || p[i + 3] == '/'))
                return false;
        }
    }
    return true;
}

/* mkdir -p for the directories of `full` (after the root). */
static void make_parents(char *full, bool last_too)
{
    size_t rl = strlen(root);
    for (char *s = full + rl + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        (void)mkdir(full, 0755);
        *s = '/';
    }
    if (last_too)
        (void)mkdir(full, 0755);
}

static void write_file(const char *path, size_t plen, const char *content, size_t clen)
{
    char full[sizeof root + MAX_PATH_IN + 2];
    snprintf(full, sizeof full, "%s%.*s", root, (int)plen, path);
    bool dir = path[plen - 1] == '/';
    make_parents(full, dir);
    if (dir)
        return;
    int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return; /* a directory there already, or a file where a directory should be */
    if (write(fd, content, clen) != (ssize_t)clen) {
        perror(full);
        abort();
    }
    close(fd);
}

/* Write the records of `text` (size bytes); fill envp from the "env" record. */
static void build_tree(const char *text, size_t size, char **envp, char *envbuf)
{
    int nvars = 0, nrec = 0;
    size_t envused = 0;
    const char *p = text, *end = text + size;
    /* Skip to the first record. */
    while (p < end && !(end - p >= 3 && !memcmp(p, "@@ ", 3))) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        p = nl ? nl + 1 : end;
    }
    while (p < end && nrec++ < MAX_RECORDS) {
        const char *name = p + 3, *nl = memchr(name, '\n', (size_t)(end - name));
        size_t nlen = nl ? (size_t)(nl - name) : (size_t)(end - name);
        const char *body = nl ? nl + 1 : end, *q = body;
        /* The body runs to the next line that starts with "@@ ". */
        while (q < end && !(end - q >= 3 && !memcmp(q, "@@ ", 3))) {
            const char *qn = memchr(q, '\n', (size_t)(end - q));
            q = qn ? qn + 1 : end;
        }
        size_t blen = (size_t)(q - body);
        if (nlen == 3 && !memcmp(name, "env", 3)) {
            char *vars = envbuf + envused; /* several env records add up */
            memcpy(vars, body, blen);
            vars[blen] = '\0';
            envused += blen + 1;
            for (char *save = NULL, *v = strtok_r(vars, "\n", &save); v && nvars < MAX_VARS;
                 v = strtok_r(NULL, "\n", &save)) {
                /* The machine ad is read under the sysroot: no way out of it. */
                if (!strncmp(v, "_CONDOR_MACHINE_AD=", 19) && (v[19] != '/' || strstr(v, "..")))
                    continue;
                envp[nvars++] = v;
            }
        } else if (path_ok(name, nlen) && !memchr(body, '\0', blen)) {
            write_file(name, nlen, body, blen);
        }
        p = q;
    }
    envp[nvars] = NULL;
}

static bool fits_json_int(double v)
{
    return isfinite(v) && v >= -0x1p63 && v < 0x1p63;
}

static void check_value(const struct fr_value *v, const char *what, bool cpu)
{
    if (!v->known)
        return;
    FUZZ_CHECK(memchr(v->source, '\0', sizeof v->source), "%s source terminated", what);
    if (cpu)
        FUZZ_CHECK(isfinite(v->value) && v->value > 0, "%s = %g CPUs (%s)", what, v->value, v->source);
    else
        FUZZ_CHECK(fits_json_int(v->value) && v->value >= 0, "%s = %g (%s) is not a reportable count", what, v->value,
                   v->source);
}

static void check_resources(const struct fr_resources *r)
{
    FUZZ_CHECK(isfinite(r->cpu_effective) && r->cpu_effective > 0 && r->cpu_effective <= FR_CPU_BITS,
               "effective %g CPUs", r->cpu_effective);
    FUZZ_CHECK(isfinite(r->cpu_detected) && r->cpu_detected > 0 && r->cpu_detected <= FR_CPU_BITS, "detected %g CPUs",
               r->cpu_detected);
    FUZZ_CHECK(r->cpu_affinity >= 1 && r->cpu_affinity <= FR_CPU_BITS, "affinity %d", r->cpu_affinity);
    FUZZ_CHECK(r->cpu_online >= 0 && r->cpu_online <= FR_CPU_BITS, "online %d", r->cpu_online);
    check_value(&r->cpu_quota, "quota", true);
    check_value(&r->cpu_scheduler, "scheduler", true);
    check_value(&r->cpu_override, "override", true);
    check_value(&r->cpu_outer, "outer", true);
    check_value(&r->cpu_cpuset, "cpuset", false); /* a count, reported: an empty intersection of levels is 0 */
    check_value(&r->cpu_shares, "shares", false);
    check_value(&r->mem_limit, "memory limit", false);
    check_value(&r->mem_high, "memory.high", false);
    check_value(&r->mem_scheduler, "scheduler memory", false);
    check_value(&r->pids_limit, "pids limit", false);
    check_value(&r->pids_current, "pids current", false);
    check_value(&r->pids_available, "pids available", false);
    check_value(&r->shm_size, "shm size", false);
    check_value(&r->shm_free, "shm free", false);
    FUZZ_CHECK(r->mem_total < (1ull << 63), "MemTotal %llu", (unsigned long long)r->mem_total);
    if (r->mem_limit.known)
        FUZZ_CHECK(r->mem_limit.value >= 0 && (!r->mem_total || r->mem_limit.value < (double)r->mem_total),
                   "memory limit %g with MemTotal %llu", r->mem_limit.value, (unsigned long long)r->mem_total);
    FUZZ_CHECK(r->cgroup_version >= 0 && r->cgroup_version <= 2, "cgroup version %d", r->cgroup_version);
    for (int c = 0; c < FR_CTL_COUNT; c++) {
        const struct fr_cgroup_loc *l = &r->cgroup[c];
        FUZZ_CHECK(l->version >= 0 && l->version <= 2, "controller %d version %d", c, l->version);
        if (l->version)
            FUZZ_CHECK(l->dir[0] == '/' && l->mount[0] == '/', "controller %d at '%s' (mount '%s')", c, l->dir,
                       l->mount);
    }
    FUZZ_CHECK(r->nnotes >= 0 && r->nnotes <= FR_NOTES_MAX, "%d notes", r->nnotes);
    for (int i = 0; i < r->nnotes; i++)
        FUZZ_CHECK(memchr(r->notes[i], '\0', FR_NOTE_MAX), "note %d terminated", i);
    /* The binding limit is the one rule for the effective and detected CPUs. */
    struct fr_cpu_limit eff, det;
    fr_cpu_binding(r, false, &eff);
    fr_cpu_binding(r, true, &det);
    FUZZ_CHECK(eff.name && eff.what && eff.source && eff.value == r->cpu_effective, "binding %s = %g, effective %g",
               eff.name ? eff.name : "(null)", eff.value, r->cpu_effective);
    FUZZ_CHECK(det.name && det.source && det.value == r->cpu_detected, "binding %s = %g, detected %g",
               det.name ? det.name : "(null)", det.value, r->cpu_detected);
}

static void check_job_env(const struct fr_resources *r, const struct fr_plan *plan, char *const *envp)
{
    struct fr_env_export ex;
    struct fr_env_opts eo = {.uid = 1000};
    if (fr_env_compute(r, plan, plan->threads_per_job, envp, NULL, &eo, &ex) < 0) {
        fr_env_free(&ex);
        return;
    }
    char **job = fr_env_build_job_envp(&ex, envp, NULL);
    FUZZ_CHECK(job, "job environment built");
    for (size_t i = 0; job[i]; i++) {
        const char *eq = strchr(job[i], '=');
        FUZZ_CHECK(eq && eq != job[i], "job variable '%s' is not NAME=value", job[i]);
        size_t nl = (size_t)(eq - job[i]);
        const struct fr_env_entry *e = NULL;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(nl < 255 ? nl : 255), job[i]);
        e = nl < 255 ? fr_env_find(&ex, name) : NULL;
        bool fitrun_set = e && (e->action == FR_ENV_SET || e->action == FR_ENV_FORCED);
        if (fitrun_set) {
            /* fitrun's value, once: no copy of the caller's shadows it. */
            FUZZ_CHECK(!strcmp(eq + 1, e->value), "%s=%s in a job, fitrun set '%s'", name, eq + 1, e->value);
            for (size_t k = 0; job[k]; k++)
                FUZZ_CHECK(k == i || strncmp(job[k], job[i], nl + 1), "%s twice in a job's environment", name);
        } else if (strcmp(job[i], "HOME=/nonexistent")) {
            /* From the caller's environment only what the scrub keeps. */
            FUZZ_CHECK(fr_env_job_keeps(&ex, job[i], nl, NULL) != FR_ENV_KEEP_NONE, "'%s' passed the scrub", job[i]);
        }
    }
    fr_envp_free(job);
    fr_env_free(&ex);
}

static void check_plans(const struct fr_resources *r, char *const *envp)
{
    static const enum fr_rounding rounding[] = {FR_ROUND_FLOOR, FR_ROUND_CEIL, FR_ROUND_NEAREST};
    for (size_t i = 0; i < 3; i++) {
        struct fr_plan_opts o = {
            .rounding = rounding[i], .memory_per_worker = i == 0 ? 512ull << 20 : 0, .job_threads_max = i == 2 ? 1 : 0};
        struct fr_plan plan;
        fr_plan_make(r, &o, &plan);
        FUZZ_CHECK(plan.workers >= 1 && plan.workers <= 1000000, "%d workers", plan.workers);
        FUZZ_CHECK(plan.threads_per_worker >= 1 && plan.threads_per_job >= 1 &&
                       plan.threads_per_job <= plan.threads_per_worker,
                   "%d threads per worker, %d per job", plan.threads_per_worker, plan.threads_per_job);
        FUZZ_CHECK(plan.nreasons >= 0 && plan.nreasons <= FR_REASONS_MAX, "%d reasons", plan.nreasons);
        char summary[512];
        fr_plan_summary(r, &plan, summary, sizeof summary);
        if (i == 0)
            check_job_env(r, &plan, envp);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256 * 1024)
        return 0;
    char *envp[MAX_VARS + 1];
    char *envbuf = malloc(size + MAX_RECORDS + 1);
    struct fr_resources *r = malloc(sizeof *r);
    if (!envbuf || !r)
        abort();
    if (mkdir(root, 0700) < 0 && errno != EEXIST) {
        perror(root);
        abort();
    }
    build_tree((const char *)data, size, envp, envbuf);
    struct fr_detect_opts opts = {.sysroot = root, .envp = envp};
    fr_env_fitrun_cpus(envp, &opts); /* FITRUN_CPUS: the user's or an outer fitrun's, as the commands tell it */
    memset(r, 0x5a, sizeof *r);      /* fr_detect must set every field */
    fr_detect(&opts, r);
    check_resources(r);
    check_plans(r, envp);
    remove_tree();
    free(r);
    free(envbuf);
    return 0;
}
