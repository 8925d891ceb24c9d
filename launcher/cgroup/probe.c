/* probe.c — is the cgroup fitrun started in delegated to it: may it make
 * a sub-tree there, and with which controllers? Reads files only.
 *
 * Wanted: memory (the limit, OOM kills, peak), pids (pids.max) and, on
 * v1, cpuacct (CPU time; v2 has cpu.stat in every cgroup). Each counts
 * when detection found this process's own cgroup for it (not a fallback
 * to a mount point, fitrun/detect.h), libcgroup sees the same mount point
 * (lib.c), and:
 *
 *   v1  the directory and its `tasks` are writable (not a read-only
 *       mount, as containers have): fitrun makes children there and moves
 *       itself into one and back;
 *   v2  the controller is in the cgroup's cgroup.controllers (enabled by
 *       its parent: partial delegation gives some, not all), and the
 *       cgroup can hold children with controllers. That needs it to hold
 *       no process (the no-internal-process rule) once fitrun has moved
 *       into its launcher cgroup: no process but fitrun may be in it
 *       (the hierarchy's root is exempt). Its directory, cgroup.procs and
 *       cgroup.subtree_control must be writable, and so must the
 *       cgroup.subtree_control of every level between the mount point
 *       and it: libcgroup writes "+<controller>" there (lib.c).
 *
 * Whatever is not delegated is said in the reason, with its cause. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#define PROBE_FILE_MAX (1u << 20) /* cgroup.procs of a busy cgroup */

struct probe_ctx {
    struct fr_cgroup_probe *out;
    char whys[FR_CG_REASON_MAX]; /* "not pids: ...; not cpuacct: ..." */
    unsigned wanted;
};

static void why_not(struct probe_ctx *c, unsigned ctls, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why_not(struct probe_ctx *c, unsigned ctls, const char *fmt, ...)
{
    char names[64], text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t used = strlen(c->whys);
    snprintf(c->whys + used, sizeof c->whys - used, "%snot %s: %s", used ? "; " : "",
             cg_ctl_list(ctls, names, sizeof names), text);
}

static const char *errtext(int neg_errno)
{
    return neg_errno == -EROFS ? "mounted read-only" : strerror(-neg_errno);
}

int cg_hier_of(const struct fr_cgroup_probe *p, unsigned ctl)
{
    for (int i = 0; i < p->nhier; i++)
        if (p->hier[i].ctls & ctl)
            return i;
    return -1;
}

/* Add ctl to the hierarchy mounted at loc->mount (one per mount). */
static void take(struct fr_cgroup_probe *p, unsigned ctl, const struct fr_cgroup_loc *loc)
{
    for (int i = 0; i < p->nhier; i++)
        if (!strcmp(p->hier[i].mount, loc->mount)) {
            p->hier[i].ctls |= ctl;
            return;
        }
    if (p->nhier >= FR_CG_HIER_MAX)
        return;
    struct fr_cgroup_hier *h = &p->hier[p->nhier++];
    h->version = loc->version;
    h->ctls = ctl;
    snprintf(h->mount, sizeof h->mount, "%s", loc->mount);
    snprintf(h->own, sizeof h->own, "%s", loc->dir);
}

/* Checks every controller needs, on either version. */
static bool usable(struct probe_ctx *c, unsigned ctl, const struct fr_cgroup_loc *loc)
{
    char mp[FR_SOURCE_MAX];
    if (!loc->version) {
        why_not(c, ctl, "no cgroup hierarchy carries it");
        return false;
    }
    if (!loc->own) {
        why_not(c, ctl, "this process's own cgroup directory is not visible (detection reads %s instead)", loc->dir);
        return false;
    }
    if (!cg_lib_mount(ctl, mp, sizeof mp)) {
        why_not(c, ctl, "libcgroup does not know it");
        return false;
    }
    if (strcmp(mp, loc->mount)) {
        why_not(c, ctl, "libcgroup uses the mount %s (the first in /proc/mounts), detection %s", mp, loc->mount);
        return false;
    }
    int w = cg_writable(loc->dir);
    if (w < 0) {
        why_not(c, ctl, "%s is not writable (%s)", loc->dir, errtext(w));
        return false;
    }
    return true;
}

static void probe_v1(struct probe_ctx *c, unsigned ctl, const struct fr_cgroup_loc *loc)
{
    char path[CG_PATH];
    if (!usable(c, ctl, loc))
        return;
    /* fitrun moves back here before it removes its cgroups. */
    int w = fr_dir_file(path, sizeof path, loc->dir, "tasks") ? cg_writable(path) : -ENAMETOOLONG;
    if (w < 0) {
        why_not(c, ctl, "%s is not writable (%s)", path, errtext(w));
        return;
    }
    take(c->out, ctl, loc);
}

static char *read_in(const char *dir, const char *name, int *err)
{
    char path[CG_PATH];
    if (!fr_dir_file(path, sizeof path, dir, name)) {
        *err = ENAMETOOLONG;
        return NULL;
    }
    char *text = fr_read_file(path, PROBE_FILE_MAX, NULL);
    *err = text ? 0 : errno;
    return text;
}

/* Every level strictly between the mount point and own: libcgroup writes
 * "+<controller>" to its cgroup.subtree_control (a no-op, as the
 * controller reached own through it). 0, or -errno with the path. */
static int levels_writable(const char *mount, const char *own, char *bad, size_t n)
{
    size_t ml = strlen(mount);
    char dir[CG_PATH], path[CG_PATH];
    snprintf(dir, sizeof dir, "%s", own);
    for (char *slash = strrchr(dir, '/'); slash && (size_t)(slash - dir) > ml; slash = strrchr(dir, '/')) {
        *slash = '\0'; /* dir: the next level up */
        if (strlen(dir) <= ml)
            break;
        int w = fr_dir_file(path, sizeof path, dir, "cgroup.subtree_control") ? cg_writable(path) : -ENAMETOOLONG;
        if (w < 0) {
            snprintf(bad, n, "%s", path);
            return w;
        }
    }
    return 0;
}

/* The v2 hierarchy as a whole: can own hold children with controllers? */
static bool v2_tree_ok(struct probe_ctx *c, unsigned ctls, const struct fr_cgroup_loc *loc)
{
    int e;
    char path[CG_PATH];
    char *type = read_in(loc->dir, "cgroup.type", &e);
    c->out->own_is_root = !type && e == ENOENT; /* only the real root has none */
    bool domain = !type || !strncmp(type, "domain\n", 7) || !strcmp(type, "domain");
    if (!domain) {
        why_not(c, ctls, "%s is a %.*s cgroup (threaded cgroups hold threads, not children with controllers)", loc->dir,
                (int)strcspn(type, "\n"), type);
        free(type);
        return false;
    }
    free(type);
    if (!c->out->own_is_root) {
        char *procs = read_in(loc->dir, "cgroup.procs", &e);
        if (!procs) {
            why_not(c, ctls, "cannot read %s/cgroup.procs: %s", loc->dir, strerror(e));
            return false;
        }
        int others = cg_count_others(procs, getpid());
        free(procs);
        if (others) {
            why_not(c, ctls,
                    "%s holds %d other process%s: cgroup v2 gives child cgroups controllers only where their parent "
                    "holds no process, and fitrun moves only itself (run it alone in its cgroup: systemd "
                    "Delegate=yes, a container whose only process it is, a leaf of its own)",
                    loc->dir, others, others == 1 ? "" : "es");
            return false;
        }
    }
    static const char *const files[] = {"cgroup.procs", "cgroup.subtree_control"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        int w = fr_dir_file(path, sizeof path, loc->dir, files[i]) ? cg_writable(path) : -ENAMETOOLONG;
        if (w < 0) {
            why_not(c, ctls, "%s is not writable (%s)", path, errtext(w));
            return false;
        }
    }
    char bad[CG_PATH];
    int w = levels_writable(loc->mount, loc->dir, bad, sizeof bad);
    if (w < 0) {
        why_not(c, ctls,
                "libcgroup 2.0.2 writes cgroup.subtree_control at every level between the mount point and the new "
                "cgroup, and %s is not writable (%s)",
                bad, errtext(w));
        return false;
    }
    return true;
}

static void probe_v2(struct probe_ctx *c, const struct fr_resources *res)
{
    static const struct {
        unsigned ctl;
        enum fr_controller at;
    } v2[] = {{FR_CG_MEMORY, FR_CTL_MEMORY}, {FR_CG_PIDS, FR_CTL_PIDS}};
    int e;
    unsigned ok = 0;
    const struct fr_cgroup_loc *loc = NULL;
    char *ctls = NULL, *subtree = NULL;
    for (size_t i = 0; i < sizeof v2 / sizeof v2[0]; i++) {
        const struct fr_cgroup_loc *l = &res->cgroup[v2[i].at];
        if (l->version != 2 || !usable(c, v2[i].ctl, l))
            continue;
        if (!ctls && !(ctls = read_in(l->dir, "cgroup.controllers", &e))) {
            why_not(c, v2[i].ctl, "cannot read %s/cgroup.controllers: %s", l->dir, strerror(e));
            continue;
        }
        if (!cg_has_word(ctls, cg_ctl_name(v2[i].ctl))) {
            why_not(c, v2[i].ctl, "not in %s/cgroup.controllers (its parent does not delegate it)", l->dir);
            continue;
        }
        ok |= v2[i].ctl;
        loc = l;
    }
    if (ok && v2_tree_ok(c, ok, loc)) {
        subtree = read_in(loc->dir, "cgroup.subtree_control", &e);
        for (unsigned bit = FR_CG_MEMORY; bit <= FR_CG_PIDS; bit <<= 1)
            if (ok & bit) {
                take(c->out, bit, loc);
                if (!subtree || !cg_has_word(subtree, cg_ctl_name(bit)))
                    c->out->enable |= bit;
            }
    }
    free(ctls);
    free(subtree);
}

void fr_cgroup_probe(const struct fr_resources *res, enum fr_cgroup_mode mode, struct fr_cgroup_probe *out)
{
    memset(out, 0, sizeof *out);
    if (mode == FR_CGROUPS_OFF) {
        snprintf(out->reason, sizeof out->reason, "cgroups = off in the profile");
        return;
    }
    struct probe_ctx c = {.out = out};
    char err[FR_CG_REASON_MAX];
    if (cg_lib_init(err, sizeof err) < 0) {
        snprintf(out->reason, sizeof out->reason, "%s", err);
        return;
    }
    const struct fr_cgroup_loc *mem = &res->cgroup[FR_CTL_MEMORY], *pids = &res->cgroup[FR_CTL_PIDS];
    /* v1 hierarchies, each on its own; a v2 one as a whole. */
    if (mem->version == 1)
        probe_v1(&c, FR_CG_MEMORY, mem);
    if (pids->version == 1)
        probe_v1(&c, FR_CG_PIDS, pids);
    if (mem->version == 1 || pids->version == 1 || res->cgroup_cpuacct.version == 1)
        probe_v1(&c, FR_CG_CPUACCT, &res->cgroup_cpuacct);
    if (mem->version == 2 || pids->version == 2)
        probe_v2(&c, res);
    if (!mem->version && !pids->version && !res->cgroup_cpuacct.version)
        why_not(&c, FR_CG_MEMORY | FR_CG_PIDS, "no cgroup hierarchy carries them");
    for (int i = 0; i < out->nhier; i++) {
        out->ctls |= out->hier[i].ctls;
        if (out->hier[i].version > out->version)
            out->version = out->hier[i].version;
    }
    out->delegated = out->ctls != 0;
    char names[64];
    if (out->delegated) {
        int r = snprintf(out->reason, sizeof out->reason, "%s (cgroup v%d)",
                         cg_ctl_list(out->ctls, names, sizeof names), out->version);
        if (c.whys[0] && r > 0 && (size_t)r + 2 < sizeof out->reason)
            snprintf(out->reason + r, sizeof out->reason - (size_t)r, "; %.*s",
                     (int)(sizeof out->reason - (size_t)r - 3), c.whys);
    } else
        snprintf(out->reason, sizeof out->reason, "%s", c.whys[0] ? c.whys : "no cgroup controller fitrun uses");
}
