/* scheduler.c — what did the batch scheduler allocate to this job?
 *
 * Schedulers do not always enforce their allocation with a quota or a
 * cpuset. HTCondor in particular limits CPUs with cgroup *shares*: a job
 * given 8 CPUs in a Docker universe slot on a 256-core node sees 256
 * CPUs, no quota and no cpuset, and only the machine ad says 8. So the
 * allocation is one more upper bound in the minimum.
 *
 * Checked in this order; the first valid one wins, the others are noted:
 *   SLURM_CPUS_PER_TASK                  --cpus-per-task
 *   SLURM_JOB_CPUS_PER_NODE              "72(x2),36": this node's entry
 *                                        (SLURM_NODEID, default the first)
 *   _CONDOR_MACHINE_AD                   file with "Cpus = 8", "Memory = 16000" (MB)
 *   NSLOTS                               SGE / Grid Engine
 *   PBS_NP, NCPUS                        Torque / PBS Pro
 *   LSB_DJOB_NUMPROC                     LSF
 * Memory: the HTCondor ad's Memory, else SLURM_MEM_PER_NODE (MB). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fitrun/common.h"
#include "internal.h"

long fr_parse_slurm_cpus_per_node(const char *s, long index)
{
    if (!s || index < 0)
        return -1;
    const char *p = s;
    long seen = 0, found = -1;
    /* Parse the whole list even after finding our entry: garbage anywhere
     * means the variable is garbage. */
    for (;;) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return -1;
        errno = 0;
        long cpus = strtol(p, &end, 10);
        if (errno || cpus <= 0)
            return -1;
        long repeat = 1;
        p = end;
        if (*p == '(') {
            if (p[1] != 'x' || !isdigit((unsigned char)p[2]))
                return -1;
            errno = 0;
            repeat = strtol(p + 2, &end, 10);
            /* More nodes than a long counts is garbage, not an overflow. */
            if (errno || repeat <= 0 || *end != ')' || repeat > LONG_MAX - seen)
                return -1;
            p = end + 1;
        }
        if (found < 0 && index < seen + repeat)
            found = cpus;
        seen += repeat;
        if (*p == '\0')
            return found;
        if (*p != ',')
            return -1;
        p++;
    }
}

int fr_parse_classad_number(const char *text, const char *name, double *v)
{
    size_t nl = strlen(name);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + len && isspace((unsigned char)*p))
            p++;
        /* Attribute names are case-insensitive; "Cpus" must not match "TotalCpus". */
        if ((size_t)(line + len - p) > nl && !strncasecmp(p, name, nl)) {
            const char *q = p + nl;
            while (q < line + len && (*q == ' ' || *q == '\t'))
                q++;
            if (q < line + len && *q == '=') {
                char buf[64];
                size_t vl = (size_t)(line + len - q - 1);
                if (vl >= sizeof buf)
                    return -1;
                memcpy(buf, q + 1, vl);
                buf[vl] = '\0';
                double d;
                if (fr_parse_double(buf, &d) < 0 || d < 0)
                    return -1;
                *v = d;
                return 1;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

/* A positive number in env var `name`: 1 found, 0 absent, -1 garbage (noted). */
static int env_number(struct fr_dx *x, const char *name, double *v)
{
    const char *s = fr_env_lookup(x->envp, name);
    if (!s)
        return 0;
    if (fr_parse_double(s, v) < 0 || *v <= 0) {
        fr_detect_note(x->res, "%s='%.40s' is not a positive number: ignored", name, s);
        return -1;
    }
    return 1;
}

static int slurm_cpus(struct fr_dx *x, double *v, char *src, size_t n)
{
    if (env_number(x, "SLURM_CPUS_PER_TASK", v) > 0) {
        snprintf(src, n, "SLURM_CPUS_PER_TASK=%s", fr_env_lookup(x->envp, "SLURM_CPUS_PER_TASK"));
        return 1;
    }
    const char *list = fr_env_lookup(x->envp, "SLURM_JOB_CPUS_PER_NODE");
    if (!list)
        return 0;
    const char *node = fr_env_lookup(x->envp, "SLURM_NODEID");
    int64_t idx = 0;
    if (node && (fr_parse_i64(node, &idx) < 0 || idx < 0)) {
        fr_detect_note(x->res, "SLURM_NODEID='%.40s' is not a node index: using the first node's entry", node);
        idx = 0;
    }
    long cpus = fr_parse_slurm_cpus_per_node(list, (long)idx);
    if (cpus < 0) {
        fr_detect_note(x->res, "SLURM_JOB_CPUS_PER_NODE='%.60s' has no valid entry for node %lld: ignored", list,
                       (long long)idx);
        return -1;
    }
    *v = (double)cpus;
    snprintf(src, n, "SLURM_JOB_CPUS_PER_NODE=%.200s (node %lld)", list, (long long)idx);
    return 1;
}

/* HTCondor's machine ad. An absolute path is read under the sysroot (it
 * names a file of the job's filesystem); a relative one from the current
 * directory, as the job would. */
static char *condor_ad(struct fr_dx *x, const char **path)
{
    *path = fr_env_lookup(x->envp, "_CONDOR_MACHINE_AD");
    if (!*path || !**path)
        return NULL;
    char *text = (*path)[0] == '/' ? fr_dx_read(x, *path, FR_BIG_FILE) : fr_read_file(*path, FR_BIG_FILE, NULL);
    if (!text)
        fr_detect_note(x->res, "_CONDOR_MACHINE_AD=%.200s: cannot read: %s", *path, fr_read_strerror(errno));
    return text;
}

static int condor_value(struct fr_dx *x, const char *text, const char *path, const char *attr, double *v, char *src,
                        size_t n)
{
    int r = fr_parse_classad_number(text, attr, v);
    if (r < 0)
        fr_detect_note(x->res, "_CONDOR_MACHINE_AD=%.200s: %s is not a plain number: ignored", path, attr);
    else if (r > 0 && *v <= 0) {
        fr_detect_note(x->res, "_CONDOR_MACHINE_AD=%.200s: %s = 0: ignored", path, attr);
        r = -1;
    }
    if (r > 0)
        snprintf(src, n, "_CONDOR_MACHINE_AD=%.200s (%s)", path, attr);
    return r;
}

static int simple_env(struct fr_dx *x, const char *name, double *v, char *src, size_t n)
{
    int r = env_number(x, name, v);
    if (r > 0)
        snprintf(src, n, "%s=%s", name, fr_env_lookup(x->envp, name));
    return r;
}

/* A memory allocation in MB (both places say MB) is a size in bytes, so
 * at most FR_SIZE_MAX, the largest size fitrun holds anywhere: the report
 * prints it as an integer and the plan divides it. */
static bool mem_fits(struct fr_dx *x, const char *src, double mb)
{
    if (mb * 1048576.0 <= (double)FR_SIZE_MAX)
        return true;
    fr_detect_note(x->res, "%s: %g MB is more than 1 EiB: ignored", src, mb);
    return false;
}

void fr_detect_scheduler(struct fr_dx *x)
{
    struct fr_resources *r = x->res;
    const char *adpath = NULL;
    char *ad = condor_ad(x, &adpath);
    double v;
    char src[FR_SOURCE_MAX];

    /* CPUs: the first valid source wins; later ones that are set are noted. */
    int k;
    for (int step = 0; step < 6; step++) {
        switch (step) {
        case 0: k = slurm_cpus(x, &v, src, sizeof src); break;
        case 1: k = ad ? condor_value(x, ad, adpath, "Cpus", &v, src, sizeof src) : 0; break;
        case 2: k = simple_env(x, "NSLOTS", &v, src, sizeof src); break;
        case 3: k = simple_env(x, "PBS_NP", &v, src, sizeof src); break;
        case 4: k = simple_env(x, "NCPUS", &v, src, sizeof src); break;
        default: k = simple_env(x, "LSB_DJOB_NUMPROC", &v, src, sizeof src); break;
        }
        if (k <= 0)
            continue;
        if (!r->cpu_scheduler.known)
            fr_value_set(&r->cpu_scheduler, v, "%s", src);
        else
            fr_detect_note(r, "%s also set: ignored (%s comes first)", src, r->cpu_scheduler.source);
    }

    /* Memory, in MB in both places. */
    if (ad && condor_value(x, ad, adpath, "Memory", &v, src, sizeof src) > 0 && mem_fits(x, src, v))
        fr_value_set(&r->mem_scheduler, v * 1048576.0, "%s", src);
    else if (simple_env(x, "SLURM_MEM_PER_NODE", &v, src, sizeof src) > 0 && mem_fits(x, src, v))
        fr_value_set(&r->mem_scheduler, v * 1048576.0, "%s", src);
    free(ad);
}
