/* cmd_detect.c — `fitrun detect`: what may this process really use, and why.
 *
 *   fitrun detect [--json] [--sysroot DIR] [--profile FILE] [--cpus N]
 *                 [--rounding floor|ceil|nearest] [--memory-per-worker SIZE] [--workers N]
 *
 * Prints a table (each value with the file or variable it came from, then
 * the plan's reasons and the notes on what was ignored), or with --json one
 * object whose keys docs/detect.md describes. The report is built from
 * sections (cgroup, cpu, memory, pids, shm, profile, plan, sandbox, notes,
 * and python for a python profile).
 *
 * The plan is the one `fitrun run` and the wrapper make: the built-in
 * profile (profiles/default.ini) or --profile FILE, then the options above
 * over it, through the same fr_profile_detect_plan.
 * With a python profile the interpreter and prelude are started once, as
 * `fitrun run` starts them, and the start-up is reported. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/cgroup.h"
#include "fitrun/cli.h"
#include "fitrun/detect.h"
#include "fitrun/envexport.h"
#include "fitrun/plan.h"
#include "fitrun/profile.h"
#include "fitrun/runtime.h"
#include "fitrun/sandbox.h"
#include "fitrun/common.h"
#include "internal.h"

extern char **environ;

/* Options; --profile and the plan options are the profile's (options.c). */
struct detect_args {
    bool json;
    const char *sysroot;
    struct fr_cli_profile prof;
};

static void usage(FILE *f)
{
    fputs("usage: fitrun detect [--json] [--sysroot DIR] [--profile FILE] [--cpus N]\n"
          "                     [--rounding floor|ceil|nearest] [--memory-per-worker SIZE] [--workers N]\n"
          "What may this process really use (cgroup v1/v2 quota, cpuset, memory and pids\n"
          "limits, /dev/shm, batch-scheduler allocations), and how many workers fit: the\n"
          "plan `fitrun run` and `fitrun -- CMD` make with the same profile and options.\n"
          "  --json                  one JSON object (keys: docs/detect.md)\n"
          "  --sysroot DIR           read every file under DIR (fixture trees); no live syscalls\n"
          "  --profile FILE          INI profile: its [resources] apply (default: the built-in\n"
          "                          profiles/default.ini); a python runtime is started once\n"
          "                          and its start-up reported\n"
          "  --cpus N                use N CPUs whatever was detected (beats FITRUN_CPUS and\n"
          "                          the profile's cpus; above the detected count it is noted)\n"
          "  --rounding R            CPUs -> workers: floor (default), ceil or nearest\n"
          "  --memory-per-worker S   cap workers at memory limit / S (default 512M; none: no cap)\n"
          "  --workers N             use N workers whatever the plan says (reported)\n"
          "  -h, --help              this help\n"
          "Exit status: 0; 125 for a bad option, a bad profile (file:line) or a python\n"
          "runtime that cannot start (the report is still printed).\n",
          f);
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct detect_args *a)
{
    enum { O_JSON = 1, O_SYSROOT, O_HELP };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, O_JSON},
        {"sysroot", required_argument, NULL, O_SYSROOT},
        {"help", no_argument, NULL, O_HELP},
        FR_CLI_PLAN_OPTS,
        {NULL, 0, NULL, 0},
    };
    opterr = 0; /* our own messages, naming fitrun */
    optind = 0; /* full re-initialisation (GNU) */
    int c, idx;
    struct stat st;
    while ((c = getopt_long(argc, argv, "+:h", longopts, &idx)) != -1) {
        switch (c) {
        case O_JSON: a->json = true; break;
        case O_SYSROOT:
            errno = 0;
            if (stat(optarg, &st) < 0 || !S_ISDIR(st.st_mode)) {
                fr_warn("detect: --sysroot '%s': %s (see fitrun detect --help)", optarg,
                        errno ? strerror(errno) : "not a directory");
                return FR_EXIT_USAGE;
            }
            a->sysroot = optarg;
            break;
        case FR_CLI_PROFILE_OPT:
            if (fr_cli_option(&a->prof, longopts[idx].name, optarg) < 0)
                return FR_EXIT_USAGE;
            break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        default: return fr_cli_getopt_error("detect", c, argv);
        }
    }
    return fr_cli_no_operands("detect", argc, argv);
}

/* ---- JSON ---- */

static json_t *jnum(const struct fr_value *v)
{
    return v->known ? json_real(v->value) : json_null();
}

static json_t *jint(const struct fr_value *v)
{
    return v->known ? json_integer((json_int_t)v->value) : json_null();
}

static json_t *jsrc(const struct fr_value *v)
{
    return v->known ? json_string(v->source) : json_null();
}

static json_t *jstr_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

static json_t *json_cgroup(const struct fr_resources *r, const struct fr_cgroup_probe *cg)
{
    static const char *names[FR_CTL_COUNT] = {"cpu", "cpuset", "memory", "pids"};
    json_t *ctl = json_object();
    for (int i = 0; i < FR_CTL_COUNT; i++) {
        const struct fr_cgroup_loc *l = &r->cgroup[i];
        json_object_set_new(ctl, names[i],
                            l->version
                                ? json_pack("{s:i, s:s, s:s}", "version", l->version, "mount", l->mount, "path", l->dir)
                                : json_null());
    }
    return json_pack("{s:i, s:b, s:o, s:b, s:s}", "version", r->cgroup_version, "hybrid", r->cgroup_hybrid,
                     "controllers", ctl, "delegated", cg->delegated, "delegated_reason", cg->reason);
}

/* o[key] = the value (a number, or an integer when `integer`; null when
 * unknown) and o[key_source] = where it came from. */
static void set_value(json_t *o, const char *key, const struct fr_value *v, bool integer)
{
    char source[64];
    json_object_set_new(o, key, integer ? jint(v) : jnum(v));
    snprintf(source, sizeof source, "%s_source", key);
    json_object_set_new(o, source, jsrc(v));
}

static json_t *json_cpu(const struct fr_resources *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "online", json_integer(r->cpu_online));
    json_object_set_new(o, "affinity", json_integer(r->cpu_affinity));
    json_object_set_new(o, "affinity_source", json_string(r->cpu_affinity_source));
    json_object_set_new(o, "affinity_list", jstr_or_null(r->cpu_affinity_list));
    json_object_set_new(o, "cpuset", jint(&r->cpu_cpuset));
    json_object_set_new(o, "cpuset_list", r->cpu_cpuset.known ? json_string(r->cpu_cpuset_list) : json_null());
    json_object_set_new(o, "cpuset_source", jsrc(&r->cpu_cpuset));
    set_value(o, "quota", &r->cpu_quota, false);
    set_value(o, "scheduler", &r->cpu_scheduler, false);
    set_value(o, "outer", &r->cpu_outer, false);
    set_value(o, "override", &r->cpu_override, false);
    set_value(o, "shares", &r->cpu_shares, true);
    json_object_set_new(o, "detected", json_real(r->cpu_detected));
    json_object_set_new(o, "effective", json_real(r->cpu_effective));
    return o;
}

static json_t *json_memory(const struct fr_resources *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "total", json_integer((json_int_t)r->mem_total));
    set_value(o, "limit", &r->mem_limit, true);
    set_value(o, "high", &r->mem_high, true);
    set_value(o, "scheduler", &r->mem_scheduler, true);
    return o;
}

static json_t *json_pids(const struct fr_resources *r)
{
    json_t *o = json_object();
    set_value(o, "limit", &r->pids_limit, true);
    set_value(o, "current", &r->pids_current, true);
    set_value(o, "available", &r->pids_available, true);
    return o;
}

static json_t *json_shm(const struct fr_resources *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string("/dev/shm"));
    set_value(o, "size", &r->shm_size, true);
    json_object_set_new(o, "free", jint(&r->shm_free));
    return o;
}

static json_t *json_plan(const struct fr_plan *p, const struct fr_plan_opts *o)
{
    json_t *reasons = json_array();
    for (int i = 0; i < p->nreasons; i++)
        json_array_append_new(reasons, json_string(p->reasons[i]));
    json_t *j = json_object();
    json_object_set_new(j, "workers", json_integer(p->workers));
    json_object_set_new(j, "threads_per_worker", json_integer(p->threads_per_worker));
    json_object_set_new(j, "threads_per_job", json_integer(p->threads_per_job));
    json_object_set_new(j, "rounding", json_string(fr_rounding_name(p->rounding)));
    json_object_set_new(j, "memory_per_worker",
                        o->memory_per_worker ? json_integer((json_int_t)o->memory_per_worker) : json_null());
    json_object_set_new(j, "workers_override",
                        o->workers_override > 0 ? json_integer(o->workers_override) : json_null());
    json_object_set_new(j, "reasons", reasons);
    return j;
}

static json_t *json_profile(const struct fr_profile *prof)
{
    return json_pack("{s:o, s:s}", "path", jstr_or_null(prof->path), "runtime", fr_runtime_kind_name(prof->kind));
}

static json_t *json_names(char *const *names)
{
    json_t *a = json_array();
    for (char *const *n = names; n && *n; n++)
        json_array_append_new(a, json_string(*n));
    return a;
}

/* ---- sandbox: what a job of this profile gets on this machine ---- */

struct sandbox_report {
    bool built; /* false: the profile's [sandbox] does not build (error) */
    char error[1024];
    struct fr_policy_info in;
    bool memory_cgroup; /* [sandbox] memory is the job's cgroup's limit, not RLIMIT_AS */
};

/* Build the policy `fitrun run` would build (slots = the plan's workers,
 * RLIMIT_AS only where the jobs' cgroups will not limit memory). */
static void sandbox_probe(const struct fr_profile *prof, const struct fr_plan *plan, const struct fr_cgroup_probe *cg,
                          struct sandbox_report *sb)
{
    struct fr_policy_spec spec;
    struct fr_policy *pol = NULL;
    fr_profile_policy_spec(prof, &spec);
    fr_cgroup_policy_spec(cg->ctls, &spec);
    sb->memory_cgroup = (cg->ctls & FR_CG_MEMORY) != 0;
    spec.slots = plan->workers > 0 ? plan->workers : 1;
    sb->built = fr_policy_build(&spec, &pol, sb->error, sizeof sb->error) == 0;
    if (!sb->built)
        return;
    fr_policy_info(pol, &sb->in);
    fr_policy_free(pol);
}

static const char *fs_base_name(enum fr_fs_base fs)
{
    return fs == FR_FS_SYSTEM ? "system" : fs == FR_FS_LIBS ? "libs" : "off";
}

static json_t *json_sandbox(const struct sandbox_report *sb, const struct fr_profile *prof)
{
    if (!sb->built)
        return json_pack("{s:s}", "error", sb->error);
    const struct fr_policy_info *in = &sb->in;
    json_t *seccomp = json_pack("{s:s, s:i, s:b}", "mode", in->seccomp, "instructions", (int)in->filter_insns,
                                "spec_allow", in->spec_allow);
    json_t *ll = json_object();
    json_object_set_new(ll, "abi", json_integer(in->landlock_abi));
    json_object_set_new(ll, "enforced", json_boolean(in->landlock));
    json_object_set_new(ll, "why_not", in->landlock ? json_null() : json_string(in->landlock_why));
    json_object_set_new(ll, "required", json_boolean(prof->require_landlock));
    json_object_set_new(ll, "base", json_string(fs_base_name(in->fs)));
    json_object_set_new(ll, "read", json_names(prof->read_paths));
    json_object_set_new(ll, "write", json_names(prof->write_paths));
    json_object_set_new(ll, "rules", json_integer(in->nread + in->nwrite));
    json_object_set_new(ll, "write_opens", json_string(in->write_opens));
    json_object_set_new(ll, "scoped", json_boolean(in->scoped));
    json_t *id = json_object();
    json_object_set_new(id, "enforced", json_boolean(in->identity));
    json_object_set_new(id, "uid_first", in->identity ? json_integer(in->uid_first) : json_null());
    json_object_set_new(id, "uid_last", in->identity ? json_integer(in->uid_last) : json_null());
    if (!in->identity)
        json_object_set_new(id, "uid", json_integer((json_int_t)in->uid));
    json_object_set_new(id, "why_not", in->identity ? json_null() : json_string(in->identity_why));
    json_t *caps = json_object();
    json_object_set_new(caps, "kept", json_names(prof->keep_caps));
    json_object_set_new(caps, "bounding_set", json_string(in->bounding ? "dropped" : "unchanged"));
    json_t *mem = json_object();
    json_object_set_new(mem, "limit", prof->memory ? json_integer((json_int_t)prof->memory) : json_null());
    json_object_set_new(mem, "enforced_by",
                        !prof->memory ? json_null() : json_string(sb->memory_cgroup ? "cgroup" : "RLIMIT_AS"));
    json_t *o = json_object();
    json_object_set_new(o, "preset", json_string(fr_preset_name(in->preset)));
    json_object_set_new(o, "memory", mem);
    json_object_set_new(o, "seccomp", seccomp);
    json_object_set_new(o, "landlock", ll);
    json_object_set_new(o, "no_new_privs", json_true());
    json_object_set_new(o, "identity", id);
    json_object_set_new(o, "capabilities", caps);
    return o;
}

/* Everything one report needs. */
struct report {
    const struct fr_resources *res;
    const struct fr_plan *plan;
    const struct fr_plan_opts *popts;
    const struct fr_profile *prof;
    const char *sysroot;
    json_t *python;                       /* python profile: fr_python_probe()'s object, or {"error"}; else NULL */
    const struct fr_env_export *jobenv;   /* what a `fitrun run` job would get; NULL = out of memory */
    char **scrubbed;                      /* names of this environment a job would not see */
    const struct sandbox_report *sandbox; /* NULL with --sysroot (a fixture tree has no kernel to ask) */
    const struct fr_cgroup_probe *cgroup; /* may fitrun make cgroups of its own here */
};

/* ---- the job environment (what `fitrun run` jobs see) ---- */

static json_t *json_env(const struct report *rep)
{
    json_t *forced = json_array();
    for (int i = 0; i < rep->prof->nenv; i++)
        json_array_append_new(forced, json_string(rep->prof->env_name[i]));
    json_t *threads = json_object();
    const struct fr_env_entry *omp = rep->jobenv ? fr_env_find(rep->jobenv, "OMP_NUM_THREADS") : NULL;
    json_object_set_new(threads, "planned", json_integer(rep->plan->threads_per_job));
    json_object_set_new(threads, "OMP_NUM_THREADS", omp ? json_string(omp->value) : json_null());
    json_object_set_new(threads, "action", omp ? json_string(fr_env_action_name(omp->action)) : json_null());
    return json_pack("{s:o, s:o, s:o, s:o, s:o}", "allowed", json_names((char *const *)fr_env_job_allowed()),
                     "pass_env", json_names(rep->prof->pass_env), "forced", forced, "threads", threads, "scrubbed",
                     json_names(rep->scrubbed));
}

static int print_json(const struct report *rep)
{
    const struct fr_resources *r = rep->res;
    json_t *notes = json_array();
    for (int i = 0; i < r->nnotes; i++)
        json_array_append_new(notes, json_string(r->notes[i]));
    json_t *root = json_object();
    json_object_set_new(root, "cgroup", json_cgroup(r, rep->cgroup));
    json_object_set_new(root, "cpu", json_cpu(r));
    json_object_set_new(root, "memory", json_memory(r));
    json_object_set_new(root, "pids", json_pids(r));
    json_object_set_new(root, "shm", json_shm(r));
    json_object_set_new(root, "profile", json_profile(rep->prof));
    json_object_set_new(root, "plan", json_plan(rep->plan, rep->popts));
    json_object_set_new(root, "env", json_env(rep));
    json_object_set_new(root, "sandbox", rep->sandbox ? json_sandbox(rep->sandbox, rep->prof) : json_null());
    json_object_set_new(root, "notes", notes);
    if (rep->python)
        json_object_set(root, "python", rep->python);
    /* 15 digits: 0.1 prints as 0.1, not 0.10000000000000001. */
    int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    json_decref(root);
    if (rc < 0 || fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
        fr_warn("detect: cannot write the JSON report to stdout: %s", strerror(errno));
        return FR_EXIT_USAGE;
    }
    return 0;
}

/* ---- table ---- */

/* Values, sources, reasons and notes quote what detection read (cgroup
 * paths, garbage from a sysroot, environment values): printed through
 * fr_term_text, so a planted control sequence is shown, not acted on. */
static const char *shown(const char *s, char *buf, size_t n)
{
    return fr_term_text(s, strlen(s), buf, n);
}

static void row(const char *label, const char *value, const char *source)
{
    char v[4096], src[4096];
    if (source && source[0])
        printf("  %-11s %-28s %s\n", label, shown(value, v, sizeof v), shown(source, src, sizeof src));
    else
        printf("  %-11s %s\n", label, shown(value, v, sizeof v));
}

static void bullet(const char *text)
{
    char buf[4096];
    printf("  - %s\n", shown(text, buf, sizeof buf));
}

static void row_value(const char *label, const struct fr_value *v, bool bytes, const char *none)
{
    char buf[64];
    if (!v->known)
        snprintf(buf, sizeof buf, "%s", none);
    else if (bytes) {
        char h[32];
        snprintf(buf, sizeof buf, "%s (%.0f)", fr_format_size((uint64_t)v->value, h, sizeof h), v->value);
    } else
        snprintf(buf, sizeof buf, "%g", v->value);
    row(label, buf, v->known ? v->source : NULL);
}

static void print_cgroups(const struct fr_resources *r, const struct fr_cgroup_probe *cg)
{
    static const char *names[FR_CTL_COUNT] = {"cpu", "cpuset", "memory", "pids"};
    char buf[64];
    snprintf(buf, sizeof buf, "%s%s", r->cgroup_version ? (r->cgroup_version == 1 ? "v1" : "v2") : "none",
             r->cgroup_hybrid ? " (hybrid)" : "");
    printf("cgroup\n");
    row("version", buf, r->cgroup_hybrid ? "v1 controllers beside a controller-less cgroup2 mount" : NULL);
    for (int i = 0; i < FR_CTL_COUNT; i++) {
        const struct fr_cgroup_loc *l = &r->cgroup[i];
        char v[16];
        snprintf(v, sizeof v, "v%d", l->version);
        row(names[i], l->version ? v : "not found", l->version ? l->dir : NULL);
    }
    char line[FR_CG_REASON_MAX + 8];
    snprintf(line, sizeof line, "%s: %s", cg->delegated ? "yes" : "no", cg->reason);
    row("delegated", line, NULL);
}

static void print_cpu(const struct fr_resources *r)
{
    char buf[FR_SOURCE_MAX + 32];
    printf("CPU\n");
    snprintf(buf, sizeof buf, "%d", r->cpu_online);
    row("online", r->cpu_online ? buf : "unknown", r->cpu_online ? "/sys/devices/system/cpu/online" : NULL);
    if (r->cpu_affinity_list[0])
        snprintf(buf, sizeof buf, "%d [%.200s]", r->cpu_affinity, r->cpu_affinity_list);
    else
        snprintf(buf, sizeof buf, "%d", r->cpu_affinity);
    row("affinity", buf, r->cpu_affinity_source);
    if (r->cpu_cpuset.known) {
        snprintf(buf, sizeof buf, "%g [%.200s]", r->cpu_cpuset.value, r->cpu_cpuset_list);
        row("cpuset", buf, r->cpu_cpuset.source);
    } else
        row("cpuset", "none", NULL);
    row_value("quota", &r->cpu_quota, false, "none");
    row_value("scheduler", &r->cpu_scheduler, false, "none");
    if (r->cpu_outer.known)
        row_value("outer", &r->cpu_outer, false, "none");
    row_value("override", &r->cpu_override, false, "none");
    row_value("shares", &r->cpu_shares, false, "unknown");
    snprintf(buf, sizeof buf, "%g", r->cpu_effective);
    char how[64];
    if (r->cpu_override.known)
        snprintf(how, sizeof how, "override (detected %g)", r->cpu_detected);
    else
        snprintf(how, sizeof how, "min(affinity, quota, scheduler%s)", r->cpu_outer.known ? ", outer" : "");
    row("effective", buf, how);
}

static void print_memory(const struct fr_resources *r)
{
    struct fr_value total = {r->mem_total > 0, (double)r->mem_total, "/proc/meminfo"};
    printf("memory\n");
    row_value("total", &total, true, "unknown");
    row_value("limit", &r->mem_limit, true, "none");
    row_value("high", &r->mem_high, true, "none");
    row_value("scheduler", &r->mem_scheduler, true, "none");
    printf("pids\n");
    row_value("limit", &r->pids_limit, false, "none");
    row_value("current", &r->pids_current, false, "unknown");
    row_value("available", &r->pids_available, false, "unlimited");
    printf("/dev/shm\n");
    row_value("size", &r->shm_size, true, "unknown");
    row_value("free", &r->shm_free, true, "unknown");
}

static void print_profile(const struct fr_profile *prof)
{
    printf("profile\n");
    row("file", prof->path[0] ? prof->path : "built-in defaults (profiles/default.ini)", NULL);
    row("runtime", fr_runtime_kind_name(prof->kind), NULL);
}

/* "123 ms" for a number field of the probe's object, "?" when absent. */
static const char *ms(json_t *o, const char *key, char *buf, size_t n)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v))
        snprintf(buf, n, "%.0f ms", json_number_value(v));
    else
        snprintf(buf, n, "?");
    return buf;
}

static void print_python(json_t *py)
{
    char total[32], boot[32], prelude[32], self[32], line[160];
    const char *err = json_string_value(json_object_get(py, "error"));
    printf("python start-up\n");
    row("interpreter", json_string_value(json_object_get(py, "interpreter")), NULL);
    if (json_string_value(json_object_get(py, "prelude")))
        row("prelude", json_string_value(json_object_get(py, "prelude")), NULL);
    if (err) {
        row("error", err, NULL);
        return;
    }
    row("version",
        json_string_value(json_object_get(py, "python")) ? json_string_value(json_object_get(py, "python")) : "?",
        NULL);
    snprintf(line, sizeof line, "%s (interpreter %s, prelude %s, sandbox self-test %s)",
             ms(py, "total_ms", total, sizeof total), ms(py, "boot_ms", boot, sizeof boot),
             ms(py, "prelude_ms", prelude, sizeof prelude), ms(py, "selftest_ms", self, sizeof self));
    row("total", line, NULL);
    const char *warning = json_string_value(json_object_get(py, "warning"));
    if (warning)
        row("warning", warning, NULL);
}

/* Append a comma-separated list to line. */
static void append_names(char *line, size_t n, const char *lead, char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        size_t used = strlen(line);
        if (used + 1 >= n)
            return;
        snprintf(line + used, n - used, "%s%s", i ? ", " : lead, names[i]);
    }
}

static void print_sandbox(const struct sandbox_report *sb, const struct fr_profile *prof)
{
    char line[1024];
    printf("sandbox\n");
    if (!sb->built) {
        row("error", sb->error, NULL);
        return;
    }
    const struct fr_policy_info *in = &sb->in;
    row("preset", fr_preset_name(in->preset), NULL);
    char size[32];
    if (!prof->memory)
        snprintf(line, sizeof line, "no limit");
    else if (sb->memory_cgroup)
        snprintf(line, sizeof line, "%s per job: its cgroup's memory limit, no swap",
                 fr_format_size(prof->memory, size, sizeof size));
    else
        snprintf(line, sizeof line, "%s of address space per process (RLIMIT_AS: no memory cgroup of fitrun's own)",
                 fr_format_size(prof->memory, size, sizeof size));
    row("memory", line, NULL);
    if (strcmp(in->seccomp, "off"))
        snprintf(line, sizeof line, "notify, %u instructions: a supervisor names denied calls", in->filter_insns);
    else
        snprintf(line, sizeof line, "off (preset none without a deny list)");
    row("seccomp", line, NULL);
    if (in->landlock) {
        snprintf(line, sizeof line, "ABI %d: reads: the %s set", in->landlock_abi, fs_base_name(in->fs));
        append_names(line, sizeof line, " + ", prof->read_paths);
        snprintf(line + strlen(line), sizeof line - strlen(line), "; writes: %s", prof->write_paths[0] ? "" : "none");
        append_names(line, sizeof line, "", prof->write_paths);
        if (in->scoped)
            snprintf(line + strlen(line), sizeof line - strlen(line), "; signals stay in the job");
    } else {
        snprintf(line, sizeof line, "not enforced: %s", in->landlock_why);
    }
    row("landlock", line, NULL);
    row("privs", "no_new_privs: an exec gains nothing (setuid bits, file capabilities)", NULL);
    if (in->identity)
        snprintf(line, sizeof line, "uid/gid %u-%u, one per slot, no supplementary groups", in->uid_first,
                 in->uid_last);
    else
        snprintf(line, sizeof line, "unchanged (uid %u): %s", in->uid, in->identity_why);
    row("identity", line, NULL);
    snprintf(line, sizeof line, "%s", prof->keep_caps[0] ? "kept: " : "all dropped");
    append_names(line, sizeof line, "", prof->keep_caps);
    row("caps", line, in->bounding ? NULL : "bounding set unchanged (no CAP_SETPCAP); no_new_privs holds");
}

/* "A, B, C" (or `none`), cut to fit. */
static const char *joined(char *const *names, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (char *const *p = names; p && *p && k + 1 < n; p++) {
        int r = snprintf(buf + k, n - k, "%s%s", k ? ", " : "", *p);
        k += r > 0 ? (size_t)r : 0;
    }
    if (!buf[0])
        snprintf(buf, n, "none");
    return buf;
}

static void print_env(const struct report *rep)
{
    char buf[2048], line[2200];
    size_t nscrub = 0;
    for (char **p = rep->scrubbed; p && *p; p++)
        nscrub++;
    printf("job environment (fitrun run: the interpreter, workers and predictions, or each command)\n");
    row("allowed", fr_env_job_allowlist(buf, sizeof buf), NULL);
    row("pass_env", joined(rep->prof->pass_env, buf, sizeof buf), NULL);
    char *forced[FR_PROFILE_MAX_ENV + 1] = {0};
    for (int i = 0; i < rep->prof->nenv; i++)
        forced[i] = rep->prof->env_name[i];
    row("[env]", joined(forced, buf, sizeof buf), NULL);
    const struct fr_env_entry *omp = rep->jobenv ? fr_env_find(rep->jobenv, "OMP_NUM_THREADS") : NULL;
    if (omp) {
        snprintf(line, sizeof line, "OMP_NUM_THREADS=%s ... (%s; the plan: %d per job)", omp->value,
                 fr_env_action_name(omp->action), rep->plan->threads_per_job);
        row("threads", line, NULL);
    }
    snprintf(line, sizeof line, "%zu variable%s of this environment: %s", nscrub, nscrub == 1 ? "" : "s",
             joined(rep->scrubbed, buf, sizeof buf));
    row("scrubbed", nscrub ? line : "none", NULL);
}

static void print_table(const struct report *rep)
{
    const struct fr_resources *r = rep->res;
    const struct fr_plan *p = rep->plan;
    printf("fitrun detect%s%s\n", rep->sysroot ? " --sysroot " : "", rep->sysroot ? rep->sysroot : "");
    print_cgroups(r, rep->cgroup);
    print_cpu(r);
    print_memory(r);
    print_profile(rep->prof);
    if (rep->python)
        print_python(rep->python);
    printf("plan        %d worker%s x %d thread%s (rounding %s)", p->workers, p->workers == 1 ? "" : "s",
           p->threads_per_worker, p->threads_per_worker == 1 ? "" : "s", fr_rounding_name(p->rounding));
    if (p->threads_per_job != p->threads_per_worker)
        printf("; %d thread%s per job", p->threads_per_job, p->threads_per_job == 1 ? "" : "s");
    printf("\n");
    for (int i = 0; i < p->nreasons; i++)
        bullet(p->reasons[i]);
    print_env(rep);
    if (rep->sandbox)
        print_sandbox(rep->sandbox, rep->prof);
    if (r->nnotes) {
        printf("notes (what was ignored, and why)\n");
        for (int i = 0; i < r->nnotes; i++)
            bullet(r->notes[i]);
    }
    fflush(stdout);
}

/* A python profile: start its interpreter and prelude once (as `fitrun
 * run` does) and time it. Returns the object for the report (never NULL
 * unless out of memory); *failed when the runtime could not start. */
static json_t *probe_python(const struct fr_profile *prof, bool *failed)
{
    char exe[PATH_MAX], err[2048] = "";
    if (fr_self_exe(exe, sizeof exe) < 0)
        fr_warn("detect: cannot find the fitrun binary (/proc/self/exe): %s", strerror(errno));
    json_t *py = fr_python_probe(prof, exe, err, sizeof err);
    *failed = !py;
    if (!py) {
        fr_warn("detect: %s: the python runtime cannot start: %s", prof->path, err[0] ? err : "unknown error");
        py = json_pack("{s:s, s:s}", "interpreter", prof->interpreter, "error", err[0] ? err : "unknown error");
    } else {
        const char *warning = json_string_value(json_object_get(py, "warning"));
        if (warning)
            fr_warn("%s", warning);
    }
    if (py)
        json_object_set_new(py, "prelude", jstr_or_null(prof->prelude));
    return py;
}

int fr_cmd_detect(int argc, char **argv)
{
    static struct detect_args a; /* ~10 KiB: keep it off the stack */
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    /* ~20 KiB each: on the heap, like any caller on a small thread stack should. */
    struct fr_resources *res = malloc(sizeof *res);
    struct fr_plan *plan = malloc(sizeof *plan);
    struct fr_profile *prof = calloc(1, sizeof *prof);
    if (!res || !plan || !prof) {
        free(res);
        free(plan);
        free(prof);
        fr_warn("detect: out of memory");
        return FR_EXIT_USAGE;
    }
    struct fr_plan_opts popts;
    struct sandbox_report sb = {.built = false};
    struct fr_env_export *jobenv = calloc(1, sizeof *jobenv);
    struct fr_cgroup_probe *cg = calloc(1, sizeof *cg);
    struct report rep = {res, plan, &popts, prof, a.sysroot, NULL, NULL, NULL, NULL, cg};
    bool failed = false;
    if (!cg) {
        fr_warn("detect: out of memory");
        rc = FR_EXIT_USAGE;
        goto out;
    }
    if (fr_cli_load_profile(&a.prof, prof) < 0) {
        rc = FR_EXIT_USAGE;
        goto out;
    }
    fr_profile_detect_plan(prof, a.sysroot, res, plan, &popts); /* as `fitrun run` does */
    if (jobenv && fr_profile_job_env(prof, res, plan, environ, jobenv) == 0) {
        rep.jobenv = jobenv;
        rep.scrubbed = fr_env_scrubbed(jobenv, environ, prof->pass_env);
    }
    if (a.sysroot)
        snprintf(cg->reason, sizeof cg->reason, "not checked with --sysroot (files are read, never written)");
    else
        fr_cgroup_probe(res, prof->cgroups, cg);
    if (!a.sysroot) {
        sandbox_probe(prof, plan, cg, &sb);
        rep.sandbox = &sb;
        if (!sb.built) {
            fr_warn("detect: %s: [sandbox]: %s", prof->path[0] ? prof->path : "built-in profile", sb.error);
            failed = true;
        }
    }
    if (prof->kind == FR_RUNTIME_PYTHON)
        rep.python = probe_python(prof, &failed);
    if (a.json)
        rc = print_json(&rep);
    else {
        print_table(&rep);
        rc = 0;
    }
    if (failed)
        rc = FR_EXIT_USAGE;
out:
    json_decref(rep.python);
    fr_envp_free(rep.scrubbed);
    if (jobenv)
        fr_env_free(jobenv);
    free(jobenv);
    fr_profile_free(prof);
    free(res);
    free(plan);
    free(prof);
    free(cg);
    return rc;
}
