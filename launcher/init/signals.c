/* signals.c — which signals fitrun blocks, waits for and forwards, and how
 * the child gets its original signal state back. See fitrun/init.h. */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "fitrun/init.h"

/* Job-control signals the terminal sends to a background process group
 * that touches it. fitrun ignores them: it must be able to call tcsetpgrp()
 * from the background to take the terminal back, and it never reads the
 * terminal, so a SIGTTIN/SIGTTOU aimed at it has no meaning to forward. */
static bool tty_stop_signal(int sig)
{
    return sig == SIGTTIN || sig == SIGTTOU;
}

int fr_signals_block(struct fr_sigstate *st)
{
    memset(st, 0, sizeof *st);
    /* glibc's sigfillset() leaves out its two internal real-time signals
     * (thread cancellation, setxid), which must never be blocked. The
     * synchronous fault signals (SIGSEGV, SIGBUS, ...) may be blocked:
     * a real fault in fitrun still kills it (the kernel unblocks them),
     * while a `kill -SEGV` from outside is forwarded like any other. */
    if (sigfillset(&st->waited) < 0 || sigdelset(&st->waited, SIGKILL) < 0 || sigdelset(&st->waited, SIGSTOP) < 0 ||
        sigdelset(&st->waited, SIGTTIN) < 0 || sigdelset(&st->waited, SIGTTOU) < 0)
        return -1;
    if (sigprocmask(SIG_BLOCK, &st->waited, &st->saved_mask) < 0)
        return -1;

    struct sigaction ign, dfl;
    memset(&ign, 0, sizeof ign);
    memset(&dfl, 0, sizeof dfl);
    ign.sa_handler = SIG_IGN;
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&ign.sa_mask);
    sigemptyset(&dfl.sa_mask);
    if (sigaction(SIGTTIN, &ign, &st->saved_ttin) < 0 || sigaction(SIGTTOU, &ign, &st->saved_ttou) < 0 ||
        sigaction(SIGCHLD, &dfl, &st->saved_chld) < 0) {
        int e = errno;
        sigprocmask(SIG_SETMASK, &st->saved_mask, NULL);
        errno = e;
        return -1;
    }
    return 0;
}

/* Runs in the forked child: async-signal-safe calls only. Failures are
 * ignored on purpose — the values come from sigaction() itself, and there
 * is nobody to report to but the exec that follows. */
void fr_signals_restore(const struct fr_sigstate *st)
{
    sigaction(SIGTTIN, &st->saved_ttin, NULL);
    sigaction(SIGTTOU, &st->saved_ttou, NULL);
    sigaction(SIGCHLD, &st->saved_chld, NULL);
    sigprocmask(SIG_SETMASK, &st->saved_mask, NULL);
}

bool fr_signal_forwarded(const struct fr_sigstate *st, int sig)
{
    /* SIGCHLD is fitrun's own: it means "reap", and every child of the
     * wrapped program would flood it with SIGCHLDs it never asked for. */
    return sig != SIGCHLD && !tty_stop_signal(sig) && sigismember(&st->waited, sig) == 1;
}
