/* fitrun/plan.h — turn detected resources into a pool size and thread
 * counts, recording a human-readable reason for every decision. The plan
 * is the one place CPUs are rounded and threads counted: `fitrun run`, its
 * jobs, `fitrun detect`, the wrapper and `--explain` all read these
 * numbers. Pure: no I/O. */
#ifndef FITRUN_PLAN_H
#define FITRUN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "fitrun/detect.h"

enum fr_rounding { FR_ROUND_FLOOR = 0, FR_ROUND_CEIL, FR_ROUND_NEAREST };

#define FR_REASON_MAX 320
#define FR_REASONS_MAX 16

struct fr_plan_opts {
    enum fr_rounding rounding;
    uint64_t memory_per_worker; /* bytes; 0 = not configured */
    int workers_override;       /* > 0: --workers N / profile workers = N */
    /* Threads one job can run at all: > 0 caps threads_per_job (the
     * python preset refuses thread creation: 1), 0 = no cap.
     * threads_why says why (for the reason), may be NULL. */
    int job_threads_max;
    const char *job_threads_why;
};

struct fr_plan {
    int workers;
    int threads_per_worker; /* max(1, floor(effective_cpus / workers)) */
    int threads_per_job;    /* what each job is told to use: min(threads_per_worker, job_threads_max) */
    int threads_whole;      /* one process owning the whole allocation (the wrapper's CMD):
                                    max(1, rounding(effective CPUs)), rounded as the workers are */
    enum fr_rounding rounding;
    int nreasons;
    char reasons[FR_REASONS_MAX][FR_REASON_MAX];
};

void fr_plan_make(const struct fr_resources *res, const struct fr_plan_opts *opts, struct fr_plan *out);

/* "floor" / "ceil" / "nearest"; parse returns 0 or -1. */
const char *fr_rounding_name(enum fr_rounding r);
int fr_rounding_parse(const char *s, enum fr_rounding *out);

/* One line for logs: "plan: 2 workers (effective 2.00 CPUs: affinity 2; ...)". */
const char *fr_plan_summary(const struct fr_resources *res, const struct fr_plan *plan, char *buf, size_t n);

#endif
