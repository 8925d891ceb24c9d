/* mountinfo.c — which cgroup hierarchy is mounted where, and /dev/shm.
 *
 * /proc/self/mountinfo (proc(5)):
 *   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
 *   id par dev root point opts [optional fields...] - fstype source super-opts
 * The number of optional fields varies (zero or more, "shared:N",
 * "master:N", "propagate_from:N", "unbindable"): they end at the lone "-".
 * Space, tab, newline and backslash in paths are written as \040 \011 \012
 * \134. For cgroup v1 the super options name the controllers ("rw,cpu,cpuacct",
 * "rw,name=systemd"); cgroup2 lists none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const fr_ctl_names[FR_CTL_COUNT] = {"cpu", "cpuset", "memory", "pids"};

static int octal_digit(char c)
{
    return c >= '0' && c <= '7' ? c - '0' : -1;
}

void fr_unescape_octal(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == '\\' && octal_digit(r[1]) >= 0 && octal_digit(r[2]) >= 0 && octal_digit(r[3]) >= 0) {
            int v = octal_digit(r[1]) * 64 + octal_digit(r[2]) * 8 + octal_digit(r[3]);
            if (v > 0 && v < 256) { /* \000 would cut the string: keep it literal */
                *w++ = (char)v;
                r += 4;
                continue;
            }
        }
        *w++ = *r++;
    }
    *w = '\0';
}

/* Next space-separated field of *cursor (in place), or NULL at the end. */
static char *next_field(char **cursor)
{
    char *p = *cursor;
    while (*p == ' ')
        p++;
    if (!*p)
        return NULL;
    char *start = p;
    while (*p && *p != ' ')
        p++;
    if (*p)
        *p++ = '\0';
    *cursor = p;
    return start;
}

int fr_mountinfo_parse_line(char *line, struct fr_mountinfo_entry *e, const char **why)
{
    char *cur = line, *f[6];
    for (int i = 0; i < 6; i++) {
        f[i] = next_field(&cur);
        if (!f[i]) {
            *why = "fewer than 6 fields before the separator";
            return -1;
        }
    }
    /* Skip the optional fields up to the lone "-". */
    char *sep;
    while ((sep = next_field(&cur)) && strcmp(sep, "-"))
        ;
    if (!sep) {
        *why = "no ' - ' separator";
        return -1;
    }
    e->fstype = next_field(&cur);
    e->source = next_field(&cur);
    if (!e->fstype || !e->source) {
        *why = "no filesystem type or source after ' - '";
        return -1;
    }
    e->super_opts = next_field(&cur);
    if (!e->super_opts) /* "" (very old kernels print none); cur may still hold blanks */
        e->super_opts = cur + strlen(cur);
    if (f[3][0] != '/' || f[4][0] != '/') {
        *why = "root or mount point is not an absolute path";
        return -1;
    }
    e->root = f[3];
    e->mountpoint = f[4];
    fr_unescape_octal(e->root);
    fr_unescape_octal(e->mountpoint);
    fr_unescape_octal(e->source);
    return 0;
}

bool fr_opt_has(const char *opts, const char *opt)
{
    size_t l = strlen(opt);
    for (const char *p = opts; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == l && !strncmp(p, opt, l))
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

bool fr_opt_value(const char *opts, const char *key, char *buf, size_t n)
{
    size_t kl = strlen(key);
    for (const char *p = opts; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > kl && !strncmp(p, key, kl) && p[kl] == '=') {
            snprintf(buf, n, "%.*s", (int)(len - kl - 1), p + kl + 1);
            return true;
        }
        p = end ? end + 1 : NULL;
    }
    return false;
}

static bool under_sys_fs_cgroup(const char *mp)
{
    static const char base[] = "/sys/fs/cgroup";
    size_t l = sizeof base - 1;
    return !strncmp(mp, base, l) && (mp[l] == '\0' || mp[l] == '/');
}

/* Keep the better of the current choice and a new candidate. A mount under
 * /sys/fs/cgroup beats one elsewhere (a tool's private mount, a bind mount
 * for a sidecar); at equal rank the first one stays, unless the new one
 * is mounted on the same point, so it hides the old one. */
static void consider(struct fr_dx *x, struct fr_dx_mount *m, const struct fr_mountinfo_entry *e, int lineno)
{
    bool pref = under_sys_fs_cgroup(e->mountpoint);
    bool take = !m->found || (pref && !m->preferred) || (pref == m->preferred && !strcmp(m->mountpoint, e->mountpoint));
    if (!take)
        return;
    if (strlen(e->mountpoint) >= sizeof m->mountpoint || strlen(e->root) >= sizeof m->root) {
        fr_detect_note(x->res, "/proc/self/mountinfo line %d: path too long: ignored", lineno);
        return;
    }
    m->found = true;
    m->preferred = pref;
    strcpy(m->mountpoint, e->mountpoint);
    strcpy(m->root, e->root);
}

static void scan_line(struct fr_dx *x, struct fr_mountinfo_entry *e, int lineno)
{
    if (!strcmp(e->fstype, "cgroup")) {
        for (int c = 0; c < FR_CTL_COUNT; c++)
            if (fr_opt_has(e->super_opts, fr_ctl_names[c]))
                consider(x, &x->v1m[c], e, lineno);
        if (fr_opt_has(e->super_opts, "cpuacct"))
            consider(x, &x->v1acct, e, lineno);
    } else if (!strcmp(e->fstype, "cgroup2")) {
        consider(x, &x->v2m, e, lineno);
    } else if (!strcmp(e->mountpoint, "/dev/shm")) {
        /* Stacked mounts: the last one listed is the one on top. */
        x->shm_found = true;
        fr_copy(x->shm_fstype, sizeof x->shm_fstype, e->fstype);
        if (!fr_opt_value(e->super_opts, "size", x->shm_size_opt, sizeof x->shm_size_opt))
            x->shm_size_opt[0] = '\0';
    }
}

void fr_mounts_scan(struct fr_dx *x, char *text, const char *path)
{
    int lineno = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        lineno++;
        if (!*line)
            continue;
        struct fr_mountinfo_entry e;
        const char *why = NULL;
        if (fr_mountinfo_parse_line(line, &e, &why) < 0) {
            fr_detect_note(x->res, "%s line %d: %s: ignored", path, lineno, why);
            continue;
        }
        scan_line(x, &e, lineno);
    }
}
