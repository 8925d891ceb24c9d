/* bound.c — which CPU limit binds, and so how many CPUs this process may
 * use: the one rule that detection (cpu_detected, cpu_effective), the
 * plan's reasons and the environment export's reasons all read. */
#include "fitrun/detect.h"

void fr_cpu_binding(const struct fr_resources *r, bool detected_only, struct fr_cpu_limit *out)
{
    if (!detected_only && r->cpu_override.known) {
        *out = (struct fr_cpu_limit){"override", "CPU override", r->cpu_override.value, r->cpu_override.source};
        return;
    }
    /* Affinity (∩ cpuset) is always known: the floor every other limit is
     * compared with. On a tie a quota or a scheduler allocation is named
     * rather than the affinity it equals (it is the limit someone set),
     * the scheduler rather than a quota, and the outer fitrun's
     * FITRUN_CPUS never (it is a copy of one of them). */
    *out = (struct fr_cpu_limit){"affinity", "CPU affinity", r->cpu_affinity > 0 ? r->cpu_affinity : 1,
                                 r->cpu_affinity_source};
    const struct {
        const char *name, *what;
        const struct fr_value *v;
        bool named_on_tie;
    } limits[] = {
        {"quota", "cgroup CPU quota", &r->cpu_quota, true},
        {"scheduler", "batch-scheduler allocation", &r->cpu_scheduler, true},
        {"outer", "outer fitrun's FITRUN_CPUS", &r->cpu_outer, false},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        const struct fr_value *v = limits[i].v;
        if (v->known && (v->value < out->value || (limits[i].named_on_tie && v->value == out->value)))
            *out = (struct fr_cpu_limit){limits[i].name, limits[i].what, v->value, v->source};
    }
}
