/* fuzz_job_line.c — one JSONL job line of `fitrun run` through
 * fr_job_parse (include/fitrun/jobs.h), then the exec and python runtimes'
 * job checks (ops->check, include/fitrun/runtime.h), and the result line
 * fitrun writes for it. The input is the line, without its newline.
 *
 * Invariants:
 *  - a line is a job's JSON object exactly when jansson (json_loadb with
 *    JSON_REJECT_DUPLICATES, the reference) reads an object from it (the
 *    one documented difference: a raw NUL byte jansson skips after a
 *    number or a literal); its members are the object's;
 *  - a line that parses has a non-empty string id without NUL bytes,
 *    which is job.id exactly;
 *  - it re-serialises (json_dumps) to a line that parses to the same job
 *    (same id, json_equal objects) and that both runtimes' checks judge
 *    the same way;
 *  - a line that does not parse says why, as "line N: ...", with an error
 *    type of InvalidJSON or MissingId (id kept when it was usable);
 *  - the `invalid` result fitrun writes for it (or the `ok` one) is one
 *    JSON line whose key (id, line) reads back as written. */
#include <ctype.h>
#include <jansson.h>

#include "fitrun/jobs.h"
#include "fitrun/runtime.h"
#include "fitrun/common.h"
#include "fuzz.h"

#define LINE 7

static int check_job(const struct fr_runtime_ops *ops, const struct fr_job *job, char *err, size_t n)
{
    struct fr_runtime rt = {.ops = ops}; /* check() must not start anything: it gets no config */
    return ops->check(&rt, job, err, n);
}

static void check_result(const char *id, bool ok, const char *type, const char *msg)
{
    struct fr_result r = {.id = id,
                          .status = ok ? FR_STATUS_OK : FR_STATUS_INVALID,
                          .error_type = ok ? NULL : type,
                          .error_message = ok ? NULL : msg,
                          .worker = ok ? 0 : -1,
                          .line = LINE};
    size_t len = 0;
    char *text = fr_result_line(&r, &len);
    FUZZ_CHECK(text, "a result line is written");
    FUZZ_CHECK(len == strlen(text) && len >= 2 && text[len - 1] == '\n' && !memchr(text, '\n', len - 1),
               "one line: '%s'", text);
    struct fr_result_key k;
    char err[256];
    FUZZ_CHECK(fr_result_key_parse(text, len - 1, &k, err, sizeof err) == 0, "own result line unreadable: %s", err);
    FUZZ_CHECK(k.line == LINE && !k.duplicate, "line %ld", k.line);
    FUZZ_CHECK((!id && !k.id) || (id && k.id && !strcmp(id, k.id)), "id '%s' read back as '%s'", id ? id : "(null)",
               k.id ? k.id : "(null)");
    free(k.id);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    /* Exactly `size` bytes: jansson must not read past them. */
    char *text = malloc(size ? size : 1);
    if (!text)
        abort();
    memcpy(text, data, size);

    struct fr_job job;
    const char *type = NULL;
    char err[512] = "";
    int rc = fr_job_parse(text, size, LINE, &job, &type, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    json_t *ref = json_loadb(text, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    bool object = json_is_object(ref);
    if (rc == 0 || (type && !strcmp(type, "MissingId")))
        FUZZ_CHECK(object && job.nmembers == json_object_size(ref), "fitrun read an object jansson did not");
    else
        FUZZ_CHECK(!object || memchr(text, '\0', size), "jansson read an object fitrun did not: %s", err);
    if (rc < 0) {
        char want[32];
        snprintf(want, sizeof want, "line %d: ", LINE);
        FUZZ_CHECK(!strncmp(err, want, strlen(want)), "message '%s'", err);
        FUZZ_CHECK(type && (!strcmp(type, "InvalidJSON") || !strcmp(type, "MissingId")), "type '%s'",
                   type ? type : "(null)");
        FUZZ_CHECK(!job.id || (job.id[0] && strlen(job.id) > 0), "a kept id is not empty");
        check_result(job.id, false, type, err);
        fr_job_clear(&job);
        json_decref(ref);
        free(text);
        return 0;
    }
    FUZZ_CHECK(job.id && job.id[0] && job.line == LINE, "parsed job");
    json_t *id = json_object_get(ref, "id");
    FUZZ_CHECK(json_is_string(id) && json_string_length(id) == strlen(job.id) && !strcmp(job.id, json_string_value(id)),
               "job.id '%s' is not the line's id", job.id);

    char e1[512], e2[512];
    int exec_ok = check_job(&fr_runtime_exec_ops, &job, e1, sizeof e1);
    int py_ok = check_job(&fr_runtime_python_ops, &job, e2, sizeof e2);
    FUZZ_CHECK(exec_ok == 0 || (exec_ok == -1 && e1[0]), "exec check %d '%s'", exec_ok, e1);
    FUZZ_CHECK(py_ok == 0 || (py_ok == -1 && e2[0]), "python check %d '%s'", py_ok, e2);

    char *again = json_dumps(ref, JSON_COMPACT | JSON_ENCODE_ANY);
    FUZZ_CHECK(again, "the job re-serialises");
    struct fr_job job2;
    FUZZ_CHECK(fr_job_parse(again, strlen(again), LINE, &job2, &type, err, sizeof err) == 0, "'%s' refused: %s", again,
               err);
    json_t *ref2 = json_loadb(again, strlen(again), JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
    FUZZ_CHECK(!strcmp(job.id, job2.id) && json_equal(ref, ref2), "'%s' is another job", again);
    json_decref(ref2);
    FUZZ_CHECK(check_job(&fr_runtime_exec_ops, &job2, e1, sizeof e1) == exec_ok &&
                   check_job(&fr_runtime_python_ops, &job2, e2, sizeof e2) == py_ok,
               "the checks judge the re-serialised job differently");
    check_result(job.id, true, NULL, NULL);
    fr_job_clear(&job2);
    free(again);
    fr_job_clear(&job);
    json_decref(ref);
    free(text);
    return 0;
}
