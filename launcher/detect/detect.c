/* detect.c — one detection run: the order of the steps (mountinfo.c,
 * cgroup_path.c, cpu.c, memory.c, pids.c, shm.c, scheduler.c, then the
 * overrides, override.c) and what follows from all of them together. */
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

extern char **environ;

static void detect_cgroups(struct fr_dx *x)
{
    char *mi = fr_dx_read_noted(x, "/proc/self/mountinfo", FR_BIG_FILE, false, "mounts");
    if (mi) {
        fr_mounts_scan(x, mi, "/proc/self/mountinfo");
        free(mi);
    }
    char *cg = fr_dx_read_noted(x, "/proc/self/cgroup", FR_BIG_FILE, false, "cgroups");
    fr_cgroups_locate(x, cg);
    free(cg);
}

/* `override` names the winning override ("--cpus 8"), "" when none. */
static void combine(struct fr_dx *x, const char *override)
{
    struct fr_resources *r = x->res;
    struct fr_cpu_limit detected, effective;
    fr_cpu_binding(r, true, &detected);
    fr_cpu_binding(r, false, &effective);
    r->cpu_detected = detected.value;
    r->cpu_effective = effective.value;
    /* An override wins over everything. Above what was detected it
     * oversubscribes the kernel's limit: allowed, as asked, but said. */
    if (r->cpu_override.known && r->cpu_override.value > r->cpu_detected + 1e-9)
        fr_detect_note(r, "%s exceeds the %g %s detected (%s); using %g as asked", override, r->cpu_detected,
                       r->cpu_detected == 1 ? "CPU" : "CPUs", detected.name, r->cpu_override.value);

    /* A scheduler's memory allocation bounds us like a cgroup limit. */
    bool below_total = !r->mem_total || r->mem_scheduler.value < (double)r->mem_total;
    if (r->mem_scheduler.known && below_total && (!r->mem_limit.known || r->mem_scheduler.value < r->mem_limit.value))
        r->mem_limit = r->mem_scheduler;

    if (r->shm_size.known && r->mem_limit.known && r->shm_size.value > r->mem_limit.value) {
        char a[32], b[32];
        fr_detect_note(r, "/dev/shm (%s) is larger than the memory limit (%s): tmpfs pages count against the limit",
                       fr_format_size((uint64_t)r->shm_size.value, a, sizeof a),
                       fr_format_size((uint64_t)r->mem_limit.value, b, sizeof b));
    }
}

static void detect_all(struct fr_dx *x, const struct fr_detect_opts *opts)
{
    detect_cgroups(x);
    fr_detect_cpu(x);
    fr_detect_memory(x);
    fr_detect_pids(x);
    fr_detect_shm(x);
    fr_detect_scheduler(x);
    char override[FR_SOURCE_MAX + 48];
    fr_detect_override(x->res, opts, override, sizeof override);
    combine(x, override);
}

int fr_detect(const struct fr_detect_opts *opts, struct fr_resources *out)
{
    memset(out, 0, sizeof *out);
    const char *root = opts && opts->sysroot && opts->sysroot[0] ? opts->sysroot : "/";
    /* fr_dx holds a few paths per controller (~70 KiB): keep it off the stack. */
    struct fr_dx *x = calloc(1, sizeof *x);
    if (!x) {
        fr_detect_note(out, "out of memory: nothing detected");
        out->cpu_affinity = 1;
        out->cpu_detected = out->cpu_effective = 1;
        return 0;
    }
    x->sysroot = root;
    x->live = !strcmp(root, "/");
    x->envp = opts && opts->envp ? opts->envp : environ;
    x->res = out;
    detect_all(x, opts);
    free(x);
    return 0;
}
