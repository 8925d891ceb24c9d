/* tree.c — fitrun's sub-tree beneath the cgroup it started in: made
 * before the runtime starts, its jobs' share set once the runtime runs,
 * removed at the end, with everything made undone in reverse order when
 * a step fails half-way.
 *
 *   <own>/fitrun-<pid>/launcher         fitrun moves itself here first, so
 *                                       the zygote and the workers start here
 *   <own>/fitrun-<pid>/jobs             memory: what the launcher leaves of
 *                                       the tightest limit (settle)
 *   <own>/fitrun-<pid>/jobs/worker-<k>  [sandbox] memory and no swap,
 *                                       processes; v2 memory.oom.group
 *
 * Order, and why (v2): a cgroup can give its children controllers only
 * while it holds no process, so fitrun first makes fitrun-<pid> and
 * launcher and moves into launcher; only then are the controllers
 * switched on in own's cgroup.subtree_control. At the end the same in
 * reverse: jobs' processes killed, the cgroups removed, the controllers
 * switched off again (base first: a parent cannot drop a controller its
 * child passes on), fitrun back in own, launcher and fitrun-<pid> removed.
 * fitrun never moves a process anywhere but into a cgroup it made beneath
 * own, and back into own. On v1 nothing has to be switched on.
 *
 * v2: once fitrun is in launcher it forks its janitor there (janitor.c),
 * which runs the same undo if fitrun dies without it; fitrun stops it
 * once it is back in own, before launcher goes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#define MIB (1ull << 20)
#define JOBS_FLOOR (16 * MIB) /* the least the jobs' cgroup is given */
#define FILES_PER_SLOT 8      /* descriptors a slot keeps open */

/* <base of hierarchy i>[/rel] */
static bool path_in(const struct fr_cgroup_tree *t, int i, const char *rel, char *buf, size_t n)
{
    int r = rel ? snprintf(buf, n, "%s/%s", t->base[i], rel) : snprintf(buf, n, "%s", t->base[i]);
    return r > 0 && (size_t)r < n;
}

static bool worker_dir(const struct fr_cgroup_tree *t, int i, int k, char *buf, size_t n)
{
    char rel[64];
    snprintf(rel, sizeof rel, CG_JOBS "/" CG_WORKER "%d", k);
    return path_in(t, i, rel, buf, n);
}

bool fr_cgroup_tree_has(const struct fr_cgroup_tree *t, unsigned ctl)
{
    return t && (t->p.ctls & ctl);
}

unsigned fr_cgroup_tree_ctls(const struct fr_cgroup_tree *t)
{
    return t ? t->p.ctls : 0;
}

void fr_cgroup_policy_spec(unsigned ctls, struct fr_policy_spec *spec)
{
    if (ctls & FR_CG_MEMORY)
        spec->as_bytes = 0;
}

/* ---- the slots' files ----------------------------------------------------- */

static int open_in(const char *dir, const char *name, int flags)
{
    char path[CG_PATH];
    if (!fr_dir_file(path, sizeof path, dir, name)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(path, flags | O_CLOEXEC);
}

static void close_slot(struct cg_slot *s)
{
    int *fds[] = {&s->events, &s->peak, &s->cpu, &s->kill, &s->pids_cur, &s->pids_max};
    for (int i = 0; i < s->nprocs; i++)
        close(s->procs[i]);
    s->nprocs = 0;
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

/* The files of worker-<k> in hierarchy i that the per-job path uses. */
static int open_slot_files(struct fr_cgroup_tree *t, int i, int k, char *err, size_t errlen)
{
    const struct fr_cgroup_hier *h = &t->p.hier[i];
    struct cg_slot *s = &t->slots[k];
    char dir[CG_PATH];
    if (!worker_dir(t, i, k, dir, sizeof dir)) {
        fr_seterr(err, errlen, "cgroup path too long below %s", t->base[i]);
        return -1;
    }
    int fd = open_in(dir, "cgroup.procs", O_WRONLY);
    if (fd < 0) {
        fr_seterr(err, errlen, "cannot open %s/cgroup.procs: %s", dir, strerror(errno));
        return -1;
    }
    s->procs[s->nprocs++] = fd;
    if (h->ctls & FR_CG_MEMORY) {
        const char *events = h->version == 1 ? "memory.oom_control" : "memory.events";
        const char *peak = h->version == 1 ? "memory.max_usage_in_bytes" : "memory.peak";
        s->events = open_in(dir, events, O_RDONLY);
        if (s->events < 0) {
            fr_seterr(err, errlen, "cannot open %s/%s: %s", dir, events, strerror(errno));
            return -1;
        }
        (void)fr_dir_file(s->events_path, sizeof s->events_path, dir, events); /* "" when too long: messages say less */
        /* A write restarts the peak: v1 always, v2 from Linux 6.12 (per
         * open file, which is why it stays open). Before that memory.peak
         * is read-only and counts since the cgroup was made: not a job's. */
        s->peak = open_in(dir, peak, O_RDWR);
        s->peak_reset = s->peak >= 0;
    }
    /* pids.current also says when the cgroup is empty (slot.c), with or
     * without a limit. */
    if (h->ctls & FR_CG_PIDS)
        s->pids_cur = open_in(dir, "pids.current", O_RDONLY);
    if ((h->ctls & FR_CG_PIDS) && t->lim.pids) {
        s->pids_max = open_in(dir, "pids.max", O_WRONLY);
        s->pids_base = t->lim.pids;
    }
    if (h->ctls & FR_CG_CPUACCT) {
        s->cpu = open_in(dir, "cpuacct.usage", O_RDONLY);
        s->cpu_ns = true;
    }
    if (h->version == 2) {
        s->cpu = open_in(dir, "cpu.stat", O_RDONLY);
        s->cpu_ns = false;
        s->kill = open_in(dir, "cgroup.kill", O_WRONLY); /* Linux 5.14 */
    }
    return 0;
}

/* Room for the slots' descriptors under the open-file limit. */
static void raise_nofile(int nslots)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)nslots * FILES_PER_SLOT + 256;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
        rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* ---- values --------------------------------------------------------------- */

struct values {
    struct cg_value v[6];
    int n;
    char num[6][32];
};

static void add(struct values *vs, unsigned ctl, const char *file, uint64_t value)
{
    if (value)
        snprintf(vs->num[vs->n], sizeof vs->num[vs->n], "%llu", (unsigned long long)value);
    else
        snprintf(vs->num[vs->n], sizeof vs->num[vs->n], "max");
    vs->v[vs->n] = (struct cg_value){ctl, file, vs->num[vs->n]};
    vs->n++;
}

static bool exists_in(const char *dir, const char *name)
{
    char path[CG_PATH];
    struct stat st;
    return fr_dir_file(path, sizeof path, dir, name) && stat(path, &st) == 0;
}

/* A memory limit in hierarchy h, for a cgroup below `parent` (whose files
 * say which swap limit the kernel has): no swap beyond it. v1's memsw
 * limit must stay at or above the memory limit: set after it. */
static void memory_values(struct values *vs, const struct fr_cgroup_hier *h, const char *parent, uint64_t bytes)
{
    if (!bytes)
        return;
    if (h->version == 1) {
        add(vs, FR_CG_MEMORY, "memory.limit_in_bytes", bytes);
        if (exists_in(parent, "memory.memsw.limit_in_bytes"))
            add(vs, FR_CG_MEMORY, "memory.memsw.limit_in_bytes", bytes);
    } else {
        add(vs, FR_CG_MEMORY, "memory.max", bytes);
        if (exists_in(parent, "memory.swap.max"))
            vs->v[vs->n] = (struct cg_value){FR_CG_MEMORY, "memory.swap.max", "0"}, vs->n++;
    }
}

static void worker_values(const struct fr_cgroup_tree *t, const struct fr_cgroup_hier *h, const char *jobs,
                          struct values *vs)
{
    vs->n = 0;
    if (h->ctls & FR_CG_MEMORY) {
        memory_values(vs, h, jobs, t->lim.memory);
        /* An OOM kill takes the whole job, not one of its processes. */
        if (h->version == 2 && exists_in(jobs, "memory.oom.group"))
            vs->v[vs->n] = (struct cg_value){FR_CG_MEMORY, "memory.oom.group", "1"}, vs->n++;
    }
    if ((h->ctls & FR_CG_PIDS) && t->lim.pids)
        add(vs, FR_CG_PIDS, "pids.max", t->lim.pids);
}

/* ---- the jobs' share of the memory ---------------------------------------- */

/* Memory charged to dir (and below): v1 memory.usage_in_bytes, v2
 * memory.current. 0 when unknown (the v2 root has no such file). */
static uint64_t usage_of(const struct fr_cgroup_hier *h, const char *dir)
{
    char path[CG_PATH];
    uint64_t v = 0;
    if (!fr_dir_file(path, sizeof path, dir, h->version == 1 ? "memory.usage_in_bytes" : "memory.current"))
        return 0;
    char *text = fr_read_file(path, 4096, NULL);
    if (!text || !cg_text_u64(text, &v))
        v = 0;
    free(text);
    return v;
}

/* mem_limit minus what is not the jobs' (own's use outside jobs/, and
 * what fitrun keeps for its own growth), at least JOBS_FLOOR; 0 = no
 * limit to share. */
static uint64_t jobs_share(const struct fr_cgroup_tree *t, int mi, uint64_t jobs_use)
{
    if (!t->lim.mem_limit)
        return 0;
    uint64_t own = usage_of(&t->p.hier[mi], t->p.hier[mi].own);
    uint64_t others = own > jobs_use ? own - jobs_use : 0;
    uint64_t reserve = others + t->lim.keep;
    if (t->lim.mem_limit <= reserve || t->lim.mem_limit - reserve < JOBS_FLOOR)
        return JOBS_FLOOR < t->lim.mem_limit ? JOBS_FLOOR : t->lim.mem_limit;
    return t->lim.mem_limit - reserve;
}

void fr_cgroup_tree_settle(struct fr_cgroup_tree *t, char *note, size_t n)
{
    if (n)
        note[0] = '\0';
    int mi = t ? cg_hier_of(&t->p, FR_CG_MEMORY) : -1;
    if (mi < 0 || !t->lim.mem_limit)
        return;
    char jobs[CG_PATH], err[CG_PATH + 256], a[32], b[32];
    if (!path_in(t, mi, CG_JOBS, jobs, sizeof jobs))
        return;
    uint64_t share = jobs_share(t, mi, usage_of(&t->p.hier[mi], jobs));
    struct values vs = {.n = 0};
    /* v1: lowering moves the memory limit first, raising the memsw limit. */
    memory_values(&vs, &t->p.hier[mi], t->base[mi], share);
    if (vs.n == 2 && share > t->jobs_limit) {
        struct cg_value first = vs.v[0];
        vs.v[0] = vs.v[1];
        vs.v[1] = first;
    }
    if (cg_lib_modify(&t->p.hier[mi], jobs, vs.v, vs.n, err, sizeof err) < 0) {
        snprintf(note, n, "cgroups: the jobs keep %s of memory: %s", fr_format_size(t->jobs_limit, a, sizeof a), err);
        return;
    }
    t->jobs_limit = share;
    snprintf(note, n, "cgroups: jobs share %s of the %s memory limit; fitrun keeps the rest",
             fr_format_size(share, a, sizeof a), fr_format_size(t->lim.mem_limit, b, sizeof b));
}

const char *fr_cgroup_tree_summary(const struct fr_cgroup_tree *t, char *buf, size_t n)
{
    char names[64], mem[32], jobs[32];
    int mi = cg_hier_of(&t->p, FR_CG_MEMORY);
    int r = snprintf(buf, n, "cgroups: %d worker cgroup%s in %s/" CG_JOBS " (%s)", t->nslots, t->nslots == 1 ? "" : "s",
                     t->base[mi >= 0 ? mi : 0], cg_ctl_list(t->p.ctls, names, sizeof names));
    if (r > 0 && (size_t)r < n && mi >= 0)
        snprintf(buf + r, n - (size_t)r, ": memory %s per job, jobs together %s",
                 t->lim.memory ? fr_format_size(t->lim.memory, mem, sizeof mem) : "unlimited",
                 t->jobs_limit ? fr_format_size(t->jobs_limit, jobs, sizeof jobs) : "unlimited");
    return buf;
}

/* ---- undo ----------------------------------------------------------------- */

static void say(bool loud, const char *err)
{
    if (loud && err[0])
        fr_warn("%s", err);
}

/* "-memory -pids" / "+memory +pids" for ctls (v2 has no cpuacct). */
static const char *subtree_words(char sign, unsigned ctls, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (unsigned bit = FR_CG_MEMORY; bit <= FR_CG_PIDS; bit <<= 1)
        if ((ctls & bit) && k < n)
            k += (size_t)snprintf(buf + k, n - k, "%s%c%s", k ? " " : "", sign, cg_ctl_name(bit));
    return buf;
}

/* Switch controllers on or off in dir's cgroup.subtree_control: libcgroup
 * 2.0.2 switches them on only on its way to a new cgroup, and never off. */
static int subtree(const char *dir, char sign, unsigned ctls, char *err, size_t errlen)
{
    char path[CG_PATH], words[64];
    if (!ctls)
        return 0;
    int r = fr_dir_file(path, sizeof path, dir, "cgroup.subtree_control")
                ? cg_write(path, subtree_words(sign, ctls, words, sizeof words))
                : -ENAMETOOLONG;
    if (r < 0)
        fr_seterr(err, errlen, "cannot write '%s' to %s: %s", words, path, strerror(-r));
    return r;
}

/* Remove dir, killing what is still in it (v1 cgroup.procs lists a
 * cgroup's own processes only, so each worker is emptied itself). A
 * process killed here may be fitrun's own child (or an orphan it
 * inherited as subreaper): at the end of a run nobody else reaps it, and
 * until it is reaped it keeps the cgroup busy. */
static void remove_dir(struct fr_cgroup_tree *t, int i, const char *dir, bool loud)
{
    char err[CG_PATH + 256] = "";
    cg_kill_all(&t->p.hier[i], dir);
    for (int tries = 0; cg_lib_delete(&t->p.hier[i], dir, err, sizeof err) < 0; tries++) {
        if (tries * 10 >= CG_EMPTY_WAIT_MS) {
            say(loud, err);
            return;
        }
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        cg_sleep_ms(10); /* the last of its killed processes are leaving */
    }
}

static void undo(struct fr_cgroup_tree *t, bool loud)
{
    char dir[CG_PATH], err[CG_PATH + 256] = "";
    for (int k = 0; k < t->nslots && t->slots; k++)
        close_slot(&t->slots[k]);
    for (int i = 0; i < t->p.nhier; i++) {
        const struct fr_cgroup_hier *h = &t->p.hier[i];
        if (t->made_jobs[i] && path_in(t, i, CG_JOBS, dir, sizeof dir))
            cg_kill_all(h, dir);
        for (int k = t->made_workers[i] - 1; k >= 0; k--)
            if (worker_dir(t, i, k, dir, sizeof dir))
                remove_dir(t, i, dir, loud);
        t->made_workers[i] = 0;
        if (t->made_jobs[i] && path_in(t, i, CG_JOBS, dir, sizeof dir))
            remove_dir(t, i, dir, loud);
        t->made_jobs[i] = false;
        if (h->version == 2) {
            err[0] = '\0';
            if (t->enabled_base && subtree(t->base[i], '-', h->ctls, err, sizeof err) == 0)
                t->enabled_base = false;
            if (t->enabled_own && subtree(h->own, '-', t->enabled_own, err, sizeof err) == 0)
                t->enabled_own = 0;
            say(loud, err);
        }
        err[0] = '\0';
        if (t->moved[i] && cg_lib_attach_self(h, h->own, err, sizeof err) == 0)
            t->moved[i] = false;
        say(loud, err);
        /* The janitor lives in launcher: it goes before launcher does. */
        cg_janitor_stop(t);
        if (t->made_launcher[i] && path_in(t, i, CG_LAUNCHER, dir, sizeof dir) && !t->moved[i]) {
            remove_dir(t, i, dir, loud);
            t->made_launcher[i] = false;
        }
        if (t->made_base[i] && !t->made_launcher[i]) {
            remove_dir(t, i, t->base[i], loud);
            t->made_base[i] = false;
        }
    }
}

void fr_cgroup_tree_destroy(struct fr_cgroup_tree *t)
{
    if (!t)
        return;
    undo(t, true);
    free(t->slots);
    free(t);
}

/* The janitor's end (janitor.c), once fitrun is gone: undo t as if
 * everything fr_cgroup_tree_create makes existed and the calling process
 * (the janitor) were in launcher. What is not there is skipped: a cgroup
 * already gone counts as removed, a controller already off is switched
 * off without complaint. Silent: the janitor has no stderr. */
static void take_over(struct fr_cgroup_tree *t)
{
    for (int i = 0; i < t->p.nhier; i++) {
        const struct fr_cgroup_hier *h = &t->p.hier[i];
        t->made_base[i] = t->made_launcher[i] = t->moved[i] = t->made_jobs[i] = true;
        t->made_workers[i] = t->nslots;
        if (h->version == 2) {
            t->enabled_base = true;
            t->enabled_own |= t->p.enable & h->ctls;
        }
    }
    t->janitor = (struct cg_janitor){.pid = 0, .pidfd = -1, .fd = -1};
    undo(t, false);
}

/* ---- create --------------------------------------------------------------- */

#define CG_MAKE_TRIES 3  /* a neighbour removes a tree it finds empty once, as it starts */
#define CG_NAME_TRIES 64 /* fitrun-<pid>, then fitrun-<pid>-1 ... */

/* Was a cgroup of the tree made so far removed (by a neighbour's
 * stale.c) while this process had not yet moved into it? */
static bool removed_beneath(const struct fr_cgroup_tree *t)
{
    char dir[CG_PATH];
    for (int i = 0; i < t->p.nhier; i++) {
        if (t->made_base[i] && access(t->base[i], F_OK) < 0 && errno == ENOENT)
            return true;
        if (t->made_launcher[i] && path_in(t, i, CG_LAUNCHER, dir, sizeof dir) && access(dir, F_OK) < 0 &&
            errno == ENOENT)
            return true;
    }
    return false;
}

/* Make <own>/fitrun-<pid> in every hierarchy, each with mkdir(2) that
 * fails where the name exists: a run in another pid namespace that shares
 * this cgroup may have our pid there and a live tree of that name (two
 * runs that are each pid 1 of their own namespace), whose cgroups must
 * never be shared. A name taken in any hierarchy (a leftover fitrun could
 * not remove counts too) gives way to fitrun-<pid>-<k>, k = 1, 2, ... */
static int claim_name(struct fr_cgroup_tree *t, char *err, size_t errlen)
{
    for (int k = 0; k < CG_NAME_TRIES; k++) {
        char name[64];
        snprintf(name, sizeof name, k ? CG_PREFIX "%d-%d" : CG_PREFIX "%d", (int)t->pid, k);
        int i, e = 0;
        for (i = 0; i < t->p.nhier; i++) {
            const char *own = t->p.hier[i].own;
            if (snprintf(t->base[i], sizeof t->base[i], "%s/%s", strcmp(own, "/") ? own : "", name) >=
                (int)sizeof t->base[i]) {
                fr_seterr(err, errlen, "cgroup path too long below %s", own);
                return -1;
            }
            if (mkdir(t->base[i], 0755) < 0) {
                e = errno;
                break;
            }
            t->made_base[i] = true;
        }
        if (i == t->p.nhier)
            return 0;
        if (e != EEXIST) {
            fr_seterr(err, errlen, "cannot create cgroup %s: %s", t->base[i], strerror(e));
            return -1;
        }
        for (int j = i - 1; j >= 0; j--) {
            if (rmdir(t->base[j]) < 0 && errno != ENOENT) {
                fr_seterr(err, errlen, "cannot remove cgroup %s: %s", t->base[j], strerror(errno));
                return -1;
            }
            t->made_base[j] = false;
        }
    }
    fr_seterr(err, errlen, "cgroups: %d names " CG_PREFIX "%d[-k] taken below %s", CG_NAME_TRIES, (int)t->pid,
              t->p.hier[0].own);
    return -1;
}

/* The launcher cgroup in fitrun-<pid> (claim_name made it), and this
 * process in it. */
static int make_launcher(struct fr_cgroup_tree *t, int i, char *err, size_t errlen)
{
    const struct fr_cgroup_hier *h = &t->p.hier[i];
    char dir[CG_PATH];
    if (!path_in(t, i, CG_LAUNCHER, dir, sizeof dir)) {
        fr_seterr(err, errlen, "cgroup path too long below %s", h->own);
        return -1;
    }
    if (h->version == 1) {
        if (cg_lib_create(h, dir, NULL, 0, err, errlen) < 0)
            return -1;
        t->made_launcher[i] = true;
        if (cg_lib_attach_self(h, dir, err, errlen) < 0)
            return -1;
        t->moved[i] = true;
        return 0;
    }
    /* v2: libcgroup 2.0.2 makes a cgroup only with a controller, which it
     * switches on in the parent first, and own cannot give its children
     * controllers while fitrun is still in it. So this directory (as
     * fitrun-<pid>) and the move are plain mkdir(2) and a write to
     * cgroup.procs. */
    if (mkdir(dir, 0755) < 0) {
        fr_seterr(err, errlen, "cannot create cgroup %s: %s", dir, strerror(errno));
        return -1;
    }
    t->made_launcher[i] = true;
    char procs[CG_PATH];
    int r = fr_dir_file(procs, sizeof procs, dir, "cgroup.procs") ? cg_write(procs, "0") : -ENAMETOOLONG;
    if (r < 0) {
        fr_seterr(err, errlen, "cannot move fitrun (pid %d) into %s: %s", (int)t->pid, dir, strerror(-r));
        return -1;
    }
    t->moved[i] = true;
    return 0;
}

/* jobs/ and jobs/worker-<k> in hierarchy i, and the slots' files. */
static int make_jobs(struct fr_cgroup_tree *t, int i, char *err, size_t errlen)
{
    const struct fr_cgroup_hier *h = &t->p.hier[i];
    char jobs[CG_PATH], dir[CG_PATH];
    struct values vs = {.n = 0};
    if (!path_in(t, i, CG_JOBS, jobs, sizeof jobs)) {
        fr_seterr(err, errlen, "cgroup path too long below %s", h->own);
        return -1;
    }
    if (h->version == 2) {
        /* libcgroup switches the controllers on from below the mount
         * point, so never in own when own is the mount point (a cgroup
         * namespace's root): fitrun does it here, and also where it must
         * switch them off again at the end. */
        if (subtree(h->own, '+', t->p.enable & h->ctls, err, errlen) < 0)
            return -1;
        t->enabled_own = t->p.enable & h->ctls;
        t->enabled_base = true;
    }
    if (h->ctls & FR_CG_MEMORY)
        memory_values(&vs, h, t->base[i], t->jobs_limit);
    if (cg_lib_create(h, jobs, vs.v, vs.n, err, errlen) < 0)
        return -1;
    t->made_jobs[i] = true;
    worker_values(t, h, jobs, &vs);
    for (int k = 0; k < t->nslots; k++) {
        if (!worker_dir(t, i, k, dir, sizeof dir)) {
            fr_seterr(err, errlen, "cgroup path too long below %s", jobs);
            return -1;
        }
        if (cg_lib_create(h, dir, vs.v, vs.n, err, errlen) < 0)
            return -1;
        t->made_workers[i] = k + 1;
        if (open_slot_files(t, i, k, err, errlen) < 0)
            return -1;
    }
    return 0;
}

int fr_cgroup_tree_create(const struct fr_cgroup_probe *p, const struct fr_cgroup_limits *lim, int nslots,
                          struct fr_cgroup_tree **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!p->delegated) {
        fr_seterr(err, errlen, "cgroups: not delegated: %s", p->reason);
        return -1;
    }
    struct fr_cgroup_tree *t = calloc(1, sizeof *t);
    if (!t || !(t->slots = calloc((size_t)nslots, sizeof *t->slots))) {
        free(t);
        fr_seterr(err, errlen, "cgroups: out of memory");
        return -1;
    }
    t->p = *p;
    t->lim = *lim;
    t->pid = getpid();
    t->nslots = nslots;
    t->janitor = (struct cg_janitor){.pid = 0, .pidfd = -1, .fd = -1};
    for (int k = 0; k < nslots; k++)
        t->slots[k] = (struct cg_slot){.events = -1, .peak = -1, .cpu = -1, .kill = -1, .pids_cur = -1, .pids_max = -1};
    raise_nofile(nslots);
    char note[512];
    (void)fr_cgroup_remove_stale(p, note, sizeof note);
    if (note[0])
        fr_warn("%s", note);
    int r = 0;
    /* A run in another pid namespace that shares this cgroup cannot tell
     * from our pid that the tree is ours, and removes it if it finds it
     * still empty (stale.c); it never can once we are in launcher. Made
     * again from the start when that is why it failed. */
    for (int attempt = 1; r == 0; attempt++) {
        r = claim_name(t, err, errlen);
        for (int i = 0; i < p->nhier && r == 0; i++)
            r = make_launcher(t, i, err, errlen);
        if (r == 0 || attempt == CG_MAKE_TRIES || !removed_beneath(t))
            break;
        undo(t, false);
        r = 0;
    }
    /* v2: from here on a SIGKILLed fitrun leaves what it made to its janitor. */
    if (r == 0 && p->version == 2)
        r = cg_janitor_start(t, take_over, err, errlen);
    int mi = cg_hier_of(p, FR_CG_MEMORY);
    if (r == 0 && mi >= 0)
        t->jobs_limit = jobs_share(t, mi, 0);
    for (int i = 0; i < p->nhier && r == 0; i++)
        r = make_jobs(t, i, err, errlen);
    if (r < 0) {
        undo(t, false);
        free(t->slots);
        free(t);
        return -1;
    }
    *out = t;
    return 0;
}
