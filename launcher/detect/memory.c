/* memory.c — how much memory may this process (and its children) use?
 *
 *  total  MemTotal in /proc/meminfo
 *  limit  v2 memory.max / v1 memory.limit_in_bytes, minimum over the own
 *         cgroup and every ancestor (a parent's limit caps its whole
 *         subtree). On v1 the own cgroup's memory.stat also carries
 *         hierarchical_memory_limit, which the kernel computes over ALL
 *         ancestors — including those hidden above a bind-mounted leaf
 *         (Docker on v1), so it is folded into the minimum too.
 *  high   v2 memory.high (throttling threshold), minimum over ancestors:
 *         reported, not a hard limit.
 * "No limit" comes in several spellings: "max" (v2), -1 written to v1
 * (read back as 9223372036854771712, LONG_MAX rounded down to a page) and
 * any value at or above the RAM of the machine. All of them mean none. */
#include <stdlib.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

/* Without MemTotal, anything this large is an "unlimited" spelling. */
#define HUGE_LIMIT (1ull << 62)

uint64_t fr_parse_meminfo_total(const char *text)
{
    const char *p = text;
    while (p && *p) {
        if (!strncmp(p, "MemTotal:", 9)) {
            char buf[64];
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p - 9) : strlen(p + 9);
            if (len >= sizeof buf)
                return 0;
            memcpy(buf, p + 9, len);
            buf[len] = '\0';
            char *t = fr_trim(buf);
            size_t tl = strlen(t);
            uint64_t kb;
            /* The kernel always writes "<n> kB". */
            if (tl < 3 || strcmp(t + tl - 2, "kB"))
                return 0;
            t[tl - 2] = '\0';
            /* A size, so at most FR_SIZE_MAX (1 EiB): the report prints it
             * as a signed 64-bit integer. */
            if (fr_parse_u64(t, &kb) < 0 || kb == 0 || kb > FR_SIZE_MAX / 1024)
                return 0;
            return kb * 1024;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return 0;
}

bool fr_parse_memory_stat_hier(const char *text, uint64_t *v)
{
    static const char key[] = "hierarchical_memory_limit ";
    for (const char *p = text; p && *p;) {
        if (!strncmp(p, key, sizeof key - 1)) {
            char buf[32];
            const char *q = p + sizeof key - 1;
            size_t len = strcspn(q, "\n");
            if (len >= sizeof buf)
                return false;
            memcpy(buf, q, len);
            buf[len] = '\0';
            return fr_parse_u64(buf, v) == 0;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return false;
}

static bool is_unlimited(const struct fr_dx *x, uint64_t v)
{
    uint64_t total = x->res->mem_total;
    return total ? v >= total : v >= HUGE_LIMIT;
}

static enum fr_level read_mem_file(struct fr_dx *x, const char *dir, bool own, const char *name, bool may_note,
                                   double *val, char *src, size_t n)
{
    uint64_t v;
    bool note = may_note && fr_dx_note_missing(x, FR_CTL_MEMORY, dir, own);
    enum fr_level r = fr_cgroup_read_u64(x, dir, name, x->loc[FR_CTL_MEMORY].version == 1, note, &v, src, n);
    if (r != FR_LVL_LIMIT)
        return r;
    if (is_unlimited(x, v))
        return FR_LVL_NONE;
    *val = (double)v;
    return FR_LVL_LIMIT;
}

static enum fr_level read_mem_max(struct fr_dx *x, const char *dir, bool own, double *val, char *src, size_t n)
{
    return read_mem_file(x, dir, own, x->loc[FR_CTL_MEMORY].version == 1 ? "memory.limit_in_bytes" : "memory.max", true,
                         val, src, n);
}

static enum fr_level read_mem_high(struct fr_dx *x, const char *dir, bool own, double *val, char *src, size_t n)
{
    /* A missing memory.max is already noted for this level. */
    return read_mem_file(x, dir, own, "memory.high", false, val, src, n);
}

/* v1: hierarchical_memory_limit in the own memory.stat. */
static void v1_hierarchical(struct fr_dx *x)
{
    struct fr_resources *r = x->res;
    char path[FR_PATH];
    const char *dir = x->loc[FR_CTL_MEMORY].dir;
    fr_dir_file(path, sizeof path, dir, "memory.stat");
    char *text = fr_dx_read_noted(x, path, FR_SMALL_FILE, true, "memory");
    if (!text)
        return;
    uint64_t v;
    if (fr_parse_memory_stat_hier(text, &v) && !is_unlimited(x, v) &&
        (!r->mem_limit.known || (double)v < r->mem_limit.value))
        fr_value_set(&r->mem_limit, (double)v, "%s (hierarchical_memory_limit)", path);
    free(text);
}

void fr_detect_memory(struct fr_dx *x)
{
    struct fr_resources *r = x->res;
    char *text = fr_dx_read_noted(x, "/proc/meminfo", FR_BIG_FILE, false, "memory");
    if (text) {
        r->mem_total = fr_parse_meminfo_total(text);
        if (!r->mem_total)
            fr_detect_note(r, "/proc/meminfo: no valid 'MemTotal: <n> kB' line: total unknown");
        free(text);
    }
    int version = x->loc[FR_CTL_MEMORY].version;
    if (!version)
        return;
    fr_cgroup_walk_min(x, FR_CTL_MEMORY, read_mem_max, &r->mem_limit);
    if (version == 1)
        v1_hierarchical(x);
    else
        fr_cgroup_walk_min(x, FR_CTL_MEMORY, read_mem_high, &r->mem_high);
}
