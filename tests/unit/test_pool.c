/* test_pool.c — the pool in-process (so ASan sees all of it): a real exec
 * run from a file, the crash/retry policy, wall deadlines and interrupts
 * through a scripted runtime, and what --resume reads back. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/pool.h"
#include "fitrun/profile.h"
#include "fitrun/sandbox.h"
#include "../../launcher/pool/internal.h"

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("pool");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Results of a run, parsed: one JSON object per line. */
static json_t *read_results(const char *path)
{
    json_t *all = json_array();
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *o = json_loads(line, JSON_ALLOW_NUL, &je);
        if (!o)
            fail_msg("result line is not JSON (%s): %s", je.text, line);
        json_array_append_new(all, o);
    }
    free(line);
    fclose(f);
    return all;
}

static json_t *by_id(json_t *all, const char *id)
{
    size_t i;
    json_t *o, *found = NULL;
    json_array_foreach(all, i, o)
    {
        if (json_is_string(json_object_get(o, "id")) && !strcmp(json_string_value(json_object_get(o, "id")), id)) {
            if (found)
                fail_msg("two results for %s", id);
            found = o;
        }
    }
    if (!found)
        fail_msg("no result for %s", id);
    return found;
}

static const char *field(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

struct run {
    struct fr_profile profile;
    struct fr_policy *policy;
    struct fr_runtime_config cfg;
    struct fr_pool_opts o;
    char jobs[128], out[128];
};

static void run_prepare(struct run *r, const struct fr_runtime_ops *ops, const char *jobs_text, int workers)
{
    memset(r, 0, sizeof *r);
    fr_profile_defaults(&r->profile);
    r->profile.preset = FR_PRESET_NONE;
    r->profile.processes = 0;
    struct fr_policy_spec spec;
    char err[512];
    fr_profile_policy_spec(&r->profile, &spec);
    if (fr_policy_build(&spec, &r->policy, err, sizeof err) < 0)
        fail_msg("policy: %s", err);
    r->cfg = (struct fr_runtime_config){.profile = &r->profile, .policy = r->policy, .output_cap = 1 << 16};
    snprintf(r->jobs, sizeof r->jobs, "%s/jobs.jsonl", dir);
    snprintf(r->out, sizeof r->out, "%s/out.jsonl", dir);
    write_file(r->jobs, jobs_text);
    r->o = (struct fr_pool_opts){
        .workers = workers,
        .ops = ops,
        .rtcfg = &r->cfg,
        .cpu_ms = 2000,
        .wall_ms = 10000,
        .in_name = r->jobs,
        .out_name = r->out,
        .progress = FR_PROGRESS_NONE,
        .quiet = true,
    };
}

static int run_pool(struct run *r)
{
    r->o.in_fd = open(r->jobs, O_RDONLY | O_CLOEXEC);
    r->o.out_fd = open(r->out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    assert_true(r->o.in_fd >= 0 && r->o.out_fd >= 0);
    int rc = fr_pool_run(&r->o);
    close(r->o.in_fd);
    close(r->o.out_fd);
    return rc;
}

static void run_free(struct run *r)
{
    fr_policy_free(r->policy);
    fr_profile_free(&r->profile);
}

/* ---- a real exec run ------------------------------------------------------ */

static void test_exec_run(void **state)
{
    (void)state;
    struct run r;
    run_prepare(&r, &fr_runtime_exec_ops,
                "{\"id\": \"ok\", \"argv\": [\"echo\", \"hi\"]}\n"
                "\n"
                "{\"id\": \"err\", \"argv\": [\"sh\", \"-c\", \"echo bad >&2; exit 4\"]}\n"
                "{oops\n"
                "{\"id\": \"ok\", \"argv\": [\"true\"]}\n"
                "{\"id\": \"cat\", \"argv\": [\"cat\"], \"stdin\": \"in\\u0000put\"}\n"
                "{\"id\": \"noargv\", \"argv\": []}\n"
                "{\"id\": \"seg\", \"argv\": [\"sh\", \"-c\", \"kill -SEGV $$\"]}",
                2);
    assert_int_equal(run_pool(&r), 1); /* invalid lines -> 1 */
    json_t *all = read_results(r.out);
    assert_int_equal(json_array_size(all), 7); /* one per non-blank line */

    json_t *o = by_id(all, "err");
    assert_string_equal(field(o, "status"), "error");
    assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 4);
    assert_string_equal(field(o, "error_type"), "exit 4");
    assert_string_equal(field(o, "error_message"), "bad");
    assert_string_equal(field(o, "stderr"), "bad\n");
    assert_int_equal(json_integer_value(json_object_get(o, "line")), 3);
    assert_true(json_is_integer(json_object_get(o, "worker")));
    assert_true(json_is_integer(json_object_get(o, "cpu_ms")));

    o = by_id(all, "cat");
    assert_string_equal(field(o, "status"), "ok");
    assert_int_equal(json_string_length(json_object_get(o, "stdout")), 6); /* NUL kept */

    o = by_id(all, "seg");
    assert_string_equal(field(o, "status"), "signal");
    assert_string_equal(field(o, "signal"), "SIGSEGV");
    assert_true(json_is_null(json_object_get(o, "exit_code")));

    o = by_id(all, "noargv");
    assert_string_equal(field(o, "status"), "invalid");
    assert_string_equal(field(o, "error_type"), "InvalidJob");

    /* "ok" twice: the first ran, the second is a duplicate */
    size_t i, ok = 0, dup = 0, badjson = 0;
    json_array_foreach(all, i, o)
    {
        const char *t = field(o, "error_type");
        if (field(o, "id") && !strcmp(field(o, "id"), "ok"))
            (t && !strcmp(t, "DuplicateId")) ? dup++ : ok++;
        if (t && !strcmp(t, "InvalidJSON")) {
            badjson++;
            assert_int_equal(json_integer_value(json_object_get(o, "line")), 4);
            assert_true(json_is_null(json_object_get(o, "id")));
        }
    }
    assert_int_equal(ok, 1);
    assert_int_equal(dup, 1);
    assert_int_equal(badjson, 1);
    json_decref(all);
    run_free(&r);
}

/* ---- a scripted runtime --------------------------------------------------- *
 * Each job completes from an event on a pipe it writes to itself. The id
 * says what to do: "ok*" finishes, "once*" crashes on its first attempt,
 * "always*" crashes every time, "hang*" never finishes until aborted,
 * "term*" sends SIGTERM to the test process and then hangs; "oom*" dies of
 * SIGKILL after adding one to the OOM-kill counter of oom_file, "kill*"
 * dies of SIGKILL without; "memerr*" is a MemoryError (status memory, the
 * exit was clean), "fail*" an error. All of those output [0]; "ok*"
 * outputs its own id. */

struct fake_slot {
    int rd, wr;
    const struct fr_job *job;
    char outputs[64];
};
static struct fake_slot fslots[8];
static int fake_aborts[4];
static char oom_file[128]; /* a fixture memory.oom_control */
static unsigned long oom_count;

static void oom_write(unsigned long n)
{
    FILE *f = fopen(oom_file, "w");
    assert_non_null(f);
    fprintf(f, "oom_kill_disable 0\nunder_oom 0\noom_kill %lu\n", n);
    assert_int_equal(fclose(f), 0);
    oom_count = n;
}

static int fake_start(struct fr_runtime *rt, int n, char *err, size_t errlen)
{
    (void)rt;
    (void)err;
    (void)errlen;
    assert_true(n <= 8);
    memset(fake_aborts, 0, sizeof fake_aborts);
    return 0;
}

static int fake_begin(struct fr_runtime *rt, int slot, const struct fr_job *job, char *err, size_t errlen)
{
    struct fake_slot *f = &fslots[slot];
    f->job = job;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "pipe");
        return -1;
    }
    f->rd = p[0];
    f->wr = p[1];
    if (!strncmp(job->id, "term", 4))
        kill(getpid(), SIGTERM);
    if (strncmp(job->id, "hang", 4) && strncmp(job->id, "term", 4))
        assert_int_equal(write(f->wr, "x", 1), 1);
    return fr_host_watch(rt->host, f->rd, EPOLLIN, slot);
}

static void fake_done(struct fr_runtime *rt, int slot, struct fr_raw *raw)
{
    struct fake_slot *f = &fslots[slot];
    fr_host_unwatch(rt->host, f->rd);
    close(f->rd);
    close(f->wr);
    fr_host_complete(rt->host, slot, raw);
}

static void fake_event(struct fr_runtime *rt, int slot, int fd, uint32_t events)
{
    (void)fd;
    (void)events;
    struct fake_slot *f = &fslots[slot];
    char c;
    assert_int_equal(read(f->rd, &c, 1), 1);
    struct fr_raw raw;
    fr_raw_init(&raw);
    const char *id = f->job->id;
    if (!strncmp(id, "always", 6) || (!strncmp(id, "once", 4) && f->job->attempts == 1)) {
        raw.kind = FR_RAW_CRASHED;
        raw.error_message = "worker exited with status 9";
    } else if (!strncmp(id, "oom", 3) || !strncmp(id, "kill", 4) || !strncmp(id, "memerr", 6) ||
               !strncmp(id, "fail", 4)) {
        raw.kind = FR_RAW_FINISHED;
        raw.has_rusage = true;
        raw.wstatus = SIGKILL; /* "killed by SIGKILL" */
        if (!strncmp(id, "oom", 3))
            oom_write(oom_count + 1);
        if (!strncmp(id, "memerr", 6)) {
            raw.wstatus = 0;
            raw.memory_hint = true;
            raw.status = FR_STATUS_MEMORY;
            raw.error_type = "MemoryError";
        }
        if (!strncmp(id, "fail", 4)) {
            raw.wstatus = 1 << 8;
            raw.status = FR_STATUS_ERROR;
            raw.error_type = "IndexError";
        }
        raw.has_outputs = true;
        raw.outputs = "[0]";
        raw.outputs_len = 3;
    } else {
        raw.kind = FR_RAW_FINISHED;
        raw.wstatus = 0;
        raw.has_outputs = true;
        raw.outputs = f->outputs;
        raw.outputs_len = (size_t)snprintf(f->outputs, sizeof f->outputs, "[\"%s\"]", id);
    }
    fake_done(rt, slot, &raw);
}

static void fake_abort(struct fr_runtime *rt, int slot, enum fr_abort_reason why)
{
    fake_aborts[why]++;
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_FINISHED;
    raw.wstatus = SIGKILL; /* "killed by SIGKILL" */
    fake_done(rt, slot, &raw);
}

static void fake_stop(struct fr_runtime *rt)
{
    (void)rt;
}

static const struct fr_runtime_ops fake_ops = {
    .name = "fake",
    .start = fake_start,
    .check = NULL,
    .begin = fake_begin,
    .event = fake_event,
    .abort = fake_abort,
    .stop = fake_stop,
};

static void test_crash_retry_policy(void **state)
{
    (void)state;
    struct run r;
    run_prepare(&r, &fake_ops, "{\"id\": \"ok1\"}\n{\"id\": \"once1\"}\n{\"id\": \"always1\"}\n{\"id\": \"ok2\"}\n", 2);
    assert_int_equal(run_pool(&r), 0); /* every job got a result */
    json_t *all = read_results(r.out);
    assert_int_equal(json_array_size(all), 4);
    json_t *o = by_id(all, "once1");
    assert_string_equal(field(o, "status"), "ok");
    assert_int_equal(json_integer_value(json_object_get(o, "attempts")), 2);
    /* the runtime's outputs follow, verbatim */
    assert_string_equal(json_string_value(json_array_get(json_object_get(o, "outputs"), 0)), "once1");
    o = by_id(all, "always1");
    assert_string_equal(field(o, "status"), "crash");
    assert_string_equal(field(o, "error_type"), "WorkerCrash");
    assert_string_equal(field(o, "error_message"), "worker exited with status 9");
    assert_int_equal(json_integer_value(json_object_get(o, "attempts")), 2);
    o = by_id(all, "ok1");
    assert_null(json_object_get(o, "attempts"));
    json_decref(all);
    run_free(&r);
}

/* A SIGKILL the pool did not send is `memory` exactly when the fixture
 * cgroup's oom_kill counter went up; `passed` survives only for ok and
 * error results. */
static void test_oom_kills_and_passed(void **state)
{
    (void)state;
    struct run r;
    snprintf(oom_file, sizeof oom_file, "%s/memory.oom_control", dir);
    oom_write(7); /* kills before the run are not ours */
    struct fr_resources *res = calloc(1, sizeof *res);
    assert_non_null(res);
    res->cgroup[FR_CTL_MEMORY].version = 1;
    snprintf(res->cgroup[FR_CTL_MEMORY].dir, sizeof res->cgroup[FR_CTL_MEMORY].dir, "%s", dir);
    run_prepare(&r, &fake_ops,
                "{\"id\": \"kill1\", \"expected\": [1]}\n{\"id\": \"oom1\", \"expected\": [1]}\n"
                "{\"id\": \"memerr1\", \"expected\": [1]}\n{\"id\": \"fail1\", \"expected\": [1]}\n"
                "{\"id\": \"kill2\", \"expected\": [1]}\n{\"id\": \"oom2\", \"expected\": [1]}\n",
                1);
    r.o.resources = res;
    assert_int_equal(run_pool(&r), 0);
    json_t *all = read_results(r.out);
    assert_int_equal(json_array_size(all), 6);
    const char *want[][3] = {
        {"kill1", "signal", "SIGKILL"},   {"oom1", "memory", "OOMKill"},  {"memerr1", "memory", "MemoryError"},
        {"fail1", "error", "IndexError"}, {"kill2", "signal", "SIGKILL"}, {"oom2", "memory", "OOMKill"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        json_t *o = by_id(all, want[i][0]);
        assert_string_equal(field(o, "status"), want[i][1]);
        assert_string_equal(field(o, "error_type"), want[i][2]);
        json_t *passed = json_object_get(o, "passed");
        if (!strcmp(want[i][1], "error")) {
            assert_true(json_is_array(passed)); /* ran to its end: scored */
            assert_true(json_is_false(json_array_get(passed, 0)));
        } else
            assert_true(json_is_null(passed));
    }
    assert_non_null(strstr(field(by_id(all, "oom1"), "error_message"), oom_file));
    assert_string_equal(field(by_id(all, "oom1"), "signal"), "SIGKILL");
    json_decref(all);
    free(res);
    run_free(&r);
}

static void test_wall_deadline(void **state)
{
    (void)state;
    struct run r;
    run_prepare(&r, &fake_ops, "{\"id\": \"hang1\"}\n{\"id\": \"ok1\"}\n", 1);
    r.o.wall_ms = 50;
    assert_int_equal(run_pool(&r), 0);
    assert_int_equal(fake_aborts[FR_ABORT_WALL], 1);
    json_t *all = read_results(r.out);
    json_t *o = by_id(all, "hang1");
    assert_string_equal(field(o, "status"), "timeout");
    assert_string_equal(field(o, "timeout"), "wall");
    assert_string_equal(field(o, "error_type"), "WallTimeout");
    assert_true(json_integer_value(json_object_get(o, "wall_ms")) >= 50);
    assert_string_equal(field(by_id(all, "ok1"), "status"), "ok");
    json_decref(all);
    run_free(&r);
}

/* SIGTERM: stop taking jobs, kill the running one, write nothing for it. */
static void test_interrupt(void **state)
{
    (void)state;
    struct run r;
    run_prepare(&r, &fake_ops, "{\"id\": \"ok1\"}\n{\"id\": \"term1\"}\n{\"id\": \"ok2\"}\n{\"id\": \"ok3\"}\n", 1);
    assert_int_equal(run_pool(&r), 128 + SIGTERM);
    assert_int_equal(fake_aborts[FR_ABORT_INTERRUPT], 1);
    json_t *all = read_results(r.out);
    assert_int_equal(json_array_size(all), 1);
    assert_string_equal(field(json_array_get(all, 0), "id"), "ok1");
    json_decref(all);

    /* --resume runs exactly the rest */
    struct fr_resume res;
    char err[256];
    int fd = open(r.out, O_RDWR);
    assert_int_equal(fr_resume_scan(fd, r.out, &res, err, sizeof err), 0);
    close(fd);
    assert_int_equal(res.results, 1);
    /* now the "term" job is harmless: rewrite the jobs with the same ids */
    write_file(r.jobs, "{\"id\": \"ok1\"}\n{\"id\": \"ok-term1\"}\n{\"id\": \"ok2\"}\n{\"id\": \"ok3\"}\n");
    r.o.resume = &res;
    r.o.in_fd = open(r.jobs, O_RDONLY | O_CLOEXEC);
    r.o.out_fd = open(r.out, O_WRONLY | O_APPEND | O_CLOEXEC);
    assert_int_equal(fr_pool_run(&r.o), 0);
    close(r.o.in_fd);
    close(r.o.out_fd);
    all = read_results(r.out);
    assert_int_equal(json_array_size(all), 4);
    by_id(all, "ok1");
    by_id(all, "ok-term1");
    by_id(all, "ok2");
    by_id(all, "ok3");
    json_decref(all);
    fr_resume_free(&res);
    run_free(&r);
}

static void test_resume_scan(void **state)
{
    (void)state;
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/res.jsonl", dir);
    write_file(path, "{\"id\":\"a\",\"status\":\"ok\",\"line\":1}\n"
                     "{\"id\":\"a\",\"status\":\"invalid\",\"error_type\":\"DuplicateId\",\"line\":4}\n"
                     "{\"id\":null,\"status\":\"invalid\",\"line\":2}\n"
                     "garbage line\n"
                     "{\"id\":\"legacy\",\"status\":\"ok\"}\n"
                     "{\"id\":\"b\",\"status\":\"o");
    int fd = open(path, O_RDWR);
    struct fr_resume res;
    assert_int_equal(fr_resume_scan(fd, path, &res, err, sizeof err), 0);
    close(fd);
    assert_int_equal(res.results, 4);
    assert_true(fr_idset_has(res.ids, "a"));
    assert_false(fr_idset_has(res.ids, "b"));
    assert_true(fr_idset_has(res.lines, "1"));
    assert_true(fr_idset_has(res.lines, "2"));
    assert_true(fr_idset_has(res.lines, "4"));
    assert_true(fr_idset_has(res.noline, "legacy"));
    fr_resume_free(&res);
    /* the torn line is gone, the rest intact */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    char *text = malloc((size_t)st.st_size + 1);
    FILE *f = fopen(path, "r");
    assert_int_equal(fread(text, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    text[st.st_size] = '\0';
    assert_int_equal(text[st.st_size - 1], '\n');
    assert_null(strstr(text, "\"b\""));
    assert_non_null(strstr(text, "legacy"));
    free(text);
}

/* The progress total (input_count): the non-blank lines of a regular
 * file the shard selects, a blank line being one of spaces, tabs and CRs
 * only; also across its 64 KiB reads, and a last line without its
 * newline. Anything but a regular file: unknown (-1). */
static long count_text(const char *text, size_t n, const struct fr_shard *shard)
{
    char path[128];
    snprintf(path, sizeof path, "%s/count.jsonl", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    long total = input_count(fd, shard, NULL);
    close(fd);
    return total;
}

static void test_input_count(void **state)
{
    (void)state;
    struct fr_shard all = {0}, odd = {.enabled = true, .index = 0, .count = 2};
    const char *t = "{\"id\":1}\n\n  \t\r\n x \n{}";
    assert_int_equal(count_text(t, strlen(t), &all), 3);
    assert_int_equal(count_text(t, strlen(t), &odd), 2); /* lines 1, 3, 5 */
    assert_int_equal(count_text("", 0, &all), 0);
    assert_int_equal(count_text(" \n\t", 2, &all), 0);
    /* Lines longer than a read, blank or not, split at every place. */
    size_t n = 3 * (64u << 10) + 17;
    char *big = malloc(n);
    assert_non_null(big);
    memset(big, ' ', n);
    for (size_t i = 100; i < n; i += 40000)
        big[i] = '\n';
    big[70000] = 'x'; /* one line of the blank ones is not */
    big[n - 1] = 'y';
    long lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += big[i] == '\n';
    assert_int_equal(lines, 5);
    assert_int_equal(count_text(big, n, &all), 2);
    free(big);
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(input_count(p[0], &all, NULL), -1);
    close(p[0]);
    close(p[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exec_run),
        cmocka_unit_test(test_crash_retry_policy),
        cmocka_unit_test(test_oom_kills_and_passed),
        cmocka_unit_test(test_wall_deadline),
        cmocka_unit_test(test_interrupt),
        cmocka_unit_test(test_resume_scan),
        cmocka_unit_test(test_input_count),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
