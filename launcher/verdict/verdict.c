/* verdict.c — the status of a finished job, "ran to its end", and
 * `passed` (Python's ==). See include/fitrun/verdict.h.
 *
 * Outputs are compared as text against the expected tree, in one pass that
 * always consumes the whole output value (fr_json_value skips what no
 * longer needs comparing): no tree is built for what a prediction
 * returned, so its size costs fitrun nothing beyond the text itself. */
#include "fitrun/verdict.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "fitrun/jsonscan.h"
#include "fitrun/common.h"

#define TAIL_MAX 300
#define SMALL 256

bool fr_ran_to_end(enum fr_status status)
{
    return status == FR_STATUS_OK || status == FR_STATUS_ERROR;
}

/* ---- Python's == over JSON ------------------------------------------------ */

struct cursor {
    const char *p, *end;
};

static void skip_ws(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static void skip_value(struct cursor *c)
{
    size_t n = fr_json_value(c->p, (size_t)(c->end - c->p), FR_JSON_SKIP_DEPTH, FR_JSON_SKIP);
    c->p = n ? c->p + n : c->end; /* unchecked text: give up on the rest */
}

/* Python's int == float: exact, as CPython compares them. */
static bool int_float_equal(int64_t i, double d)
{
    if (!isfinite(d) || d != trunc(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return false;
    return (int64_t)d == i;
}

/* A number (or a bool, as 0/1) of the expected tree against a number token. */
static bool number_equal(const json_t *e, bool integral, int64_t iv, double dv)
{
    if (json_is_real(e)) {
        double x = json_real_value(e);
        return integral ? int_float_equal(iv, x) : x == dv;
    }
    int64_t x = json_is_integer(e) ? (int64_t)json_integer_value(e) : json_is_true(e) ? 1 : 0;
    return integral ? x == iv : int_float_equal(x, dv);
}

static bool is_numeric(const json_t *e)
{
    return json_is_number(e) || json_is_boolean(e);
}

static bool number_token(struct cursor *c, const json_t *e)
{
    const char *start = c->p;
    bool integral = true;
    while (c->p < c->end && strchr("+-.eE0123456789", *c->p) && *c->p) {
        if (*c->p == '.' || *c->p == 'e' || *c->p == 'E')
            integral = false;
        c->p++;
    }
    size_t len = (size_t)(c->p - start);
    if (!is_numeric(e) || len > FR_JSON_NUMBER_MAX)
        return false;
    char buf[FR_JSON_NUMBER_MAX + 1];
    memcpy(buf, start, len);
    buf[len] = '\0';
    int64_t iv = integral ? strtoll(buf, NULL, 10) : 0;
    double dv = integral ? 0 : strtod(buf, NULL);
    return number_equal(e, integral, iv, dv);
}

/* A literal: true, false, null. */
static bool literal(struct cursor *c, const json_t *e)
{
    if (*c->p == 'n') {
        c->p += 4;
        return json_is_null(e);
    }
    bool t = *c->p == 't';
    c->p += t ? 4 : 5;
    return is_numeric(e) && number_equal(e, true, t ? 1 : 0, 0);
}

static bool string_token(struct cursor *c, const json_t *e)
{
    struct fr_json_span lit = {c->p, 0};
    skip_value(c);
    lit.n = (size_t)(c->p - lit.p);
    if (!json_is_string(e))
        return false;
    size_t want = json_string_length(e);
    if (lit.n < 2 || want > lit.n - 2) /* decoding never makes a string longer */
        return false;
    char small[SMALL], *buf = want <= SMALL ? small : malloc(want);
    if (!buf)
        return false;
    long got = fr_json_string_decode(lit, buf, want);
    bool same = got == (long)want && !memcmp(buf, json_string_value(e), want);
    if (buf != small)
        free(buf);
    return same;
}

static bool equal(const json_t *e, struct cursor *c);

/* Between elements and members: whitespace and one comma. */
static void skip_separator(struct cursor *c)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ',')
        c->p++;
    skip_ws(c);
}

static bool array_equal(const json_t *e, struct cursor *c)
{
    bool same = json_is_array(e);
    size_t n = same ? json_array_size(e) : 0, i = 0;
    c->p++; /* '[' */
    for (skip_ws(c); c->p < c->end && *c->p != ']'; skip_separator(c), i++) {
        if (same && i < n)
            same = equal(json_array_get(e, i), c);
        else {
            same = false;
            skip_value(c);
        }
    }
    if (c->p < c->end)
        c->p++; /* ']' */
    return same && i == n;
}

static int by_address(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return x < y ? -1 : x > y;
}

/* One member of the output object against the expected object: its value
 * when the key is there (NULL when not). *key_id: the expected key's
 * identity, to find duplicates. */
static json_t *expected_member(const json_t *e, struct fr_json_span key, const void **key_id)
{
    char small[SMALL], *buf = key.n <= SMALL ? small : malloc(key.n);
    if (!buf)
        return NULL;
    long len = fr_json_string_decode(key, buf, key.n - 1);
    json_t *v = NULL;
    if (len >= 0 && !memchr(buf, '\0', (size_t)len)) { /* jansson keys never hold NUL */
        buf[len] = '\0';
        void *it = json_object_iter_at((json_t *)e, buf);
        if (it) {
            v = json_object_iter_value(it);
            *key_id = json_object_iter_key(it);
        }
    }
    if (buf != small)
        free(buf);
    return v;
}

static bool object_equal(const json_t *e, struct cursor *c)
{
    bool same = json_is_object(e);
    size_t n = same ? json_object_size(e) : 0, i = 0;
    const void *small[16], **seen = n <= 16 ? small : malloc(n * sizeof *seen);
    if (!seen)
        same = false;
    c->p++; /* '{' */
    for (skip_ws(c); c->p < c->end && *c->p == '"'; skip_separator(c), i++) {
        struct fr_json_span key = {c->p, 0};
        struct cursor k = *c;
        skip_value(&k);
        key.n = (size_t)(k.p - key.p);
        c->p = k.p;
        skip_ws(c);
        if (c->p < c->end && *c->p == ':')
            c->p++;
        skip_ws(c);
        json_t *v = same && i < n ? expected_member(e, key, &seen[i]) : NULL;
        if (v)
            same = equal(v, c);
        else {
            same = false;
            skip_value(c);
        }
    }
    if (c->p < c->end)
        c->p++; /* '}' */
    same = same && i == n;
    if (same && n > 1) {
        /* Every key found and as many as expected: equal unless one came twice. */
        qsort(seen, n, sizeof *seen, by_address);
        for (size_t j = 1; j < n && same; j++)
            same = seen[j] != seen[j - 1];
    }
    if (seen != small)
        free(seen);
    return same;
}

/* Compare, and always move c past the whole output value. */
static bool equal(const json_t *e, struct cursor *c)
{
    if (c->p >= c->end)
        return false;
    switch (*c->p) {
    case '[': return array_equal(e, c);
    case '{': return object_equal(e, c);
    case '"': return string_token(c, e);
    case 't':
    case 'f':
    case 'n': return literal(c, e);
    default: return number_token(c, e);
    }
}

bool fr_py_equal(const json_t *expected, const char *json, size_t len)
{
    struct cursor c = {json, json + len};
    skip_ws(&c);
    return equal(expected, &c);
}

char *fr_passed_json(const json_t *expected, const char *outputs, size_t outputs_len, enum fr_status status,
                     size_t *len)
{
    size_t n = json_array_size(expected);
    char *out = malloc(n * 6 + 8); /* "false," per entry */
    if (!out)
        return NULL;
    size_t o = 0;
    if (!outputs || !fr_ran_to_end(status) || !json_is_array(expected)) {
        o = (size_t)sprintf(out, "null");
        *len = o;
        return out;
    }
    struct fr_json_iter it;
    fr_json_iter_init(&it, (struct fr_json_span){outputs, outputs_len});
    out[o++] = '[';
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(expected, i);
        struct fr_json_span v;
        bool has = fr_json_iter_next(&it, &v);
        const char *word = json_is_null(e) ? "null" : has && fr_py_equal(e, v.p, v.n) ? "true" : "false";
        o += (size_t)sprintf(out + o, "%s%s", i ? "," : "", word);
    }
    out[o++] = ']';
    out[o] = '\0';
    *len = o;
    return out;
}

/* ---- status ------------------------------------------------------------- */

/* The last non-empty line of a stream, for error_message. */
static void last_line(const char *s, size_t n, char *buf, size_t size)
{
    buf[0] = '\0';
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t start = n;
    while (start && s[start - 1] != '\n')
        start--;
    size_t len = n - start;
    if (len >= size)
        len = size - 1;
    memcpy(buf, s + start, len);
    buf[len] = '\0';
    /* NUL bytes would cut the message short; the message is text */
    for (size_t i = 0; i < len; i++)
        if (!buf[i])
            buf[i] = ' ';
}

bool fr_cpu_budget_spent(uint64_t used_ms, uint64_t budget_ms)
{
    return budget_ms && used_ms >= budget_ms / 10 * 9 + budget_ms % 10 * 9 / 10;
}

bool fr_verdict_unexplained_kill(const struct fr_raw *raw, enum fr_abort_reason aborted)
{
    return raw->kind == FR_RAW_FINISHED && WIFSIGNALED(raw->wstatus) && WTERMSIG(raw->wstatus) == SIGKILL && !aborted &&
           !raw->cpu_exceeded && !raw->wall_exceeded && !raw->output_exceeded;
}

bool fr_verdict_cgroup_oom(const struct fr_raw *raw, uint64_t kills)
{
    return kills > 0 && raw->kind == FR_RAW_FINISHED && !(WIFEXITED(raw->wstatus) && WEXITSTATUS(raw->wstatus) == 0);
}

static void classify(const struct fr_verdict_in *in, struct fr_verdict *v)
{
    const struct fr_raw *raw = in->raw;
    struct fr_classify_in ci = {
        .wstatus = raw->wstatus,
        .ru = raw->has_rusage ? &raw->ru : NULL,
        .cpu_limit_ms = in->cpu_limit_ms,
        .wall_expired = in->aborted == FR_ABORT_WALL || raw->wall_exceeded,
        .output_exceeded = raw->output_exceeded,
        .violation_nr = raw->violation_nr,
        .memory_hint = raw->memory_hint,
        .oom_killed = in->oom_killed,
    };
    fr_classify(&ci, &v->oc);
    v->status = v->oc.status;
    v->timeout = v->oc.timeout;
    bool cpu_kill = in->aborted == FR_ABORT_CPU || raw->cpu_exceeded;
    /* A CPU-limit signal is a timeout only when the budget was spent: a job
     * can send it to itself at any time. Decided where the runtime's rusage
     * is the job's own (cpu_timer); the exec preset's relay reports its own
     * rusage, so there SIGXCPU stays fr_classify's timeout. */
    if (!cpu_kill && raw->cpu_timer && v->status != FR_STATUS_OUTPUT_LIMIT && !ci.wall_expired && !in->oom_killed) {
        bool spent = fr_cpu_budget_spent(in->cpu_ms, in->cpu_limit_ms);
        v->status = spent ? FR_STATUS_TIMEOUT : FR_STATUS_SIGNAL;
        v->timeout = spent ? FR_TIMEOUT_CPU : FR_TIMEOUT_NONE;
    }
    /* The pool's or the runtime's CPU kill arrives as SIGKILL, which
     * fr_classify cannot tell from any other SIGKILL: it is a CPU timeout
     * unless the job was caught doing something worse first. */
    if (cpu_kill && v->status != FR_STATUS_VIOLATION && v->status != FR_STATUS_OUTPUT_LIMIT) {
        v->status = FR_STATUS_TIMEOUT;
        v->timeout = FR_TIMEOUT_CPU;
    }
    if (raw->status >= 0)
        v->status = (enum fr_status)raw->status;
    if (v->status == FR_STATUS_TIMEOUT && v->timeout == FR_TIMEOUT_NONE)
        v->timeout = ci.wall_expired ? FR_TIMEOUT_WALL : FR_TIMEOUT_CPU;
}

static void describe(const struct fr_verdict_in *in, struct fr_verdict *v)
{
    const struct fr_raw *raw = in->raw;
    char tail[TAIL_MAX + 1], size[32];
    last_line(raw->err ? raw->err : "", raw->err_len, tail, sizeof tail);
    const struct fr_outcome *oc = &v->oc;
    switch (v->status) {
    case FR_STATUS_OK: break;
    case FR_STATUS_ERROR:
        snprintf(v->type, sizeof v->type, "exit %d", oc->exit_code);
        snprintf(v->msg, sizeof v->msg, "%s", *tail ? tail : "exited with a non-zero status");
        break;
    case FR_STATUS_TIMEOUT:
        if (v->timeout == FR_TIMEOUT_CPU) {
            snprintf(v->type, sizeof v->type, "CPUTimeout");
            snprintf(v->msg, sizeof v->msg, "CPU time limit of %llu ms exceeded (used %llu ms)",
                     (unsigned long long)in->cpu_limit_ms, (unsigned long long)in->cpu_ms);
        } else {
            snprintf(v->type, sizeof v->type, "WallTimeout");
            snprintf(v->msg, sizeof v->msg, "wall time limit of %llu ms exceeded",
                     (unsigned long long)in->wall_limit_ms);
        }
        break;
    case FR_STATUS_MEMORY:
        if (in->oom_killed && oc->signal == SIGKILL) {
            snprintf(v->type, sizeof v->type, "OOMKill");
            snprintf(v->msg, sizeof v->msg, "killed by the out-of-memory killer (SIGKILL; oom_kill went up in %s)",
                     in->oom_counter && *in->oom_counter ? in->oom_counter : "the memory cgroup");
            break;
        }
        snprintf(v->type, sizeof v->type, "MemoryLimit");
        if (*tail)
            snprintf(v->msg, sizeof v->msg, "%s", tail);
        else
            snprintf(v->msg, sizeof v->msg, "memory limit of %s exceeded",
                     fr_format_size(in->memory_limit, size, sizeof size));
        break;
    case FR_STATUS_VIOLATION:
        snprintf(v->type, sizeof v->type, oc->syscall[0] ? "Violation(%s)" : "Violation", oc->syscall);
        snprintf(v->msg, sizeof v->msg, "forbidden system call %s", oc->syscall[0] ? oc->syscall : "(unknown)");
        break;
    case FR_STATUS_SIGNAL:
        snprintf(v->type, sizeof v->type, "%s", oc->signal_name); /* fr_classify names every signal */
        snprintf(v->msg, sizeof v->msg, "killed by %s", v->type);
        break;
    case FR_STATUS_OUTPUT_LIMIT:
        snprintf(v->type, sizeof v->type, "OutputLimit");
        snprintf(v->msg, sizeof v->msg, "output exceeded the cap of %s per stream; the job was killed",
                 fr_format_size(in->output_cap, size, sizeof size));
        break;
    case FR_STATUS_INVALID: snprintf(v->type, sizeof v->type, "InvalidJob"); break;
    case FR_STATUS_CRASH: snprintf(v->type, sizeof v->type, "WorkerCrash"); break;
    }
}

void fr_verdict_judge(const struct fr_verdict_in *in, struct fr_verdict *v)
{
    memset(v, 0, sizeof *v);
    classify(in, v);
    describe(in, v);
}
