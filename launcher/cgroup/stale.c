/* stale.c — sub-trees a dead fitrun left behind. A fitrun that is
 * SIGKILLed (or crashes) cannot remove its cgroups; on v2 its janitor
 * does (janitor.c), and what is still there (v1; a janitor killed too)
 * is removed by the next fitrun that starts in the same cgroup, before it
 * makes its own.
 *
 * <own>/fitrun-<pid> is a live run's, and is left alone, while any of
 * these holds:
 *  - a process <pid> is in that sub-tree's launcher cgroup or in <own>
 *    itself, read in this process's pid namespace: a live fitrun is in
 *    <own> until it has made its sub-tree and moved itself, then in its
 *    launcher cgroup to the end, so a run that is starting beside us is
 *    never taken for a dead one. (A pid reused by another process in
 *    <own> keeps a dead tree until that process is gone: a leftover,
 *    never a killed run.)
 *  - its launcher cgroup, in any hierarchy, lists a process. fitrun, its
 *    zygote, its workers and (v2) its janitor live there, whatever pid
 *    namespace they are in: the <pid> in the name is the one fitrun has
 *    in its own namespace, and a run in another pid namespace that shares
 *    the cgroup (`unshare --pid`, a container sharing the host's cgroup)
 *    has a pid there that means nothing here.
 *  - its launcher cgroup cannot be removed. The kernel refuses rmdir
 *    (EBUSY) while any process is in it, in whatever pid namespace, and
 *    takes the move of a process into it and rmdir one after the other:
 *    this is what decides, also where v1's cgroup.procs leaves out the
 *    processes this pid namespace cannot see. So the launcher cgroups are
 *    removed first, in every hierarchy, before anything else is touched;
 *    a run that was making its tree at that moment cannot move into it
 *    (tree.c makes it again).
 * Then the processes left in its jobs' cgroups are killed (none should be
 * left: every process of a run dies with it) and only what fitrun makes
 * is removed, deepest first: a directory that is not launcher, jobs or
 * jobs/worker-<k> keeps its parents, and is named in the note. Nothing in
 * launcher or in fitrun-<pid> itself is ever killed: a process there
 * keeps the tree. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* "fitrun-<digits>" or "fitrun-<digits>-<digits>" (tree.c's claim_name:
 * a name another pid namespace's run had) -> pid, else 0. */
static pid_t pid_of(const char *name)
{
    size_t pl = strlen(CG_PREFIX);
    if (strncmp(name, CG_PREFIX, pl))
        return 0;
    const char *c = name + pl;
    size_t digits = strspn(c, "0123456789");
    if (!digits || digits > 9 ||
        (c[digits] && (c[digits] != '-' || !c[digits + 1] || strlen(c + digits + 1) > 9 ||
                       strspn(c + digits + 1, "0123456789") != strlen(c + digits + 1))))
        return 0;
    long v = strtol(c, NULL, 10);
    return v > 0 ? (pid_t)v : 0;
}

/* This process's cgroup path in hierarchy h (from /proc/<pid>/cgroup). */
static bool cgroup_path_of(const char *pid, const struct fr_cgroup_hier *h, char *out, size_t n)
{
    char file[64];
    snprintf(file, sizeof file, "/proc/%s/cgroup", pid);
    char *text = fr_read_file(file, 1 << 16, NULL);
    if (!text)
        return false;
    unsigned bit = h->ctls & FR_CG_MEMORY ? FR_CG_MEMORY : h->ctls & FR_CG_PIDS ? FR_CG_PIDS : FR_CG_CPUACCT;
    bool ok = fr_proc_cgroup_path(text, h->version == 1 ? cg_ctl_name(bit) : NULL, out, n) == 0;
    free(text);
    return ok;
}

/* Is process pid in <own>/<name>/launcher (name: fitrun-<pid>[-k]), or still in <own>
 * (making its sub-tree, about to move)? Only the process that made that
 * cgroup moves itself there under that pid (its zygote and workers there
 * have other pids and die with it), whatever its binary is called. (self:
 * our own path, which is own's while this runs: before we move.) */
static bool owner_alive(pid_t pid, const char *name, const struct fr_cgroup_hier *h, const char *self)
{
    char id[16], path[CG_PATH], want[CG_PATH];
    snprintf(id, sizeof id, "%d", (int)pid);
    if (!cgroup_path_of(id, h, path, sizeof path))
        return false;
    int r = snprintf(want, sizeof want, "%s/%s/" CG_LAUNCHER, strcmp(self, "/") ? self : "", name);
    return !strcmp(path, self) || (r > 0 && (size_t)r < sizeof want && !strcmp(path, want));
}

static void add_note(char *note, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_note(char *note, size_t n, const char *fmt, ...)
{
    size_t used = strlen(note);
    if (used + 3 >= n)
        return;
    if (used) {
        memcpy(note + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note + used, n - used, fmt, ap);
    va_end(ap);
}

static bool is_worker(const char *name)
{
    size_t wl = strlen(CG_WORKER);
    if (strncmp(name, CG_WORKER, wl) || !name[wl])
        return false;
    for (const char *c = name + wl; *c; c++)
        if (!isdigit((unsigned char)*c))
            return false;
    return true;
}

/* Remove dir (a cgroup fitrun makes) after the children `ok` accepts
 * (NULL: it has none); the processes in it are killed first where `kill`
 * (the jobs' cgroups: what a dead run's jobs left). */
static bool remove_tree(const struct fr_cgroup_hier *h, const char *dir, bool (*ok)(const char *), bool recurse_jobs,
                        bool kill, char *note, size_t n)
{
    DIR *d = opendir(dir);
    bool clean = true;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char child[CG_PATH];
        if (!fr_dir_file(child, sizeof child, dir, e->d_name))
            clean = false;
        else if (recurse_jobs && !strcmp(e->d_name, CG_JOBS))
            clean &= remove_tree(h, child, is_worker, false, true, note, n);
        else if (ok && ok(e->d_name))
            clean &= remove_tree(h, child, NULL, false, kill, note, n);
        else {
            add_note(note, n, "%s: not made by fitrun: left there, with its parents", child);
            clean = false;
        }
    }
    if (d)
        closedir(d);
    if (!clean)
        return false;
    char err[CG_PATH + 256];
    if (kill)
        cg_kill_all(h, dir);
    if (cg_lib_delete(h, dir, err, sizeof err) < 0) {
        add_note(note, n, "%s", err);
        return false;
    }
    return true;
}

static bool launcher_or_jobs(const char *name)
{
    return !strcmp(name, CG_LAUNCHER) || !strcmp(name, CG_JOBS);
}

/* <own>/<name>/launcher in hierarchy h. */
static bool launcher_of(const struct fr_cgroup_hier *h, const char *name, char *buf, size_t n)
{
    char base[CG_PATH];
    return fr_dir_file(base, sizeof base, h->own, name) && fr_dir_file(buf, n, base, CG_LAUNCHER);
}

/* Does sub-tree name's launcher cgroup list a process in any hierarchy? */
static bool launcher_listed(const struct fr_cgroup_probe *p, const char *name)
{
    char dir[CG_PATH];
    for (int j = 0; j < p->nhier; j++)
        if (launcher_of(&p->hier[j], name, dir, sizeof dir) && cg_populated(&p->hier[j], dir))
            return true;
    return false;
}

/* Remove sub-tree name's launcher cgroup in every hierarchy (one already
 * gone counts). False as soon as one cannot be: a process is in it (EBUSY,
 * whatever its pid namespace) or the rmdir failed otherwise (in the
 * note); the sub-tree is then left alone. */
static bool remove_launchers(const struct fr_cgroup_probe *p, const char *name, char *note, size_t n)
{
    char dir[CG_PATH];
    for (int j = 0; j < p->nhier; j++) {
        if (!launcher_of(&p->hier[j], name, dir, sizeof dir))
            return false;
        if (rmdir(dir) == 0 || errno == ENOENT)
            continue;
        if (errno != EBUSY)
            add_note(note, n, "cannot remove cgroup %s: %s", dir, strerror(errno));
        return false;
    }
    return true;
}

int fr_cgroup_remove_stale(const struct fr_cgroup_probe *p, char *note, size_t n)
{
    int removed = 0;
    if (n)
        note[0] = '\0';
    char self[CG_PATH], err[512];
    if (!p->delegated || cg_lib_init(err, sizeof err) < 0)
        return 0;
    for (int i = 0; i < p->nhier; i++) {
        const struct fr_cgroup_hier *h = &p->hier[i];
        if (!cgroup_path_of("self", h, self, sizeof self))
            continue;
        DIR *d = opendir(h->own);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            pid_t pid = pid_of(e->d_name);
            char dir[CG_PATH];
            if (!pid || e->d_type != DT_DIR || !fr_dir_file(dir, sizeof dir, h->own, e->d_name))
                continue;
            /* Our own pid: an earlier process that had it (we make ours
             * later), or a run in another pid namespace that has it there
             * (its launcher cgroup says so, below). */
            if (pid != getpid() && owner_alive(pid, e->d_name, h, self))
                continue;
            if (launcher_listed(p, e->d_name) || !remove_launchers(p, e->d_name, note, n))
                continue;
            if (remove_tree(h, dir, launcher_or_jobs, true, false, note, n))
                removed++;
        }
        if (d)
            closedir(d);
    }
    if (removed && n) {
        char count[96];
        snprintf(count, sizeof count, "cgroups: removed %d sub-tree%s of dead fitrun processes", removed,
                 removed == 1 ? "" : "s");
        add_note(note, n, "%s", count);
    }
    return removed;
}
