/* classify.c — from the facts of a finished process (its wait status and
 * rusage, the sandbox's violation record, what the parent did to it and
 * what the job reported) to one outcome. The sandbox library only reports
 * the facts; naming them is its job too (fr_syscall_name, fr_signal_name).
 *
 * Precedence, first match wins:
 *  1. output_exceeded     -> output_limit   the parent killed it for output
 *  2. wall_expired        -> timeout/wall   the parent killed it for time
 *  3. a violation record  -> violation      with the syscall's name, whatever
 *                                           the wait status says
 *  4. oom_killed          -> memory         a memory cgroup OOM-killed it
 *  5. died of SIGXCPU     -> timeout/cpu    RLIMIT_CPU soft limit
 *     died of SIGKILL with user+sys time >= the soft limit (whole seconds)
 *                         -> timeout/cpu    the RLIMIT_CPU hard-limit backstop
 *  6. memory_hint and not a clean exit
 *                         -> memory         MemoryError / ENOMEM reported by the job
 *  7. exit 0 -> ok, other exit codes -> error
 *  8. any other signal    -> signal         with its name (SIGSEGV, SIGXFSZ...)
 *
 * Rules we deliberately do not have: a SIGKILL or SIGSEGV alone is never
 * called `memory` (a stack overflow is SIGSEGV; a SIGKILL may be anyone's),
 * only the oom_killed flag or the job's own report says memory. A SIGSYS
 * death without a record is a `signal`: violation records come only from a
 * supervisor holding the filter's listener (the relay, or the caller of
 * fr_policy_apply_notify), which the job cannot write to, while SIGSYS is a
 * signal any job can raise (or a filter without a supervisor sends:
 * fr_policy_apply without a report descriptor). SIGXFSZ
 * (RLIMIT_FSIZE) stays a `signal`: the name says exactly what happened, and
 * output_limit is reserved for the parent's own output cap. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "fitrun/common.h"
#include "fitrun/sandbox.h"
#include "fitrun/verdict.h"

static uint64_t cpu_used_ms(const struct rusage *ru)
{
    return (fr_timeval_us(&ru->ru_utime) + fr_timeval_us(&ru->ru_stime)) / 1000u;
}

/* Rule 5: did RLIMIT_CPU end it? */
static bool cpu_limit_hit(const struct fr_classify_in *in, int sig)
{
    if (sig == SIGXCPU)
        return true;
    if (sig != SIGKILL || !in->cpu_limit_ms || !in->ru)
        return false;
    /* The soft limit in force was cpu_limit_ms rounded up to whole seconds
     * (rlimits.c); the SIGKILL comes one second later at the hard limit. */
    uint64_t soft_ms = (in->cpu_limit_ms + 999) / 1000 * 1000;
    return cpu_used_ms(in->ru) >= soft_ms;
}

static enum fr_status decide(const struct fr_classify_in *in, struct fr_outcome *out)
{
    bool exited = WIFEXITED(in->wstatus);
    int sig = WIFSIGNALED(in->wstatus) ? WTERMSIG(in->wstatus) : 0;
    if (in->output_exceeded)
        return FR_STATUS_OUTPUT_LIMIT;
    if (in->wall_expired) {
        out->timeout = FR_TIMEOUT_WALL;
        return FR_STATUS_TIMEOUT;
    }
    if (in->violation_nr >= 0) {
        fr_syscall_name(in->violation_nr, out->syscall, sizeof out->syscall);
        return FR_STATUS_VIOLATION;
    }
    if (in->oom_killed)
        return FR_STATUS_MEMORY;
    if (cpu_limit_hit(in, sig)) {
        out->timeout = FR_TIMEOUT_CPU;
        return FR_STATUS_TIMEOUT;
    }
    if (in->memory_hint && !(exited && WEXITSTATUS(in->wstatus) == 0))
        return FR_STATUS_MEMORY;
    if (exited)
        return WEXITSTATUS(in->wstatus) == 0 ? FR_STATUS_OK : FR_STATUS_ERROR;
    if (sig)
        return FR_STATUS_SIGNAL;
    /* Not a termination status (stopped/continued): the caller did not
     * pass what wait4 returns for a dead child. */
    return FR_STATUS_ERROR;
}

void fr_classify(const struct fr_classify_in *in, struct fr_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->exit_code = -1;
    if (WIFEXITED(in->wstatus))
        out->exit_code = WEXITSTATUS(in->wstatus);
    if (WIFSIGNALED(in->wstatus)) {
        out->signal = WTERMSIG(in->wstatus);
        fr_signal_name(out->signal, out->signal_name, sizeof out->signal_name);
    }
    out->status = decide(in, out);
}
