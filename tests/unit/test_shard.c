/* test_shard.c — shard selection, `--shard auto` from SLURM array
 * variables, the {shard} placeholder, and fr_merge on real files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/scaleout.h"

/* K/N -------------------------------------------------------------------- */

/* s (with env, for auto) parses to shard k of n; the shard, for more checks. */
static struct fr_shard parse_ok(const char *s, char *const *env, int k, int n)
{
    struct fr_shard sh = {0};
    char err[256] = "";
    int r = fr_shard_parse(s, env, &sh, err, sizeof err);
    if (r != 0)
        fail_msg("'%s' refused: %s", s, err);
    assert_true(sh.enabled);
    assert_int_equal(sh.index, k);
    assert_int_equal(sh.count, n);
    return sh;
}

static void parse_bad(const char *s, char *const *env, const char *needle)
{
    struct fr_shard sh = {.enabled = false, .index = 77, .count = 77};
    char err[512] = "";
    assert_int_equal(fr_shard_parse(s, env, &sh, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("'%s': message '%s' lacks '%s'", s ? s : "(null)", err, needle);
    assert_false(sh.enabled); /* nothing half-filled */
}

static void test_parse_k_of_n(void **state)
{
    (void)state;
    parse_ok("0/1", NULL, 0, 1);
    parse_ok("2/3", NULL, 2, 3);
    parse_ok("0/4", NULL, 0, 4);
    parse_ok("999/1000", NULL, 999, 1000);
    parse_bad("3/3", NULL, "K must be below N");
    parse_bad("5/3", NULL, "0..2");
    parse_bad("-1/3", NULL, "K must be");
    parse_bad("1/0", NULL, "N must be");
    parse_bad("1/-2", NULL, "N must be");
    parse_bad("a/3", NULL, "K must be");
    parse_bad("1/x", NULL, "N must be");
    parse_bad("1/", NULL, "N must be");
    parse_bad("/3", NULL, "K must be");
    parse_bad("1/2/3", NULL, "expected K/N");
    parse_bad("3", NULL, "expected K/N");
    parse_bad("", NULL, "expected K/N");
    parse_bad("1.5/3", NULL, "K must be");
    parse_bad("1/99999999999", NULL, "N must be");
    parse_bad(NULL, NULL, "missing value");
}

/* FR_SHARD_COUNT_MAX: every shard number of a run that parses has at most
 * nine digits, so the file it writes names its shard (fr_shard_from_filename). */
static void test_parse_at_the_limit(void **state)
{
    (void)state;
    parse_ok("999999999/1000000000", NULL, 999999999, 1000000000);
    parse_bad("0/1000000001", NULL, "N must be a whole number from 1 to 1000000000");
    parse_bad("1111111114/2012112222", NULL, "N must be");
    parse_bad("1000000000/1000000000", NULL, "K must be a whole number from 0 to 999999999");
    char *pinned_ok[] = {"SLURM_ARRAY_TASK_ID=999999999", "FITRUN_SHARD_COUNT=1000000000", NULL};
    struct fr_shard sh = parse_ok("auto", pinned_ok, 999999999, 1000000000);
    char *pinned_big[] = {"SLURM_ARRAY_TASK_ID=0", "FITRUN_SHARD_COUNT=1000000001", NULL};
    parse_bad("auto", pinned_big, "FITRUN_SHARD_COUNT='1000000001' is not a whole number from 1 to 1000000000");
    char *count_big[] = {"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=2000000000", NULL};
    parse_bad("auto", count_big, "SLURM_ARRAY_TASK_COUNT='2000000000' is not a whole number from 1 to 1000000000");
    char *id_big[] = {"SLURM_ARRAY_TASK_ID=1000000001", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=1", NULL};
    parse_bad("auto", id_big, "SLURM_ARRAY_TASK_ID='1000000001'");

    char name[64];
    assert_int_equal(fr_shard_expand("results.{shard}.jsonl", &sh, name, sizeof name), 0);
    assert_int_equal(fr_shard_from_filename(name), 999999999);
}

/* auto ---------------------------------------------------------------------- */

static void test_auto_from_array(void **state)
{
    (void)state;
    /* sbatch --array=0-2: task 1 */
    char *env[] = {"PATH=/bin",
                   "SLURM_ARRAY_TASK_ID=1",
                   "SLURM_ARRAY_TASK_MIN=0",
                   "SLURM_ARRAY_TASK_MAX=2",
                   "SLURM_ARRAY_TASK_COUNT=3",
                   "SLURM_ARRAY_TASK_STEP=1",
                   NULL};
    parse_ok("auto", env, 1, 3);

    /* --array=5-8: task 7 is shard 2 of 4 */
    char *env2[] = {"SLURM_ARRAY_TASK_ID=7", "SLURM_ARRAY_TASK_MIN=5", "SLURM_ARRAY_TASK_COUNT=4", NULL};
    parse_ok("auto", env2, 2, 4);

    /* --array=0-6:3 (0, 3, 6): task 6 is shard 2 of 3 */
    char *env3[] = {"SLURM_ARRAY_TASK_ID=6",    "SLURM_ARRAY_TASK_MIN=0",  "SLURM_ARRAY_TASK_MAX=6",
                    "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_STEP=3", NULL};
    parse_ok("auto", env3, 2, 3);
}

static void test_auto_pinned_count(void **state)
{
    (void)state;
    /* `sbatch --array=2 script` rerun of shard 2 of 3: SLURM says 1 task from 2. */
    char *env[] = {"SLURM_ARRAY_TASK_ID=2",
                   "SLURM_ARRAY_TASK_MIN=2",
                   "SLURM_ARRAY_TASK_MAX=2",
                   "SLURM_ARRAY_TASK_COUNT=1",
                   "SLURM_ARRAY_TASK_STEP=1",
                   "FITRUN_SHARD_COUNT=3",
                   NULL};
    parse_ok("auto", env, 2, 3);
    /* ... and a list rerun (--array=0,2) is fine too when pinned */
    char *env2[] = {"SLURM_ARRAY_TASK_ID=0",    "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=2",
                    "SLURM_ARRAY_TASK_COUNT=2", "FITRUN_SHARD_COUNT=3",   NULL};
    parse_ok("auto", env2, 0, 3);

    char *beyond[] = {"SLURM_ARRAY_TASK_ID=3", "FITRUN_SHARD_COUNT=3", NULL};
    parse_bad("auto", beyond, "SLURM_ARRAY_TASK_ID=3 is not a shard of FITRUN_SHARD_COUNT=3");
    char *garbage[] = {"SLURM_ARRAY_TASK_ID=1", "FITRUN_SHARD_COUNT=three", NULL};
    parse_bad("auto", garbage, "FITRUN_SHARD_COUNT='three'");
    char *zero[] = {"SLURM_ARRAY_TASK_ID=0", "FITRUN_SHARD_COUNT=0", NULL};
    parse_bad("auto", zero, "FITRUN_SHARD_COUNT='0'");
}

static void test_auto_errors(void **state)
{
    (void)state;
    char *none[] = {"PATH=/bin", "SLURM_JOB_ID=5", NULL};
    parse_bad("auto", none, "not inside a SLURM array task");
    parse_bad("auto", NULL, "not inside a SLURM array task");
    char *no_count[] = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_MIN=0", NULL};
    parse_bad("auto", no_count, "SLURM_ARRAY_TASK_COUNT is not set");
    char *no_min[] = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=3", NULL};
    parse_bad("auto", no_min, "SLURM_ARRAY_TASK_MIN is not set");
    char *bad_id[] = {"SLURM_ARRAY_TASK_ID=1x", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=3", NULL};
    parse_bad("auto", bad_id, "SLURM_ARRAY_TASK_ID='1x' is not a whole number");
    char *empty_id[] = {"SLURM_ARRAY_TASK_ID=", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=3", NULL};
    parse_bad("auto", empty_id, "SLURM_ARRAY_TASK_ID=''");
    char *zero_count[] = {"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=0", NULL};
    parse_bad("auto", zero_count, "SLURM_ARRAY_TASK_COUNT='0'");
    /* --array=1,3,7 (as SLURM 22.05 reports it): ID-MIN is no shard number */
    char *list[] = {"SLURM_ARRAY_TASK_ID=3",    "SLURM_ARRAY_TASK_MIN=1",  "SLURM_ARRAY_TASK_MAX=7",
                    "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_STEP=1", NULL};
    parse_bad("auto", list, "not one evenly spaced range");
    char *below[] = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_MIN=2", "SLURM_ARRAY_TASK_COUNT=3", NULL};
    parse_bad("auto", below, "not in the array");
    char *off_step[] = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=3",
                        "SLURM_ARRAY_TASK_STEP=2", NULL};
    parse_bad("auto", off_step, "not in the array");
    char *beyond[] = {"SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=3", NULL};
    parse_bad("auto", beyond, "beyond the array");
}

static void test_auto_in_and_out_of_arrays(void **state)
{
    (void)state;
    struct fr_shard sh = {.enabled = false};
    char err[256];
    char *none[] = {"HOME=/root", NULL};
    assert_int_equal(fr_shard_auto(none, &sh, err, sizeof err), 0);
    assert_int_equal(fr_shard_auto(NULL, &sh, err, sizeof err), 0);
    char *in[] = {"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=2", NULL};
    assert_int_equal(fr_shard_auto(in, &sh, err, sizeof err), 1);
    assert_true(sh.enabled);
    assert_int_equal(sh.index, 0);
    assert_int_equal(sh.count, 2);
    /* In an array task with nonsense: an error that says why. */
    char *bad[] = {"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_COUNT=x", NULL};
    assert_int_equal(fr_shard_auto(bad, &sh, err, sizeof err), -1);
    assert_non_null(strstr(err, "SLURM_ARRAY_TASK_COUNT='x'"));
    /* a prefix of the name is not the name */
    char *prefix[] = {"SLURM_ARRAY_TASK_IDX=1", NULL};
    assert_int_equal(fr_shard_auto(prefix, &sh, err, sizeof err), 0);
}

/* selection ------------------------------------------------------------------ */

static void test_selects(void **state)
{
    (void)state;
    struct fr_shard off = {.enabled = false};
    for (long l = 1; l <= 10; l++)
        assert_true(fr_shard_selects(&off, l));
    assert_true(fr_shard_selects(NULL, 3));
    /* 3 shards: each line in exactly one, round robin from shard 0 at line 1 */
    for (long l = 1; l <= 30; l++) {
        int owners = 0;
        for (int k = 0; k < 3; k++) {
            struct fr_shard s = {.enabled = true, .index = k, .count = 3};
            if (fr_shard_selects(&s, l)) {
                owners++;
                assert_int_equal(k, (l - 1) % 3);
            }
        }
        assert_int_equal(owners, 1);
    }
    struct fr_shard s1 = {.enabled = true, .index = 1, .count = 4};
    assert_false(fr_shard_selects(&s1, 1));
    assert_true(fr_shard_selects(&s1, 2));
    assert_true(fr_shard_selects(&s1, 6));
    assert_false(fr_shard_selects(&s1, 7));
    assert_false(fr_shard_selects(&s1, 0));
    assert_false(fr_shard_selects(&s1, -3));
    struct fr_shard one = {.enabled = true, .index = 0, .count = 1};
    assert_true(fr_shard_selects(&one, 1));
    assert_true(fr_shard_selects(&one, 12345));
    assert_int_equal(fr_shard_of_line(1, 3), 0);
    assert_int_equal(fr_shard_of_line(5, 3), 1);
    assert_int_equal(fr_shard_of_line(0, 3), -1);
    assert_int_equal(fr_shard_of_line(4, 0), -1);
}

/* placeholders ---------------------------------------------------------------- */

static void test_expand(void **state)
{
    (void)state;
    struct fr_shard s = {.enabled = true, .index = 12, .count = 16};
    char buf[64];
    assert_int_equal(fr_shard_expand("out/results.{shard}.jsonl", &s, buf, sizeof buf), 0);
    assert_string_equal(buf, "out/results.12.jsonl");
    assert_int_equal(fr_shard_expand("{shard}/r-{shard}.jsonl", &s, buf, sizeof buf), 0);
    assert_string_equal(buf, "12/r-12.jsonl");
    assert_int_equal(fr_shard_expand("plain.jsonl", &s, buf, sizeof buf), 0);
    assert_string_equal(buf, "plain.jsonl");
    assert_int_equal(fr_shard_expand("{shard", &s, buf, sizeof buf), 0);
    assert_string_equal(buf, "{shard");
    assert_int_equal(fr_shard_expand("{{shard}}", &s, buf, sizeof buf), 0);
    assert_string_equal(buf, "{12}");
    assert_int_equal(fr_shard_expand("", &s, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    /* without sharding a run is shard 0 of 1 */
    struct fr_shard off = {.enabled = false};
    assert_int_equal(fr_shard_expand("r.{shard}.jsonl", &off, buf, sizeof buf), 0);
    assert_string_equal(buf, "r.0.jsonl");
    assert_int_equal(fr_shard_expand("r.{shard}.jsonl", NULL, buf, sizeof buf), 0);
    assert_string_equal(buf, "r.0.jsonl");
    /* the exact fit works, one byte less does not (and leaves no half path) */
    char small[10]; /* "r.12.json" + NUL */
    assert_int_equal(fr_shard_expand("r.{shard}.json", &s, small, sizeof small), 0);
    assert_string_equal(small, "r.12.json");
    assert_int_equal(fr_shard_expand("r.{shard}.jsonl", &s, small, sizeof small), -1);
    assert_string_equal(small, "");
    assert_int_equal(fr_shard_expand("r.{shard}", &s, small, 4), -1);
    assert_int_equal(fr_shard_expand("x", &s, small, 0), -1);
}

static void test_from_filename(void **state)
{
    (void)state;
    assert_int_equal(fr_shard_from_filename("results.3.jsonl"), 3);
    assert_int_equal(fr_shard_from_filename("/a/b.c/results.12.jsonl"), 12);
    assert_int_equal(fr_shard_from_filename("out/7.jsonl"), 7);
    assert_int_equal(fr_shard_from_filename("r.007.jsonl"), 7);
    assert_int_equal(fr_shard_from_filename("results.jsonl"), -1);
    assert_int_equal(fr_shard_from_filename("run3.jsonl"), -1);
    assert_int_equal(fr_shard_from_filename("results.3"), -1);
    assert_int_equal(fr_shard_from_filename("/dir.3/results.jsonl"), -1);
    assert_int_equal(fr_shard_from_filename("results.1234567890.jsonl"), -1);
}

/* merge on real files ----------------------------------------------------------- */

struct tmp {
    char dir[64];
};

static void put(const struct tmp *t, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static int setup_tmp(void **state)
{
    struct tmp *t = calloc(1, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "/tmp/fitrun-test-shard-XXXXXX");
    if (!t || !mkdtemp(t->dir))
        return -1;
    *state = t;
    return 0;
}

static int teardown_tmp(void **state)
{
    struct tmp *t = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    int r = system(cmd);
    free(t);
    return r == 0 ? 0 : -1;
}

/* Run fr_merge over files of t; returns the status, *out = merged text. */
static int run_merge(const struct tmp *t, const char *jobs, const char **results, int n, int shards, char **out)
{
    char jpath[256], rpaths[8][256];
    const char *rp[8];
    snprintf(jpath, sizeof jpath, "%s/%s", t->dir, jobs);
    for (int i = 0; i < n; i++) {
        snprintf(rpaths[i], sizeof rpaths[i], "%s/%s", t->dir, results[i]);
        rp[i] = rpaths[i];
    }
    size_t len;
    FILE *f = open_memstream(out, &len);
    assert_non_null(f);
    struct fr_merge_opts o = {.jobs = jpath, .results = rp, .nresults = n, .shards = shards};
    int r = fr_merge(&o, f);
    assert_int_equal(fclose(f), 0);
    return r;
}

static const char JOBS6[] = "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n"
                            "{\"id\":\"d\"}\n{\"id\":\"e\"}\n{\"id\":\"f\"}\n";

static void test_merge_complete_in_input_order(void **state)
{
    struct tmp *t = *state;
    put(t, "jobs.jsonl", JOBS6);
    /* 2 shards: lines 1,3,5 and 2,4,6; each file in its own (completion) order */
    put(t, "results.0.jsonl",
        "{\"id\":\"e\",\"status\":\"ok\"}\n{\"id\":\"a\",\"status\":\"error\"}\n"
        "{\"id\":\"c\", \"status\": \"timeout\"}\n");
    put(t, "results.1.jsonl",
        "{\"id\":\"b\",\"status\":\"ok\"}\n{\"id\":\"f\",\"status\":\"ok\"}\n"
        "{\"id\":\"d\",\"status\":\"ok\"}\n");
    const char *res[] = {"results.1.jsonl", "results.0.jsonl"};
    char *out = NULL;
    assert_int_equal(run_merge(t, "jobs.jsonl", res, 2, 0, &out), 0);
    /* input order, bytes as written (the spaces in c's line survive) */
    assert_string_equal(out, "{\"id\":\"a\",\"status\":\"error\"}\n{\"id\":\"b\",\"status\":\"ok\"}\n"
                             "{\"id\":\"c\", \"status\": \"timeout\"}\n{\"id\":\"d\",\"status\":\"ok\"}\n"
                             "{\"id\":\"e\",\"status\":\"ok\"}\n{\"id\":\"f\",\"status\":\"ok\"}\n");
    free(out);
}

static void test_merge_duplicates_first_complete_wins(void **state)
{
    struct tmp *t = *state;
    put(t, "jobs.jsonl", "{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
    /* a: a torn copy first, then two complete ones: the first complete wins */
    put(t, "r.0.jsonl", "{\"id\":\"a\",\"status\":\"ok\",\"n\":1}\n{\"id\":\"a\",\"status\":\"ok\",\"n\":2}\n");
    put(t, "r.1.jsonl", "{\"id\":\"b\",\"status\":\"ok\"}\n{\"id\":\"a\",\"sta");
    const char *res[] = {"r.1.jsonl", "r.0.jsonl"};
    char *out = NULL;
    assert_int_equal(run_merge(t, "jobs.jsonl", res, 2, 2, &out), 0);
    assert_string_equal(out, "{\"id\":\"a\",\"status\":\"ok\",\"n\":1}\n{\"id\":\"b\",\"status\":\"ok\"}\n");
    free(out);
}

static void test_merge_missing_and_garbage(void **state)
{
    struct tmp *t = *state;
    put(t, "jobs.jsonl", "{\"id\":\"a\"}\nnot json\n\n{\"id\":\"c\"}\n{\"argv\":[]}\n{\"id\":\"e\"}\n");
    put(t, "results.0.jsonl",
        "garbage\n{\"id\":\"a\",\"status\":\"ok\"}\n[1,2]\n{\"id\":\"a\"}\n"
        "{\"id\":\"zz\",\"status\":\"ok\"}\n{\"id\":\"e\",\"st");
    put(t, "results.1.jsonl", "{\"id\":\"c\",\"status\":\"signal\"}\n");
    const char *res[] = {"results.0.jsonl", "results.1.jsonl", "results.2.jsonl" /* absent */};
    char *out = NULL;
    /* e's only result is torn: missing, status 1; the invalid lines are not missing */
    assert_int_equal(run_merge(t, "jobs.jsonl", res, 3, 0, &out), 1);
    assert_string_equal(out, "{\"id\":\"a\",\"status\":\"ok\"}\n{\"id\":\"c\",\"status\":\"signal\"}\n");
    free(out);
    /* the torn line completed (as --resume would append it) */
    put(t, "results.2.jsonl", "{\"id\":\"e\",\"status\":\"ok\"}\n");
    assert_int_equal(run_merge(t, "jobs.jsonl", res, 3, 0, &out), 0);
    assert_string_equal(out, "{\"id\":\"a\",\"status\":\"ok\"}\n{\"id\":\"c\",\"status\":\"signal\"}\n"
                             "{\"id\":\"e\",\"status\":\"ok\"}\n");
    free(out);
}

static void test_merge_unreadable_jobs(void **state)
{
    struct tmp *t = *state;
    put(t, "r.0.jsonl", "");
    const char *res[] = {"r.0.jsonl"};
    char *out = NULL;
    assert_int_equal(run_merge(t, "no-such-jobs.jsonl", res, 1, 0, &out), 125);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_k_of_n),
        cmocka_unit_test(test_auto_from_array),
        cmocka_unit_test(test_auto_pinned_count),
        cmocka_unit_test(test_auto_errors),
        cmocka_unit_test(test_auto_in_and_out_of_arrays),
        cmocka_unit_test(test_selects),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_from_filename),
        cmocka_unit_test(test_parse_at_the_limit),
        cmocka_unit_test_setup_teardown(test_merge_complete_in_input_order, setup_tmp, teardown_tmp),
        cmocka_unit_test_setup_teardown(test_merge_duplicates_first_complete_wins, setup_tmp, teardown_tmp),
        cmocka_unit_test_setup_teardown(test_merge_missing_and_garbage, setup_tmp, teardown_tmp),
        cmocka_unit_test_setup_teardown(test_merge_unreadable_jobs, setup_tmp, teardown_tmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
