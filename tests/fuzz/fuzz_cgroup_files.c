/* fuzz_cgroup_files.c — the value files of a cgroup and their neighbours:
 * cpu.max (v2), cpu.cfs_quota_us + cpu.cfs_period_us (v1), single-number
 * limits (memory.max, memory.limit_in_bytes, pids.max, cpu.shares ...),
 * /proc/meminfo's MemTotal, v1 memory.stat's hierarchical_memory_limit,
 * the tmpfs size= of /dev/shm, and the OOM-kill counter of
 * memory.events / memory.oom_control (launcher/pool/oom.c). The input is
 * a file; for the two-file v1 quota, the text before the first NUL is
 * cpu.cfs_quota_us and the text after it cpu.cfs_period_us.
 *
 * Invariants:
 *  - a CPU quota that parses is a finite number of CPUs above 0 (never
 *    NaN, infinite, zero or negative: it bounds the pool size);
 *  - "max" (and v1's -1) mean no limit; a limit re-formats and re-parses
 *    to itself;
 *  - MemTotal is 0 (unknown) or a whole number of KiB;
 *  - a tmpfs size is exact (n x unit, no overflow), a percentage at most
 *    the total;
 *  - an OOM count parses or the error names the file ("name:" first),
 *    with the line when there is one ("name:LINE:"). */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>

#include "../../launcher/detect/internal.h"
#include "fitrun/pool.h"
#include "fuzz.h"

static void check_cpu_max(const char *s)
{
    double cpus = -1;
    bool extra = false;
    const char *why = NULL;
    int r = fr_parse_cpu_max(s, &cpus, &extra, &why);
    FUZZ_CHECK(r >= -1 && r <= 1, "cpu.max returned %d", r);
    if (r < 0)
        FUZZ_CHECK(why && *why, "refused cpu.max '%s' says why", s);
    if (r != 1)
        return;
    FUZZ_CHECK(isfinite(cpus) && cpus > 0, "cpu.max '%s' -> %g CPUs", s, cpus);
    /* An independent reading of the whole text: QUOTA [PERIOD [...]]. */
    char *copy = strdup(s), *save = NULL;
    if (!copy)
        abort();
    char *q = strtok_r(copy, " \t\n", &save), *p = strtok_r(NULL, " \t\n", &save);
    bool more = strtok_r(NULL, " \t\n", &save) != NULL;
    double want = strtod(q, NULL) / (p ? strtod(p, NULL) : 100000.0);
    FUZZ_CHECK(fabs(cpus - want) <= 1e-9 * want, "cpu.max '%s' -> %g CPUs, but it says %g", s, cpus, want);
    FUZZ_CHECK(more == extra, "cpu.max '%s': a third field is%s reported", s, extra ? "" : " not");
    free(copy);
}

static void check_cfs(const char *quota, const char *period)
{
    const char *ps[] = {period, NULL, "100000\n"};
    for (size_t i = 0; i < 3; i++) {
        double cpus = -1;
        const char *why = NULL;
        int r = fr_parse_cfs(quota, ps[i], &cpus, &why);
        FUZZ_CHECK(r >= -1 && r <= 1, "cfs returned %d", r);
        if (r < 0)
            FUZZ_CHECK(why && *why, "refused cfs quota '%s' says why", quota);
        if (r == 1)
            FUZZ_CHECK(isfinite(cpus) && cpus > 0, "cfs '%s' / '%s' -> %g CPUs", quota, ps[i] ? ps[i] : "(none)", cpus);
    }
}

static void check_limit(const char *s)
{
    for (int minus1 = 0; minus1 < 2; minus1++) {
        uint64_t v = 0, w = 0;
        int r = fr_parse_limit_u64(s, minus1, &v);
        FUZZ_CHECK(r >= -1 && r <= 1, "limit returned %d", r);
        if (r != 1)
            continue;
        /* The whole text is the number, give or take blanks. */
        char *end;
        unsigned long long whole = strtoull(s, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        FUZZ_CHECK(!*end && whole == v, "limit '%s' -> %" PRIu64 ", but the text is not that number", s, v);
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64 "\n", v);
        FUZZ_CHECK(fr_parse_limit_u64(buf, minus1, &w) == 1 && v == w, "'%s' -> %" PRIu64 " does not re-parse", s, v);
    }
    uint64_t v;
    FUZZ_CHECK(fr_parse_limit_u64("max\n", false, &v) == 0, "max is no limit");
}

static void check_memory(const char *s)
{
    uint64_t total = fr_parse_meminfo_total(s);
    FUZZ_CHECK(total == 0 || (total % 1024 == 0 && total >= 1024), "MemTotal %" PRIu64, total);
    uint64_t hier = 0;
    (void)fr_parse_memory_stat_hier(s, &hier);
}

static void check_tmpfs(const char *s)
{
    static const uint64_t totals[] = {0, 1ull << 30, UINT64_MAX};
    for (size_t i = 0; i < 3; i++) {
        uint64_t v = 0;
        int r = fr_parse_tmpfs_size(s, totals[i], &v);
        FUZZ_CHECK(r >= -1 && r <= 1, "tmpfs size returned %d", r);
        if (r != 1)
            continue;
        FUZZ_CHECK(v > 0, "size=%s -> 0 but said limited", s);
        size_t l = strlen(s);
        if (l && s[l - 1] == '%') {
            FUZZ_CHECK(v <= totals[i], "size=%s of %" PRIu64 " -> %" PRIu64, s, totals[i], v);
            continue;
        }
        /* An independent reading: digits x the suffix's power of 1024. */
        unsigned __int128 n = 0;
        const char *p = s;
        while (isspace((unsigned char)*p))
            p++;
        p += *p == '+'; /* strtoull's sign */
        for (; isdigit((unsigned char)*p) && n < ((unsigned __int128)1 << 100); p++)
            n = n * 10 + (unsigned)(*p - '0');
        int shift = 0;
        const char *units = "kmgtpe";
        const char *u = l ? strchr(units, tolower((unsigned char)s[l - 1])) : NULL;
        if (u && *u)
            shift = 10 * (int)(u - units + 1);
        FUZZ_CHECK(n << shift == v, "size=%s -> %" PRIu64 ", not the digits x 2^%d", s, v, shift);
    }
}

static void check_oom(const char *s)
{
    uint64_t count = 12345;
    char err[256] = "";
    int r = fr_oom_parse(s, "memory.events", &count, err, sizeof err);
    FUZZ_CHECK(r == 0 || r == -1, "oom parse returned %d", r);
    if (r < 0) {
        FUZZ_CHECK(!strncmp(err, "memory.events:", 14), "message '%s' does not start with the file name", err);
        const char *p = err + 14;
        if (isdigit((unsigned char)*p)) {
            while (isdigit((unsigned char)*p))
                p++;
            FUZZ_CHECK(*p == ':', "message '%s' is not 'name:LINE:'", err);
        }
        FUZZ_CHECK(count == 12345, "a failed parse leaves the count alone");
    }
    char tiny[4];
    uint64_t c2 = 0;
    FUZZ_CHECK(fr_oom_parse(s, "memory.events", &c2, tiny, sizeof tiny) == r && (r < 0 || c2 == count),
               "the answer does not depend on the message buffer");
    FUZZ_CHECK(memchr(tiny, '\0', sizeof tiny) || r == 0, "a cut message is terminated");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *a, *b;
    fuzz_split(data, size, &a, &b);
    check_cpu_max(a);
    check_cfs(a, b);
    check_limit(a);
    check_memory(a);
    check_tmpfs(a);
    check_oom(a);
    free(a);
    free(b);
    return 0;
}
