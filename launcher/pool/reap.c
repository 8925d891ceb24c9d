/* reap.c — the orphan reaper. fitrun is a child subreaper, so every
 * process that escapes a job (double fork, setsid, a parent that exited)
 * is re-parented to fitrun instead of init. A job's descendants are thus
 * always either in its process group, or below a process that is, or a
 * direct child of fitrun: killing the group and then, repeatedly, every
 * child fitrun does not know, kills the whole tree — and "fitrun has no
 * child left" means "no process of any job is left". The one child that
 * is no job's, the cgroup tree's janitor (fitrun/cgroup.h), is `keep`:
 * never killed here (the tree stops it at its end).
 *
 * Children are listed from /proc/self/task/<tid>/children (pids are stable:
 * a child's pid cannot be reused before we reap it, so kill() never hits a
 * stranger). When that file is missing (CONFIG_PROC_CHILDREN=n), /proc is
 * scanned for processes whose parent is us. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

int reaper_own(struct reaper *r, pid_t pid)
{
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 16;
        pid_t *np = realloc(r->owned, ncap * sizeof *np);
        if (!np)
            return -1;
        r->owned = np;
        r->cap = ncap;
    }
    r->owned[r->n++] = pid;
    return 0;
}

void reaper_disown(struct reaper *r, pid_t pid)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->owned[i] == pid) {
            r->owned[i] = r->owned[--r->n];
            return;
        }
    }
}

void reaper_free(struct reaper *r)
{
    free(r->owned);
    memset(r, 0, sizeof *r);
}

static bool owned(const struct reaper *r, pid_t pid)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->owned[i] == pid)
            return true;
    return false;
}

/* Fields 4 (ppid) and 6 (session) of /proc/<pid>/stat; the command name
 * (field 2) may contain spaces and ')' so parsing starts after the last ')'. */
static int proc_stat(pid_t pid, pid_t *ppid, pid_t *sid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    int pp, pg, ss;
    char state;
    if (!p || sscanf(p + 1, " %c %d %d %d", &state, &pp, &pg, &ss) != 4)
        return -1;
    *ppid = pp;
    *sid = ss;
    return 0;
}

/* Append pid to a growing array; false when memory ran out (the list
 * gathered so far is kept: reaping what we know of beats reaping nothing). */
static bool push_pid(pid_t **arr, size_t *n, size_t *cap, pid_t pid)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        pid_t *np = realloc(*arr, ncap * sizeof *np);
        if (!np)
            return false;
        *arr = np;
        *cap = ncap;
    }
    (*arr)[(*n)++] = pid;
    return true;
}

/* Our children, as a malloc'd array (count in *n). NULL + *n = 0 if none
 * or on error. */
static pid_t *list_children(size_t *n)
{
    char path[64];
    *n = 0;
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    size_t len;
    char *text = fr_read_file(path, 1 << 20, &len);
    pid_t *out = NULL;
    size_t cap = 0;
    if (text) {
        for (char *s = text; *s;) {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s || !push_pid(&out, n, &cap, (pid_t)v))
                break;
            s = end;
            while (*s == ' ' || *s == '\n')
                s++;
        }
        free(text);
        return out;
    }
    /* Fallback: scan /proc. */
    DIR *d = opendir("/proc");
    if (!d)
        return NULL;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid_t pid = (pid_t)atol(e->d_name), ppid, sid;
        if (proc_stat(pid, &ppid, &sid) < 0 || ppid != self)
            continue;
        if (!push_pid(&out, n, &cap, pid))
            break;
    }
    closedir(d);
    return out;
}

static bool in_sessions(pid_t sid, const pid_t *sessions, int n)
{
    for (int i = 0; i < n; i++)
        if (sessions[i] && sessions[i] == sid)
            return true;
    return false;
}

void reaper_sweep(struct reaper *r, const pid_t *sessions, int nsessions)
{
    size_t n;
    pid_t *kids = list_children(&n);
    for (size_t i = 0; i < n; i++) {
        pid_t pid = kids[i], ppid, sid;
        if (owned(r, pid) || pid == r->keep)
            continue;
        if (proc_stat(pid, &ppid, &sid) == 0 && in_sessions(sid, sessions, nsessions))
            continue; /* belongs to a job that is still running */
        /* Not ours to keep: an orphan of a finished job, or one that left
         * its job's session. It is our child, so the pid is still its. */
        if (kill(pid, SIGKILL) < 0 && errno != ESRCH)
            fr_warn("cannot kill orphan %d: %s", (int)pid, strerror(errno));
        while (waitpid(pid, NULL, WNOHANG) < 0 && errno == EINTR)
            ;
    }
    free(kids);
}

uint64_t reaper_session_cpu_ns(const struct reaper *r, pid_t sid)
{
    size_t n;
    pid_t *kids = sid ? list_children(&n) : NULL;
    uint64_t total = 0;
    for (size_t i = 0; kids && i < n; i++) {
        pid_t pid = kids[i], ppid, s;
        if (!owned(r, pid) && pid != r->keep && proc_stat(pid, &ppid, &s) == 0 && s == sid)
            total += fr_tree_cpu_ns(pid);
    }
    free(kids);
    return total;
}

int reaper_final(struct reaper *r, int timeout_ms)
{
    uint64_t until = fr_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        size_t n;
        pid_t *kids = list_children(&n);
        size_t left = 0;
        for (size_t i = 0; i < n; i++) {
            if (kids[i] == r->keep)
                continue;
            left++;
            kill(kids[i], SIGKILL);
            while (waitpid(kids[i], NULL, WNOHANG) < 0 && errno == EINTR)
                ;
            reaper_disown(r, kids[i]);
        }
        free(kids);
        /* Reap whatever else exited meanwhile (children not yet listed). */
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        if (left == 0)
            return 0;
        if (fr_now_ns() >= until)
            return (int)left;
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
