/* fuzz_result_line.c — a results file as `fitrun run --resume` and
 * `fitrun merge` read it: each line through fr_result_key_parse
 * (include/fitrun/jobs.h), and the whole file through fr_resume_scan
 * (launcher/pool/resume.c), which also cuts a torn last line off. The
 * input is the file.
 *
 * Invariants:
 *  - a line that reads as a result has a string "status"; its key's line
 *    is the JSON "line" when that is a positive integer, else 0; its id is
 *    the JSON "id" string, which holds no NUL byte (a line whose id has
 *    one is refused: no job has such an id); "duplicate" only
 *    for an invalid DuplicateId result;
 *  - the key written back with fr_result_line reads back the same;
 *  - fr_resume_scan counts at most one result per line, keeps its entries
 *    sorted by input line, all above 0, and leaves the file ending in a
 *    newline (or empty): a torn last line is cut off. */
#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/jobs.h"
#include "fitrun/pool.h"
#include "fitrun/common.h"
#include "fuzz.h"

static int fd = -1;
/* fr_resume_scan warns on stderr about every line that is not a result:
 * gigabytes of log in a long run. Its stderr goes to /dev/null while it
 * runs (FUZZ_STDERR=1 keeps it); sanitizer reports go to the real stderr
 * all the same. */
static int real_stderr = -1, devnull = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fd = memfd_create("fuzz-results", MFD_CLOEXEC);
    if (fd < 0) {
        perror("memfd_create");
        abort();
    }
    if (!getenv("FUZZ_STDERR")) {
        real_stderr = fcntl(2, F_DUPFD_CLOEXEC, 3);
        devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (real_stderr < 0 || devnull < 0) {
            perror("stderr");
            abort();
        }
        __sanitizer_set_report_fd((void *)(intptr_t)real_stderr);
    }
    return 0;
}

static void quiet(bool on)
{
    if (devnull < 0)
        return;
    fflush(stderr);
    if (dup2(on ? devnull : real_stderr, 2) < 0)
        abort();
}

static void check_line(const char *s, size_t n)
{
    char *text = malloc(n ? n : 1); /* exactly n bytes */
    if (!text)
        abort();
    memcpy(text, s, n);
    struct fr_result_key k;
    char err[256] = "";
    int rc = fr_result_key_parse(text, n, &k, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    if (rc < 0) {
        FUZZ_CHECK(err[0] && !k.id, "a refused line says why and keeps nothing");
        free(text);
        return;
    }
    json_t *o = json_loadb(text, n, JSON_ALLOW_NUL, NULL);
    FUZZ_CHECK(json_is_object(o) && json_is_string(json_object_get(o, "status")), "a result has a string status");
    json_t *line = json_object_get(o, "line"), *id = json_object_get(o, "id");
    long want = json_is_integer(line) && json_integer_value(line) > 0 ? (long)json_integer_value(line) : 0;
    FUZZ_CHECK(k.line == want, "line %ld, the JSON says %ld", k.line, want);
    FUZZ_CHECK(json_is_string(id) == (k.id != NULL), "id kept iff a string");
    if (json_is_string(id))
        FUZZ_CHECK(strlen(json_string_value(id)) == json_string_length(id) && !strcmp(k.id, json_string_value(id)),
                   "id '%s' (%zu bytes) read as '%s'", json_string_value(id), json_string_length(id), k.id);
    if (k.duplicate)
        FUZZ_CHECK(!strcmp(json_string_value(json_object_get(o, "status")), "invalid") &&
                       !strcmp(json_string_value(json_object_get(o, "error_type")), "DuplicateId"),
                   "duplicate without an invalid DuplicateId result");
    json_decref(o);

    /* Written back as fitrun would, the key reads the same. */
    struct fr_result r = {.id = k.id,
                          .status = k.duplicate ? FR_STATUS_INVALID : FR_STATUS_OK,
                          .error_type = k.duplicate ? "DuplicateId" : NULL,
                          .worker = -1,
                          .line = k.line};
    size_t len;
    char *again = fr_result_line(&r, &len);
    FUZZ_CHECK(again && len > 0 && again[len - 1] == '\n', "written");
    struct fr_result_key k2;
    FUZZ_CHECK(fr_result_key_parse(again, len - 1, &k2, err, sizeof err) == 0, "own line '%s' refused: %s", again, err);
    FUZZ_CHECK(k2.line == k.line && k2.duplicate == k.duplicate &&
                   ((!k.id && !k2.id) || (k.id && k2.id && !strcmp(k.id, k2.id))),
               "'%s' reads back as another key", again);
    free(k2.id);
    free(again);
    free(k.id);
    free(text);
}

static void check_scan(const uint8_t *data, size_t size)
{
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    struct fr_resume r;
    char err[256];
    quiet(true);
    int rc = fr_resume_scan(fd, "results.jsonl", &r, err, sizeof err);
    quiet(false);
    if (rc < 0) {
        FUZZ_CHECK(err[0], "a failed scan says why");
        return;
    }
    size_t lines = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    FUZZ_CHECK((size_t)r.results <= lines && r.ndone <= lines, "%ld results, %zu entries in %zu lines", r.results,
               r.ndone, lines);
    for (size_t i = 0; i < r.ndone; i++) {
        FUZZ_CHECK(r.done[i].line > 0 && r.done[i].rline >= 1 && (size_t)r.done[i].rline <= lines, "entry %zu", i);
        FUZZ_CHECK(i == 0 || r.done[i - 1].line <= r.done[i].line, "entries sorted by line");
    }
    struct stat st;
    FUZZ_CHECK(fstat(fd, &st) == 0, "fstat");
    const uint8_t *last = size ? memrchr(data, '\n', size) : NULL;
    size_t keep = last ? (size_t)(last - data) + 1 : 0;
    FUZZ_CHECK((size_t)st.st_size == keep, "%zu bytes left, the last newline ends at %zu", (size_t)st.st_size, keep);
    fr_resume_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    for (const uint8_t *p = data, *end = data + size; p < end;) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        check_line((const char *)p, n);
        p += n + 1;
    }
    check_scan(data, size);
    return 0;
}
