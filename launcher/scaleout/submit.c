/* submit.c — the job scripts of `fitrun submit`: an sbatch array script
 * and an HTCondor submit description that run one shard per array task /
 * queued job, each writing D/results.K.jsonl with --resume so that a rerun
 * completes what a killed task left. Pure text generation: the CLI
 * (cmd_submit.c) resolves paths and the profile and runs sbatch.
 *
 * Both formats are line-based and interpret some characters themselves
 * (#SBATCH options are split at blanks and expand %A/%a in file names;
 * HTCondor expands $(macros)), so values they cannot carry are refused
 * with a message rather than quoted into something that half works. */
#include "fitrun/scaleout.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "fitrun/common.h"

/* Time limits -------------------------------------------------------------- */

/* 1 to 9 decimal digits, whole string. */
static int digits(const char *s, size_t n, uint64_t *out)
{
    if (n == 0 || n > 9)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/* SLURM's forms: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S". */
static int parse_slurm_time(const char *s, uint64_t *seconds)
{
    uint64_t days = 0, f[3];
    int nf = 0;
    const char *dash = strchr(s, '-');
    if (dash) {
        if (digits(s, (size_t)(dash - s), &days) < 0)
            return -1;
        s = dash + 1;
    }
    for (;;) {
        size_t n = strcspn(s, ":");
        if (nf == 3 || digits(s, n, &f[nf++]) < 0)
            return -1;
        if (!s[n])
            break;
        s += n + 1;
    }
    uint64_t h = 0, m = 0, sec = 0;
    if (dash) { /* D-H, D-H:M, D-H:M:S */
        h = f[0];
        m = nf > 1 ? f[1] : 0;
        sec = nf > 2 ? f[2] : 0;
    } else if (nf == 1) { /* M */
        m = f[0];
    } else if (nf == 2) { /* M:S */
        m = f[0];
        sec = f[1];
    } else { /* H:M:S */
        h = f[0];
        m = f[1];
        sec = f[2];
    }
    *seconds = ((days * 24 + h) * 60 + m) * 60 + sec;
    return 0;
}

int fr_parse_time_limit(const char *s, uint64_t *seconds)
{
    uint64_t v, ms;
    size_t n = s ? strlen(s) : 0;
    if (n == 0)
        return -1;
    if (isdigit((unsigned char)s[n - 1])) {
        /* No unit: SLURM's reading (a bare number is minutes), never ours
         * (a bare number would be seconds) — "30" must mean one thing. */
        if (parse_slurm_time(s, &v) < 0)
            return -1;
    } else {
        if (fr_parse_duration_ms(s, &ms) < 0)
            return -1;
        v = ms / 1000 + (ms % 1000 != 0);
    }
    if (v == 0 || v > FR_DURATION_MAX_MS / 1000)
        return -1;
    *seconds = v;
    return 0;
}

/* Longest output directory: keeps "<dir>/results.{shard}.jsonl" in RESULTS_PATH_MAX. */
#define RESULTS_DIR_MAX 4096
#define RESULTS_PATH_MAX (RESULTS_DIR_MAX + 32)

static void results_pattern(const struct fr_submit *s, char *buf)
{
    snprintf(buf, RESULTS_PATH_MAX, "%s/results.{shard}.jsonl", s->out_dir);
}

/* Checks ------------------------------------------------------------------- */

static int check_path(const char *what, const char *p, char *err, size_t errlen)
{
    if (!p || p[0] != '/') {
        fr_seterr(err, errlen, "%s '%s' is not an absolute path", what, p ? p : "");
        return -1;
    }
    if (strpbrk(p, "\n\r")) {
        fr_seterr(err, errlen, "%s contains a newline, which a job script cannot carry", what);
        return -1;
    }
    return 0;
}

/* A value on an #SBATCH line: sbatch splits those at blanks and handles
 * quotes itself, and file names expand %-patterns. */
static int check_sbatch_value(const char *what, const char *v, char *err, size_t errlen)
{
    const char *bad = v ? strpbrk(v, " \t\n\r\"'\\%") : NULL;
    if (bad) {
        fr_seterr(err, errlen, "%s '%s' contains '%c', which a job script line cannot carry; choose a plain name", what,
                  v, *bad);
        return -1;
    }
    return 0;
}

/* HTCondor expands "$(name)" everywhere in a submit description. */
static int check_condor_value(const char *what, const char *v, char *err, size_t errlen)
{
    if (v && strstr(v, "$(")) {
        fr_seterr(err, errlen, "%s '%s' contains '$(', which HTCondor would expand as a macro", what, v);
        return -1;
    }
    return 0;
}

static int check_common(const struct fr_submit *s, char *err, size_t errlen)
{
    const char *paths[][2] = {{"fitrun binary", s->fitrun},
                              {"profile", s->profile},
                              {"jobs file", s->jobs},
                              {"output directory", s->out_dir},
                              {"working directory", s->workdir}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (check_path(paths[i][0], paths[i][1], err, errlen) < 0)
            return -1;
    if (s->shards < 1 || s->cpus_per_task < 1) {
        bool shards = s->shards < 1;
        fr_seterr(err, errlen, "%s must be at least 1 (got %d)", shards ? "the number of shards" : "cpus per task",
                  shards ? s->shards : s->cpus_per_task);
        return -1;
    }
    if (strlen(s->out_dir) > RESULTS_DIR_MAX) {
        fr_seterr(err, errlen, "output directory '%.60s...' is longer than %d bytes", s->out_dir, RESULTS_DIR_MAX);
        return -1;
    }
    /* The output directory also appears in a shell glob (the merge hint). */
    if (strpbrk(s->out_dir, " \t*?[")) {
        fr_seterr(err, errlen, "output directory '%s' contains a blank or a glob character; choose a plain path",
                  s->out_dir);
        return -1;
    }
    return 0;
}

/* Text helpers -------------------------------------------------------------- */

/* POSIX shell word: as is when plain, else single-quoted. */
static void sh_word(FILE *f, const char *w)
{
    if (*w && strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+=,-") == strlen(w)) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (; *w; w++) {
        if (*w == '\'')
            fputs("'\\''", f);
        else
            fputc(*w, f);
    }
    fputc('\'', f);
}

/* One argument inside HTCondor's new-syntax arguments = "..." : arguments
 * are split at blanks; one holding blanks or ' goes in single quotes with '
 * doubled; a " is written "". */
static void condor_word(FILE *f, const char *w)
{
    bool quote = !*w || strpbrk(w, " \t'") != NULL;
    if (quote)
        fputc('\'', f);
    for (; *w; w++) {
        if (*w == '\'')
            fputs("''", f);
        else if (*w == '"')
            fputs("\"\"", f);
        else
            fputc(*w, f);
    }
    if (quote)
        fputc('\'', f);
}

/* SLURM --mem: whole MiB (its default unit), G when exact. */
static void slurm_mem(FILE *f, uint64_t bytes)
{
    uint64_t mib = bytes / (1024 * 1024) + (bytes % (1024 * 1024) != 0);
    if (mib && mib % 1024 == 0)
        fprintf(f, "%lluG", (unsigned long long)(mib / 1024));
    else
        fprintf(f, "%lluM", (unsigned long long)mib);
}

static void slurm_time(FILE *f, uint64_t s)
{
    uint64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d)
        fprintf(f, "%llu-%02llu:%02llu:%02llu", (unsigned long long)d, (unsigned long long)h, (unsigned long long)m,
                (unsigned long long)sec);
    else
        fprintf(f, "%llu:%02llu:%02llu", (unsigned long long)h, (unsigned long long)m, (unsigned long long)sec);
}

static const char *job_name(const struct fr_submit *s)
{
    return s->job_name && *s->job_name ? s->job_name : "fitrun";
}

/* "fitrun merge ..." for the header comment of both formats. */
static void merge_hint(FILE *f, const struct fr_submit *s)
{
    fputs("#   merge:          ", f);
    sh_word(f, s->fitrun);
    fputs(" merge --jobs ", f);
    sh_word(f, s->jobs);
    fprintf(f, " --shards %d %s/results.*.jsonl > merged.jsonl\n", s->shards, s->out_dir);
}

static int finish(FILE *f, char *err, size_t errlen)
{
    if (fflush(f) != 0 || ferror(f)) {
        fr_seterr(err, errlen, "writing the job script: %s", strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}

/* SLURM ------------------------------------------------------------------- */

int fr_submit_slurm(FILE *f, const struct fr_submit *s, char *err, size_t errlen)
{
    if (check_common(s, err, errlen) < 0 || check_sbatch_value("output directory", s->out_dir, err, errlen) < 0 ||
        check_sbatch_value("working directory", s->workdir, err, errlen) < 0 ||
        check_sbatch_value("partition", s->partition, err, errlen) < 0 ||
        check_sbatch_value("job name", s->job_name, err, errlen) < 0)
        return -1;
    fprintf(f,
            "#!/bin/bash\n"
            "# fitrun %s: %d shard(s) of the jobs below, one SLURM array task each; each task\n"
            "# sizes its pool to its own allocation (cpuset, SLURM_CPUS_PER_TASK).\n"
            "#   submit:         sbatch THIS_SCRIPT\n"
            "#   rerun shard K:  sbatch --array=K THIS_SCRIPT   (--resume completes results.K.jsonl)\n",
            FITRUN_VERSION, s->shards);
    merge_hint(f, s);
    fprintf(f, "#SBATCH --job-name=%s\n", job_name(s));
    fprintf(f, "#SBATCH --array=0-%d\n", s->shards - 1);
    fputs("#SBATCH --ntasks=1\n", f);
    fprintf(f, "#SBATCH --cpus-per-task=%d\n", s->cpus_per_task);
    if (s->mem_bytes) {
        if (s->mem_origin)
            fprintf(f, "# memory: %s\n", s->mem_origin);
        fputs("#SBATCH --mem=", f);
        slurm_mem(f, s->mem_bytes);
        fputc('\n', f);
    } else {
        fputs("# no --mem: the profile sets no memory_per_worker; the cluster's default applies\n", f);
    }
    if (s->time_s) {
        fputs("#SBATCH --time=", f);
        slurm_time(f, s->time_s);
        fputc('\n', f);
    }
    if (s->partition && *s->partition)
        fprintf(f, "#SBATCH --partition=%s\n", s->partition);
    fprintf(f, "#SBATCH --chdir=%s\n", s->workdir);
    fprintf(f, "#SBATCH --output=%s/%s-%%A_%%a.out\n", s->out_dir, job_name(s));
    fprintf(f, "#SBATCH --error=%s/%s-%%A_%%a.err\n", s->out_dir, job_name(s));
    fprintf(f,
            "\n"
            "# The array index is the shard index. Pinning N keeps a rerun of one index\n"
            "# (which SLURM sees as an array of 1 task) on shard K of %d.\n"
            "export " FR_SHARD_COUNT_ENV "=%d\n"
            "exec ",
            s->shards, s->shards);
    sh_word(f, s->fitrun);
    fputs(" run --profile ", f);
    sh_word(f, s->profile);
    fputs(" --jobs ", f);
    sh_word(f, s->jobs);
    fputs(" --shard auto --out ", f);
    char out[RESULTS_PATH_MAX];
    results_pattern(s, out);
    sh_word(f, out);
    fputs(" --resume\n", f);
    return finish(f, err, errlen);
}

/* HTCondor ---------------------------------------------------------------- */

int fr_submit_condor(FILE *f, const struct fr_submit *s, char *err, size_t errlen)
{
    if (check_common(s, err, errlen) < 0 || check_sbatch_value("job name", s->job_name, err, errlen) < 0)
        return -1;
    const char *vals[][2] = {
        {"fitrun binary", s->fitrun},     {"profile", s->profile},           {"jobs file", s->jobs},
        {"output directory", s->out_dir}, {"working directory", s->workdir}, {"job name", s->job_name}};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (check_condor_value(vals[i][0], vals[i][1], err, errlen) < 0)
            return -1;
    if (strpbrk(s->fitrun, " \t")) {
        fr_seterr(err, errlen, "fitrun binary '%s' contains a blank, which HTCondor's executable cannot carry",
                  s->fitrun);
        return -1;
    }
    fprintf(f,
            "# fitrun %s: %d shard(s) of the jobs below, one HTCondor job each; each job\n"
            "# sizes its pool to what it was given (request_cpus, the machine ad).\n"
            "#   submit:         condor_submit THIS_FILE\n"
            "#   rerun shard K:  ",
            FITRUN_VERSION, s->shards);
    sh_word(f, s->fitrun);
    fputs(" run --profile ", f);
    sh_word(f, s->profile);
    fputs(" --jobs ", f);
    sh_word(f, s->jobs);
    fprintf(f, " --shard K/%d --out %s/results.K.jsonl --resume\n", s->shards, s->out_dir);
    merge_hint(f, s);
    fprintf(f, "batch_name     = %s\n", job_name(s));
    fputs("universe       = vanilla\n", f);
    fprintf(f, "executable     = %s\n", s->fitrun);
    fputs("arguments      = \"run --profile ", f);
    condor_word(f, s->profile);
    fputs(" --jobs ", f);
    condor_word(f, s->jobs);
    fprintf(f, " --shard $(Process)/%d --out ", s->shards);
    char out[RESULTS_PATH_MAX];
    results_pattern(s, out);
    condor_word(f, out);
    fputs(" --resume\"\n", f);
    fprintf(f, "initialdir     = %s\n", s->workdir);
    fprintf(f, "request_cpus   = %d\n", s->cpus_per_task);
    if (s->mem_bytes) {
        if (s->mem_origin)
            fprintf(f, "# memory (MiB): %s\n", s->mem_origin);
        fprintf(f, "request_memory = %llu\n",
                (unsigned long long)(s->mem_bytes / (1024 * 1024) + (s->mem_bytes % (1024 * 1024) != 0)));
    } else {
        fputs("# no request_memory: the profile sets no memory_per_worker; the pool's default applies\n", f);
    }
    if (s->time_s)
        fprintf(f, "allowed_execute_duration = %llu\n", (unsigned long long)s->time_s);
    fprintf(f, "output         = %s/%s-$(Cluster)_$(Process).out\n", s->out_dir, job_name(s));
    fprintf(f, "error          = %s/%s-$(Cluster)_$(Process).err\n", s->out_dir, job_name(s));
    fprintf(f, "log            = %s/%s-$(Cluster).log\n", s->out_dir, job_name(s));
    fputs("# The jobs file and the results are read and written in place: a shared\n"
          "# filesystem, as with SLURM; and the submitter's environment, as sbatch does.\n"
          "should_transfer_files = NO\n"
          "getenv         = true\n",
          f);
    fprintf(f, "queue %d\n", s->shards);
    return finish(f, err, errlen);
}
