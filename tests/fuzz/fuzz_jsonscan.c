/* fuzz_jsonscan.c — the tree-less JSON scanner (fitrun/jsonscan.h) that
 * reads a prediction's report in the Python runtime (FR_JSON_STRICT: the
 * text comes from the prediction, and its outputs are copied verbatim into
 * the result line) and walks job texts and outputs (FR_JSON_SKIP). The
 * input is the text; jansson, which reads the result lines back (`fitrun
 * merge`, --resume), is the reference.
 *
 * Invariants, at the report's depth (2 + 100) and at jansson's (2048):
 *  - a text a STRICT scan accepts, jansson accepts too, and a SKIP scan
 *    accepts it as well;
 *  - fr_json_value's length is within the text, and that prefix is a whole
 *    value by itself (and as long for the SKIP scan);
 *  - fr_json_members: each span found is a whole value inside the text,
 *    equal (json_equal) to jansson's member of that name;
 *  - iterating an array visits exactly jansson's elements, each equal,
 *    and taking an element as the same text as itself takes all of it;
 *  - in a STRICT text, a value's end found by its quotes and brackets
 *    (fr_json_checked_len) is the scanner's, and on any text within it;
 *  - fr_json_members counts jansson's elements of an array member and
 *    members of an object member;
 *  - a string decodes to jansson's bytes, NULs included, and never to
 *    more bytes than its literal. */
#include <jansson.h>

#include "fitrun/jsonscan.h"
#include "fuzz.h"

static const char *const keys[] = {"outputs", "error_type", "error_message", "error_line", "memory", "sandbox_error"};
#define NKEYS (sizeof keys / sizeof keys[0])

static json_t *load(const char *s, size_t n)
{
    json_error_t e;
    return json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
}

static void check_string(struct fr_json_span v, const json_t *j)
{
    if (!v.n || v.p[0] != '"')
        return;
    char *buf = malloc(v.n);
    if (!buf)
        abort();
    long got = fr_json_string_decode(v, buf, v.n);
    FUZZ_CHECK(got >= 0 && (size_t)got <= v.n, "decoded %ld bytes of a %zu-byte literal", got, v.n);
    FUZZ_CHECK(json_is_string(j) && (size_t)got == json_string_length(j) &&
                   !memcmp(buf, json_string_value(j), (size_t)got),
               "the string decodes to other bytes than jansson's");
    free(buf);
}

static void check_value_span(struct fr_json_span v, const json_t *want, int depth)
{
    FUZZ_CHECK(fr_json_whole(v.p, v.n, depth, FR_JSON_STRICT), "a span found is a whole value");
    json_t *got = load(v.p, v.n);
    FUZZ_CHECK(got && json_equal(got, want), "the span '%.*s' is not jansson's value", (int)(v.n < 80 ? v.n : 80), v.p);
    check_string(v, want);
    json_decref(got);
}

static void check_at(const char *s, size_t n, int depth)
{
    bool strict = fr_json_whole(s, n, depth, FR_JSON_STRICT);
    bool skip = fr_json_whole(s, n, depth, FR_JSON_SKIP);
    json_t *j = load(s, n);
    if (strict) {
        FUZZ_CHECK(j, "a STRICT text jansson refuses: '%.*s'", (int)(n < 200 ? n : 200), s);
        FUZZ_CHECK(skip, "a STRICT text the SKIP scan refuses");
    }

    size_t len = fr_json_value(s, n, depth, FR_JSON_STRICT);
    FUZZ_CHECK(len <= n, "a value of %zu bytes in %zu", len, n);
    if (len) {
        FUZZ_CHECK(fr_json_whole(s, len, depth, FR_JSON_STRICT), "the value's %zu bytes are not a value alone", len);
        FUZZ_CHECK(fr_json_value(s, len, depth, FR_JSON_SKIP) == len, "SKIP and STRICT lengths differ");
        FUZZ_CHECK(!strict || fr_json_checked_len(s, n) == len, "the checked length %zu is not the value's %zu",
                   fr_json_checked_len(s, n), len);
    }
    FUZZ_CHECK(fr_json_checked_len(s, n) <= n, "a checked length beyond the text");

    if (strict) {
        struct fr_json_span it = {s, n};
        while (it.n && (it.p[0] == ' ' || it.p[0] == '\t' || it.p[0] == '\n' || it.p[0] == '\r'))
            it.p++, it.n--;
        while (it.n &&
               (it.p[it.n - 1] == ' ' || it.p[it.n - 1] == '\t' || it.p[it.n - 1] == '\n' || it.p[it.n - 1] == '\r'))
            it.n--;
        check_string(it, j);
        if (json_is_array(j)) {
            struct fr_json_iter walk;
            struct fr_json_span e;
            size_t i = 0;
            fr_json_iter_init(&walk, it);
            while (fr_json_iter_next(&walk, &e)) {
                FUZZ_CHECK(i < json_array_size(j), "more elements than jansson's %zu", json_array_size(j));
                check_value_span(e, json_array_get(j, i), depth);
                i++;
            }
            FUZZ_CHECK(i == json_array_size(j), "%zu elements, jansson has %zu", i, json_array_size(j));
            struct fr_json_iter again, same;
            struct fr_json_span a, b;
            fr_json_iter_init(&again, it);
            fr_json_iter_init(&same, it);
            while (fr_json_iter_next(&again, &a))
                FUZZ_CHECK(fr_json_iter_same(&same, a, &b) && b.p == a.p && b.n == a.n,
                           "an element not taken as the same text as itself");
        }
    }

    struct fr_json_span out[NKEYS];
    size_t counts[NKEYS];
    if (fr_json_members(s, n, keys, NKEYS, out, counts, depth, FR_JSON_STRICT) == 0) {
        FUZZ_CHECK(strict && json_is_object(j), "members of a text that is no STRICT object");
        for (size_t i = 0; i < NKEYS; i++) {
            json_t *m = json_object_get(j, keys[i]);
            if (!out[i].p)
                continue;
            FUZZ_CHECK(out[i].p >= s && out[i].p + out[i].n <= s + n, "span of %s outside the text", keys[i]);
            FUZZ_CHECK(m, "%s found, but jansson has no such member", keys[i]);
            check_value_span(out[i], m, depth);
            size_t want = json_is_array(m) ? json_array_size(m) : json_is_object(m) ? json_object_size(m) : 0;
            FUZZ_CHECK(counts[i] == want, "%s counted %zu, jansson has %zu", keys[i], counts[i], want);
        }
    }
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *s = malloc(size ? size : 1); /* exactly `size` bytes: no NUL to stop at */
    if (!s)
        abort();
    memcpy(s, data, size);
    check_at(s, size, 2 + 100);
    check_at(s, size, 2048);
    free(s);
    return 0;
}
