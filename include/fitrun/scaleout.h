/* fitrun/scaleout.h — running one job file as N shards on a batch system:
 * `fitrun merge` (launcher/scaleout/merge.c) joins the per-shard results
 * and proves nothing was lost; `fitrun submit` (submit.c) writes the SLURM
 * and HTCondor array scripts. Which lines a shard runs is fitrun/shard.h's
 * rule, shared with the pool. */
#ifndef FITRUN_SCALEOUT_H
#define FITRUN_SCALEOUT_H

#include <stdint.h>
#include <stdio.h>

#include "fitrun/shard.h"

/* fitrun merge ------------------------------------------------------------ */

struct fr_merge_opts {
    const char *jobs;           /* jobs file ("-" = stdin) */
    const char *const *results; /* result files */
    int nresults;
    int shards; /* N from --shards; 0 = infer from file names */
};

/* Merge: one result per valid job of `jobs`, in input order, to `out`; every
 * problem on stderr with file:line. Returns the exit status: 0 complete,
 * 1 some valid job has no result, 125 the jobs file cannot be read or the
 * output cannot be written. */
int fr_merge(const struct fr_merge_opts *o, FILE *out);

/* fitrun submit ----------------------------------------------------------- */

struct fr_submit {
    const char *fitrun;  /* absolute path of the fitrun binary to run */
    const char *profile; /* absolute paths */
    const char *jobs;
    const char *out_dir;    /* results.{shard}.jsonl and per-task logs go here */
    const char *workdir;    /* where each task starts */
    int shards;             /* N >= 1 */
    int cpus_per_task;      /* >= 1 */
    uint64_t mem_bytes;     /* whole task; 0 = ask for nothing (site default) */
    const char *mem_origin; /* where mem_bytes comes from, for a comment
                                ("profile memory_per_worker 512.0 MiB x 2 workers"); NULL = none */
    uint64_t time_s;        /* 0 = no limit asked */
    const char *partition;  /* NULL = default partition (slurm only) */
    const char *job_name;   /* NULL = "fitrun" */
};

/* Write the sbatch array script / the HTCondor submit description for s to f.
 * Returns 0, or -1 with the reason in err (relative path, a character the
 * format cannot carry, N or C out of range, write error). */
int fr_submit_slurm(FILE *f, const struct fr_submit *s, char *err, size_t errlen);
int fr_submit_condor(FILE *f, const struct fr_submit *s, char *err, size_t errlen);

/* Time limit: SLURM's own forms ("30" = minutes, "MM:SS", "H:MM:SS",
 * "D-H", "D-H:MM", "D-H:MM:SS") or a duration with a unit ("90m", "2h",
 * "1.5h", "45s"), to whole seconds (rounded up). 0 is refused (SLURM's
 * "no limit" is spelt by leaving --time out), and so is anything beyond
 * fitrun's maximum duration, 365 days. Returns 0 or -1. */
int fr_parse_time_limit(const char *s, uint64_t *seconds);

#endif
