/* fitrun/envexport.h — which environment variables a wrapped command (or a
 * pool job) gets, and why.
 *
 * fr_env_compute() is a pure function over (resources, plan, thread count,
 * the user's environment, the profile's forced [env] values, options): no
 * I/O, no getenv(), no mutation of the process environment. It returns one
 * entry per variable with the action taken and a human-readable reason, so
 * `fitrun --explain` can print exactly what the real run would do.
 *
 * Rules:
 *  - thread/CPU-count variables (OMP_NUM_THREADS ... PYTHON_CPU_COUNT) and
 *    FITRUN_CPUS / FITRUN_WORKERS / FITRUN_MEMORY_LIMIT are exported unless
 *    the variable is already present in envp — even with an empty value: an
 *    existing variable is the user's decision and is never overridden;
 *  - a profile's [env] entries are exported as given and win over envp and
 *    over fitrun's own values ("forced");
 *  - FITRUN_EXPORTED records "NAME=VALUE ..." for what fitrun set; a
 *    variable whose value is still the one recorded there came from an
 *    outer fitrun, not from the user, and is recomputed (`fitrun --
 *    fitrun run`: each job gets its worker's share, not the whole
 *    allocation the outer wrapper exported);
 *  - the /dev/shm rule: when /dev/shm is known to be smaller than
 *    opts->shm_threshold and JOBLIB_TEMP_FOLDER is not set, joblib's memmap
 *    folder is pointed at a disk-backed per-user directory
 *    (<TMPDIR or /var/tmp>/fitrun-joblib-<uid>); the entry carries
 *    `make_dir`, and fr_env_make_dirs() creates it (the only step that
 *    touches the file system, kept out of the pure function).
 *
 * fr_env_build_envp() then produces a fresh envp array for execve();
 * `fitrun run` computes its jobs' list once with threads =
 * plan->threads_per_job and builds their envp with
 * fr_env_build_job_envp(), which also scrubs the caller's environment
 * (below). */
#ifndef FITRUN_ENVEXPORT_H
#define FITRUN_ENVEXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "fitrun/detect.h"
#include "fitrun/plan.h"

/* joblib only uses /dev/shm for memmapped arrays when it has more than
 * 2e9 bytes available; fitrun's default threshold is 2 GiB. */
#define FR_ENV_SHM_THRESHOLD_DEFAULT (2ull << 30)

#define FR_ENV_MAX 96 /* our 16 + up to FR_PROFILE_MAX_ENV forced */
#define FR_ENV_REASON_MAX 320

enum fr_env_action {
    FR_ENV_SET = 0, /* exported: fitrun's value */
    FR_ENV_KEPT,    /* already in the environment: left as the user set it */
    FR_ENV_FORCED,  /* profile [env]: exported, overrides the environment */
    FR_ENV_SKIPPED, /* not exported (nothing to say, e.g. no memory limit) */
};

struct fr_env_entry {
    char *name;  /* owned */
    char *value; /* owned; the value the child sees (user's for KEPT, "" for SKIPPED) */
    enum fr_env_action action;
    bool make_dir; /* value is a directory fr_env_make_dirs() must create */
    char reason[FR_ENV_REASON_MAX];
};

struct fr_env_export {
    int threads; /* the thread count fitrun computed (before KEPT/FORCED) */
    size_t n;
    struct fr_env_entry e[FR_ENV_MAX];
};

/* Values that win over everything (a profile's [env] section). Parallel
 * arrays so struct fr_profile's env_name/env_value can be passed as is. */
struct fr_env_forced {
    int n;
    char *const *name;
    char *const *value;
    const char *origin; /* for reasons: "profile my.ini"; NULL = "profile" */
};

struct fr_env_opts {
    uint64_t shm_threshold; /* bytes; 0 = FR_ENV_SHM_THRESHOLD_DEFAULT */
    uid_t uid;              /* names the per-user joblib directory */
};

/* Compute the export list into *out (which must be fr_env_free()d, even on
 * failure). threads > 0: the thread count for one pool job (fitrun run
 * passes plan->threads_per_job, which FITRUN_CPUS then also reports);
 * threads <= 0: plan->threads_whole — the wrapper case, where CMD owns the
 * whole allocation. The plan rounds and counts; this only exports. plan
 * is required; forced and opts may be NULL. Returns 0, or -1 (ENOMEM, or
 * EINVAL for no plan or a forced name that is empty or contains '='). */
int fr_env_compute(const struct fr_resources *res, const struct fr_plan *plan, int threads, char *const *envp,
                   const struct fr_env_forced *forced, const struct fr_env_opts *opts, struct fr_env_export *out);
void fr_env_free(struct fr_env_export *ex);

/* The entry for `name`, or NULL. */
const struct fr_env_entry *fr_env_find(const struct fr_env_export *ex, const char *name);

/* Was `name=value` exported by an outer fitrun, i.e. does envp's
 * FITRUN_EXPORTED ("NAME=VALUE NAME=VALUE ...") record `name` with exactly
 * `value`? A variable whose value is still the recorded one did not come
 * from the user. Pure; false when envp has no record (or name/value is
 * NULL). Detection uses it so that an outer fitrun's FITRUN_CPUS is not
 * taken for a user's override (fr_env_fitrun_cpus). */
bool fr_env_from_outer(char *const *envp, const char *name, const char *value);

/* FITRUN_CPUS of envp, told apart for detection (fitrun/detect.h): the
 * user's value into o->cpus_env, or one an outer fitrun exported (recorded
 * in FITRUN_EXPORTED) into o->cpus_outer; both NULL when envp has none.
 * The strings point into envp. */
void fr_env_fitrun_cpus(char *const *envp, struct fr_detect_opts *o);

/* Create the directories of entries marked make_dir (mode 0700; an
 * existing one must be a real directory owned by us and not accessible to
 * others). On failure the entry becomes SKIPPED with the reason, a message
 * naming the path goes to err, and -1 is returned; the other entries stay
 * valid, so callers may warn and continue. */
int fr_env_make_dirs(struct fr_env_export *ex, char *err, size_t errlen);

/* A new NULL-terminated envp: envp without the variables fitrun exports
 * (SET/FORCED), followed by "NAME=value" for each of them. Every string is
 * a copy; free with fr_envp_free(). Returns NULL on ENOMEM. This is the
 * wrapper's (`fitrun -- CMD`): like env(1), everything else passes. */
char **fr_env_build_envp(const struct fr_env_export *ex, char *const *envp);
void fr_envp_free(char **envp);

/* The environment of `fitrun run` jobs (both runtimes: the interpreter,
 * its workers and every prediction, or each exec command) is scrubbed: of
 * the caller's variables only these reach a job —
 *  - ALLOWED: PATH, LANG, LANGUAGE, LC_*, TZ and FITRUN_*;
 *  - FITRUN: fitrun's own variables, i.e. the thread variables
 *    (OMP_NUM_THREADS ...) and every name of the export list (a user's
 *    OMP_NUM_THREADS is kept, as for the wrapper);
 *  - PASSED: names matching the profile's pass_env (NAME or PREFIX*);
 * plus the export list's SET and FORCED values ([env] wins over all), and
 * HOME=/nonexistent when neither pass_env nor [env] gives HOME (glibc
 * would otherwise look the user up over nscd's socket). Nothing else: API
 * tokens, cloud credentials, the caller's HOME, PYTHONPATH, VIRTUAL_ENV and
 * LD_LIBRARY_PATH reach a job only through pass_env. */
enum fr_env_keep { FR_ENV_KEEP_NONE = 0, FR_ENV_KEEP_ALLOWED, FR_ENV_KEEP_FITRUN, FR_ENV_KEEP_PASSED };
/* Whether the caller's variable `name` (its first len bytes: an envp entry
 * "NAME=value" may be passed with len = the name's length) reaches a job.
 * ex may be NULL (only the fixed lists), pass_env NULL-terminated or NULL. */
enum fr_env_keep fr_env_job_keeps(const struct fr_env_export *ex, const char *name, size_t len, char *const *pass_env);
/* As fr_env_build_envp, with the scrub above applied to envp. */
char **fr_env_build_job_envp(const struct fr_env_export *ex, char *const *envp, char *const *pass_env);
/* The names in envp the scrub removes (each once), NULL-terminated, for
 * `fitrun detect` and `--explain`; free with fr_envp_free(). NULL on ENOMEM. */
char **fr_env_scrubbed(const struct fr_env_export *ex, char *const *envp, char *const *pass_env);
/* The fixed allow-list, as NAME / PREFIX* patterns (NULL-terminated), and
 * in words ("PATH, LANG, ..., the thread variables ...") into buf. */
const char *const *fr_env_job_allowed(void);
const char *fr_env_job_allowlist(char *buf, size_t n);

/* "set" / "kept" / "forced" / "skipped". */
const char *fr_env_action_name(enum fr_env_action a);

/* One line per entry: "<action> NAME=value  # reason" (`--explain`). */
void fr_env_print(const struct fr_env_export *ex, FILE *f);

#endif
