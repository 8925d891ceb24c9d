/* test_jsonscan.c — JSON text without trees (include/fitrun/jsonscan.h):
 * what the strict scan refuses, object members by name, iteration and
 * string decoding, and a job line read exactly as jansson reads it
 * (FR_JSON_LINE), checked against jansson itself on edge cases and on
 * 200,000 mutated lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

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
    /* Long strings and rows of digits, in both modes. */
    const char *long_bad[] = {"\"abcdefghi\xffjklmnopqrstuvwxyz\"", "\"abcdefghijklmnop\xed\xa0\x80qrstuvwx\"",
                              "[1,2,3,4,5,6,7,12345678901234567890]"};
    for (size_t i = 0; i < sizeof long_bad / sizeof *long_bad; i++) {
        if (strict(long_bad[i]))
            fail_msg("accepted: %s", long_bad[i]);
        assert_true(fr_json_whole(long_bad[i], strlen(long_bad[i]), 10, FR_JSON_SKIP));
    }
    const char *long_either[] = {"\"abcdefgh\x01ijklmnopqrstuvwxyz\"", "[0,1,2,3,4,5,6,7,]", "[0,1,2,3,4,5,6,7"};
    for (size_t i = 0; i < sizeof long_either / sizeof *long_either; i++) {
        if (strict(long_either[i]) || fr_json_whole(long_either[i], strlen(long_either[i]), 10, FR_JSON_SKIP))
            fail_msg("accepted: %s", long_either[i]);
    }
    assert_true(strict("[[0,1,2,3,4,5,6,7,8,9],[0,1,2,3],[-1,10,0,1,2,3,4]]"));
    assert_int_equal(fr_json_value("[0,1,2,3,4,5,6,7],", 18, 10, FR_JSON_STRICT), 17);
    assert_int_equal(fr_json_value("\"abcdefghijklmnop\"x", 19, 10, FR_JSON_STRICT), 18);
}

static void test_members(void **state)
{
    (void)state;
    const char *keys[] = {"id", "code", "inputs", "entry"};
    struct fr_json_span v[4];
    const char *job = "{\"i\\u0064\": \"x\", \"expected\": [[1]], \"code\": \"c\", \"inputs\": [1, {\"id\": 2}]}";
    assert_int_equal(fr_json_members(job, strlen(job), keys, 4, v, NULL, 100, FR_JSON_SKIP), 0);
    assert_int_equal(v[0].n, 3);
    assert_memory_equal(v[0].p, "\"x\"", 3);
    assert_memory_equal(v[2].p, "[1, {\"id\": 2}]", v[2].n);
    assert_null(v[3].p);
    const char *dup = "{\"id\": 1, \"id\": 2}";
    assert_int_equal(fr_json_members(dup, strlen(dup), keys, 4, v, NULL, 100, FR_JSON_SKIP), -1);
    const char *trail = "{\"id\": 1} x";
    assert_int_equal(fr_json_members(trail, strlen(trail), keys, 4, v, NULL, 100, FR_JSON_SKIP), -1);
    assert_int_equal(fr_json_members("[1]", 3, keys, 4, v, NULL, 100, FR_JSON_SKIP), -1);
    assert_int_equal(fr_json_members("{}", 2, keys, 4, v, NULL, 100, FR_JSON_SKIP), 0);
    size_t counts[4];
    const char *sized = "{\"inputs\": [[1,2],3, [4]], \"id\": 7, \"code\": {\"a\": [1, 2, 3], \"b\": []}}";
    assert_int_equal(fr_json_members(sized, strlen(sized), keys, 4, v, counts, 100, FR_JSON_STRICT), 0);
    assert_int_equal(counts[0], 0); /* a scalar */
    assert_int_equal(counts[1], 2);
    assert_int_equal(counts[2], 3);
    assert_int_equal(counts[3], 0); /* absent */
    const char *empty = "{\"inputs\": [], \"code\": [0,1,2,3,4,5,6,7,8]}";
    assert_int_equal(fr_json_members(empty, strlen(empty), keys, 4, v, counts, 100, FR_JSON_STRICT), 0);
    assert_int_equal(counts[2], 0);
    assert_int_equal(counts[1], 9);
    const char *nul_key = "{\"id\": 1, \"\\u0000\": 2}";
    assert_int_equal(fr_json_members(nul_key, strlen(nul_key), keys, 4, v, NULL, 100, FR_JSON_STRICT), -1);
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

    /* Quotes and brackets inside strings, escaped quotes and backslashes,
     * long runs either side of the 8-byte steps. */
    const char *hard[] = {"\"a\\\\\"",
                          "\"]\\\"[\"",
                          "[\"]]]\", \"\\\\\", [[\"{\"]]]",
                          "{\"k]\":[1,{\"}\":\"\\\"\"}]}",
                          "[[0,1,2,3,4,5,6,7,8,9],[9,8,7,6,5,4,3,2,1,0]]",
                          "\"abcdefghijklmnopqrstuvwxyz\\\\\"",
                          "-12.5e3",
                          "true"};
    for (size_t i = 0; i < sizeof hard / sizeof *hard; i++) {
        size_t hn = strlen(hard[i]);
        char tail[128];
        snprintf(tail, sizeof tail, "%s, 1]", hard[i]);
        assert_true(fr_json_whole(hard[i], hn, 10, FR_JSON_STRICT));
        assert_int_equal(fr_json_checked_len(hard[i], hn), hn);
        assert_int_equal(fr_json_checked_len(tail, strlen(tail)), hn);
    }
    assert_int_equal(fr_json_checked_len("[[1]", 4), 4); /* no end: all of it */
    assert_int_equal(fr_json_checked_len("\"ab", 3), 3);
    assert_int_equal(fr_json_checked_len("\"a\\", 3), 3);

    /* An element taken when it is another text byte for byte, not when
     * that text is only its start. */
    const char *outs = "[[1,2], 12, 3]";
    fr_json_iter_init(&it, (struct fr_json_span){outs, strlen(outs)});
    assert_true(fr_json_iter_same(&it, (struct fr_json_span){"[1,2]", 5}, &e));
    assert_memory_equal(e.p, "[1,2]", 5);
    assert_false(fr_json_iter_same(&it, (struct fr_json_span){"1", 1}, &e));
    assert_false(fr_json_iter_same(&it, (struct fr_json_span){"13", 2}, &e));
    assert_true(fr_json_iter_same(&it, (struct fr_json_span){"12", 2}, &e));
    assert_true(fr_json_iter_same(&it, (struct fr_json_span){"3", 1}, &e));
    assert_false(fr_json_iter_same(&it, (struct fr_json_span){"3", 1}, &e));
    assert_false(fr_json_iter_next(&it, &e));

    char buf[32];
    const char *s = "\"a\\u0000\\u00e9\\ud83d\\ude00\\n\"";
    long n = fr_json_string_decode((struct fr_json_span){s, strlen(s)}, buf, sizeof buf);
    assert_int_equal(n, 1 + 1 + 2 + 4 + 1);
    assert_memory_equal(buf, "a\0\xc3\xa9\xf0\x9f\x98\x80\n", (size_t)n);
    assert_int_equal(fr_json_string_decode((struct fr_json_span){s, strlen(s)}, buf, 3), -1);
}

/* ---- FR_JSON_LINE against jansson ---------------------------------------- */

#define JOB_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL)

/* fr_json_line and json_loadb agree on s[0, n): valid or not, object or
 * not, and for an object the same members with the same values. */
/* s[0, n) readable in a failure message (bytes outside ASCII as \\xHH). */
static const char *shown(const char *s, size_t n)
{
    static char out[4096];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < sizeof out; i++) {
        unsigned char c = (unsigned char)s[i];
        o += (size_t)(c >= 0x20 && c < 0x7f ? sprintf(out + o, "%c", c) : sprintf(out + o, "\\x%02x", c));
    }
    out[o] = '\0';
    return out;
}

static void agree(const char *s, size_t n)
{
    struct fr_json_member *m;
    size_t nm;
    int rc = fr_json_line(s, n, &m, &nm);
    json_t *j = json_loadb(s, n, JOB_FLAGS, NULL);
    if (memchr(s, '\0', n)) {
        /* jansson skips a raw NUL where it reads one byte ahead (after a
         * number or a literal); RFC 8259 and fitrun never accept one. */
        if (rc != FR_JSON_LINE_INVALID)
            fail_msg("fitrun accepts a raw NUL: '%s'", shown(s, n));
        json_decref(j);
        free(m);
        return;
    }
    if ((rc >= 0) != (j != NULL) || rc == FR_JSON_LINE_NOMEM)
        fail_msg("fitrun %s, jansson %s: '%s'", rc >= 0 ? "accepts" : "refuses", j ? "accepts" : "refuses",
                 shown(s, n));
    if (j && (rc == FR_JSON_LINE_OBJECT) != json_is_object(j))
        fail_msg("object or not: '%s'", shown(s, n));
    if (rc == FR_JSON_LINE_OBJECT) {
        assert_int_equal(nm, json_object_size(j));
        for (size_t i = 0; i < nm; i++) {
            char key[4096];
            long kl = fr_json_string_decode(m[i].key, key, sizeof key - 1);
            assert_true(kl >= 0);
            key[kl] = '\0';
            json_t *v = json_object_get(j, key);
            assert_non_null(v);
            json_t *mine = json_loadb(m[i].value.p, m[i].value.n, JOB_FLAGS, NULL);
            assert_non_null(mine);
            assert_true(json_equal(mine, v));
            if (json_is_array(v))
                assert_int_equal(m[i].count, json_array_size(v));
            if (json_is_object(v))
                assert_int_equal(m[i].count, json_object_size(v));
            assert_ptr_equal(fr_json_member_find(m, nm, key), kl == (long)strlen(key) ? &m[i] : NULL);
            json_decref(mine);
        }
    }
    free(m);
    json_decref(j);
}

static void agree_str(const char *s)
{
    agree(s, strlen(s));
}

/* A number valid in a job line (any length) is a finite double, and so
 * is the same number in a STRICT scan unless it is too long for one. */
static void strict_agrees_with_line(const char *num, size_t n)
{
    bool line = fr_json_whole(num, n, 10, FR_JSON_LINE), strict = fr_json_whole(num, n, 10, FR_JSON_STRICT);
    json_t *j = json_loadb(num, n, JOB_FLAGS, NULL);
    assert_int_equal(line, j != NULL);
    assert_int_equal(strict, line && n <= FR_JSON_NUMBER_MAX);
    json_decref(j);
}

static void test_line_edges(void **state)
{
    (void)state;
    const char *cases[] = {
        "{\"id\":\"a\",\"inputs\":[[1,2],[3]],\"expected\":null}",
        "{}",
        " { \"a\" : 1 } \r",
        "[1]",
        "5",
        "\"x\"",
        "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"\\u0061\":2}",
        "{\"x\":{\"b\":1,\"b\":1}}",
        "{\"x\":[{\"k\":1},{\"k\":2}]}",
        "{\"a\\u0000\":1}",
        "{\"a\":\"\\u0000\"}",
        "{\"n\":12345678901234567890123456789}",
        "{\"n\":9223372036854775807,\"m\":-9223372036854775808}",
        "{\"n\":9223372036854775808}",
        "{\"n\":-9223372036854775809}",
        "{\"n\":1e308,\"m\":1e309}",
        "{\"n\":1e-400}",
        "{\"n\":0.00000000000000000000000000000000000000000000000000000000000000000000000000001}",
        "{\"n\":100000000000000000000000000000000000000000000000000000000000000000000000000000.5}",
        "{\"n\":01}",
        "{\"n\":-}",
        "{\"n\":1.}",
        "{\"n\":.5}",
        "{\"s\":\"\\ud83d\\ude00\"}",
        "{\"s\":\"\\ud83d\"}",
        "{\"s\":\"\\udc00\"}",
        "{\"s\":\"\\ud83d\\u0041\"}",
        "{\"s\":\"\xc3\xa9\"}",
        "{\"s\":\"\xed\xa0\x80\"}",
        "{\"s\":\"\xc0\xaf\"}",
        "{\"s\":\"\xf4\x90\x80\x80\"}",
        "{\"s\":\"\x7f\"}",
        "{\"s\":\"a\tb\"}",
        "{\"s\":\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"}",
        "{\"s\":\"\\x\"}",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{\"a\":1} {}",
        "{\"a\":tru}",
        "{\"a\":[true,false,null]}",
        /* objects without keys (no key list yet: found by fuzz_job_line) */
        "{}",
        "{}ad}a",
        "{\"o\":[{},{\"k\":{}}]}",
        /* one-digit elements (scanned without a call) and their neighbours */
        "{\"a\":[0,1,9]}",
        "{\"a\":[01]}",
        "{\"a\":[1,]}",
        "{\"a\":[1 ,2 ]}",
        "{\"a\":[1.5,2e1,-3,10]}",
        "{\"a\":[[1],[2,3]]}",
        "{\"a\":[1}",
        "{\"a\":[1",
        /* rows of digits, read four at a time, and what breaks a block */
        "{\"a\":[0,1,2,3,4,5,6,7,8]}",
        "{\"a\":[[0,1,2,3],[4,5,6,7],[8,9,0,1,2,3,4,5,6,7,8,9]]}",
        "{\"a\":[0,1,2,3, 4,5,6,7,\n8]}",
        "{\"a\":[0,1,2,3,]}",
        "{\"a\":[0,1,2,3,4,5,6,7,]}",
        "{\"a\":[0,1,2,3,\n]}",
        "{\"a\":[0,1,2,3,01]}",
        "{\"a\":[0,1,2,:,4]}",
        "{\"a\":[0,1,/,3,4]}",
        "{\"a\":[0,1,2,3/4]}",
        "{\"a\":[0,1,2,3;4]}",
        "{\"a\":[0,1,2,3,4,5,6,7}",
        "{\"a\":[0,1,2,3,4,5,6,7",
        "{\"a\":[0,1,2,3,4,5,6,7,",
        "{\"a\":{\"k\":0,1,2,3,4}}",
        "{\"a\":[0,1,2,3,4.5,6,7,8,9e1]}",
        "{\"a\":[-0,0,-1,-12,12,120,-]}",
        "{\"a\":[-0,0,-1,-12,12,120]}",
        "{\"a\":[1-,2]}",
        "{\"a\":[--1]}",
        "{\"a\":[123456789012345678,-123456789012345678,1]}",
        "{\"a\":[1234567890123456789,-1234567890123456789]}",
        "{\"a\":[9223372036854775807,-9223372036854775808]}",
        "{\"a\":[9223372036854775808]}",
        "{\"a\":[12345678901234567890]}",
        /* long strings, read eight bytes at a time, and what breaks a block */
        "{\"s\":\"abcdefghijklmnopqrstuvwxyz0123456789\"}",
        "{\"s\":\"abcdefghijklmnop\\\"qrstuvwxyz\"}",
        "{\"s\":\"abcdefgh\x01ijklmnop\"}",
        "{\"s\":\"abcdefgh\x1fijklmnop\"}",
        "{\"s\":\"abcdefgh ijklmnop~\x7f\"}",
        "{\"s\":\"abcdefghi\xffjklmnop\"}",
        "{\"s\":\"abcdefghi\xc3\xa9jklmnop\xf0\x9f\x98\x80qrstuvw\"}",
        "{\"s\":\"abcdefghijklmno\xc3\"}",
        "{\"s\":\"abcdefghijklmnop\\u00e9qrstuvwx\"}",
        "{\"s\":\"abcdefghijklmnop\\uZZZZqrstuvwx\"}",
        "{\"s\":\"abcdefghijklmnopqrstuvwx",
        "{\"s\":\"abcdefghijklmnopqrstuvw\\",
        "{\"abcdefghijklmnop\":1,\"abcdefghijklmnop\":2}",
        "\xef\xbb\xbf{}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        agree_str(cases[i]);
    /* Decimals without an exponent around DBL_MAX's 309 digits: finite
     * below it (found without strtod), jansson's overflow above. */
    for (int digits = 305; digits <= 312; digits++) {
        char big[400];
        int o = sprintf(big, "{\"n\":");
        memset(big + o, '9', (size_t)digits);
        sprintf(big + o + digits, ".5}");
        agree_str(big);
        strict_agrees_with_line(big + o, (size_t)digits + 2);
    }
    agree("{\"a\":\"x\0y\"}", 11);
    agree("{\"a\":1}\0", 8);
    /* Levels around jansson's limit (2048, the top value being 1). */
    for (int deep = 2045; deep <= 2050; deep++) {
        for (int scalar = 0; scalar < 3; scalar++) {
            size_t n = (size_t)deep * 2 + 32;
            char *s = malloc(n), *p = s;
            p += sprintf(p, "{\"a\":");
            for (int i = 0; i < deep - 1; i++)
                *p++ = '[';
            if (scalar)
                p += sprintf(p, scalar == 1 ? "1" : "0,1,2,3,4,5,6,7,8,10");
            for (int i = 0; i < deep - 1; i++)
                *p++ = ']';
            *p++ = '}';
            agree(s, (size_t)(p - s));
            free(s);
        }
    }
    /* A big object: duplicates found by sorting. */
    char big[8192], *p = big;
    p += sprintf(p, "{");
    for (int i = 0; i < 300; i++)
        p += sprintf(p, "%s\"k%d\":%d", i ? "," : "", i, i);
    strcpy(p, "}");
    agree_str(big);
    strcpy(p, ",\"k\\u0031\\u00307\":1}");
    agree_str(big);
    /* Members: spans, depth and counts. */
    const char *job = "{\"id\":\"x\",\"inputs\":[[[1]],2,[]],\"code\":\"c\",\"o\":{\"a\":[1]}}";
    struct fr_json_member *m;
    size_t nm;
    assert_int_equal(fr_json_line(job, strlen(job), &m, &nm), FR_JSON_LINE_OBJECT);
    assert_int_equal(nm, 4);
    const struct fr_json_member *in = fr_json_member_find(m, nm, "inputs");
    assert_non_null(in);
    assert_int_equal(in->depth, 3);
    assert_int_equal(in->count, 3);
    assert_int_equal(fr_json_member_find(m, nm, "code")->depth, 0);
    assert_int_equal(fr_json_member_find(m, nm, "o")->depth, 2);
    assert_int_equal(fr_json_member_find(m, nm, "o")->count, 1);
    assert_null(fr_json_member_find(m, nm, "expected"));
    free(m);
}

/* Deterministic PRNG (xorshift). */
static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* On checked text, the quote-and-bracket walk ends a value where the
 * scanner does; on any text it stays within it. */
static void checked_agrees(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && strchr(" \t\r\n", s[i]) && s[i])
        i++;
    size_t len = fr_json_checked_len(s + i, n - i);
    assert_true(len <= n - i);
    if (fr_json_whole(s, n, FR_JSON_SKIP_DEPTH, FR_JSON_STRICT) &&
        len != fr_json_value(s + i, n - i, FR_JSON_SKIP_DEPTH, FR_JSON_SKIP))
        fail_msg("checked length %zu, scanned %zu: %s", len,
                 fr_json_value(s + i, n - i, FR_JSON_SKIP_DEPTH, FR_JSON_SKIP), shown(s, n));
}

static void test_line_mutations(void **state)
{
    (void)state;
    static const char *seeds[] = {
        "{\"id\":\"007bbfb7#0\",\"code\":\"def transform(g):\\n    return g\\n\",\"entry\":\"transform\","
        "\"inputs\":[[[0,7,7],[7,7,7]],[[4,0,4]]],\"expected\":[[[0,0]],null],\"mutation\":\"original\"}",
        "{\"id\":\"u\\u00e9\\ud83d\\ude00\",\"argv\":[\"sh\",\"-c\",\"echo \\\"hi\\\"\"],\"stdin\":\"a\\u0000b\"}",
        "{\"a\":{\"b\":{\"c\":[1.5e10,-0.25,true,false,null,9223372036854775807]}},\"\xc3\xa9\":\"\xf0\x9f\x98\x80\"}",
        "[{\"k\":1,\"l\":2},{\"k\":3}]",
        "{\"ab\":1,\"a\\u0062\":2,\"a\\u00e9\":3,\"a\xc3\xa9\":4}",
        "{\"k\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,\"i\":9,\"j\":10,\"aa\":0}}",
        "{\"g\":[[0,1,2,3,4,5,6,7,8,9],[9,8,7,6,5,4,3,2,1,0,1,2],[1,2,3,4,5,6,7,8]],\"n\":[10,-2,33,4,5,6]}",
        "{\"code\":\"def transform(grid):\\n    return [row[::-1] for row in grid]\\n\",\"x\":\"0123456789abcdef\"}",
    };
    static const char alphabet[] =
        "{}[]\",:\\u0123456789abcdefABCDEF-+.eE \t\r\ntrufalsn\x80\xbf\xc3\xa9\xed\xa0\xf4\x90"
        "\xff\x00\xc0";
    char buf[512];
    for (int round = 0; round < 200000; round++) {
        const char *seed = seeds[next_rand() % (sizeof seeds / sizeof *seeds)];
        size_t n = strlen(seed);
        memcpy(buf, seed, n);
        int edits = 1 + (int)(next_rand() % 3);
        for (int e = 0; e < edits; e++) {
            size_t at = n ? next_rand() % n : 0;
            char c = alphabet[next_rand() % (sizeof alphabet - 1)];
            switch (next_rand() % 3) {
            case 0: buf[at] = c; break; /* replace */
            case 1:                     /* insert */
                if (n + 1 < sizeof buf) {
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = c;
                    n++;
                }
                break;
            default: /* delete */
                if (n) {
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                }
            }
        }
        agree(buf, n);
        checked_agrees(buf, n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strict_values),      cmocka_unit_test(test_members),
        cmocka_unit_test(test_iterate_and_decode), cmocka_unit_test(test_line_edges),
        cmocka_unit_test(test_line_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
