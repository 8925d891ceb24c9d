/* violation.c — naming the denied syscall (python preset and deny lists).
 *
 * Mechanism: denied syscalls return SECCOMP_RET_TRAP, so the kernel skips
 * the call and raises SIGSYS with si_code = SYS_SECCOMP, si_syscall and
 * si_arch. Our handler (installed by fr_policy_apply before the filter)
 * writes one fixed-size record to the report descriptor with a single
 * write(2) and then makes the process die *of SIGSYS*, so the parent sees
 * both the signal and the name.
 *
 * Why not SECCOMP_RET_KILL_PROCESS: the parent would see SIGSYS but never
 * the syscall (the number is not in the wait status, and /proc/<pid>/syscall
 * is gone once the task is dead).
 *
 * How the handler dies: SIGSYS is blocked while the handler runs. Its
 * first step is to reset SIGSYS to SIG_DFL with rt_sigaction — which the
 * filter denies (SIGSYS with a non-NULL action). A trapped syscall while
 * SIGSYS is blocked makes the kernel (force_sig_info_to_task) unblock it,
 * reset it to SIG_DFL and deliver it: the process dies of SIGSYS right
 * there. Should rt_sigaction be allowed (a profile's allow list), the reset
 * succeeds and we raise SIGSYS and unblock it ourselves. Every path ends in
 * death by SIGSYS; exit_group(128+SIGSYS) is the unreachable fallback.
 *
 * Keeping SIGSYS deliverable: a trap while SIGSYS is blocked kills the
 * process without running the handler. The mask lives in memory seccomp
 * cannot read, so the filter lets only unblocking/querying rt_sigprocmask
 * calls through and traps the rest; the handler then performs the call
 * itself on the mask that sigreturn will restore, with SIGSYS taken out
 * (emulate_sigprocmask). The job gets the answer it expects (0, old mask)
 * and SIGSYS stays unblocked — which is what lets a thread attempt from
 * pthread_create (all signals blocked around clone3) be named clone3.
 *
 * Limits (docs/sandbox.md, "violations"):
 *  - the job cannot replace the handler (rt_sigaction(SIGSYS, act) is
 *    denied — and reported, as rt_sigaction, while our handler is still in
 *    place). It can still get SIGSYS blocked in ways seccomp cannot see:
 *    the sa_mask of one of its own signal handlers (blocked while that
 *    handler runs) or a hand-made frame for rt_sigreturn. A violation then
 *    kills the job with SIGSYS without a report: the outcome is
 *    `violation` with syscall "unknown". So does a foreign-ABI syscall
 *    (int 0x80), which the filter kills outright.
 *  - the job can close or write to the report descriptor. Closing loses
 *    the name (as above). Writing forges a record, but a record only
 *    counts when the process died of SIGSYS (classify.c) and the parent
 *    takes the last well-formed record, which is ours.
 *  - threads are denied by the presets, so "the process" is one thread. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a seccomp SIGSYS */
#endif

/* Set by fr_violation_arm in the child (its own copy of the library's
 * data), read by the handler. */
static volatile int g_report_fd = -1;
static volatile uint32_t g_native_arch;

static uint32_t record_check(uint32_t arch, int32_t nr)
{
    return ~FR_REPORT_MAGIC ^ arch ^ (uint32_t)nr;
}

int fr_report_write(int fd, uint32_t arch, int nr)
{
    struct fr_report_record r = {
        .magic = FR_REPORT_MAGIC, .arch = arch, .nr = nr, .check = record_check(arch, nr),
    };
    ssize_t n = write(fd, &r, sizeof r);
    if (n < 0)
        return -errno;
    return n == (ssize_t)sizeof r ? 0 : -EIO;
}

_Noreturn void fr_die_by_signal(int sig)
{
    /* SIGKILL and SIGSTOP cannot have a handler: nothing to reset. */
    if (sig != SIGKILL && sig != SIGSTOP) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        (void)sigaction(sig, &dfl, NULL);
    }
    (void)syscall(SYS_tgkill, getpid(), gettid(), sig);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    (void)sigprocmask(SIG_UNBLOCK, &set, NULL);
    _exit(128 + sig);
}

/* The trapped call's arguments and return value live in the registers
 * saved in the signal frame; sigreturn puts them back. */
#if defined(__x86_64__)
#define FR_ARG(uc, i) ((uc)->uc_mcontext.gregs[(int[]){ REG_RDI, REG_RSI, REG_RDX, REG_R10 }[i]])
#define FR_RET(uc) ((uc)->uc_mcontext.gregs[REG_RAX])
#elif defined(__aarch64__)
#define FR_ARG(uc, i) ((uc)->uc_mcontext.regs[i])
#define FR_RET(uc) ((uc)->uc_mcontext.regs[0])
#endif

#ifdef FR_RET
/* rt_sigprocmask(how, set, oldset, sigsetsize), done on uc_sigmask (the
 * mask sigreturn restores) with SIGSYS removed. A bad `set` pointer faults
 * here instead of returning EFAULT: the job dies of SIGSEGV. */
static void emulate_sigprocmask(ucontext_t *uc)
{
    int how = (int)FR_ARG(uc, 0); /* the kernel reads an int: so do we */
    const uint64_t *set = (const uint64_t *)FR_ARG(uc, 1);
    uint64_t *old = (uint64_t *)FR_ARG(uc, 2);
    if ((size_t)FR_ARG(uc, 3) != sizeof(uint64_t)) {
        FR_RET(uc) = -EINVAL;
        return;
    }
    uint64_t cur, next;
    memcpy(&cur, &uc->uc_sigmask, sizeof cur);
    next = cur;
    if (set) {
        switch (how) {
        case SIG_BLOCK:
            next = cur | *set;
            break;
        case SIG_UNBLOCK:
            next = cur & ~*set;
            break;
        case SIG_SETMASK:
            next = *set;
            break;
        default:
            FR_RET(uc) = -EINVAL;
            return;
        }
    }
    if (old)
        *old = cur;
    next &= ~(1ull << (SIGSYS - 1));
    memcpy(&uc->uc_sigmask, &next, sizeof next);
    FR_RET(uc) = 0;
}
#endif

static void on_sigsys(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    bool seccomp = si->si_code == SYS_SECCOMP && si->si_arch == g_native_arch;
#ifdef FR_RET
    if (seccomp && si->si_syscall == SYS_rt_sigprocmask) {
        emulate_sigprocmask(uctx);
        return;
    }
#else
    (void)uctx;
#endif
    /* Only the kernel's seccomp SIGSYS carries a syscall; a SIGSYS the job
     * sent itself (kill/tgkill) gets no record, just the default death. */
    if (seccomp && g_report_fd >= 0)
        (void)fr_report_write(g_report_fd, si->si_arch, si->si_syscall);
    fr_die_by_signal(SIGSYS);
}

int fr_violation_arm(int report_fd, uint32_t native_arch)
{
    g_report_fd = report_fd;
    g_native_arch = native_arch;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    /* No other handler may run in the middle of ours (one of the job's
     * could otherwise make a second violation while we report the first). */
    sigfillset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, NULL) < 0)
        return -errno;
    /* Inherited from the forking thread: a blocked SIGSYS would turn every
     * violation into an unreported kill. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    if (sigprocmask(SIG_UNBLOCK, &set, NULL) < 0)
        return -errno;
    return 0;
}

/* ---- parent side -------------------------------------------------------------- */

/* The last well-formed record in buf[0..n): records are 16 bytes but the
 * job may have written junk of any length before ours, so look at every
 * byte offset. Returns the syscall number or -1. */
static int last_record(const unsigned char *buf, size_t n, uint32_t native_arch)
{
    if (n < sizeof(struct fr_report_record))
        return -1;
    for (size_t off = n - sizeof(struct fr_report_record) + 1; off-- > 0;) {
        struct fr_report_record r;
        memcpy(&r, buf + off, sizeof r);
        if (r.magic == FR_REPORT_MAGIC && r.arch == native_arch && r.check == record_check(r.arch, r.nr) &&
            r.nr >= 0)
            return r.nr;
    }
    return -1;
}

int fr_report_read(int report_fd)
{
    if (report_fd < 0)
        return -1;
    /* A pipe holds at most 64 KiB by default; what a hostile job stuffed
     * beyond our buffer is dropped in chunks, keeping the tail, where our
     * record (always the last write) is. */
    unsigned char buf[8192];
    size_t have = 0;
    for (int rounds = 0; rounds < 4096; rounds++) {
        struct pollfd pfd = { .fd = report_fd, .events = POLLIN };
        if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & (POLLIN | POLLHUP)))
            break;
        if (have == sizeof buf) { /* keep the last record-sized tail */
            size_t keep = sizeof(struct fr_report_record) - 1;
            memmove(buf, buf + have - keep, keep);
            have = keep;
        }
        ssize_t got = read(report_fd, buf + have, sizeof buf - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        have += (size_t)got;
    }
    return last_record(buf, have, seccomp_arch_native());
}
