/* cpu.c — how many CPUs may this process keep busy?
 *
 *  online    sys/devices/system/cpu/online
 *  affinity  sched_getaffinity() (live) or Cpus_allowed_list (sysroot),
 *            intersected with the cgroup cpuset: cpuset.cpus.effective (v2),
 *            cpuset.effective_cpus or cpuset.cpus (v1), over every ancestor
 *  quota     v2 cpu.max / v1 cpu.cfs_quota_us ÷ cpu.cfs_period_us, the
 *            minimum over the own cgroup and every ancestor up to the mount:
 *            a parent's quota throttles all its children together
 *  shares    v1 cpu.shares / v2 cpu.weight: REPORTED ONLY. They are relative
 *            weights that matter only under contention; on an idle 256-core
 *            node a job with shares 1024 may use all 256 CPUs, and on a busy
 *            one it gets its share of whatever is contended. Neither is a
 *            number of CPUs, so sizing from them (as old JVMs did) is wrong. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#define CFS_DEFAULT_PERIOD 100000.0 /* µs: kernel default, assumed for a one-field cpu.max */

/* ---- CPU lists ---- */

static int parse_uint(const char **p, long max, long *out)
{
    const char *s = *p;
    long v = 0;
    if (*s < '0' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
        if (v > max)
            return -1;
    }
    *p = s;
    *out = v;
    return 0;
}

static const char *skip_ws(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    return s;
}

/* One item: "A", "A-B" or the kernel's strided "A-B:USED/GROUP". */
static int parse_item(const char **p, uint64_t *tmp)
{
    long a, b, used = 1, group = 1;
    if (parse_uint(p, FR_CPU_BITS - 1, &a) < 0)
        return -1;
    b = a;
    if (**p == '-') {
        (*p)++;
        if (parse_uint(p, FR_CPU_BITS - 1, &b) < 0 || b < a)
            return -1;
        if (**p == ':') {
            (*p)++;
            if (parse_uint(p, FR_CPU_BITS, &used) < 0 || **p != '/')
                return -1;
            (*p)++;
            if (parse_uint(p, FR_CPU_BITS, &group) < 0 || used == 0 || group == 0 || used > group)
                return -1;
        }
    }
    for (long i = a; i <= b; i++)
        if ((i - a) % group < used)
            tmp[i / 64] |= 1ull << (i % 64);
    return 0;
}

int fr_cpulist_parse(const char *s, uint64_t *mask, int nbits)
{
    uint64_t tmp[FR_MASK_WORDS] = {0};
    if (!s)
        return -1;
    const char *p = skip_ws(s);
    /* Items separated by single commas; no empty item, no trailing comma. */
    if (*p)
        for (;;) {
            if (parse_item(&p, tmp) < 0)
                return -1;
            if (*p != ',')
                break;
            p++;
        }
    if (*skip_ws(p))
        return -1;
    int count = 0;
    for (int w = 0; w < FR_MASK_WORDS; w++)
        count += __builtin_popcountll(tmp[w]);
    if (mask && nbits > 0) {
        int words = (nbits + 63) / 64;
        for (int w = 0; w < words; w++) {
            uint64_t bits = w < FR_MASK_WORDS ? tmp[w] : 0;
            if (w == words - 1 && nbits % 64)
                bits &= (1ull << (nbits % 64)) - 1;
            mask[w] = bits;
        }
    }
    return count;
}

static bool bit_set(const uint64_t *mask, int i)
{
    return (mask[i / 64] >> (i % 64)) & 1;
}

char *fr_cpulist_format(const uint64_t *mask, int nbits, char *buf, size_t n)
{
    size_t used = 0;
    if (n == 0)
        return buf;
    buf[0] = '\0';
    for (int i = 0; i < nbits;) {
        if (!bit_set(mask, i)) {
            i++;
            continue;
        }
        int j = i;
        while (j + 1 < nbits && bit_set(mask, j + 1))
            j++;
        char item[32];
        int l = j > i ? snprintf(item, sizeof item, "%s%d-%d", used ? "," : "", i, j)
                      : snprintf(item, sizeof item, "%s%d", used ? "," : "", i);
        if (used + (size_t)l + 4 > n) { /* keep room for "..." */
            snprintf(buf + used, n - used, "...");
            return buf;
        }
        memcpy(buf + used, item, (size_t)l + 1);
        used += (size_t)l;
        i = j + 1;
    }
    return buf;
}

static int mask_count(const uint64_t *m)
{
    int c = 0;
    for (int w = 0; w < FR_MASK_WORDS; w++)
        c += __builtin_popcountll(m[w]);
    return c;
}

/* ---- quota parsers ---- */

int fr_parse_cpu_max(const char *s, double *cpus, bool *extra, const char **why)
{
    char buf[128], *save = NULL;
    /* "max 100000\n" is 11 bytes: longer text is garbage, never cut to fit. */
    if (s && strlen(s) >= sizeof buf) {
        *extra = false;
        *why = "too long";
        return -1;
    }
    fr_copy(buf, sizeof buf, s ? s : "");
    char *quota = strtok_r(buf, " \t\n", &save);
    char *period = strtok_r(NULL, " \t\n", &save);
    *extra = strtok_r(NULL, " \t\n", &save) != NULL;
    /* Whole microseconds, as the kernel writes them: then quota / period is
     * a finite number above 0 ("1e308 1e-300" would be infinite, "1e-300
     * 1e300" zero CPUs). */
    uint64_t p = (uint64_t)CFS_DEFAULT_PERIOD, q;
    if (!quota) {
        *why = "empty";
        return -1;
    }
    if (period && (fr_parse_u64(period, &p) < 0 || p == 0)) {
        *why = "period is not a positive whole number";
        return -1;
    }
    if (!strcmp(quota, "max"))
        return 0;
    if (fr_parse_u64(quota, &q) < 0 || q == 0) {
        *why = "quota is neither 'max' nor a positive whole number";
        return -1;
    }
    *cpus = (double)q / (double)p;
    return 1;
}

int fr_parse_cfs(const char *quota, const char *period, double *cpus, const char **why)
{
    int64_t q;
    uint64_t p;
    if (fr_parse_i64(quota, &q) < 0) {
        *why = "cpu.cfs_quota_us is not a number";
        return -1;
    }
    if (q == -1)
        return 0;
    if (q <= 0) {
        *why = "cpu.cfs_quota_us is neither -1 nor positive";
        return -1;
    }
    if (!period || fr_parse_u64(period, &p) < 0 || p == 0) {
        *why = "cpu.cfs_period_us is missing, zero or not a number";
        return -1;
    }
    *cpus = (double)q / (double)p;
    return 1;
}

/* ---- cgroup readers (one level each) ---- */

static enum fr_level read_cpu_max(struct fr_dx *x, const char *dir, bool own, double *val, char *src, size_t n)
{
    char path[FR_PATH];
    fr_dir_file(path, sizeof path, dir, "cpu.max");
    char *text = fr_dx_read_noted(x, path, FR_SMALL_FILE, !fr_dx_note_missing(x, FR_CTL_CPU, dir, own), "cpu quota");
    if (!text)
        return FR_LVL_SKIP;
    const char *why = NULL;
    bool extra = false;
    int r = fr_parse_cpu_max(text, val, &extra, &why);
    free(text);
    if (r < 0) {
        fr_detect_note(x->res, "%s: %s: ignored", path, why);
        return FR_LVL_SKIP;
    }
    if (extra)
        fr_detect_note(x->res, "%s: fields after the period ignored", path);
    fr_copy(src, n, path);
    return r ? FR_LVL_LIMIT : FR_LVL_NONE;
}

static enum fr_level read_cfs(struct fr_dx *x, const char *dir, bool own, double *val, char *src, size_t n)
{
    char qpath[FR_PATH], ppath[FR_PATH];
    fr_dir_file(qpath, sizeof qpath, dir, "cpu.cfs_quota_us");
    fr_dir_file(ppath, sizeof ppath, dir, "cpu.cfs_period_us");
    char *q = fr_dx_read_noted(x, qpath, FR_SMALL_FILE, !fr_dx_note_missing(x, FR_CTL_CPU, dir, own), "cpu quota");
    if (!q)
        return FR_LVL_SKIP;
    int64_t qv;
    char *p = NULL;
    /* The period only matters when there is a quota. */
    if (fr_parse_i64(q, &qv) == 0 && qv != -1)
        p = fr_dx_read_noted(x, ppath, FR_SMALL_FILE, false, "cpu quota period");
    const char *why = NULL;
    int r = fr_parse_cfs(q, p, val, &why);
    free(q);
    free(p);
    if (r < 0) {
        fr_detect_note(x->res, "%s: %s: ignored", qpath, why);
        return FR_LVL_SKIP;
    }
    fr_copy(src, n, qpath);
    return r ? FR_LVL_LIMIT : FR_LVL_NONE;
}

/* ---- cpuset: intersect every level ---- */

struct cpuset_walk {
    uint64_t mask[FR_MASK_WORDS];
    bool any;
    char source[FR_SOURCE_MAX];
};

static void visit_cpuset(struct fr_dx *x, const char *dir, bool own, void *arg)
{
    struct cpuset_walk *w = arg;
    char path[FR_PATH];
    const char *names[2] = {"cpuset.cpus.effective", NULL};
    if (x->loc[FR_CTL_CPUSET].version == 1) {
        /* effective_cpus exists since 4.x and is what the kernel enforces;
         * older kernels only have cpuset.cpus. */
        names[0] = "cpuset.effective_cpus";
        names[1] = "cpuset.cpus";
    }
    char *text = NULL;
    (void)own;
    /* Quiet when missing: on v2 the cpuset controller is rarely enabled
     * below the root, and then the nearest ancestor's file is the answer. */
    for (int i = 0; i < 2 && names[i] && !text; i++) {
        fr_dir_file(path, sizeof path, dir, names[i]);
        text = fr_dx_read_noted(x, path, FR_SMALL_FILE, true, "cpuset");
    }
    if (!text)
        return;
    uint64_t m[FR_MASK_WORDS];
    int count = fr_cpulist_parse(text, m, FR_CPU_BITS);
    free(text);
    if (count < 0) {
        fr_detect_note(x->res, "%s: not a CPU list: ignored", path);
        return;
    }
    if (count == 0) {
        fr_detect_note(x->res, "%s: empty: ignored", path);
        return;
    }
    if (!w->any) {
        memcpy(w->mask, m, sizeof m);
        fr_copy(w->source, sizeof w->source, path); /* the deepest file read */
        w->any = true;
        return;
    }
    for (int i = 0; i < FR_MASK_WORDS; i++)
        w->mask[i] &= m[i];
}

/* ---- affinity ---- */

/* Live: sched_getaffinity with a mask big enough for the machine. The glibc
 * cpu_set_t holds 1024 CPUs; on bigger hosts the kernel answers EINVAL
 * and we retry with a doubled CPU_ALLOC mask. */
static int live_affinity(struct fr_dx *x, uint64_t *mask)
{
    for (int ncpus = 1024; ncpus <= (1 << 20); ncpus *= 2) {
        cpu_set_t *set = CPU_ALLOC((size_t)ncpus);
        if (!set) {
            fr_detect_note(x->res, "sched_getaffinity: cannot allocate a %d-CPU mask", ncpus);
            return -1;
        }
        size_t size = CPU_ALLOC_SIZE((size_t)ncpus);
        if (sched_getaffinity(0, size, set) == 0) {
            int count = CPU_COUNT_S(size, set);
            memset(mask, 0, FR_MASK_WORDS * sizeof *mask);
            for (int i = 0; i < ncpus; i++)
                if (CPU_ISSET_S((size_t)i, size, set) && i < FR_CPU_BITS)
                    mask[i / 64] |= 1ull << (i % 64);
            CPU_FREE(set);
            if (count > mask_count(mask))
                fr_detect_note(x->res, "sched_getaffinity: CPUs above %d ignored", FR_CPU_BITS - 1);
            return mask_count(mask);
        }
        int err = errno;
        CPU_FREE(set);
        if (err != EINVAL) {
            fr_detect_note(x->res, "sched_getaffinity: %s", strerror(err));
            return -1;
        }
    }
    fr_detect_note(x->res, "sched_getaffinity: EINVAL even with a 1048576-CPU mask");
    return -1;
}

/* Sysroot: "Cpus_allowed_list:\t0-3" in proc/self/status. */
static int status_affinity(struct fr_dx *x, uint64_t *mask)
{
    const char *path = "/proc/self/status";
    char *text = fr_dx_read_noted(x, path, FR_BIG_FILE, false, "affinity");
    if (!text)
        return -1;
    int count = -1;
    int lineno = 0;
    bool found = false;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        if (strncmp(line, "Cpus_allowed_list:", 18))
            continue;
        found = true;
        count = fr_cpulist_parse(line + 18, mask, FR_CPU_BITS);
        if (count <= 0) {
            fr_detect_note(x->res, "%s line %d: Cpus_allowed_list is not a non-empty CPU list: ignored", path, lineno);
            count = -1;
        }
        break;
    }
    if (!found)
        fr_detect_note(x->res, "%s: no Cpus_allowed_list line", path);
    free(text);
    return count;
}

static int online_cpus(struct fr_dx *x, uint64_t *mask)
{
    const char *path = "/sys/devices/system/cpu/online";
    char *text = fr_dx_read_noted(x, path, FR_SMALL_FILE, false, "online CPUs");
    int count = -1;
    if (text) {
        count = fr_cpulist_parse(text, mask, FR_CPU_BITS);
        if (count <= 0) {
            fr_detect_note(x->res, "%s: not a non-empty CPU list: ignored", path);
            count = -1;
        }
        free(text);
    }
    if (count < 0 && x->live) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n > 0) {
            fr_detect_note(x->res, "online CPUs from sysconf(_SC_NPROCESSORS_ONLN) instead");
            count = (int)n;
            memset(mask, 0, FR_MASK_WORDS * sizeof *mask);
        }
    }
    return count;
}

static void detect_affinity(struct fr_dx *x)
{
    struct fr_resources *r = x->res;
    uint64_t online[FR_MASK_WORDS] = {0}, aff[FR_MASK_WORDS] = {0};
    int n_online = online_cpus(x, online);
    r->cpu_online = n_online > 0 ? n_online : 0;

    int n_aff = x->live ? live_affinity(x, aff) : status_affinity(x, aff);
    const char *aff_src = x->live ? "sched_getaffinity" : "/proc/self/status";
    if (n_aff <= 0 && n_online > 0 && mask_count(online) == n_online) {
        fr_detect_note(x->res, "affinity unknown: assuming every online CPU");
        memcpy(aff, online, sizeof aff);
        n_aff = n_online;
        aff_src = "/sys/devices/system/cpu/online";
    }

    struct cpuset_walk cs = {.any = false};
    fr_cgroup_walk(x, FR_CTL_CPUSET, visit_cpuset, &cs);
    if (cs.any && mask_count(cs.mask) == 0) {
        /* The kernel keeps a child's cpuset inside its parent's: levels that
         * share no CPU are garbage, ignored like an empty cpuset file. */
        fr_detect_note(x->res, "%s shares no CPU with the cpusets above it: cpusets ignored", cs.source);
        cs.any = false;
    }
    if (cs.any) {
        char list[FR_SOURCE_MAX];
        fr_value_set(&r->cpu_cpuset, mask_count(cs.mask), "%s", cs.source);
        fr_copy(r->cpu_cpuset_list, sizeof r->cpu_cpuset_list,
                fr_cpulist_format(cs.mask, FR_CPU_BITS, list, sizeof list));
    }

    if (n_aff <= 0) {
        /* Nothing known at all (an empty sysroot): one CPU is the only safe answer. */
        int fallback = cs.any ? (int)r->cpu_cpuset.value : n_online > 0 ? n_online : 1;
        fr_detect_note(x->res, "affinity unknown: using %d CPU%s", fallback, fallback == 1 ? "" : "s");
        r->cpu_affinity = fallback;
        fr_copy(r->cpu_affinity_source, sizeof r->cpu_affinity_source,
                cs.any         ? cs.source
                : n_online > 0 ? "/sys/devices/system/cpu/online"
                               : "fallback: nothing known");
        if (cs.any)
            fr_copy(r->cpu_affinity_list, sizeof r->cpu_affinity_list, r->cpu_cpuset_list);
        return;
    }
    uint64_t both[FR_MASK_WORDS];
    for (int i = 0; i < FR_MASK_WORDS; i++)
        both[i] = aff[i] & (cs.any ? cs.mask[i] : ~0ull);
    int n_both = mask_count(both);
    if (cs.any && n_both == 0) {
        fr_detect_note(x->res, "affinity (%s) and cpuset (%s) do not intersect: using the affinity alone", aff_src,
                       cs.source);
        memcpy(both, aff, sizeof both);
        n_both = n_aff;
    } else if (cs.any && n_both < n_aff) {
        /* "sched_getaffinity ∩ /sys/fs/cgroup/cpuset/.../cpuset.cpus" (truncated if need be) */
        fr_copy(r->cpu_affinity_source, sizeof r->cpu_affinity_source, aff_src);
        size_t l = strlen(r->cpu_affinity_source);
        fr_copy(r->cpu_affinity_source + l, sizeof r->cpu_affinity_source - l, " ∩ ");
        l = strlen(r->cpu_affinity_source);
        fr_copy(r->cpu_affinity_source + l, sizeof r->cpu_affinity_source - l, cs.source);
    }
    if (!r->cpu_affinity_source[0])
        fr_copy(r->cpu_affinity_source, sizeof r->cpu_affinity_source, aff_src);
    r->cpu_affinity = n_both;
    char list[FR_SOURCE_MAX];
    fr_copy(r->cpu_affinity_list, sizeof r->cpu_affinity_list, fr_cpulist_format(both, FR_CPU_BITS, list, sizeof list));
}

static void detect_shares(struct fr_dx *x)
{
    const struct fr_dx_loc *loc = &x->loc[FR_CTL_CPU];
    if (!loc->version)
        return;
    uint64_t v;
    char src[FR_SOURCE_MAX];
    const char *name = loc->version == 1 ? "cpu.shares" : "cpu.weight";
    if (fr_cgroup_read_u64(x, loc->dir, name, false, false, &v, src, sizeof src) == FR_LVL_LIMIT)
        fr_value_set(&x->res->cpu_shares, (double)v, "%s", src);
}

void fr_detect_cpu(struct fr_dx *x)
{
    detect_affinity(x);
    const struct fr_dx_loc *loc = &x->loc[FR_CTL_CPU];
    if (loc->version)
        fr_cgroup_walk_min(x, FR_CTL_CPU, loc->version == 1 ? read_cfs : read_cpu_max, &x->res->cpu_quota);
    detect_shares(x);
}
