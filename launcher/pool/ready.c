/* ready.c — the ready record (`fitrun run --ready-fd N`, docs/run.md
 * "Readiness"): one JSON line written once the runtime is up (for python:
 * the interpreter has run the prelude and every worker is forked), just
 * before the first job is read, then the descriptor is closed. A caller
 * that sees end of file without the line knows fitrun ended before it
 * could take jobs (its exit status says why). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

void pool_ready(struct fr_host *h)
{
    int fd = h->o->ready_fd;
    if (fd <= STDERR_FILENO)
        return;
    char line[160];
    int n = snprintf(line, sizeof line, "{\"ready\":true,\"pid\":%ld,\"workers\":%d,\"runtime\":\"%s\"}\n",
                     (long)getpid(), h->nslots, h->rt.ops->name);
    ssize_t w;
    do
        w = write(fd, line, (size_t)n);
    while (w < 0 && errno == EINTR);
    if (w != n)
        pool_say(h, "--ready-fd %d: cannot write the ready record: %s", fd, w < 0 ? strerror(errno) : "short write");
    if (close(fd) < 0 && errno != EINTR)
        pool_say(h, "--ready-fd %d: close: %s", fd, strerror(errno));
}
