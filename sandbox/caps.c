/* caps.c — capabilities: resolved and prepared with libcap in the parent,
 * dropped in the child.
 *
 * By default every capability goes, from all five sets:
 *   bounding    so that an execve cannot bring any back (uid 0 otherwise
 *               regains its full permitted set on every exec),
 *   ambient     the set that survives execve for non-root users,
 *   effective / permitted / inheritable  with one capset(2).
 * A policy may keep named capabilities ("cap_net_raw"): they stay in the
 * bounding set and in E/P/I, and are raised in the ambient set so they
 * survive an execve for a non-root uid too (the exec preset, and every job
 * that runs under a per-slot uid: identity.c).
 *
 * Child-side cost and safety: libcap 2.66's cap_set_proc() takes the
 * cap_t's own spin lock and makes one capset(2) — no allocation (the
 * unit test test_sandbox_noalloc checks this); cap_drop_bound() and
 * cap_set_ambient() are single prctl(2)s. cap_get_proc()/cap_iab_*
 * allocate, so they are never called from the child.
 *
 * Cost: every PR_CAPBSET_DROP commits a new set of credentials, one call
 * per capability (~40 for root, ~3 us each on the test VM: most of the
 * capability step). So the plan records the builder's bounding set and the
 * child drops only what is there, without reading first; a long-lived
 * worker that only forks jobs can drop its own bounding set once
 * (fr_policy_prepare_worker) and its jobs then skip the loop entirely. */
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>

#include "fitrun/common.h"
#include "internal.h"

int fr_caps_plan(const char *const *keep, struct fr_caps_plan *out, char *err, size_t errlen)
{
    *out = (struct fr_caps_plan){0};
    /* cap_max_bits() asks the running kernel (not the headers) how many
     * capabilities exist, so new kernels' capabilities are dropped too. */
    out->last_cap = (int)cap_max_bits() - 1;
    if (out->last_cap < 0 || out->last_cap > 63) {
        fr_seterr(err, errlen, "sandbox: cannot handle %d capabilities (libcap cap_max_bits)", out->last_cap + 1);
        return -1;
    }
    /* Children inherit a subset of this (the bounding set only shrinks). */
    for (cap_value_t cap = 0; cap <= out->last_cap; cap++)
        if (cap_get_bound(cap) != 0)
            out->bounding |= 1ULL << cap;
    out->state = cap_init(); /* all sets clear */
    if (!out->state) {
        fr_seterr(err, errlen, "sandbox: cap_init: %s", strerror(errno));
        return -1;
    }
    /* The relay (relay.c) keeps CAP_KILL alone, when the builder has it: it
     * must SIGKILL a job that runs under another uid (a slot's). */
    out->relay = cap_init();
    cap_value_t kill_cap = CAP_KILL;
    if (!out->relay ||
        (cap_get_bound(CAP_KILL) > 0 && (cap_set_flag(out->relay, CAP_EFFECTIVE, 1, &kill_cap, CAP_SET) < 0 ||
                                         cap_set_flag(out->relay, CAP_PERMITTED, 1, &kill_cap, CAP_SET) < 0))) {
        fr_seterr(err, errlen, "sandbox: preparing the relay's capabilities: %s", strerror(errno));
        fr_caps_plan_free(out);
        return -1;
    }
    for (size_t i = 0; keep && keep[i]; i++) {
        cap_value_t cap;
        if (cap_from_name(keep[i], &cap) < 0 || cap < 0 || cap > out->last_cap) {
            fr_seterr(err, errlen, "unknown capability '%s' in keep_caps (expected a name like cap_net_raw)", keep[i]);
            fr_caps_plan_free(out);
            return -1;
        }
        out->keep |= 1ULL << cap;
        if (cap_set_flag(out->state, CAP_EFFECTIVE, 1, &cap, CAP_SET) < 0 ||
            cap_set_flag(out->state, CAP_PERMITTED, 1, &cap, CAP_SET) < 0 ||
            cap_set_flag(out->state, CAP_INHERITABLE, 1, &cap, CAP_SET) < 0) {
            fr_seterr(err, errlen, "sandbox: cap_set_flag(%s): %s", keep[i], strerror(errno));
            fr_caps_plan_free(out);
            return -1;
        }
    }
    return 0;
}

void fr_caps_plan_free(struct fr_caps_plan *plan)
{
    if (plan->state)
        cap_free(plan->state);
    if (plan->relay)
        cap_free(plan->relay);
    plan->state = plan->relay = NULL;
}

/* Bounding set first: dropping from it needs CAP_SETPCAP, which the
 * capset below removes. Without CAP_SETPCAP (fitrun started unprivileged)
 * the bounding set cannot be changed; that is safe because the process
 * holds no_new_privs by now, and with it an execve can never gain a
 * capability (the kernel caps the new permitted set at the old one), so we
 * stop dropping instead of failing. */
int fr_caps_drop_bounding(const struct fr_caps_plan *plan)
{
    for (cap_value_t cap = 0; cap <= plan->last_cap; cap++) {
        if (!(plan->bounding & (1ULL << cap)) || (plan->keep & (1ULL << cap)))
            continue;
        if (cap_drop_bound(cap) < 0) {
            if (errno == EPERM)
                return 0;
            return -errno;
        }
    }
    return 0;
}

int fr_caps_prepare_worker(struct fr_caps_plan *plan)
{
    int rc = fr_caps_drop_bounding(plan);
    if (rc < 0)
        return rc;
    uint64_t left = 0;
    for (cap_value_t cap = 0; cap <= plan->last_cap; cap++)
        if (cap_get_bound(cap) != 0)
            left |= 1ULL << cap;
    plan->bounding = left;
    return 0;
}

/* After an identity switch too: a uid change from 0 clears the effective
 * and ambient sets (and the permitted one unless PR_SET_KEEPCAPS was set,
 * identity.c), so the kept capabilities are raised here, after it. */
int fr_caps_set(const struct fr_caps_plan *plan)
{
    /* Ambient: one CLEAR_ALL (libcap's cap_reset_ambient first reads all
     * ~40 capabilities one prctl at a time). EINVAL means the kernel
     * predates ambient capabilities (4.3): nothing to clear then. */
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno;
    if (cap_set_proc(plan->state) < 0)
        return -errno;
    for (cap_value_t cap = 0; cap <= plan->last_cap; cap++) {
        if ((plan->keep & (1ULL << cap)) && cap_set_ambient(cap, CAP_SET) < 0)
            return -errno;
    }
    return 0;
}

int fr_caps_relay(const struct fr_caps_plan *plan)
{
    /* Bounding set: everything (kept capabilities are the job's, not ours). */
    for (cap_value_t cap = 0; cap <= plan->last_cap; cap++)
        if ((plan->bounding & (1ULL << cap)) && cap != CAP_KILL && cap_drop_bound(cap) < 0) {
            if (errno == EPERM)
                break;
            return -errno;
        }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno;
    /* Without CAP_KILL to begin with, the state asks for nothing: fine. */
    return cap_set_proc(plan->relay) < 0 ? -errno : 0;
}
