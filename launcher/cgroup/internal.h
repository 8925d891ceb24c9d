/* internal.h — what the files of launcher/cgroup/ share (not an API).
 *
 *   probe.c  can fitrun make its sub-tree here? (reads, writes nothing)
 *   tree.c   the sub-tree: create, settle, destroy; the RLIMIT_AS rule
 *   slot.c   a slot's jobs: join, counters, kill (the per-job path)
 *   stale.c  sub-trees of dead fitrun processes
 *   kill.c   the processes out of a cgroup before it is removed
 *   janitor.c  v2: the process that removes the tree when fitrun is SIGKILLed
 *   lib.c    libcgroup: creating, configuring, attaching, deleting
 *   files.c  the kernel files read and written directly, and why
 *
 * Paths are absolute (detection's view: no sysroot; cgroups are only ever
 * made live). The sub-tree's names: */
#ifndef FITRUN_CGROUP_INTERNAL_H
#define FITRUN_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fitrun/cgroup.h"

#define CG_PREFIX "fitrun-"    /* <own>/fitrun-<pid>: one run's sub-tree */
#define CG_LAUNCHER "launcher" /* fitrun, the zygote, the workers */
#define CG_JOBS "jobs"         /* the jobs' share of the memory */
#define CG_WORKER "worker-"    /* jobs/worker-<k>: slot k's jobs */
#define CG_PATH 4096

/* ---- files.c ------------------------------------------------------------- */

/* Write text to an open interface file (one write(2): the kernel takes
 * each write as one command). Returns 0 or -errno. */
int cg_fd_write(int fd, const char *text);
/* Open path, write text, close. Returns 0 or -errno. */
int cg_write(const char *path, const char *text);
/* The file's text from offset 0 (pread), NUL-terminated, at most n-1
 * bytes. Returns the length or -errno. */
long cg_fd_read(int fd, char *buf, size_t n);
/* The number after `key` on a "key N" line of text (memory.events,
 * memory.oom_control, cpu.stat). */
bool cg_key_u64(const char *text, const char *key, uint64_t *v);
/* The first token of text as a number ("max" is not one). */
bool cg_text_u64(const char *text, uint64_t *v);
/* Is word one of the space-separated words of text (cgroup.controllers,
 * cgroup.subtree_control)? */
bool cg_has_word(const char *text, const char *word);
/* "memory", "pids", "cpuacct" for one FR_CG_* bit. */
const char *cg_ctl_name(unsigned ctl);
/* "memory, pids" for a set of FR_CG_* bits ("none" for 0). */
const char *cg_ctl_list(unsigned ctls, char *buf, size_t n);
/* Can this process write path (effective ids; EROFS counts)? 0 or -errno. */
int cg_writable(const char *path);
/* Pids listed in a cgroup.procs text other than `self`. */
int cg_count_others(const char *procs_text, pid_t self);

/* ---- lib.c --------------------------------------------------------------- */

/* libcgroup's state, read once per process (cgroup_init: /proc/cgroups and
 * /proc/mounts). Returns 0, or -1 with a message. */
int cg_lib_init(char *err, size_t errlen);
/* Where libcgroup mounted controller ctl, or NULL (it reads /proc/mounts,
 * detection reads mountinfo: the two must agree before names relative to
 * the mount point mean the same directory). */
const char *cg_lib_mount(unsigned ctl, char *buf, size_t n);
/* Create directory dir of hierarchy h (its controllers; values: file
 * names with values, NULL-terminated pairs, for controller bits in
 * `value_ctls` order). Returns 0 or -1 with a message naming dir. */
struct cg_value {
    unsigned ctl;     /* the controller the file belongs to */
    const char *file; /* "memory.max" */
    const char *value;
};
int cg_lib_create(const struct fr_cgroup_hier *h, const char *dir, const struct cg_value *values, int nvalues,
                  char *err, size_t errlen);
/* Write values into existing dir (cgroup_modify_cgroup). 0 or -1 with err. */
int cg_lib_modify(const struct fr_cgroup_hier *h, const char *dir, const struct cg_value *values, int nvalues,
                  char *err, size_t errlen);
/* Move the calling process into dir (cgroup_attach_task: v1 writes its
 * thread to tasks, v2 to cgroup.procs; fitrun is single-threaded). */
int cg_lib_attach_self(const struct fr_cgroup_hier *h, const char *dir, char *err, size_t errlen);
/* Remove dir if it holds no process (cgroup_delete_cgroup_ext with
 * CGFLAG_DELETE_EMPTY_ONLY: nothing is moved anywhere). 0, or -1 with err
 * (EBUSY-like: still populated). A directory already gone is 0. */
int cg_lib_delete(const struct fr_cgroup_hier *h, const char *dir, char *err, size_t errlen);
/* The processes in dir (cgroup_get_procs); *pids malloc'd. 0 or -1. */
int cg_lib_procs(const struct fr_cgroup_hier *h, const char *dir, pid_t **pids, int *n);

/* ---- the tree (tree.c), as slot.c sees it -------------------------------- */

struct cg_slot {
    int procs[FR_CG_HIER_MAX]; /* cgroup.procs of worker-<k>, one per hierarchy */
    int nprocs;
    int events;                    /* the OOM-kill counter: v1 memory.oom_control, v2 memory.events; -1 = none */
    int peak;                      /* v1 memory.max_usage_in_bytes, v2 memory.peak; -1 = none */
    bool peak_reset;               /* a write restarts `peak` for this job (v1; v2 from Linux 6.12) */
    int cpu;                       /* v1 cpuacct.usage (ns), v2 cpu.stat (usage_usec); -1 = none */
    bool cpu_ns;                   /* cpu counts ns (v1), else us */
    int kill;                      /* v2 cgroup.kill; -1 = none */
    int pids_cur;                  /* pids.current: tasks in the cgroup (the pids controller); -1 = none */
    int pids_max;                  /* pids.max: the job's allowance on top of what is still leaving
                                      (fr_cgroup_slot_begin); -1 = no limit */
    uint64_t pids_base, pids_left; /* the allowance; what was left at the last begin */
    bool oom0_ok, cpu0_ok, peak0_ok;
    uint64_t oom0, cpu0, peak0; /* at the job's start */
    bool idle;                  /* the last end left the cgroup empty, to stay so until the next begin:
                                   oom0 and cpu0 are already the next job's baselines (slot.c) */
    bool contained;             /* a job here is one process that cannot fork (fr_cgroup_tree_contained) */
    char events_path[FR_SOURCE_MAX + 64];
};

/* v2: the process that removes the tree if fitrun dies without doing it
 * (janitor.c). */
struct cg_janitor {
    pid_t pid; /* 0 = none */
    int pidfd; /* its pidfd: signals and waits never reach a reused pid; -1 = none */
    int fd;    /* the write end of the pipe it waits on (its EOF: fitrun is gone); -1 = none */
};

struct fr_cgroup_tree {
    struct fr_cgroup_probe p;
    struct fr_cgroup_limits lim;
    pid_t pid;
    int nslots;
    struct cg_slot *slots;
    char base[FR_CG_HIER_MAX][CG_PATH]; /* <own>/fitrun-<pid>, per hierarchy */
    /* what exists, so that a failure half-way and the end undo exactly it */
    bool made_base[FR_CG_HIER_MAX], made_launcher[FR_CG_HIER_MAX], made_jobs[FR_CG_HIER_MAX];
    int made_workers[FR_CG_HIER_MAX];
    bool moved[FR_CG_HIER_MAX]; /* this process is in <base>/launcher */
    unsigned enabled_own;       /* v2: what fitrun enabled in own's cgroup.subtree_control */
    bool enabled_base, enabled_jobs;
    uint64_t jobs_limit; /* memory.max of jobs/ (0 = none) */
    struct cg_janitor janitor;
};

/* ---- janitor.c ----------------------------------------------------------- */

/* Fork the janitor into launcher (this process must be there already);
 * once fitrun is gone it runs end(t) on its copy of t (tree.c's undo of
 * everything) and exits. Returns 0, or -1 with err. */
int cg_janitor_start(struct fr_cgroup_tree *t, void (*end)(struct fr_cgroup_tree *t), char *err, size_t errlen);
/* Stop it and reap it (fitrun cleans up itself). No janitor: nothing. */
void cg_janitor_stop(struct fr_cgroup_tree *t);

/* ---- kill.c -------------------------------------------------------------- */

#define CG_EMPTY_WAIT_MS 2000 /* for killed processes to leave a cgroup */

/* SIGKILL every process in dir (and below, v2) and wait, bounded, until
 * none is left. */
void cg_kill_all(const struct fr_cgroup_hier *h, const char *dir);
/* Does dir (and below, v2) hold a process? v2 reads cgroup.events'
 * `populated`, which counts processes of every pid namespace; v1 lists
 * cgroup.procs, which shows only the processes visible in this process's
 * pid namespace (the others are left out). A directory that cannot be
 * read counts as empty. */
bool cg_populated(const struct fr_cgroup_hier *h, const char *dir);
/* Sleep ms milliseconds (EINTR resumed). */
void cg_sleep_ms(long ms);

/* The hierarchy of t (or a probe) carrying ctl, or -1. */
int cg_hier_of(const struct fr_cgroup_probe *p, unsigned ctl);

#endif
