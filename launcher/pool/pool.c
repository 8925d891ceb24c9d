/* pool.c — the event loop of `fitrun run`. See include/fitrun/pool.h,
 * include/fitrun/runtime.h (the division of labour with runtimes) and
 * internal.h (which file does what).
 *
 * One thread, one epoll set over:
 *   - the job input, when it is a pipe/tty (streamed: a line is started as
 *     soon as it is complete and a slot is free, its result written the
 *     moment it is known, while the writer keeps the pipe open). A regular
 *     file cannot be polled; it is read in chunks whenever there is room;
 *   - a signalfd for SIGCHLD (orphan reaping), SIGINT, SIGTERM, SIGHUP;
 *   - whatever the runtime registers (exec: each job's pidfd, stdout,
 *     stderr and stdin pipes).
 * Deadlines (wall time, CPU-clock checks, progress) become the epoll
 * timeout, computed in ms from CLOCK_MONOTONIC.
 *
 * Backpressure: at most `workers` parsed jobs wait for a slot; beyond that
 * the input is not read (the pipe fills, the writer blocks), so memory stays
 * bounded on any input size and a streaming caller is never ahead of us by
 * more than a pipe's worth.
 *
 * Results are written with blocking write(2)s straight to the output fd
 * (no stdio buffer). To a pipe, socket or tty the lines known in one
 * iteration go together, before the loop waits: "flushed as soon as known"
 * without a syscall per line. A slow reader of `--out -` therefore slows
 * the pool down instead of growing a queue. To a regular file they are
 * held across iterations for a short while (results.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#define MAX_EVENTS 64
#define FINAL_REAP_MS 5000

const struct fr_runtime_ops *fr_runtime_ops_for(enum fr_runtime_kind kind)
{
    return kind == FR_RUNTIME_PYTHON ? &fr_runtime_python_ops : &fr_runtime_exec_ops;
}

static void on_signals(struct fr_host *h)
{
    struct signalfd_siginfo si;
    bool chld = false;
    for (;;) {
        ssize_t r = read(h->sigfd, &si, sizeof si);
        if (r != (ssize_t)sizeof si)
            break;
        if (si.ssi_signo == SIGCHLD)
            chld = true;
        else {
            if (!h->stopping && !h->o->quiet)
                pool_say(h, "SIG%s: stopping; running jobs are killed and will run again with --resume",
                         sigabbrev_np((int)si.ssi_signo) ? sigabbrev_np((int)si.ssi_signo) : "?");
            pool_interrupt(h, (int)si.ssi_signo);
        }
    }
    if (chld)
        fr_host_reap(h);
}

static bool finished(const struct fr_host *h)
{
    if (h->nbusy)
        return false;
    return h->stopping || (h->in_done && !h->npending && !h->nretry);
}

static void loop(struct fr_host *h)
{
    struct epoll_event evs[MAX_EVENTS];
    bool readable = false;
    for (;;) {
        pool_intake(h, readable);
        readable = false;
        pool_dispatch(h);
        /* Refill what dispatch took from the queue now, not after an
         * epoll_wait that would return at once for it (a regular file's
         * room makes the timeout 0), and start what a free slot can take. */
        pool_intake(h, false);
        pool_dispatch(h);
        if (finished(h))
            return;
        pool_input_interest(h);
        uint64_t now = fr_now_ns();
        pool_flush_due(h, now);
        int n = epoll_wait(h->epfd, evs, MAX_EVENTS, pool_next_timeout(h, now));
        if (n < 0 && errno != EINTR) {
            fr_host_fail(h, "epoll_wait: %s", strerror(errno));
            continue;
        }
        for (int i = 0; i < n; i++) {
            int fd = (int)(uint32_t)evs[i].data.u64;
            uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
            if (gen == 0 && fd == h->sigfd)
                on_signals(h);
            else if (gen == 0 && fd == h->in.fd)
                readable = true;
            else if ((size_t)fd < h->nwatches && h->watches[fd].used && h->watches[fd].gen == gen)
                h->rt.ops->event(&h->rt, h->watches[fd].slot, fd, evs[i].events);
        }
        now = fr_now_ns();
        pool_timers(h, now);
        progress_tick(&h->stats, now, false);
    }
}

/* A runtime's start stops early when SIGINT/SIGTERM/SIGHUP is pending and
 * leaves it pending. Consume it here: the run then exits 128 + signal like
 * an interrupted pool, also when the signal was inherited as ignored
 * (unblocking would discard it and leave 125). 0 = none pending. */
static int start_interrupted(struct fr_host *h)
{
    struct signalfd_siginfo si;
    while (read(h->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP)
            return (int)si.ssi_signo;
    return 0;
}

int fr_pool_run(const struct fr_pool_opts *o)
{
    struct fr_host h = {.base = {&pool_host_ops}, .o = o, .epfd = -1, .sigfd = -1};
    char err[1024] = "";
    long total = input_count(o->in_fd, &o->shard, o->resume);
    stats_init(&h.stats, o->quiet ? FR_PROGRESS_NONE : o->progress, o->workers, total,
               o->resume ? o->resume->results : 0);
    if (pool_setup(&h, err, sizeof err) < 0) {
        fr_warn("%s", err);
        pool_teardown(&h);
        return FR_EXIT_USAGE;
    }
    /* Ids that already have a result take part in duplicate detection. */
    if (o->resume && fr_idset_merge(h.seen, o->resume->ids) < 0) {
        fr_warn("out of memory");
        pool_teardown(&h);
        return FR_EXIT_USAGE;
    }
    pool_oom_setup(&h);
    h.rt = (struct fr_runtime){.ops = o->ops, .cfg = o->rtcfg, .host = &h};
    if (o->ops->start(&h.rt, h.nslots, err, sizeof err) < 0) {
        int sig = start_interrupted(&h);
        if (!sig) {
            fr_warn("%s runtime: %s", o->ops->name, err);
            pool_teardown(&h);
            return FR_EXIT_USAGE;
        }
        /* Interrupted while starting: no job ran; end as any interrupted run. */
        if (!o->quiet)
            pool_say(&h, "SIG%s: stopping before any job ran (%s runtime: %s)", sigabbrev_np(sig), o->ops->name, err);
        h.stopping = true;
        h.stop_signal = sig;
    } else {
        /* The zygote and its workers are in the launcher's cgroup now: the
         * jobs' share of the memory is what they leave. */
        char note[512];
        fr_cgroup_tree_settle(o->cgroups, note, sizeof note);
        /* One process per job, whose CPU the runtime measures itself
         * (results.c takes the larger figure), and no fork: the CPU
         * counter and the pids allowance add nothing. */
        if (h.rt.contained)
            fr_cgroup_tree_contained(o->cgroups);
        if (note[0])
            fr_info("%s", note);
        pool_replace_results(&h);
        if (!h.failed) {
            pool_ready(&h);
            loop(&h);
        }
        pool_flush_results(&h);
        h.rt.ops->stop(&h.rt);
    }
    int left = reaper_final(&h.reaper, FINAL_REAP_MS);
    if (left)
        pool_say(&h, "%d process%s of jobs could not be reaped", left, left == 1 ? "" : "es");
    if (!o->quiet) {
        progress_finish(&h.stats);
        char how[64];
        if (h.failed)
            snprintf(how, sizeof how, "stopped by an error");
        else if (h.stop_signal)
            snprintf(how, sizeof how, "interrupted by SIG%s", sigabbrev_np(h.stop_signal));
        else
            snprintf(how, sizeof how, "done");
        summary_print(&h.stats, how);
        if (h.stopping && h.stats.total >= 0 && h.stats.total > h.stats.done)
            fr_warn("%ld job%s without a result; run again with --resume to complete them",
                    h.stats.total - h.stats.done, h.stats.total - h.stats.done == 1 ? "" : "s");
    }
    int rc = h.failed ? FR_EXIT_USAGE : h.stop_signal ? 128 + h.stop_signal : h.invalid ? 1 : 0;
    pool_teardown(&h);
    return rc;
}
