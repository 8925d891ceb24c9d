/* test_submit.c — the SLURM array script and the HTCondor submit
 * description of `fitrun submit`, and time limits. The SLURM script is
 * also run by bash (with a stand-in for fitrun that prints its argv) so
 * that its quoting is checked by a real shell, not by string compares. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/scaleout.h"

static const struct fr_submit BASE = {
    .fitrun = "/opt/fitrun/bin/fitrun",
    .profile = "/home/u/profiles/arc.ini",
    .jobs = "/home/u/jobs.jsonl",
    .out_dir = "/scratch/u/run1",
    .workdir = "/home/u",
    .shards = 3,
    .cpus_per_task = 4,
    .mem_bytes = 2048ull << 20,
    .mem_origin = "profile memory_per_worker 512.0 MiB x 4 worker(s) (one per CPU)",
};

static char *gen(int (*fn)(FILE *, const struct fr_submit *, char *, size_t), const struct fr_submit *s, char *err,
                 size_t errlen, int *rc)
{
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    *rc = fn(f, s, err, errlen);
    assert_int_equal(fclose(f), 0);
    return text;
}

static char *gen_ok(int (*fn)(FILE *, const struct fr_submit *, char *, size_t), const struct fr_submit *s)
{
    char err[512] = "";
    int rc;
    char *text = gen(fn, s, err, sizeof err, &rc);
    if (rc != 0)
        fail_msg("generation failed: %s", err);
    return text;
}

/* `needle` must be a whole line of text. */
static void has_line(const char *text, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = text; (p = strstr(p, needle)); p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return;
    fail_msg("line '%s' not in:\n%s", needle, text);
}

static void lacks(const char *text, const char *needle)
{
    if (strstr(text, needle))
        fail_msg("'%s' unexpectedly in:\n%s", needle, text);
}

/* SLURM ------------------------------------------------------------------- */

static void test_slurm_script(void **state)
{
    (void)state;
    struct fr_submit s = BASE;
    s.time_s = 90 * 60;
    s.partition = "debug";
    char *t = gen_ok(fr_submit_slurm, &s);
    assert_true(!strncmp(t, "#!/bin/bash\n", 12));
    has_line(t, "#SBATCH --array=0-2");
    has_line(t, "#SBATCH --ntasks=1");
    has_line(t, "#SBATCH --cpus-per-task=4");
    has_line(t, "#SBATCH --mem=2G");
    has_line(t, "# memory: profile memory_per_worker 512.0 MiB x 4 worker(s) (one per CPU)");
    has_line(t, "#SBATCH --time=1:30:00");
    has_line(t, "#SBATCH --partition=debug");
    has_line(t, "#SBATCH --job-name=fitrun");
    has_line(t, "#SBATCH --chdir=/home/u");
    has_line(t, "#SBATCH --output=/scratch/u/run1/fitrun-%A_%a.out");
    has_line(t, "#SBATCH --error=/scratch/u/run1/fitrun-%A_%a.err");
    has_line(t, "export FITRUN_SHARD_COUNT=3");
    has_line(t, "exec /opt/fitrun/bin/fitrun run --profile /home/u/profiles/arc.ini --jobs /home/u/jobs.jsonl "
                "--shard auto --out '/scratch/u/run1/results.{shard}.jsonl' --resume");
    has_line(t, "#   merge:          /opt/fitrun/bin/fitrun merge --jobs /home/u/jobs.jsonl --shards 3 "
                "/scratch/u/run1/results.*.jsonl > merged.jsonl");
    /* sbatch reads #SBATCH lines only before the first command */
    assert_true(strstr(t, "#SBATCH --error") < strstr(t, "export "));
    free(t);
}

static void test_slurm_optional_lines(void **state)
{
    (void)state;
    struct fr_submit s = BASE;
    s.mem_bytes = 0;
    s.mem_origin = NULL;
    s.shards = 1;
    s.cpus_per_task = 1;
    s.job_name = "arc-eval";
    char *t = gen_ok(fr_submit_slurm, &s);
    has_line(t, "#SBATCH --array=0-0");
    has_line(t, "#SBATCH --cpus-per-task=1");
    has_line(t, "#SBATCH --job-name=arc-eval");
    has_line(t, "#SBATCH --output=/scratch/u/run1/arc-eval-%A_%a.out");
    lacks(t, "#SBATCH --mem");
    lacks(t, "#SBATCH --time");
    lacks(t, "#SBATCH --partition");
    has_line(t, "# no --mem: the profile sets no memory_per_worker; the cluster's default applies");
    free(t);
    /* MiB rounding up, days in the time limit */
    s.mem_bytes = 1536ull * 1024 * 1024 + 1;
    s.time_s = 2 * 86400 + 3600 + 61;
    t = gen_ok(fr_submit_slurm, &s);
    has_line(t, "#SBATCH --mem=1537M");
    has_line(t, "#SBATCH --time=2-01:01:01");
    free(t);
}

static void test_slurm_refuses(void **state)
{
    (void)state;
    const struct {
        const char *field, *value, *needle;
    } cases[] = {
        {"jobs", "jobs.jsonl", "jobs file 'jobs.jsonl' is not an absolute path"},
        {"profile", "", "is not an absolute path"},
        {"out", "/scratch/my run", "contains a blank"},
        {"out", "/scratch/100%", "contains '%'"},
        {"out", "/scratch/r[1]", "glob character"},
        {"partition", "gpu a100", "partition 'gpu a100' contains ' '"},
        {"jobs", "/a/b\nc", "newline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct fr_submit s = BASE;
        if (!strcmp(cases[i].field, "jobs"))
            s.jobs = cases[i].value;
        else if (!strcmp(cases[i].field, "profile"))
            s.profile = cases[i].value;
        else if (!strcmp(cases[i].field, "out"))
            s.out_dir = cases[i].value;
        else
            s.partition = cases[i].value;
        char err[512] = "";
        int rc;
        free(gen(fr_submit_slurm, &s, err, sizeof err, &rc));
        assert_int_equal(rc, -1);
        if (!strstr(err, cases[i].needle))
            fail_msg("case %zu: '%s' lacks '%s'", i, err, cases[i].needle);
    }
    struct fr_submit s = BASE;
    s.shards = 0;
    char err[256];
    int rc;
    free(gen(fr_submit_slurm, &s, err, sizeof err, &rc));
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "shards must be at least 1"));
}

/* The script, run by bash with a fitrun stand-in: the argv fitrun gets. */
static void test_slurm_script_quoting_in_bash(void **state)
{
    (void)state;
    char dir[] = "/tmp/fitrun-test-shard-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char fake[128], script[128], cmd[512];
    snprintf(fake, sizeof fake, "%s/fitrun", dir);
    snprintf(script, sizeof script, "%s/job.sbatch", dir);
    FILE *f = fopen(fake, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nfor a; do printf '[%s]\\n' \"$a\"; done\necho \"count=$FITRUN_SHARD_COUNT\"\n", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(fake, 0755), 0);

    struct fr_submit s = BASE;
    s.fitrun = fake;
    s.profile = "/home/u/my profiles/it's $HOME.ini";
    s.jobs = "/home/u/jobs `x`.jsonl";
    char *t = gen_ok(fr_submit_slurm, &s);
    f = fopen(script, "w");
    assert_non_null(f);
    fputs(t, f);
    assert_int_equal(fclose(f), 0);
    free(t);

    snprintf(cmd, sizeof cmd, "bash %s", script);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char out[2048];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_string_equal(out, "[run]\n[--profile]\n[/home/u/my profiles/it's $HOME.ini]\n[--jobs]\n"
                             "[/home/u/jobs `x`.jsonl]\n[--shard]\n[auto]\n[--out]\n"
                             "[/scratch/u/run1/results.{shard}.jsonl]\n[--resume]\ncount=3\n");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* HTCondor ---------------------------------------------------------------- */

static void test_condor_description(void **state)
{
    (void)state;
    struct fr_submit s = BASE;
    s.time_s = 3600;
    char *t = gen_ok(fr_submit_condor, &s);
    has_line(t, "universe       = vanilla");
    has_line(t, "executable     = /opt/fitrun/bin/fitrun");
    has_line(t, "arguments      = \"run --profile /home/u/profiles/arc.ini --jobs /home/u/jobs.jsonl "
                "--shard $(Process)/3 --out /scratch/u/run1/results.{shard}.jsonl --resume\"");
    has_line(t, "initialdir     = /home/u");
    has_line(t, "request_cpus   = 4");
    has_line(t, "request_memory = 2048");
    has_line(t, "allowed_execute_duration = 3600");
    has_line(t, "output         = /scratch/u/run1/fitrun-$(Cluster)_$(Process).out");
    has_line(t, "error          = /scratch/u/run1/fitrun-$(Cluster)_$(Process).err");
    has_line(t, "log            = /scratch/u/run1/fitrun-$(Cluster).log");
    has_line(t, "should_transfer_files = NO");
    /* queue is the last command: everything above applies to the N jobs */
    size_t len = strlen(t);
    assert_true(len > 8 && !strcmp(t + len - 8, "queue 3\n"));
    free(t);
}

static void test_condor_quoting_and_refusals(void **state)
{
    (void)state;
    struct fr_submit s = BASE;
    s.profile = "/home/u/my profile's.ini";
    s.jobs = "/home/u/say \"hi\".jsonl";
    s.mem_bytes = 0;
    char *t = gen_ok(fr_submit_condor, &s);
    /* new-syntax arguments: blanks or ' -> '...' with ' doubled; " doubled */
    has_line(t, "arguments      = \"run --profile '/home/u/my profile''s.ini' --jobs '/home/u/say \"\"hi\"\".jsonl' "
                "--shard $(Process)/3 --out /scratch/u/run1/results.{shard}.jsonl --resume\"");
    lacks(t, "request_memory =");
    lacks(t, "allowed_execute_duration");
    free(t);

    s = BASE;
    s.jobs = "/home/u/$(Cluster).jsonl";
    char err[256] = "";
    int rc;
    free(gen(fr_submit_condor, &s, err, sizeof err, &rc));
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "HTCondor would expand"));
}

/* time limits ---------------------------------------------------------------- */

static void test_time_limit(void **state)
{
    (void)state;
    const struct {
        const char *s;
        uint64_t want; /* 0 = refused */
    } cases[] = {
        {"30", 1800},
        {"0:45", 45},
        {"1:30:00", 5400},
        {"2-0", 172800},
        {"1-2:03", 93780},
        {"1-02:03:04", 93784},
        {"90m", 5400},
        {"2h", 7200},
        {"1.5h", 5400},
        {"45s", 45},
        {"1500ms", 2},
        {"0", 0},
        {"", 0},
        {"1.5", 0},
        {"1:2:3:4", 0},
        {"a", 0},
        {"1-", 0},
        {"-5", 0},
        {"1:", 0},
        {"0s", 0},
        {"1234567890", 0},
        {"365-0", 31536000},
        {"8760h", 31536000},
        {"365-00:00:01", 0},
        {"8761h", 0},
        {"525601", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 999;
        int r = fr_parse_time_limit(cases[i].s, &v);
        if (cases[i].want == 0) {
            if (r != -1)
                fail_msg("'%s' accepted as %llu", cases[i].s, (unsigned long long)v);
        } else if (r != 0 || v != cases[i].want) {
            fail_msg("'%s': r=%d v=%llu, want %llu", cases[i].s, r, (unsigned long long)v,
                     (unsigned long long)cases[i].want);
        }
    }
    assert_int_equal(fr_parse_time_limit(NULL, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slurm_script),       cmocka_unit_test(test_slurm_optional_lines),
        cmocka_unit_test(test_slurm_refuses),      cmocka_unit_test(test_slurm_script_quoting_in_bash),
        cmocka_unit_test(test_condor_description), cmocka_unit_test(test_condor_quoting_and_refusals),
        cmocka_unit_test(test_time_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
