/* cmd_run.c — `fitrun run`: profile + command line -> plan, sandbox policy,
 * job environment, files -> the pool (launcher/pool/). docs/run.md is the
 * user's documentation. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/cgroup.h"
#include "fitrun/cli.h"
#include "fitrun/detect.h"
#include "fitrun/envexport.h"
#include "fitrun/plan.h"
#include "fitrun/pool.h"
#include "fitrun/profile.h"
#include "fitrun/sandbox.h"
#include "fitrun/shard.h"
#include "fitrun/common.h"
#include "internal.h"

extern char **environ;

static void usage(FILE *f)
{
    fputs("usage: fitrun run [--profile FILE] [--jobs FILE|-] [--out FILE|-] [--workers N] [--resume]\n"
          "                  [--progress auto|bar|plain|none] [--shard K/N|auto] [-q|--quiet] [--ready-fd N]\n"
          "                  [--cpus N] [--rounding R] [--memory-per-worker S]\n"
          "                  [--cpu-time T] [--wall-time T] [--memory SIZE] [--output SIZE]\n"
          "                  [--preset python|exec|none] [--set SECTION.KEY=VALUE]...\n"
          "Runs every job (one JSON object per line) in the sandbox on a pool sized by the plan,\n"
          "and writes one result line per job. Options override the profile. See docs/run.md.\n"
          "  --profile FILE      INI profile (default: the built-in one, profiles/default.ini)\n"
          "  --jobs FILE|-       jobs to run (default: - = stdin, streamed)\n"
          "  --out FILE|-        results (default: - = stdout); FILE is replaced unless --resume;\n"
          "                      {shard} in FILE becomes the shard number\n"
          "  --resume            keep FILE's results (each checked against the id its line holds),\n"
          "                      run only the jobs that have none, append\n"
          "  --workers N         pool size (1 to 4096), overriding the plan\n"
          "  --cpus N            CPUs, overriding detection (the plan sizes the pool from them)\n"
          "  --rounding R        [resources] rounding: CPUs -> workers, floor, ceil or nearest\n"
          "  --memory-per-worker S  [resources] memory_per_worker: cap workers at memory limit / S\n"
          "  --cpu-time T        [sandbox] cpu_time: CPU time per job (default 2s; none; up to 8760h)\n"
          "  --wall-time T       [sandbox] wall_time: wall-clock time per job (default 10s; none)\n"
          "  --memory SIZE       [sandbox] memory: per job, its cgroup's limit where fitrun has its\n"
          "                      own cgroups, else address space per process (default 512M; none)\n"
          "  --output SIZE       [sandbox] output: cap on stdout and on stderr each (default 1M)\n"
          "  --preset P          [sandbox] preset: python, exec or none (default: the runtime's own)\n"
          "  --set S.K=V         any profile key, e.g. --set sandbox.pass_env=HF_TOKEN (repeatable)\n"
          "  --progress MODE     auto (bar on a terminal, else none), bar, plain, none\n"
          "  --shard K/N|auto    run only input lines L with (L-1) mod N = K\n"
          "  -q, --quiet         no plan line, progress, summary or interrupt notice (errors still print)\n"
          "  --ready-fd N        once the runtime is up, write one JSON line {\"ready\":true,...} to\n"
          "                      descriptor N (3 or more, open for writing) and close it\n"
          "  -h, --help          this help\n"
          "Exit status: 0 every job got a result, 1 some input line was invalid,\n"
          "125 fitrun's own error, 128+N interrupted by signal N (130 SIGINT, 143 SIGTERM).\n",
          f);
}

struct run_args {
    struct fr_cli_profile prof; /* --profile and the options that set its keys */
    const char *jobs;
    const char *out;
    const char *shard;
    bool resume;
    enum fr_progress progress;
    int ready_fd; /* 0 = none */
};

enum { OPT_JOBS = 256, OPT_OUT, OPT_RESUME, OPT_PROGRESS, OPT_SHARD, OPT_QUIET, OPT_READY_FD, OPT_HELP };

/* --ready-fd N: a descriptor above stderr that is open for writing. It is
 * made close-on-exec (no job or interpreter gets it) and closed once the
 * ready record is written, or when fitrun exits before it could be. */
static int parse_ready_fd(const char *s, int *fd)
{
    int64_t n;
    if (fr_parse_i64(s, &n) < 0 || n <= STDERR_FILENO || n > INT_MAX) {
        fr_warn("--ready-fd '%s': expected a descriptor number of 3 or more", s);
        return -1;
    }
    int fl = fcntl((int)n, F_GETFL);
    if (fl < 0) {
        fr_warn("--ready-fd %s: %s", s, strerror(errno));
        return -1;
    }
    if ((fl & O_ACCMODE) == O_RDONLY) {
        fr_warn("--ready-fd %s: the descriptor is open read-only", s);
        return -1;
    }
    if (fcntl((int)n, F_SETFD, FD_CLOEXEC) < 0) {
        fr_warn("--ready-fd %s: fcntl(F_SETFD): %s", s, strerror(errno));
        return -1;
    }
    *fd = (int)n;
    return 0;
}

/* Returns -1 to go on, else the exit status (0 after --help). */
static int parse_args(int argc, char **argv, struct run_args *a)
{
    static const struct option opts[] = {
        FR_CLI_PLAN_OPTS,
        FR_CLI_OPT("cpu-time"),
        FR_CLI_OPT("wall-time"),
        FR_CLI_OPT("memory"),
        FR_CLI_OPT("output"),
        FR_CLI_OPT("preset"),
        FR_CLI_OPT("set"),
        {"jobs", required_argument, NULL, OPT_JOBS},
        {"out", required_argument, NULL, OPT_OUT},
        {"resume", no_argument, NULL, OPT_RESUME},
        {"progress", required_argument, NULL, OPT_PROGRESS},
        {"shard", required_argument, NULL, OPT_SHARD},
        {"quiet", no_argument, NULL, OPT_QUIET},
        {"ready-fd", required_argument, NULL, OPT_READY_FD},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    a->jobs = "-";
    a->out = "-";
    optind = 0; /* GNU: full re-initialisation */
    opterr = 0;
    int c, idx;
    while ((c = getopt_long(argc, argv, "+:qh", opts, &idx)) != -1) {
        switch (c) {
        case FR_CLI_PROFILE_OPT:
            if (fr_cli_option(&a->prof, opts[idx].name, optarg) < 0)
                return FR_EXIT_USAGE;
            break;
        case OPT_JOBS: a->jobs = optarg; break;
        case OPT_OUT: a->out = optarg; break;
        case OPT_RESUME: a->resume = true; break;
        case OPT_SHARD: a->shard = optarg; break;
        case 'q':
        case OPT_QUIET: fr_quiet = true; break;
        case OPT_READY_FD:
            if (parse_ready_fd(optarg, &a->ready_fd) < 0)
                return FR_EXIT_USAGE;
            break;
        case OPT_PROGRESS:
            if (fr_progress_parse(optarg, &a->progress) < 0) {
                fr_warn("--progress '%s': expected auto, bar, plain or none", optarg);
                return FR_EXIT_USAGE;
            }
            break;
        case 'h':
        case OPT_HELP: usage(stdout); return 0;
        default: return fr_cli_getopt_error("run", c, argv);
        }
    }
    return fr_cli_no_operands("run", argc, argv);
}

/* --shard, or the SLURM array task we are in. */
static int pick_shard(const struct run_args *a, struct fr_shard *shard)
{
    char err[512];
    memset(shard, 0, sizeof *shard);
    if (a->shard) {
        if (fr_shard_parse(a->shard, environ, shard, err, sizeof err) < 0) {
            fr_warn("%s", err);
            return -1;
        }
    } else if (fr_shard_auto(environ, shard, err, sizeof err) < 0) {
        fr_warn("%s", err);
        return -1;
    }
    if (shard->enabled)
        fr_info("shard %d/%d: running input lines L with (L-1) mod %d = %d", shard->index, shard->count, shard->count,
                shard->index);
    return 0;
}

static int open_input(const char *name)
{
    if (!strcmp(name, "-"))
        return STDIN_FILENO;
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fr_warn("cannot open jobs file %s: %s", name, strerror(errno));
    return fd;
}

static bool same_file(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* One writer per results file: a second run on it (a batch task requeued
 * while the first still runs, the same command started twice) would answer
 * the same jobs again. A POSIX record lock belongs to this process alone (a
 * forked child does not hold it) and goes when it exits however it ends,
 * so a --resume right after a SIGKILL finds the file free. Regular files
 * only (/dev/null or a FIFO may be shared on purpose); a file system
 * without locks is said and not enforced. fitrun opens the file once, so
 * no close(2) of another descriptor drops the lock. */
static int lock_output(int fd, const char *name)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &fl) == 0)
        return 0;
    if (errno != EAGAIN && errno != EACCES) {
        fr_warn("--out %s: cannot lock it (%s): a second fitrun run on the same file would not be noticed", name,
                strerror(errno));
        return 0;
    }
    struct flock who = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    char pid[32] = "";
    if (fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK && who.l_pid > 0)
        snprintf(pid, sizeof pid, " (pid %d)", (int)who.l_pid);
    fr_warn("--out %s: in use by another fitrun%s: one run per results file; wait for it to end, or use another --out",
            name, pid);
    return -1;
}

/* Results: appended (O_APPEND, one write per line) so a crash loses at most
 * the line being written; replaced unless --resume, by the pool once its
 * runtime is up (a run that cannot start leaves the old results). */
static int open_output(const char *name, bool resume, int in_fd)
{
    if (!strcmp(name, "-")) {
        if (resume) {
            fr_warn("--resume needs --out FILE (the results to continue)");
            return -1;
        }
        return STDOUT_FILENO;
    }
    /* --resume reads the file back through the same descriptor. */
    int fd = open(name, (resume ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        fr_warn("cannot open results file %s: %s", name, strerror(errno));
        return -1;
    }
    if (same_file(fd, in_fd)) {
        fr_warn("--out %s is the jobs file", name);
        close(fd);
        return -1;
    }
    if (lock_output(fd, name) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Job environment (envexport.h): fitrun's environment scrubbed to the
 * allow-list and the profile's pass_env, the thread variables sized to one
 * job (the plan's threads per job) and the profile's [env] forced. The
 * runtimes take it as it is: the Python interpreter, its workers and every
 * prediction, and every exec command. */
static char **job_environment(const struct fr_resources *res, const struct fr_plan *plan, const struct fr_profile *p)
{
    static struct fr_env_export ex; /* ~35 KiB: keep it off the stack */
    char **envp = NULL;
    if (fr_profile_job_env(p, res, plan, environ, &ex) == 0) {
        char err[512];
        if (fr_env_make_dirs(&ex, err, sizeof err) < 0)
            fr_warn("%s", err);
        envp = fr_env_build_job_envp(&ex, environ, p->pass_env);
    } else
        fr_warn("cannot compute the job environment: %s", strerror(errno));
    fr_env_free(&ex);
    return envp;
}

/* Say once what least privilege will not cover on this machine. */
static void sandbox_notes(const struct fr_policy *pol, const char *jobs, const char *out)
{
    struct fr_policy_info in;
    fr_policy_info(pol, &in);
    if (in.fs != FR_FS_OFF && !in.landlock)
        fr_warn("sandbox: file reads are not confined (no Landlock: %s); jobs read what their uid may read. "
                "[sandbox] require_landlock = true makes this fatal",
                in.landlock_why);
    if (!in.identity && in.uid == 0)
        fr_warn("sandbox: jobs run as uid 0: %s", in.identity_why);
    else if (!in.identity)
        fr_info("sandbox: %s", in.identity_why);
    const char *files[2] = {jobs, out};
    struct stat sb;
    for (int i = 0; i < 2; i++)
        /* A character device (--out /dev/null) holds nothing to read. */
        if (files[i] && strcmp(files[i], "-") && !(stat(files[i], &sb) == 0 && S_ISCHR(sb.st_mode)) &&
            fr_policy_may_read(pol, files[i]))
            fr_warn("sandbox: %s is inside what [sandbox] read/write lets every job read: a job can read it", files[i]);
}

struct run_state {
    struct fr_profile profile;
    struct fr_policy *policy;
    char **envp;
    int in_fd, out_fd;
    struct fr_resume resume;
    bool has_resume;
    struct fr_cgroup_tree *cgroups;
};

static void cleanup(struct run_state *s)
{
    /* After the pool: what is left in the jobs' cgroups is killed there. */
    fr_cgroup_tree_destroy(s->cgroups);
    if (s->policy)
        fr_policy_free(s->policy);
    if (s->envp)
        fr_envp_free(s->envp);
    if (s->in_fd > STDERR_FILENO)
        close(s->in_fd);
    if (s->out_fd > STDERR_FILENO)
        close(s->out_fd);
    if (s->has_resume)
        fr_resume_free(&s->resume);
    fr_profile_free(&s->profile);
}

/* What a job's processes may hold: the profile's processes plus the
 * runtime's own helpers in the job's cgroup (exec: the relay). */
static uint64_t job_pids(const struct fr_profile *p)
{
    return p->processes ? p->processes + (uint64_t)fr_runtime_ops_for(p->kind)->job_helpers : 0;
}

/* fitrun's own cgroups, a cgroup per worker slot ([resources] cgroups,
 * docs/cgroups.md). auto: where delegated, else none (RLIMIT_AS limits
 * memory); require: none is an error. Returns 0 (*out NULL = none) or -1. */
static int make_cgroups(const struct fr_profile *p, const struct fr_resources *res, const struct fr_plan *plan,
                        struct fr_cgroup_tree **out)
{
    *out = NULL;
    if (p->cgroups == FR_CGROUPS_OFF)
        return 0;
    static struct fr_cgroup_probe probe; /* ~13 KiB: keep it off the stack */
    fr_cgroup_probe(res, p->cgroups, &probe);
    struct fr_cgroup_limits lim = {
        .memory = p->memory,
        .pids = job_pids(p),
        .mem_limit = res->mem_limit.known ? (uint64_t)res->mem_limit.value : 0,
    };
    char err[2048];
    int workers = plan->workers > 0 ? plan->workers : 1;
    lim.keep = FR_CGROUP_KEEP + (uint64_t)workers * 2 * p->output; /* each slot's stdout and stderr */
    if (fr_cgroup_tree_create(&probe, &lim, workers, out, err, sizeof err) < 0) {
        if (p->cgroups == FR_CGROUPS_REQUIRE) {
            fr_warn("%s ([resources] cgroups = require)", err);
            return -1;
        }
        fr_info("%s; memory limits are RLIMIT_AS", err);
        return 0;
    }
    char line[FR_CG_REASON_MAX + 256];
    fr_info("%s", fr_cgroup_tree_summary(*out, line, sizeof line));
    return 0;
}

static int run(const struct run_args *a, struct run_state *s)
{
    char err[1024], out_name[PATH_MAX], exe[PATH_MAX];
    struct fr_shard shard;
    if (fr_cli_load_profile(&a->prof, &s->profile) < 0 || pick_shard(a, &shard) < 0)
        return FR_EXIT_USAGE;
    const char *out = a->out;
    if (strstr(out, "{shard}")) {
        if (!shard.enabled) {
            fr_warn("--out %s: {shard} needs --shard (or a SLURM array task)", out);
            return FR_EXIT_USAGE;
        }
        if (fr_shard_expand(out, &shard, out_name, sizeof out_name) < 0) {
            fr_warn("--out %s: name too long", out);
            return FR_EXIT_USAGE;
        }
        out = out_name;
    }

    /* The plan `fitrun detect` and the wrapper make from the same profile
     * and options (fr_profile_detect_plan). */
    struct fr_resources res;
    struct fr_plan plan;
    fr_profile_detect_plan(&s->profile, NULL, &res, &plan, NULL);
    char summary[2048];
    fr_info("%s", fr_plan_summary(&res, &plan, summary, sizeof summary));

    if (make_cgroups(&s->profile, &res, &plan, &s->cgroups) < 0)
        return FR_EXIT_USAGE;
    struct fr_policy_spec spec;
    fr_profile_policy_spec(&s->profile, &spec);
    fr_cgroup_policy_spec(fr_cgroup_tree_ctls(s->cgroups), &spec);
    spec.cpu_ms = fr_cpu_backstop_ms(s->profile.cpu_time_ms); /* the pool kills at the budget */
    spec.slots = plan.workers > 0 ? plan.workers : 1;
    if (spec.slot_identity && geteuid() == 0) {
        /* Another run on this machine may hold uid_base..: take the first
         * free range. The runtimes read uid_base from the profile. */
        uint32_t base;
        if (fr_identity_reserve(spec.uid_base, spec.slots, &base, err, sizeof err) < 0) {
            fr_warn("sandbox: %s", err);
            return FR_EXIT_USAGE;
        }
        if (base != spec.uid_base)
            fr_info("sandbox: uids %u-%u are in use by another run or process; slots run as uids %u-%u", spec.uid_base,
                    spec.uid_base + (unsigned)spec.slots - 1, base, base + (unsigned)spec.slots - 1);
        spec.uid_base = s->profile.uid_base = base;
    }
    const char *key = NULL;
    if (fr_policy_check_lists(&spec, &key, err, sizeof err) < 0) {
        char where[PATH_MAX + 64];
        fr_profile_where(&s->profile, "sandbox", key, where, sizeof where);
        fr_warn("%s: [sandbox] %s: %s", where, key, err);
        return FR_EXIT_USAGE;
    }
    if (fr_policy_build(&spec, &s->policy, err, sizeof err) < 0) {
        fr_warn("%s: [sandbox]: %s", s->profile.path[0] ? s->profile.path : "built-in profile", err);
        return FR_EXIT_USAGE;
    }
    if (!(s->envp = job_environment(&res, &plan, &s->profile)))
        return FR_EXIT_USAGE;

    if ((s->in_fd = open_input(a->jobs)) < 0 || (s->out_fd = open_output(out, a->resume, s->in_fd)) < 0)
        return FR_EXIT_USAGE;
    sandbox_notes(s->policy, a->jobs, out);
    if (a->resume) {
        if (fr_resume_scan(s->out_fd, out, &s->resume, err, sizeof err) < 0) {
            fr_warn("%s", err);
            return FR_EXIT_USAGE;
        }
        s->has_resume = true;
        const char *jobs_name = strcmp(a->jobs, "-") ? a->jobs : "stdin";
        if (fr_resume_verify(&s->resume, s->in_fd, &shard, jobs_name, err, sizeof err) < 0) {
            fr_warn("%s", err);
            return FR_EXIT_USAGE;
        }
        fr_info("resuming %s: %ld result%s kept", out, s->resume.results, s->resume.results == 1 ? "" : "s");
    }

    if (fr_self_exe(exe, sizeof exe) < 0)
        fr_warn("cannot find the fitrun binary (/proc/self/exe): %s", strerror(errno));
    struct fr_runtime_config rtcfg = {
        .profile = &s->profile,
        .policy = s->policy,
        .envp = s->envp,
        .output_cap = s->profile.output,
        .self_exe = exe,
        .cgroups = s->cgroups,
    };
    struct fr_pool_opts o = {
        .workers = plan.workers > 0 ? plan.workers : 1,
        .ops = fr_runtime_ops_for(s->profile.kind),
        .rtcfg = &rtcfg,
        .cpu_ms = s->profile.cpu_time_ms,
        .wall_ms = s->profile.wall_time_ms,
        .in_fd = s->in_fd,
        .in_name = strcmp(a->jobs, "-") ? a->jobs : "stdin",
        .out_fd = s->out_fd,
        .out_name = strcmp(out, "-") ? out : "stdout",
        .replace_out = !a->resume && strcmp(out, "-") != 0,
        .shard = shard,
        .resume = s->has_resume ? &s->resume : NULL,
        .progress = a->progress,
        .quiet = fr_quiet,
        .ready_fd = a->ready_fd,
        .resources = &res, /* the pool's OOM check reuses this detection */
        .cgroups = s->cgroups,
    };
    return fr_pool_run(&o);
}

/* Block SIGINT, SIGTERM and SIGHUP first thing: one that comes while the
 * profile loads, detection runs or --resume reads its file stays pending
 * until the pool reads it from its signalfd, and the run ends as any
 * interrupted run (128 + signal, the summary), never by the signal's
 * default action. They stay blocked until fitrun exits, as the pool keeps
 * them. */
static void block_stop_signals(void)
{
    sigset_t set;
    fr_pool_stop_signals(&set);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        fr_warn("sigprocmask(SIG_BLOCK): %s", strerror(errno));
}

int fr_cmd_run(int argc, char **argv)
{
    static struct run_args a; /* ~10 KiB: keep it off the stack */
    block_stop_signals();
    int r = parse_args(argc, argv, &a);
    if (r >= 0)
        return r;
    struct run_state s = {.in_fd = -1, .out_fd = -1};
    int rc = run(&a, &s);
    cleanup(&s);
    return rc;
}
