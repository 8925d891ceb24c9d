/* override.c — the CPU overrides, strongest first: --cpus (or any
 * command-line setting of [resources] cpus), the user's FITRUN_CPUS, the
 * profile's cpus. The winner becomes cpu_override; each loser is noted.
 * Command line > environment > file, as usual. An outer fitrun's
 * FITRUN_CPUS is not an override: only an upper bound (cpu_outer). */
#include <stdio.h>

#include "fitrun/common.h"
#include "internal.h"

int fr_parse_cpus(const char *s, double *out)
{
    double v;
    if (fr_parse_double(s, &v) < 0 || !(v > 0) || v > FR_CPU_BITS)
        return -1;
    *out = v;
    return 0;
}

/* One candidate override: its value, how it is reported (source) and how a
 * note names the request ("--cpus 8", "FITRUN_CPUS=8"). */
struct ask {
    double value;
    char source[FR_SOURCE_MAX];
    char what[FR_SOURCE_MAX + 48];
};

/* A FITRUN_CPUS value that is not a CPU count is noted and left out. */
static bool env_cpus(struct fr_resources *r, const char *env, const char *whose, double *v)
{
    if (fr_parse_cpus(env, v) == 0)
        return true;
    fr_detect_note(r, "%sFITRUN_CPUS='%.40s' is not a number of CPUs (above 0, at most %d): ignored", whose, env,
                   FR_CPU_BITS);
    return false;
}

/* `fitrun -- fitrun run` (the Docker image), or fitrun inside a pool job:
 * the outer fitrun's export is not the user's request. Reporting it as an
 * override would hide the real source (a quota, a cpuset); so detection
 * runs again and the value only stays an upper bound, which keeps a pool
 * job's share (its threads) for a nested fitrun. */
static void outer_bound(struct fr_resources *r, const char *env)
{
    double v;
    if (!env || !env_cpus(r, env, "an outer fitrun's ", &v))
        return;
    fr_value_set(&r->cpu_outer, v, "FITRUN_CPUS=%.40s (exported by an outer fitrun)", env);
    fr_detect_note(r, "FITRUN_CPUS=%.40s was exported by an outer fitrun: detecting again (kept as an upper bound)",
                   env);
}

void fr_detect_override(struct fr_resources *r, const struct fr_detect_opts *o, char *what, size_t n)
{
    struct ask cand[3];
    int k = 0;
    double v;
    what[0] = '\0';
    if (!o)
        return;
    if (o->cpus_override > 0) {
        const char *src = o->cpus_override_source ? o->cpus_override_source : "--cpus";
        cand[k].value = o->cpus_override;
        fr_copy(cand[k].source, sizeof cand[k].source, src);
        snprintf(cand[k].what, sizeof cand[k].what, "%.200s %g", src, o->cpus_override);
        k++;
    }
    outer_bound(r, o->cpus_outer);
    if (o->cpus_env && env_cpus(r, o->cpus_env, "", &v)) {
        cand[k].value = v;
        snprintf(cand[k].source, sizeof cand[k].source, "FITRUN_CPUS=%.40s", o->cpus_env);
        snprintf(cand[k].what, sizeof cand[k].what, "FITRUN_CPUS=%.40s", o->cpus_env);
        k++;
    }
    if (o->cpus_profile > 0) {
        const char *src = o->cpus_profile_source ? o->cpus_profile_source : "profile";
        cand[k].value = o->cpus_profile;
        fr_copy(cand[k].source, sizeof cand[k].source, src);
        snprintf(cand[k].what, sizeof cand[k].what, "cpus = %g (%.200s)", o->cpus_profile, src);
        k++;
    }
    if (k == 0)
        return;
    fr_value_set(&r->cpu_override, cand[0].value, "%s", cand[0].source);
    fr_copy(what, n, cand[0].what);
    for (int i = 1; i < k; i++)
        fr_detect_note(r, "%s ignored: %s given", cand[i].what, cand[0].source);
}
