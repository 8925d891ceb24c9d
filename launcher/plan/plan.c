/* plan.c — from detected resources to a pool size (see fitrun/plan.h).
 *
 *   workers = max(1, rounding(effective CPUs))
 *             capped by memory limit / memory per worker (when configured)
 *             capped by the pids left (minus headroom) / pids per worker
 *   --workers N replaces the result (reported, with warnings when it
 *   exceeds a cap)
 *   threads_per_worker = max(1, floor(effective / workers))
 *   threads_per_job = threads_per_worker, capped by what a job's sandbox
 *   lets it run (job_threads_max: 1 under the python preset)
 *   threads_whole = max(1, rounding(effective CPUs)): one process that
 *   owns the whole allocation (the wrapper's CMD)
 *
 * Every decision appends a reason, so `fitrun detect` and the start of
 * `fitrun run` can say why they chose what they chose. Pure: no I/O. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fitrun/plan.h"
#include "fitrun/common.h"

/* pids kept free for fitrun itself, its threads, a shell and helpers. */
#define PIDS_HEADROOM 16
/* Floating error in quota / period must not turn 2.0 into 1.999…: floor(1.9999999999) = 1. */
#define EPS 1e-9

static void reason(struct fr_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(struct fr_plan *p, const char *fmt, ...)
{
    if (p->nreasons >= FR_REASONS_MAX)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reasons[p->nreasons++], FR_REASON_MAX, fmt, ap);
    va_end(ap);
}

const char *fr_rounding_name(enum fr_rounding r)
{
    switch (r) {
    case FR_ROUND_CEIL: return "ceil";
    case FR_ROUND_NEAREST: return "nearest";
    default: return "floor";
    }
}

int fr_rounding_parse(const char *s, enum fr_rounding *out)
{
    static const enum fr_rounding all[] = {FR_ROUND_FLOOR, FR_ROUND_CEIL, FR_ROUND_NEAREST};
    for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(s, fr_rounding_name(all[i]))) {
            *out = all[i];
            return 0;
        }
    return -1;
}

static double round_cpus(double e, enum fr_rounding r)
{
    switch (r) {
    case FR_ROUND_CEIL: return ceil(e - EPS);
    case FR_ROUND_NEAREST: return floor(e + 0.5 + EPS);
    default: return floor(e + EPS);
    }
}

static const char *cpus_word(double n)
{
    return n == 1 ? "CPU" : "CPUs";
}

/* "quota 0.5" / "quota none" */
static void bound(char *buf, size_t n, const char *name, const struct fr_value *v)
{
    if (v->known)
        snprintf(buf, n, "%s %g", name, v->value);
    else
        snprintf(buf, n, "%s none", name);
}

/* The detected bounds, then the one that binds, with its source (paths
 * can be long: only that one is named). An override replaces the detected
 * value (fitrun/detect.h); the reason then says what it replaced. */
static void cpu_reason(const struct fr_resources *res, struct fr_plan *p, double eff)
{
    char q[64], s[64], o[64] = "";
    bound(q, sizeof q, "quota", &res->cpu_quota);
    bound(s, sizeof s, "scheduler", &res->cpu_scheduler);
    if (res->cpu_outer.known)
        snprintf(o, sizeof o, ", outer fitrun %g", res->cpu_outer.value);
    struct fr_cpu_limit d;
    fr_cpu_binding(res, true, &d);
    double det = res->cpu_detected > 0 ? res->cpu_detected : eff;
    if (res->cpu_override.known)
        reason(
            p,
            "effective %g %s: override from %.100s, replacing the detected %g = min(affinity %d, %s, %s%s): %s from %.100s",
            eff, cpus_word(eff), res->cpu_override.source, det, res->cpu_affinity, q, s, o, d.name, d.source);
    else
        reason(p, "effective %g %s = min(affinity %d, %s, %s%s): %s from %.200s", eff, cpus_word(eff),
               res->cpu_affinity, q, s, o, d.name, d.source);
    if (res->cpu_shares.known)
        reason(p, "cpu shares/weight %g ignored: a relative weight, not a number of CPUs", res->cpu_shares.value);
}

/* Memory cap: a configured per-worker size against the limit (or RAM). */
static int memory_cap(const struct fr_resources *res, const struct fr_plan_opts *o, struct fr_plan *p, int w)
{
    if (!o->memory_per_worker)
        return w;
    char per[32], lim[32];
    fr_format_size(o->memory_per_worker, per, sizeof per);
    double limit = res->mem_limit.known ? res->mem_limit.value : (double)res->mem_total;
    const char *src = res->mem_limit.known ? res->mem_limit.source : "MemTotal, no memory limit";
    if (!res->mem_limit.known && limit <= 0) { /* a limit of 0 is a limit: it holds no worker */
        reason(p, "memory: %s per worker asked, but neither a memory limit nor MemTotal is known: no memory cap", per);
        return w;
    }
    fr_format_size((uint64_t)limit, lim, sizeof lim);
    double cap = floor(limit / (double)o->memory_per_worker);
    if (cap < 1) {
        reason(p, "memory: %s [%.150s] holds less than one worker of %s: 1 worker anyway", lim, src, per);
        return 1;
    }
    if (cap < w) {
        reason(p, "memory: %s [%.150s] / %s per worker = %g: %d -> %d workers", lim, src, per, cap, w, (int)cap);
        return (int)cap;
    }
    reason(p, "memory: %s [%.150s] / %s per worker = %g >= %d: no cap", lim, src, per, cap, w);
    return w;
}

/* pids left for us: the tightest level's max - current, else what we know. */
static bool pids_room(const struct fr_resources *res, double *room, const char **src)
{
    if (res->pids_available.known) {
        *room = res->pids_available.value;
        *src = res->pids_available.source;
        return true;
    }
    if (res->pids_limit.known) {
        double cur = res->pids_current.known ? res->pids_current.value : 0;
        *room = res->pids_limit.value > cur ? res->pids_limit.value - cur : 0;
        *src = res->pids_limit.source;
        return true;
    }
    return false;
}

/* Each worker costs its own pid, one per compute thread beyond the first,
 * and one for the job it forks: threads + 1. */
static int pids_cap(const struct fr_resources *res, struct fr_plan *p, int w, int threads)
{
    double room;
    const char *src;
    if (!pids_room(res, &room, &src))
        return w;
    double budget = room - PIDS_HEADROOM;
    int cost = threads + 1;
    double cap = floor(budget / cost);
    if (cap < 1) {
        reason(p, "pids: %g left [%.150s], %d kept as headroom: room for less than one worker: 1 worker anyway", room,
               src, PIDS_HEADROOM);
        return 1;
    }
    if (cap < w) {
        reason(p, "pids: (%g left [%.150s] - %d headroom) / %d per worker = %g: %d -> %d workers", room, src,
               PIDS_HEADROOM, cost, cap, w, (int)cap);
        return (int)cap;
    }
    reason(p, "pids: (%g left - %d headroom) / %d per worker = %g >= %d: no cap", room, PIDS_HEADROOM, cost, cap, w);
    return w;
}

static int threads_for(double eff, int w)
{
    int t = (int)floor(eff / w + EPS);
    return t < 1 ? 1 : t;
}

/* --workers N: wins, but say what it overrides and which cap it breaks. */
static void apply_override(const struct fr_resources *res, const struct fr_plan_opts *o, struct fr_plan *p, double eff)
{
    int n = o->workers_override;
    reason(p, "--workers %d overrides the computed %d", n, p->workers);
    if (n > eff + EPS)
        reason(p, "warning: %d workers on %g CPUs: oversubscribed", n, eff);
    double limit = res->mem_limit.known ? res->mem_limit.value : (double)res->mem_total;
    if (o->memory_per_worker && limit > 0 && (double)o->memory_per_worker * n > limit) {
        char per[32], lim[32];
        reason(p, "warning: %d workers x %s exceed %s %s", n, fr_format_size(o->memory_per_worker, per, sizeof per),
               res->mem_limit.known ? "the memory limit" : "MemTotal",
               fr_format_size((uint64_t)limit, lim, sizeof lim));
    }
    double room;
    const char *src;
    if (pids_room(res, &room, &src) && (double)n * 2 > room - PIDS_HEADROOM)
        reason(p, "warning: %d workers may exhaust the %g pids left [%.150s]", n, room, src);
    p->workers = n;
}

void fr_plan_make(const struct fr_resources *res, const struct fr_plan_opts *opts, struct fr_plan *out)
{
    static const struct fr_plan_opts defaults = {FR_ROUND_FLOOR, 0, 0, 0, NULL};
    const struct fr_plan_opts *o = opts ? opts : &defaults;
    memset(out, 0, sizeof *out);
    out->rounding = o->rounding;
    double eff = res->cpu_effective > 0 ? res->cpu_effective : 1;
    cpu_reason(res, out, eff);

    double r = round_cpus(eff, o->rounding);
    int w = r < 1 ? 1 : r > 1e6 ? 1000000 : (int)r;
    out->threads_whole = w;
    reason(out, "%s(%g) = %g -> %d worker%s%s", fr_rounding_name(o->rounding), eff, r, w, w == 1 ? "" : "s",
           r < 1 ? " (never fewer than one)" : "");
    w = memory_cap(res, o, out, w);
    w = pids_cap(res, out, w, threads_for(eff, w));
    out->workers = w;
    if (o->workers_override > 0)
        apply_override(res, o, out, eff);
    out->threads_per_worker = threads_for(eff, out->workers);
    reason(out, "%d thread%s per worker = max(1, floor(%g / %d))", out->threads_per_worker,
           out->threads_per_worker == 1 ? "" : "s", eff, out->workers);
    out->threads_per_job = out->threads_per_worker;
    if (o->job_threads_max > 0 && o->job_threads_max < out->threads_per_worker) {
        out->threads_per_job = o->job_threads_max;
        reason(out, "%d thread%s per job, not %d: %s", out->threads_per_job, out->threads_per_job == 1 ? "" : "s",
               out->threads_per_worker, o->job_threads_why ? o->job_threads_why : "the sandbox caps threads");
    }
}

const char *fr_plan_summary(const struct fr_resources *res, const struct fr_plan *plan, char *buf, size_t n)
{
    char mem[32] = "none";
    if (res->mem_limit.known)
        fr_format_size((uint64_t)res->mem_limit.value, mem, sizeof mem);
    int k = snprintf(buf, n, "plan: %d worker%s x %d thread%s (effective %g CPUs: affinity %d", plan->workers,
                     plan->workers == 1 ? "" : "s", plan->threads_per_job, plan->threads_per_job == 1 ? "" : "s",
                     res->cpu_effective, res->cpu_affinity);
    const struct {
        const char *name;
        const struct fr_value *v;
    } parts[] = {{"quota", &res->cpu_quota},
                 {"scheduler", &res->cpu_scheduler},
                 {"outer fitrun", &res->cpu_outer},
                 {"override", &res->cpu_override}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && k >= 0 && (size_t)k < n; i++)
        if (parts[i].v->known)
            k += snprintf(buf + k, n - (size_t)k, "; %s %g", parts[i].name, parts[i].v->value);
    if (k >= 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, "; memory limit %s)", mem);
    return buf;
}
