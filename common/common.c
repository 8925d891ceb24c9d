/* common.c — see include/fitrun/common.h. */
#include "fitrun/common.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

bool fr_quiet = false;

static void vreport(const char *fmt, va_list ap, const char *suffix)
{
    /* Messages quote job data (ids, exception names, what a worker sent),
     * so every one goes through fr_term_text: a control sequence in it is
     * shown, never acted on, and a message stays one line. One fprintf
     * per message so lines from concurrent processes do not interleave
     * mid-line. */
    char msg[4096], shown[8192];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    fr_term_text(msg, len, shown, sizeof shown);
    fprintf(stderr, "fitrun: %s%s%s\n", shown, suffix ? ": " : "", suffix ? suffix : "");
}

void fr_info(const char *fmt, ...)
{
    if (fr_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap, NULL);
    va_end(ap);
}

void fr_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap, NULL);
    va_end(ap);
}

void fr_die(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap, NULL);
    va_end(ap);
    exit(status);
}

void fr_die_errno(int status, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap, strerror(saved));
    va_end(ap);
    exit(status);
}

void fr_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Open `path` for reading without side effects on special files: a FIFO
 * must not block the open (O_NONBLOCK), a terminal must not become our
 * controlling tty (O_NOCTTY). Then only a regular file is read. */
static int open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -1;
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) < 0)
        err = errno;
    else if (S_ISDIR(st.st_mode))
        err = EISDIR;
    else if (!S_ISREG(st.st_mode))
        err = EINVAL;
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

char *fr_read_file(const char *path, size_t max, size_t *len)
{
    /* Read up to one byte past `max`: getting that byte is how a file that
     * is too large is told apart from one of exactly `max` bytes. */
    if (max > SIZE_MAX / 2)
        max = SIZE_MAX / 2;
    const size_t limit = max + 1;
    int fd = open_regular(path);
    if (fd < 0)
        return NULL;
    size_t cap = limit + 1 < 4096 ? limit + 1 : 4096, used = 0; /* +1: the NUL */
    char *buf = malloc(cap);
    int err = 0;
    while (buf && used < limit) {
        if (used + 1 == cap) {
            size_t ncap = cap * 2 < limit + 1 ? cap * 2 : limit + 1;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                err = ENOMEM;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + used, cap - 1 - used);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            err = errno;
            break;
        }
        if (r == 0)
            break;
        used += (size_t)r;
    }
    if (!buf)
        err = ENOMEM;
    else if (!err && used > max)
        err = EFBIG;
    close(fd);
    if (err) {
        free(buf);
        errno = err;
        return NULL;
    }
    buf[used] = '\0';
    if (len)
        *len = used;
    return buf;
}

const char *fr_read_strerror(int err)
{
    switch (err) {
    case EINVAL: return "not a regular file (a FIFO, device or socket)";
    case EISDIR: return "a directory, not a regular file";
    default: return strerror(err);
    }
}

char *fr_path_join(char *buf, size_t n, const char *root, const char *path)
{
    int r;
    if (!root || !root[0] || (root[0] == '/' && root[1] == '\0'))
        r = snprintf(buf, n, "%s", path);
    else {
        size_t rl = strlen(root);
        while (rl > 1 && root[rl - 1] == '/')
            rl--;
        r = snprintf(buf, n, "%.*s%s%s", (int)rl, root, path[0] == '/' ? "" : "/", path);
    }
    if (r < 0 || (size_t)r >= n) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    return buf;
}

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

int fr_parse_i64(const char *s, int64_t *out)
{
    if (!s)
        return -1;
    s = skip_space(s);
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || !only_space(end))
        return -1;
    *out = v;
    return 0;
}

int fr_parse_u64(const char *s, uint64_t *out)
{
    if (!s)
        return -1;
    s = skip_space(s);
    if (!*s || *s == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || !only_space(end))
        return -1;
    *out = v;
    return 0;
}

int fr_parse_double(const char *s, double *out)
{
    if (!s)
        return -1;
    s = skip_space(s);
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !only_space(end) || !isfinite(v))
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
                *why = "too large";
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

static void set_why(const char **out, const char *why)
{
    if (out)
        *out = why;
}

int fr_parse_size_why(const char *s, uint64_t *out, const char **why)
{
    static const struct {
        const char *unit;
        uint64_t mult;
    } units[] = {
        {"", 1},
        {"b", 1},
        {"k", 1ull << 10},
        {"kb", 1ull << 10},
        {"kib", 1ull << 10},
        {"m", 1ull << 20},
        {"mb", 1ull << 20},
        {"mib", 1ull << 20},
        {"g", 1ull << 30},
        {"gb", 1ull << 30},
        {"gib", 1ull << 30},
        {"t", 1ull << 40},
        {"tb", 1ull << 40},
        {"tib", 1ull << 40},
    };
    struct decimal d;
    char unit[8];
    const char *w;
    if (number_and_unit(s, &d, unit, sizeof unit, &w) < 0) {
        set_why(why, w);
        return -1;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].unit))
            continue;
        unsigned __int128 scaled = d.digits * units[i].mult, den = pow10_u128(d.frac);
        if (scaled % den) {
            set_why(why, "not a whole number of bytes");
            return -1;
        }
        if (scaled / den > FR_SIZE_MAX) {
            set_why(why, "larger than the maximum, 1 EiB (1048576T)");
            return -1;
        }
        *out = (uint64_t)(scaled / den);
        return 0;
    }
    set_why(why, "unknown unit (B, K, M, G, T; KiB, MB, ... are the same binary units)");
    return -1;
}

int fr_parse_size(const char *s, uint64_t *out)
{
    return fr_parse_size_why(s, out, NULL);
}

int fr_parse_duration_why(const char *s, uint64_t *out, const char **why)
{
    static const struct {
        const char *unit;
        uint64_t us;
    } units[] = {
        {"", 1000000},  {"s", 1000000},   {"sec", 1000000},   {"ms", 1000},
        {"us", 1},      {"m", 60000000},  {"min", 60000000},  {"h", 3600000000ull},
    };
    struct decimal d;
    char unit[8];
    const char *w;
    if (number_and_unit(s, &d, unit, sizeof unit, &w) < 0) {
        set_why(why, w);
        return -1;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].unit))
            continue;
        /* ms = ceil(digits x us / (10^frac x 1000)): the resolution is 1 ms,
         * and a positive duration never becomes 0. */
        unsigned __int128 scaled = d.digits * units[i].us, den = pow10_u128(d.frac) * 1000;
        unsigned __int128 ms = scaled / den + (scaled % den != 0);
        if (ms > FR_DURATION_MAX_MS) {
            set_why(why, "longer than the maximum, 365 days (8760h)");
            return -1;
        }
        *out = (uint64_t)ms;
        return 0;
    }
    set_why(why, "unknown unit (ms, s, m, h, us)");
    return -1;
}

int fr_parse_duration_ms(const char *s, uint64_t *out)
{
    return fr_parse_duration_why(s, out, NULL);
}

size_t fr_utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

static uint32_t utf8_code(const unsigned char *s, size_t len)
{
    static const unsigned char mask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    uint32_t c = s[0] & mask[len];
    for (size_t i = 1; i < len; i++)
        c = (c << 6) | (s[i] & 0x3F);
    return c;
}

/* Code points a terminal acts on instead of showing: C1 controls, and the
 * invisible direction and line controls that can make a line read as
 * something else (bidi overrides, isolates, marks, separators). */
static bool term_control(uint32_t c)
{
    return (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x2028 && c <= 0x202E) ||
           (c >= 0x2066 && c <= 0x2069) || c == 0xFEFF;
}

/* The shown form of one unit of s (a byte or a UTF-8 sequence) into out
 * (at least 12 bytes); returns its length and sets *used. */
static size_t term_unit(const unsigned char *s, size_t n, char *out, size_t *used)
{
    size_t l = fr_utf8_seq(s, n);
    *used = l ? l : 1;
    if (l == 1 && s[0] >= 0x20 && s[0] < 0x7F) {
        out[0] = (char)s[0];
        return 1;
    }
    if (l == 1) {
        const char *named = s[0] == '\n' ? "\\n" : s[0] == '\r' ? "\\r" : s[0] == '\t' ? "\\t" : NULL;
        if (named)
            return (size_t)snprintf(out, 12, "%s", named);
        return (size_t)snprintf(out, 12, "\\x%02x", s[0]);
    }
    if (!l) /* not UTF-8: the byte, visibly */
        return (size_t)snprintf(out, 12, "\\x%02x", s[0]);
    uint32_t c = utf8_code(s, l);
    if (term_control(c))
        return (size_t)snprintf(out, 12, "\\u%04x", (unsigned)c);
    memcpy(out, s, l);
    return l;
}

char *fr_term_text(const char *s, size_t len, char *buf, size_t n)
{
    if (!n)
        return buf;
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    if (!s)
        len = 0;
    /* `fit`: the end of the last whole unit after which "..." still fits. */
    size_t o = 0, fit = 0;
    for (size_t i = 0; i < len;) {
        char unit[12];
        size_t used, k = term_unit(u + i, len - i, unit, &used);
        if (o + k + 1 > n) {
            size_t dots = n - 1 - fit < 3 ? n - 1 - fit : 3;
            memcpy(buf + fit, "...", dots);
            o = fit + dots;
            break;
        }
        memcpy(buf + o, unit, k);
        o += k;
        i += used;
        if (o + 3 + 1 <= n)
            fit = o;
    }
    buf[o] = '\0';
    return buf;
}

bool fr_is_identifier(const char *s)
{
    if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

const char *fr_format_size(uint64_t bytes, char *buf, size_t n)
{
    static const char *suffix[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    size_t i = 0;
    while (v >= 1024.0 && i + 1 < sizeof suffix / sizeof suffix[0]) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, n, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, n, "%.1f %s", v, suffix[i]);
    return buf;
}

uint64_t fr_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
