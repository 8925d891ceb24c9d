/* input.c — jobs arrive as lines, from a pipe (streamed: a line is used as
 * soon as it is complete, while the writer keeps the pipe open) or from a
 * regular file (read in chunks as slots free up). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define CHUNK (64u << 10)

void input_init(struct input *in, int fd, const char *name)
{
    memset(in, 0, sizeof *in);
    in->fd = fd;
    in->name = name;
    /* The caller decides pollability (epoll refuses regular files). */
}

void input_free(struct input *in)
{
    free(in->buf);
    in->buf = NULL;
}

bool line_is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

enum input_next input_next(struct input *in, const char **text, size_t *len, long *lineno)
{
    for (;;) {
        char *start = in->buf + in->off;
        size_t avail = in->len - in->off;
        char *nl = avail ? memchr(start, '\n', avail) : NULL;
        if (in->skipping) {
            if (!nl) {
                in->off = in->len = 0; /* drop it all, keep skipping */
                return in->eof ? INPUT_END : INPUT_MORE;
            }
            in->off += (size_t)(nl - start) + 1;
            in->skipping = false;
            continue;
        }
        if (nl) {
            *text = start;
            *len = (size_t)(nl - start);
            *nl = '\0';
            in->off += *len + 1;
            *lineno = ++in->line;
            return INPUT_LINE;
        }
        if (avail > FR_JOB_MAX_LINE) {
            in->off = in->len = 0;
            in->skipping = true;
            *lineno = ++in->line;
            return INPUT_TOO_LONG;
        }
        if (in->eof) {
            if (!avail)
                return INPUT_END;
            /* a last line without '\n' */
            *text = start;
            *len = avail;
            start[avail] = '\0';
            in->off = in->len;
            *lineno = ++in->line;
            return INPUT_LINE;
        }
        return INPUT_MORE;
    }
}

ssize_t input_fill(struct input *in)
{
    /* Compact, then make room for a chunk plus the NUL input_next() adds. */
    if (in->off) {
        memmove(in->buf, in->buf + in->off, in->len - in->off);
        in->len -= in->off;
        in->off = 0;
    }
    if (in->cap - in->len < CHUNK + 1) {
        size_t ncap = in->cap ? in->cap * 2 : CHUNK * 2;
        while (ncap - in->len < CHUNK + 1)
            ncap *= 2;
        char *nb = realloc(in->buf, ncap);
        if (!nb) {
            errno = ENOMEM;
            return -1;
        }
        in->buf = nb;
        in->cap = ncap;
    }
    ssize_t r;
    do
        r = in->use_pread ? pread(in->fd, in->buf + in->len, CHUNK, in->pread_pos)
                          : read(in->fd, in->buf + in->len, CHUNK);
    while (r < 0 && errno == EINTR);
    if (r > 0 && in->use_pread)
        in->pread_pos += r;
    if (r == 0)
        in->eof = true;
    if (r > 0)
        in->len += (size_t)r;
    return r;
}

/* One line of the pre-count. */
static bool counts(long line, const char *s, size_t n, const struct fr_shard *shard, const struct fr_resume *resume)
{
    if (!fr_shard_selects(shard, line))
        return false;
    if (line_is_blank(s, n))
        return false;
    if (resume) {
        char key[32];
        snprintf(key, sizeof key, "%ld", line);
        if (fr_idset_has(resume->lines, key))
            return false;
    }
    return true;
}

long input_count(int fd, const struct fr_shard *shard, const struct fr_resume *resume)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return -1;
    char *buf = malloc(CHUNK);
    if (!buf)
        return -1;
    long total = 0, line = 0;
    off_t pos = 0;
    /* Only whether a line is blank matters, so a line is tracked by its
     * number and a "has something" flag across chunk boundaries. */
    bool nonblank = false;
    for (;;) {
        ssize_t r = pread(fd, buf, CHUNK, pos);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            return -1;
        }
        if (r == 0)
            break;
        pos += r;
        for (ssize_t i = 0; i < r; i++) {
            /* The rest of a line already known not blank changes nothing:
             * on to its end (memchr, not a byte at a time). */
            if (nonblank) {
                const char *nl = memchr(buf + i, '\n', (size_t)(r - i));
                if (!nl)
                    break;
                i = nl - buf;
            }
            if (buf[i] == '\n') {
                line++;
                if (nonblank && counts(line, "x", 1, shard, resume))
                    total++;
                nonblank = false;
            } else if (!nonblank && !line_is_blank(buf + i, 1))
                nonblank = true;
        }
    }
    if (nonblank && counts(line + 1, "x", 1, shard, resume))
        total++;
    free(buf);
    return total;
}
