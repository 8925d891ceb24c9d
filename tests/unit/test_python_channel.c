/* test_python_channel.c — a Python worker's channel messages as fitrun
 * decodes them (launcher/runtime/python/channel.c): which are well formed,
 * and that an EXITED whose usage no kernel reports (a time or size below
 * 0) is not, nor a STARTED with a CPU base below 0; an EXITED's
 * replacement reason (isolation = reuse); then the raw facts py_collect
 * makes of an EXITED and a report, and of a job fitrun killed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "../../launcher/runtime/python/internal.h"

/* fitrun_runtime.py's MSG_EXITED: 'E', u8 flags (none here), 2 pad, u32
 * seq, i32 wstatus, i32 violation_nr, i64 utime_us, stime_us, max_rss_kb,
 * wall_us, fork_us. */
static void exited(char m[FR_PY_MSG_EXITED_LEN], uint32_t seq, int32_t ws, const int64_t v[5])
{
    int32_t nr = -1;
    memset(m, 0, FR_PY_MSG_EXITED_LEN);
    m[0] = 'E';
    memcpy(m + 4, &seq, 4);
    memcpy(m + 8, &ws, 4);
    memcpy(m + 12, &nr, 4);
    memcpy(m + 16, v, 5 * sizeof *v);
}

static void test_lengths(void **state)
{
    (void)state;
    struct py_msg d;
    char m[FR_PY_MSG_EXITED_LEN + PY_REPLACED_MAX + 1] = {'S', 0, 0, 0, 7, 0, 0, 0, 42, 0, 0, 0};
    int64_t base = 1500000;
    memcpy(m + 12, &base, sizeof base);
    py_msg_decode(m, FR_PY_MSG_STARTED_LEN, &d);
    assert_true(d.well_formed);
    assert_int_equal(d.seq, 7);
    assert_int_equal(d.pid, 42);
    assert_int_equal(d.cpu_base_ns, 1500000);
    py_msg_decode(m, FR_PY_MSG_STARTED_LEN - 1, &d);
    assert_false(d.well_formed);
    base = -1;
    memcpy(m + 12, &base, sizeof base);
    py_msg_decode(m, FR_PY_MSG_STARTED_LEN, &d);
    assert_false(d.well_formed);
    memcpy(m, "F\0\0\0\7\0\0\0why", 11);
    py_msg_decode(m, 11, &d);
    assert_true(d.well_formed);
    assert_int_equal(d.why_len, 3);
    assert_memory_equal(d.why, "why", 3);
    py_msg_decode(m, 0, &d);
    assert_false(d.well_formed);
    assert_int_equal(d.seq, 0);

    const int64_t ok[5] = {12000, 3000, 20480, 15000, 900};
    exited(m, 9, 0, ok);
    py_msg_decode(m, FR_PY_MSG_EXITED_LEN, &d);
    assert_true(d.well_formed);
    assert_int_equal(d.seq, 9);
    assert_int_equal(d.facts.utime_us, 12000);
    assert_int_equal(d.facts.max_rss_kb, 20480);
    assert_string_equal(d.facts.replaced, "");
    memcpy(m + FR_PY_MSG_EXITED_LEN, "max_predictions: 3", 18);
    py_msg_decode(m, FR_PY_MSG_EXITED_LEN + 18, &d);
    assert_true(d.well_formed);
    assert_string_equal(d.facts.replaced, "max_predictions: 3");
    memset(m + FR_PY_MSG_EXITED_LEN, 'x', PY_REPLACED_MAX + 1);
    py_msg_decode(m, FR_PY_MSG_EXITED_LEN + PY_REPLACED_MAX, &d);
    assert_true(d.well_formed);
    assert_int_equal(strlen(d.facts.replaced), PY_REPLACED_MAX);
    py_msg_decode(m, FR_PY_MSG_EXITED_LEN + PY_REPLACED_MAX + 1, &d);
    assert_false(d.well_formed);
}

static void test_exited_below_zero(void **state)
{
    (void)state;
    char m[FR_PY_MSG_EXITED_LEN];
    struct py_msg d;
    for (int field = 0; field < 5; field++) {
        int64_t v[5] = {12000, 3000, 20480, 15000, 900};
        v[field] = field % 2 ? INT64_MIN : -1;
        exited(m, 9, 0, v);
        py_msg_decode(m, FR_PY_MSG_EXITED_LEN, &d);
        if (d.well_formed)
            fail_msg("an EXITED with field %d = %lld is taken", field, (long long)v[field]);
    }
}

static void test_collect(void **state)
{
    (void)state;
    char m[FR_PY_MSG_EXITED_LEN];
    const int64_t v[5] = {1500000, 250000, 20480, 15000, 900};
    exited(m, 1, 0, v);
    struct py_msg d;
    py_msg_decode(m, FR_PY_MSG_EXITED_LEN, &d);
    assert_true(d.well_formed);

    struct pyrt py = {.result_cap = 1u << 20};
    struct fr_runtime rt = {.priv = &py};
    struct fr_job job;
    const char *type;
    char err[256];
    static const char line[] = "{\"id\":\"j\",\"code\":\"\",\"inputs\":[[1]]}";
    assert_int_equal(fr_job_parse(line, strlen(line), 1, &job, &type, err, sizeof err), 0);
    struct pyslot s = {.chan = -1, .pidfd = -1, .job_w = -1, .child_fd = -1, .exited = true, .job = &job};
    py_stream_open(&s.out, -1, 65536);
    py_stream_open(&s.err, -1, 65536);
    py_stream_open(&s.rep, -1, py.result_cap + PY_REPORT_SLACK);
    char report[] = "{\"outputs\":[[1,2]],\"error_type\":null,\"error_message\":null,\"error_line\":null,"
                    "\"memory\":false}";
    s.rep.buf = report;
    s.rep.len = strlen(report);
    s.facts = d.facts;
    struct fr_raw raw;
    char msg[512];
    py_collect(&rt, &s, &raw, msg, sizeof msg);
    assert_int_equal(raw.status, FR_STATUS_OK);
    assert_int_equal(raw.ru.ru_utime.tv_sec, 1);
    assert_int_equal(raw.ru.ru_utime.tv_usec, 500000);
    assert_int_equal(raw.ru.ru_stime.tv_usec, 250000);
    assert_int_equal(raw.ru.ru_maxrss, 20480);
    assert_int_equal(raw.outputs_len, strlen("[[1,2]]"));
    assert_memory_equal(raw.outputs, "[[1,2]]", raw.outputs_len);
    /* A fork child never lives on; under reuse the process does, unless
     * its worker replaced it (then the pool may kill its cgroup). */
    assert_false(raw.lives_on);
    free(s.message);
    s.message = NULL;
    py.reuse = true;
    py_collect(&rt, &s, &raw, msg, sizeof msg);
    assert_true(raw.lives_on);
    free(s.message);
    s.message = NULL;
    strcpy(s.facts.replaced, "max_predictions: 3 predictions run");
    py_collect(&rt, &s, &raw, msg, sizeof msg);
    assert_false(raw.lives_on);
    assert_string_equal(raw.replaced, "max_predictions: 3 predictions run");
    assert_false(s.fresh);
    free(s.message);
    s.message = NULL;
    /* fitrun killed it at a limit and its worker said it lives on (the
     * kill came after "done"): it does not, and the next RUN says FRESH. */
    s.facts.replaced[0] = '\0';
    s.kill = PY_KILL_WALL;
    py_collect(&rt, &s, &raw, msg, sizeof msg);
    assert_false(raw.lives_on);
    assert_true(raw.wall_exceeded);
    assert_string_equal(raw.replaced, "killed: fitrun killed it at the job's wall time limit");
    assert_true(s.fresh);
    free(s.message);
    /* Not under fork isolation: a fork child is gone anyway. */
    s.message = NULL;
    s.fresh = false;
    s.facts.replaced[0] = '\0';
    py.reuse = false;
    py_collect(&rt, &s, &raw, msg, sizeof msg);
    assert_null(raw.replaced);
    assert_false(s.fresh);
    free(s.message);
    s.message = NULL;
    fr_job_clear(&job);
}

/* The report of a child that exited 0: its status, and its error type
 * when it is no report (NoResult) or a sandbox failure. */
static enum fr_status judge_report(const char *line, const char *report, bool applied, const char **type)
{
    struct fr_job job;
    const char *jt;
    char err[256], msg[512];
    assert_int_equal(fr_job_parse(line, strlen(line), 1, &job, &jt, err, sizeof err), 0);
    struct pyrt py = {.result_cap = 1u << 20};
    struct fr_runtime rt = {.priv = &py};
    struct pyslot s = {.chan = -1, .pidfd = -1, .job_w = -1, .child_fd = -1, .exited = true, .job = &job};
    py_stream_open(&s.out, -1, 65536);
    py_stream_open(&s.err, -1, 65536);
    py_stream_open(&s.rep, -1, py.result_cap + PY_REPORT_SLACK);
    s.rep.buf = (char *)report;
    s.rep.len = strlen(report);
    s.facts.violation_nr = -1;
    s.facts.applied = applied;
    struct fr_raw raw;
    py_collect(&rt, &s, &raw, msg, sizeof msg);
    enum fr_status st = (enum fr_status)raw.status;
    *type = raw.error_type && !strcmp(raw.error_type, "NoResult")       ? "NoResult"
            : raw.error_type && !strcmp(raw.error_type, "SandboxError") ? "SandboxError"
                                                                        : NULL;
    free(s.message);
    fr_job_clear(&job);
    return st;
}

/* One output per input, or fewer with an error: what the runtime writes.
 * A sandbox failure only from a child its worker says did not apply it. */
static void test_report_shape(void **state)
{
    (void)state;
    static const char two[] = "{\"id\":\"j\",\"code\":\"\",\"inputs\":[1,2]}";
    const char *type;
    assert_int_equal(judge_report(two, "{\"outputs\":[1,2]}", true, &type), FR_STATUS_OK);
    assert_int_equal(judge_report(two, "{\"outputs\":[1,2,3]}", true, &type), FR_STATUS_CRASH);
    assert_string_equal(type, "NoResult");
    assert_int_equal(judge_report(two, "{\"outputs\":[1]}", true, &type), FR_STATUS_CRASH);
    assert_string_equal(type, "NoResult");
    assert_int_equal(judge_report(two, "{\"outputs\":[]}", true, &type), FR_STATUS_CRASH);
    assert_int_equal(judge_report(two, "{\"outputs\":[],\"error_type\":\"SyntaxError\"}", true, &type),
                     FR_STATUS_ERROR);
    assert_int_equal(judge_report(two, "{\"outputs\":[1,null],\"error_type\":\"IndexError\"}", true, &type),
                     FR_STATUS_ERROR);
    assert_int_equal(judge_report(two, "{\"outputs\":[1,2,3],\"error_type\":\"IndexError\"}", true, &type),
                     FR_STATUS_CRASH);
    assert_int_equal(judge_report(two, "{\"outputs\":[null],\"memory\":true}", true, &type), FR_STATUS_MEMORY);
    assert_int_equal(judge_report(two, "{\"sandbox_error\":1}", false, &type), FR_STATUS_CRASH);
    assert_string_equal(type, "SandboxError");
    assert_int_equal(judge_report(two, "{\"sandbox_error\":1}", true, &type), FR_STATUS_CRASH);
    assert_string_equal(type, "NoResult");
}

/* EXITED's flags byte: APPLIED is read, the rest of the message as before. */
static void test_exited_applied(void **state)
{
    (void)state;
    char m[FR_PY_MSG_EXITED_LEN];
    const int64_t v[5] = {1, 2, 3, 4, 5};
    struct py_msg d;
    exited(m, 3, 0, v);
    py_msg_decode(m, FR_PY_MSG_EXITED_LEN, &d);
    assert_true(d.well_formed);
    assert_false(d.facts.applied);
    m[1] = FR_PY_EXITED_APPLIED;
    py_msg_decode(m, FR_PY_MSG_EXITED_LEN, &d);
    assert_true(d.well_formed);
    assert_true(d.facts.applied);
    assert_int_equal(d.seq, 3);
    assert_int_equal(d.facts.fork_us, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lengths),      cmocka_unit_test(test_exited_below_zero), cmocka_unit_test(test_collect),
        cmocka_unit_test(test_report_shape), cmocka_unit_test(test_exited_applied),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
