/* fitrun/jsonscan.h — JSON text without trees.
 *
 * fitrun forwards parts of JSON texts (a job's code and inputs to a
 * prediction, a prediction's outputs to its result line) and compares them
 * (launcher/verdict/verdict.c) without building jansson trees: a tree costs
 * tens of bytes per value, so a hostile 1 MiB array of empty arrays would
 * cost fitrun tens of MiB. These functions scan text in place, allocate
 * nothing, and recurse at most `max_depth` levels.
 *
 * Two modes:
 *   FR_JSON_SKIP    text already checked (by jansson, or by a STRICT scan):
 *                   only the structure is followed.
 *   FR_JSON_STRICT  text from a prediction: it is RFC 8259 JSON and can be
 *                   copied verbatim into a result line that jansson reads
 *                   back (`fitrun merge`, --resume): strings are valid UTF-8
 *                   with valid escapes and no lone surrogate (\u0000 is
 *                   allowed, except in an object key, which jansson
 *                   refuses), integers (no fraction, no exponent) fit in 64
 *                   bits, other numbers are finite doubles, a number has at
 *                   most FR_JSON_NUMBER_MAX characters. Duplicate keys are
 *                   allowed (RFC 8259 permits them; the verdict treats an
 *                   object with one as unequal to anything).
 * Whitespace is the four JSON whitespace characters. */
#ifndef FITRUN_JSONSCAN_H
#define FITRUN_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FR_JSON_NUMBER_MAX 64
/* Deepest nesting a SKIP scan of an already parsed text follows: above
 * jansson's own parser limit (JSON_PARSER_MAX_DEPTH, 2048). */
#define FR_JSON_SKIP_DEPTH 4096

enum fr_json_mode { FR_JSON_SKIP = 0, FR_JSON_STRICT };

/* A value's text: p[0, n). p == NULL: absent. */
struct fr_json_span {
    const char *p;
    size_t n;
};

/* The length of the one JSON value that starts at s[0] (no leading
 * whitespace), or 0 when s does not start with a valid value or it is
 * nested deeper than max_depth arrays/objects (a scalar is depth 0,
 * [1] is depth 1). */
size_t fr_json_value(const char *s, size_t n, int max_depth, enum fr_json_mode mode);

/* s[0, n) is one JSON value, with optional whitespace around it. */
bool fr_json_whole(const char *s, size_t n, int max_depth, enum fr_json_mode mode);

/* s[0, n) is one JSON object (whitespace around it allowed). For each
 * wanted key keys[i] (plain ASCII names), out[i] is its value's span, or
 * {NULL, 0} when absent; other members are scanned and skipped. The
 * object itself counts as one level of max_depth. Returns 0, or -1 when
 * the text is not such an object, or a wanted key occurs twice. */
int fr_json_members(const char *s, size_t n, const char *const keys[], size_t nkeys, struct fr_json_span out[],
                    int max_depth, enum fr_json_mode mode);

/* Walking a checked array or object span, one element or member at a
 * time (SKIP scans: the span must have been checked before). */
struct fr_json_iter {
    const char *p, *end;
};
void fr_json_iter_init(struct fr_json_iter *it, struct fr_json_span container);
/* Next array element; false at the end. */
bool fr_json_iter_next(struct fr_json_iter *it, struct fr_json_span *value);
/* Next object member (key: the string literal, quotes included). */
bool fr_json_iter_member(struct fr_json_iter *it, struct fr_json_span *key, struct fr_json_span *value);

/* Decode a checked string literal (quotes included) into buf as UTF-8.
 * Returns the decoded length (which never exceeds s.n), or -1 when it
 * needs more than n bytes. NUL bytes (from \u0000) are kept. */
long fr_json_string_decode(struct fr_json_span s, char *buf, size_t n);

#endif
