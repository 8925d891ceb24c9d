/* files.c — the cgroup interface files fitrun reads and writes itself.
 *
 * libcgroup (lib.c) makes, configures and removes the cgroups. What is
 * left to plain system calls, each where it is used and with its reason:
 *  - the per-job path (slot.c): a job's child joins its cgroup with one
 *    write(2) on a descriptor opened before the fork (async-signal-safe,
 *    and the Python worker's child has no libcgroup), and the counters
 *    are read with pread(2) on descriptors kept open: libcgroup opens a
 *    file by path, through stdio, and rereads /proc/mounts on every
 *    write, far above the per-prediction budget;
 *  - v2 files libcgroup 2.0.2 has no call for: cgroup.kill, memory.events,
 *    memory.peak, cgroup.events, a controller taken back out of
 *    cgroup.subtree_control (tree.c, probe.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

int cg_fd_write(int fd, const char *text)
{
    size_t len = strlen(text);
    ssize_t w;
    do
        w = write(fd, text, len);
    while (w < 0 && errno == EINTR);
    if (w < 0)
        return -errno;
    return (size_t)w == len ? 0 : -EIO;
}

int cg_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = cg_fd_write(fd, text);
    if (close(fd) < 0 && r == 0)
        r = -errno;
    return r;
}

long cg_fd_read(int fd, char *buf, size_t n)
{
    ssize_t r;
    do
        r = pread(fd, buf, n - 1, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        buf[0] = '\0';
        return -errno;
    }
    buf[r] = '\0';
    return (long)r;
}

bool cg_key_u64(const char *text, const char *key, uint64_t *v)
{
    size_t kl = strlen(key);
    for (const char *s = text; s && *s;) {
        if (!strncmp(s, key, kl) && (s[kl] == ' ' || s[kl] == '\t')) {
            char num[32];
            size_t l = strcspn(s + kl, "\n");
            if (l >= sizeof num)
                return false;
            memcpy(num, s + kl, l);
            num[l] = '\0';
            return fr_parse_u64(num, v) == 0;
        }
        const char *nl = strchr(s, '\n');
        s = nl ? nl + 1 : NULL;
    }
    return false;
}

bool cg_text_u64(const char *text, uint64_t *v)
{
    char num[32];
    size_t l = strcspn(text, " \t\n");
    if (!l || l >= sizeof num)
        return false;
    memcpy(num, text, l);
    num[l] = '\0';
    return fr_parse_u64(num, v) == 0;
}

bool cg_has_word(const char *text, const char *word)
{
    size_t wl = strlen(word);
    for (const char *s = text; s && *s;) {
        s += strspn(s, " \t\n");
        size_t l = strcspn(s, " \t\n");
        if (l == wl && !strncmp(s, word, wl))
            return true;
        s += l;
    }
    return false;
}

const char *cg_ctl_name(unsigned ctl)
{
    return ctl == FR_CG_MEMORY ? "memory" : ctl == FR_CG_PIDS ? "pids" : ctl == FR_CG_CPUACCT ? "cpuacct" : "?";
}

const char *cg_ctl_list(unsigned ctls, char *buf, size_t n)
{
    static const unsigned order[] = {FR_CG_MEMORY, FR_CG_PIDS, FR_CG_CPUACCT};
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (ctls & order[i]) {
            int r = snprintf(buf + k, n - k, "%s%s", k ? ", " : "", cg_ctl_name(order[i]));
            if (r < 0 || (size_t)r >= n - k)
                break;
            k += (size_t)r;
        }
    if (!buf[0])
        snprintf(buf, n, "none");
    return buf;
}

int cg_writable(const char *path)
{
    return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0 ? 0 : -errno;
}

int cg_count_others(const char *procs_text, pid_t self)
{
    int others = 0;
    for (const char *s = procs_text; s && *s;) {
        char *end;
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        if (pid != (long)self)
            others++;
        s = end + strspn(end, "\n");
    }
    return others;
}
