/* timers.c — the limits the pool enforces by the clock: each job's wall
 * deadline and, between the kernel's own RLIMIT_CPU backstops, its CPU
 * time, every process of it together (the slot's cgroup counter, or the
 * clocks of its process tree and orphans); the runtime's own wake-ups
 * (fr_host_wake_at); and the epoll timeout that wakes the loop for the
 * nearest of them (or for held results, results.c). */
#include <poll.h>
#include <time.h>

#include "fitrun/common.h"
#include "internal.h"

void pool_watch_cpu(struct fr_host *h, int slot, pid_t pid, int pidfd, int64_t base_ns)
{
    if (!pool_valid_slot(h, slot))
        return;
    struct slot *sl = &h->slots[slot];
    sl->cpu_pid = 0;
    sl->cpu_pidfd = -1;
    if (!pid || !h->o->cpu_ms)
        return;
    sl->cpu_pid = pid;
    sl->cpu_pidfd = pidfd;
    sl->cpu_base_ns = base_ns > 0 ? base_ns : 0;
    /* Nothing of the job can use more than ncpus CPU-seconds per second
     * since the job began: timed from then, not from now, so that a
     * runtime that names the process late loses no check. */
    sl->cpu_check_ns = sat_add(sl->start_ns, ms_to_ns(h->o->cpu_ms) / (uint64_t)h->ncpus);
}

void pool_wake_at(struct fr_host *h, int slot, uint64_t ns)
{
    if (pool_valid_slot(h, slot))
        h->slots[slot].wake_ns = ns;
}

/* CPU time of a process (all its threads), in ns; -1 when it is gone. */
static int64_t cpu_clock_ns(pid_t pid)
{
    clockid_t cid;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &cid) != 0 || clock_gettime(cid, &ts) < 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Has the process of this pidfd exited? (-1: never asked.) */
static bool exited(int pidfd)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return pidfd >= 0 && poll(&p, 1, 0) != 0;
}

/* The CPU the job in slot s used so far, every process of it together;
 * -1 when its watched process is gone. Where the slot's cgroup counter is
 * read it holds them all (grandchildren, children that exited, orphans):
 * one pread, with the watched process's own clock as a floor. Without it,
 * the clocks of the tree below the watched process and of the job's
 * orphans (its session's processes re-parented to fitrun), read first: one
 * orphaned between the two reads is missed by this reading (the next one
 * has it), never counted twice. */
static int64_t slot_cpu_ns(struct fr_host *h, int s)
{
    struct slot *sl = &h->slots[s];
    uint64_t us;
    bool cg = fr_cgroup_slot_cpu_us(h->o->cgroups, s, &us);
    int64_t orphans = cg ? 0 : (int64_t)reaper_session_cpu_ns(&h->reaper, sl->sid);
    int64_t own = cpu_clock_ns(sl->cpu_pid);
    if (own < 0 || exited(sl->cpu_pidfd))
        return -1;
    own = own > sl->cpu_base_ns ? own - sl->cpu_base_ns : 0;
    if (cg)
        return (int64_t)(us * 1000) > own ? (int64_t)(us * 1000) : own;
    /* Below the watched process: the process we fork is not always the
     * one that computes (the exec sandbox's relay runs the job, `sh -c`
     * wrappers), and a job may spread its work over processes. Its own
     * reaped children are left out (fr_descendants_cpu_ns): a reused
     * python process's base is its own clock, and the relay reaps the job
     * only as it ends. */
    return own + (int64_t)fr_descendants_cpu_ns(sl->cpu_pid) + orphans;
}

/* Wall deadlines, CPU clocks and the runtime's wake-ups. */
void pool_timers(struct fr_host *h, uint64_t now)
{
    for (int s = 0; s < h->nslots; s++) {
        struct slot *sl = &h->slots[s];
        if (sl->busy && sl->wake_ns && now >= sl->wake_ns) {
            sl->wake_ns = 0;
            if (h->rt.ops->wake)
                h->rt.ops->wake(&h->rt, s);
        }
        if (!sl->busy || sl->aborted)
            continue;
        if (sl->deadline_ns && now >= sl->deadline_ns) {
            sl->aborted = FR_ABORT_WALL;
            h->rt.ops->abort(&h->rt, s, FR_ABORT_WALL);
            fr_cgroup_slot_kill(h->o->cgroups, s);
            continue;
        }
        if (!sl->cpu_pid || now < sl->cpu_check_ns)
            continue;
        int64_t used = slot_cpu_ns(h, s);
        if (used < 0) {
            sl->cpu_pid = 0; /* gone (and its pid maybe another's): its exit is on the way */
            continue;
        }
        uint64_t limit = ms_to_ns(h->o->cpu_ms);
        sl->cpu_seen_ns = (uint64_t)used;
        if ((uint64_t)used >= limit) {
            sl->aborted = FR_ABORT_CPU;
            h->rt.ops->abort(&h->rt, s, FR_ABORT_CPU);
            fr_cgroup_slot_kill(h->o->cgroups, s);
            continue;
        }
        /* Nothing can burn more than ncpus CPU-seconds per second. */
        uint64_t wait = (limit - (uint64_t)used) / (uint64_t)h->ncpus;
        sl->cpu_check_ns = sat_add(now, wait < NS_PER_MS ? NS_PER_MS : wait);
    }
}

int pool_next_timeout(const struct fr_host *h, uint64_t now)
{
    if (!h->in.pollable && pool_has_room(h) && !h->in_done)
        return 0;
    uint64_t next = UINT64_MAX;
    for (int s = 0; s < h->nslots; s++) {
        const struct slot *sl = &h->slots[s];
        if (sl->busy && sl->wake_ns && sl->wake_ns < next)
            next = sl->wake_ns;
        if (!sl->busy || sl->aborted)
            continue;
        if (sl->deadline_ns && sl->deadline_ns < next)
            next = sl->deadline_ns;
        if (sl->cpu_pid && sl->cpu_check_ns < next)
            next = sl->cpu_check_ns;
    }
    if (h->stats.mode != FR_PROGRESS_NONE && h->nbusy && h->stats.next_ns < next)
        next = h->stats.next_ns;
    uint64_t results = pool_results_due(h);
    if (results < next)
        next = results;
    if (next == UINT64_MAX)
        return -1;
    uint64_t ms = ms_between(now, next);
    return ms > 60000 ? 60000 : (int)ms;
}
