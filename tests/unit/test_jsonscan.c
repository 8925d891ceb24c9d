/* test_jsonscan.c — JSON text without trees (include/fitrun/jsonscan.h):
 * what the strict scan refuses, object members by name, iteration and
 * string decoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/jsonscan.h"

static bool strict(const char *s)
{
    return fr_json_whole(s, strlen(s), 10, FR_JSON_STRICT);
}

static void test_strict_values(void **state)
{
    (void)state;
    const char *good[] = {"0",
                          "-0",
                          "1.5e+16",
                          "-9223372036854775808",
                          "9223372036854775807",
                          "1e-400",
                          "\"a\\u0000b\"",
                          "\"\\ud83d\\ude00\"",
                          "\"\xc3\xa9\"",
                          " [ 1 , {\"a\" : null} ] ",
                          "{\"a\":1,\"a\":2}",
                          "true",
                          "[[[[[[[[[[1]]]]]]]]]]"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        assert_true(strict(good[i]));
    const char *bad[] = {"",
                         "01",
                         "1.",
                         ".5",
                         "+1",
                         "9223372036854775808",
                         "-9223372036854775809",
                         "1e999",
                         "NaN",
                         "Infinity",
                         "\"\\udc80\"",
                         "\"\\ud83d\"",
                         "\"\\ud83dx\"",
                         "\"\xed\xa0\x80\"",
                         "\"\xff\"",
                         "\"a\nb\"",
                         "\"\\x\"",
                         "[1,]",
                         "{\"a\"}",
                         "[1] [2]",
                         "tru",
                         "[[[[[[[[[[[1]]]]]]]]]]]", /* 11 deep */
                         "1234567890123456789012345678901234567890123456789012345678901234.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (strict(bad[i]))
            fail_msg("accepted: %s", bad[i]);
    }
    /* \u0000 in a key: jansson refuses it ("NUL byte in object key not
     * supported"), so a result line holding it could not be read back. */
    const char *nul_keys[] = {"{\"\\u0000\":1}", "{\"a\\u0000b\":1}", "[{\"k\":{\"\\u0000\":[]}}]"};
    for (size_t i = 0; i < sizeof nul_keys / sizeof *nul_keys; i++) {
        if (strict(nul_keys[i]))
            fail_msg("accepted: %s", nul_keys[i]);
    }
    assert_true(strict("{\"k\":\"\\u0000\",\"\\\\u0000\":1}")); /* a value, and a key "\\u0000" */
    /* What jansson already checked is only followed in SKIP mode. */
    assert_true(fr_json_whole("[1e999]", 7, 10, FR_JSON_SKIP));
}

static void test_members(void **state)
{
    (void)state;
    const char *keys[] = {"id", "code", "inputs", "entry"};
    struct fr_json_span v[4];
    const char *job = "{\"i\\u0064\": \"x\", \"expected\": [[1]], \"code\": \"c\", \"inputs\": [1, {\"id\": 2}]}";
    assert_int_equal(fr_json_members(job, strlen(job), keys, 4, v, 100, FR_JSON_SKIP), 0);
    assert_int_equal(v[0].n, 3);
    assert_memory_equal(v[0].p, "\"x\"", 3);
    assert_memory_equal(v[2].p, "[1, {\"id\": 2}]", v[2].n);
    assert_null(v[3].p);
    const char *dup = "{\"id\": 1, \"id\": 2}";
    assert_int_equal(fr_json_members(dup, strlen(dup), keys, 4, v, 100, FR_JSON_SKIP), -1);
    const char *trail = "{\"id\": 1} x";
    assert_int_equal(fr_json_members(trail, strlen(trail), keys, 4, v, 100, FR_JSON_SKIP), -1);
    assert_int_equal(fr_json_members("[1]", 3, keys, 4, v, 100, FR_JSON_SKIP), -1);
    assert_int_equal(fr_json_members("{}", 2, keys, 4, v, 100, FR_JSON_SKIP), 0);
    const char *nul_key = "{\"id\": 1, \"\\u0000\": 2}";
    assert_int_equal(fr_json_members(nul_key, strlen(nul_key), keys, 4, v, 100, FR_JSON_STRICT), -1);
}

static void test_iterate_and_decode(void **state)
{
    (void)state;
    const char *arr = "[ 1, \"a\\\"b\" , [2,3],{\"k\":[]} ]";
    struct fr_json_iter it;
    struct fr_json_span e, k;
    fr_json_iter_init(&it, (struct fr_json_span){arr, strlen(arr)});
    const char *want[] = {"1", "\"a\\\"b\"", "[2,3]", "{\"k\":[]}"};
    for (int i = 0; i < 4; i++) {
        assert_true(fr_json_iter_next(&it, &e));
        assert_int_equal(e.n, strlen(want[i]));
        assert_memory_equal(e.p, want[i], e.n);
    }
    assert_false(fr_json_iter_next(&it, &e));
    const char *obj = "{\"a\": 1, \"b\" :[2]}";
    fr_json_iter_init(&it, (struct fr_json_span){obj, strlen(obj)});
    assert_true(fr_json_iter_member(&it, &k, &e));
    assert_memory_equal(k.p, "\"a\"", 3);
    assert_memory_equal(e.p, "1", 1);
    assert_true(fr_json_iter_member(&it, &k, &e));
    assert_memory_equal(e.p, "[2]", 3);
    assert_false(fr_json_iter_member(&it, &k, &e));

    char buf[32];
    const char *s = "\"a\\u0000\\u00e9\\ud83d\\ude00\\n\"";
    long n = fr_json_string_decode((struct fr_json_span){s, strlen(s)}, buf, sizeof buf);
    assert_int_equal(n, 1 + 1 + 2 + 4 + 1);
    assert_memory_equal(buf, "a\0\xc3\xa9\xf0\x9f\x98\x80\n", (size_t)n);
    assert_int_equal(fr_json_string_decode((struct fr_json_span){s, strlen(s)}, buf, 3), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strict_values),
        cmocka_unit_test(test_members),
        cmocka_unit_test(test_iterate_and_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
