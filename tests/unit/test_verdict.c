/* test_verdict.c — the verdict unit (include/fitrun/verdict.h): `passed`
 * is Python's ==, only for jobs that ran to their end; a CPU-limit signal
 * is a timeout only when the budget was spent. The generated corpus against
 * Python itself is tests/cli/python_scoring.bats. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/verdict.h"

static bool eq(const char *expected, const char *output)
{
    assert_true(fr_json_whole(expected, strlen(expected), 100, FR_JSON_STRICT));
    assert_true(fr_json_whole(output, strlen(output), 100, FR_JSON_STRICT));
    return fr_py_equal((struct fr_json_span){expected, strlen(expected)},
                       (struct fr_json_span){output, strlen(output)});
}

static void test_python_equality(void **state)
{
    (void)state;
    /* bools are ints, ints and floats compare exactly */
    assert_true(eq("1", "true"));
    assert_true(eq("true", "1.0"));
    assert_true(eq("0", "false"));
    assert_true(eq("[[0,1],[1,0]]", "[[false,true],[true,false]]")); /* arc-dsl's F/T grids */
    assert_false(eq("2", "true"));
    assert_true(eq("0", "-0.0"));
    assert_true(eq("9007199254740992", "9007199254740992.0"));
    assert_false(eq("9007199254740993", "9007199254740992.0")); /* 2**53 + 1 != 2.0**53 */
    assert_true(eq("-9223372036854775808", "-9.223372036854776e18"));
    assert_false(eq("9223372036854775807", "9.223372036854776e18"));
    assert_true(eq("0.1", "1e-1"));
    assert_false(eq("0.1", "0.10000000000000002"));
    assert_true(eq("1e16", "10000000000000000"));
    /* short decimals (divided exactly) and long ones (strtod) alike */
    assert_true(eq("[1, 2.5, -0.125]", "[1.0, 2.50, -0.1250]"));
    assert_true(eq("3", "3.000000000000000"));
    assert_true(eq("123456789012345", "123456789012345.0"));
    assert_true(eq("0.30000000000000004", "0.3000000000000000444"));
    assert_false(eq("0.3", "0.30000000000000004"));
    assert_true(eq("0.1", "0.1000000000000000055511151231257827"));
    assert_false(eq("[[1,2],[3,4]]", "[[1,2],[3,4.000000001]]"));
    /* None only equals None */
    assert_true(eq("null", "null"));
    assert_false(eq("null", "0"));
    assert_false(eq("0", "null"));
    assert_false(eq("[]", "null"));
    /* strings by code points, whatever the escapes */
    assert_true(eq("\"a\\u0000b\"", "\"a\\u0000b\""));
    assert_true(eq("\"\\u00e9\"", "\"\xc3\xa9\""));
    assert_false(eq("\"e\xcc\x81\"", "\"\xc3\xa9\"")); /* no normalisation */
    assert_false(eq("\"a\\u0000b\"", "\"a\\u0000c\""));
    assert_false(eq("\"1\"", "1"));
    /* lists element-wise, dicts by key set and values */
    assert_false(eq("[1,2]", "[1,2,3]"));
    assert_false(eq("[1,2,3]", "[1,2]"));
    assert_true(eq("{\"a\":1,\"b\":[2]}", "{\"b\":[2.0],\"a\":true}"));
    assert_false(eq("{\"a\":1,\"b\":2}", "{\"a\":1}"));
    assert_false(eq("{\"a\":1}", "{\"a\":1,\"b\":2}"));
    assert_false(eq("{\"a\":1,\"b\":2}", "{\"a\":1,\"a\":1}")); /* a duplicate key: no dict */
    assert_false(eq("[]", "{}"));
    /* the same text: equal, as Python's == of what json.loads makes of it */
    assert_true(eq("[[0,1],[1,0]]", "[[0,1],[1,0]]"));
    assert_true(eq("{\"a\":[1,2.5e3,\"x\"],\"b\":null}", "{\"a\":[1,2.5e3,\"x\"],\"b\":null}"));
    assert_true(eq(" [1] ", "[1]"));
    assert_false(eq("[[0,1],[1,0]]", "[[0,1],[1,1]]"));
    assert_true(eq("{}", "{}"));
    /* whitespace, nesting, and a mismatch early in a long array */
    assert_true(eq(" [ [1, 2] , [3] ] ", "[[1,2],[3]]"));
    assert_false(eq("[[1,2],[3]]", "[[1,3],[3]]"));
    assert_false(eq("[[1,2],[3]]", "[[1],[3]]"));
    assert_false(eq("[[1],[3]]", "[[1,2],[3]]"));
    assert_false(eq("[1,[2,[3]]]", "[1,[2,[3,4]]]"));
    assert_true(eq("{\"a\":{\"b\":[1,{\"c\":null}]},\"\\u00e9\":\"x\"}",
                   "{\"\xc3\xa9\":\"x\",\"a\":{\"b\":[1.0,{\"c\":null}]}}"));
    assert_false(eq("{\"a\":1,\"b\":2}", "{\"a\":1,\"c\":2}"));
    assert_false(eq("[{\"a\":1}]", "[{\"a\":1,\"a\":1}]"));
    assert_true(eq("1.5", "1.5e0"));
    assert_false(eq("true", "\"true\""));
    assert_false(eq("null", "false"));
}

static char *passed(const char *expected, const char *outputs, enum fr_status st)
{
    size_t len;
    char *p = fr_passed_json((struct fr_json_span){expected, strlen(expected)}, outputs, outputs ? strlen(outputs) : 0,
                             st, &len);
    assert_non_null(p);
    assert_int_equal(strlen(p), len);
    return p;
}

static void test_passed(void **state)
{
    (void)state;
    char *p = passed("[[[1]], null, 3, 4]", "[[[true]], 5, null]", FR_STATUS_ERROR);
    assert_string_equal(p, "[true,null,false,false]"); /* no output for the last one */
    free(p);
    p = passed("[1]", "[1]", FR_STATUS_MEMORY); /* did not run to its end */
    assert_string_equal(p, "null");
    free(p);
    p = passed("[1]", NULL, FR_STATUS_OK);
    assert_string_equal(p, "null");
    free(p);
    assert_true(fr_ran_to_end(FR_STATUS_OK) && fr_ran_to_end(FR_STATUS_ERROR));
    assert_false(fr_ran_to_end(FR_STATUS_TIMEOUT) || fr_ran_to_end(FR_STATUS_CRASH) ||
                 fr_ran_to_end(FR_STATUS_SIGNAL) || fr_ran_to_end(FR_STATUS_OUTPUT_LIMIT));
}

static struct fr_verdict judge(int wstatus, bool cpu_timer, uint64_t cpu_ms, enum fr_abort_reason aborted)
{
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_FINISHED;
    raw.wstatus = wstatus;
    raw.cpu_timer = cpu_timer;
    struct fr_verdict_in in = {.raw = &raw, .aborted = aborted, .cpu_ms = cpu_ms, .cpu_limit_ms = 1000};
    struct fr_verdict v;
    fr_verdict_judge(&in, &v);
    return v;
}

static void test_cpu_limit_signals(void **state)
{
    (void)state;
    struct fr_verdict v = judge(SIGXCPU, true, 5, 0); /* sent to itself */
    assert_int_equal(v.status, FR_STATUS_SIGNAL);
    assert_string_equal(v.type, "SIGXCPU");
    v = judge(SIGXCPU, true, 2000, 0); /* RLIMIT_CPU */
    assert_int_equal(v.status, FR_STATUS_TIMEOUT);
    assert_int_equal(v.timeout, FR_TIMEOUT_CPU);
    v = judge(SIGXCPU, false, 0, 0); /* a runtime that does not say its rusage holds the job's CPU */
    assert_int_equal(v.status, FR_STATUS_TIMEOUT);
    v = judge(SIGPROF, true, 950, 0); /* the runtime's timer; rusage lags it */
    assert_int_equal(v.status, FR_STATUS_TIMEOUT);
    v = judge(SIGPROF, true, 10, 0);
    assert_int_equal(v.status, FR_STATUS_SIGNAL);
    v = judge(SIGKILL, false, 1001, FR_ABORT_CPU); /* the pool's own kill */
    assert_int_equal(v.status, FR_STATUS_TIMEOUT);
    assert_string_equal(v.type, "CPUTimeout");
    assert_string_equal(v.oc.signal_name, "SIGKILL");
    assert_true(fr_cpu_budget_spent(900, 1000) && !fr_cpu_budget_spent(899, 1000) && !fr_cpu_budget_spent(5, 0));
}

/* A job that ran to its end after using its whole CPU budget (work spread
 * over processes the pool's kill did not watch) is a CPU timeout, exit 0
 * or not; below the budget, and without one, it is what it exited with. */
static void test_over_cpu_budget(void **state)
{
    (void)state;
    struct fr_verdict v = judge(0, false, 3200, 0);
    assert_int_equal(v.status, FR_STATUS_TIMEOUT);
    assert_int_equal(v.timeout, FR_TIMEOUT_CPU);
    assert_string_equal(v.type, "CPUTimeout");
    v = judge(3 << 8, false, 1000, 0);
    assert_int_equal(v.status, FR_STATUS_TIMEOUT);
    v = judge(0, false, 999, 0);
    assert_int_equal(v.status, FR_STATUS_OK);
    v = judge(3 << 8, false, 999, 0);
    assert_int_equal(v.status, FR_STATUS_ERROR);
    v = judge(SIGSEGV, false, 5000, 0); /* died of its own signal: what it is */
    assert_int_equal(v.status, FR_STATUS_SIGNAL);
    assert_false(fr_verdict_over_cpu_budget(FR_STATUS_OK, 5000, 0));
    assert_false(fr_verdict_over_cpu_budget(FR_STATUS_MEMORY, 5000, 1000));
    assert_true(fr_verdict_over_cpu_budget(FR_STATUS_ERROR, 1000, 1000));
}

/* An OOM kill counted in the job's own cgroup is the job's, whatever
 * killed signal its process shows, unless it still exited 0 (it coped with
 * a child's kill); no count, no OOM kill. */
static void test_cgroup_oom(void **state)
{
    (void)state;
    struct fr_raw raw = {.kind = FR_RAW_FINISHED, .wstatus = SIGKILL};
    assert_true(fr_verdict_cgroup_oom(&raw, 1));
    assert_false(fr_verdict_cgroup_oom(&raw, 0));
    raw.wstatus = 1 << 8; /* exit 1: a child of it was killed */
    assert_true(fr_verdict_cgroup_oom(&raw, 2));
    raw.wstatus = 0; /* exit 0 */
    assert_false(fr_verdict_cgroup_oom(&raw, 1));
    raw = (struct fr_raw){.kind = FR_RAW_CRASHED, .wstatus = SIGKILL};
    assert_false(fr_verdict_cgroup_oom(&raw, 1));
}

/* A job whose child the OOM killer killed in its cgroup, and which then
 * exited non-zero, is an OOM kill too, said as such: not MemoryLimit. */
static void test_child_oom_kill(void **state)
{
    (void)state;
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_FINISHED;
    raw.wstatus = 1 << 8;
    struct fr_verdict_in in = {
        .raw = &raw, .oom_killed = true, .memory_limit = 1 << 20, .oom_counter = "/cg/memory.oom_control"};
    struct fr_verdict v;
    fr_verdict_judge(&in, &v);
    assert_int_equal(v.status, FR_STATUS_MEMORY);
    assert_string_equal(v.type, "OOMKill");
    assert_non_null(strstr(v.msg, "a process of the job was killed by the out-of-memory killer"));
    assert_non_null(strstr(v.msg, "/cg/memory.oom_control"));
    raw.wstatus = SIGKILL;
    fr_verdict_judge(&in, &v);
    assert_string_equal(v.type, "OOMKill");
    assert_non_null(strstr(v.msg, "killed by the out-of-memory killer (SIGKILL;"));
}

/* The pool reads a job's OOM count only where it can change the verdict:
 * exactly where fr_verdict_cgroup_oom can say yes. */
static void test_oom_possible(void **state)
{
    (void)state;
    const int statuses[] = {0, 1 << 8, SIGKILL, SIGSEGV, 0x7f};
    const enum fr_raw_kind kinds[] = {FR_RAW_FINISHED, FR_RAW_CRASHED, FR_RAW_REJECTED};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t i = 0; i < sizeof statuses / sizeof *statuses; i++) {
            struct fr_raw raw = {.kind = kinds[k], .wstatus = statuses[i]};
            assert_int_equal(fr_verdict_oom_possible(&raw), fr_verdict_cgroup_oom(&raw, 1));
            assert_false(fr_verdict_cgroup_oom(&raw, 0));
        }
    struct fr_raw ok = {.kind = FR_RAW_FINISHED, .wstatus = 0};
    assert_false(fr_verdict_oom_possible(&ok));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_python_equality),   cmocka_unit_test(test_passed),
        cmocka_unit_test(test_cpu_limit_signals), cmocka_unit_test(test_cgroup_oom),
        cmocka_unit_test(test_oom_possible),      cmocka_unit_test(test_over_cpu_budget),
        cmocka_unit_test(test_child_oom_kill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
