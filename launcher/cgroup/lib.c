/* lib.c — libcgroup, which makes, configures, attaches and removes
 * fitrun's cgroups (Debian's libcgroup-dev 2.0.2, linked statically).
 *
 * How it names a cgroup: relative to the mount point of each controller,
 * which it reads from /proc/mounts (cgroup_init). Detection reads
 * /proc/self/mountinfo instead, whose root field says which cgroup a
 * mount shows (a container's bind-mounted leaf, a cgroup namespace);
 * libcgroup ignores it. So fitrun hands libcgroup names made from
 * detection's own directory minus libcgroup's mount point, and only where
 * the two mount points agree (probe.c checks).
 *
 * What the library does on the way, which decides where fitrun uses it:
 *  - its default logger prints errors to stdout, where `fitrun run`
 *    writes results: ours keeps the last message for fitrun's own error
 *    text and prints nothing;
 *  - cgroup_create_cgroup on v2 first writes "+<controller>" to the
 *    cgroup.subtree_control of every level from below the mount point
 *    down to the new cgroup's parent (a no-op where it is already on),
 *    and cannot make a v2 cgroup without a controller (tree.c makes the
 *    launcher's own cgroup itself, because of that);
 *  - cgroup_attach_task writes the calling thread's id to `tasks` (v1) or
 *    cgroup.procs (v2, after checking that the parent enabled the
 *    controllers): fitrun is single-threaded;
 *  - an empty name reads outside its buffer: the mount root is "/". */
#include <errno.h>
#include <libcgroup.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

static bool lib_ready;
static char lib_said[512]; /* the last error libcgroup logged */

__attribute__((format(printf, 3, 0))) static void lib_logger(void *userdata, int level, const char *fmt, va_list ap)
{
    (void)userdata;
    if (level > CGROUP_LOG_ERROR)
        return;
    vsnprintf(lib_said, sizeof lib_said, fmt, ap);
    lib_said[strcspn(lib_said, "\n")] = '\0';
}

/* "what: libcgroup's words (errno's words; what it logged)". */
static void lib_error(int rc, const char *what, char *err, size_t errlen)
{
    int e = cgroup_get_last_errno();
    char extra[600] = "";
    if (rc == ECGOTHER && e)
        snprintf(extra, sizeof extra, ": %s", strerror(e));
    if (lib_said[0])
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " (%s)", lib_said);
    fr_seterr(err, errlen, "%s: %s%s", what, cgroup_strerror(rc), extra);
    lib_said[0] = '\0';
}

int cg_lib_init(char *err, size_t errlen)
{
    if (lib_ready)
        return 0;
    /* Before cgroup_init, which installs the stdout logger when none is set. */
    cgroup_set_logger(lib_logger, CGROUP_LOG_ERROR, NULL);
    int rc = cgroup_init();
    if (rc) {
        lib_error(rc, "libcgroup: cgroup_init (reading /proc/cgroups and /proc/mounts)", err, errlen);
        return -1;
    }
    lib_ready = true;
    return 0;
}

const char *cg_lib_mount(unsigned ctl, char *buf, size_t n)
{
    char *mp = NULL;
    if (!lib_ready || cgroup_get_subsys_mount_point(cg_ctl_name(ctl), &mp) || !mp) {
        free(mp);
        return NULL;
    }
    snprintf(buf, n, "%s", mp);
    free(mp);
    return buf;
}

/* libcgroup's name of dir in hierarchy h: dir below the mount point. */
static bool lib_name(const struct fr_cgroup_hier *h, const char *dir, char *name, size_t n)
{
    size_t ml = strlen(h->mount);
    if (strncmp(dir, h->mount, ml) || (dir[ml] && dir[ml] != '/'))
        return false;
    int r = snprintf(name, n, "%s", dir[ml] ? dir + ml : "/");
    return r > 0 && (size_t)r < n;
}

/* A cgroup object for dir with h's controllers, or NULL with err. */
static struct cgroup *lib_cgroup(const struct fr_cgroup_hier *h, const char *dir, char *err, size_t errlen)
{
    char name[CG_PATH];
    if (!lib_ready) {
        fr_seterr(err, errlen, "%s: libcgroup is not initialised", dir);
        return NULL;
    }
    if (!lib_name(h, dir, name, sizeof name)) {
        fr_seterr(err, errlen, "%s is not below the mount point %s", dir, h->mount);
        return NULL;
    }
    struct cgroup *cg = cgroup_new_cgroup(name);
    for (unsigned bit = 1; cg && bit <= FR_CG_CPUACCT; bit <<= 1)
        if ((h->ctls & bit) && !cgroup_add_controller(cg, cg_ctl_name(bit))) {
            cgroup_free(&cg);
            cg = NULL;
        }
    if (!cg)
        fr_seterr(err, errlen, "%s: libcgroup: out of memory", dir);
    return cg;
}

static int lib_values(struct cgroup *cg, const struct cg_value *values, int nvalues, const char *dir, char *err,
                      size_t errlen)
{
    for (int i = 0; i < nvalues; i++) {
        struct cgroup_controller *c = cgroup_get_controller(cg, cg_ctl_name(values[i].ctl));
        int rc = c ? cgroup_add_value_string(c, values[i].file, values[i].value) : ECGINVAL;
        if (rc) {
            char what[CG_PATH + 64];
            snprintf(what, sizeof what, "%s/%s = %s", dir, values[i].file, values[i].value);
            lib_error(rc, what, err, errlen);
            return -1;
        }
    }
    return 0;
}

/* The cgroup dir with values, handed to libcgroup's create (true) or
 * modify call. */
static int lib_write(const struct fr_cgroup_hier *h, const char *dir, const struct cg_value *values, int nvalues,
                     bool create, char *err, size_t errlen)
{
    struct cgroup *cg = lib_cgroup(h, dir, err, errlen);
    if (!cg)
        return -1;
    int r = lib_values(cg, values, nvalues, dir, err, errlen);
    if (r == 0) {
        int rc = create ? cgroup_create_cgroup(cg, 1 /* ignore ownership: no chown */) : cgroup_modify_cgroup(cg);
        if (rc) {
            char what[CG_PATH + 64];
            snprintf(what, sizeof what, "cannot %s cgroup %s", create ? "create" : "configure", dir);
            lib_error(rc, what, err, errlen);
            r = -1;
        }
    }
    cgroup_free(&cg);
    return r;
}

int cg_lib_create(const struct fr_cgroup_hier *h, const char *dir, const struct cg_value *values, int nvalues,
                  char *err, size_t errlen)
{
    return lib_write(h, dir, values, nvalues, true, err, errlen);
}

int cg_lib_modify(const struct fr_cgroup_hier *h, const char *dir, const struct cg_value *values, int nvalues,
                  char *err, size_t errlen)
{
    return lib_write(h, dir, values, nvalues, false, err, errlen);
}

int cg_lib_attach_self(const struct fr_cgroup_hier *h, const char *dir, char *err, size_t errlen)
{
    struct cgroup *cg = lib_cgroup(h, dir, err, errlen);
    if (!cg)
        return -1;
    int rc = cgroup_attach_task(cg);
    cgroup_free(&cg);
    if (rc) {
        char what[CG_PATH + 64];
        snprintf(what, sizeof what, "cannot move fitrun (pid %d) into cgroup %s", (int)getpid(), dir);
        lib_error(rc, what, err, errlen);
        return -1;
    }
    return 0;
}

int cg_lib_delete(const struct fr_cgroup_hier *h, const char *dir, char *err, size_t errlen)
{
    struct cgroup *cg = lib_cgroup(h, dir, err, errlen);
    if (!cg)
        return -1;
    int rc = cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY);
    cgroup_free(&cg);
    if (rc) {
        char what[CG_PATH + 64];
        snprintf(what, sizeof what, "cannot remove cgroup %s", dir);
        lib_error(rc, what, err, errlen);
        return -1;
    }
    return 0;
}

int cg_lib_procs(const struct fr_cgroup_hier *h, const char *dir, pid_t **pids, int *n)
{
    char name[CG_PATH];
    *pids = NULL;
    *n = 0;
    if (!lib_ready || !lib_name(h, dir, name, sizeof name))
        return -1;
    /* Any of the hierarchy's controllers names it. */
    unsigned bit = h->ctls & FR_CG_MEMORY ? FR_CG_MEMORY : h->ctls & FR_CG_PIDS ? FR_CG_PIDS : FR_CG_CPUACCT;
    return cgroup_get_procs(name, (char *)cg_ctl_name(bit), pids, n) ? -1 : 0;
}
