/* slots.c — queued jobs into free slots (a crashed job's retry first),
 * a slot freed again, and interrupting: no more jobs, running ones
 * killed. */
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

static void launch(struct fr_host *h, int s, struct fr_job *job)
{
    struct slot *sl = &h->slots[s];
    uint64_t now = fr_now_ns();
    sl->job = *job;
    sl->job.attempts++;
    sl->busy = true;
    sl->start_ns = now;
    sl->deadline_ns = h->o->wall_ms ? sat_add(now, ms_to_ns(h->o->wall_ms)) : 0;
    sl->aborted = 0;
    sl->sid = 0;
    sl->cpu_pid = 0;
    sl->cpu_pidfd = -1;
    sl->cpu_seen_ns = 0;
    sl->cpu_base_ns = 0;
    sl->orphan_cpu_ns = 0;
    h->nbusy++;
    fr_cgroup_slot_begin(h->o->cgroups, s);
    char err[512] = "";
    if (h->rt.ops->begin(&h->rt, s, &sl->job, err, sizeof err) < 0) {
        struct fr_raw raw;
        fr_raw_init(&raw);
        raw.kind = FR_RAW_CRASHED;
        raw.error_message = err[0] ? err : "the job could not be started";
        fr_host_complete(h, s, &raw);
    }
}

void pool_dispatch(struct fr_host *h)
{
    for (int s = 0; s < h->nslots && !h->stopping; s++) {
        if (h->slots[s].busy)
            continue;
        struct fr_job job;
        if (h->nretry)
            job = h->retry[--h->nretry];
        else if (h->npending) {
            job = h->pending[h->pend_head];
            h->pend_head = (h->pend_head + 1) % h->nslots;
            h->npending--;
        } else
            return;
        launch(h, s, &job);
    }
}

void pool_drop_queued(struct fr_host *h)
{
    for (int i = 0; i < h->npending; i++)
        fr_job_clear(&h->pending[(h->pend_head + i) % h->nslots]);
    h->npending = 0;
    for (int i = 0; i < h->nretry; i++)
        fr_job_clear(&h->retry[i]);
    h->nretry = 0;
}

void pool_interrupt(struct fr_host *h, int sig)
{
    if (!h->stopping) {
        h->stopping = true;
        h->stop_signal = sig;
    }
    pool_drop_queued(h);
    for (int s = 0; s < h->nslots; s++) {
        struct slot *sl = &h->slots[s];
        if (sl->busy && !sl->completing && sl->aborted != FR_ABORT_INTERRUPT) {
            sl->aborted = FR_ABORT_INTERRUPT;
            h->rt.ops->abort(&h->rt, s, FR_ABORT_INTERRUPT);
            fr_cgroup_slot_kill(h->o->cgroups, s); /* what escaped the runtime's kill */
        }
    }
}

void pool_release(struct fr_host *h, int s, bool free_job)
{
    struct slot *sl = &h->slots[s];
    if (free_job)
        fr_job_clear(&sl->job);
    memset(&sl->job, 0, sizeof sl->job);
    sl->busy = false;
    sl->completing = false;
    sl->sid = 0;
    sl->cpu_pid = 0;
    sl->cpu_pidfd = -1;
    sl->wake_ns = 0;
    sl->aborted = 0;
    h->nbusy--;
}
