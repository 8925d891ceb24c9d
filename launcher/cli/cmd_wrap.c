/* cmd_wrap.c — `fitrun [options] [--] CMD [ARGS...]`: the entrypoint and
 * wrapper. Detect, plan, compute the environment (envexport.c), then
 * either supervise CMD as init (PID 1, or --init) or replace fitrun with
 * it (plain wrapper, like env(1): zero supervision overhead, the shell
 * sees CMD itself). docs/entrypoint.md is the user-facing description. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/cli.h"
#include "fitrun/detect.h"
#include "fitrun/envexport.h"
#include "fitrun/init.h"
#include "fitrun/plan.h"
#include "fitrun/profile.h"
#include "fitrun/common.h"
#include "internal.h"

extern char **environ;

struct wrap_opts {
    bool init;
    bool explain;
    bool forward_to_group;
    bool grace_given;
    uint64_t grace_ms;
    uint64_t shm_threshold;     /* 0 = default */
    struct fr_cli_profile prof; /* --profile and --cpus (options.c) */
    char **cmd;
};

static void usage(FILE *f)
{
    fputs("usage: fitrun [OPTIONS] [--] CMD [ARGS...]\n"
          "Run CMD with thread counts that fit this container (OMP_NUM_THREADS, GOMAXPROCS, ...).\n"
          "As PID 1, or with --init, fitrun stays as CMD's init: it forwards signals, reaps\n"
          "zombies and cleans up CMD's process group; otherwise it replaces itself with CMD.\n"
          "\n"
          "  -s, --init              act as init when not PID 1 (child subreaper)\n"
          "  -g, --forward-to-group  forward signals to CMD's whole process group\n"
          "      --grace D           after CMD exits: SIGTERM its group, SIGKILL after D (default 5s)\n"
          "      --explain           print what would be exported and why on stdout, do not run CMD\n"
          "  -q, --quiet             no informational messages (warnings still print)\n"
          "      --cpus N            use N CPUs whatever was detected (beats FITRUN_CPUS and the profile)\n"
          "      --workers N         FITRUN_WORKERS = N whatever the plan says\n"
          "      --rounding R        CPUs -> threads and workers: floor (default), ceil or nearest\n"
          "      --memory-per-worker S  cap FITRUN_WORKERS at memory limit / S (default 512M; none)\n"
          "      --profile FILE      INI profile: [resources] apply, [env] values are forced\n"
          "      --shm-threshold S   /dev/shm smaller than S sends joblib to disk (default 2G)\n"
          "  -h, --help              this help\n"
          "Exit status: CMD's, or 128+N if killed by signal N; 125 fitrun error,\n"
          "126 CMD not executable, 127 CMD not found. See docs/entrypoint.md.\n",
          f);
}

enum { OPT_GRACE = 256, OPT_EXPLAIN, OPT_SHM };

/* Parse options; returns -1 to continue, or an exit status. */
static int parse(int argc, char **argv, struct wrap_opts *w)
{
    static const struct option longopts[] = {
        {"init", no_argument, NULL, 's'},
        {"forward-to-group", no_argument, NULL, 'g'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"grace", required_argument, NULL, OPT_GRACE},
        {"explain", no_argument, NULL, OPT_EXPLAIN},
        {"shm-threshold", required_argument, NULL, OPT_SHM},
        FR_CLI_PLAN_OPTS,
        {NULL, 0, NULL, 0},
    };
    memset(w, 0, sizeof *w);
    w->grace_ms = FR_INIT_GRACE_DEFAULT_MS;
    optind = 1;
    opterr = 0;
    int c, idx;
    const char *why = NULL;
    /* "+": stop at the first non-option, so `fitrun ls -l` runs `ls -l`. */
    while ((c = getopt_long(argc, argv, "+:sgqh", longopts, &idx)) != -1) {
        switch (c) {
        case 's': w->init = true; break;
        case 'g': w->forward_to_group = true; break;
        case 'q': fr_quiet = true; break;
        case 'h': usage(stdout); return 0;
        case OPT_EXPLAIN: w->explain = true; break;
        case FR_CLI_PROFILE_OPT:
            if (fr_cli_option(&w->prof, longopts[idx].name, optarg) < 0)
                return FR_EXIT_USAGE;
            break;
        case OPT_GRACE:
            if (fr_parse_duration_why(optarg, &w->grace_ms, &why) < 0) {
                fr_warn("--grace: invalid duration '%s': %s (examples: 5s, 500ms, 2m)", optarg, why);
                return FR_EXIT_USAGE;
            }
            w->grace_given = true;
            break;
        case OPT_SHM:
            if (fr_parse_size_why(optarg, &w->shm_threshold, &why) < 0 || w->shm_threshold == 0) {
                fr_warn("--shm-threshold: expected a positive size (examples: 2G, 512M), got '%s'%s%s", optarg,
                        why ? ": " : "", why ? why : "");
                return FR_EXIT_USAGE;
            }
            break;
        default: return fr_cli_getopt_error(NULL, c, argv);
        }
    }
    w->cmd = argv + optind;
    if (!w->cmd[0] && !w->explain) {
        fr_warn("no command given (usage: fitrun [OPTIONS] -- CMD [ARGS...]; try --help)");
        return FR_EXIT_USAGE;
    }
    return -1;
}

/* Detection, plan and export list. Returns 0 or an exit status. */
static int compute(const struct wrap_opts *w, const struct fr_profile *prof, struct fr_resources *res,
                   struct fr_plan *plan, struct fr_env_export *ex)
{
    /* The same detection and plan options as `fitrun run` and `fitrun
     * detect` (fr_profile_*_opts), so FITRUN_WORKERS is the pool size
     * they report. Without --profile, prof holds the built-in defaults. */
    fr_profile_detect_plan(prof, NULL, res, plan, NULL);

    char origin[PATH_MAX + 16];
    snprintf(origin, sizeof origin, "profile %s", prof->path[0] ? prof->path : "");
    struct fr_env_forced forced = {.n = prof->nenv, .name = prof->env_name, .value = prof->env_value, .origin = origin};
    struct fr_env_opts eopts = {.shm_threshold = w->shm_threshold, .uid = geteuid()};
    if (fr_env_compute(res, plan, 0, environ, &forced, &eopts, ex) < 0) {
        fr_warn("cannot compute the environment to export: %s", strerror(errno));
        return FR_EXIT_USAGE;
    }
    return 0;
}

static const char *mode_name(const struct wrap_opts *w)
{
    if (getpid() == 1)
        return "init (PID 1)";
    return w->init ? "init (child subreaper)" : "exec (fitrun replaces itself with CMD)";
}

/* What `fitrun run` jobs would see under the same profile: the wrapper
 * passes the whole environment (env(1) semantics), jobs get it scrubbed. */
static void explain_jobs(const struct fr_profile *prof, const struct fr_resources *res, const struct fr_plan *plan)
{
    static struct fr_env_export jobs; /* ~35 KiB: keep it off the stack */
    char buf[1024];
    printf("# fitrun run jobs with this profile: %d thread%s each (the plan's threads per job); their environment "
           "is scrubbed to %s",
           plan->threads_per_job, plan->threads_per_job == 1 ? "" : "s", fr_env_job_allowlist(buf, sizeof buf));
    for (char *const *p = prof->pass_env; *p; p++)
        printf("%s%s", p == prof->pass_env ? "; pass_env " : ", ", *p);
    printf("; [env] wins\n");
    if (fr_profile_job_env(prof, res, plan, environ, &jobs) < 0) {
        fr_env_free(&jobs);
        return;
    }
    char **gone = fr_env_scrubbed(&jobs, environ, prof->pass_env);
    printf("# scrubbed for fitrun run jobs:");
    for (char **g = gone; g && *g; g++)
        printf("%s %s", g == gone ? "" : ",", *g);
    printf("%s\n", gone && gone[0] ? "" : " nothing");
    fr_envp_free(gone);
    fr_env_free(&jobs);
}

static void explain(const struct wrap_opts *w, const struct fr_resources *res, const struct fr_plan *plan,
                    const struct fr_env_export *ex, const struct fr_profile *prof)
{
    char buf[1024];
    printf("# %s\n", fr_plan_summary(res, plan, buf, sizeof buf));
    for (int i = 0; i < plan->nreasons && i < FR_REASONS_MAX; i++)
        printf("# plan: %s\n", plan->reasons[i]);
    for (int i = 0; i < res->nnotes && i < FR_NOTES_MAX; i++)
        printf("# note: %s\n", res->notes[i]);
    printf("# mode: %s\n", mode_name(w));
    if (w->cmd[0]) {
        printf("# command:");
        for (char **a = w->cmd; *a; a++)
            printf(" %s", *a);
        printf("\n");
    }
    fr_env_print(ex, stdout);
    explain_jobs(prof, res, plan);
}

/* Names of the entries with `action`, comma-separated, into buf. */
static const char *names_with(const struct fr_env_export *ex, enum fr_env_action action, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < ex->n && k + 1 < n; i++)
        if (ex->e[i].action == action) {
            int r = snprintf(buf + k, n - k, "%s%s", k ? ", " : "", ex->e[i].name);
            k += r > 0 ? (size_t)r : 0;
        }
    return buf;
}

/* One line about what is exported, one about joblib: what an operator
 * wants to see in a container log. */
static void announce(const struct fr_env_export *ex)
{
    const struct fr_env_entry *cpus = fr_env_find(ex, "FITRUN_CPUS");
    const struct fr_env_entry *workers = fr_env_find(ex, "FITRUN_WORKERS");
    char kept[512], forced[512];
    names_with(ex, FR_ENV_KEPT, kept, sizeof kept);
    names_with(ex, FR_ENV_FORCED, forced, sizeof forced);
    fr_info("%s CPUs: %d threads, %s workers%s%s%s%s", cpus ? cpus->value : "?", ex->threads,
            workers ? workers->value : "?", kept[0] ? "; kept from the environment: " : "", kept,
            forced[0] ? "; forced by the profile: " : "", forced);
    const struct fr_env_entry *jb = fr_env_find(ex, "JOBLIB_TEMP_FOLDER");
    if (jb && jb->action == FR_ENV_SET)
        fr_info("JOBLIB_TEMP_FOLDER=%s: %s", jb->value, jb->reason);
}

static int run(const struct wrap_opts *w, bool supervise, const struct fr_sigstate *st, struct fr_env_export *ex)
{
    char err[1024];
    if (fr_env_make_dirs(ex, err, sizeof err) < 0)
        fr_warn("%s", err);
    announce(ex);
    char **envp = fr_env_build_envp(ex, environ);
    if (!envp) {
        fr_warn("cannot build the child's environment: out of memory");
        return FR_EXIT_USAGE;
    }
    int status;
    if (supervise) {
        struct fr_init_opts io = {
            .argv = w->cmd,
            .envp = envp,
            .subreaper = getpid() != 1,
            .forward_to_group = w->forward_to_group,
            .grace_ms = w->grace_ms,
        };
        status = fr_init_run(&io, st);
    } else {
        status = fr_exec_replace(w->cmd, envp);
    }
    fr_envp_free(envp);
    return status;
}

int fr_cmd_wrap(int argc, char **argv)
{
    static struct wrap_opts w; /* ~10 KiB: keep it off the stack */
    int rc = parse(argc, argv, &w);
    if (rc >= 0)
        return rc;
    const bool supervise = (getpid() == 1 || w.init) && !w.explain;
    if (!supervise && !w.explain && (w.grace_given || w.forward_to_group))
        fr_warn("%s has no effect without --init (fitrun replaces itself with CMD)",
                w.grace_given ? "--grace" : "--forward-to-group");

    /* Block signals before anything slow, so a SIGTERM during detection is
     * forwarded to CMD once it runs instead of being lost. */
    struct fr_sigstate st;
    memset(&st, 0, sizeof st);
    if (supervise && fr_signals_block(&st) < 0) {
        fr_warn("cannot block signals: %s", strerror(errno));
        return FR_EXIT_USAGE;
    }

    struct fr_profile prof;
    if (fr_cli_load_profile(&w.prof, &prof) < 0) {
        fr_profile_free(&prof);
        return FR_EXIT_USAGE;
    }

    struct fr_resources res;
    struct fr_plan plan;
    static struct fr_env_export ex; /* ~35 KiB: keep it off the stack */
    rc = compute(&w, &prof, &res, &plan, &ex);
    if (rc == 0) {
        if (w.explain) {
            explain(&w, &res, &plan, &ex, &prof);
            rc = fflush(stdout) == 0 ? 0 : FR_EXIT_USAGE;
        } else {
            rc = run(&w, supervise, &st, &ex);
        }
    }
    fr_env_free(&ex);
    fr_profile_free(&prof);
    return rc;
}
