/* errors.c — messages on stderr in one form, "fitrun: what failed: why",
 * and error text into a caller's buffer (see fitrun/common.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"

bool fr_quiet = false;

__attribute__((format(printf, 1, 0))) static void vreport(const char *fmt, va_list ap, const char *suffix)
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
