/* job.c — a python job: checked before it is scheduled, then sent to its
 * prediction's child as spans of the job line, never "expected". */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

#include "internal.h"

static bool is_identifier(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              (unsigned char)*s >= 0x80))
            return false;
    return true;
}

/* Is v nested deeper than `limit` arrays/objects (a scalar is 0, [1] is 1)? */
static bool deeper_than(const json_t *v, int limit)
{
    if (!json_is_array(v) && !json_is_object(v))
        return false;
    if (limit == 0)
        return true;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (deeper_than(json_array_get(v, i), limit - 1))
                return true;
        return false;
    }
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)v, k, m)
    {
        if (deeper_than(m, limit - 1))
            return true;
    }
    return false;
}

/* The index of the first value of `list` nested deeper than the limit, or -1. */
static long too_deep(const json_t *list)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (deeper_than(json_array_get(list, i), PY_MAX_NESTING))
            return (long)i;
    return -1;
}

int py_check(struct fr_runtime *rt, const struct fr_job *job, char *err, size_t errlen)
{
    (void)rt;
    json_t *o = job->obj;
    json_t *code = json_object_get(o, "code"), *inputs = json_object_get(o, "inputs");
    json_t *entry = json_object_get(o, "entry"), *expected = json_object_get(o, "expected");
    if (!json_is_string(code)) {
        snprintf(err, errlen, "python job needs \"code\" (a string)");
        return -1;
    }
    if (!json_is_array(inputs)) {
        snprintf(err, errlen, "python job needs \"inputs\" (an array of arguments for the entry function)");
        return -1;
    }
    if (entry && !json_is_null(entry) &&
        (!json_is_string(entry) || strlen(json_string_value(entry)) != json_string_length(entry) ||
         !is_identifier(json_string_value(entry)))) {
        snprintf(err, errlen, "\"entry\" must be the name of a Python function");
        return -1;
    }
    if (expected && !json_is_null(expected) &&
        (!json_is_array(expected) || json_array_size(expected) != json_array_size(inputs))) {
        snprintf(err, errlen, "\"expected\" must be an array as long as \"inputs\" (%zu)", json_array_size(inputs));
        return -1;
    }
    /* What the child decodes and what a prediction can return share one
     * limit; nothing deeper is ever sent, and nothing deeper can pass. */
    long deep = too_deep(inputs);
    const char *what = "inputs";
    if (deep < 0 && json_is_array(expected)) {
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
    struct fr_json_span v[4];
    if (!job->text || fr_json_members(job->text, job->len, keys, 4, v, FR_JSON_SKIP_DEPTH, FR_JSON_SKIP) < 0 ||
        !v[0].p || !v[1].p || !v[2].p) {
        snprintf(err, errlen, "python runtime: the job line cannot be cut into its fields");
        return -1;
    }
    int n = 0;
    for (int i = 0; i < 4; i++) {
        if (!v[i].p)
            continue;
        s->iov[n++] = (struct iovec){(void *)heads[i], strlen(heads[i])};
        s->iov[n++] = (struct iovec){(void *)v[i].p, v[i].n};
    }
    s->iov[n++] = (struct iovec){(void *)"}", 1};
    s->iovcnt = n;
    s->iovpos = 0;
    return 0;
}

static void job_done(struct fr_runtime *rt, struct pyslot *s)
{
    if (s->job_watched)
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
