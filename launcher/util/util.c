/* util.c — see include/fitrun/util.h. */
#include "fitrun/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

bool fr_quiet = false;

static void vreport(const char *fmt, va_list ap, const char *suffix)
{
    /* One fprintf per message so lines from concurrent processes do not
     * interleave mid-line. */
    char msg[4096];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "fitrun: %s%s%s\n", msg, suffix ? ": " : "", suffix ? suffix : "");
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

char *fr_read_file(const char *path, size_t max, size_t *len)
{
    /* Read up to one byte past `max`: getting that byte is how a file that
     * is too large is told apart from one of exactly `max` bytes. */
    if (max > SIZE_MAX / 2)
        max = SIZE_MAX / 2;
    const size_t limit = max + 1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
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

/* Split "1.5GiB" into a non-negative number and a lower-cased unit. */
static int number_and_unit(const char *s, double *num, char *unit, size_t unitlen)
{
    if (!s)
        return -1;
    s = skip_space(s);
    if (!*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    /* strtod accepts "inf", "nan" and hex; only plain decimals are units. */
    for (const char *p = s; p < end; p++)
        if (!isdigit((unsigned char)*p) && *p != '.')
            return -1;
    end = (char *)skip_space(end);
    size_t i = 0;
    while (*end && !isspace((unsigned char)*end)) {
        if (i + 1 >= unitlen)
            return -1;
        unit[i++] = (char)tolower((unsigned char)*end++);
    }
    unit[i] = '\0';
    if (!only_space(end))
        return -1;
    *num = v;
    return 0;
}

int fr_parse_size(const char *s, uint64_t *out)
{
    static const struct {
        const char *unit;
        double mult;
    } units[] = {
        {"", 1.0},
        {"b", 1.0},
        {"k", 1024.0},
        {"kb", 1024.0},
        {"kib", 1024.0},
        {"m", 1048576.0},
        {"mb", 1048576.0},
        {"mib", 1048576.0},
        {"g", 1073741824.0},
        {"gb", 1073741824.0},
        {"gib", 1073741824.0},
        {"t", 1099511627776.0},
        {"tb", 1099511627776.0},
        {"tib", 1099511627776.0},
    };
    double v;
    char unit[8];
    if (number_and_unit(s, &v, unit, sizeof unit) < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].unit))
            continue;
        double bytes = v * units[i].mult;
        if (bytes >= 18446744073709551616.0)
            return -1;
        *out = (uint64_t)bytes;
        return 0;
    }
    return -1;
}

int fr_parse_duration_ms(const char *s, uint64_t *out)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {
        {"", 1000.0}, {"s", 1000.0}, {"sec", 1000.0}, {"ms", 1.0},
        {"us", 0.001}, {"m", 60000.0}, {"min", 60000.0}, {"h", 3600000.0},
    };
    double v;
    char unit[8];
    if (number_and_unit(s, &v, unit, sizeof unit) < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].unit))
            continue;
        double ms = ceil(v * units[i].ms);
        if (ms >= 9.2e18)
            return -1;
        *out = (uint64_t)ms;
        return 0;
    }
    return -1;
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
