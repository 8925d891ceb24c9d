/* test_detect_fixtures.c — every tree under tests/fixtures/ against its
 * expected.json, field by field, through the library (not the CLI), so that
 * ASan/UBSan see every fallback path. Every key of expected.json must be
 * compared: a key added to the JSON without a check here fails the test.
 * (tests/cli/detect_fixtures.bats compares the CLI's JSON output as a whole.)
 *
 * Each fixture's environment is its `env` file and nothing else; the plan
 * options come from the built-in profile, as in `fitrun detect`. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "fitrun/detect.h"
#include "fitrun/envexport.h"
#include "fitrun/plan.h"
#include "fitrun/profile.h"
#include "fitrun/common.h"

#define FIXTURES FITRUN_SRC "/tests/fixtures"
#define MAX_FIXTURES 64

/* ---- comparing one JSON object, counting the keys checked ---- */

struct obj {
    const char *fixture, *name;
    json_t *j;
    size_t checked;
};

static json_t *get(struct obj *o, const char *key)
{
    json_t *v = json_object_get(o->j, key);
    if (!v)
        fail_msg("%s: expected.json has no %s.%s", o->fixture, o->name, key);
    o->checked++;
    return v;
}

static void num(struct obj *o, const char *key, bool known, double got)
{
    json_t *v = get(o, key);
    if (!known) {
        if (!json_is_null(v))
            fail_msg("%s: %s.%s: got null, want %g", o->fixture, o->name, key, json_number_value(v));
        return;
    }
    if (!json_is_number(v))
        fail_msg("%s: %s.%s: got %g, want null", o->fixture, o->name, key, got);
    double want = json_number_value(v);
    if (fabs(got - want) > 1e-9 * (fabs(want) > 1 ? fabs(want) : 1))
        fail_msg("%s: %s.%s: got %.17g, want %.17g", o->fixture, o->name, key, got, want);
}

static void str(struct obj *o, const char *key, bool known, const char *got)
{
    json_t *v = get(o, key);
    if (!known) {
        if (!json_is_null(v))
            fail_msg("%s: %s.%s: got null, want '%s'", o->fixture, o->name, key, json_string_value(v));
        return;
    }
    if (!json_is_string(v))
        fail_msg("%s: %s.%s: got '%s', want null", o->fixture, o->name, key, got);
    if (strcmp(got, json_string_value(v)))
        fail_msg("%s: %s.%s: got '%s', want '%s'", o->fixture, o->name, key, got, json_string_value(v));
}

static void boolean(struct obj *o, const char *key, bool got)
{
    json_t *v = get(o, key);
    if (!json_is_boolean(v) || json_is_true(v) != got)
        fail_msg("%s: %s.%s: got %s", o->fixture, o->name, key, got ? "true" : "false");
}

static void value(struct obj *o, const char *key, const struct fr_value *v)
{
    char skey[64];
    num(o, key, v->known, v->value);
    snprintf(skey, sizeof skey, "%s_source", key);
    str(o, skey, v->known, v->source);
}

static void strings(struct obj *o, const char *key, int n, const char *(*item)(const void *, int), const void *ctx)
{
    json_t *a = get(o, key);
    if (!json_is_array(a))
        fail_msg("%s: %s.%s is not an array", o->fixture, o->name, key);
    for (int i = 0; i < n || (size_t)i < json_array_size(a); i++) {
        const char *want = (size_t)i < json_array_size(a) ? json_string_value(json_array_get(a, i)) : "(nothing)";
        const char *got = i < n ? item(ctx, i) : "(nothing)";
        if (!want || strcmp(want, got))
            fail_msg("%s: %s.%s[%d]: got '%s', want '%s'", o->fixture, o->name, key, i, got,
                     want ? want : "(not a string)");
    }
}

static struct obj sub(struct obj *parent, const char *key)
{
    struct obj o = {parent->fixture, key, get(parent, key), 0};
    if (!json_is_object(o.j))
        fail_msg("%s: %s is not an object", parent->fixture, key);
    return o;
}

static void all_checked(struct obj *o)
{
    if (o->checked != json_object_size(o->j))
        fail_msg("%s: %s has %zu keys, the test compared %zu: compare the new ones", o->fixture, o->name,
                 json_object_size(o->j), o->checked);
}

/* ---- the sections ---- */

static void check_cgroup(struct obj *root, const struct fr_resources *r)
{
    static const char *names[FR_CTL_COUNT] = {"cpu", "cpuset", "memory", "pids"};
    struct obj o = sub(root, "cgroup");
    num(&o, "version", true, r->cgroup_version);
    boolean(&o, "hybrid", r->cgroup_hybrid);
    struct obj c = sub(&o, "controllers");
    for (int i = 0; i < FR_CTL_COUNT; i++) {
        json_t *v = json_object_get(c.j, names[i]);
        if (!r->cgroup[i].version) {
            if (!v || !json_is_null(v))
                fail_msg("%s: cgroup.controllers.%s: got null", o.fixture, names[i]);
            c.checked++;
            continue;
        }
        struct obj l = sub(&c, names[i]);
        num(&l, "version", true, r->cgroup[i].version);
        str(&l, "mount", true, r->cgroup[i].mount);
        str(&l, "path", true, r->cgroup[i].dir);
        all_checked(&l);
    }
    all_checked(&c);
    /* May fitrun make cgroups of its own: the probe's answer
     * (fitrun/cgroup.h), which reads live files and is never asked about a
     * fixture tree: not delegated, with a reason. */
    boolean(&o, "delegated", false);
    json_t *why = get(&o, "delegated_reason"); /* json_is_string evaluates its argument twice */
    if (!json_is_string(why))
        fail_msg("%s: cgroup.delegated_reason is not a string", o.fixture);
    all_checked(&o);
}

static void check_cpu(struct obj *root, const struct fr_resources *r)
{
    struct obj o = sub(root, "cpu");
    num(&o, "online", true, r->cpu_online);
    num(&o, "affinity", true, r->cpu_affinity);
    str(&o, "affinity_source", true, r->cpu_affinity_source);
    str(&o, "affinity_list", r->cpu_affinity_list[0] != '\0', r->cpu_affinity_list);
    value(&o, "cpuset", &r->cpu_cpuset);
    str(&o, "cpuset_list", r->cpu_cpuset.known, r->cpu_cpuset_list);
    value(&o, "quota", &r->cpu_quota);
    value(&o, "scheduler", &r->cpu_scheduler);
    value(&o, "outer", &r->cpu_outer);
    value(&o, "override", &r->cpu_override);
    value(&o, "shares", &r->cpu_shares);
    num(&o, "detected", true, r->cpu_detected);
    num(&o, "effective", true, r->cpu_effective);
    all_checked(&o);
}

static void check_memory(struct obj *root, const struct fr_resources *r)
{
    struct obj o = sub(root, "memory");
    num(&o, "total", true, (double)r->mem_total);
    value(&o, "limit", &r->mem_limit);
    value(&o, "high", &r->mem_high);
    value(&o, "scheduler", &r->mem_scheduler);
    all_checked(&o);
    struct obj p = sub(root, "pids");
    value(&p, "limit", &r->pids_limit);
    value(&p, "current", &r->pids_current);
    value(&p, "available", &r->pids_available);
    all_checked(&p);
    struct obj s = sub(root, "shm");
    str(&s, "path", true, "/dev/shm");
    value(&s, "size", &r->shm_size);
    num(&s, "free", r->shm_free.known, r->shm_free.value);
    all_checked(&s);
}

static const char *reason_at(const void *ctx, int i)
{
    return ((const struct fr_plan *)ctx)->reasons[i];
}

static const char *note_at(const void *ctx, int i)
{
    return ((const struct fr_resources *)ctx)->notes[i];
}

/* `fitrun detect` without --profile plans with the built-in profile, like
 * `fitrun run` and the wrapper: 512M per worker, no workers override. */
static void check_profile(struct obj *root)
{
    struct obj o = sub(root, "profile");
    str(&o, "path", false, NULL);
    str(&o, "runtime", true, "exec");
    all_checked(&o);
}

static void check_plan(struct obj *root, const struct fr_plan *p, const struct fr_plan_opts *po)
{
    struct obj o = sub(root, "plan");
    num(&o, "workers", true, p->workers);
    num(&o, "threads_per_worker", true, p->threads_per_worker);
    num(&o, "threads_per_job", true, p->threads_per_job);
    str(&o, "rounding", true, fr_rounding_name(p->rounding));
    assert_true(po->memory_per_worker == 512ull << 20);
    num(&o, "memory_per_worker", true, (double)po->memory_per_worker);
    num(&o, "workers_override", false, 0);
    strings(&o, "reasons", p->nreasons, reason_at, p);
    all_checked(&o);
}

static const char *name_at(const void *ctx, int i)
{
    return ((char *const *)ctx)[i];
}

static int count_names(char *const *names)
{
    int n = 0;
    while (names && names[n])
        n++;
    return n;
}

/* What `fitrun run` jobs would see: the library's own view of the same
 * environment (the fixture's `env`), as run builds it. */
static void check_env(struct obj *root, const struct fr_profile *prof, const struct fr_resources *r,
                      const struct fr_plan *plan, char **envp)
{
    struct obj o = sub(root, "env");
    struct fr_env_export *ex = calloc(1, sizeof *ex);
    assert_non_null(ex);
    assert_int_equal(fr_profile_job_env(prof, r, plan, envp, ex), 0);
    char *const *allowed = (char *const *)fr_env_job_allowed();
    strings(&o, "allowed", count_names(allowed), name_at, allowed);
    strings(&o, "pass_env", 0, name_at, NULL);
    strings(&o, "forced", 0, name_at, NULL);
    struct obj t = sub(&o, "threads");
    const struct fr_env_entry *omp = fr_env_find(ex, "OMP_NUM_THREADS");
    assert_non_null(omp);
    num(&t, "planned", true, plan->threads_per_job);
    str(&t, "OMP_NUM_THREADS", true, omp->value);
    str(&t, "action", true, fr_env_action_name(omp->action));
    all_checked(&t);
    char **scrubbed = fr_env_scrubbed(ex, envp, prof->pass_env);
    assert_non_null(scrubbed);
    strings(&o, "scrubbed", count_names(scrubbed), name_at, scrubbed);
    all_checked(&o);
    fr_envp_free(scrubbed);
    fr_env_free(ex);
    free(ex);
}

/* ---- one fixture ---- */

/* The fixture's `env` file as a NULL-terminated array (empty when absent). */
static char **load_env(const char *dir, char **text)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/env", dir);
    *text = fr_read_file(path, 1 << 16, NULL);
    char **envp = calloc(64, sizeof *envp);
    assert_non_null(envp);
    int n = 0;
    for (char *save = NULL, *line = *text ? strtok_r(*text, "\n", &save) : NULL; line && n < 63;
         line = strtok_r(NULL, "\n", &save))
        envp[n++] = line;
    return envp;
}

static void test_fixture(void **state)
{
    const char *name = *state;
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s", FIXTURES, name);
    snprintf(path, sizeof path, "%s/expected.json", dir);
    json_error_t err;
    json_t *expected = json_load_file(path, 0, &err);
    if (!expected)
        fail_msg("%s:%d: %s", path, err.line, err.text);

    char *envtext;
    char **envp = load_env(dir, &envtext);
    struct fr_profile *prof = malloc(sizeof *prof);
    assert_non_null(prof);
    fr_profile_defaults(prof);
    struct fr_detect_opts opts;
    fr_profile_detect_opts(prof, envp, &opts);
    opts.sysroot = dir;
    struct fr_resources *r = malloc(sizeof *r);
    struct fr_plan *plan = malloc(sizeof *plan);
    assert_non_null(r);
    assert_non_null(plan);
    assert_int_equal(fr_detect(&opts, r), 0);
    struct fr_plan_opts popts;
    fr_profile_plan_opts(prof, &popts);
    fr_plan_make(r, &popts, plan);

    struct obj root = {name, "(root)", expected, 0};
    check_cgroup(&root, r);
    check_cpu(&root, r);
    check_memory(&root, r);
    check_profile(&root);
    check_plan(&root, plan, &popts);
    check_env(&root, prof, r, plan, envp);
    strings(&root, "notes", r->nnotes, note_at, r);
    all_checked(&root);

    json_decref(expected);
    fr_profile_free(prof);
    free(prof);
    free(r);
    free(plan);
    free(envp);
    free(envtext);
}

/* The fixtures of the container and batch shapes fitrun must read right
 * must exist (the directory scan below would silently run fewer
 * otherwise). */
static void test_required_fixtures_exist(void **state)
{
    (void)state;
    static const char *required[] = {
        "v1-host",       "hybrid-host",   "v2-host",      "docker-v1-cpus-1.5", "docker-v2-cgroupns-cpus-0.5",
        "k8s-nested-v2", "systemd-slice", "slurm-cpuset", "htcondor",           "escaped-paths",
        "missing",       "garbage",       "host-256",
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/expected.json", FIXTURES, required[i]);
        if (stat(path, &st) < 0)
            fail_msg("missing fixture %s", path);
    }
}

/* Overrides through the library, on a fixture with a 0.5 CPU quota:
 * --cpus > the user's FITRUN_CPUS > the profile's cpus; the winner sets
 * the effective CPUs even above the detected ones (noted); an outer
 * fitrun's FITRUN_CPUS is a bound, not an override. */
static bool has_note(const struct fr_resources *r, const char *needle)
{
    for (int i = 0; i < r->nnotes; i++)
        if (strstr(r->notes[i], needle))
            return true;
    return false;
}

static void test_overrides(void **state)
{
    (void)state;
    struct fr_resources *r = malloc(sizeof *r);
    assert_non_null(r);
    char *none[] = {NULL};
    struct fr_detect_opts o = {.sysroot = FIXTURES "/docker-v2-cgroupns-cpus-0.5", .envp = none};

    o.cpus_profile = 2;
    o.cpus_profile_source = "profile p.ini:2";
    fr_detect(&o, r);
    assert_true(r->cpu_detected == 0.5 && r->cpu_effective == 2);
    assert_string_equal(r->cpu_override.source, "profile p.ini:2");
    assert_true(has_note(r, "cpus = 2 (profile p.ini:2) exceeds the 0.5 CPUs detected (quota); using 2 as asked"));

    o.cpus_env = "3"; /* the user's FITRUN_CPUS */
    fr_detect(&o, r);
    assert_true(r->cpu_effective == 3);
    assert_string_equal(r->cpu_override.source, "FITRUN_CPUS=3");
    assert_true(has_note(r, "cpus = 2 (profile p.ini:2) ignored: FITRUN_CPUS=3 given"));

    o.cpus_override = 0.25;
    fr_detect(&o, r);
    assert_true(r->cpu_effective == 0.25 && r->cpu_detected == 0.5);
    assert_string_equal(r->cpu_override.source, "--cpus");
    assert_true(has_note(r, "FITRUN_CPUS=3 ignored: --cpus given"));
    assert_false(has_note(r, "exceeds"));

    o.cpus_override = 0;
    o.cpus_profile = 0;
    o.cpus_env = NULL;
    o.cpus_outer = "0.25"; /* an outer fitrun's FITRUN_CPUS */
    fr_detect(&o, r);
    assert_false(r->cpu_override.known);
    assert_true(r->cpu_outer.known && r->cpu_outer.value == 0.25);
    assert_true(r->cpu_detected == 0.25 && r->cpu_effective == 0.25);
    assert_true(has_note(r, "FITRUN_CPUS=0.25 was exported by an outer fitrun: detecting again"));

    /* FITRUN_CPUS takes the CPU-count rule of --cpus and cpus: 1e300 is
     * no override (it made 1e300 effective CPUs, and the plan converted
     * 1e300 / workers to an int: undefined behaviour). */
    o.cpus_outer = NULL;
    o.cpus_env = "1e300";
    fr_detect(&o, r);
    assert_false(r->cpu_override.known);
    assert_true(r->cpu_effective == 0.5);
    assert_true(has_note(r, "FITRUN_CPUS='1e300' is not a number of CPUs (above 0, at most 8192): ignored"));
    o.cpus_env = "8192";
    fr_detect(&o, r);
    assert_true(r->cpu_override.known && r->cpu_effective == 8192);
    free(r);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    static char *names[MAX_FIXTURES];
    static struct CMUnitTest tests[MAX_FIXTURES + 2];
    int n = 0;
    DIR *d = opendir(FIXTURES);
    if (!d) {
        perror(FIXTURES);
        return 1;
    }
    for (struct dirent *e; (e = readdir(d)) && n < MAX_FIXTURES;) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/expected.json", FIXTURES, e->d_name);
        if (e->d_name[0] != '.' && stat(path, &st) == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    tests[0] = (struct CMUnitTest){"required fixtures exist", test_required_fixtures_exist, NULL, NULL, NULL};
    tests[1] = (struct CMUnitTest){"overrides", test_overrides, NULL, NULL, NULL};
    for (int i = 0; i < n; i++)
        tests[i + 2] = (struct CMUnitTest){names[i], test_fixture, NULL, NULL, names[i]};
    int rc = _cmocka_run_group_tests("detect_fixtures", tests, (size_t)n + 2, NULL, NULL);
    for (int i = 0; i < n; i++)
        free(names[i]);
    return rc;
}
