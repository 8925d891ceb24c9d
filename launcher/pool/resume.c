/* resume.c — what an existing results file already holds (--resume).
 *
 * Results are appended one write(2) per line, so a fitrun killed hard can
 * leave at most one torn line, at the end. It is cut off (ftruncate) so the
 * resumed run appends after a clean newline; the job it belonged to has no
 * complete result and runs again. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/util.h"
#include "internal.h"

void fr_resume_free(struct fr_resume *r)
{
    fr_idset_free(r->ids);
    fr_idset_free(r->lines);
    fr_idset_free(r->noline);
    memset(r, 0, sizeof *r);
}

static char *read_all(int fd, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
        }
        ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return buf;
}

/* Record one result line. Returns -1 on ENOMEM only. */
static int take(struct fr_resume *r, const char *name, long lineno, const char *s, size_t n)
{
    struct fr_result_key k;
    char err[256], key[32];
    if (line_is_blank(s, n))
        return 0;
    if (fr_result_key_parse(s, n, &k, err, sizeof err) < 0) {
        fr_warn("%s:%ld: %s; ignored", name, lineno, err);
        return 0;
    }
    int rc = 0;
    r->results++;
    if (k.line > 0) {
        snprintf(key, sizeof key, "%ld", k.line);
        rc = fr_idset_add(r->lines, key);
    }
    if (rc >= 0 && k.id && !k.duplicate)
        rc = fr_idset_add(k.line > 0 ? r->ids : r->noline, k.id);
    free(k.id);
    return rc < 0 ? -1 : 0;
}

int fr_resume_scan(int fd, const char *name, struct fr_resume *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->ids = fr_idset_new();
    r->lines = fr_idset_new();
    r->noline = fr_idset_new();
    size_t len;
    char *text = r->ids && r->lines && r->noline ? read_all(fd, &len) : NULL;
    if (!text) {
        snprintf(err, errlen, "cannot read %s for --resume: %s", name, strerror(errno ? errno : ENOMEM));
        fr_resume_free(r);
        return -1;
    }
    size_t off = 0;
    long lineno = 0;
    while (off < len) {
        char *nl = memchr(text + off, '\n', len - off);
        if (!nl) {
            /* torn last line */
            fr_warn("%s:%ld: incomplete last line (%zu bytes, the writer was interrupted); removed", name,
                    lineno + 1, len - off);
            if (ftruncate(fd, (off_t)off) < 0) {
                snprintf(err, errlen, "cannot cut the incomplete last line of %s: %s", name, strerror(errno));
                free(text);
                fr_resume_free(r);
                return -1;
            }
            break;
        }
        lineno++;
        if (take(r, name, lineno, text + off, (size_t)(nl - (text + off))) < 0) {
            snprintf(err, errlen, "out of memory reading %s", name);
            free(text);
            fr_resume_free(r);
            return -1;
        }
        off = (size_t)(nl - text) + 1;
    }
    free(text);
    return 0;
}
