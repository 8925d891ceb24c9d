/* parse.c — the parsers for what people write in profiles and on the
 * command line: integers, doubles, booleans, sizes and durations. Pure
 * functions over strings (see fitrun/common.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"

char *fr_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t l = strlen(s);
    while (l > 0 && isspace((unsigned char)s[l - 1]))
        s[--l] = '\0';
    return s;
}

static const char *skip_space(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

static bool only_space(const char *s)
{
    return *skip_space(s) == '\0';
}

/* The start of a number in s (leading space skipped), or NULL when there
 * is none; errno cleared for the strto* call that follows. */
static const char *number_start(const char *s)
{
    if (!s)
        return NULL;
    s = skip_space(s);
    errno = 0;
    return *s ? s : NULL;
}

/* Did the strto* call that read [s, end) take the whole string? */
static bool whole(const char *s, const char *end)
{
    return !errno && end != s && only_space(end);
}

int fr_parse_i64(const char *s, int64_t *out)
{
    char *end;
    if (!(s = number_start(s)))
        return -1;
    long long v = strtoll(s, &end, 10);
    if (!whole(s, end))
        return -1;
    *out = v;
    return 0;
}

int fr_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!(s = number_start(s)) || *s == '-') /* strtoull would wrap "-1" */
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (!whole(s, end))
        return -1;
    *out = v;
    return 0;
}

int fr_parse_double(const char *s, double *out)
{
    char *end;
    if (!(s = number_start(s)))
        return -1;
    double v = strtod(s, &end);
    if (!whole(s, end) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int fr_parse_bool(const char *s, bool *out)
{
    static const char *yes[] = {"true", "yes", "on", "1"};
    static const char *no[] = {"false", "no", "off", "0"};
    if (!s)
        return -1;
    char buf[16];
    s = skip_space(s);
    size_t l = strlen(s);
    while (l > 0 && isspace((unsigned char)s[l - 1]))
        l--;
    if (l == 0 || l >= sizeof buf)
        return -1;
    for (size_t i = 0; i < l; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    buf[l] = '\0';
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(buf, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcmp(buf, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* A plain decimal as an exact fraction: digits / 10^frac. Fraction
 * digits past the last non-zero one are dropped; at most MAX_FRAC remain.
 * Digits are capped so that digits x the largest unit multiplier (2^40
 * bytes, or 3.6e9 us) still fits in 128 bits. */
#define MAX_FRAC 18
#define MAX_DIGITS ((unsigned __int128)10000000000000000ull * 1000000000ull) /* 1e25 */

struct decimal {
    unsigned __int128 digits;
    int frac;
};

/* Parse "12", "1.5", ".25", "3." from s into *d; *end after it. Returns
 * 0, or -1 with *why. Signs, exponents, hex, inf and nan are not numbers
 * here. */
static int parse_decimal(const char *s, const char **end, struct decimal *d, const char **why)
{
    unsigned __int128 v = 0;
    int frac = 0, ndigits = 0, zeros = 0;
    bool dot = false;
    const char *p = s;
    for (;; p++) {
        if (*p == '.' && !dot) {
            dot = true;
            continue;
        }
        if (!isdigit((unsigned char)*p))
            break;
        ndigits++;
        int digit = *p - '0';
        if (dot && digit == 0) {
            zeros++; /* kept pending: trailing zeros of a fraction change nothing */
            continue;
        }
        for (; zeros >= 0; zeros--) {
            if (v >= MAX_DIGITS) {
                /* after the point, fewer decimals would have fit */
                *why = dot ? "too many decimals" : "too large";
                return -1;
            }
            v *= 10;
            if (dot)
                frac++;
        }
        zeros = 0;
        v += (unsigned)digit;
        if (frac > MAX_FRAC) {
            *why = "too many decimals";
            return -1;
        }
    }
    if (!ndigits) {
        *why = "not a number";
        return -1;
    }
    d->digits = v;
    d->frac = frac;
    *end = p;
    return 0;
}

static unsigned __int128 pow10_u128(int n)
{
    unsigned __int128 r = 1;
    while (n-- > 0)
        r *= 10;
    return r;
}

/* Split "1.5GiB" into an exact non-negative decimal and a lower-cased unit. */
static int number_and_unit(const char *s, struct decimal *num, char *unit, size_t unitlen, const char **why)
{
    *why = "not a number";
    if (!s)
        return -1;
    s = skip_space(s);
    const char *end;
    if (parse_decimal(s, &end, num, why) < 0)
        return -1;
    end = skip_space(end);
    size_t i = 0;
    while (*end && !isspace((unsigned char)*end)) {
        if (i + 1 >= unitlen) {
            *why = "unknown unit";
            return -1;
        }
        unit[i++] = (char)tolower((unsigned char)*end++);
    }
    unit[i] = '\0';
    if (!only_space(end)) {
        *why = "unexpected text after the unit";
        return -1;
    }
    return 0;
}

/* "1.5GiB" -> *d = 1.5 and what one of its unit is worth, from mult(the
 * unit, lower-cased) (> 0); 0 with *why when s is not a number with a unit
 * mult knows (`unknown` names the units). */
static uint64_t parse_with_unit(const char *s, uint64_t (*mult)(const char *unit), const char *unknown,
                                struct decimal *d, const char **why)
{
    char unit[8];
    if (number_and_unit(s, d, unit, sizeof unit, why) < 0)
        return 0;
    uint64_t m = mult(unit);
    if (!m)
        *why = unknown;
    return m;
}

/* Bytes in a size unit: none or "b", then binary multiples, each as "k",
 * "kb" or "kib" (K = 1024), up to "t". 0 for anything else. */
static uint64_t size_unit(const char *unit)
{
    static const char prefixes[] = "kmgt";
    if (!unit[0] || !strcmp(unit, "b"))
        return 1;
    const char *p = strchr(prefixes, unit[0]);
    if (!p || (unit[1] && strcmp(unit + 1, "b") && strcmp(unit + 1, "ib")))
        return 0;
    return 1ull << (10 * (p - prefixes + 1));
}

/* Microseconds in a duration unit (none = seconds); 0 for anything else. */
static uint64_t duration_unit(const char *unit)
{
    static const struct {
        const char *name;
        uint64_t us;
    } units[] = {
        {"", 1000000}, {"s", 1000000},  {"sec", 1000000},  {"ms", 1000},
        {"us", 1},     {"m", 60000000}, {"min", 60000000}, {"h", 3600000000ull},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(unit, units[i].name))
            return units[i].us;
    return 0;
}

static int fail_why(const char **out, const char *why)
{
    if (out)
        *out = why;
    return -1;
}

int fr_parse_size_why(const char *s, uint64_t *out, const char **why)
{
    struct decimal d;
    const char *w;
    uint64_t mult =
        parse_with_unit(s, size_unit, "unknown unit (B, K, M, G, T; KiB, MB, ... are the same binary units)", &d, &w);
    if (!mult)
        return fail_why(why, w);
    unsigned __int128 bytes = d.digits * mult, den = pow10_u128(d.frac);
    if (bytes % den)
        return fail_why(why, "not a whole number of bytes");
    if (bytes / den > FR_SIZE_MAX)
        return fail_why(why, "larger than the maximum, 1 EiB (1048576T)");
    *out = (uint64_t)(bytes / den);
    return 0;
}

int fr_parse_size(const char *s, uint64_t *out)
{
    return fr_parse_size_why(s, out, NULL);
}

int fr_parse_duration_why(const char *s, uint64_t *out, const char **why)
{
    struct decimal d;
    const char *w;
    uint64_t us = parse_with_unit(s, duration_unit, "unknown unit (ms, s, m, h, us)", &d, &w);
    if (!us)
        return fail_why(why, w);
    /* ms = ceil(digits x us / (10^frac x 1000)): the resolution is 1 ms,
     * and a positive duration never becomes 0. */
    unsigned __int128 scaled = d.digits * us, den = pow10_u128(d.frac) * 1000;
    unsigned __int128 ms = scaled / den + (scaled % den != 0);
    if (ms > FR_DURATION_MAX_MS)
        return fail_why(why, "longer than the maximum, 365 days (8760h)");
    *out = (uint64_t)ms;
    return 0;
}

int fr_parse_duration_ms(const char *s, uint64_t *out)
{
    return fr_parse_duration_why(s, out, NULL);
}
