/* fuzz_units.c — the unit parsers of common/ and the CPU-count rule:
 * fr_parse_size_why, fr_parse_duration_why, fr_parse_cpus, fr_parse_i64,
 * fr_parse_u64, fr_parse_double, fr_parse_bool, fr_trim, fr_format_size.
 * The whole input is one value, as in a profile or on the command line.
 *
 * Invariants:
 *  - a size that parses is at most FR_SIZE_MAX (1 EiB), is a whole number
 *    of bytes (checked against an independent long double reading of the
 *    number and the unit's first letter), and re-formats as plain bytes
 *    (and as K when it is a multiple of 1024) that parse to the same value;
 *  - a duration that parses is at most FR_DURATION_MAX_MS (365 days), is
 *    the value rounded UP to whole ms (0 only for 0), and "<ms>ms" parses
 *    back to it;
 *  - a failed size or duration always says why;
 *  - a CPU count is above 0, finite and at most FR_CPU_BITS;
 *  - integers re-format and re-parse to themselves, doubles are finite;
 *  - fr_trim leaves no space at either end; fr_format_size ends in "B". */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>

#include "fitrun/detect.h"
#include "fitrun/profile.h"
#include "fitrun/common.h"
#include "fuzz.h"

/* The number the string starts with (after spaces), as a long double, and
 * the first letter of what follows it (lower case, 0 when none). Returns
 * false when there is no such number. */
static bool oracle(const char *s, long double *num, int *unit)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strspn(s, "0123456789.");
    if (n == 0 || n > 4000)
        return false;
    char buf[4096];
    memcpy(buf, s, n);
    buf[n] = '\0';
    *num = strtold(buf, NULL);
    const char *u = s + n;
    while (isspace((unsigned char)*u))
        u++;
    *unit = *u ? tolower((unsigned char)*u) : 0;
    return true;
}

static void check_size(const char *s)
{
    uint64_t v = 0xdeadbeef;
    const char *why = NULL;
    if (fr_parse_size_why(s, &v, &why) < 0) {
        FUZZ_CHECK(why && *why, "a refused size says why: '%s'", s);
        return;
    }
    FUZZ_CHECK(v <= FR_SIZE_MAX, "'%s' -> %" PRIu64 " above the 1 EiB maximum", s, v);
    uint64_t again = 0;
    FUZZ_CHECK(fr_parse_size(s, &again) == 0 && again == v, "the plain form agrees on '%s'", s);

    long double num;
    int unit;
    FUZZ_CHECK(oracle(s, &num, &unit), "'%s' parsed as a size but has no leading number", s);
    long double mult = unit == 'k'   ? 0x1p10L
                       : unit == 'm' ? 0x1p20L
                       : unit == 'g' ? 0x1p30L
                       : unit == 't' ? 0x1p40L
                                     : 1;
    FUZZ_CHECK(unit == 0 || unit == 'b' || mult != 1, "'%s': unit letter '%c' is no size unit", s, unit);
    long double exact = num * mult, diff = fabsl(exact - (long double)v);
    /* strtold rounds to 64 bits of mantissa: the only error left. */
    FUZZ_CHECK(diff <= 0.07L + (long double)v * 0x1p-62L, "'%s' -> %" PRIu64 ", but it reads as %.6Lf bytes", s, v,
               exact);

    char buf[64];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    FUZZ_CHECK(fr_parse_size(buf, &again) == 0 && again == v, "'%s' -> %" PRIu64 " does not re-parse from '%s'", s, v,
               buf);
    if (v % 1024 == 0) {
        snprintf(buf, sizeof buf, "%" PRIu64 "K", v / 1024);
        FUZZ_CHECK(fr_parse_size(buf, &again) == 0 && again == v, "'%s' -> %" PRIu64 " but '%s' -> %" PRIu64, s, v, buf,
                   again);
    }
    const char *shown = fr_format_size(v, buf, sizeof buf);
    size_t l = strlen(shown);
    FUZZ_CHECK(l > 0 && shown[l - 1] == 'B', "fr_format_size(%" PRIu64 ") = '%s'", v, shown);
}

static void check_duration(const char *s)
{
    uint64_t ms = 0xdeadbeef;
    const char *why = NULL;
    if (fr_parse_duration_why(s, &ms, &why) < 0) {
        FUZZ_CHECK(why && *why, "a refused duration says why: '%s'", s);
        return;
    }
    FUZZ_CHECK(ms <= FR_DURATION_MAX_MS, "'%s' -> %" PRIu64 " ms, above the 365-day maximum", s, ms);
    uint64_t again = 0;
    FUZZ_CHECK(fr_parse_duration_ms(s, &again) == 0 && again == ms, "the plain form agrees on '%s'", s);

    long double num;
    int unit;
    FUZZ_CHECK(oracle(s, &num, &unit), "'%s' parsed as a duration but has no leading number", s);
    /* "ms" and "min" start like "m": look at the second letter too. */
    const char *u = s;
    while (isspace((unsigned char)*u))
        u++;
    u += strspn(u, "0123456789.");
    while (isspace((unsigned char)*u))
        u++;
    long double per_ms;
    if (unit == 0 || unit == 's')
        per_ms = 1000;
    else if (unit == 'h')
        per_ms = 3600000;
    else if (unit == 'u')
        per_ms = 0.001L;
    else if (unit == 'm' && tolower((unsigned char)u[1]) == 's')
        per_ms = 1;
    else if (unit == 'm')
        per_ms = 60000;
    else {
        FUZZ_CHECK(false, "'%s': unit letter '%c' is no duration unit", s, unit);
        return;
    }
    long double exact = num * per_ms;
    FUZZ_CHECK((ms == 0) == (exact == 0), "'%s' -> %" PRIu64 " ms, but it reads as %.6Lf ms", s, ms, exact);
    FUZZ_CHECK((long double)ms >= exact - 1e-6L && (long double)ms < exact + 1 + 1e-6L,
               "'%s' -> %" PRIu64 " ms is not %.6Lf ms rounded up", s, ms, exact);

    char buf[64];
    snprintf(buf, sizeof buf, "%" PRIu64 "ms", ms);
    FUZZ_CHECK(fr_parse_duration_ms(buf, &again) == 0 && again == ms,
               "'%s' -> %" PRIu64 " ms does not re-parse from '%s'", s, ms, buf);
}

static void check_numbers(const char *s)
{
    double c = -1;
    if (fr_parse_cpus(s, &c) == 0)
        FUZZ_CHECK(c > 0 && isfinite(c) && c <= FR_CPU_BITS, "'%s' -> %g CPUs", s, c);

    char buf[64];
    int64_t i;
    if (fr_parse_i64(s, &i) == 0) {
        int64_t j;
        snprintf(buf, sizeof buf, "%" PRId64, i);
        FUZZ_CHECK(fr_parse_i64(buf, &j) == 0 && i == j, "'%s' -> %" PRId64 " does not re-parse", s, i);
    }
    uint64_t u;
    if (fr_parse_u64(s, &u) == 0) {
        uint64_t w;
        const char *p = s;
        while (isspace((unsigned char)*p))
            p++;
        FUZZ_CHECK(*p != '-', "'%s' -> %" PRIu64 ": a negative number is no u64", s, u);
        snprintf(buf, sizeof buf, "%" PRIu64, u);
        FUZZ_CHECK(fr_parse_u64(buf, &w) == 0 && u == w, "'%s' -> %" PRIu64 " does not re-parse", s, u);
    }
    double d;
    if (fr_parse_double(s, &d) == 0)
        FUZZ_CHECK(isfinite(d), "'%s' -> %g", s, d);
    bool b, b2;
    if (fr_parse_bool(s, &b) == 0)
        FUZZ_CHECK(fr_parse_bool(b ? "true" : "false", &b2) == 0 && b == b2, "bool '%s'", s);
}

static void check_trim(const char *s)
{
    char *copy = strdup(s);
    if (!copy)
        abort();
    char *t = fr_trim(copy);
    size_t l = strlen(t);
    FUZZ_CHECK(t >= copy && t + l <= copy + strlen(s), "fr_trim stays inside its string");
    FUZZ_CHECK(l == 0 || (!isspace((unsigned char)t[0]) && !isspace((unsigned char)t[l - 1])), "fr_trim('%s') = '%s'",
               s, t);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *s = fuzz_cstr(data, size);
    check_size(s);
    check_duration(s);
    check_numbers(s);
    check_trim(s);
    free(s);
    return 0;
}
