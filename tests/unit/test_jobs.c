/* test_jobs.c — job lines in, result lines out: parsing, the fixed field
 * order, UTF-8 sanitising, what --resume reads back, the id set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/jobs.h"

static void job_bad(const char *text, const char *type, const char *needle, const char *id)
{
    struct fr_job j;
    const char *t = NULL;
    char err[512] = "";
    assert_int_equal(fr_job_parse(text, strlen(text), 7, &j, &t, err, sizeof err), -1);
    assert_string_equal(t, type);
    if (!strstr(err, needle) || strncmp(err, "line 7: ", 8))
        fail_msg("'%s': message '%s' lacks 'line 7: ...%s'", text, err, needle);
    if (id)
        assert_string_equal(j.id, id);
    else
        assert_null(j.id);
    fr_job_clear(&j);
}

static void test_parse(void **state)
{
    (void)state;
    struct fr_job j;
    const char *t = NULL;
    char err[256];
    const char *line = "{\"id\": \"a1\", \"argv\": [\"true\"]}";
    assert_int_equal(fr_job_parse(line, strlen(line), 3, &j, &t, err, sizeof err), 0);
    assert_string_equal(j.id, "a1");
    assert_int_equal(j.line, 3);
    assert_true(json_is_array(json_object_get(j.obj, "argv")));
    fr_job_clear(&j);
    fr_job_clear(&j); /* idempotent */

    job_bad("{\"id\": \"a1\"", "InvalidJSON", "not valid JSON", NULL);
    job_bad("not json at all", "InvalidJSON", "not valid JSON", NULL);
    job_bad("", "InvalidJSON", "not valid JSON", NULL);
    job_bad("[1, 2]", "InvalidJSON", "must be a JSON object", NULL);
    job_bad("\"id\"", "InvalidJSON", "must be a JSON object", NULL);
    job_bad("{\"argv\": [\"true\"]}", "MissingId", "no \"id\"", NULL);
    job_bad("{\"id\": 5}", "MissingId", "non-empty string", NULL);
    job_bad("{\"id\": \"\"}", "MissingId", "non-empty string", NULL);
    job_bad("{\"id\": \"a\\u0000b\"}", "MissingId", "non-empty string", NULL);
    job_bad("{\"id\": \"a\", \"id\": \"b\"}", "InvalidJSON", "duplicate", NULL);
    /* a line with trailing garbage after the object */
    job_bad("{\"id\": \"a\"} x", "InvalidJSON", "not valid JSON", NULL);
}

static void test_json_bytes(void **state)
{
    (void)state;
    json_t *s = fr_json_bytes("h\xc3\xa9llo", 6); /* valid: kept */
    assert_string_equal(json_string_value(s), "h\xc3\xa9llo");
    json_decref(s);
    s = fr_json_bytes("a\xff"
                      "b\xc3",
                      4); /* bad byte, truncated sequence */
    assert_string_equal(json_string_value(s), "a\xef\xbf\xbd"
                                              "b\xef\xbf\xbd");
    json_decref(s);
    s = fr_json_bytes("\xed\xa0\x80", 3); /* a surrogate: 3 bad bytes */
    assert_int_equal(json_string_length(s), 9);
    json_decref(s);
    s = fr_json_bytes("\xc0\xaf", 2); /* overlong '/' */
    assert_string_equal(json_string_value(s), "\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(s);
    s = fr_json_bytes("a\0b", 3); /* NUL survives as \u0000 */
    assert_int_equal(json_string_length(s), 3);
    char *dump = json_dumps(s, JSON_ENCODE_ANY);
    assert_string_equal(dump, "\"a\\u0000b\"");
    free(dump);
    json_decref(s);
    s = fr_json_bytes("\xf0\x9f\x98\x80", 4); /* 4-byte emoji */
    assert_int_equal(json_string_length(s), 4);
    json_decref(s);
}

static void test_result_order_and_nulls(void **state)
{
    (void)state;
    struct fr_result r = {0};
    r.id = "t1";
    r.status = FR_STATUS_TIMEOUT;
    r.timeout = FR_TIMEOUT_CPU;
    r.signal = "SIGKILL";
    r.error_type = "CPUTimeout";
    r.error_message = "CPU time limit of 100 ms exceeded";
    r.has_output = true;
    r.out = "partial\xff";
    r.out_len = 8;
    r.err = "";
    r.has_usage = true;
    r.cpu_ms = 101;
    r.wall_ms = 130;
    r.max_rss_kb = 2048;
    r.worker = 1;
    r.line = 12;
    size_t len;
    char *line = fr_result_line(&r, &len);
    assert_non_null(line);
    assert_int_equal(len, strlen(line));
    assert_string_equal(
        line, "{\"id\":\"t1\",\"status\":\"timeout\",\"exit_code\":null,\"signal\":\"SIGKILL\",\"syscall\":null,"
              "\"error_type\":\"CPUTimeout\",\"error_message\":\"CPU time limit of 100 ms exceeded\","
              "\"stdout\":\"partial\xef\xbf\xbd\",\"stderr\":\"\",\"cpu_ms\":101,\"wall_ms\":130,\"max_rss_kb\":2048,"
              "\"worker\":1,\"line\":12,\"timeout\":\"cpu\"}\n");
    free(line);

    /* an invalid line: no id, nothing ran */
    struct fr_result inv = {0};
    inv.status = FR_STATUS_INVALID;
    inv.error_type = "InvalidJSON";
    inv.error_message = "line 4: not valid JSON";
    inv.worker = -1;
    inv.line = 4;
    line = fr_result_line(&inv, NULL);
    assert_string_equal(line, "{\"id\":null,\"status\":\"invalid\",\"exit_code\":null,\"signal\":null,\"syscall\":null,"
                              "\"error_type\":\"InvalidJSON\",\"error_message\":\"line 4: not valid JSON\","
                              "\"stdout\":null,\"stderr\":null,\"cpu_ms\":null,\"wall_ms\":null,"
                              "\"max_rss_kb\":null,\"worker\":null,\"line\":4}\n");
    free(line);
}

static void test_result_extra(void **state)
{
    (void)state;
    struct fr_result r = {0};
    r.id = "p";
    r.status = FR_STATUS_OK;
    r.has_exit = true;
    r.exit_code = 0;
    r.worker = 0;
    r.line = 1;
    r.attempts = 2;
    /* Fields are appended verbatim, in order, after the fixed ones. */
    const struct fr_result_field fields[] = {{"outputs", "[1,\"\\u0000\",2.5e+16]", 20}, {"passed", "[true]", 6}};
    r.fields = fields;
    r.nfields = 2;
    r.error_type = "ValueError";
    r.error_message = "bad\0thing";
    r.error_message_len = 9;
    char *line = fr_result_line(&r, NULL);
    assert_non_null(
        strstr(line, ",\"line\":1,\"attempts\":2,\"outputs\":[1,\"\\u0000\",2.5e+16],\"passed\":[true]}\n"));
    json_t *o = json_loads(line, JSON_ALLOW_NUL, NULL);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "status")), "ok");
    assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 0);
    assert_int_equal(json_integer_value(json_object_get(o, "attempts")), 2);
    assert_int_equal(json_array_size(json_object_get(o, "outputs")), 3);
    /* an error message keeps its NUL byte */
    assert_int_equal(json_string_length(json_object_get(o, "error_message")), 9);
    assert_memory_equal(json_string_value(json_object_get(o, "error_message")), "bad\0thing", 9);
    json_decref(o);
    free(line);
}

static void test_result_key(void **state)
{
    (void)state;
    struct fr_result_key k;
    char err[256];
    const char *l1 = "{\"id\":\"a\",\"status\":\"ok\",\"line\":3}";
    assert_int_equal(fr_result_key_parse(l1, strlen(l1), &k, err, sizeof err), 0);
    assert_string_equal(k.id, "a");
    assert_false(k.duplicate);
    assert_int_equal(k.line, 3);
    free(k.id);
    const char *l2 = "{\"id\":\"a\",\"status\":\"invalid\",\"error_type\":\"DuplicateId\",\"line\":9}";
    assert_int_equal(fr_result_key_parse(l2, strlen(l2), &k, err, sizeof err), 0);
    assert_true(k.duplicate);
    assert_int_equal(k.line, 9);
    free(k.id);
    const char *l3 = "{\"id\":null,\"status\":\"invalid\",\"line\":2}";
    assert_int_equal(fr_result_key_parse(l3, strlen(l3), &k, err, sizeof err), 0);
    assert_null(k.id);
    assert_int_equal(k.line, 2);
    const char *l4 = "{\"id\":\"x\"}";
    assert_int_equal(fr_result_key_parse(l4, strlen(l4), &k, err, sizeof err), -1);
    const char *l5 = "{\"id\":\"x\",\"stat";
    assert_int_equal(fr_result_key_parse(l5, strlen(l5), &k, err, sizeof err), -1);
    /* An id with a NUL is no job's: kept, it would be read as job "a". */
    const char *l6 = "{\"id\":\"a\\u0000b\",\"status\":\"ok\",\"line\":1}";
    assert_int_equal(fr_result_key_parse(l6, strlen(l6), &k, err, sizeof err), -1);
    assert_null(k.id);
    assert_non_null(strstr(err, "NUL"));
}

static void test_idset(void **state)
{
    (void)state;
    struct fr_idset *s = fr_idset_new(), *t = fr_idset_new();
    char key[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "id-%d", i);
        assert_int_equal(fr_idset_add(s, key), 1);
    }
    assert_int_equal(fr_idset_add(s, "id-17"), 0);
    assert_int_equal(fr_idset_size(s), 20000);
    assert_true(fr_idset_has(s, "id-19999"));
    assert_false(fr_idset_has(s, "id-20000"));
    assert_false(fr_idset_has(s, ""));
    fr_idset_add(t, "id-5");
    fr_idset_add(t, "other");
    assert_int_equal(fr_idset_merge(t, s), 0);
    assert_int_equal(fr_idset_size(t), 20001);
    fr_idset_free(s);
    fr_idset_free(t);
    fr_idset_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_json_bytes),
        cmocka_unit_test(test_result_order_and_nulls),
        cmocka_unit_test(test_result_extra),
        cmocka_unit_test(test_result_key),
        cmocka_unit_test(test_idset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
