/* results.c — result lines out, the verdict deciding the status
 * (fitrun/verdict.h) and the runtime's facts filling the rest. Lines are
 * written with write(2) straight to the output fd (no stdio), whole lines
 * in order, so a run killed mid-write leaves at most one torn line, at the
 * end (resume.c cuts it).
 *
 * When they are written depends on who reads them. A pipe, socket or tty
 * (`--out -` read live, the Python client) gets the lines known in one
 * iteration of the pool's loop in one write(2) before the loop waits: a
 * result is out the moment the loop would otherwise sleep. A regular file
 * is read when the run ends (or by --resume), and one write(2) per result
 * costs the launcher the filesystem's work each time (inode times, dirty
 * marking): its lines are held across iterations and written once they
 * fill POOL_RESULTS_BATCH bytes or the oldest is POOL_RESULTS_AGE_MS old,
 * and at the end of the run whatever ended it (done, interrupt, error). A
 * result still held when fitrun is SIGKILLed is lost like the jobs that
 * were running: --resume runs its job again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "fitrun/verdict.h"
#include "internal.h"

/* Held lines are written once they fill this (also bounds a run of
 * invalid lines read in one iteration)... */
#define POOL_RESULTS_BATCH (64u << 10)
/* ...or once the oldest is this old (regular files only). */
#define POOL_RESULTS_AGE_MS 100u

void pool_results_setup(struct fr_host *h)
{
    struct stat st;
    /* Unknown: write as for a reader that waits (the safe default). */
    h->out_hold = fstat(h->o->out_fd, &st) == 0 && S_ISREG(st.st_mode);
}

void pool_replace_results(struct fr_host *h)
{
    if (!h->o->replace_out || ftruncate(h->o->out_fd, 0) == 0)
        return;
    int err = errno;
    struct stat st;
    /* a FIFO or a device cannot be truncated, and need not be */
    if (fstat(h->o->out_fd, &st) < 0 || S_ISREG(st.st_mode))
        fr_host_fail(h, "cannot truncate results file %s: %s", h->o->out_name, strerror(err));
}

void pool_flush_results(struct fr_host *h)
{
    const char *buf = h->outbuf;
    size_t len = h->outlen;
    h->outlen = 0;
    while (len && !h->out_broken) {
        ssize_t w = write(h->o->out_fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            h->out_broken = true;
            fr_host_fail(h, "cannot write results to %s: %s", h->o->out_name, strerror(errno));
            return;
        }
        buf += w;
        len -= (size_t)w;
    }
}

uint64_t pool_results_due(const struct fr_host *h)
{
    return h->outlen && h->out_hold ? sat_add(h->out_since_ns, ms_to_ns(POOL_RESULTS_AGE_MS)) : UINT64_MAX;
}

void pool_flush_due(struct fr_host *h, uint64_t now)
{
    if (h->outlen && (!h->out_hold || now >= pool_results_due(h)))
        pool_flush_results(h);
}

/* Append line[0, len) to the held lines. */
static bool hold(struct fr_host *h, const char *line, size_t len)
{
    if (h->outlen + len > h->outcap) {
        size_t cap = h->outcap ? h->outcap : 64u << 10;
        while (cap < h->outlen + len)
            cap *= 2;
        char *b = realloc(h->outbuf, cap);
        if (!b)
            return false;
        h->outbuf = b;
        h->outcap = cap;
    }
    if (!h->outlen)
        h->out_since_ns = fr_now_ns();
    memcpy(h->outbuf + h->outlen, line, len);
    h->outlen += len;
    return true;
}

static void emit(struct fr_host *h, const struct fr_result *r)
{
    if (h->failed)
        return;
    size_t len;
    char *line = fr_result_line(r, &len);
    bool held = line && hold(h, line, len);
    free(line);
    if (!held) {
        fr_host_fail(h, "out of memory formatting the result of line %ld", r->line);
        return;
    }
    if (h->outlen >= POOL_RESULTS_BATCH)
        pool_flush_results(h);
    if (h->out_broken)
        return;
    stats_add(&h->stats, r->status, r->error_type);
    progress_tick(&h->stats, fr_now_ns(), false);
}

void pool_emit_invalid(struct fr_host *h, const char *id, long line, const char *type, const char *msg)
{
    struct fr_result r = {0};
    r.id = id;
    r.status = FR_STATUS_INVALID;
    r.error_type = type;
    r.error_message = msg;
    r.worker = -1;
    r.line = line;
    h->invalid++;
    emit(h, &r);
}

/* The runtime fields of a job with outputs: "outputs", "passed" (when the
 * job has "expected"; scored here, since only the pool holds it), and
 * "error_line". *passed is malloc'd (the caller frees it). */
static size_t output_fields(const struct fr_raw *raw, const struct fr_job *job, enum fr_status status,
                            struct fr_result_field f[3], char **passed, char line_buf[32])
{
    size_t n = 0;
    *passed = NULL;
    if (!raw->has_outputs)
        return 0;
    f[n++] = raw->outputs ? (struct fr_result_field){"outputs", raw->outputs, raw->outputs_len}
                          : (struct fr_result_field){"outputs", "null", 4};
    const struct fr_json_member *expected = fr_job_member(job, "expected");
    size_t plen;
    if (expected && expected->value.p[0] == '[' &&
        (*passed = fr_passed_json(expected->value, raw->outputs, raw->outputs_len, status, &plen)))
        f[n++] = (struct fr_result_field){"passed", *passed, plen};
    if (raw->error_line > 0)
        f[n++] =
            (struct fr_result_field){"error_line", line_buf, (size_t)snprintf(line_buf, 32, "%ld", raw->error_line)};
    return n;
}

/* "worker_replaced": why the process that ran the job (python, isolation
 * = reuse) was replaced after it. Returns the malloc'd JSON text the field
 * points to, or NULL (no field). */
static char *replaced_field(const struct fr_raw *raw, struct fr_result_field *f)
{
    if (!raw->replaced || !*raw->replaced)
        return NULL;
    json_t *s = json_string(raw->replaced);
    char *text = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    json_decref(s);
    if (text)
        *f = (struct fr_result_field){"worker_replaced", text, strlen(text)};
    return text;
}

void pool_write_finished(struct fr_host *h, int s, const struct fr_raw *raw, uint64_t now)
{
    struct slot *sl = &h->slots[s];
    /* Each part truncated to ms on its own, as results have always said. */
    uint64_t cpu_ms =
        raw->has_rusage ? fr_timeval_us(&raw->ru.ru_utime) / 1000u + fr_timeval_us(&raw->ru.ru_stime) / 1000u : 0;
    /* Orphans of the job were re-parented to fitrun: no rusage of the job
     * holds their CPU (host.c read it as the session was released). Not
     * after fitrun killed the job: the runtime read its whole tree just
     * before the kill, and what the kill orphaned is in that figure
     * already; the orphans from before are in the pool's last reading. */
    if (!sl->aborted && !raw->output_exceeded)
        cpu_ms += sl->orphan_cpu_ns / NS_PER_MS;
    /* A job killed mid-run may not have been waited for by its own parent
     * (the exec preset's relay dies with it), so rusage can miss its CPU
     * time; what the pool read last is a lower bound. */
    if (sl->cpu_seen_ns / NS_PER_MS > cpu_ms)
        cpu_ms = sl->cpu_seen_ns / NS_PER_MS;
    /* The job's own cgroup counted every process of it, and only them. */
    const struct fr_cgroup_usage *cg = &sl->cg;
    if (cg->has_cpu && cg->cpu_us / 1000 > cpu_ms)
        cpu_ms = cg->cpu_us / 1000;
    bool exact = cg->valid && cg->oom_file[0];
    /* Without it: the slot is still busy, so nbusy counts this job among
     * those that may claim a kill of the shared counter (oom.c). */
    bool oom =
        raw->oom_killed || (exact ? fr_verdict_cgroup_oom(raw, cg->oom_kills)
                                  : fr_verdict_unexplained_kill(raw, sl->aborted) && fr_oom_claim(&h->oom, h->nbusy));
    const struct fr_profile *p = h->o->rtcfg->profile;
    struct fr_verdict_in in = {
        .raw = raw,
        .aborted = sl->aborted,
        .oom_killed = oom,
        .cpu_ms = cpu_ms,
        .cpu_limit_ms = h->o->cpu_ms,
        .wall_limit_ms = h->o->wall_ms,
        .memory_limit = p ? p->memory : 0,
        .output_cap = h->o->rtcfg->output_cap,
        .oom_counter = exact ? cg->oom_file : h->oom.path,
    };
    struct fr_verdict v;
    fr_verdict_judge(&in, &v);

    struct fr_result r = {0};
    r.id = sl->job.id;
    r.status = v.status;
    r.timeout = v.timeout;
    r.has_exit = v.oc.signal == 0 && v.oc.exit_code >= 0;
    r.exit_code = v.oc.exit_code;
    r.signal = v.oc.signal_name[0] ? v.oc.signal_name : NULL;
    r.syscall = v.oc.syscall[0] ? v.oc.syscall : NULL;
    r.error_type = raw->error_type ? raw->error_type : v.type[0] ? v.type : NULL;
    r.error_message = raw->error_message ? raw->error_message : v.msg[0] ? v.msg : NULL;
    r.error_message_len = raw->error_message ? raw->error_message_len : 0;
    r.has_output = true;
    r.out = raw->out;
    r.out_len = raw->out_len;
    r.err = raw->err;
    r.err_len = raw->err_len;
    r.has_usage = true;
    r.cpu_ms = cpu_ms;
    r.wall_ms = raw->wall_ms ? raw->wall_ms : (now - sl->start_ns) / NS_PER_MS;
    r.max_rss_kb = cg->has_peak ? cg->peak_bytes / 1024 : raw->has_rusage ? (uint64_t)raw->ru.ru_maxrss : 0;
    r.worker = s;
    r.line = sl->job.line;
    r.attempts = sl->job.attempts;
    struct fr_result_field fields[4];
    char *passed, line_buf[32];
    r.fields = fields;
    r.nfields = output_fields(raw, &sl->job, v.status, fields, &passed, line_buf);
    char *replaced = replaced_field(raw, &fields[r.nfields]);
    r.nfields += replaced != NULL;
    emit(h, &r);
    free(passed);
    free(replaced);
}

void pool_write_crash(struct fr_host *h, int s, const struct fr_raw *raw)
{
    struct slot *sl = &h->slots[s];
    struct fr_result r = {0};
    r.id = sl->job.id;
    r.status = raw->kind == FR_RAW_REJECTED ? FR_STATUS_INVALID : FR_STATUS_CRASH;
    r.error_type = raw->error_type ? raw->error_type : raw->kind == FR_RAW_REJECTED ? "InvalidJob" : "WorkerCrash";
    r.error_message = raw->error_message ? raw->error_message : "the worker died";
    r.error_message_len = raw->error_message ? raw->error_message_len : 0;
    r.has_output = raw->out || raw->err;
    r.out = raw->out;
    r.out_len = raw->out_len;
    r.err = raw->err;
    r.err_len = raw->err_len;
    r.worker = s;
    r.line = sl->job.line;
    r.attempts = sl->job.attempts;
    if (raw->kind == FR_RAW_REJECTED)
        h->invalid++;
    emit(h, &r);
}
