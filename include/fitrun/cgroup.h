/* fitrun/cgroup.h — fitrun's own cgroups: a sub-tree beneath the cgroup
 * fitrun started in, where that cgroup is delegated to it, with one
 * cgroup for the launcher (fitrun, and the python runtime's zygote and
 * workers) and one per worker slot, which each job's processes join.
 *
 *   <own>/fitrun-<pid>/launcher          fitrun moves itself here
 *   <own>/fitrun-<pid>/jobs              memory.max: what the launcher leaves
 *   <own>/fitrun-<pid>/jobs/worker-<k>   [sandbox] memory (swap 0), processes
 *
 * A job's cgroup gives exact answers where the process tree alone gives
 * guesses: a real memory limit (not RLIMIT_AS's address space), an OOM
 * kill counted in the job's own cgroup (memory.events / memory.oom_control),
 * its peak memory and CPU time, and (v2) its whole tree killed with
 * cgroup.kill. The jobs' parent is limited to what the launcher's cgroup
 * does not use, so a prediction that eats the container's memory is killed
 * in its own cgroup, never the zygote.
 *
 * libcgroup creates, configures, attaches and deletes these cgroups
 * (lib.c); a file it cannot handle is written or read directly where it
 * is, with the reason beside it. Limits are read by detection
 * (fitrun/detect.h), never through libcgroup. docs/cgroups.md is the
 * user's documentation. Layer: above detect, the sandbox and the profile;
 * below the runtimes (a job's child joins its cgroup) and the pool. */
#ifndef FITRUN_CGROUP_H
#define FITRUN_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fitrun/detect.h"
#include "fitrun/profile.h"
#include "fitrun/sandbox.h"

/* The controllers fitrun uses, as bits. cpuacct exists on v1 only: on v2
 * every cgroup has cpu.stat. */
#define FR_CG_MEMORY 1u
#define FR_CG_PIDS 2u
#define FR_CG_CPUACCT 4u
#define FR_CG_HIER_MAX 3
#define FR_CG_REASON_MAX 768

/* One hierarchy fitrun writes in: on v2 the unified one (memory and pids
 * together), on v1 one per controller (or shared by co-mounted ones). */
struct fr_cgroup_hier {
    int version;
    unsigned ctls;             /* FR_CG_* it carries that fitrun uses */
    char mount[FR_SOURCE_MAX]; /* its mount point */
    char own[FR_SOURCE_MAX];   /* the cgroup fitrun started in (detection's) */
};

/* Can fitrun make its sub-tree here, with which controllers, and why
 * not? Reads files, writes nothing. */
struct fr_cgroup_probe {
    bool delegated; /* at least one controller can be used */
    int version;    /* 1 or 2; 0 = none */
    unsigned ctls;  /* the controllers fitrun will use */
    int nhier;      /* hierarchies in hier[] */
    struct fr_cgroup_hier hier[FR_CG_HIER_MAX];
    bool own_is_root;              /* v2: own is the hierarchy's root (no no-internal-process rule) */
    unsigned enable;               /* v2: controllers own's cgroup.subtree_control lacks: fitrun enables them while it
                         runs, and takes them back before it leaves */
    char reason[FR_CG_REASON_MAX]; /* not delegated: why; else which controllers, and why not the others */
};

/* The probe of this process (live files; detection's locations in res).
 * mode off: not delegated ("cgroups = off"). Never fails: what cannot be
 * read or written becomes the reason. */
void fr_cgroup_probe(const struct fr_resources *res, enum fr_cgroup_mode mode, struct fr_cgroup_probe *out);

/* What the jobs' cgroups are given. 0 = no limit. */
struct fr_cgroup_limits {
    uint64_t memory;    /* per job: memory.max (+ swap 0) / memory.limit_in_bytes (+ memsw) */
    uint64_t pids;      /* per job: pids.max (the job's processes and threads, its relay included) */
    uint64_t mem_limit; /* the tightest memory limit detection found above fitrun; 0 = none */
    uint64_t keep;      /* what fitrun keeps for itself beyond its cgroup's use (output buffers, growth) */
};

/* What fitrun keeps beyond its cgroup's use at start-up, besides the
 * slots' output buffers: its own growth (results, the zygote's). */
#define FR_CGROUP_KEEP (32ull << 20)

struct fr_cgroup_tree; /* fitrun's sub-tree, while it exists */

/* Create the sub-tree for nslots worker slots (after removing leftovers of
 * dead fitrun processes, fr_cgroup_remove_stale) and move this process
 * into its launcher cgroup; v2: with a janitor there, a child process
 * that removes the tree if this process dies without doing it (SIGKILL). Only where p->delegated. Returns 0, or -1
 * with a message (whatever was made is removed again; the process is
 * back where it started). */
int fr_cgroup_tree_create(const struct fr_cgroup_probe *p, const struct fr_cgroup_limits *lim, int nslots,
                          struct fr_cgroup_tree **out, char *err, size_t errlen);
/* Once the runtime has started (the zygote and workers are in the launcher
 * cgroup): the jobs' cgroup gets what the launcher's use leaves of
 * mem_limit. A line for the log goes to note ("" = nothing to say). */
void fr_cgroup_tree_settle(struct fr_cgroup_tree *t, char *note, size_t n);
/* Kill what is left in the jobs' cgroups (and reap what of it was this
 * process's child: the pool has finished reaping by then), move this
 * process back into the cgroup it started in, stop the janitor (v2),
 * remove every cgroup fitrun made, free t. NULL is fine. Problems go
 * to stderr: there is no one else to tell at the end of a run. */
void fr_cgroup_tree_destroy(struct fr_cgroup_tree *t);
/* v2: the pid of the tree's janitor, fitrun's child that removes the tree
 * if fitrun dies without doing it (SIGKILL); 0 = none (v1, NULL). The
 * pool's orphan reaper leaves it alone; fr_cgroup_tree_destroy stops it. */
pid_t fr_cgroup_tree_janitor(const struct fr_cgroup_tree *t);
/* Does the tree use controller ctl (FR_CG_*)? false for NULL. */
bool fr_cgroup_tree_has(const struct fr_cgroup_tree *t, unsigned ctl);
/* The controllers the tree uses (0 for NULL). */
unsigned fr_cgroup_tree_ctls(const struct fr_cgroup_tree *t);
/* One line for the log: "cgroups: 2 workers in /sys/.../fitrun-12/jobs (memory 512M each, ...)". */
const char *fr_cgroup_tree_summary(const struct fr_cgroup_tree *t, char *buf, size_t n);

/* The sandbox spec of a run whose jobs' cgroups use ctls (FR_CG_*: a
 * tree's, or what a probe says a run would get): where the job's cgroup
 * limits memory, RLIMIT_AS is not set (it limits address space, which
 * runtimes reserve far beyond what they use); without one it stays, as
 * the fallback. The one place that rule lives. */
void fr_cgroup_policy_spec(unsigned ctls, struct fr_policy_spec *spec);

/* ---- a slot's jobs ------------------------------------------------------ */

/* The cgroup.procs descriptors of slot's cgroups (one per hierarchy,
 * O_CLOEXEC, kept open by the tree): a job's first process joins by
 * writing "0" to each (fr_cgroup_join) before its sandbox is applied.
 * Returns how many (0 without a tree). */
int fr_cgroup_slot_fds(const struct fr_cgroup_tree *t, int slot, int *fds, int max);
/* In the job's child, after fork: move the calling process into the
 * slot's cgroups. Async-signal-safe (write(2) only). Returns 0 or -errno. */
int fr_cgroup_join(const int *fds, int n);

/* What a slot's cgroups say about the job that just ran in it. */
struct fr_cgroup_usage {
    bool valid;           /* a tree with this slot: the fields below mean something */
    uint64_t oom_kills;   /* processes of the job the OOM killer killed (memory cgroup) */
    bool has_peak;        /* peak_bytes is this job's */
    uint64_t peak_bytes;  /* peak memory charged to the job's cgroup */
    bool has_cpu;         /* cpu_us is this job's */
    uint64_t cpu_us;      /* CPU time of every process of the job */
    const char *oom_file; /* where oom_kills was read (for messages); "" = nowhere */
};

/* Once the runtime has started, when no job can create a process (the
 * python runtime where predictions cannot: one process per job, whose CPU
 * clock the runtime reads itself): the slots' CPU counters are no longer
 * read (fr_cgroup_usage.has_cpu is false), nor their pids.max allowance
 * written (it limits forks in the cgroup, and none happens; a process
 * joining is never refused), nor their OOM count after a job that exited
 * 0 (its one process was not killed: the count stands). pids.current
 * still says when a slot is empty. */
void fr_cgroup_tree_contained(struct fr_cgroup_tree *t);

/* Before a job starts in slot: its counters' baselines, the peak reset. */
void fr_cgroup_slot_begin(struct fr_cgroup_tree *t, int slot);

/* What the caller of fr_cgroup_slot_end knows of the job's end. */
enum {
    /* No process joins the slot's cgroups before its next
     * fr_cgroup_slot_begin (none lives on, none is started for the slot in
     * between): where the cgroups are empty now, the counters just read
     * are the next job's baselines and that begin does not read them. */
    FR_CG_END_IDLE = 1u,
    /* No OOM kill of the job can change its verdict (it exited 0,
     * fr_verdict_oom_possible): its OOM count is not read, oom_kills is 0. */
    FR_CG_END_NO_OOM = 2u,
};
/* After the job's process was reaped (and what was left of it killed with
 * fr_cgroup_slot_kill, unless its process lives on for the next job): read
 * what its cgroups counted since fr_cgroup_slot_begin. how: FR_CG_END_*. */
void fr_cgroup_slot_end(struct fr_cgroup_tree *t, int slot, unsigned how, struct fr_cgroup_usage *u);
/* While a job runs: the CPU time every process of it used so far (the
 * slot's CPU counter since fr_cgroup_slot_begin), in *us. false where the
 * counter is not read (no tree, no CPU controller, fr_cgroup_tree_contained). */
bool fr_cgroup_slot_cpu_us(struct fr_cgroup_tree *t, int slot, uint64_t *us);
/* Kill every process in slot's cgroup now (v2 cgroup.kill; a no-op on
 * v1, where the process group and the subreaper do it). */
void fr_cgroup_slot_kill(struct fr_cgroup_tree *t, int slot);

/* ---- leftovers ---------------------------------------------------------- */

/* Remove fitrun-<pid> sub-trees below p's cgroups whose fitrun is dead: no
 * process <pid> (in this pid namespace) is in that sub-tree's launcher
 * cgroup or in p's own, and its launcher cgroup holds no process in any
 * pid namespace (it lists none, and the kernel lets it be removed).
 * Processes left in their jobs' cgroups are killed first. Only what
 * fitrun makes is removed (launcher, jobs, jobs/worker-N). Returns how
 * many sub-trees were removed; problems are described in note. */
int fr_cgroup_remove_stale(const struct fr_cgroup_probe *p, char *note, size_t n);

#endif
