/* collect.c — what fitrun reads of a prediction (its stdout, stderr and
 * report, each under its cap, as it comes) and the raw facts made of them
 * and of the worker's EXITED.
 *
 * The report is checked as text (fitrun/jsonscan.h, strict) and its
 * outputs are forwarded and scored as that text: a prediction's outputs
 * never become a tree in fitrun, so what fitrun holds for a job is bounded
 * by the caps (output twice, result plus a little), whatever it returned. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#define FIRST_ALLOC 65536
/* A buffer larger than this is freed after its job, so that one big
 * prediction does not keep its memory for the rest of the run. */
#define KEEP_ALLOC (256u << 10)

void py_stream_open(struct stream *st, int fd, size_t limit)
{
    st->fd = fd;
    st->len = 0;
    st->limit = limit;
    st->over = false;
}

/* What one call reads of a stream over its limit at most: four pipes'
 * worth of the default size; the event comes again for the rest. */
#define DISCARD_READS 4

int py_fd_discard(int fd, unsigned max_reads, size_t *dropped)
{
    char scratch[65536];
    for (unsigned n = 0; !max_reads || n < max_reads;) {
        ssize_t r = read(fd, scratch, sizeof scratch);
        if (r > 0) {
            n++;
            if (dropped)
                *dropped += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return 1;
    }
    return 2;
}

/* to_eagain: read until the pipe says EAGAIN (draining); else a short
 * read ends it too (the pipe had no more then; a later write is a later
 * event), saving the read that would say EAGAIN. Not when draining: a
 * packet-mode pipe (O_DIRECT, which a prediction may set on its end)
 * gives one packet per read, short or not. */
static int stream_read(struct stream *st, bool to_eagain)
{
    if (st->over) /* its bytes are known to be too many: keep none of the rest */
        return py_fd_discard(st->fd, to_eagain ? 0 : DISCARD_READS, NULL) == 1;
    for (;;) {
        if (st->len == st->cap) {
            /* Room for limit + 1 bytes at most: one byte beyond the limit
             * says it is over, without holding what lies beyond. */
            size_t want = st->cap ? st->cap * 2 : FIRST_ALLOC;
            if (want > st->limit + 1)
                want = st->limit + 1;
            char *nb = want > st->cap ? realloc(st->buf, want) : NULL;
            if (!nb) {
                errno = ENOMEM;
                return -1;
            }
            st->buf = nb;
            st->cap = want;
        }
        size_t room = st->cap - st->len;
        ssize_t r = read(st->fd, st->buf + st->len, room);
        if (r > 0) {
            st->len += (size_t)r;
            if (st->len > st->limit) {
                st->len = st->limit;
                st->over = true;
                return 2;
            }
            if ((size_t)r < room && !to_eagain)
                return 0;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return 1; /* EOF, or an error that ends the stream */
    }
}

int py_stream_read(struct stream *st)
{
    return stream_read(st, false);
}

int py_stream_drain(struct stream *st)
{
    int r = stream_read(st, true);
    if (r == 2)
        r = stream_read(st, true); /* over now: the rest is discarded */
    return r == 1;
}

void py_stream_close(struct fr_runtime *rt, struct stream *st)
{
    if (st->fd < 0)
        return;
    fr_host_close(rt->host, st->fd); /* our read end: no other descriptor has it */
    st->fd = -1;
}

void py_stream_trim(struct stream *st)
{
    if (st->cap > KEEP_ALLOC) {
        free(st->buf);
        st->buf = NULL;
        st->cap = 0;
    }
    st->len = 0;
}

/* ---- the report ---------------------------------------------------------- */

enum { R_OUTPUTS, R_TYPE, R_MESSAGE, R_LINE, R_MEMORY, R_SANDBOX, R_NKEYS };

struct report {
    struct fr_json_span f[R_NKEYS];
    size_t count[R_NKEYS]; /* elements of an array field (outputs) */
};

static bool span_is(struct fr_json_span v, char first)
{
    return v.p && v.n && v.p[0] == first;
}

static bool span_is_word(struct fr_json_span v, const char *word)
{
    return v.p && v.n == strlen(word) && !memcmp(v.p, word, v.n);
}

static bool string_or_null(struct fr_json_span v)
{
    return !v.p || span_is(v, '"') || span_is_word(v, "null");
}

static bool integer_span(struct fr_json_span v, long *out)
{
    char buf[FR_JSON_NUMBER_MAX + 1];
    if (!v.p || v.n > FR_JSON_NUMBER_MAX || memchr(v.p, '.', v.n) || memchr(v.p, 'e', v.n) || memchr(v.p, 'E', v.n) ||
        !(v.p[0] == '-' || (v.p[0] >= '0' && v.p[0] <= '9')))
        return false;
    memcpy(buf, v.p, v.n);
    buf[v.n] = '\0';
    int64_t x;
    if (fr_parse_i64(buf, &x) < 0 || x < -2147483647L || x > 2147483647L)
        return false;
    *out = (long)x;
    return true;
}

/* The report is one JSON object of the documented shape, or it is no
 * report at all: strictly checked, since its outputs are copied verbatim
 * into the result line. */
static bool parse_report(const struct stream *rep, struct report *r)
{
    static const char *const keys[R_NKEYS] = {"outputs",    "error_type", "error_message",
                                              "error_line", "memory",     "sandbox_error"};
    long n;
    if (rep->over || !rep->len ||
        fr_json_members(rep->buf, rep->len, keys, R_NKEYS, r->f, r->count, 2 + PY_MAX_NESTING, FR_JSON_STRICT) < 0)
        return false;
    if (r->f[R_SANDBOX].p)
        return integer_span(r->f[R_SANDBOX], &n);
    return span_is(r->f[R_OUTPUTS], '[') && string_or_null(r->f[R_TYPE]) && string_or_null(r->f[R_MESSAGE]) &&
           (!r->f[R_LINE].p || span_is_word(r->f[R_LINE], "null") || integer_span(r->f[R_LINE], &n)) &&
           (!r->f[R_MEMORY].p || span_is_word(r->f[R_MEMORY], "true") || span_is_word(r->f[R_MEMORY], "false"));
}

/* Did the prediction fail, by its report: it raised (an error type), or
 * ran out of memory. */
static bool report_failed(const struct report *r)
{
    return span_is(r->f[R_TYPE], '"') || span_is_word(r->f[R_MEMORY], "true");
}

/* Does the report hold as many outputs as the runtime writes for this
 * job? One per input; fewer only after a failure (none when the code did
 * not compile or define the entry, those before a MemoryError). Any other
 * count is a report the runtime never writes: `ok` with no output, or
 * outputs for inputs the job does not have. */
static bool outputs_fit(const struct pyslot *s, const struct report *r)
{
    size_t n = r->count[R_OUTPUTS], want = fr_job_member(s->job, "inputs")->count;
    return n == want || (n < want && report_failed(r));
}

/* A checked string literal as text of at most max bytes (cut at a
 * character boundary), malloc'd; *len its length. NULL when v is not a
 * string (null) or on ENOMEM. */
static char *text_of(struct fr_json_span v, size_t max, size_t *len)
{
    if (!span_is(v, '"'))
        return NULL;
    char *buf = malloc(v.n);
    if (!buf)
        return NULL;
    long got = fr_json_string_decode(v, buf, v.n - 1);
    size_t l = got > 0 ? (size_t)got : 0;
    if (l > max) {
        l = max;
        while (l && ((unsigned char)buf[l] & 0xC0) == 0x80)
            l--;
    }
    buf[l] = '\0';
    *len = l;
    return buf;
}

/* error_type and error_message of the report, into the slot. */
static void report_error(struct pyslot *s, const struct report *r, struct fr_raw *raw)
{
    size_t len;
    char *type = text_of(r->f[R_TYPE], sizeof s->type - 1, &len);
    if (type) {
        memcpy(s->type, type, len + 1);
        free(type);
        raw->error_type = s->type;
    }
    free(s->message);
    s->message = text_of(r->f[R_MESSAGE], PY_MESSAGE_MAX, &s->message_len);
    if (s->message) {
        raw->error_message = s->message;
        raw->error_message_len = s->message_len;
    }
}

/* ---- facts ---------------------------------------------------------------- */

static void set_rusage(struct fr_raw *raw, const struct exit_facts *f)
{
    raw->has_rusage = true;
    raw->ru.ru_utime.tv_sec = (time_t)(f->utime_us / 1000000);
    raw->ru.ru_utime.tv_usec = (suseconds_t)(f->utime_us % 1000000);
    raw->ru.ru_stime.tv_sec = (time_t)(f->stime_us / 1000000);
    raw->ru.ru_stime.tv_usec = (suseconds_t)(f->stime_us % 1000000);
    raw->ru.ru_maxrss = (long)f->max_rss_kb;
    /* wall_ms stays the pool's (begin to end), as for every runtime: the
     * time the wall limit is measured against. */
}

static void result_limit(const struct pyrt *py, bool killed, struct fr_raw *raw, char *msg, size_t msglen)
{
    char size[32];
    raw->output_exceeded = true;
    raw->error_type = "ResultLimit";
    snprintf(msg, msglen, "the outputs exceed the result limit of %s once encoded as JSON ([sandbox] result)%s",
             fr_format_size(py->result_cap, size, sizeof size), killed ? "; the prediction was killed" : "");
    raw->error_message = msg;
}

/* How a prediction whose process exited by itself ended: its report says. */
static void exited_by_itself(struct pyrt *py, struct pyslot *s, const struct stream *rep, struct fr_raw *raw, char *msg,
                             size_t msglen)
{
    struct report r;
    int code = WEXITSTATUS(s->facts.wstatus);
    /* A sandbox failure is reported only by a process whose apply failed:
     * from one that applied it (its worker says so) it is the
     * prediction's own text, no report of the runtime's. */
    bool have = code == 0 && parse_report(rep, &r) && (r.f[R_SANDBOX].p ? !s->facts.applied : outputs_fit(s, &r));
    if (!have) {
        raw->status = FR_STATUS_CRASH;
        raw->error_type = "NoResult";
        snprintf(msg, msglen,
                 rep->len ? "the prediction's process exited with status %d without a readable result (bytes "
                            "written to the result descriptor, os._exit, or a C extension calling exit)"
                          : "the prediction's process exited with status %d without a result (os._exit, or a C "
                            "extension calling exit)",
                 code);
        raw->error_message = msg;
        return;
    }
    long v;
    if (r.f[R_SANDBOX].p && integer_span(r.f[R_SANDBOX], &v)) {
        raw->status = FR_STATUS_CRASH;
        raw->error_type = "SandboxError";
        snprintf(msg, msglen, "applying the sandbox in the prediction's child failed: %s", strerror((int)v));
        raw->error_message = msg;
        return;
    }
    if (r.f[R_OUTPUTS].n > py->result_cap) { /* the report's other fields had room, not they */
        result_limit(py, false, raw, msg, msglen);
        return;
    }
    raw->outputs = r.f[R_OUTPUTS].p;
    raw->outputs_len = r.f[R_OUTPUTS].n;
    if (integer_span(r.f[R_LINE], &v) && v > 0)
        raw->error_line = v;
    raw->memory_hint = span_is_word(r.f[R_MEMORY], "true");
    if (report_failed(&r)) {
        raw->status = raw->memory_hint ? FR_STATUS_MEMORY : FR_STATUS_ERROR;
        report_error(s, &r, raw);
        if (!raw->error_type)
            raw->error_type = "MemoryError";
        if (!raw->error_message)
            raw->error_message = "";
    } else {
        raw->status = FR_STATUS_OK;
    }
}

static const char *kill_name(enum py_kill k)
{
    switch (k) {
    case PY_KILL_CPU: return "CPU time limit";
    case PY_KILL_WALL: return "wall time limit";
    case PY_KILL_OUTPUT: return "output limit";
    case PY_KILL_RESULT: return "result limit";
    case PY_KILL_NONE: break;
    }
    return "limit";
}

void py_collect(struct fr_runtime *rt, struct pyslot *s, struct fr_raw *raw, char *msg, size_t msglen)
{
    struct exit_facts *f = &s->facts;
    /* Reuse: fitrun killed the job's process for a limit, maybe after the
     * process said it was done and its worker took it to live on. It is
     * dying: the next RUN asks for a fresh one (FR_PY_RUN_FRESH). */
    if (PY(rt)->reuse && s->kill != PY_KILL_NONE && !f->replaced[0]) {
        snprintf(f->replaced, sizeof f->replaced, "killed: fitrun killed it at the job's %s", kill_name(s->kill));
        s->fresh = true;
    }
    int ws = f->wstatus;
    fr_raw_init(raw);
    raw->kind = FR_RAW_FINISHED;
    raw->wstatus = ws;
    set_rusage(raw, f);
    /* The worker read it from the sandbox's listener (the prediction gave
     * its copy up before any of its code ran); fr_classify decides what
     * it means. */
    raw->violation_nr = f->violation_nr;
    raw->replaced = f->replaced[0] ? f->replaced : NULL;
    raw->lives_on = PY(rt)->reuse && !raw->replaced;
    raw->out = s->out.buf;
    raw->out_len = s->out.len;
    raw->err = s->err.buf;
    raw->err_len = s->err.len;
    raw->has_outputs = true;
    raw->cpu_exceeded = s->kill == PY_KILL_CPU;
    raw->cpu_timer = WIFSIGNALED(ws) && (WTERMSIG(ws) == SIGPROF || WTERMSIG(ws) == SIGXCPU);
    raw->wall_exceeded = s->kill == PY_KILL_WALL;
    raw->output_exceeded = s->out.over || s->err.over || s->rep.over;
    if (s->rep.over && !s->out.over && !s->err.over)
        result_limit(PY(rt), true, raw, msg, msglen);
    if (WIFEXITED(ws) && !raw->output_exceeded && !raw->cpu_exceeded && !raw->wall_exceeded)
        exited_by_itself(PY(rt), s, &s->rep, raw, msg, msglen);
}
