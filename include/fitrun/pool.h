/* fitrun/pool.h — the prediction pool behind `fitrun run`: jobs (JSON Lines)
 * in, one result line per job out, each job run by a runtime (runtime.h)
 * in one of `workers` slots. docs/run.md describes the behaviour; the
 * event loop and its decisions are commented in launcher/pool/pool.c.
 * (Owner: launcher/pool/.) */
#ifndef FITRUN_POOL_H
#define FITRUN_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitrun/jobs.h"
#include "fitrun/runtime.h"
#include "fitrun/shard.h"

enum fr_progress {
    FR_PROGRESS_AUTO = 0,   /* bar when stderr is a terminal, else none */
    FR_PROGRESS_BAR,        /* one line redrawn in place (\r), at most 10 times a second */
    FR_PROGRESS_PLAIN,      /* one line every FR_PROGRESS_PLAIN_S seconds */
    FR_PROGRESS_NONE,
};
#define FR_PROGRESS_PLAIN_S 5
int fr_progress_parse(const char *s, enum fr_progress *out);

/* What --resume found in an existing results file. */
struct fr_resume {
    struct fr_idset *ids;      /* ids that have their own result (not DuplicateId) */
    struct fr_idset *lines;    /* input lines that have a result ("line" field, decimal) */
    struct fr_idset *noline;   /* ids of results without "line" (other writers): skipped by id */
    long results;              /* result lines kept */
};

/* Read results file `fd` (named `name` in messages) for --resume: a torn
 * last line (no '\n': the writer was killed mid-write) is cut off with
 * ftruncate() and reported; other lines that are not results are reported
 * with name:line and ignored. Fills *r (fr_resume_free() it). Returns 0, or
 * -1 with a message. */
int fr_resume_scan(int fd, const char *name, struct fr_resume *r, char *err, size_t errlen);
void fr_resume_free(struct fr_resume *r);

struct fr_pool_opts {
    int workers;                          /* slots, >= 1 */
    const struct fr_runtime_ops *ops;
    const struct fr_runtime_config *rtcfg;
    uint64_t cpu_ms;                      /* per job, 0 = none (the pool's CPU clock checks) */
    uint64_t wall_ms;                     /* per job, 0 = none */
    int in_fd;                            /* jobs: a pipe/tty (streamed) or a regular file */
    const char *in_name;
    int out_fd;                           /* results, written one line per write(2) */
    const char *out_name;
    struct fr_shard shard;                /* enabled = only this shard's input lines */
    const struct fr_resume *resume;       /* NULL = fresh run */
    enum fr_progress progress;
    bool quiet;                           /* no progress, no summary */
};

/* Run every job of o->in_fd. Returns the exit status of `fitrun run`:
 * 0 every job got a result, 1 some input line was invalid, 125 fitrun's own
 * error (runtime failed to start, results cannot be written), 128+signal
 * when interrupted by SIGINT (130), SIGTERM (143) or SIGHUP (129). */
int fr_pool_run(const struct fr_pool_opts *o);

#endif
