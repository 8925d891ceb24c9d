/* file.c — files and paths: bounded reads that refuse special files,
 * and joining a sysroot and a path (see fitrun/common.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/common.h"

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

bool fr_dir_file(char *buf, size_t n, const char *dir, const char *name)
{
    int r = snprintf(buf, n, "%s/%s", strcmp(dir, "/") ? dir : "", name);
    if (r < 0 || (size_t)r >= n) {
        buf[0] = '\0';
        return false;
    }
    return true;
}
