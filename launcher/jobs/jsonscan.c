/* jsonscan.c — JSON text without trees. See include/fitrun/jsonscan.h.
 *
 * A recursive-descent scanner that only returns where a value ends; the
 * recursion is bounded by max_depth, so a hostile text cannot exhaust the
 * stack. Positions are indices into the text; BAD marks an error. */
#include "fitrun/jsonscan.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"

#define BAD SIZE_MAX

/* A key of an object being scanned in LINE mode: its decoded text (the
 * literal's own bytes when it has no escape, else a malloc'd decoding). */
struct keyref {
    const char *p;
    size_t n;
    char *owned;
};

struct scan {
    const char *s;
    size_t n;
    int max_depth;
    bool strict;
    bool line; /* FR_JSON_LINE: jansson's rules (numbers at any length, keys, levels) */
    /* LINE mode only: */
    struct keyref *keys; /* the keys of the objects open now, innermost last */
    size_t nkeys, capkeys;
    struct fr_json_member *members; /* the top-level object's members (fr_json_line) */
    size_t nmembers, capmembers;
    int deepest;   /* most containers around a point reached so far */
    size_t count1; /* elements of the last container closed at depth 1 */
    bool nomem;
};

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static size_t skip_ws(const struct scan *sc, size_t i)
{
    while (i < sc->n && (sc->s[i] == ' ' || sc->s[i] == '\t' || sc->s[i] == '\n' || sc->s[i] == '\r'))
        i++;
    return i;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The four hex digits at p (p has at least 4 bytes), or -1. */
static long hex4(const char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* s[i] is the '\\' of a \u escape with at least 6 bytes left. Returns the
 * index after it (and after its low surrogate, when it is a high one), or
 * BAD: a bad hex digit, or in strict mode a surrogate without its pair. */
static size_t unicode_escape_end(const struct scan *sc, size_t i)
{
    long u = hex4(sc->s + i + 2);
    if (u < 0)
        return BAD;
    i += 6;
    if (!sc->strict || u < 0xD800 || u > 0xDFFF)
        return i;
    if (u >= 0xDC00 || i + 6 > sc->n || sc->s[i] != '\\' || sc->s[i + 1] != 'u')
        return BAD;
    long lo = hex4(sc->s + i + 2);
    return lo >= 0xDC00 && lo <= 0xDFFF ? i + 6 : BAD;
}

/* The bytes of v that are not plain string content, each as its high bit
 * (0: all plain): a '"', '\\' or control character, or (with hi = all
 * high bits) a non-ASCII byte. Each test sets a byte's high bit for every
 * byte it matches, and maybe for bytes after one it matches (a borrow),
 * so the lowest bit set is always a byte that matches. */
static uint64_t special8(uint64_t v, uint64_t hi)
{
    const uint64_t ones = 0x0101010101010101u, highs = ones * 0x80;
    uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
    return (((q - ones) & ~q) | ((b - ones) & ~b) | ((v - ones * 0x20) & ~v) | (v & hi)) & highs;
}

/* Where in a word read from memory the byte of the lowest high bit of m
 * (m != 0) lies: the lowest address is the lowest byte on a little-endian
 * machine; elsewhere the word's start, from which the caller's byte-by-byte
 * path finds it. */
static size_t first_flagged(uint64_t m)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (size_t)(__builtin_ctzll(m) >> 3);
#else
    (void)m;
    return 0;
#endif
}

/* The index of the first byte at or after s[i] that special8 flags, or
 * of the last bytes (fewer than 8), which the caller reads one by one. */
static size_t skip_plain(const char *s, size_t i, size_t n, uint64_t hi)
{
    for (; n - i >= 8; i += 8) {
        uint64_t v, m;
        memcpy(&v, s + i, 8);
        if ((m = special8(v, hi)))
            return i + first_flagged(m);
    }
    return i;
}

/* s[i] == '"'. A key, in strict mode, holds no \u0000: jansson, which
 * reads result lines back, refuses such keys. */
static size_t string_end(const struct scan *sc, size_t i, bool key)
{
    const char *s = sc->s;
    size_t n = sc->n;
    /* Non-ASCII bytes need a look only when UTF-8 is checked. */
    uint64_t hi = sc->strict ? 0x8080808080808080u : 0;
    for (i++; i < n;) {
        i = skip_plain(s, i, n, hi);
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return BAD;
        if (c == '\\') {
            if (i + 1 >= n)
                return BAD;
            char e = s[i + 1];
            if (e == 'u') {
                if (i + 6 > n || (key && sc->strict && hex4(s + i + 2) == 0) || (i = unicode_escape_end(sc, i)) == BAD)
                    return BAD;
                continue;
            }
            if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't')
                return BAD;
            i += 2;
            continue;
        }
        if (c >= 0x80 && sc->strict) {
            size_t l = fr_utf8_seq((const unsigned char *)s + i, n - i);
            if (!l)
                return BAD;
            i += l;
            continue;
        }
        i++;
    }
    return BAD;
}

/* An integer of at most 18 digits always fits in int64; one of 20 or
 * more never does (JSON has no leading zeros). */
#define INT64_SAFE_DIGITS 18

/* p[0, len) with a NUL, in buf (small) or a malloc'd copy; NULL on ENOMEM. */
static char *number_copy(const char *p, size_t len, char *buf, size_t size)
{
    char *c = len < size ? buf : malloc(len + 1);
    if (c) {
        memcpy(c, p, len);
        c[len] = '\0';
    }
    return c;
}

/* What number_end read: no fraction and no exponent, a fraction only, or
 * an exponent. */
enum number_kind { NUMBER_INTEGER, NUMBER_DECIMAL, NUMBER_EXPONENT };

/* An integer fits in int64, anything else is a finite double (what
 * jansson's strtoll and strtod checks accept). -1 when out of memory. */
static int number_in_range(const char *p, size_t len, enum number_kind kind)
{
    bool integral = kind == NUMBER_INTEGER;
    size_t digits = len - (p[0] == '-');
    if (integral && digits <= INT64_SAFE_DIGITS)
        return 1;
    if (integral && digits > INT64_SAFE_DIGITS + 1)
        return 0;
    /* Without an exponent, fewer than 309 digits stay below DBL_MAX. */
    if (kind == NUMBER_DECIMAL && len < 309)
        return 1;
    char small[FR_JSON_NUMBER_MAX + 1], *buf = number_copy(p, len, small, sizeof small);
    if (!buf)
        return -1;
    errno = 0;
    bool ok;
    if (integral) {
        (void)strtoll(buf, NULL, 10);
        ok = errno != ERANGE;
    } else
        ok = isfinite(strtod(buf, NULL));
    if (buf != small)
        free(buf);
    return ok;
}

/* Strict: at most FR_JSON_NUMBER_MAX characters, and in range. */
static bool number_fits(const char *p, size_t len, enum number_kind kind)
{
    return len <= FR_JSON_NUMBER_MAX && number_in_range(p, len, kind) == 1;
}

static size_t digits_end(const struct scan *sc, size_t i)
{
    if (i >= sc->n || !is_digit(sc->s[i]))
        return BAD;
    while (i < sc->n && is_digit(sc->s[i]))
        i++;
    return i;
}

static size_t number_end(struct scan *sc, size_t i)
{
    const char *s = sc->s;
    size_t n = sc->n, start = i;
    enum number_kind kind = NUMBER_INTEGER;
    if (s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if ((i = digits_end(sc, i)) == BAD)
        return BAD;
    if (i < n && s[i] == '.') {
        kind = NUMBER_DECIMAL;
        if ((i = digits_end(sc, i + 1)) == BAD)
            return BAD;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        kind = NUMBER_EXPONENT;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if ((i = digits_end(sc, i)) == BAD)
            return BAD;
    }
    if (sc->line) {
        int r = number_in_range(s + start, i - start, kind);
        if (r < 0)
            sc->nomem = true;
        return r == 1 ? i : BAD;
    }
    if (sc->strict && !number_fits(s + start, i - start, kind))
        return BAD;
    return i;
}

static size_t literal_end(const struct scan *sc, size_t i, const char *word, size_t len)
{
    return sc->n - i >= len && !memcmp(sc->s + i, word, len) ? i + len : BAD;
}

static size_t value_end(struct scan *sc, size_t i, int depth);
static bool key_is(const char *s, size_t n, const char *want);

/* ---- LINE mode: keys, duplicates, the top-level members ------------------ */

static void *grow_array(void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return arr;
    size_t ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(arr, ncap * elem);
    if (n)
        *cap = ncap;
    return n;
}

/* Push the key literal s[k0, k1) (checked) of an object being scanned.
 * false: a key holding U+0000 (jansson cannot hold one), or no memory. */
static bool push_key(struct scan *sc, size_t k0, size_t k1)
{
    struct keyref *k = grow_array(sc->keys, &sc->capkeys, sc->nkeys + 1, sizeof *k);
    if (!k) {
        sc->nomem = true;
        return false;
    }
    sc->keys = k;
    struct keyref r = {sc->s + k0 + 1, k1 - k0 - 2, NULL};
    if (memchr(r.p, '\\', r.n)) {
        struct fr_json_span lit = {sc->s + k0, k1 - k0};
        if (!(r.owned = malloc(lit.n))) {
            sc->nomem = true;
            return false;
        }
        long len = fr_json_string_decode(lit, r.owned, lit.n);
        r.p = r.owned;
        r.n = len > 0 ? (size_t)len : 0;
        if (memchr(r.p, '\0', r.n)) {
            free(r.owned);
            return false;
        }
    }
    sc->keys[sc->nkeys++] = r;
    return true;
}

static int keyref_cmp(const void *a, const void *b)
{
    const struct keyref *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return c ? c : x->n < y->n ? -1 : x->n > y->n;
}

/* Do two of keys[base, nkeys) decode to the same text? */
static bool duplicate_keys(struct scan *sc, size_t base)
{
    size_t n = sc->nkeys - base;
    if (n < 2)
        return false; /* and sc->keys may still be NULL */
    struct keyref *k = sc->keys + base;
    if (n <= 8) {
        for (size_t i = 1; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (!keyref_cmp(&k[i], &k[j]))
                    return true;
        return false;
    }
    qsort(k, n, sizeof *k, keyref_cmp);
    for (size_t i = 1; i < n; i++)
        if (!keyref_cmp(&k[i], &k[i - 1]))
            return true;
    return false;
}

static void pop_keys(struct scan *sc, size_t base)
{
    while (sc->nkeys > base)
        free(sc->keys[--sc->nkeys].owned);
}

static bool record_member(struct scan *sc, size_t k0, size_t k1, size_t v0, size_t v1)
{
    struct fr_json_member *m = grow_array(sc->members, &sc->capmembers, sc->nmembers + 1, sizeof *m);
    if (!m) {
        sc->nomem = true;
        return false;
    }
    sc->members = m;
    m[sc->nmembers++] = (struct fr_json_member){
        .key = {sc->s + k0, k1 - k0},
        .value = {sc->s + v0, v1 - v0},
        .depth = sc->deepest - 1,
        .count = sc->s[v0] == '[' || sc->s[v0] == '{' ? sc->count1 : 0,
    };
    return true;
}

/* ---- values ---------------------------------------------------------------- */

/* s[i] starts a plain integer of at most INT64_SAFE_DIGITS digits (no
 * fraction, no exponent) followed directly by ',' or ']': what number_end
 * accepts in every mode (it always fits). Returns the index of that ','
 * or ']', or 0 when s[i] starts anything else (number_end decides). */
static size_t plain_int_end(const char *s, size_t i, size_t n)
{
    /* One digit first, by branches alone (no index computed from the
     * bytes): the next element's load need not wait for this one's. */
    if (n - i >= 2 && is_digit(s[i]) && (s[i + 1] == ',' || s[i + 1] == ']'))
        return i + 1;
    size_t d = i + (i < n && s[i] == '-');
    if (d >= n || !is_digit(s[d]))
        return 0;
    size_t k = d + 1;
    if (s[d] != '0')
        while (k < n && k - d < INT64_SAFE_DIGITS && is_digit(s[k]))
            k++;
    return k < n && (s[k] == ',' || s[k] == ']') ? k : 0;
}

/* Are p[0, 8) four one-digit elements, each followed by ',' ("0,1,2,3,")?
 * Read as one little-endian word: digits in the even bytes, commas in the
 * odd ones. (Elsewhere: never; the element-by-element path does it.) */
static bool four_digits(const char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, 8);
    return (v & 0xFF00FF00FF00FF00u) == 0x2C002C002C002C00u && (v & 0x00F000F000F000F0u) == 0x0030003000300030u &&
           !(((v & 0x000F000F000F000Fu) + 0x0006000600060006u) & 0x0010001000100010u);
#else
    (void)p;
    return false;
#endif
}

/* s[i] starts an element of an array: consume the elements that are
 * plain integers followed directly by ',' (and whitespace) or ']' (most of
 * an ARC grid), without a call per element. *count grows by the elements
 * consumed; *end is set past the ']' when the array ended. Returns where
 * the first other element starts. */
static size_t plain_ints(const struct scan *sc, size_t i, size_t *count, size_t *end)
{
    const char *s = sc->s;
    for (;;) {
        if (sc->n - i >= 8 && four_digits(s + i)) {
            do {
                i += 8;
                *count += 4;
            } while (sc->n - i >= 8 && four_digits(s + i));
            i = skip_ws(sc, i);
        }
        size_t e = plain_int_end(s, i, sc->n);
        if (!e)
            return i;
        ++*count;
        if (s[e] == ']') {
            *end = e + 1;
            return e + 1;
        }
        i = skip_ws(sc, e + 1);
    }
}

/* s[i] is '[' or '{'; depth = containers around it. */
static size_t container_end(struct scan *sc, size_t i, int depth)
{
    const char *s = sc->s;
    bool obj = s[i] == '{';
    char close = obj ? '}' : ']';
    if (depth + 1 > sc->max_depth)
        return BAD;
    if (depth + 1 > sc->deepest)
        sc->deepest = depth + 1;
    bool keys = sc->line && obj, top = keys && depth == 0 && sc->members;
    /* Scalars in it count as a level in LINE mode (see value_end). */
    bool ints = !obj && (!sc->line || depth + 2 <= sc->max_depth);
    size_t base = sc->nkeys, count = 0, end = BAD;
    i = skip_ws(sc, i + 1);
    if (i < sc->n && s[i] == close) {
        end = i + 1;
        goto out;
    }
    for (;; count++) {
        if (ints && ((i = plain_ints(sc, i, &count, &end)), end != BAD))
            break;
        size_t k0 = i, k1 = 0;
        if (obj) {
            if (i >= sc->n || s[i] != '"' || (i = string_end(sc, i, true)) == BAD)
                goto out;
            k1 = i;
            if (keys && !push_key(sc, k0, k1))
                goto out;
            i = skip_ws(sc, i);
            if (i >= sc->n || s[i] != ':')
                goto out;
            i = skip_ws(sc, i + 1);
        }
        size_t v0 = i;
        if (top)
            sc->deepest = 1;
        if ((i = value_end(sc, i, depth + 1)) == BAD)
            goto out;
        if (top && !record_member(sc, k0, k1, v0, i))
            goto out;
        i = skip_ws(sc, i);
        if (i >= sc->n)
            goto out;
        if (s[i] == close) {
            end = i + 1;
            count++;
            break;
        }
        if (s[i] != ',')
            goto out;
        i = skip_ws(sc, i + 1);
    }
out:
    if (keys) {
        if (end != BAD && duplicate_keys(sc, base))
            end = BAD;
        pop_keys(sc, base);
    }
    if (end != BAD && depth == 1)
        sc->count1 = count;
    return end;
}

static size_t value_end(struct scan *sc, size_t i, int depth)
{
    if (i >= sc->n)
        return BAD;
    /* jansson counts every value as a level, scalars too. */
    if (sc->line && depth + 1 > sc->max_depth)
        return BAD;
    switch (sc->s[i]) {
    case '"': return string_end(sc, i, false);
    case '[':
    case '{': return container_end(sc, i, depth);
    case 't': return literal_end(sc, i, "true", 4);
    case 'f': return literal_end(sc, i, "false", 5);
    case 'n': return literal_end(sc, i, "null", 4);
    default: return sc->s[i] == '-' || is_digit(sc->s[i]) ? number_end(sc, i) : BAD;
    }
}

static struct scan scan_of(const char *s, size_t n, int max_depth, enum fr_json_mode mode)
{
    return (struct scan){
        .s = s, .n = n, .max_depth = max_depth, .strict = mode != FR_JSON_SKIP, .line = mode == FR_JSON_LINE};
}

static void scan_free(struct scan *sc)
{
    pop_keys(sc, 0);
    free(sc->keys);
    sc->keys = NULL;
}

size_t fr_json_value(const char *s, size_t n, int max_depth, enum fr_json_mode mode)
{
    struct scan sc = scan_of(s, n, max_depth, mode);
    size_t end = value_end(&sc, 0, 0);
    scan_free(&sc);
    return end == BAD ? 0 : end;
}

bool fr_json_whole(const char *s, size_t n, int max_depth, enum fr_json_mode mode)
{
    struct scan sc = scan_of(s, n, max_depth, mode);
    size_t i = value_end(&sc, skip_ws(&sc, 0), 0);
    scan_free(&sc);
    return i != BAD && skip_ws(&sc, i) == n;
}

int fr_json_line(const char *s, size_t n, struct fr_json_member **members, size_t *nmembers)
{
    struct scan sc = scan_of(s, n, FR_JSON_LINE_DEPTH, FR_JSON_LINE);
    *members = NULL;
    *nmembers = 0;
    size_t i = skip_ws(&sc, 0);
    bool object = i < n && s[i] == '{';
    if (object) {
        /* Room for one member even in {}: "not NULL" marks the top object. */
        sc.members = malloc(sizeof *sc.members);
        sc.capmembers = 1;
        if (!sc.members)
            return FR_JSON_LINE_NOMEM;
    }
    i = value_end(&sc, i, 0);
    scan_free(&sc);
    int rc = sc.nomem                           ? FR_JSON_LINE_NOMEM
             : i == BAD || skip_ws(&sc, i) != n ? FR_JSON_LINE_INVALID
             : object                           ? FR_JSON_LINE_OBJECT
                                                : FR_JSON_LINE_OTHER;
    if (rc != FR_JSON_LINE_OBJECT) {
        free(sc.members);
        return rc;
    }
    *members = sc.members;
    *nmembers = sc.nmembers;
    return rc;
}

const struct fr_json_member *fr_json_member_find(const struct fr_json_member *m, size_t n, const char *key)
{
    /* The literal's first byte rules out most members without a full
     * compare: the key's first character, the closing quote of "", or the
     * '\\' of an escape (compared in full). */
    char first = key[0] ? key[0] : '"';
    for (size_t i = 0; i < n; i++)
        if (m[i].key.n > 1 && (m[i].key.p[1] == first || m[i].key.p[1] == '\\') && key_is(m[i].key.p, m[i].key.n, key))
            return &m[i];
    return NULL;
}

/* Is the checked string literal s[0, n) (quotes included) the ASCII name `want`? */
static bool key_is(const char *s, size_t n, const char *want)
{
    size_t wl = strlen(want);
    if (!memchr(s, '\\', n))
        return n == wl + 2 && !memcmp(s + 1, want, wl);
    char buf[64];
    long got = fr_json_string_decode((struct fr_json_span){s, n}, buf, sizeof buf);
    return got == (long)wl && !memcmp(buf, want, wl);
}

int fr_json_members(const char *s, size_t n, const char *const keys[], size_t nkeys, struct fr_json_span out[],
                    size_t counts[], int max_depth, enum fr_json_mode mode)
{
    struct scan sc = scan_of(s, n, max_depth, mode == FR_JSON_LINE ? FR_JSON_STRICT : mode);
    for (size_t k = 0; k < nkeys; k++) {
        out[k] = (struct fr_json_span){NULL, 0};
        if (counts)
            counts[k] = 0;
    }
    size_t i = skip_ws(&sc, 0);
    if (i >= n || s[i] != '{' || max_depth < 1)
        return -1;
    i = skip_ws(&sc, i + 1);
    if (i < n && s[i] == '}')
        return skip_ws(&sc, i + 1) == n ? 0 : -1;
    for (;;) {
        size_t k0 = i;
        if (i >= n || s[i] != '"' || (i = string_end(&sc, i, true)) == BAD)
            return -1;
        size_t k1 = i;
        i = skip_ws(&sc, i);
        if (i >= n || s[i] != ':')
            return -1;
        size_t v0 = skip_ws(&sc, i + 1);
        if ((i = value_end(&sc, v0, 1)) == BAD)
            return -1;
        for (size_t k = 0; k < nkeys; k++) {
            if (!key_is(s + k0, k1 - k0, keys[k]))
                continue;
            if (out[k].p)
                return -1; /* which one would count? */
            out[k] = (struct fr_json_span){s + v0, i - v0};
            /* The value, at depth 1, was the last container closed there. */
            if (counts && (s[v0] == '[' || s[v0] == '{'))
                counts[k] = sc.count1;
        }
        i = skip_ws(&sc, i);
        if (i >= n)
            return -1;
        if (s[i] == '}')
            return skip_ws(&sc, i + 1) == n ? 0 : -1;
        if (s[i] != ',')
            return -1;
        i = skip_ws(&sc, i + 1);
    }
}

void fr_json_iter_init(struct fr_json_iter *it, struct fr_json_span c)
{
    /* Between the brackets. */
    it->p = c.n >= 2 ? c.p + 1 : c.p;
    it->end = c.n >= 2 ? c.p + c.n - 1 : c.p;
}

/* Skip whitespace and one separating comma. */
static void iter_skip(struct fr_json_iter *it)
{
    while (it->p < it->end && (*it->p == ' ' || *it->p == '\t' || *it->p == '\n' || *it->p == '\r' || *it->p == ','))
        it->p++;
}

/* The bytes of v that are [ ] { } or '"', each as its high bit (0: none).
 * OR-ing 0x20 into every byte folds '[' into '{' and ']' into '}' (no
 * other byte becomes either); '"' stays itself, and so does only 0x02,
 * which checked text holds nowhere outside a string (a false alarm only
 * costs the caller a look at that byte). A byte of x is zero where
 * (x - ones) & ~x sets its high bit; above a zero byte the borrow may set
 * more, so only the lowest bit set is sure to be one. */
static uint64_t structure8(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101u, highs = ones * 0x80;
    uint64_t w = v | ones * 0x20, a = w ^ ones * '{', b = w ^ ones * '}', q = w ^ ones * '"';
    return (((a - ones) & ~a) | ((b - ones) & ~b) | ((q - ones) & ~q)) & highs;
}

/* The index of the first byte at or after s[i] that may be a quote or a
 * bracket, or n. */
static size_t next_structure(const char *s, size_t i, size_t n)
{
    for (; n - i >= 8; i += 8) {
        uint64_t v, m;
        memcpy(&v, s + i, 8);
        if ((m = structure8(v)))
            return i + first_flagged(m);
    }
    while (i < n && s[i] != '"' && s[i] != '[' && s[i] != ']' && s[i] != '{' && s[i] != '}')
        i++;
    return i;
}

/* s[i] == '"' of a checked literal: the index after its closing quote, or n. */
static size_t checked_string_end(const char *s, size_t i, size_t n)
{
    for (i++; i < n;) {
        i = skip_plain(s, i, n, 0);
        if (i >= n)
            break;
        if (s[i] == '"')
            return i + 1;
        i += s[i] == '\\' ? 2 : 1;
    }
    return n;
}

/* A checked text has no stray quote or bracket, so the end of a value in
 * it is where its quotes and brackets balance: no call per element, no
 * recursion, no depth to bound (the check that made the text bounded it). */
size_t fr_json_checked_len(const char *s, size_t n)
{
    if (!n)
        return 0;
    size_t i = 0, depth = 0;
    if (s[0] != '[' && s[0] != '{' && s[0] != '"') {
        while (i < n && s[i] != ',' && s[i] != ']' && s[i] != '}' && s[i] != ':' && s[i] != ' ' && s[i] != '\t' &&
               s[i] != '\n' && s[i] != '\r')
            i++;
        return i;
    }
    for (;;) {
        if ((i = next_structure(s, i, n)) >= n)
            return n;
        char c = s[i];
        if (c == '"') {
            i = checked_string_end(s, i, n);
            if (!depth)
                return i;
            continue;
        }
        if (c == '[' || c == '{')
            depth++;
        else if ((c == ']' || c == '}') && !--depth)
            return i + 1;
        i++;
    }
}

static struct fr_json_span iter_take(struct fr_json_iter *it, bool string)
{
    size_t n = (size_t)(it->end - it->p);
    /* Not checked text after all: n, the rest, which ends the walk. */
    size_t len = string ? checked_string_end(it->p, 0, n) : fr_json_checked_len(it->p, n);
    struct fr_json_span v = {it->p, len};
    it->p += len;
    return v;
}

bool fr_json_iter_next(struct fr_json_iter *it, struct fr_json_span *value)
{
    iter_skip(it);
    if (it->p >= it->end)
        return false;
    *value = iter_take(it, false);
    return true;
}

bool fr_json_iter_same(struct fr_json_iter *it, struct fr_json_span text, struct fr_json_span *value)
{
    iter_skip(it);
    size_t left = (size_t)(it->end - it->p);
    /* A value of a checked text that starts with the whole of another
     * value's text is that value, or a number it is the start of ("1" of
     * "12"): the byte after it tells. */
    if (!text.n || left < text.n || memcmp(it->p, text.p, text.n) ||
        (left > text.n && !memchr(",] \t\n\r", it->p[text.n], 6)))
        return false;
    *value = (struct fr_json_span){it->p, text.n};
    it->p += text.n;
    return true;
}

bool fr_json_iter_member(struct fr_json_iter *it, struct fr_json_span *key, struct fr_json_span *value)
{
    iter_skip(it);
    if (it->p >= it->end || *it->p != '"')
        return false;
    *key = iter_take(it, true);
    while (it->p < it->end && *it->p != ':')
        it->p++;
    if (it->p < it->end)
        it->p++;
    while (it->p < it->end && (*it->p == ' ' || *it->p == '\t' || *it->p == '\n' || *it->p == '\r'))
        it->p++;
    if (it->p >= it->end)
        return false;
    *value = iter_take(it, false);
    return true;
}

static size_t put_utf8(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The code point of the escape at p[0] == '\\' (p[1] == 'u'), joining a
 * surrogate pair; *len = bytes consumed. A lone surrogate (only in text
 * that was never checked strictly) becomes U+FFFD. */
static unsigned long escape_cp(const char *p, const char *end, size_t *len)
{
    long u = end - p >= 6 ? hex4(p + 2) : -1;
    *len = end - p >= 6 ? 6 : (size_t)(end - p);
    if (u < 0)
        return 0xFFFD;
    if (u >= 0xD800 && u <= 0xDBFF && end - p >= 12 && p[6] == '\\' && p[7] == 'u') {
        long lo = hex4(p + 8);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            *len = 12;
            return 0x10000 + (((unsigned long)u - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
        }
    }
    return u >= 0xD800 && u <= 0xDFFF ? 0xFFFD : (unsigned long)u;
}

long fr_json_string_decode(struct fr_json_span s, char *buf, size_t n)
{
    if (s.n < 2)
        return -1;
    const char *p = s.p + 1, *end = s.p + s.n - 1;
    size_t o = 0;
    while (p < end) {
        char tmp[4];
        size_t w, used = 1;
        if (*p != '\\') {
            tmp[0] = *p;
            w = 1;
        } else if (p + 1 < end && p[1] == 'u') {
            w = put_utf8(escape_cp(p, end, &used), tmp);
        } else {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *e = p + 1 < end ? strchr(from, p[1]) : NULL;
            tmp[0] = e && *e ? to[e - from] : '?';
            w = 1;
            used = 2;
        }
        if (o + w > n)
            return -1;
        memcpy(buf + o, tmp, w);
        o += w;
        p += used;
    }
    return (long)o;
}
