/* internal.h — the pieces of detection, shared between the launcher/detect/ files
 * and the unit tests (tests/unit/test_detect*.c include it directly).
 *
 * Every parser here is a pure function over a string. Everything that
 * reads a file takes a `struct fr_dx` (one detection run): it carries the
 * sysroot every path is read under, the environment, and the result whose
 * notes collect what was ignored and why. Paths kept in fr_dx and printed
 * in notes and sources are LOGICAL paths, as the process sees them
 * ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"), never sysroot-prefixed, so a
 * fixture tree gives the same report wherever the checkout lives. */
#ifndef FITRUN_DETECT_INTERNAL_H
#define FITRUN_DETECT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitrun/detect.h"

#define FR_PATH 4096
#define FR_MASK_WORDS (FR_CPU_BITS / 64)

/* Upper bounds for file reads: cgroup files are a few bytes, but a big
 * Kubernetes node has tens of thousands of mounts. */
#define FR_SMALL_FILE (64 * 1024)
#define FR_BIG_FILE (16 * 1024 * 1024)

/* "cpu", "cpuset", "memory", "pids": indexed by enum fr_controller. */
extern const char *const fr_ctl_names[FR_CTL_COUNT];

/* One detection run. */
struct fr_dx {
    const char *sysroot; /* "/" when live */
    bool live;
    char *const *envp;
    struct fr_resources *res;
    struct fr_dx_loc {       /* per controller, logical paths */
        int version;         /* 0 = not found */
        char mount[FR_PATH]; /* mount point: the ancestor walk stops here */
        char dir[FR_PATH];   /* own cgroup directory */
        bool own;            /* dir is this process's own cgroup, not a fallback to the mount point */
    } loc[FR_CTL_COUNT];
    struct fr_dx_mount { /* chosen from mountinfo */
        bool found;
        bool preferred; /* under /sys/fs/cgroup */
        char mountpoint[FR_PATH];
        char root[FR_PATH];
    } v1m[FR_CTL_COUNT], v2m, v1acct; /* v1 mount per controller; the cgroup2 mount; v1 cpuacct */
    /* /dev/shm as mountinfo describes it (sysroot mode reads size= here) */
    bool shm_found;
    char shm_fstype[32];
    char shm_size_opt[64]; /* value of size= ("65536k"), "" = none */
};

/* ---- file access, notes, values (dx.c) ---- */

/* Read logical path `path` under the sysroot. Returns a fresh string (caller
 * frees) or NULL with errno set. */
char *fr_dx_read(const struct fr_dx *x, const char *path, size_t max);
/* Like fr_dx_read, but on failure adds a note "what: cannot read PATH: why"
 * unless the file is simply missing and `quiet_missing` is set. */
char *fr_dx_read_noted(struct fr_dx *x, const char *path, size_t max, bool quiet_missing, const char *what);
/* Is logical path `path` a directory under the sysroot? */
bool fr_dx_is_dir(const struct fr_dx *x, const char *path);
/* Copy with truncation into a FR_SOURCE_MAX-style buffer. */
void fr_copy(char *dst, size_t n, const char *src);
/* Set v to value/source (printf-style source). */
void fr_value_set(struct fr_value *v, double value, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- override.c ---- */

/* Resolve the overrides of o (fitrun/detect.h) into r->cpu_override and
 * r->cpu_outer, noting the losers and values that are not CPU counts.
 * `what` (n bytes) names the winner for later notes ("--cpus 8"); "" when
 * there is none. o may be NULL. */
void fr_detect_override(struct fr_resources *r, const struct fr_detect_opts *o, char *what, size_t n);

/* ---- mountinfo.c ---- */

struct fr_mountinfo_entry { /* pointers into the (modified) line */
    char *root;             /* field 4, unescaped */
    char *mountpoint;       /* field 5, unescaped */
    char *fstype;           /* after the lone "-" */
    char *source;
    char *super_opts; /* "rw,cpu,cpuacct", "rw,size=65536k" */
};

/* Decode the \ooo octal escapes the kernel writes for space, tab, newline
 * and backslash, in place. Malformed escapes are kept as they are. */
void fr_unescape_octal(char *s);
/* Split one mountinfo line (in place). Returns 0, or -1 with *why. */
int fr_mountinfo_parse_line(char *line, struct fr_mountinfo_entry *e, const char **why);
/* Does the comma-separated option list contain exactly `opt`? */
bool fr_opt_has(const char *opts, const char *opt);
/* Value of "key=" in a comma-separated option list into buf; false if absent. */
bool fr_opt_value(const char *opts, const char *key, char *buf, size_t n);
/* Walk the mountinfo text: choose each controller's mount (v1 mounts by
 * their controller option, else the cgroup2 mount), note the cgroup2 mount
 * and /dev/shm. Garbage lines become notes naming the line. */
void fr_mounts_scan(struct fr_dx *x, char *text, const char *path);

/* ---- cgroup_path.c ---- */

/* Find the cgroup path of `controller` ("cpu", "memory", ...) in the text
 * of /proc/self/cgroup; controller NULL = the v2 line ("0::/path").
 * Returns 0 and copies the path, or -1 when there is no such line.
 * Malformed lines are noted (with their line number) when x != NULL. */
int fr_proc_cgroup_find(struct fr_dx *x, const char *text, const char *controller, char *out, size_t n);

enum fr_translate {
    FR_TR_OK = 0,      /* out = mountpoint + (path relative to root) */
    FR_TR_OUTSIDE = 1, /* path not below the mount root: out = mountpoint */
    FR_TR_TOOLONG = -1,
};
/* Translate cgroup path `cgpath` through a mount with root field `root`
 * mounted at `mountpoint`. Handles "/" roots, bind-mounted subtrees
 * (root = the cgroup itself or an ancestor) and roots outside the
 * namespace ("/.."). Pure. */
enum fr_translate fr_cgroup_translate(const char *mountpoint, const char *root, const char *cgpath, char *out,
                                      size_t n);

/* Resolve every controller's own directory (fills x->loc[i].dir). */
void fr_cgroups_locate(struct fr_dx *x, const char *proc_cgroup_text);

/* Outcome of reading one limit at one level. */
enum fr_level { FR_LVL_NONE = 0, FR_LVL_LIMIT = 1, FR_LVL_SKIP = -1 };
/* Reader of one level: `dir` is a logical cgroup directory, `own` says it is
 * the process's own cgroup. Sets *val and src (the file giving it) when it
 * returns FR_LVL_LIMIT. Notes its own problems. */
typedef enum fr_level (*fr_level_reader)(struct fr_dx *x, const char *dir, bool own, double *val, char *src, size_t n);
/* Call `visit` on the own cgroup directory of `ctl`, then on every ancestor
 * up to and including its mount point. Returns the number of levels. */
typedef void (*fr_level_visit)(struct fr_dx *x, const char *dir, bool own, void *arg);
int fr_cgroup_walk(struct fr_dx *x, enum fr_controller ctl, fr_level_visit visit, void *arg);
/* Should a missing file at `dir` be noted? Only in the process's own cgroup
 * and not at the mount root (a root cgroup has no limit files on v2, nor
 * pids.max on v1: that is normal, not worth a note). */
bool fr_dx_note_missing(const struct fr_dx *x, enum fr_controller ctl, const char *dir, bool own);

/* Apply `fn` to the own cgroup of `ctl` and every ancestor up to its mount
 * point; keep the minimum in *out. Returns the number of levels read. */
int fr_cgroup_walk_min(struct fr_dx *x, enum fr_controller ctl, fr_level_reader fn, struct fr_value *out);

/* Parse a single-number cgroup file: "max" (or "-1" when allow_minus1) = no
 * limit (returns 0), an unsigned integer below 2^63 (returns 1, *v set),
 * else -1. */
int fr_parse_limit_u64(const char *s, bool allow_minus1, uint64_t *v);
/* Read dir/name as with fr_parse_limit_u64. Missing file: FR_LVL_SKIP, noted
 * only when note_missing. Garbage: FR_LVL_SKIP with a note. */
enum fr_level fr_cgroup_read_u64(struct fr_dx *x, const char *dir, const char *name, bool allow_minus1,
                                 bool note_missing, uint64_t *v, char *src, size_t n);

/* ---- cpu.c ---- */

/* v2 cpu.max: "max", "max 100000", "50000 100000", "50000" (period 100000).
 * Returns 1 with *cpus, 0 for no limit, -1 garbage (*why). A third field is
 * ignored and reported through *extra. */
int fr_parse_cpu_max(const char *s, double *cpus, bool *extra, const char **why);
/* v1 cpu.cfs_quota_us + cpu.cfs_period_us. Returns like fr_parse_cpu_max. */
int fr_parse_cfs(const char *quota, const char *period, double *cpus, const char **why);
/* Affinity, cpuset, online, quota, shares. */
void fr_detect_cpu(struct fr_dx *x);

/* ---- memory.c ---- */

/* MemTotal from /proc/meminfo text, in bytes; 0 if absent or garbage. */
uint64_t fr_parse_meminfo_total(const char *text);
/* hierarchical_memory_limit from v1 memory.stat text; false if absent. */
bool fr_parse_memory_stat_hier(const char *text, uint64_t *v);
void fr_detect_memory(struct fr_dx *x);

/* ---- pids.c ---- */
void fr_detect_pids(struct fr_dx *x);

/* ---- shm.c ---- */

/* tmpfs size= option ("65536k", "1g", "1048576", "50%") in bytes, at most
 * FR_SIZE_MAX; `total` resolves percentages. Returns 1 with *v, 0 for
 * size=0 (unlimited), -1. */
int fr_parse_tmpfs_size(const char *opt, uint64_t total, uint64_t *v);
void fr_detect_shm(struct fr_dx *x);

/* ---- scheduler.c ---- */

/* "4(x2),72,36(x3)" -> the entry for node `index` (0-based). Returns the
 * CPU count, or -1 on garbage / index out of range. */
long fr_parse_slurm_cpus_per_node(const char *s, long index);
/* An HTCondor ClassAd: integer value of attribute `name` (case-insensitive,
 * "Cpus = 8"). Returns 1 with *v, 0 when absent, -1 when not a plain
 * non-negative number (an expression, garbage). */
int fr_parse_classad_number(const char *text, const char *name, double *v);
/* Fill res->cpu_scheduler and res->mem_scheduler from the environment. */
void fr_detect_scheduler(struct fr_dx *x);

#endif
