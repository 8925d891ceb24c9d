/* test_resume.c — --resume checks every kept result against the id its
 * input line holds now (launcher/pool/resume.c): a line counts as done only
 * for the same id; a changed jobs file is the first mismatch, named with
 * both ids, never a silent skip. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/jobs.h"
#include "fitrun/pool.h"

#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return tmpdir_make("resume");
}

static const char *write_file(const char *name, const char *text)
{
    static char path[2][128];
    static int k;
    char *p = path[k++ % 2];
    snprintf(p, 128, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    return p;
}

/* Scan `results` (written to a file) into *r. */
static void scan(struct fr_resume *r, const char *results)
{
    char err[256];
    const char *path = write_file("results.jsonl", results);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    if (fr_resume_scan(fd, "results.jsonl", r, err, sizeof err) != 0)
        fail_msg("scan: %s", err);
    close(fd);
}

#define RESULTS                                                                                                        \
    "{\"id\":\"C\",\"status\":\"ok\",\"line\":3}\n"                                                                    \
    "{\"id\":\"A\",\"status\":\"ok\",\"line\":1}\n"                                                                    \
    "{\"id\":null,\"status\":\"invalid\",\"error_type\":\"InvalidJSON\",\"line\":4}\n"                                 \
    "{\"id\":\"A\",\"status\":\"invalid\",\"error_type\":\"DuplicateId\",\"line\":5}\n"                                \
    "{\"id\":\"B\",\"status\":\"ok\",\"line\":2}\n"

static void test_line_by_line(void **state)
{
    (void)state;
    struct fr_resume r;
    char err[1024] = "";
    scan(&r, RESULTS);
    assert_int_equal(r.ndone, 5);
    const char *a = "{\"id\": \"A\", \"argv\": [\"true\"]}", *b = "{\"id\": \"B\"}", *d = "{\"id\": \"D\"}";
    assert_int_equal(fr_resume_line(&r, 1, a, strlen(a), NULL, "jobs", err, sizeof err), 1);
    assert_int_equal(fr_resume_line(&r, 2, b, strlen(b), NULL, "jobs", err, sizeof err), 1);
    /* no result for line 6: run it */
    assert_int_equal(fr_resume_line(&r, 6, d, strlen(d), NULL, "jobs", err, sizeof err), 0);
    /* the line that is not a job, and an over-long line (text NULL), match "id": null */
    assert_int_equal(fr_resume_line(&r, 4, "not json", 8, NULL, "jobs", err, sizeof err), 1);
    assert_int_equal(fr_resume_line(&r, 4, NULL, 0, NULL, "jobs", err, sizeof err), 1);
    /* the duplicate line's own DuplicateId result, while an earlier line has A */
    struct fr_idset *earlier = fr_idset_new();
    assert_non_null(earlier);
    assert_int_equal(fr_idset_add(earlier, "A"), 1);
    assert_int_equal(fr_resume_line(&r, 5, a, strlen(a), earlier, "jobs", err, sizeof err), 1);
    fr_idset_free(earlier);
    /* no earlier line has A any more: the DuplicateId verdict is stale */
    assert_int_equal(fr_resume_line(&r, 5, a, strlen(a), NULL, "jobs.jsonl", err, sizeof err), -1);
    if (!strstr(err, "results.jsonl:4 is the DuplicateId result of id \"A\" for line 5 of jobs.jsonl, but no "
                     "earlier line has that id now"))
        fail_msg("message: %s", err);

    /* line 2's id B replaced by D: a mismatch, with the line and both ids */
    assert_int_equal(fr_resume_line(&r, 2, d, strlen(d), NULL, "jobs.jsonl", err, sizeof err), -1);
    if (!strstr(err, "line 2 of jobs.jsonl has id \"D\", but results.jsonl:5 is the result of id \"B\""))
        fail_msg("message: %s", err);
    /* a job where the result was for a line that was not a job, and back */
    assert_int_equal(fr_resume_line(&r, 4, d, strlen(d), NULL, "jobs.jsonl", err, sizeof err), -1);
    assert_non_null(strstr(err, "line 4 of jobs.jsonl has id \"D\", but results.jsonl:3 is the result of id null"));
    assert_int_equal(fr_resume_line(&r, 3, "{]", 2, NULL, "jobs.jsonl", err, sizeof err), -1);
    assert_non_null(strstr(err, "has id null (not a job), but results.jsonl:1 is the result of id \"C\""));
    fr_resume_free(&r);
}

/* The first result of a line wins, as in merge; ids reach the terminal
 * with their control characters shown, not sent. */
static void test_first_result_and_shown_ids(void **state)
{
    (void)state;
    struct fr_resume r;
    char err[1024] = "";
    scan(&r, "{\"id\":\"X\\u001b[2J\",\"status\":\"ok\",\"line\":1}\n{\"id\":\"Y\",\"status\":\"ok\",\"line\":1}\n");
    const char *y = "{\"id\": \"Y\"}";
    assert_int_equal(fr_resume_line(&r, 1, y, strlen(y), NULL, "j", err, sizeof err), -1);
    assert_non_null(strstr(err, "results.jsonl:1 is the result of id \"X\\x1b[2J\""));
    assert_null(strchr(err, '\x1b'));
    fr_resume_free(&r);
}

/* The whole-file check runs before anything: every mismatch is found, the
 * first one in input order is named; the descriptor's offset is untouched. */
static void test_verify_file(void **state)
{
    (void)state;
    struct fr_resume r;
    char err[1024] = "";
    scan(&r, RESULTS);
    const char *ok = "{\"id\":\"A\"}\n{\"id\":\"B\"}\n{\"id\":\"C\"}\n{oops\n{\"id\":\"A\"}\n\n{\"id\":\"E\"}\n";
    int fd = open(write_file("jobs.jsonl", ok), O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fr_resume_verify(&r, fd, NULL, "jobs.jsonl", err, sizeof err), 0);
    assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
    close(fd);

    const char *changed = "{\"id\":\"A\"}\n{\"id\":\"D\"}\n{\"id\":\"Q\"}\n{oops\n{\"id\":\"A\"}\n";
    fd = open(write_file("jobs.jsonl", changed), O_RDONLY);
    assert_int_equal(fr_resume_verify(&r, fd, NULL, "jobs.jsonl", err, sizeof err), -1);
    if (!strstr(err, "--resume: line 2 of jobs.jsonl has id \"D\", but results.jsonl:5 is the result of id \"B\""))
        fail_msg("message: %s", err);
    close(fd);

    /* lines gone: results for lines past the end */
    fd = open(write_file("jobs.jsonl", "{\"id\":\"A\"}\n{\"id\":\"B\"}\n{\"id\":\"C\"}\n"), O_RDONLY);
    assert_int_equal(fr_resume_verify(&r, fd, NULL, "jobs.jsonl", err, sizeof err), -1);
    assert_non_null(strstr(err, "results.jsonl:4 is a result for line 5, but jobs.jsonl has 3 lines"));
    close(fd);

    /* a result for a line that is blank now */
    fd = open(write_file("jobs.jsonl", "{\"id\":\"A\"}\n   \n"), O_RDONLY);
    assert_int_equal(fr_resume_verify(&r, fd, NULL, "jobs.jsonl", err, sizeof err), -1);
    assert_non_null(strstr(err, "results.jsonl:5 is a result for line 2 of jobs.jsonl, which is blank"));
    close(fd);

    /* a pipe is checked line by line by the pool instead */
    int p[2];
    assert_int_equal(pipe(p), 0);
    assert_int_equal(fr_resume_verify(&r, p[0], NULL, "stdin", err, sizeof err), 0);
    close(p[0]);
    close(p[1]);
    fr_resume_free(&r);
}

/* A DuplicateId result stands only while an earlier line has its id: the
 * earlier line, which had no result yet, was changed. */
static void test_verify_stale_duplicate(void **state)
{
    (void)state;
    struct fr_resume r;
    char err[1024] = "";
    scan(&r, "{\"id\":\"B\",\"status\":\"ok\",\"line\":1}\n"
             "{\"id\":\"A\",\"status\":\"invalid\",\"error_type\":\"DuplicateId\",\"line\":3}\n");
    int fd = open(write_file("jobs.jsonl", "{\"id\":\"B\"}\n{\"id\":\"A\"}\n{\"id\":\"A\"}\n"), O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fr_resume_verify(&r, fd, NULL, "jobs.jsonl", err, sizeof err), 0);
    close(fd);
    fd = open(write_file("jobs.jsonl", "{\"id\":\"B\"}\n{\"id\":\"C\"}\n{\"id\":\"A\"}\n"), O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fr_resume_verify(&r, fd, NULL, "jobs.jsonl", err, sizeof err), -1);
    if (!strstr(err, "results.jsonl:2 is the DuplicateId result of id \"A\" for line 3 of jobs.jsonl, but no earlier "
                     "line has that id now"))
        fail_msg("message: %s", err);
    close(fd);
    fr_resume_free(&r);

    /* a shard finds duplicates among its own lines: shard 1/3 holds lines
     * 2 and 5; line 1's A is another shard's */
    scan(&r, "{\"id\":\"A\",\"status\":\"invalid\",\"error_type\":\"DuplicateId\",\"line\":5}\n");
    fd = open(write_file("jobs.jsonl", "{\"id\":\"A\"}\n{\"id\":\"C\"}\n\n\n{\"id\":\"A\"}\n"), O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(fr_resume_verify(&r, fd, NULL, "jobs.jsonl", err, sizeof err), 0);
    struct fr_shard shard = {.enabled = true, .index = 1, .count = 3};
    assert_int_equal(fr_resume_verify(&r, fd, &shard, "jobs.jsonl", err, sizeof err), -1);
    assert_non_null(strstr(err, "DuplicateId result of id \"A\" for line 5 of jobs.jsonl"));
    close(fd);
    fr_resume_free(&r);
}

/* A results file with no result naming its line (empty, or only torn or
 * foreign lines) scans to nothing; it used to hand qsort a NULL array
 * (undefined behaviour, reported by UBSan under fuzz_result_line). */
static void test_nothing_to_resume(void **state)
{
    (void)state;
    static const char *const files[] = {"", "\n\n", "{\"id\":\"a\",\"status\":\"ok\"}\n", "not json\n", "{\"torn"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        struct fr_resume r;
        scan(&r, files[i]);
        assert_int_equal(r.ndone, 0);
        assert_null(r.done);
        assert_int_equal(fr_resume_line(&r, 1, "{\"id\":\"a\"}", 10, NULL, "jobs", NULL, 0), 0);
        fr_resume_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_by_line),      cmocka_unit_test(test_first_result_and_shown_ids),
        cmocka_unit_test(test_verify_file),       cmocka_unit_test(test_verify_stale_duplicate),
        cmocka_unit_test(test_nothing_to_resume),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
