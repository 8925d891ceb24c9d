/* text.c — what is valid text and how it is shown: UTF-8 sequences,
 * terminal-safe text, human sizes and identifiers (see fitrun/common.h). */
#include <stdio.h>
#include <string.h>

#include "fitrun/common.h"

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

bool fr_is_identifier(const char *s)
{
    if (!s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}
