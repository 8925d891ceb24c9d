/* shm.c — /dev/shm, where joblib/loky and Python's multiprocessing put
 * shared arrays and semaphores. Docker gives containers 64 MiB by default,
 * which breaks them in ways that look like crashes.
 *
 * Live: statvfs("/dev/shm"). Sysroot: the tmpfs size= option of the
 * /dev/shm line in proc/self/mountinfo (free space is not in any file, so
 * it stays unknown). The kernel omits size= when it is the default (half of
 * RAM), so no size= means MemTotal / 2.
 *
 * Pages written to tmpfs are charged to the memory cgroup of the writer,
 * so a big /dev/shm does not give more memory than the cgroup limit. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "fitrun/common.h"
#include "internal.h"

int fr_parse_tmpfs_size(const char *opt, uint64_t total, uint64_t *v)
{
    char buf[64];
    /* Longer text is garbage, never cut to fit (x->shm_size_opt holds
     * less; other callers may not). */
    if (!opt || strlen(opt) >= sizeof buf)
        return -1;
    fr_copy(buf, sizeof buf, opt);
    size_t l = strlen(buf);
    if (l == 0)
        return -1;
    uint64_t mult = 1;
    /* The kernel's memparse suffixes (binary: k = 2^10 ... e = 2^60), or a
     * percentage of RAM. */
    static const char suffixes[] = "kmgtpe";
    const char *suffix = strchr(suffixes, tolower((unsigned char)buf[l - 1]));
    bool percent = buf[l - 1] == '%';
    if (suffix && *suffix)
        mult = 1ull << (10 * (suffix - suffixes + 1));
    if (mult != 1 || percent)
        buf[l - 1] = '\0';
    uint64_t n;
    if (fr_parse_u64(buf, &n) < 0)
        return -1;
    if (percent) {
        if (!total || n > 100)
            return -1;
        *v = total / 100 * n;
        return n ? 1 : 0;
    }
    /* A size: at most FR_SIZE_MAX (1 EiB), as every size fitrun holds. */
    if (n > FR_SIZE_MAX / mult)
        return -1;
    *v = n * mult;
    return n ? 1 : 0;
}

static void shm_live(struct fr_dx *x)
{
    struct fr_resources *r = x->res;
    struct statvfs st;
    if (statvfs("/dev/shm", &st) < 0) {
        fr_detect_note(r, "statvfs /dev/shm: %s: size unknown", strerror(errno));
        return;
    }
    fr_value_set(&r->shm_size, (double)st.f_blocks * (double)st.f_frsize, "statvfs(/dev/shm)");
    fr_value_set(&r->shm_free, (double)st.f_bavail * (double)st.f_frsize, "statvfs(/dev/shm)");
}

static void shm_sysroot(struct fr_dx *x)
{
    struct fr_resources *r = x->res;
    if (!x->shm_found) {
        fr_detect_note(r, "/proc/self/mountinfo: no /dev/shm mount: size unknown");
        return;
    }
    if (strcmp(x->shm_fstype, "tmpfs")) {
        fr_detect_note(r, "/proc/self/mountinfo: /dev/shm is %s, not tmpfs: size unknown", x->shm_fstype);
        return;
    }
    if (!x->shm_size_opt[0]) {
        if (r->mem_total)
            fr_value_set(&r->shm_size, (double)(r->mem_total / 2),
                         "/proc/self/mountinfo (no size=: tmpfs default, MemTotal / 2)");
        else
            fr_detect_note(r, "/proc/self/mountinfo: /dev/shm has no size= and MemTotal is unknown: size unknown");
        return;
    }
    uint64_t v;
    int k = fr_parse_tmpfs_size(x->shm_size_opt, r->mem_total, &v);
    if (k < 0)
        fr_detect_note(r, "/proc/self/mountinfo: /dev/shm size='%s' is not a size: ignored", x->shm_size_opt);
    else if (k == 0)
        fr_detect_note(r, "/proc/self/mountinfo: /dev/shm size=0 (unlimited tmpfs): size unknown");
    else
        fr_value_set(&r->shm_size, (double)v, "/proc/self/mountinfo (/dev/shm size=%s)", x->shm_size_opt);
}

void fr_detect_shm(struct fr_dx *x)
{
    if (x->live)
        shm_live(x);
    else
        shm_sysroot(x);
}
