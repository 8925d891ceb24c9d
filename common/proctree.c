/* proctree.c — the CPU time of a process tree, read from /proc while it
 * runs (see fitrun/common.h): the clocks of every process in it and what
 * each of them already reaped. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/common.h"

/* Fields 14-17 of /proc/<pid>/stat (utime, stime, cutime, cstime, in
 * clock ticks); false when the process is gone or the line is not one. */
static bool stat_times(pid_t pid, unsigned long long t[4])
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *text = fr_read_file(path, 4096, NULL);
    /* The command name (field 2) may hold spaces and ')': fields are
     * counted from the last ')'. */
    char *p = text ? strrchr(text, ')') : NULL;
    bool ok = p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &t[0], &t[1],
                          &t[2], &t[3]) == 4;
    free(text);
    return ok;
}

static uint64_t ticks_ns(unsigned long long ticks)
{
    static long hz;
    if (!hz && (hz = sysconf(_SC_CLK_TCK)) <= 0)
        hz = 100;
    return (uint64_t)ticks * (1000000000u / (uint64_t)hz);
}

/* One process: its own CPU (the clock, ns; from stat when the clock
 * cannot be read, as for a zombie) plus what it reaped. */
static uint64_t process_ns(pid_t pid)
{
    unsigned long long t[4];
    if (!stat_times(pid, t))
        return 0;
    uint64_t own = ticks_ns(t[0] + t[1]);
    clockid_t cid;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &cid) == 0 && clock_gettime(cid, &ts) == 0)
        own = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return own + ticks_ns(t[2] + t[3]);
}

/* The most processes one walk lists: far above any job's (its pids or
 * processes limit), and a bound on the list whatever /proc says while
 * pids are reused under it. */
#define TREE_MAX (1u << 20)

/* Append the children of every thread of pid to *list (n, cap); false
 * when memory ran out or the list is full (the walk then counts what it
 * has). */
static bool add_children(pid_t pid, pid_t **list, size_t *n, size_t *cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    struct dirent *t;
    bool ok = true;
    while (ok && d && (t = readdir(d))) {
        if (t->d_name[0] < '0' || t->d_name[0] > '9')
            continue;
        char kids_path[320];
        snprintf(kids_path, sizeof kids_path, "/proc/%d/task/%s/children", (int)pid, t->d_name);
        char *kids = fr_read_file(kids_path, 1 << 16, NULL);
        for (char *k = kids, *end; ok && k && *k; k = end) {
            long c = strtol(k, &end, 10);
            if (end == k)
                break;
            if (*n == TREE_MAX) {
                ok = false;
                break;
            }
            if (*n == *cap) {
                size_t ncap = *cap ? *cap * 2 : 64;
                pid_t *nl = realloc(*list, ncap * sizeof *nl);
                if (!nl) {
                    ok = false;
                    break;
                }
                *list = nl;
                *cap = ncap;
            }
            (*list)[(*n)++] = (pid_t)c;
        }
        free(kids);
    }
    if (d)
        closedir(d);
    return ok;
}

uint64_t fr_descendants_cpu_ns(pid_t pid)
{
    if (pid <= 0)
        return 0;
    /* Breadth first over a list that grows as it is read: no recursion,
     * however deep the tree (a chain of processes). A parent is read
     * before its children. A pid listed twice (reused between two reads)
     * is counted twice; TREE_MAX bounds the list even then. */
    pid_t *list = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    bool ok = add_children(pid, &list, &n, &cap);
    for (size_t i = 0; i < n; i++) {
        total += process_ns(list[i]);
        if (ok)
            ok = add_children(list[i], &list, &n, &cap);
    }
    free(list);
    return total;
}

uint64_t fr_tree_cpu_ns(pid_t pid)
{
    return pid > 0 ? process_ns(pid) + fr_descendants_cpu_ns(pid) : 0;
}
