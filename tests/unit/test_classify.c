/* test_classify.c — outcome classification (launcher/verdict/classify.c): every status, the
 * precedence between them, and the rules we deliberately do not have. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "fitrun/verdict.h"

/* wait(2) status words, built the way the kernel does. */
static int exited(int code)
{
    return (code & 0xff) << 8;
}

static int killed(int sig)
{
    return sig & 0x7f;
}

static struct rusage cpu(long ms)
{
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    ru.ru_utime.tv_sec = ms / 1000 * 3 / 4; /* split between user and system */
    ru.ru_stime.tv_sec = ms / 1000 - ru.ru_utime.tv_sec;
    ru.ru_utime.tv_usec = (ms % 1000) * 1000;
    return ru;
}

static struct fr_outcome classify(struct fr_classify_in in)
{
    struct fr_outcome out;
    memset(&out, 0xab, sizeof out); /* fr_classify must set every field */
    fr_classify(&in, &out);
    return out;
}

static void test_ok_and_error(void **state)
{
    (void)state;
    struct fr_outcome o = classify((struct fr_classify_in){.wstatus = exited(0), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_OK);
    assert_int_equal(o.exit_code, 0);
    assert_int_equal(o.signal, 0);
    assert_int_equal(o.timeout, FR_TIMEOUT_NONE);
    assert_string_equal(o.syscall, "");
    assert_string_equal(o.signal_name, "");

    o = classify((struct fr_classify_in){.wstatus = exited(3), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_ERROR);
    assert_int_equal(o.exit_code, 3);
    /* 128+n is just an exit code: not a signal. */
    o = classify((struct fr_classify_in){.wstatus = exited(137), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_ERROR);
    assert_int_equal(o.exit_code, 137);
}

static void test_signal(void **state)
{
    (void)state;
    struct fr_outcome o = classify((struct fr_classify_in){.wstatus = killed(SIGSEGV), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_SIGNAL);
    assert_int_equal(o.exit_code, -1);
    assert_int_equal(o.signal, SIGSEGV);
    assert_string_equal(o.signal_name, "SIGSEGV");
    /* RLIMIT_FSIZE: SIGXFSZ stays a signal (output_limit is the parent's). */
    o = classify((struct fr_classify_in){.wstatus = killed(SIGXFSZ), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_SIGNAL);
    assert_string_equal(o.signal_name, "SIGXFSZ");
    o = classify((struct fr_classify_in){.wstatus = killed(SIGRTMIN + 2), .violation_nr = -1});
    assert_string_equal(o.signal_name, "SIGRTMIN+2");
}

static void test_violation(void **state)
{
    (void)state;
    struct fr_outcome o = classify((struct fr_classify_in){.wstatus = killed(SIGSYS), .violation_nr = 41});
    assert_int_equal(o.status, FR_STATUS_VIOLATION);
    assert_string_equal(o.syscall, "socket");
    assert_string_equal(o.signal_name, "SIGSYS");
    /* A supervisor's record is the violation, whatever the wait status
     * (the Python worker kills its child with SIGKILL). */
    o = classify((struct fr_classify_in){.wstatus = killed(SIGKILL), .violation_nr = 41});
    assert_int_equal(o.status, FR_STATUS_VIOLATION);
    assert_string_equal(o.syscall, "socket");
    o = classify((struct fr_classify_in){.wstatus = killed(SIGKILL), .violation_nr = FR_VIOLATION_FOREIGN});
    assert_int_equal(o.status, FR_STATUS_VIOLATION);
    assert_string_equal(o.syscall, "foreign_abi");
    /* SIGSYS without a record is a signal: any job can raise it. */
    o = classify((struct fr_classify_in){.wstatus = killed(SIGSYS), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_SIGNAL);
    assert_string_equal(o.syscall, "");
    assert_string_equal(o.signal_name, "SIGSYS");
}

static void test_cpu_timeout(void **state)
{
    (void)state;
    struct rusage ru = cpu(1010);
    struct fr_outcome o = classify(
        (struct fr_classify_in){.wstatus = killed(SIGXCPU), .ru = &ru, .cpu_limit_ms = 1000, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_TIMEOUT);
    assert_int_equal(o.timeout, FR_TIMEOUT_CPU);
    assert_string_equal(fr_timeout_kind_name(o.timeout), "cpu");
    /* SIGXCPU ignored by the job: SIGKILL at the hard limit, time >= soft. */
    ru = cpu(2005);
    o = classify(
        (struct fr_classify_in){.wstatus = killed(SIGKILL), .ru = &ru, .cpu_limit_ms = 1000, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_TIMEOUT);
    assert_int_equal(o.timeout, FR_TIMEOUT_CPU);
    /* 1500 ms was rounded up to a 2 s soft limit: 1.6 s of CPU and a
     * SIGKILL is somebody else's kill, not the CPU limit. */
    ru = cpu(1600);
    o = classify(
        (struct fr_classify_in){.wstatus = killed(SIGKILL), .ru = &ru, .cpu_limit_ms = 1500, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_SIGNAL);
    assert_string_equal(o.signal_name, "SIGKILL");
    /* Without rusage or a limit, a SIGKILL is only a signal. */
    o = classify((struct fr_classify_in){.wstatus = killed(SIGKILL), .cpu_limit_ms = 1000, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_SIGNAL);
}

static void test_memory(void **state)
{
    (void)state;
    struct fr_outcome o =
        classify((struct fr_classify_in){.wstatus = killed(SIGKILL), .oom_killed = true, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_MEMORY);
    o = classify((struct fr_classify_in){.wstatus = exited(1), .memory_hint = true, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_MEMORY);
    assert_int_equal(o.exit_code, 1);
    /* Caught its MemoryError and succeeded anyway: ok. */
    o = classify((struct fr_classify_in){.wstatus = exited(0), .memory_hint = true, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_OK);
    /* We never guess memory from a signal alone. */
    o = classify((struct fr_classify_in){.wstatus = killed(SIGSEGV), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_SIGNAL);
    o = classify((struct fr_classify_in){.wstatus = killed(SIGKILL), .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_SIGNAL);
}

static void test_parent_flags_first(void **state)
{
    (void)state;
    struct rusage ru = cpu(5000);
    struct fr_outcome o = classify((struct fr_classify_in){.wstatus = killed(SIGKILL),
                                                           .ru = &ru,
                                                           .cpu_limit_ms = 1000,
                                                           .wall_expired = true,
                                                           .output_exceeded = true,
                                                           .oom_killed = true,
                                                           .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_OUTPUT_LIMIT);
    assert_int_equal(o.timeout, FR_TIMEOUT_NONE);
    o = classify((struct fr_classify_in){.wstatus = killed(SIGKILL),
                                         .ru = &ru,
                                         .cpu_limit_ms = 1000,
                                         .wall_expired = true,
                                         .oom_killed = true,
                                         .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_TIMEOUT);
    assert_int_equal(o.timeout, FR_TIMEOUT_WALL);
    assert_string_equal(fr_timeout_kind_name(o.timeout), "wall");
    /* Violation before memory and cpu. */
    o = classify((struct fr_classify_in){
        .wstatus = killed(SIGSYS), .ru = &ru, .cpu_limit_ms = 1000, .oom_killed = true, .violation_nr = 56});
    assert_int_equal(o.status, FR_STATUS_VIOLATION);
    assert_string_equal(o.syscall, "clone");
    /* OOM kill before the CPU inference. */
    o = classify((struct fr_classify_in){
        .wstatus = killed(SIGKILL), .ru = &ru, .cpu_limit_ms = 1000, .oom_killed = true, .violation_nr = -1});
    assert_int_equal(o.status, FR_STATUS_MEMORY);
}

static void test_status_names(void **state)
{
    (void)state;
    assert_string_equal(fr_status_name(FR_STATUS_OK), "ok");
    assert_string_equal(fr_status_name(FR_STATUS_ERROR), "error");
    assert_string_equal(fr_status_name(FR_STATUS_TIMEOUT), "timeout");
    assert_string_equal(fr_status_name(FR_STATUS_MEMORY), "memory");
    assert_string_equal(fr_status_name(FR_STATUS_VIOLATION), "violation");
    assert_string_equal(fr_status_name(FR_STATUS_SIGNAL), "signal");
    assert_string_equal(fr_status_name(FR_STATUS_OUTPUT_LIMIT), "output_limit");
    assert_string_equal(fr_status_name(FR_STATUS_INVALID), "invalid");
    assert_string_equal(fr_status_name(FR_STATUS_CRASH), "crash");
    assert_string_equal(fr_status_name((enum fr_status)77), "unknown");
    assert_null(fr_timeout_kind_name(FR_TIMEOUT_NONE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ok_and_error), cmocka_unit_test(test_signal), cmocka_unit_test(test_violation),
        cmocka_unit_test(test_cpu_timeout),  cmocka_unit_test(test_memory), cmocka_unit_test(test_parent_flags_first),
        cmocka_unit_test(test_status_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
