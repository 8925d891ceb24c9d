/* fitrun/pool.h — the prediction pool behind `fitrun run`: jobs (JSON Lines)
 * in, one result line per job out, each job run by a runtime (runtime.h)
 * in one of `workers` slots. docs/run.md describes the behaviour; the
 * event loop and its decisions are commented in launcher/pool/pool.c, and
 * launcher/pool/internal.h says which file does what. */
#ifndef FITRUN_POOL_H
#define FITRUN_POOL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitrun/cgroup.h"
#include "fitrun/detect.h"
#include "fitrun/jobs.h"
#include "fitrun/runtime.h"
#include "fitrun/shard.h"

enum fr_progress {
    FR_PROGRESS_AUTO = 0, /* bar when stderr is a terminal, else none */
    FR_PROGRESS_BAR,      /* one line redrawn in place (\r), at most 10 times a second */
    FR_PROGRESS_PLAIN,    /* one line every FR_PROGRESS_PLAIN_S seconds */
    FR_PROGRESS_NONE,
};
#define FR_PROGRESS_PLAIN_S 5
int fr_progress_parse(const char *s, enum fr_progress *out);

/* One result that names its input line: which id it answered. */
struct fr_resume_entry {
    long line;      /* the input line ("line" field) */
    long rline;     /* the result's own line in the results file */
    char *id;       /* owned; NULL for a result with "id": null (a line that is not a job) */
    bool duplicate; /* a DuplicateId result */
};

/* What --resume found in an existing results file. */
struct fr_resume {
    struct fr_idset *ids;         /* ids that have their own result (not DuplicateId) */
    struct fr_idset *lines;       /* input lines that have a result ("line" field, decimal) */
    struct fr_idset *noline;      /* ids of results without "line" (other writers): skipped by id */
    long results;                 /* result lines kept */
    struct fr_resume_entry *done; /* results naming their line, sorted by line (first result first) */
    size_t ndone, capdone;
    char *name; /* the results file, for messages */
};

/* Read results file `fd` (named `name` in messages) for --resume: a torn
 * last line (no '\n': the writer was killed mid-write) is cut off with
 * ftruncate() and reported; other lines that are not results are reported
 * with name:line and ignored. Fills *r (fr_resume_free() it). Returns 0, or
 * -1 with a message. */
int fr_resume_scan(int fd, const char *name, struct fr_resume *r, char *err, size_t errlen);
void fr_resume_free(struct fr_resume *r);

/* Is input line `line` of `jobs_name` already answered? text/len is the
 * line (text NULL: an over-long line, not a job); `earlier` holds the ids
 * of the lines before it (a DuplicateId result stands only while one of
 * them has its id; NULL = none). Returns 0 (no result: run it), 1 (its
 * result is there, for the id this line holds: skip it) or -1 when the
 * result there answered another id, or is a DuplicateId of an id no earlier
 * line has now (the jobs file changed): a message naming the line, the
 * ids and the result's place goes to err, and the caller stops with 125.
 * Never skips a line on a guess. */
int fr_resume_line(const struct fr_resume *r, long line, const char *text, size_t len, const struct fr_idset *earlier,
                   const char *jobs_name, char *err, size_t errlen);
/* A result for input line `line`, which is blank now (-1, message in err),
 * or none (0). */
int fr_resume_blank(const struct fr_resume *r, long line, const char *jobs_name, char *err, size_t errlen);
/* At the end of the jobs (`last` lines): a result for a line past it (-1,
 * message in err), or none (0). */
int fr_resume_end(const struct fr_resume *r, long last, const char *jobs_name, char *err, size_t errlen);
/* The same checks over a whole regular jobs file, before anything runs
 * (pread from the start; the descriptor's offset is left alone), plus
 * results for lines the file no longer has; `shard` (NULL or not enabled:
 * every line) says whose lines a DuplicateId result may refer to. A stream
 * (not a regular file) returns 0: its lines are checked with
 * fr_resume_line as they come. Returns 0, or -1 with the first mismatch in
 * err. */
int fr_resume_verify(const struct fr_resume *r, int fd, const struct fr_shard *shard, const char *jobs_name, char *err,
                     size_t errlen);

struct fr_pool_opts {
    int workers; /* slots, >= 1 */
    const struct fr_runtime_ops *ops;
    const struct fr_runtime_config *rtcfg;
    uint64_t cpu_ms;  /* per job, 0 = none (the pool's CPU clock checks) */
    uint64_t wall_ms; /* per job, 0 = none */
    int in_fd;        /* jobs: a pipe/tty (streamed) or a regular file */
    const char *in_name;
    int out_fd; /* results, written one line per write(2) */
    const char *out_name;
    /* truncate out_fd once the runtime is up (a run that stops before keeps
     * the old results) */
    bool replace_out;
    struct fr_shard shard;          /* enabled = only this shard's input lines */
    const struct fr_resume *resume; /* NULL = fresh run */
    enum fr_progress progress;
    bool quiet;                           /* no progress, no summary, no interrupt notice */
    int ready_fd;                         /* > 2: the ready record goes there once the runtime is up,
                                             then it is closed (docs/run.md, "Readiness"); 0 = none */
    const struct fr_resources *resources; /* detection of this run, for the memory cgroup's OOM-kill
                                             counter; NULL = the pool runs fr_detect() itself */
    struct fr_cgroup_tree *cgroups;       /* fitrun's own cgroups (NULL = none): a cgroup per slot, read
                                             around each job (exact OOM kills, peak, CPU), killed with
                                             the job; the jobs' share settled once the runtime runs */
};

/* Run every job of o->in_fd. Returns the exit status of `fitrun run`:
 * 0 every job got a result, 1 some input line was invalid, 125 fitrun's own
 * error (runtime failed to start, results cannot be written), 128+signal
 * when interrupted by SIGINT (130), SIGTERM (143) or SIGHUP (129). */
int fr_pool_run(const struct fr_pool_opts *o);

/* The signals that stop a run: SIGINT, SIGTERM, SIGHUP. fr_pool_run reads
 * them from a signalfd (with them blocked); `fitrun run` blocks them as
 * soon as it starts, so that one that comes before the pool is running
 * stays pending and still ends the run as an interrupt. */
void fr_pool_stop_signals(sigset_t *set);

/* ---- OOM kills (launcher/pool/oom.c) -------------------------------------
 * Without a memory cgroup of its own per slot (fitrun/cgroup.h), a job
 * whose process died of a SIGKILL that fitrun did not send is asked about
 * here: did the oom_kill counter of fitrun's own memory cgroup go up?
 * Then the job's status is `memory` (docs/run.md, "OOM kills"). With one,
 * the job's own cgroup says it exactly and this counter is not used. */

#define FR_OOM_PATH_MAX (FR_SOURCE_MAX + 32)

struct fr_oom {
    char path[FR_OOM_PATH_MAX]; /* memory.oom_control (v1) / memory.events (v2); "" = no counter */
    uint64_t seen;              /* the counter at the last read */
    long credit;                /* kills counted but not yet given to a job */
    bool warned;                /* a failed read was reported (once) */
};

/* The value of the "oom_kill N" line of a v1 memory.oom_control or a v2
 * memory.events text (`name` is the file, for messages). Other lines
 * (oom_kill_disable, under_oom, oom_group_kill, ...) are skipped. Returns 0,
 * or -1 with "name:LINE: why" (a garbage value) or "name: no oom_kill line"
 * (kernels before 4.13 have none in v1). Pure. */
int fr_oom_parse(const char *text, const char *name, uint64_t *count, char *err, size_t errlen);

/* Find the counter of the memory cgroup `loc` (dir/memory.oom_control for
 * v1, dir/memory.events for v2; `sysroot` NULL or "/" = live, else it
 * prefixes the path, for fixture trees) and read its current value.
 * Returns 1 (counting), 0 (no memory cgroup or no such file: OOM kills stay
 * `signal`; o->path is "") or -1 with a message (the file is there but
 * unreadable or garbage; o->path is "" too). */
int fr_oom_init(struct fr_oom *o, const struct fr_cgroup_loc *loc, const char *sysroot, char *err, size_t errlen);

/* A job just died of an unexplained SIGKILL; `running` jobs (this one
 * included) are still unreported. Reads the counter once: kills since the
 * last read become credit, at most `running` of it (the jobs that can
 * still claim one; the rest were kills of other processes). Returns true,
 * spending one credit, when there is any. False when there is no counter
 * or it cannot be read (said once on stderr). */
bool fr_oom_claim(struct fr_oom *o, int running);

#endif
