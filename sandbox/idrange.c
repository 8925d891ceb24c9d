/* idrange.c — reserve the per-slot uids of one run, so that two fitrun runs
 * on one machine never share a uid.
 *
 * RLIMIT_NPROC counts every process of a real uid, system-wide, and a uid's
 * processes may signal each other: two runs whose slot k both ran as
 * uid_base + k would fail each other's fork/exec (EAGAIN at `processes = 1`)
 * and could reach each other's jobs. So, like isolate's box ids, a run takes
 * a range of `n` consecutive uids from uid_base upward that
 *  - no live fitrun run has registered (a small registry under a lock), and
 *  - no process uses as its real uid (a /proc scan: zombies count too, and a
 *    run killed by SIGKILL leaves some until they are reaped).
 * The registry is one file of "PID STARTTIME BASE COUNT" lines; entries of
 * dead runs are dropped on the way. The pid is the run's in its own pid
 * namespace, which means nothing to a run in another one that shares the
 * registry (`unshare --pid` beside a host run): so each run also holds,
 * for as long as it lives, an OFD write lock on bytes BASE..BASE+COUNT-1 of
 * the lock file "uids.lock" beside the registry. The kernel drops it when
 * the run is gone, whatever pid namespace it was in. An entry is dead when
 * its pid is gone (or reused: another start time) and no lock is held on
 * its range.
 * Parent side only (files, locks, malloc); never called in a job. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* How far above uid_base a free range is looked for. */
#define ID_SEARCH_SPAN 65536u

/* The registry's directory: /run is a root-only tmpfs on every init; /tmp is
 * the fallback for containers without one. Created 0700, must be ours. */
static const char *const registry_dirs[] = {"/run/fitrun", "/tmp/.fitrun-ids"};

static int open_dir(const char *dir)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(fd);
        errno = EPERM; /* not ours, or open to others: never trust it */
        return -1;
    }
    return fd;
}

/* The start time of `pid` (field 22 of /proc/PID/stat), 0 when it is gone. */
static unsigned long long start_time(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    size_t len;
    char *text = fr_read_file(path, 4096, &len);
    if (!text)
        return 0;
    unsigned long long t = 0;
    char *p = strrchr(text, ')'); /* the command name may hold spaces and ')' */
    for (int field = 2; p && *p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (p)
        t = strtoull(p + 1, NULL, 10);
    free(text);
    return t;
}

/* Mark in `used` (bit u - base) every uid in [base, base + span) that some
 * process has as its real uid. */
static void scan_processes(uint32_t base, uint32_t span, unsigned char *used)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
        char *text = fr_read_file(path, 1 << 16, NULL);
        const char *uid = text ? strstr(text, "\nUid:") : NULL;
        if (uid) {
            unsigned long long real = strtoull(uid + 5, NULL, 10);
            if (real >= base && real - base < span)
                used[(real - base) / 8] |= (unsigned char)(1u << ((real - base) % 8));
        }
        free(text);
    }
    closedir(d);
}

static bool range_free(const unsigned char *used, uint32_t off, int n)
{
    for (uint32_t i = off; i < off + (uint32_t)n; i++)
        if (used[i / 8] & (1u << (i % 8)))
            return false;
    return true;
}

static void mark(unsigned char *used, uint32_t base, uint32_t span, unsigned long long first, unsigned long long count)
{
    for (unsigned long long u = first; u < first + count; u++)
        if (u >= base && u - base < span)
            used[(u - base) / 8] |= (unsigned char)(1u << ((u - base) % 8));
}

/* Is some lock held on bytes first..first+count-1 of the lock file (lfd:
 * an open file description of our own, so that our own run's lock, held
 * on another, counts)? A lock that cannot be tested counts as held: the
 * range is then kept, never shared. */
static bool range_locked(int lfd, unsigned long long first, unsigned long long count)
{
    if (lfd < 0)
        return false; /* no lock file: the pid alone decides, as before */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)first, .l_len = (off_t)count};
    if (count == 0 || first > INT64_MAX - count)
        return false;
    return fcntl(lfd, F_OFD_GETLK, &fl) < 0 || fl.l_type != F_UNLCK;
}

/* Read the registry (locked by the caller), keep the live entries in `keep`
 * and mark their ranges used. */
static void read_registry(FILE *f, int lfd, uint32_t base, uint32_t span, unsigned char *used, char **keep,
                          size_t *klen)
{
    long pid;
    unsigned long long st, first, count;
    size_t cap = 0;
    *keep = NULL;
    *klen = 0;
    rewind(f);
    while (fscanf(f, "%ld %llu %llu %llu", &pid, &st, &first, &count) == 4) {
        bool pid_alive = pid > 0 && pid != getpid() && start_time(pid) == st;
        if (!pid_alive && !range_locked(lfd, first, count))
            continue; /* a dead run (or our own stale line): its range is free */
        mark(used, base, span, first, count);
        char line[128];
        int w = snprintf(line, sizeof line, "%ld %llu %llu %llu\n", pid, st, first, count);
        if (*klen + (size_t)w + 1 > cap) {
            cap = cap ? cap * 2 : 4096;
            char *grown = realloc(*keep, cap);
            if (!grown)
                break;
            *keep = grown;
        }
        memcpy(*keep + *klen, line, (size_t)w + 1);
        *klen += (size_t)w;
    }
}

int fr_identity_reserve(uint32_t want, int n, uint32_t *got, char *err, size_t errlen)
{
    *got = want;
    if (n <= 0 || (uint64_t)want + (uint64_t)n > 0xfffffffeull) {
        fr_seterr(err, errlen, "uid_base %u with %d slots passes the largest uid", want, n);
        return -1;
    }
    uint32_t span = ID_SEARCH_SPAN;
    if ((uint64_t)want + span > 0xfffffffeull)
        span = 0xfffffffeu - want;
    int dfd = -1;
    const char *dir = NULL;
    for (size_t i = 0; i < sizeof registry_dirs / sizeof registry_dirs[0] && dfd < 0; i++)
        if ((dfd = open_dir(registry_dirs[i])) >= 0)
            dir = registry_dirs[i];
    if (dfd < 0) {
        fr_seterr(err, errlen, "cannot keep the uid registry in %s or %s: %s", registry_dirs[0], registry_dirs[1],
                  strerror(errno));
        return -1;
    }
    int fd = openat(dfd, "uids", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    /* Kept open to the end on success: its lock is the reservation. */
    int lfd = openat(dfd, "uids.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    int lerr = errno;
    close(dfd);
    if (lfd < 0) {
        fr_seterr(err, errlen, "%s/uids.lock: %s", dir, strerror(lerr));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (fd < 0 || flock(fd, LOCK_EX) < 0) {
        fr_seterr(err, errlen, "%s/uids: %s", dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        close(lfd);
        return -1;
    }
    FILE *f = fdopen(fd, "r+");
    unsigned char *used = calloc(span / 8 + 1, 1);
    if (!f || !used) {
        fr_seterr(err, errlen, "out of memory");
        free(used);
        if (f)
            fclose(f);
        else
            close(fd);
        close(lfd);
        return -1;
    }
    char *keep;
    size_t klen;
    read_registry(f, lfd, want, span, used, &keep, &klen);
    scan_processes(want, span, used);
    int rc = -1;
    uint32_t off = 0;
    int lock_err = 0;
    for (;; off++) {
        while (off + (uint32_t)n <= span && !range_free(used, off, n))
            off++;
        if (off + (uint32_t)n > span)
            break;
        /* The range's lock, taken before the registry's lock is released
         * (no reader ever sees our entry without it). A range locked by a
         * run whose entry is gone (a fitrun that checks pids alone dropped
         * the entry of a run in another pid namespace) is in use. */
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)(want + off), .l_len = n};
        if (fcntl(lfd, F_OFD_SETLK, &fl) == 0)
            break;
        if (errno != EAGAIN && errno != EACCES) {
            lock_err = errno;
            break;
        }
    }
    if (lock_err) {
        fr_seterr(err, errlen, "%s/uids.lock: cannot lock uids %u..%u: %s", dir, want + off,
                  want + off + (uint32_t)n - 1, strerror(lock_err));
    } else if (off + (uint32_t)n > span) {
        fr_seterr(err, errlen, "no %d free uids from %u to %u (other fitrun runs or processes use them)", n, want,
                  want + span - 1);
    } else {
        *got = want + off;
        char line[128];
        int w = snprintf(line, sizeof line, "%ld %llu %u %d\n", (long)getpid(), start_time(getpid()), *got, n);
        /* Rewrite the registry: the live entries, then ours. */
        if (ftruncate(fd, 0) == 0 && fseek(f, 0, SEEK_SET) == 0 && (!klen || fwrite(keep, 1, klen, f) == klen) &&
            fwrite(line, 1, (size_t)w, f) == (size_t)w && fflush(f) == 0)
            rc = 0;
        else
            fr_seterr(err, errlen, "%s/uids: cannot write: %s", dir, strerror(errno));
    }
    free(keep);
    free(used);
    fclose(f); /* releases the registry's lock: the entry and the range's lock now protect the range */
    if (rc < 0)
        close(lfd); /* on success lfd stays open to the end: its lock is the reservation */
    return rc;
}
