/* verdict.c — the status of a finished job, "ran to its end", and
 * `passed` (Python's ==). See include/fitrun/verdict.h.
 *
 * Outputs are compared as text against the expected value's text (a span
 * of the job line), in one pass over both that stops at the first
 * difference: no tree is built for either, so a prediction's output costs
 * fitrun nothing beyond its text. Objects are the exception that sorts:
 * each side's members are listed and sorted by key. */
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
    c->p += fr_json_checked_len(c->p, (size_t)(c->end - c->p));
}

/* Python's int == float: exact, as CPython compares them. */
static bool int_float_equal(int64_t i, double d)
{
    if (!isfinite(d) || d != trunc(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return false;
    return (int64_t)d == i;
}

/* A number or a bool (Python's 0 and 1), read from a checked token. */
struct num {
    bool integral;
    int64_t i;
    double d;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_numeric(char c)
{
    return c == 't' || c == 'f' || c == '-' || is_digit(c);
}

/* A byte of a JSON number token. */
static bool is_number_char(char c)
{
    return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* The checked number p[0, len) when it has no exponent and at most 15
 * digits: its digits and its power of ten are then exact doubles, and one
 * division rounds as strtod does (Clinger's fast path). */
static bool small_decimal(const char *p, size_t len, double *out)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    uint64_t m = 0;
    int digits = 0, frac = -1;
    for (size_t i = p[0] == '-'; i < len; i++) {
        if (p[i] == '.') {
            frac = 0;
            continue;
        }
        if (!is_digit(p[i]) || ++digits > 15)
            return false;
        m = m * 10 + (uint64_t)(p[i] - '0');
        frac += frac >= 0;
    }
    double d = (double)m / p10[frac < 0 ? 0 : frac];
    *out = p[0] == '-' ? -d : d;
    return true;
}

/* The number or bool at c (moved past it). False when out of memory. */
static bool read_num(struct cursor *c, struct num *out)
{
    const char *start = c->p;
    /* One digit alone (most of an ARC grid): no copy, no strtoll. */
    if (is_digit(*c->p) && (c->end - c->p == 1 || !is_number_char(c->p[1]))) {
        *out = (struct num){.integral = true, .i = *c->p - '0'};
        c->p++;
        return true;
    }
    if (*c->p == 't' || *c->p == 'f') {
        *out = (struct num){.integral = true, .i = *c->p == 't'};
        c->p += *c->p == 't' ? 4 : 5;
        return true;
    }
    out->integral = true;
    while (c->p < c->end && is_number_char(*c->p)) {
        if (*c->p == '.' || *c->p == 'e' || *c->p == 'E')
            out->integral = false;
        c->p++;
    }
    size_t len = (size_t)(c->p - start);
    if (!out->integral && small_decimal(start, len, &out->d))
        return true;
    char small[FR_JSON_NUMBER_MAX + 1], *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf)
        return false;
    memcpy(buf, start, len);
    buf[len] = '\0';
    if (out->integral)
        out->i = strtoll(buf, NULL, 10);
    else
        out->d = strtod(buf, NULL);
    if (buf != small)
        free(buf);
    return true;
}

static bool num_equal(const struct num *a, const struct num *b)
{
    if (a->integral && b->integral)
        return a->i == b->i;
    if (a->integral)
        return int_float_equal(a->i, b->d);
    if (b->integral)
        return int_float_equal(b->i, a->d);
    return a->d == b->d;
}

/* A checked string literal's text: its own bytes when it has no escape,
 * else decoded into *owned (malloc'd, or small when it fits). */
static bool string_text(struct fr_json_span lit, char *small, size_t nsmall, char **owned, const char **p, size_t *n)
{
    *owned = NULL;
    if (!memchr(lit.p, '\\', lit.n)) {
        *p = lit.p + 1;
        *n = lit.n - 2;
        return true;
    }
    char *buf = lit.n <= nsmall ? small : (*owned = malloc(lit.n));
    if (!buf)
        return false;
    long len = fr_json_string_decode(lit, buf, lit.n);
    *p = buf;
    *n = len > 0 ? (size_t)len : 0;
    return true;
}

/* Python's str ==: the same code points, i.e. the same UTF-8 bytes. */
static bool strings_equal(struct fr_json_span a, struct fr_json_span b)
{
    char sa[SMALL], sb[SMALL], *oa, *ob;
    const char *pa, *pb;
    size_t na, nb;
    bool same = false;
    if (string_text(a, sa, sizeof sa, &oa, &pa, &na)) {
        if (string_text(b, sb, sizeof sb, &ob, &pb, &nb))
            same = na == nb && !memcmp(pa, pb, na);
        free(ob);
    }
    free(oa);
    return same;
}

static bool equal(struct cursor *e, struct cursor *o);

/* Between elements and members: whitespace and one comma. */
static void skip_separator(struct cursor *c)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ',')
        c->p++;
    skip_ws(c);
}

/* Python's list ==: as long, and equal element by element. The first
 * difference decides (no JSON value raises, and none is unequal to itself),
 * so nothing after it is read. */
static bool array_equal(struct cursor *e, struct cursor *o)
{
    e->p++; /* '[' */
    o->p++;
    skip_ws(e);
    skip_ws(o);
    for (;;) {
        bool e_end = e->p >= e->end || *e->p == ']', o_end = o->p >= o->end || *o->p == ']';
        if (e_end || o_end) {
            if (!e_end || !o_end)
                return false;
            break;
        }
        if (!equal(e, o))
            return false;
        skip_separator(e);
        skip_separator(o);
    }
    if (e->p < e->end)
        e->p++; /* ']' */
    if (o->p < o->end)
        o->p++;
    return true;
}

/* An object's members, keys as text, sorted by key. */
struct member {
    const char *k;
    size_t kn;
    char *owned;
    struct fr_json_span v;
};

static int by_key(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    int c = memcmp(x->k, y->k, x->kn < y->kn ? x->kn : y->kn);
    return c ? c : x->kn < y->kn ? -1 : x->kn > y->kn;
}

static void members_free(struct member *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(m[i].owned);
    free(m);
}

/* The members of the checked object at c (moved past it), or NULL (out of
 * memory; *n = SIZE_MAX). */
static struct member *members_of(struct cursor *c, size_t *n)
{
    struct fr_json_span obj = {c->p, 0};
    skip_value(c);
    obj.n = (size_t)(c->p - obj.p);
    struct fr_json_iter it;
    struct fr_json_span k, v;
    size_t cap = 0;
    struct member *m = NULL;
    *n = 0;
    for (fr_json_iter_init(&it, obj); fr_json_iter_member(&it, &k, &v);) {
        if (*n == cap) {
            struct member *nm = realloc(m, (cap = cap ? cap * 2 : 8) * sizeof *m);
            if (!nm)
                goto nomem;
            m = nm;
        }
        struct member *x = &m[*n];
        char none[1];
        if (!string_text(k, none, 0, &x->owned, &x->k, &x->kn))
            goto nomem;
        x->v = v;
        (*n)++;
    }
    if (*n > 1)
        qsort(m, *n, sizeof *m, by_key);
    return m;
nomem:
    members_free(m, *n);
    *n = SIZE_MAX;
    return NULL;
}

/* Python's dict ==: the same keys, equal values. An output object with a
 * key twice is no dict: equal to nothing (the expected one has no
 * duplicate, its job line was read strictly). */
static bool object_equal(struct cursor *e, struct cursor *o)
{
    size_t ne, no;
    struct member *me = members_of(e, &ne), *mo = members_of(o, &no);
    bool same = ne == no && ne != SIZE_MAX;
    for (size_t i = 0; same && i < no; i++)
        same = !by_key(&me[i], &mo[i]) && (i == 0 || by_key(&mo[i - 1], &mo[i]));
    for (size_t i = 0; same && i < no; i++) {
        struct cursor ve = {me[i].v.p, me[i].v.p + me[i].v.n}, vo = {mo[i].v.p, mo[i].v.p + mo[i].v.n};
        same = equal(&ve, &vo);
    }
    members_free(me, ne == SIZE_MAX ? 0 : ne);
    members_free(mo, no == SIZE_MAX ? 0 : no);
    return same;
}

static struct fr_json_span take(struct cursor *c)
{
    struct fr_json_span s = {c->p, 0};
    skip_value(c);
    s.n = (size_t)(c->p - s.p);
    return s;
}

/* Compare; when equal, both cursors move past their whole values (when
 * not, they are left where the difference was found). */
static bool equal(struct cursor *e, struct cursor *o)
{
    if (e->p >= e->end || o->p >= o->end)
        return false;
    char a = *e->p, b = *o->p;
    if (a == '[' && b == '[')
        return array_equal(e, o);
    if (a == '{' && b == '{')
        return object_equal(e, o);
    if (a == '"' && b == '"') {
        struct fr_json_span x = take(e), y = take(o);
        return strings_equal(x, y);
    }
    if (is_numeric(a) && is_numeric(b)) {
        struct num x, y;
        bool ok = read_num(e, &x), ok2 = read_num(o, &y);
        return ok && ok2 && num_equal(&x, &y);
    }
    bool same = a == 'n' && b == 'n';
    skip_value(e);
    skip_value(o);
    return same;
}

bool fr_py_equal(struct fr_json_span expected, struct fr_json_span output)
{
    struct cursor e = {expected.p, expected.p + expected.n}, o = {output.p, output.p + output.n};
    skip_ws(&e);
    skip_ws(&o);
    /* The same text is the same value, and equal to itself: both texts are
     * strict JSON (no NaN, which alone is unequal to itself in Python),
     * and the expected one has no key twice. A correct prediction's
     * outputs usually are the expected text byte for byte. */
    if (e.end - e.p == o.end - o.p && !memcmp(e.p, o.p, (size_t)(e.end - e.p)))
        return true;
    return equal(&e, &o);
}

char *fr_passed_json(struct fr_json_span expected, const char *outputs, size_t outputs_len, enum fr_status status,
                     size_t *len)
{
    if (!outputs || !fr_ran_to_end(status)) {
        char *buf = strdup("null");
        if (buf)
            *len = 4;
        return buf;
    }
    /* An element of `expected` takes at least 2 bytes with its comma, and
     * gives at most 6 ("false,"): 3 bytes per byte of it is room enough,
     * and the elements are walked once. */
    if (expected.n > (SIZE_MAX - 8) / 3)
        return NULL;
    char *buf = malloc(expected.n * 3 + 8);
    if (!buf)
        return NULL;
    struct fr_json_iter it, out;
    struct fr_json_span e, v;
    size_t o = 0;
    fr_json_iter_init(&it, expected);
    fr_json_iter_init(&out, (struct fr_json_span){outputs, outputs_len});
    buf[o++] = '[';
    for (bool first = true; fr_json_iter_next(&it, &e); first = false) {
        bool same = fr_json_iter_same(&out, e, &v), has = same || fr_json_iter_next(&out, &v);
        const char *word = e.p[0] == 'n' ? "null" : same || (has && fr_py_equal(e, v)) ? "true" : "false";
        if (!first)
            buf[o++] = ',';
        size_t wl = strlen(word);
        memcpy(buf + o, word, wl);
        o += wl;
    }
    buf[o++] = ']';
    buf[o] = '\0';
    *len = o;
    return buf;
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

bool fr_verdict_over_cpu_budget(enum fr_status status, uint64_t used_ms, uint64_t budget_ms)
{
    return budget_ms && used_ms >= budget_ms && (status == FR_STATUS_OK || status == FR_STATUS_ERROR);
}

bool fr_verdict_unexplained_kill(const struct fr_raw *raw, enum fr_abort_reason aborted)
{
    return raw->kind == FR_RAW_FINISHED && WIFSIGNALED(raw->wstatus) && WTERMSIG(raw->wstatus) == SIGKILL && !aborted &&
           !raw->cpu_exceeded && !raw->wall_exceeded && !raw->output_exceeded;
}

bool fr_verdict_oom_possible(const struct fr_raw *raw)
{
    return raw->kind == FR_RAW_FINISHED && !(WIFEXITED(raw->wstatus) && WEXITSTATUS(raw->wstatus) == 0);
}

bool fr_verdict_cgroup_oom(const struct fr_raw *raw, uint64_t kills)
{
    return kills > 0 && fr_verdict_oom_possible(raw);
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
     * holds the job's CPU (cpu_timer: python's child, the exec relay that
     * reaped its job). */
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
    if (fr_verdict_over_cpu_budget(v->status, in->cpu_ms, in->cpu_limit_ms)) {
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
        if (in->oom_killed) {
            /* Its own process, or one it started (then it exited non-zero
             * or died otherwise: fr_verdict_cgroup_oom). */
            const char *where = in->oom_counter && *in->oom_counter ? in->oom_counter : "the memory cgroup";
            snprintf(v->type, sizeof v->type, "OOMKill");
            if (oc->signal == SIGKILL)
                snprintf(v->msg, sizeof v->msg, "killed by the out-of-memory killer (SIGKILL; oom_kill went up in %s)",
                         where);
            else
                snprintf(v->msg, sizeof v->msg,
                         "a process of the job was killed by the out-of-memory killer (oom_kill went up in %s)", where);
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
