/* oom.c — telling an OOM kill from any other SIGKILL.
 *
 * When a memory cgroup runs out (a container's --memory, a systemd
 * MemoryMax, a batch job's allocation), the kernel's OOM killer SIGKILLs a
 * process of the cgroup, usually the largest: the prediction that was
 * allocating. That can happen long before the job reaches its own
 * RLIMIT_AS (which would have made malloc fail and given `memory` the
 * usual way), and the wait status alone says only SIGKILL. The kernel
 * counts these kills per memory cgroup:
 *
 *   v1  memory.oom_control  "oom_kill N"  kills of processes in this very
 *                                         cgroup (not propagated upwards)
 *   v2  memory.events       "oom_kill N"  kills in this cgroup and below
 *
 * Jobs live in fitrun's own memory cgroup (nothing moves them), so
 * fitrun's counter is the one to read. It is read once at start (the
 * baseline) and then only when a job died of a SIGKILL that fitrun did not
 * send — cheap: one small file read per unexplained SIGKILL, nothing per
 * ordinary job.
 *
 * Attribution. The counter says how many kills, not whom. Kills seen since
 * the last read become credit, and each job that died of an unexplained
 * SIGKILL spends one: two jobs killed together (the counter +2 at the
 * first read) both get `memory`. Credit never exceeds the number of jobs
 * still unreported, so a kill of some other process (a python worker, a
 * process outside fitrun in the same container) cannot be kept for a job
 * started much later. The limit: with several workers, a kill of another
 * process is given to a job that died of an unexplained SIGKILL at about
 * the same time (docs/run.md, "OOM kills").
 *
 * v2's oom_group_kill (memory.oom.group) is not needed: a group kill
 * counts every process it kills in oom_kill too. v1's under_oom is only
 * set while a cgroup with oom_kill_disable is stuck, which fitrun never
 * configures. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fitrun/pool.h"
#include "fitrun/common.h"

#define OOM_FILE_MAX 4096 /* memory.events is ~100 bytes, oom_control ~50 */

int fr_oom_parse(const char *text, const char *name, uint64_t *count, char *err, size_t errlen)
{
    static const char key[] = "oom_kill";
    int lineno = 0;
    for (const char *s = text; s && *s;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        lineno++;
        /* "oom_kill" followed by blanks: not oom_kill_disable */
        if (len > sizeof key - 1 && !memcmp(s, key, sizeof key - 1) &&
            (s[sizeof key - 1] == ' ' || s[sizeof key - 1] == '\t')) {
            char value[32];
            size_t vlen = len - (sizeof key - 1);
            if (vlen >= sizeof value) {
                snprintf(err, errlen, "%s:%d: oom_kill value too long", name, lineno);
                return -1;
            }
            memcpy(value, s + sizeof key - 1, vlen);
            value[vlen] = '\0';
            if (fr_parse_u64(value, count) < 0) {
                snprintf(err, errlen, "%s:%d: oom_kill value '%s' is not a count", name, lineno, fr_trim(value));
                return -1;
            }
            return 0;
        }
        s = nl ? nl + 1 : NULL;
    }
    snprintf(err, errlen, "%s: no oom_kill line (kernels before 4.13 do not count OOM kills)", name);
    return -1;
}

/* Read and parse the counter at o->path. */
static int read_counter(const struct fr_oom *o, uint64_t *count, char *err, size_t errlen)
{
    char *text = fr_read_file(o->path, OOM_FILE_MAX, NULL);
    if (!text) {
        snprintf(err, errlen, "cannot read %s: %s", o->path, strerror(errno));
        return -1;
    }
    int r = fr_oom_parse(text, o->path, count, err, errlen);
    free(text);
    if (r < 0)
        errno = EINVAL; /* garbage, not absent */
    return r;
}

int fr_oom_init(struct fr_oom *o, const struct fr_cgroup_loc *loc, const char *sysroot, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    if (!loc || (loc->version != 1 && loc->version != 2) || !loc->dir[0])
        return 0;
    char rel[FR_OOM_PATH_MAX];
    int n = snprintf(rel, sizeof rel, "%s/%s", loc->dir, loc->version == 1 ? "memory.oom_control" : "memory.events");
    if (n < 0 || (size_t)n >= sizeof rel || !fr_path_join(o->path, sizeof o->path, sysroot ? sysroot : "/", rel)) {
        snprintf(err, errlen, "memory cgroup path too long: %s", loc->dir);
        o->path[0] = '\0';
        return -1;
    }
    uint64_t now;
    if (read_counter(o, &now, err, errlen) < 0) {
        /* No file (the v2 root cgroup has no memory.events) is not an
         * error: there is just nothing to count with. */
        bool absent = errno == ENOENT;
        o->path[0] = '\0';
        return absent ? 0 : -1;
    }
    o->seen = now;
    return 1;
}

bool fr_oom_claim(struct fr_oom *o, int running)
{
    if (!o->path[0])
        return false;
    uint64_t now;
    char err[FR_OOM_PATH_MAX + 128];
    if (read_counter(o, &now, err, sizeof err) < 0) {
        if (!o->warned)
            fr_warn("%s; OOM kills are reported as signal", err);
        o->warned = true;
        return false;
    }
    if (now > o->seen)
        o->credit += (long)(now - o->seen);
    o->seen = now;
    if (o->credit > running)
        o->credit = running > 0 ? running : 0;
    if (o->credit <= 0)
        return false;
    o->credit--;
    return true;
}
