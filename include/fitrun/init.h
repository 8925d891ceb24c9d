/* fitrun/init.h — run one command as its init (PID 1 or a subreaper), or
 * replace fitrun with it (plain wrapper).
 *
 * Supervised mode (fr_init_run), tini style:
 *  - every catchable signal is blocked in fitrun before fork and waited for
 *    with sigtimedwait(), so no signal is lost between fork and the loop;
 *    the child restores the original mask and dispositions before exec;
 *  - the child runs in its own process group; with a controlling terminal
 *    on which fitrun is in the foreground, that group gets the terminal
 *    (tcsetpgrp) and fitrun takes it back before it exits;
 *  - SIGCHLD reaps every zombie (waitpid(-1, WNOHANG|__WALL) until none),
 *    orphaned grandchildren included when fitrun is PID 1 or a subreaper;
 *  - every other blocked signal is forwarded to the child, or to its process
 *    group (forward_to_group). SIGTTIN/SIGTTOU are ignored by fitrun (so it
 *    can hand the terminal back from the background) and not forwarded;
 *    SIGCHLD is consumed; SIGTSTP and SIGCONT are forwarded like the rest;
 *  - when the main child exits: SIGTERM (+SIGCONT, so stopped members can
 *    act on it) to what remains of its process group, wait grace_ms,
 *    SIGKILL, reap, exit with the child's code or 128+signal.
 * Exec failures come back through a CLOEXEC pipe: 127 not found, 126 cannot
 * execute, with the errno in the message. */
#ifndef FITRUN_INIT_H
#define FITRUN_INIT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define FR_INIT_GRACE_DEFAULT_MS 5000
/* After SIGKILL, how long to wait for the group to vanish before giving up
 * (a process in uninterruptible sleep cannot die sooner). */
#define FR_INIT_KILL_WAIT_MS 2000

/* What fr_signals_block() changed, so the child can restore it. */
struct fr_sigstate {
    sigset_t waited;     /* blocked in fitrun, consumed by sigtimedwait */
    sigset_t saved_mask; /* the mask fitrun started with */
    struct sigaction saved_ttin, saved_ttou, saved_chld;
};

struct fr_init_opts {
    char *const *argv;     /* CMD [ARGS...]; argv[0] is searched in PATH */
    char *const *envp;     /* the child's environment */
    bool subreaper;        /* PR_SET_CHILD_SUBREAPER (--init when not PID 1) */
    bool forward_to_group; /* signals go to the child's whole process group */
    uint64_t grace_ms;     /* TERM → KILL delay for the leftover group */
};

/* Block every catchable signal (call it early: a SIGTERM that arrives
 * while fitrun is still detecting is then forwarded, not lost), ignore
 * SIGTTIN/SIGTTOU, reset an inherited SIGCHLD=SIG_IGN (which would make the
 * kernel auto-reap and lose the exit status). Returns 0 or -1 (errno). */
int fr_signals_block(struct fr_sigstate *st);
/* Undo fr_signals_block() in this process (after fork, before exec). */
void fr_signals_restore(const struct fr_sigstate *st);
/* Is `sig` forwarded to the child? (Everything blocked except SIGCHLD.) */
bool fr_signal_forwarded(const struct fr_sigstate *st, int sig);

/* Supervise argv until it and its process group are gone; `st` comes from
 * fr_signals_block(). Returns fitrun's exit status. */
int fr_init_run(const struct fr_init_opts *o, const struct fr_sigstate *st);

/* Plain wrapper: execvpe(argv[0], argv, envp). Returns only on failure,
 * after printing why, with 127 (not found) or 126 (cannot execute). */
int fr_exec_replace(char *const *argv, char *const *envp);

/* Exit status for a wait status: the code, or 128+signal. */
int fr_exit_status(int wstatus);
/* Exit status for a failed exec: ENOENT/ENOTDIR → 127, others → 126. */
int fr_exec_failure_status(int err);

#endif
