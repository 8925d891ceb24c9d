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
#include <jansson.h>

#include "fitrun/common.h"
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
    const struct fr_json_member *argv = fr_job_member(&j, "argv");
    assert_non_null(argv);
    assert_int_equal(argv->count, 1);
    assert_memory_equal(argv->value.p, "[\"true\"]", argv->value.n);
    assert_null(fr_job_member(&j, "stdin"));
    fr_job_clear(&j);
    /* an id with escapes is decoded; the members stay spans of the copy */
    line = "{\"i\\u0064\": \"\\u00e9\\n\", \"x\": {\"y\": [1]}}";
    assert_int_equal(fr_job_parse(line, strlen(line), 4, &j, &t, err, sizeof err), 0);
    assert_string_equal(j.id, "\xc3\xa9\n");
    assert_int_equal(j.nmembers, 2);
    assert_true(j.members[1].value.p >= j.text && j.members[1].value.p < j.text + j.len);
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
    job_bad("{\"id\": \"a\\u0000b\"}", "MissingId", "must not contain a NUL", NULL);
    job_bad("{\"id\": \"a\", \"id\": \"b\"}", "InvalidJSON", "duplicate", NULL);
    job_bad("{\"id\": \"a\", \"x\": {\"k\": 1, \"\\u006b\": 2}}", "InvalidJSON", "duplicate", NULL);
    job_bad("{\"id\": \"a\", \"n\": 99999999999999999999}", "InvalidJSON", "too big integer", NULL);
    /* a line with trailing garbage after the object */
    job_bad("{\"id\": \"a\"} x", "InvalidJSON", "not valid JSON", NULL);
}

/* The JSON string jansson writes for s[0, n) sanitised as fitrun always
 * did: valid UTF-8 kept, every other byte U+FFFD (the oracle the encoder
 * must match byte for byte). */
static char *jansson_string(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    if (!j) {
        char *buf = malloc(n * 3 + 1);
        size_t o = 0;
        for (size_t i = 0; i < n;) {
            size_t l = fr_utf8_seq((const unsigned char *)s + i, n - i);
            if (l) {
                memcpy(buf + o, s + i, l);
                o += l;
                i += l;
            } else {
                memcpy(buf + o, "\xEF\xBF\xBD", 3);
                o += 3;
                i++;
            }
        }
        j = json_stringn(buf, o);
        free(buf);
    }
    assert_non_null(j);
    char *d = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(j);
    return d;
}

static void bytes_as_jansson(const char *s, size_t n)
{
    size_t len;
    char *mine = fr_json_bytes(s, n, &len), *want = jansson_string(s, n);
    assert_non_null(mine);
    assert_int_equal(len, strlen(mine));
    assert_string_equal(mine, want);
    free(mine);
    free(want);
}

static void test_json_bytes(void **state)
{
    (void)state;
    size_t len;
    char *s = fr_json_bytes("h\xc3\xa9llo", 6, &len); /* valid: kept */
    assert_string_equal(s, "\"h\xc3\xa9llo\"");
    free(s);
    s = fr_json_bytes("a\xff"
                      "b\xc3",
                      4, &len); /* bad byte, truncated sequence */
    assert_string_equal(s, "\"a\xef\xbf\xbd"
                           "b\xef\xbf\xbd\"");
    free(s);
    s = fr_json_bytes("a\0b", 3, &len); /* NUL survives as \u0000 */
    assert_string_equal(s, "\"a\\u0000b\"");
    free(s);
    const char *cases[] = {"\xed\xa0\x80",
                           "\xc0\xaf",
                           "\xf0\x9f\x98\x80",
                           "\"\\/\b\f\n\r\t\x01\x1f\x7f",
                           "\xe2\x80\xa8\xef\xbb\xbf",
                           "\xf4\x90\x80\x80",
                           "\xe0\x9f\xbf",
                           ""};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        bytes_as_jansson(cases[i], strlen(cases[i]));
    bytes_as_jansson("x\0\x80\0", 4);
    /* every byte value, and random byte strings */
    char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (char)i;
    bytes_as_jansson(all, sizeof all);
    uint64_t r = 0x9E3779B97F4A7C15ull;
    char buf[64];
    static const unsigned char pool[] = {'a',  '"',  '\\', '\n', 0,    0x1f, 0x7f, 0x80, 0xbf, 0xc2, 0xc3, 0xa9,
                                         0xe0, 0xa0, 0xed, 0x9f, 0xf0, 0x90, 0xf4, 0x8f, 0xff, 0xfe, 0xe2, 0x82};
    for (int round = 0; round < 20000; round++) {
        size_t n = 0;
        for (; n < sizeof buf && (r >> 59) != 0; n++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            buf[n] = (char)pool[r % sizeof pool];
        }
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        bytes_as_jansson(buf, n);
    }
}

/* The result line as jansson built it (the implementation fitrun had):
 * the oracle for fr_result_line's text. */
static void put(json_t *o, const char *key, json_t *v)
{
    assert_int_equal(json_object_set_new(o, key, v), 0);
}

static json_t *bytes_json(const char *s, size_t n)
{
    char *text = jansson_string(s, n);
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    free(text);
    return j;
}

static char *jansson_result(const struct fr_result *r)
{
    json_t *o = json_object();
    bool usage = r->has_usage;
    put(o, "id", r->id ? bytes_json(r->id, strlen(r->id)) : json_null());
    put(o, "status", json_string(fr_status_name(r->status)));
    put(o, "exit_code", r->has_exit ? json_integer(r->exit_code) : json_null());
    put(o, "signal", r->signal ? json_string(r->signal) : json_null());
    put(o, "syscall", r->syscall ? json_string(r->syscall) : json_null());
    put(o, "error_type", r->error_type ? json_string(r->error_type) : json_null());
    size_t mlen = r->error_message ? r->error_message_len ? r->error_message_len : strlen(r->error_message) : 0;
    put(o, "error_message", r->error_message ? bytes_json(r->error_message, mlen) : json_null());
    put(o, "stdout", r->has_output ? bytes_json(r->out ? r->out : "", r->out_len) : json_null());
    put(o, "stderr", r->has_output ? bytes_json(r->err ? r->err : "", r->err_len) : json_null());
    put(o, "cpu_ms", usage ? json_integer(r->cpu_ms > INT64_MAX ? INT64_MAX : (json_int_t)r->cpu_ms) : json_null());
    put(o, "wall_ms", usage ? json_integer(r->wall_ms > INT64_MAX ? INT64_MAX : (json_int_t)r->wall_ms) : json_null());
    put(o, "max_rss_kb",
        usage ? json_integer(r->max_rss_kb > INT64_MAX ? INT64_MAX : (json_int_t)r->max_rss_kb) : json_null());
    put(o, "worker", r->worker >= 0 ? json_integer(r->worker) : json_null());
    put(o, "line", r->line > 0 ? json_integer(r->line) : json_null());
    if (r->status == FR_STATUS_TIMEOUT && r->timeout != FR_TIMEOUT_NONE)
        put(o, "timeout", json_string(r->timeout == FR_TIMEOUT_CPU ? "cpu" : "wall"));
    if (r->attempts > 1)
        put(o, "attempts", json_integer(r->attempts));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    size_t l = strlen(text), extra = 0;
    for (size_t i = 0; i < r->nfields; i++)
        extra += strlen(r->fields[i].key) + r->fields[i].len + 4;
    char *line = realloc(text, l + extra + 2);
    l--;
    for (size_t i = 0; i < r->nfields; i++) {
        l += (size_t)sprintf(line + l, ",\"%s\":", r->fields[i].key);
        memcpy(line + l, r->fields[i].json, r->fields[i].len);
        l += r->fields[i].len;
    }
    line[l++] = '}';
    line[l++] = '\n';
    line[l] = '\0';
    return line;
}

static void result_as_jansson(const struct fr_result *r)
{
    size_t len;
    char *mine = fr_result_line(r, &len), *want = jansson_result(r);
    assert_non_null(mine);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(mine, want, len + 1);
    free(mine);
    free(want);
}

static void test_result_as_jansson(void **state)
{
    (void)state;
    uint64_t x = 0x2545F4914F6CDD1Dull;
#define RND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    static const char *texts[] = {NULL,
                                  "",
                                  "t1",
                                  "007bbfb7#3",
                                  "a\"b\\c\n",
                                  "\xff\xfe",
                                  "\xc3\xa9\xe2\x80\xa8",
                                  "IndexError",
                                  "line 3: duplicate id 'x' (an earlier line has it)"};
    static const char streams[] = "out\0put\x01\x1f\x7f\x80\xc3\xa9\"\\\n\r\t";
    static const struct fr_result_field fields[] = {
        {"outputs", "[[1,2],[true,false]]", 20}, {"passed", "[true,null]", 11}, {"error_line", "12", 2}};
    for (int round = 0; round < 5000; round++) {
        struct fr_result r = {0};
        r.id = texts[RND() % 9];
        r.status = (enum fr_status)(RND() % (FR_STATUS_CRASH + 1));
        r.timeout = (enum fr_timeout_kind)(RND() % 3);
        r.has_exit = RND() % 2;
        r.exit_code = (int)(RND() % 300) - 10;
        r.signal = RND() % 2 ? "SIGKILL" : NULL;
        r.syscall = RND() % 3 ? NULL : "socket";
        r.error_type = texts[RND() % 9];
        json_t *name = r.error_type ? json_string(r.error_type) : NULL;
        if (r.error_type && !name)
            r.error_type = "UnicodeError"; /* names are text: jansson refused the others outright */
        json_decref(name);
        r.error_message = texts[RND() % 9];
        if (RND() % 4 == 0) {
            r.error_message = streams;
            r.error_message_len = sizeof streams - 1;
        }
        r.has_output = RND() % 2;
        r.out = RND() % 3 ? streams : NULL;
        r.out_len = r.out ? RND() % sizeof streams : 0;
        r.err = RND() % 3 ? streams + 3 : NULL;
        r.err_len = r.err ? RND() % (sizeof streams - 3) : 0;
        r.has_usage = RND() % 2;
        r.cpu_ms = RND() % 5 ? RND() % 100000 : UINT64_MAX;
        r.wall_ms = RND() % 100000;
        r.max_rss_kb = RND();
        r.worker = (int)(RND() % 20) - 1;
        r.line = (long)(RND() % 1000) - 1;
        r.attempts = (int)(RND() % 3);
        r.fields = fields;
        r.nfields = RND() % 4;
        result_as_jansson(&r);
    }
#undef RND
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
    for (int i = 0; i < 20000; i += 7) {
        snprintf(key, sizeof key, "id-%d", i);
        assert_true(fr_idset_has(t, key));
    }
    assert_true(fr_idset_has(t, "other"));
    /* The empty key is a key like any other. */
    assert_int_equal(fr_idset_add(t, ""), 1);
    assert_true(fr_idset_has(t, ""));
    assert_int_equal(fr_idset_add(t, ""), 0);
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
        cmocka_unit_test(test_result_as_jansson),
        cmocka_unit_test(test_result_extra),
        cmocka_unit_test(test_result_key),
        cmocka_unit_test(test_idset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
