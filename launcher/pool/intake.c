/* intake.c — job lines in: the shard's lines only, --resume's answered
 * ones skipped, blank lines ignored, invalid and duplicate ones answered
 * at once, the runtime's check, then the queue (at most one job per slot
 * waits: backpressure on the input). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "fitrun/common.h"
#include "internal.h"

static void push_pending(struct fr_host *h, struct fr_job *job)
{
    int tail = (h->pend_head + h->npending) % h->nslots;
    h->pending[tail] = *job;
    h->npending++;
}

/* --resume: 1 = this line already has its result (skip it), 0 = run it;
 * a result there for another id stops the run (fr_resume_line). */
static int resumed(struct fr_host *h, long line, const char *text, size_t len)
{
    char err[1024];
    if (!h->o->resume)
        return 0;
    int r = fr_resume_line(h->o->resume, line, text, len, h->seen, h->o->in_name, err, sizeof err);
    if (r < 0)
        fr_host_fail(h, "%s", err);
    return r != 0;
}

/* Take one input line: skip it, report it invalid, or queue it. */
static void handle_line(struct fr_host *h, const char *text, size_t len, long line)
{
    const struct fr_resume *res = h->o->resume;
    if (!fr_shard_selects(&h->o->shard, line))
        return;
    if (line_is_blank(text, len)) {
        /* --resume: a result for a line that is blank now (a stream's
         * check; a jobs file was checked whole before the run) */
        char err[1024];
        if (res && fr_resume_blank(res, line, h->o->in_name, err, sizeof err) < 0)
            fr_host_fail(h, "%s", err);
        return;
    }
    if (resumed(h, line, text, len))
        return; /* has a result already (--resume) */
    struct fr_job job;
    const char *type = NULL;
    char err[1024];
    int r = fr_job_parse(text, len, line, &job, &type, err, sizeof err);
    if (r == 0 && res && fr_idset_has(res->noline, job.id) && !fr_idset_has(h->seen, job.id)) {
        /* Resumed from a results file without line numbers: by id. */
        if (fr_idset_add(h->seen, job.id) < 0)
            fr_host_fail(h, "out of memory");
        fr_job_clear(&job);
        return;
    }
    if (r < 0) {
        /* An invalid line that has an id still claims it: a later line
         * with the same id is a duplicate. */
        if (job.id && fr_idset_add(h->seen, job.id) < 0)
            fr_host_fail(h, "out of memory");
        pool_emit_invalid(h, job.id, line, type, err);
        fr_job_clear(&job);
        return;
    }
    int added = fr_idset_add(h->seen, job.id);
    if (added < 0) {
        fr_job_clear(&job);
        fr_host_fail(h, "out of memory");
        return;
    }
    if (added == 0) {
        _Static_assert(sizeof err >= FR_DUPLICATE_MSG_MAX, "room for the DuplicateId message");
        fr_duplicate_message(err, line, job.id);
        pool_emit_invalid(h, job.id, line, "DuplicateId", err);
        fr_job_clear(&job);
        return;
    }
    char cerr[512];
    if (h->rt.ops->check && h->rt.ops->check(&h->rt, &job, cerr, sizeof cerr) < 0) {
        snprintf(err, sizeof err, "line %ld: %s", line, cerr);
        pool_emit_invalid(h, job.id, line, "InvalidJob", err);
        fr_job_clear(&job);
        return;
    }
    push_pending(h, &job);
}

/* Pipes are read only from the epoll event (one read per readiness, so a
 * blocking fd never blocks us). */
void pool_intake(struct fr_host *h, bool readable)
{
    while (pool_has_room(h) && !h->in_done) {
        const char *text;
        size_t len;
        long line;
        switch (input_next(&h->in, &text, &len, &line)) {
        case INPUT_LINE: handle_line(h, text, len, line); continue;
        case INPUT_TOO_LONG: {
            if (!fr_shard_selects(&h->o->shard, line) || resumed(h, line, NULL, 0))
                continue;
            char msg[128];
            snprintf(msg, sizeof msg, "line %ld: longer than %u MiB", line, FR_JOB_MAX_LINE >> 20);
            pool_emit_invalid(h, NULL, line, "InvalidJSON", msg);
            continue;
        }
        case INPUT_END: {
            h->in_done = true;
            char err[1024];
            if (h->o->resume && fr_resume_end(h->o->resume, h->in.line, h->o->in_name, err, sizeof err) < 0)
                fr_host_fail(h, "%s", err);
            continue;
        }
        case INPUT_MORE: break;
        }
        if (h->in.pollable && !readable)
            return;
        readable = false;
        if (input_fill(&h->in) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            fr_host_fail(h, "cannot read jobs from %s: %s", h->in.name, strerror(errno));
            return;
        }
    }
}

/* Watch the input only while we want more jobs. Registration is dropped
 * (not just muted) meanwhile: a pipe whose writer has gone reports EPOLLHUP
 * whatever the event mask, which would spin the loop. */
void pool_input_interest(struct fr_host *h)
{
    if (!h->in.pollable)
        return;
    bool want = pool_has_room(h) && !h->in_done;
    if (want == h->in_watched)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint32_t)h->in.fd};
    if (epoll_ctl(h->epfd, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, h->in.fd, &ev) == 0)
        h->in_watched = want;
    else if (want)
        fr_host_fail(h, "cannot watch %s: %s", h->in.name, strerror(errno));
}
