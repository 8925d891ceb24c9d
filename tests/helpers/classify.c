/* classify — the outcome fitrun's verdict gives a process's facts, for
 * tests that gather the facts themselves (tests/corpus/run_python_corpus.py
 * drives the sandbox library through ctypes; the classification is the
 * verdict unit's, fr_classify, not a copy of it).
 *
 *   classify WSTATUS VIOLATION_NR CPU_LIMIT_MS CPU_US WALL_EXPIRED MEMORY_HINT
 *
 * prints one line: "ok", "error", "violation socket", "signal SIGSYS",
 * "timeout cpu", "timeout wall", "memory". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "fitrun/common.h"
#include "fitrun/verdict.h"

static long long num(const char *s)
{
    int64_t v;
    if (fr_parse_i64(s, &v) < 0)
        fr_die(2, "classify: '%s' is not a number", s);
    return (long long)v;
}

int main(int argc, char **argv)
{
    if (argc != 7)
        fr_die(2, "usage: classify WSTATUS VIOLATION_NR CPU_LIMIT_MS CPU_US WALL_EXPIRED MEMORY_HINT");
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    long long cpu_us = num(argv[4]);
    ru.ru_utime.tv_sec = (time_t)(cpu_us / 1000000);
    ru.ru_utime.tv_usec = (suseconds_t)(cpu_us % 1000000);
    struct fr_classify_in in = {
        .wstatus = (int)num(argv[1]),
        .ru = &ru,
        .violation_nr = (int)num(argv[2]),
        .cpu_limit_ms = (uint64_t)num(argv[3]),
        .wall_expired = num(argv[5]) != 0,
        .memory_hint = num(argv[6]) != 0,
    };
    struct fr_outcome out;
    fr_classify(&in, &out);
    const char *detail = out.status == FR_STATUS_TIMEOUT     ? fr_timeout_kind_name(out.timeout)
                         : out.status == FR_STATUS_VIOLATION ? out.syscall
                         : out.status == FR_STATUS_SIGNAL    ? out.signal_name
                                                             : "";
    printf("%s%s%s\n", fr_status_name(out.status), *detail ? " " : "", detail);
    return 0;
}
