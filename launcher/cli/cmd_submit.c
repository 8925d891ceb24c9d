/* cmd_submit.c — `fitrun submit slurm|condor ...`: print the batch job
 * script that runs one shard per array task (launcher/scaleout/submit.c), or
 * with --submit (SLURM) write it next to the results and hand it to sbatch.
 *
 * Every path in the script is absolute, resolved here, because tasks start
 * on other machines in other directories; the profile is loaded now so a
 * broken profile fails at submission, not once per task an hour later. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/cli.h"
#include "fitrun/profile.h"
#include "fitrun/scaleout.h"
#include "fitrun/common.h"
#include "internal.h"

extern char **environ;

struct submit_args {
    const char *system; /* "slurm" | "condor" */
    const char *profile, *jobs, *out_dir, *mem, *time, *partition, *job_name;
    int shards, cpus;
    bool submit;
};

static void submit_usage(FILE *f)
{
    fputs("usage: fitrun submit slurm  --profile FILE --jobs FILE --shards N --cpus-per-task C\n"
          "                            [--mem SIZE] [--time LIMIT] [--partition P] [--out-dir D]\n"
          "                            [--job-name NAME] [--submit]\n"
          "       fitrun submit condor --profile FILE --jobs FILE --shards N --cpus-per-task C\n"
          "                            [--mem SIZE] [--time LIMIT] [--out-dir D] [--job-name NAME]\n"
          "Print a job-array script that runs `fitrun run --shard K/N` in each task, writing\n"
          "D/results.K.jsonl (with --resume, so a rerun of one task completes its shard).\n"
          "  -p, --profile FILE        the profile each task runs (checked now; written absolute)\n"
          "  -j, --jobs FILE           the jobs file (written absolute)\n"
          "  -n, --shards N            number of shards = array tasks\n"
          "  -c, --cpus-per-task C     CPUs per task; each task sizes its pool to what it gets\n"
          "  -m, --mem SIZE            memory per task (512M, 4G); default: the profile's\n"
          "                            memory_per_worker x workers (the profile's workers, else C)\n"
          "  -t, --time LIMIT          SLURM form (30 = minutes, H:MM:SS, D-H:MM) or 90m, 2h\n"
          "                            (at most 365 days)\n"
          "  -P, --partition P         (slurm) the partition\n"
          "  -o, --out-dir D           results and per-task logs (default: the current directory)\n"
          "  -J, --job-name NAME       job name (default: fitrun)\n"
          "  -s, --submit              (slurm) write D/NAME.sbatch, run sbatch, print the job id\n"
          "  -h, --help                this help\n"
          "Then: fitrun merge --jobs FILE --shards N D/results.*.jsonl > merged.jsonl\n"
          "Exit status: 0, or 125 for a usage error, a bad profile or a failed sbatch.\n",
          f);
}

/* A count of array tasks or CPUs. A million is far above what SLURM accepts
 * for either (MaxArraySize is at most 4,000,001, and a task's CPUs sit on one node). */
#define SUBMIT_COUNT_MAX 1000000

static int parse_positive(const char *opt, const char *v, int *out)
{
    int64_t n;
    if (fr_parse_i64(v, &n) < 0 || n < 1 || n > SUBMIT_COUNT_MAX) {
        fr_warn("submit: %s '%s': expected a whole number from 1 to %d", opt, v, SUBMIT_COUNT_MAX);
        return -1;
    }
    *out = (int)n;
    return 0;
}

/* Returns 0, 1 for --help, -1 on a usage error. */
static int parse_args(int argc, char **argv, struct submit_args *a)
{
    static const struct option longopts[] = {
        {"profile", required_argument, NULL, 'p'},
        {"jobs", required_argument, NULL, 'j'},
        {"shards", required_argument, NULL, 'n'},
        {"cpus-per-task", required_argument, NULL, 'c'},
        {"mem", required_argument, NULL, 'm'},
        {"time", required_argument, NULL, 't'},
        {"partition", required_argument, NULL, 'P'},
        {"out-dir", required_argument, NULL, 'o'},
        {"job-name", required_argument, NULL, 'J'},
        {"submit", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    optind = 0; /* GNU: full re-initialisation */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:p:j:n:c:m:t:P:o:J:sh", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': a->profile = optarg; break;
        case 'j': a->jobs = optarg; break;
        case 'n':
            if (parse_positive("--shards", optarg, &a->shards) < 0)
                return -1;
            break;
        case 'c':
            if (parse_positive("--cpus-per-task", optarg, &a->cpus) < 0)
                return -1;
            break;
        case 'm': a->mem = optarg; break;
        case 't': a->time = optarg; break;
        case 'P': a->partition = optarg; break;
        case 'o': a->out_dir = optarg; break;
        case 'J': a->job_name = optarg; break;
        case 's': a->submit = true; break;
        case 'h': return 1;
        default: fr_cli_getopt_error("submit", c, argv); return -1;
        }
    }
    if (optind < argc) {
        fr_warn("submit: unexpected argument '%s'", argv[optind]);
        return -1;
    }
    const char *missing = !a->profile  ? "--profile"
                          : !a->jobs   ? "--jobs"
                          : !a->shards ? "--shards"
                          : !a->cpus   ? "--cpus-per-task"
                                       : NULL;
    if (missing) {
        fr_warn("submit: %s is required", missing);
        return -1;
    }
    if (a->submit && strcmp(a->system, "slurm")) {
        fr_warn("submit: --submit is for slurm; for HTCondor save the description and run condor_submit FILE");
        return -1;
    }
    if (a->partition && strcmp(a->system, "slurm")) {
        fr_warn("submit: --partition is for slurm (HTCondor matches machines by requirements)");
        return -1;
    }
    return 0;
}

/* An existing file, as an absolute path without symlinks. */
static int resolve_file(const char *what, const char *path, char *buf)
{
    struct stat st;
    if (!realpath(path, buf)) {
        fr_warn("submit: %s '%s': %s", what, path, strerror(errno));
        return -1;
    }
    if (stat(buf, &st) < 0 || !S_ISREG(st.st_mode)) {
        fr_warn("submit: %s '%s' is not a regular file", what, path);
        return -1;
    }
    return 0;
}

/* The output directory, absolute; it may not exist yet. */
static int resolve_dir(const char *path, const char *cwd, char *buf, bool *exists)
{
    struct stat st;
    *exists = realpath(path, buf) != NULL;
    if (*exists) {
        if (stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
            fr_warn("submit: --out-dir '%s' is not a directory", path);
            return -1;
        }
        return 0;
    }
    int n = path[0] == '/' ? snprintf(buf, PATH_MAX, "%s", path) : snprintf(buf, PATH_MAX, "%s/%s", cwd, path);
    if (n < 0 || n >= PATH_MAX) {
        fr_warn("submit: --out-dir '%s': path too long", path);
        return -1;
    }
    for (size_t l = strlen(buf); l > 1 && buf[l - 1] == '/'; l--)
        buf[l - 1] = '\0';
    return 0;
}

static int mkdir_p(const char *dir)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(tmp, 0755) < 0 && errno != EEXIST) {
            fr_warn("submit: creating %s: %s", tmp, strerror(errno));
            return -1;
        }
        if (!saved)
            return 0;
        *p = saved;
    }
}

/* --mem, else memory_per_worker x workers: the profile's fixed worker
 * count if it has one (the pool runs that many whatever the allocation),
 * else one worker per allocated CPU, which is what the plan gives a task. */
static int task_memory(const struct submit_args *a, const struct fr_profile *p, uint64_t *bytes, char *origin, size_t n)
{
    char sz[32];
    if (a->mem) {
        const char *why = "";
        if (fr_parse_size_why(a->mem, bytes, &why) < 0) {
            fr_warn("submit: --mem '%s': %s (expected a size such as 512M or 4G)", a->mem, why);
            return -1;
        }
        snprintf(origin, n, "--mem %s", a->mem);
        return 0;
    }
    *bytes = 0;
    if (!p->memory_per_worker)
        return 0;
    uint64_t workers = p->workers > 0 ? (uint64_t)p->workers : (uint64_t)a->cpus;
    if (p->memory_per_worker > UINT64_MAX / workers) {
        fr_warn("submit: memory_per_worker x %llu workers overflows", (unsigned long long)workers);
        return -1;
    }
    *bytes = p->memory_per_worker * workers;
    snprintf(origin, n, "profile memory_per_worker %s x %llu worker(s)%s",
             fr_format_size(p->memory_per_worker, sz, sizeof sz), (unsigned long long)workers,
             p->workers > 0 ? " (the profile's workers)" : " (one per CPU)");
    return 0;
}

/* Run `sbatch --parsable SCRIPT`; put the job id in id. Returns 0 or an exit status. */
static int run_sbatch(const char *script, char *id, size_t n)
{
    int pfd[2];
    posix_spawn_file_actions_t fa;
    pid_t pid;
    char *argv[] = {"sbatch", "--parsable", (char *)script, NULL};
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        fr_warn("submit: pipe: %s", strerror(errno));
        return FR_EXIT_USAGE;
    }
    /* The pipe is O_CLOEXEC; dup2 onto stdout clears that for the child's copy. */
    int err = posix_spawn_file_actions_init(&fa);
    if (!err) {
        err = posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
        if (!err)
            err = posix_spawnp(&pid, "sbatch", &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(pfd[1]);
    if (err) {
        close(pfd[0]);
        fr_warn("submit: cannot run sbatch: %s%s", strerror(err),
                err == ENOENT ? " (not in PATH: is this a SLURM submit host?)" : "");
        return err == ENOENT ? FR_EXIT_NOT_FOUND : FR_EXIT_CANNOT_EXEC;
    }
    size_t used = 0;
    ssize_t r;
    while ((r = read(pfd[0], id + used, n - 1 - used)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || (used += (size_t)r) >= n - 1)
            break;
    }
    id[used] = '\0';
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            fr_warn("submit: waiting for sbatch: %s", strerror(errno));
            return FR_EXIT_USAGE;
        }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fr_warn("submit: sbatch %s %d; nothing was submitted",
                WIFEXITED(st) ? "exited with status" : "was killed by signal",
                WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        return FR_EXIT_USAGE;
    }
    /* --parsable prints "JOBID" or "JOBID;CLUSTER". */
    id[strspn(id, "0123456789")] = '\0';
    if (!id[0]) {
        fr_warn("submit: sbatch succeeded but printed no job id");
        return FR_EXIT_USAGE;
    }
    return 0;
}

/* The script text, generated (and so checked) before anything is created. */
static char *slurm_text(const struct fr_submit *s, size_t *len)
{
    char err[512] = "", *text = NULL;
    FILE *m = open_memstream(&text, len);
    if (!m) {
        fr_warn("submit: open_memstream: %s", strerror(errno));
        return NULL;
    }
    int rc = fr_submit_slurm(m, s, err, sizeof err);
    if (fclose(m) != 0 && rc == 0) {
        snprintf(err, sizeof err, "%s", strerror(errno));
        rc = -1;
    }
    if (rc < 0) {
        fr_warn("submit: %s", err);
        free(text);
        return NULL;
    }
    return text;
}

static int write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "we");
    if (!f) {
        fr_warn("submit: creating %s: %s", path, strerror(errno));
        return -1;
    }
    bool ok = fwrite(text, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        fr_warn("submit: writing %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int submit_slurm(const struct fr_submit *s)
{
    char script[PATH_MAX + 64], id[256];
    size_t len;
    char *text = slurm_text(s, &len);
    if (!text)
        return FR_EXIT_USAGE;
    snprintf(script, sizeof script, "%s/%s.sbatch", s->out_dir, s->job_name ? s->job_name : "fitrun");
    int rc = mkdir_p(s->out_dir) < 0 || write_file(script, text, len) < 0 ? FR_EXIT_USAGE : 0;
    free(text);
    if (rc == 0)
        rc = run_sbatch(script, id, sizeof id);
    if (rc != 0)
        return rc;
    printf("%s\n", id);
    fr_info("submit: array job %s, %d task(s), script %s; rerun shard K: sbatch --array=K %s", id, s->shards, script,
            script);
    fr_info("submit: when done: %s merge --jobs %s --shards %d %s/results.*.jsonl > merged.jsonl", s->fitrun, s->jobs,
            s->shards, s->out_dir);
    return fflush(stdout) == 0 ? 0 : FR_EXIT_USAGE;
}

static int submit(const struct submit_args *a)
{
    static char exe[PATH_MAX], profile[PATH_MAX], jobs[PATH_MAX], out[PATH_MAX], cwd[PATH_MAX];
    char err[PATH_MAX + 128] = "", origin[256] = "";
    bool out_exists;
    if (fr_self_exe(exe, sizeof exe) < 0) {
        fr_warn("submit: cannot find the fitrun binary: readlink /proc/self/exe: %s", strerror(errno));
        return FR_EXIT_USAGE;
    }
    if (!getcwd(cwd, sizeof cwd)) {
        fr_warn("submit: getcwd: %s", strerror(errno));
        return FR_EXIT_USAGE;
    }
    if (resolve_file("--profile", a->profile, profile) < 0 || resolve_file("--jobs", a->jobs, jobs) < 0 ||
        resolve_dir(a->out_dir ? a->out_dir : ".", cwd, out, &out_exists) < 0)
        return FR_EXIT_USAGE;

    struct fr_profile p;
    fr_profile_defaults(&p);
    if (fr_profile_load(&p, profile, err, sizeof err) < 0) {
        fr_warn("submit: %s", err[0] ? err : "cannot load the profile");
        fr_profile_free(&p);
        return FR_EXIT_USAGE;
    }
    struct fr_submit s = {.fitrun = exe,
                          .profile = profile,
                          .jobs = jobs,
                          .out_dir = out,
                          .workdir = cwd,
                          .shards = a->shards,
                          .cpus_per_task = a->cpus,
                          .partition = a->partition,
                          .job_name = a->job_name,
                          .mem_origin = origin};
    int rc = task_memory(a, &p, &s.mem_bytes, origin, sizeof origin);
    fr_profile_free(&p);
    if (rc < 0)
        return FR_EXIT_USAGE;
    if (a->time && fr_parse_time_limit(a->time, &s.time_s) < 0) {
        fr_warn("submit: --time '%s': expected minutes, MM:SS, H:MM:SS, D-H[:MM[:SS]] or a duration like 90m, 2h",
                a->time);
        return FR_EXIT_USAGE;
    }
    if (a->submit)
        return submit_slurm(&s);
    if (!out_exists)
        fr_warn("submit: %s does not exist yet: create it before submitting (the batch system opens the "
                "per-task logs there)",
                out);
    rc = !strcmp(a->system, "slurm") ? fr_submit_slurm(stdout, &s, err, sizeof err)
                                     : fr_submit_condor(stdout, &s, err, sizeof err);
    if (rc < 0) {
        fr_warn("submit: %s", err);
        return FR_EXIT_USAGE;
    }
    return 0;
}

int fr_cmd_submit(int argc, char **argv)
{
    struct submit_args a = {0};
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        submit_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? FR_EXIT_USAGE : 0;
    }
    a.system = argv[1];
    if (strcmp(a.system, "slurm") && strcmp(a.system, "condor")) {
        fr_warn("submit: unknown batch system '%s' (slurm or condor)", a.system);
        return FR_EXIT_USAGE;
    }
    int r = parse_args(argc - 1, argv + 1, &a);
    if (r != 0) {
        submit_usage(r > 0 ? stdout : stderr);
        return r > 0 ? 0 : FR_EXIT_USAGE;
    }
    return submit(&a);
}
