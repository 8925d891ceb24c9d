/* fitrun/detect.h — what may this process really use?
 *
 * A pure library over a root prefix: every file is read as sysroot + path,
 * so tests point it at fixture trees (tests/fixtures/<name>/) and
 * `fitrun detect --sysroot DIR` does the same by hand. With sysroot "/"
 * (live mode) affinity comes from sched_getaffinity() and /dev/shm from
 * statvfs(); under any other sysroot both come from files
 * (proc/self/status Cpus_allowed_list, proc/self/mountinfo size=).
 *
 * Nothing here exits or crashes on bad input: a missing, unreadable or
 * garbage file is recorded as a note (what was ignored and why) and the
 * value falls back to "unknown"/"no limit". */
#ifndef FITRUN_DETECT_H
#define FITRUN_DETECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FR_SOURCE_MAX 512 /* a path or "ENV_VAR=value" */
#define FR_NOTE_MAX 320
#define FR_NOTES_MAX 32
#define FR_CPU_BITS 8192 /* CPU ids 0..8191: the kernel's largest NR_CPUS */

struct fr_detect_opts {
    const char *sysroot;              /* NULL or "/" = live */
    char *const *envp;                /* environment for scheduler variables; NULL = environ */
    double cpus_override;             /* > 0: a command-line override (--cpus N). An override wins over
                                   everything: it SETS cpu_effective, above the detected count too (noted) */
    const char *cpus_override_source; /* how cpus_override is reported; NULL = "--cpus" */
    /* FITRUN_CPUS of the environment, as the caller found it. Detection
     * does not read FITRUN_CPUS from envp itself: whether a value is the
     * user's or was exported by an outer fitrun is the environment
     * export's rule (its FITRUN_EXPORTED record, fr_env_fitrun_cpus()).
     * NULL = none. */
    const char *cpus_env;            /* the user's: an override that --cpus beats */
    const char *cpus_outer;          /* an outer fitrun's: not an override, an upper bound (cpu_outer: the
                                   share the outer fitrun gave this process tree, e.g. a pool job's
                                   threads); detection runs again */
    double cpus_profile;             /* > 0: a profile's `cpus = N`: an override that FITRUN_CPUS
                                   (the user's) and --cpus beat */
    const char *cpus_profile_source; /* e.g. "profile my.ini:3"; NULL = "profile" */
};

/* Overrides, strongest first: cpus_override (--cpus), cpus_env (the
 * user's FITRUN_CPUS), cpus_profile. The winner is cpu_override and sets
 * cpu_effective; the others are noted as ignored. A FITRUN_CPUS that is
 * not a CPU count (fr_parse_cpus) is noted and ignored. */

/* A CPU count, as [resources] cpus, --cpus of every command and
 * FITRUN_CPUS take it: a number above 0 and at most FR_CPU_BITS (the most
 * CPUs a kernel can have). 0 or -1; the one rule for CPU counts. */
int fr_parse_cpus(const char *s, double *out);

/* The controllers detection reads, in the order of fr_resources.cgroup[]. */
enum fr_controller { FR_CTL_CPU = 0, FR_CTL_CPUSET, FR_CTL_MEMORY, FR_CTL_PIDS, FR_CTL_COUNT };

/* Where one controller's cgroup lives, as the process sees it (no sysroot
 * prefix). version 0 = controller not found. `dir` is where the limit
 * files of the own cgroup are read; `mount` is where the ancestor walk
 * stops. `own`: dir is this process's own cgroup; false when detection
 * fell back to reading the mount point (no /proc/self/cgroup line, a path
 * outside the mount's root, a directory that is not visible), which is
 * somebody else's cgroup as far as writing goes. fitrun's own cgroups
 * (fitrun/cgroup.h) are children of an `own` dir only. */
struct fr_cgroup_loc {
    int version;
    bool own;
    char mount[FR_SOURCE_MAX];
    char dir[FR_SOURCE_MAX];
};

/* A number and where it came from. `known` false = no value (no limit / not found). */
struct fr_value {
    bool known;
    double value;
    char source[FR_SOURCE_MAX];
};

struct fr_resources {
    /* cgroups */
    int cgroup_version; /* 0 = none found, 1, 2 */
    bool cgroup_hybrid; /* v1 controllers + a controller-less cgroup2 mount */
    struct fr_cgroup_loc cgroup[FR_CTL_COUNT];
    struct fr_cgroup_loc cgroup_cpuacct; /* v1 cpuacct (no limits: CPU accounting of fitrun's own cgroups) */

    /* CPU */
    int cpu_online;   /* CPUs online (sys/devices/system/cpu/online) */
    int cpu_affinity; /* |affinity ∩ cpuset| */
    char cpu_affinity_source[FR_SOURCE_MAX];
    char cpu_affinity_list[FR_SOURCE_MAX]; /* "0-3,8" (affinity ∩ cpuset), "" = unknown */
    struct fr_value cpu_cpuset;            /* CPUs in the cgroup cpuset (count), reported */
    char cpu_cpuset_list[FR_SOURCE_MAX];
    struct fr_value cpu_quota;     /* min over ancestors, in CPUs (1.5 = 150000/100000) */
    struct fr_value cpu_scheduler; /* batch-scheduler allocation, in CPUs */
    struct fr_value cpu_override;  /* --cpus or FITRUN_CPUS */
    struct fr_value cpu_shares;    /* v1 cpu.shares / v2 cpu.weight: reported, never used */
    double cpu_detected;           /* min(affinity∩cpuset, quota, scheduler, outer): before the override */
    double cpu_effective;          /* the override when there is one, else cpu_detected */

    /* memory (bytes) */
    uint64_t mem_total;            /* MemTotal; 0 = unknown */
    struct fr_value mem_limit;     /* min over ancestors; values >= total = no limit */
    struct fr_value mem_high;      /* v2 memory.high, reported */
    struct fr_value mem_scheduler; /* HTCondor machine ad Memory / SLURM_MEM_PER_NODE;
                                       also a mem_limit source when smaller */

    /* pids */
    struct fr_value pids_limit;     /* pids.max (min over ancestors) */
    struct fr_value pids_current;   /* pids.current of the own cgroup */
    struct fr_value pids_available; /* min over limited levels of pids.max - pids.current
                                       (a parent's limit is shared by its whole subtree) */

    /* /dev/shm (bytes) */
    struct fr_value shm_size;
    struct fr_value shm_free;

    /* What was ignored and why ("cpu.max: garbage 'abc' in /sys/...: ignored"). */
    int nnotes;
    char notes[FR_NOTES_MAX][FR_NOTE_MAX];

    struct fr_value cpu_outer; /* FITRUN_CPUS an outer fitrun exported: a bound, not an override */
};

/* A limit on the CPUs this process may use. */
struct fr_cpu_limit {
    const char *name;   /* "override", "quota", "scheduler", "outer", "affinity" */
    const char *what;   /* in words: "cgroup CPU quota", "CPU affinity", ... */
    double value;       /* in CPUs */
    const char *source; /* where it was read (points into the resources) */
};

/* Which limit binds (the one rule: detection sets cpu_detected and
 * cpu_effective from it, and the plan and the environment export name
 * it): the override when there is one and !detected_only, else the
 * tightest of the quota, the scheduler's allocation, the outer fitrun's
 * FITRUN_CPUS and the affinity (∩ cpuset). On a tie the quota or the
 * scheduler is named rather than the affinity (it is the limit someone
 * set), the scheduler rather than the quota, and the outer fitrun never
 * (its value is a copy of one of them). Pure. */
void fr_cpu_binding(const struct fr_resources *r, bool detected_only, struct fr_cpu_limit *out);

/* The cgroup path of `controller` ("memory"; NULL = the v2 "0::" line) in
 * the text of a /proc/<pid>/cgroup file (relative to the reader's cgroup
 * namespace). Returns 0 with the path, or -1 when there is no such line.
 * Pure; the one parser of that format. */
int fr_proc_cgroup_path(const char *text, const char *controller, char *out, size_t n);

/* A CPU count, as [resources] cpus, --cpus of run, detect and the wrapper,
 * and the user's FITRUN_CPUS take it: a number above 0 and at most
 * FR_CPU_BITS (the most CPUs a kernel can have). 0 or -1; one rule for
 * every way to ask. */
int fr_parse_cpus(const char *s, double *out);

/* Fill *out. Always succeeds (returns 0); problems become notes. */
int fr_detect(const struct fr_detect_opts *opts, struct fr_resources *out);

/* Append a note (printf-style); silently drops notes past FR_NOTES_MAX. */
void fr_detect_note(struct fr_resources *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- pure parsers, exposed for unit tests --- */

/* Write the CPUs set in `mask` (nbits bits) as a list ("0-3,8") into buf.
 * Returns buf ("" for an empty mask; truncated lists end in "..."). */
char *fr_cpulist_format(const uint64_t *mask, int nbits, char *buf, size_t n);

/* "0-3,8,10-11" -> count of CPUs; fills `mask` (bit i = CPU i) up to
 * nbits when mask != NULL. Returns the count, or -1 on syntax error. */
int fr_cpulist_parse(const char *s, uint64_t *mask, int nbits);

#endif
