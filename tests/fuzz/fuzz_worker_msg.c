/* fuzz_worker_msg.c — what fitrun takes from a Python worker and from the
 * prediction it runs: a channel message (py_msg_decode, launcher/runtime/
 * python/channel.c; fitrun_runtime.py's MSG_* structs) and, after an
 * EXITED, the prediction's report (the JSON it writes), made into the
 * job's raw facts by py_collect (collect.c), judged by fr_verdict_judge
 * and written as a result line (fr_result_line). A worker is fitrun's own
 * code, but it shares a machine and a uid range with the predictions it
 * supervises, so none of its numbers is trusted either.
 *
 * Input: byte 0 = what fitrun saw of the job (bit 0 stdout over its cap,
 * bit 1 stderr over, bit 2 report over, bits 3-4 the runtime's kill: none,
 * CPU, wall, output; bit 5 a small result cap; bits 6-7 how many inputs
 * the job has, 0 to 3), byte 1 = the message's length L, then L bytes of
 * message, then the report.
 *
 * Invariants:
 *  - a message is well formed exactly when its kind has the length it
 *    needs (STARTED 20, EXITED 56 plus at most PY_REPLACED_MAX bytes of
 *    replacement reason, FAILED 8 or more) and, for STARTED, no CPU base
 *    below 0, for EXITED, no time or size below 0; its seq, pid, CPU base,
 *    facts, replacement reason (up to a NUL) and reason are the bytes at
 *    their offsets;
 *  - the raw facts of an EXITED: rusage never negative (0 <= tv_usec <
 *    10^6), max RSS never negative, the violation number the worker's;
 *    outputs, when set, a STRICT JSON array jansson reads, at most the
 *    result cap; an error type NUL-terminated UTF-8 below PY_TYPE_MAX, an
 *    error message UTF-8 of at most PY_MESSAGE_MAX bytes; an error line
 *    above 0 and within int32; a result the report made `ok` has one
 *    output per input;
 *  - the result line written from them is one JSON object jansson reads,
 *    with its outputs equal to the report's, its error message the same
 *    bytes, and cpu_ms and max_rss_kb integers >= 0. */
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>

#include "../../launcher/runtime/python/internal.h"
#include "fitrun/jobs.h"
#include "fitrun/jsonscan.h"
#include "fitrun/verdict.h"
#include "fuzz.h"

static uint32_t u32_at(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int64_t i64_at(const char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void check_decode(const char *m, size_t len, const struct py_msg *d)
{
    char kind = len ? m[0] : '\0';
    FUZZ_CHECK(d->kind == kind, "kind '%c', the message's is '%c'", d->kind, kind);
    FUZZ_CHECK(d->seq == (len >= 8 ? u32_at(m + 4) : 0), "seq %u", d->seq);
    bool usage_ok = len >= FR_PY_MSG_EXITED_LEN && len <= FR_PY_MSG_EXITED_LEN + PY_REPLACED_MAX &&
                    i64_at(m + 16) >= 0 && i64_at(m + 24) >= 0 && i64_at(m + 32) >= 0 && i64_at(m + 40) >= 0 &&
                    i64_at(m + 48) >= 0;
    bool want = (kind == 'S' && len == FR_PY_MSG_STARTED_LEN && i64_at(m + 12) >= 0) || (kind == 'E' && usage_ok) ||
                (kind == 'F' && len >= FR_PY_MSG_FAILED_MIN);
    FUZZ_CHECK(d->well_formed == want, "'%c' of %zu bytes: well_formed %d", kind, len, d->well_formed);
    if (!want)
        return;
    if (kind == 'S')
        FUZZ_CHECK(d->pid == (pid_t)u32_at(m + 8) && d->cpu_base_ns == i64_at(m + 12), "pid %d, CPU base %lld",
                   (int)d->pid, (long long)d->cpu_base_ns);
    if (kind == 'E') {
        size_t n = strlen(d->facts.replaced);
        FUZZ_CHECK(n <= len - FR_PY_MSG_EXITED_LEN && !memcmp(d->facts.replaced, m + FR_PY_MSG_EXITED_LEN, n) &&
                       (n == len - FR_PY_MSG_EXITED_LEN || m[FR_PY_MSG_EXITED_LEN + n] == '\0'),
                   "the replacement reason is not the rest of the message");
    }
    if (kind == 'F')
        FUZZ_CHECK(d->why == m + 8 && d->why_len == len - 8, "the reason is the rest of the message");
    if (kind == 'E')
        FUZZ_CHECK(d->facts.wstatus == (int)u32_at(m + 8) && d->facts.violation_nr == (int)u32_at(m + 12) &&
                       d->facts.utime_us == i64_at(m + 16) && d->facts.stime_us == i64_at(m + 24) &&
                       d->facts.max_rss_kb == i64_at(m + 32),
                   "facts are not the message's bytes");
}

static void check_raw(const struct fr_raw *raw, const struct pyrt *py, const struct exit_facts *f, size_t inputs)
{
    const struct timeval *tv[2] = {&raw->ru.ru_utime, &raw->ru.ru_stime};
    for (int i = 0; i < 2; i++)
        FUZZ_CHECK(tv[i]->tv_sec >= 0 && tv[i]->tv_usec >= 0 && tv[i]->tv_usec < 1000000,
                   "rusage time %lld s %lld us (utime_us %lld, stime_us %lld from the worker)",
                   (long long)tv[i]->tv_sec, (long long)tv[i]->tv_usec, (long long)f->utime_us, (long long)f->stime_us);
    FUZZ_CHECK(raw->ru.ru_maxrss >= 0, "max RSS %ld KiB (%lld from the worker)", raw->ru.ru_maxrss,
               (long long)f->max_rss_kb);
    FUZZ_CHECK(raw->violation_nr == f->violation_nr, "violation %d", raw->violation_nr);
    if (raw->outputs) {
        FUZZ_CHECK(raw->outputs_len <= py->result_cap, "outputs of %zu bytes, cap %llu", raw->outputs_len,
                   (unsigned long long)py->result_cap);
        FUZZ_CHECK(raw->outputs_len && raw->outputs[0] == '[' &&
                       fr_json_whole(raw->outputs, raw->outputs_len, 1 + PY_MAX_NESTING, FR_JSON_STRICT),
                   "outputs are no STRICT array");
    }
    if (raw->status == FR_STATUS_OK) {
        json_t *o = raw->outputs ? json_loadb(raw->outputs, raw->outputs_len, JSON_DECODE_ANY, NULL) : NULL;
        FUZZ_CHECK(o && json_array_size(o) == inputs, "ok with %zu outputs for %zu inputs", o ? json_array_size(o) : 0,
                   inputs);
        json_decref(o);
    }
    if (raw->error_type) {
        size_t n = strlen(raw->error_type);
        FUZZ_CHECK(n < PY_TYPE_MAX && fuzz_utf8_valid(raw->error_type, n), "error type '%s'", raw->error_type);
    }
    if (raw->error_message) {
        size_t n = raw->error_message_len ? raw->error_message_len : strlen(raw->error_message);
        FUZZ_CHECK(n <= PY_MESSAGE_MAX || raw->error_message_len == 0, "a message of %zu bytes", n);
        FUZZ_CHECK(fuzz_utf8_valid(raw->error_message, n), "the error message is not UTF-8");
    }
    FUZZ_CHECK(raw->error_line >= 0 && raw->error_line <= INT32_MAX, "error line %ld", raw->error_line);
}

/* The result line, as the pool writes one for a finished job. */
static void check_line(const struct fr_raw *raw)
{
    uint64_t cpu_ms = (uint64_t)raw->ru.ru_utime.tv_sec * 1000u + (uint64_t)raw->ru.ru_utime.tv_usec / 1000u +
                      (uint64_t)raw->ru.ru_stime.tv_sec * 1000u + (uint64_t)raw->ru.ru_stime.tv_usec / 1000u;
    struct fr_verdict_in in = {.raw = raw,
                               .cpu_ms = cpu_ms,
                               .cpu_limit_ms = 1000,
                               .wall_limit_ms = 5000,
                               .output_cap = 65536,
                               .oom_counter = ""};
    struct fr_verdict v;
    fr_verdict_judge(&in, &v);
    struct fr_result_field field = {"outputs", raw->outputs ? raw->outputs : "null",
                                    raw->outputs ? raw->outputs_len : 4};
    struct fr_result r = {.id = "j",
                          .status = v.status,
                          .timeout = v.timeout,
                          .has_exit = v.oc.signal == 0 && v.oc.exit_code >= 0,
                          .exit_code = v.oc.exit_code,
                          .signal = v.oc.signal_name[0] ? v.oc.signal_name : NULL,
                          .syscall = v.oc.syscall[0] ? v.oc.syscall : NULL,
                          .error_type = raw->error_type ? raw->error_type
                                        : v.type[0]     ? v.type
                                                        : NULL,
                          .error_message = raw->error_message ? raw->error_message
                                           : v.msg[0]         ? v.msg
                                                              : NULL,
                          .error_message_len = raw->error_message ? raw->error_message_len : 0,
                          .has_output = true,
                          .has_usage = true,
                          .cpu_ms = cpu_ms,
                          .max_rss_kb = (uint64_t)raw->ru.ru_maxrss,
                          .worker = 0,
                          .line = 1,
                          .fields = &field,
                          .nfields = 1};
    size_t len;
    char *line = fr_result_line(&r, &len);
    FUZZ_CHECK(line && len && line[len - 1] == '\n', "written");
    json_error_t e;
    json_t *o = json_loadb(line, len - 1, JSON_ALLOW_NUL, &e);
    FUZZ_CHECK(json_is_object(o), "the result line is unreadable: %s: %.300s", e.text, line);
    json_t *cpu = json_object_get(o, "cpu_ms"), *rss = json_object_get(o, "max_rss_kb");
    FUZZ_CHECK(json_is_integer(cpu) && json_integer_value(cpu) >= 0 && json_is_integer(rss) &&
                   json_integer_value(rss) >= 0,
               "usage: %.300s", line);
    if (raw->outputs) {
        json_t *want = json_loadb(raw->outputs, raw->outputs_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        FUZZ_CHECK(want && json_equal(want, json_object_get(o, "outputs")), "outputs changed on the way");
        json_decref(want);
    }
    if (raw->error_message) {
        json_t *m = json_object_get(o, "error_message");
        size_t n = raw->error_message_len ? raw->error_message_len : strlen(raw->error_message);
        FUZZ_CHECK(json_is_string(m) && json_string_length(m) == n &&
                       !memcmp(json_string_value(m), raw->error_message, n),
                   "error message changed on the way");
    }
    json_decref(o);
    free(line);
}

static void collect(const struct py_msg *d, uint8_t flags, const char *report, size_t n)
{
    struct pyrt py = {.result_cap = flags & 32 ? 64 : 1u << 20};
    struct fr_runtime rt = {.priv = &py};
    /* The job: what the report's outputs are counted against. */
    static const char *const lines[4] = {
        "{\"id\":\"j\",\"code\":\"\",\"inputs\":[]}", "{\"id\":\"j\",\"code\":\"\",\"inputs\":[[[0]]]}",
        "{\"id\":\"j\",\"code\":\"\",\"inputs\":[[[0]],1]}", "{\"id\":\"j\",\"code\":\"\",\"inputs\":[0,[],{}]}"};
    size_t inputs = flags >> 6;
    struct fr_job job;
    const char *type = NULL;
    char perr[256];
    if (fr_job_parse(lines[inputs], strlen(lines[inputs]), 1, &job, &type, perr, sizeof perr) < 0)
        abort();
    struct pyslot s = {.chan = -1, .pidfd = -1, .job_w = -1, .child_fd = -1, .proc_fd = -1, .job = &job};
    py_stream_open(&s.out, -1, 65536);
    py_stream_open(&s.err, -1, 65536);
    py_stream_open(&s.rep, -1, py.result_cap + PY_REPORT_SLACK);
    s.out.over = flags & 1;
    s.err.over = flags & 2;
    s.rep.over = flags & 4;
    s.rep.buf = malloc(n ? n : 1); /* exactly n bytes, as read */
    if (!s.rep.buf)
        abort();
    memcpy(s.rep.buf, report, n);
    s.rep.len = s.rep.cap = n;
    static const enum py_kill kills[4] = {PY_KILL_NONE, PY_KILL_CPU, PY_KILL_WALL, PY_KILL_OUTPUT};
    s.kill = kills[(flags >> 3) & 3];
    s.exited = true;
    s.facts = d->facts;
    struct fr_raw raw;
    char msg[512];
    py_collect(&rt, &s, &raw, msg, sizeof msg);
    check_raw(&raw, &py, &d->facts, inputs);
    check_line(&raw);
    free(s.rep.buf);
    free(s.message);
    fr_job_clear(&job);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 256 * 1024)
        return 0;
    uint8_t flags = data[0];
    size_t mlen = data[1] < size - 2 ? data[1] : size - 2;
    char *m = malloc(mlen ? mlen : 1); /* exactly the message's bytes */
    if (!m)
        abort();
    memcpy(m, data + 2, mlen);
    struct py_msg d;
    memset(&d, 0, sizeof d);
    py_msg_decode(m, mlen, &d);
    check_decode(m, mlen, &d);
    if (d.kind == 'E' && d.well_formed)
        collect(&d, flags, (const char *)data + 2 + mlen, size - 2 - mlen);
    free(m);
    return 0;
}
