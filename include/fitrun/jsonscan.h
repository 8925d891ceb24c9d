/* fitrun/jsonscan.h — JSON text without trees.
 *
 * fitrun reads job lines, forwards parts of JSON texts (a job's code and
 * inputs to a prediction, a prediction's outputs to its result line) and
 * compares them (launcher/verdict/verdict.c) without building jansson
 * trees: a tree costs tens of bytes per value and its allocations most of
 * the time of reading a line, and a hostile 1 MiB array of empty arrays
 * would cost fitrun tens of MiB. These functions scan text in place and
 * recurse at most `max_depth` levels; only a job line's scan
 * (fr_json_line) allocates (its members, and the keys of its objects).
 *
 * Three modes:
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
 *   FR_JSON_LINE    a job line (fr_json_line only): exactly what jansson's
 *                   json_loadb accepts with JSON_REJECT_DUPLICATES |
 *                   JSON_DECODE_ANY | JSON_ALLOW_NUL, so that a line is a
 *                   job for `fitrun run` exactly when it is one for every
 *                   other reader of the file: STRICT's strings, integers
 *                   within 64 bits and finite numbers at any length, no
 *                   object with two keys that decode to the same text or a
 *                   key holding U+0000, and every value (scalars too, the
 *                   top one being level 1) at most FR_JSON_LINE_DEPTH
 *                   levels deep. One difference: jansson skips a raw NUL
 *                   byte where it reads one byte ahead (after a number or
 *                   a literal); no JSON text holds one, and this mode
 *                   never accepts it.
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

/* jansson's JSON_PARSER_MAX_DEPTH. */
#define FR_JSON_LINE_DEPTH 2048

enum fr_json_mode { FR_JSON_SKIP = 0, FR_JSON_STRICT, FR_JSON_LINE };

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

/* s[0, n) is one JSON object (whitespace around it allowed; mode SKIP or
 * STRICT, LINE is taken as STRICT). For each
 * wanted key keys[i] (plain ASCII names), out[i] is its value's span, or
 * {NULL, 0} when absent; other members are scanned and skipped. counts
 * (NULL: not wanted) gets the elements of each wanted array value, the
 * members of each object value, else 0. The
 * object itself counts as one level of max_depth. Returns 0, or -1 when
 * the text is not such an object, or a wanted key occurs twice. */
int fr_json_members(const char *s, size_t n, const char *const keys[], size_t nkeys, struct fr_json_span out[],
                    size_t counts[], int max_depth, enum fr_json_mode mode);

/* One member of a job line's object, as fr_json_line records it. */
struct fr_json_member {
    struct fr_json_span key;   /* the string literal, quotes included */
    struct fr_json_span value; /* its value's text */
    int depth;                 /* arrays/objects nested in the value: a scalar is 0, [1] is 1 */
    size_t count;              /* elements of an array value, members of an object value, else 0 */
};

enum {
    FR_JSON_LINE_OBJECT = 0,   /* a JSON object: its members are recorded */
    FR_JSON_LINE_OTHER = 1,    /* valid JSON, not an object */
    FR_JSON_LINE_INVALID = -1, /* not what json_loadb accepts (FR_JSON_LINE) */
    FR_JSON_LINE_NOMEM = -2,
};

/* s[0, n) as a job line (FR_JSON_LINE, whitespace around it allowed), in
 * one pass. For an object, *members (malloc'd; the caller frees it, also
 * when *nmembers is 0) holds its members in order, spans into s; else
 * *members is NULL. Returns one of the FR_JSON_LINE_* values. */
int fr_json_line(const char *s, size_t n, struct fr_json_member **members, size_t *nmembers);
/* The member named `key` (a plain ASCII name, compared with the key
 * decoded), or NULL. */
const struct fr_json_member *fr_json_member_find(const struct fr_json_member *m, size_t n, const char *key);

/* The length of the value that starts at s[0] in a checked text (SKIP:
 * found by its quotes and brackets alone, at any depth), or n when it does
 * not end within s[0, n). */
size_t fr_json_checked_len(const char *s, size_t n);

/* Walking a checked array or object span, one element or member at a
 * time (SKIP scans: the span must have been checked before). */
struct fr_json_iter {
    const char *p, *end;
};
void fr_json_iter_init(struct fr_json_iter *it, struct fr_json_span container);
/* Next array element; false at the end. */
bool fr_json_iter_next(struct fr_json_iter *it, struct fr_json_span *value);
/* Is the next element `text`, byte for byte? If so it is taken (value
 * set); if not, nothing is (the walk stays where it was, between elements). */
bool fr_json_iter_same(struct fr_json_iter *it, struct fr_json_span text, struct fr_json_span *value);
/* Next object member (key: the string literal, quotes included). */
bool fr_json_iter_member(struct fr_json_iter *it, struct fr_json_span *key, struct fr_json_span *value);

/* Decode a checked string literal (quotes included) into buf as UTF-8.
 * Returns the decoded length (which never exceeds s.n), or -1 when it
 * needs more than n bytes. NUL bytes (from \u0000) are kept. */
long fr_json_string_decode(struct fr_json_span s, char *buf, size_t n);

#endif
