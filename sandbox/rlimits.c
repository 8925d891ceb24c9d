/* rlimits.c — resource limits: planned in the parent, set in the child.
 *
 * Kernel behaviours worth knowing (docs/sandbox.md has the measurements):
 *  - RLIMIT_CPU: at the soft limit the kernel sends SIGXCPU (default
 *    action: terminate), then once a second until the hard limit, where it
 *    sends SIGKILL. We set hard = soft + 1 s so a well-behaved job dies of
 *    SIGXCPU (a clear "cpu timeout") and SIGKILL is only the backstop for a
 *    job that catches or ignores SIGXCPU. Whole seconds only: cpu_ms is
 *    rounded up.
 *  - RLIMIT_AS counts reserved address space, not memory in use: runtimes
 *    that reserve large ranges up front (Go, the JVM, ASan/TSan shadow
 *    memory, one 64 MiB glibc arena per thread) fail under a small limit.
 *  - RLIMIT_NPROC counts every process of the real user id, not the job's
 *    children, and is not enforced at all for uid 0.
 *  - RLIMIT_FSIZE applies to regular files only (not pipes): exceeding it
 *    sends SIGXFSZ (CPython ignores SIGXFSZ, so Python sees EFBIG instead).
 *
 * Soft and hard are set equal (except CPU) so the job cannot raise the soft
 * limit back up; raising the hard limit needs CAP_SYS_RESOURCE, which the
 * job no longer has, and the seccomp presets deny setrlimit/prlimit64 with
 * a new limit anyway. */
#include <errno.h>
#include <sys/resource.h>

#include "fitrun/common.h"
#include "internal.h"

static int plan_add(struct fr_rlimit_plan *p, int resource, rlim_t soft, rlim_t hard)
{
    if (p->n >= FR_RLIMIT_MAX)
        return -1;
    p->resource[p->n] = resource;
    p->value[p->n].rlim_cur = soft;
    p->value[p->n].rlim_max = hard;
    p->n++;
    return 0;
}

uint64_t fr_cpu_backstop_ms(uint64_t budget_ms)
{
    if (!budget_ms)
        return 0;
    uint64_t margin = budget_ms / 5 > 200 ? budget_ms / 5 : 200;
    /* Never beyond the longest duration fitrun accepts (a budget that long
     * has no use for a backstop anyway): RLIMIT_CPU and a child's
     * setitimer take it as it is. */
    if (budget_ms >= FR_DURATION_MAX_MS - margin)
        return FR_DURATION_MAX_MS > budget_ms ? FR_DURATION_MAX_MS : budget_ms;
    return budget_ms + margin;
}

int fr_rlimits_plan(const struct fr_policy_spec *spec, struct fr_rlimit_plan *out, char *err, size_t errlen)
{
    *out = (struct fr_rlimit_plan){0};
    int rc = 0;
    if (spec->cpu_ms) {
        /* ceil(ms / 1000) without overflow; at least one second. */
        rlim_t soft = (rlim_t)(spec->cpu_ms / 1000 + (spec->cpu_ms % 1000 != 0));
        rc |= plan_add(out, RLIMIT_CPU, soft, soft + 1);
    }
    if (spec->as_bytes)
        rc |= plan_add(out, RLIMIT_AS, spec->as_bytes, spec->as_bytes);
    if (spec->fsize_bytes)
        rc |= plan_add(out, RLIMIT_FSIZE, spec->fsize_bytes, spec->fsize_bytes);
    if (spec->nofile)
        rc |= plan_add(out, RLIMIT_NOFILE, spec->nofile, spec->nofile);
    if (spec->nproc)
        rc |= plan_add(out, RLIMIT_NPROC, spec->nproc, spec->nproc);
    if (spec->stack_bytes)
        rc |= plan_add(out, RLIMIT_STACK, spec->stack_bytes, spec->stack_bytes);
    /* No core files unless asked: a core of an untrusted job is a large,
     * possibly sensitive file written wherever core_pattern says. */
    rc |= plan_add(out, RLIMIT_CORE, spec->core_bytes, spec->core_bytes);
    if (rc) {
        fr_seterr(err, errlen, "sandbox: too many resource limits (internal limit %d)", FR_RLIMIT_MAX);
        return -1;
    }
    return 0;
}

/* Set one limit. A limit above the inherited hard limit cannot be granted
 * without CAP_SYS_RESOURCE; rather than fail the job we clamp to the hard
 * limit we have, which is stricter than what was asked. */
static int apply_one(int resource, struct rlimit want)
{
    if (setrlimit(resource, &want) == 0)
        return 0;
    if (errno != EPERM)
        return -errno;
    struct rlimit cur;
    if (getrlimit(resource, &cur) < 0)
        return -errno;
    if (want.rlim_max <= cur.rlim_max)
        return -EPERM; /* not a raise: something else refused it */
    want.rlim_max = cur.rlim_max;
    if (want.rlim_cur > want.rlim_max)
        want.rlim_cur = want.rlim_max;
    if (setrlimit(resource, &want) < 0)
        return -errno;
    return 0;
}

int fr_rlimits_apply(const struct fr_rlimit_plan *plan)
{
    for (int i = 0; i < plan->n; i++) {
        int rc = apply_one(plan->resource[i], plan->value[i]);
        if (rc < 0)
            return rc;
    }
    return 0;
}
