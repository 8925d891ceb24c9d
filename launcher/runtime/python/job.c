/* job.c — a python job: checked before it is scheduled, then sent to its
 * prediction's child, framed (its length, then spans of the job line, never
 * "expected"). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* The value of `key` is a JSON array (absent, null: no). */
static bool is_array(const struct fr_json_member *m)
{
    return m && m->value.p[0] == '[';
}

static bool is_null(const struct fr_json_member *m)
{
    return m->value.n == 4 && !memcmp(m->value.p, "null", 4);
}

/* A function name: an identifier (fitrun's one rule) without NUL. */
static bool entry_ok(const struct fr_json_member *m)
{
    char name[256];
    if (m->value.p[0] != '"' || m->value.n > sizeof name)
        return false;
    long len = fr_json_string_decode(m->value, name, sizeof name - 1);
    if (len < 0 || memchr(name, '\0', (size_t)len))
        return false;
    name[len] = '\0';
    return fr_is_identifier(name);
}

/* The index of the first element of an array member nested deeper than
 * the limit, or -1. Only an array whose depth says one is too deep is
 * walked. */
static long too_deep(const struct fr_json_member *list)
{
    if (list->depth <= PY_MAX_NESTING + 1)
        return -1;
    struct fr_json_iter it;
    struct fr_json_span v;
    long i = 0;
    for (fr_json_iter_init(&it, list->value); fr_json_iter_next(&it, &v); i++)
        if (!fr_json_value(v.p, v.n, PY_MAX_NESTING, FR_JSON_SKIP))
            return i;
    return -1;
}

int py_check(struct fr_runtime *rt, const struct fr_job *job, char *err, size_t errlen)
{
    (void)rt;
    const struct fr_json_member *code = fr_job_member(job, "code"), *inputs = fr_job_member(job, "inputs");
    const struct fr_json_member *entry = fr_job_member(job, "entry"), *expected = fr_job_member(job, "expected");
    if (!code || code->value.p[0] != '"') {
        snprintf(err, errlen, "python job needs \"code\" (a string)");
        return -1;
    }
    if (!is_array(inputs)) {
        snprintf(err, errlen, "python job needs \"inputs\" (an array of arguments for the entry function)");
        return -1;
    }
    if (entry && !is_null(entry) && !entry_ok(entry)) {
        snprintf(err, errlen, "\"entry\" must be the name of a Python function");
        return -1;
    }
    if (expected && !is_null(expected) && (!is_array(expected) || expected->count != inputs->count)) {
        snprintf(err, errlen, "\"expected\" must be an array as long as \"inputs\" (%zu)", inputs->count);
        return -1;
    }
    /* What the child decodes and what a prediction can return share one
     * limit; nothing deeper is ever sent, and nothing deeper can pass. */
    long deep = too_deep(inputs);
    const char *what = "inputs";
    if (deep < 0 && is_array(expected)) {
        deep = too_deep(expected);
        what = "expected";
    }
    if (deep >= 0) {
        snprintf(err, errlen, "\"%s\"[%ld] is nested deeper than %d levels (the python runtime's limit)", what, deep,
                 PY_MAX_NESTING);
        return -1;
    }
    return 0;
}

int py_job_spans(struct pyslot *s, const struct fr_job *job, char *err, size_t errlen)
{
    static const char *const keys[] = {"id", "code", "inputs", "entry"};
    static const char *const heads[] = {"{\"id\":", ",\"code\":", ",\"inputs\":", ",\"entry\":"};
    const struct fr_json_member *v[4];
    for (int i = 0; i < 4; i++)
        v[i] = fr_job_member(job, keys[i]);
    if (!v[0] || !v[1] || !v[2]) {
        snprintf(err, errlen, "python runtime: the job line cannot be cut into its fields");
        return -1;
    }
    int n = 1; /* iov[0]: the frame */
    size_t len = 0;
    for (int i = 0; i < 4; i++) {
        if (!v[i])
            continue;
        s->iov[n++] = (struct iovec){(void *)heads[i], strlen(heads[i])};
        s->iov[n++] = (struct iovec){(void *)v[i]->value.p, v[i]->value.n};
        len += strlen(heads[i]) + v[i]->value.n;
    }
    s->iov[n++] = (struct iovec){(void *)"}", 1};
    len++;
    if (len > UINT32_MAX) {
        snprintf(err, errlen, "python runtime: the job is larger than 4 GiB");
        return -1;
    }
    s->frame = (uint32_t)len;
    s->iov[0] = (struct iovec){&s->frame, sizeof s->frame};
    s->iovcnt = n;
    s->iovpos = 0;
    return 0;
}

/* Nothing more to send: a per-job pipe is closed (EOF), a worker's own
 * pipe stays for its next job, unwatched. */
static void job_done(struct fr_runtime *rt, struct pyslot *s)
{
    if (PY(rt)->persistent) {
        if (s->job_watched)
            fr_host_unwatch(rt->host, s->job_w);
    } else if (s->job_watched)
        fr_host_close(rt->host, s->job_w); /* our write end: no other descriptor has it */
    else
        close(s->job_w);
    s->job_watched = false;
    s->job_w = -1;
}

int py_job_flush(struct fr_runtime *rt, struct pyslot *s)
{
    while (s->iovpos < s->iovcnt) {
        ssize_t w = writev(s->job_w, s->iov + s->iovpos, s->iovcnt - s->iovpos);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!s->job_watched) {
                int slot = (int)(s - PY(rt)->slots);
                if (fr_host_watch(rt->host, s->job_w, EPOLLOUT, slot) < 0)
                    return -1;
                s->job_watched = true;
            }
            return 0;
        }
        if (w < 0) {
            /* EPIPE: the child is gone without reading it all; how it went
             * is for its worker to say. */
            int e = errno;
            job_done(rt, s);
            if (e == EPIPE)
                return 1;
            errno = e;
            return -1;
        }
        size_t left = (size_t)w;
        while (s->iovpos < s->iovcnt && left >= s->iov[s->iovpos].iov_len)
            left -= s->iov[s->iovpos++].iov_len;
        if (left) {
            s->iov[s->iovpos].iov_base = (char *)s->iov[s->iovpos].iov_base + left;
            s->iov[s->iovpos].iov_len -= left;
        }
    }
    job_done(rt, s);
    return 1;
}
