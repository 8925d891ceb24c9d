/* fitrun/profile.h — INI profiles (inih). One struct holds every setting a
 * run needs; defaults come from fr_profile_defaults(), a file overrides
 * them, command-line options override the file.
 *
 * Errors name the file and line: "my.ini:3: unknown key 'cpu_tme' in
 * [sandbox]". */
#ifndef FITRUN_PROFILE_H
#define FITRUN_PROFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitrun/plan.h"
#include "fitrun/sandbox.h"

#define FR_PROFILE_MAX_ENV 64
#define FR_PROFILE_MAX_WORKERS 4096 /* profile workers, --workers of run and detect */
#define FR_PROFILE_MAX_NAMES 64
#define FR_PROFILE_MAX_KEYS 64 /* keys whose line is kept (more than there are) */

enum fr_runtime_kind { FR_RUNTIME_EXEC = 0, FR_RUNTIME_PYTHON };

/* [resources] cgroups: whether fitrun makes cgroups of its own for its
 * jobs (fitrun/cgroup.h, docs/cgroups.md). auto: where its cgroup is
 * delegated; require: a run that cannot have them stops with 125; off:
 * never. */
enum fr_cgroup_mode { FR_CGROUPS_AUTO = 0, FR_CGROUPS_REQUIRE, FR_CGROUPS_OFF };

/* Whose identity a job runs under ([sandbox] user). */
enum fr_user_mode { FR_USER_SLOT = 0, FR_USER_ROOT };

struct fr_profile {
    char path[PATH_MAX]; /* "" when no file was given */

    /* [resources] */
    double cpus;                /* 0 = auto */
    int workers;                /* 0 = auto */
    uint64_t memory_per_worker; /* bytes, 0 = not configured */
    enum fr_rounding rounding;
    enum fr_cgroup_mode cgroups;

    /* [sandbox] */
    enum fr_preset preset;
    uint64_t cpu_time_ms;
    uint64_t wall_time_ms;
    uint64_t memory; /* bytes, per job (its cgroup's memory.max, else RLIMIT_AS per process) */
    uint64_t output; /* bytes, cap on stdout and on stderr each */
    uint64_t processes;
    uint64_t fsize;                        /* bytes, RLIMIT_FSIZE; 0 = inherited */
    uint64_t nofile;                       /* RLIMIT_NOFILE; 0 = inherited */
    uint64_t stack;                        /* bytes, RLIMIT_STACK; 0 = inherited */
    char *allow[FR_PROFILE_MAX_NAMES + 1]; /* NULL-terminated, owned */
    char *deny[FR_PROFILE_MAX_NAMES + 1];
    char *keep_caps[FR_PROFILE_MAX_NAMES + 1];
    bool spec_allow;

    /* [sandbox], least privilege. Path lists are absolute paths, owned,
     * NULL-terminated; pass_env holds NAME or PREFIX* patterns. */
    char *read_paths[FR_PROFILE_MAX_NAMES + 1];  /* readable beyond the runtime's own set (Landlock) */
    char *write_paths[FR_PROFILE_MAX_NAMES + 1]; /* writable (Landlock); none by default */
    bool require_landlock;                       /* no Landlock = fatal (125) instead of a note */
    enum fr_user_mode user;                      /* slot: under root, each slot its own uid; root: keep fitrun's */
    uint32_t uid_base;                           /* slot k runs as uid/gid uid_base + k */
    char *pass_env[FR_PROFILE_MAX_NAMES + 1];    /* caller variables let through the scrub */
    uint64_t result;                             /* bytes: cap on one prediction's encoded outputs */
    bool preset_set;                             /* preset given explicitly; else it follows [runtime] kind */

    /* [runtime] */
    enum fr_runtime_kind kind;
    char interpreter[PATH_MAX]; /* python: default /usr/bin/python3 */
    char prelude[PATH_MAX];     /* python: resolved relative to the profile */
    char entry[128];            /* python: default "transform" */
    bool reuse;                 /* python: isolation = reuse (one process runs consecutive predictions) */
    uint64_t max_predictions;   /* python, reuse: predictions per process before it is replaced */
    uint64_t max_memory;        /* python, reuse: resident bytes beyond which a process is replaced;
                                   0 = the default (fr_profile_max_memory) */

    /* [env]: exported to every job; forces over the user's environment */
    int nenv;
    char *env_name[FR_PROFILE_MAX_ENV];
    char *env_value[FR_PROFILE_MAX_ENV];

    /* Where [resources] cpus came from, so that it is
     * reported as such and ranked right (fitrun/detect.h: --cpus beats
     * FITRUN_CPUS, which beats a profile's value). */
    bool cpus_cli;                   /* set by fr_profile_set() (--cpus, --set resources.cpus=N) */
    char cpus_origin[PATH_MAX + 32]; /* "profile my.ini:3" (file) or "--cpus"; "" = default (auto) */
    double cpus_file;                /* with cpus_cli: the file's cpus it replaced (0 = none) */
    char cpus_file_origin[PATH_MAX + 32];

    /* Where each key was last set, for messages about what the keys mean
     * together (checked once they are all known): its line in `path`, or
     * 0 when the command line set it. fr_profile_where says it. */
    struct fr_key_line {
        char tag[48]; /* "section.key" */
        int line;
    } lines[FR_PROFILE_MAX_KEYS];
    int nlines;
};

void fr_profile_defaults(struct fr_profile *p);
/* Load `path` over the current contents of *p. Returns 0, or -1 with
 * "path:line: message" in err. */
int fr_profile_load(struct fr_profile *p, const char *path, char *err, size_t errlen);
void fr_profile_free(struct fr_profile *p);

/* Every value is checked when it is read; durations take fr_parse_duration_ms
 * units ("2s", "500ms"), sizes fr_parse_size units ("512M"), and "none" (or
 * 0) means "no limit" for the limits that allow it. Lists (allow, deny,
 * keep_caps) are names separated by commas and/or spaces. See
 * profiles/README.md for every key. */

/* Pure: parse INI `text` over *p. `name` is used in messages ("name:line:")
 * and, when it contains a '/', relative prelude paths are resolved against
 * its directory. fr_profile_load() = read the file + make its path absolute
 * + this. Returns 0, or -1 with "name:line: message" in err; *p may then
 * hold part of the file's values (callers exit). */
int fr_profile_parse(struct fr_profile *p, const char *text, const char *name, char *err, size_t errlen);

/* One setting, as from the command line ("--set sandbox.cpu_time=1s"):
 * section and key as in the file. Relative prelude paths stay relative to
 * the working directory. Returns 0, or -1 with a message (no location) in
 * err, e.g. "unknown key 'cpu_tme' in [sandbox]". */
int fr_profile_set(struct fr_profile *p, const char *section, const char *key, const char *value, char *err,
                   size_t errlen);

/* The sandbox request for one job under this profile, mapped from the
 * [sandbox] key table (fitrun/sandbox_keys.h, where it is implemented),
 * with the Landlock base set of the runtime kind. The spec's lists point
 * into *p (valid while p is). spec->slots is left 0: the caller sets it
 * to the number of workers it will run. */
void fr_profile_policy_spec(const struct fr_profile *p, struct fr_policy_spec *spec);

/* The one place where [resources] becomes detection and plan options, so
 * that `fitrun detect`, `fitrun run` and the wrapper (`fitrun -- CMD`)
 * size the same pool from the same profile.
 *
 * fr_profile_detect_opts: live detection (sysroot NULL; callers may set
 * one) over envp (NULL = environ), with FITRUN_CPUS told apart as the
 * user's or an outer fitrun's (fr_env_fitrun_cpus) and the profile's cpus
 * as the override it is: a command-line one (cpus_cli: --cpus of any
 * command, --set resources.cpus), which wins over FITRUN_CPUS, or a
 * file's, which FITRUN_CPUS beats. The sources point into *p and envp.
 * fr_profile_plan_opts: rounding, memory_per_worker, workers, and the
 * threads one job can run (fr_profile_job_threads). */
void fr_profile_detect_opts(const struct fr_profile *p, char *const *envp, struct fr_detect_opts *out);
void fr_profile_plan_opts(const struct fr_profile *p, struct fr_plan_opts *out);
/* Detect (live, or under `sysroot` when not NULL) and plan with the two
 * option sets above: the one path `fitrun detect`, `fitrun run` and the
 * wrapper all take, so they agree on the pool size. popts (optional)
 * receives the plan options used. */
void fr_profile_detect_plan(const struct fr_profile *p, const char *sysroot, struct fr_resources *res,
                            struct fr_plan *plan, struct fr_plan_opts *popts);

/* The export list of a `fitrun run` job under this profile (envexport.h):
 * the plan's threads per job, envp as the caller's environment, [env]
 * forced. fitrun run builds the job environment from it (with pass_env,
 * fr_env_build_job_envp), and detect and --explain report it. *ex must be
 * fr_env_free()d. Returns 0 or -1 (errno). */
struct fr_env_export;
int fr_profile_job_env(const struct fr_profile *p, const struct fr_resources *res, const struct fr_plan *plan,
                       char *const *envp, struct fr_env_export *ex);

/* How many threads one job can run under this profile's sandbox: 1 under
 * the python preset (it refuses clone/clone3) unless `allow` gives them
 * back and processes is not 1 (RLIMIT_NPROC counts threads); else 0 (no
 * cap from the profile: the exec preset and `processes` decide, see
 * docs/sandbox.md). *why (optional) says why when capped. */
int fr_profile_job_threads(const struct fr_profile *p, const char **why);

/* isolation = reuse keeps one process for consecutive predictions, so it
 * needs a sandbox that refuses new processes and threads: the python
 * preset without fork, vfork, clone or clone3 in allow. 0, or -1 with err. */
int fr_profile_reuse_check(const struct fr_profile *p, char *err, size_t errlen);

/* Where [section] key got its value, for messages: "FILE:LINE" (the
 * profile's line), "the command line" (--set, an option), or "FILE" /
 * "the built-in profile" (its default). */
void fr_profile_where(const struct fr_profile *p, const char *section, const char *key, char *buf, size_t n);

/* isolation = reuse: the resident size above which a process is replaced
 * after a prediction. [runtime] max_memory where set; else half of
 * [sandbox] memory (at least 1M), so that the next prediction finds about
 * half of its limit free however much the process kept (a fork child
 * finds all of it); 512M where memory is none. */
uint64_t fr_profile_max_memory(const struct fr_profile *p);

/* "exec" / "python"; parse returns 0 or -1. */
const char *fr_runtime_kind_name(enum fr_runtime_kind k);
int fr_runtime_kind_parse(const char *s, enum fr_runtime_kind *out);
const char *fr_cgroup_mode_name(enum fr_cgroup_mode m);
int fr_cgroup_mode_parse(const char *s, enum fr_cgroup_mode *out);

#endif
