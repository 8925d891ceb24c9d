/* pids.c — how many more processes and threads may we start?
 *
 * pids.max ("max" = none) limits the number of tasks (threads count!) in
 * a cgroup's whole subtree, and pids.current counts them. A parent's limit
 * is shared by all its children, so the room left is the minimum over the
 * limited levels of pids.max - pids.current, each read at its own level —
 * not simply the smallest pids.max minus our own pids.current. */
#include <string.h>

#include "internal.h"

static void visit_pids(struct fr_dx *x, const char *dir, bool own, void *arg)
{
    (void)arg;
    struct fr_resources *r = x->res;
    uint64_t max, cur = 0;
    char src[FR_SOURCE_MAX], cursrc[FR_SOURCE_MAX];
    bool note = fr_dx_note_missing(x, FR_CTL_PIDS, dir, own);
    enum fr_level lm = fr_cgroup_read_u64(x, dir, "pids.max", false, note, &max, src, sizeof src);
    enum fr_level lc = FR_LVL_SKIP;
    if (own || lm == FR_LVL_LIMIT)
        lc = fr_cgroup_read_u64(x, dir, "pids.current", false, note, &cur, cursrc, sizeof cursrc);
    if (own && lc == FR_LVL_LIMIT)
        fr_value_set(&r->pids_current, (double)cur, "%s", cursrc);
    if (lm != FR_LVL_LIMIT)
        return;
    if (!r->pids_limit.known || (double)max < r->pids_limit.value)
        fr_value_set(&r->pids_limit, (double)max, "%s", src);
    if (lc != FR_LVL_LIMIT) {
        fr_detect_note(r, "%s: limit without a readable pids.current beside it: room not known there", src);
        return;
    }
    double room = max > cur ? (double)(max - cur) : 0;
    if (!r->pids_available.known || room < r->pids_available.value)
        fr_value_set(&r->pids_available, room, "%s - pids.current", src);
}

void fr_detect_pids(struct fr_dx *x)
{
    if (x->loc[FR_CTL_PIDS].version)
        fr_cgroup_walk(x, FR_CTL_PIDS, visit_pids, NULL);
}
