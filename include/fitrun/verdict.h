/* fitrun/verdict.h — what the result of a finished job says: its status
 * (from a runtime's raw facts and what the pool did to the job), whether
 * the job ran to its end, and `passed`. Each of these rules has its one
 * implementation in launcher/verdict/verdict.c; runtimes report facts, they
 * do not decide.
 *
 * `passed` is Python's `==` between a prediction's (normalised) output and
 * the job's expected value, both JSON: true == 1 == 1.0, false == 0,
 * integers and floats compared exactly (2**53 + 1 != 2.0**53), null equal
 * only to null, strings by code points, arrays element-wise, objects by
 * key set and values. Only fitrun holds `expected`, so only fitrun scores. */
#ifndef FITRUN_VERDICT_H
#define FITRUN_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/resource.h>

#include "fitrun/jsonscan.h"
#include "fitrun/runtime.h"
#include "fitrun/status.h"

/* ---- the outcome of a process (classify.c) ---- */

/* The facts of a finished process: what the sandbox reports (wait status,
 * rusage, a supervisor's violation record) and what the parent and the job
 * itself add. */
struct fr_classify_in {
    int wstatus;             /* from wait4 */
    const struct rusage *ru; /* may be NULL */
    uint64_t cpu_limit_ms;   /* 0 = none */
    bool wall_expired;       /* the parent killed it for wall time */
    bool output_exceeded;    /* the parent killed it for output */
    int violation_nr;        /* from fr_report_read / fr_notify_read (a supervisor's record,
                                   which the job cannot write), -1 = none */
    bool memory_hint;        /* the job itself reported an allocation failure (MemoryError, ENOMEM) */
    bool oom_killed;         /* a memory cgroup reported an OOM kill */
};

struct fr_outcome {
    enum fr_status status; /* never invalid or crash: those are the pool's */
    int exit_code;         /* -1 when killed by a signal */
    int signal;            /* 0 when exited */
    enum fr_timeout_kind timeout;
    char syscall[40];     /* violation: syscall name (fr_syscall_name), else "" */
    char signal_name[16]; /* "SIGSEGV" (fr_signal_name), else "" */
};

/* The first matching rule wins: output_limit (the parent's kill), timeout
 * wall, violation, memory (an OOM kill), timeout cpu (SIGXCPU, or SIGKILL
 * at the hard limit), memory (the job's own report), ok/error by exit
 * code, signal. docs/sandbox.md gives the rules and the ones deliberately
 * left out. */
void fr_classify(const struct fr_classify_in *in, struct fr_outcome *out);

/* ---- the verdict of a job (verdict.c) ---- */

/* Did the job run to its end (status ok or error)? Only then is `passed`
 * reported: when the sandbox or the runtime ended it (memory, timeout,
 * violation, signal, output_limit, crash), outputs are partial, and a
 * MemoryError caught in time and an OOM kill of the same prediction must
 * give the same (status, passed). */
bool fr_ran_to_end(enum fr_status status);

/* Python's `expected == output` on the JSON texts of two values: expected
 * a value of a job line (read with FR_JSON_LINE: no object has a key
 * twice), output checked with fr_json_value(FR_JSON_STRICT). An output
 * object with a duplicate key is equal to nothing (no Python dict has
 * one). */
bool fr_py_equal(struct fr_json_span expected, struct fr_json_span output);

/* The `passed` member of a result as JSON text (malloc'd, NUL-terminated,
 * length in *len), for a job whose `expected` is an array (its text):
 *   null  when the job did not run to its end, or has no outputs;
 *   else  one entry per expected value: null where it is null, false where
 *         there is no output, else fr_py_equal.
 * outputs: a checked JSON array (or NULL). NULL on ENOMEM. */
char *fr_passed_json(struct fr_json_span expected, const char *outputs, size_t outputs_len, enum fr_status status,
                     size_t *len);

/* What the pool adds to a runtime's raw facts. */
struct fr_verdict_in {
    const struct fr_raw *raw;
    enum fr_abort_reason aborted; /* 0, or why the pool aborted the job */
    bool oom_killed;              /* the memory cgroup counted an OOM kill for it (oom.c) */
    uint64_t cpu_ms;              /* CPU the job used, as reported */
    uint64_t cpu_limit_ms, wall_limit_ms, memory_limit, output_cap; /* 0 = none */
    const char *oom_counter; /* the file oom_kill was read from, for the message; "" = unknown */
};

#define FR_VERDICT_MSG_MAX 1024

struct fr_verdict {
    enum fr_status status;
    enum fr_timeout_kind timeout;
    struct fr_outcome oc;         /* exit code, signal, syscall (fr_classify) */
    char type[64];                /* error_type unless the runtime named one */
    char msg[FR_VERDICT_MSG_MAX]; /* error_message unless the runtime gave one */
};

/* Did a job that used used_ms of CPU spend its budget (a non-zero
 * budget_ms)? At least 90% of it counts: rusage lags the kernel's CPU
 * timers by up to several percent (measured: an ITIMER_PROF of 1.1 s fires
 * with rusage between 0.99 and 1.10 s on a loaded VM). */
bool fr_cpu_budget_spent(uint64_t used_ms, uint64_t budget_ms);

/* Does a job that ran to its end (status ok or error) with used_ms of CPU,
 * every process of it that was counted included, become a CPU timeout?
 * Yes once it used its whole budget: the pool's kill watches only some of
 * a job's processes while it runs (and none that finished and were waited
 * for), so a job that spread its work over processes can end before the
 * kill; a job over its budget is never `ok`. */
bool fr_verdict_over_cpu_budget(enum fr_status status, uint64_t used_ms, uint64_t budget_ms);

/* A SIGKILL that fitrun did not send (not the pool's wall or CPU kill, not
 * the runtime's CPU, wall or output kill): only such a death can be an OOM
 * kill worth asking the memory cgroup about. */
bool fr_verdict_unexplained_kill(const struct fr_raw *raw, enum fr_abort_reason aborted);

/* The job's own memory cgroup (fitrun/cgroup.h) counted `kills` OOM kills
 * of its processes while it ran: it is an OOM kill of the job unless the
 * job still exited 0 (a child it started was killed, and it coped). */
bool fr_verdict_cgroup_oom(const struct fr_raw *raw, uint64_t kills);
/* Could an OOM kill counted by the job's memory cgroup change its verdict
 * (fr_verdict_cgroup_oom)? Not when it finished and exited 0: the pool
 * then does not read the count. */
bool fr_verdict_oom_possible(const struct fr_raw *raw);

/* Status, timeout kind, error type and message of a finished job
 * (raw->kind == FR_RAW_FINISHED). Precedence: fr_classify of the wait
 * status and the kills; a CPU kill by the pool or the runtime is a CPU
 * timeout unless the job did something worse first; a CPU-limit signal
 * (raw->cpu_timer) counts as a timeout only when the job really used its
 * budget (else it sent the signal itself: `signal`); a
 * runtime's own word on how a job that exited by itself ended
 * (raw->status) wins. */
void fr_verdict_judge(const struct fr_verdict_in *in, struct fr_verdict *v);

#endif
