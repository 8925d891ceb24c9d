/* shard.c — which jobs a shard runs, `--shard auto` inside SLURM array
 * tasks, and the `{shard}` placeholder. See include/fitrun/shard.h.
 *
 * Shard K of N takes the input lines L with (L-1) mod N == K: round-robin
 * by physical line, so shards are balanced whatever the job order (sorted
 * job files, where neighbours cost alike, are common) and every process can
 * decide alone, from a line number, without reading ahead or coordinating. */
#include "fitrun/shard.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fitrun/common.h"

/* A whole-string integer in [lo, hi]. */
static int parse_int_in(const char *s, long lo, long hi, long *out)
{
    int64_t v;
    if (fr_parse_i64(s, &v) < 0 || v < lo || v > hi)
        return -1;
    *out = (long)v;
    return 0;
}

int fr_shard_parse(const char *s, char *const *envp, struct fr_shard *out, char *err, size_t errlen)
{
    if (!s) {
        fr_seterr(err, errlen, "--shard: missing value (K/N or auto)");
        return -1;
    }
    if (!strcmp(s, "auto")) {
        int r = fr_shard_auto(envp, out, err, errlen);
        if (r == 0)
            fr_seterr(err, errlen,
                      "--shard auto: not inside a SLURM array task (SLURM_ARRAY_TASK_ID is not set); "
                      "use --shard K/N");
        return r == 1 ? 0 : -1;
    }
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/')) {
        fr_seterr(err, errlen, "--shard '%s': expected K/N (e.g. 0/4) or auto", s);
        return -1;
    }
    char kbuf[32];
    size_t klen = (size_t)(slash - s);
    long k, n;
    if (klen >= sizeof kbuf) {
        fr_seterr(err, errlen, "--shard '%s': K is not a number", s);
        return -1;
    }
    memcpy(kbuf, s, klen);
    kbuf[klen] = '\0';
    if (parse_int_in(slash + 1, 1, FR_SHARD_COUNT_MAX, &n) < 0) {
        fr_seterr(err, errlen, "--shard '%s': N must be a whole number from 1 to %ld", s, FR_SHARD_COUNT_MAX);
        return -1;
    }
    if (parse_int_in(kbuf, 0, FR_SHARD_COUNT_MAX - 1, &k) < 0) {
        fr_seterr(err, errlen, "--shard '%s': K must be a whole number from 0 to %ld", s, FR_SHARD_COUNT_MAX - 1);
        return -1;
    }
    if (k >= n) {
        fr_seterr(err, errlen, "--shard '%s': K must be below N (shards are numbered 0..%ld)", s, n - 1);
        return -1;
    }
    *out = (struct fr_shard){.enabled = true, .index = (int)k, .count = (int)n};
    return 0;
}

/* Read SLURM_ARRAY_TASK_<name> as an integer in [lo, FR_SHARD_COUNT_MAX]; -1
 * with err when absent, garbage or out of range. Every value this reads
 * bounds a shard number or count, so one cap serves them all. */
static int slurm_var(char *const *envp, const char *name, long lo, long *out, char *err, size_t errlen)
{
    char full[64];
    snprintf(full, sizeof full, "SLURM_ARRAY_TASK_%s", name);
    const char *v = fr_env_lookup(envp, full);
    if (!v) {
        fr_seterr(err, errlen, "in a SLURM array task but %s is not set", full);
        return -1;
    }
    if (parse_int_in(v, lo, FR_SHARD_COUNT_MAX, out) < 0) {
        fr_seterr(err, errlen, "%s='%s' is not a whole number from %ld to %ld", full, v, lo, FR_SHARD_COUNT_MAX);
        return -1;
    }
    return 0;
}

/* FITRUN_SHARD_COUNT=N is set (by our job scripts): array index = shard index. */
static int auto_pinned(const char *pinned, long id, struct fr_shard *out, char *err, size_t errlen)
{
    long n;
    if (parse_int_in(pinned, 1, FR_SHARD_COUNT_MAX, &n) < 0) {
        fr_seterr(err, errlen, FR_SHARD_COUNT_ENV "='%s' is not a whole number from 1 to %ld", pinned,
                  FR_SHARD_COUNT_MAX);
        return -1;
    }
    if (id >= n) {
        fr_seterr(err, errlen, "SLURM_ARRAY_TASK_ID=%ld is not a shard of " FR_SHARD_COUNT_ENV "=%ld (0..%ld)", id, n,
                  n - 1);
        return -1;
    }
    *out = (struct fr_shard){.enabled = true, .index = (int)id, .count = (int)n};
    return 1;
}

int fr_shard_auto(char *const *envp, struct fr_shard *out, char *err, size_t errlen)
{
    long id, min, count, max, step = 1;
    if (!fr_env_lookup(envp, "SLURM_ARRAY_TASK_ID"))
        return 0;
    if (slurm_var(envp, "ID", 0, &id, err, errlen) < 0)
        return -1;
    const char *pinned = fr_env_lookup(envp, FR_SHARD_COUNT_ENV);
    if (pinned)
        return auto_pinned(pinned, id, out, err, errlen);
    if (slurm_var(envp, "MIN", 0, &min, err, errlen) < 0 || slurm_var(envp, "COUNT", 1, &count, err, errlen) < 0)
        return -1;
    /* STEP and MAX are set by every SLURM since 15.x; they let us refuse
     * arrays whose indices are not min, min+step, ... (then ID-MIN is not a
     * shard number) instead of silently running the wrong jobs. */
    if (fr_env_lookup(envp, "SLURM_ARRAY_TASK_STEP") && slurm_var(envp, "STEP", 1, &step, err, errlen) < 0)
        return -1;
    if (id < min || (id - min) % step) {
        fr_seterr(err, errlen, "SLURM_ARRAY_TASK_ID=%ld is not in the array (MIN=%ld, STEP=%ld)", id, min, step);
        return -1;
    }
    if (fr_env_lookup(envp, "SLURM_ARRAY_TASK_MAX")) {
        if (slurm_var(envp, "MAX", 0, &max, err, errlen) < 0)
            return -1;
        if (max < min || (max - min) / step + 1 != count) {
            fr_seterr(err, errlen,
                      "the SLURM array is not one evenly spaced range (MIN=%ld, MAX=%ld, STEP=%ld, COUNT=%ld, "
                      "as with --array=1,3,7): shard numbers are ambiguous; set " FR_SHARD_COUNT_ENV
                      "=N or use --shard K/N",
                      min, max, step, count);
            return -1;
        }
    }
    long k = (id - min) / step;
    if (k >= count) {
        fr_seterr(err, errlen, "SLURM_ARRAY_TASK_ID=%ld is beyond the array (MIN=%ld, STEP=%ld, COUNT=%ld)", id, min,
                  step, count);
        return -1;
    }
    *out = (struct fr_shard){.enabled = true, .index = (int)k, .count = (int)count};
    return 1;
}

int fr_shard_of_line(long line, int count)
{
    if (line < 1 || count < 1)
        return -1;
    return (int)((line - 1) % count);
}

bool fr_shard_selects(const struct fr_shard *s, long line)
{
    if (!s || !s->enabled)
        return true;
    return line >= 1 && fr_shard_of_line(line, s->count) == s->index;
}

int fr_shard_expand(const char *pattern, const struct fr_shard *s, char *buf, size_t n)
{
    static const char ph[] = "{shard}";
    /* Without sharding a run is shard 0 of 1, so `--out r.{shard}.jsonl`
     * names the same file `fitrun merge` expects for N = 1. */
    int k = s && s->enabled ? s->index : 0;
    char num[16];
    int numlen = snprintf(num, sizeof num, "%d", k);
    size_t used = 0;
    if (!buf || !n)
        return -1;
    for (const char *p = pattern; *p;) {
        const char *piece = p;
        size_t len = 1;
        if (!strncmp(p, ph, sizeof ph - 1)) {
            piece = num;
            len = (size_t)numlen;
            p += sizeof ph - 1;
        } else {
            p++;
        }
        if (used + len >= n) {
            buf[0] = '\0';
            return -1;
        }
        memcpy(buf + used, piece, len);
        used += len;
    }
    buf[used] = '\0';
    return 0;
}

int fr_shard_from_filename(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    /* The digits must sit between the last two dots of the base name. */
    const char *ext = strrchr(base, '.');
    if (!ext || ext == base)
        return -1;
    const char *d = ext;
    while (d > base && d[-1] >= '0' && d[-1] <= '9')
        d--;
    /* "results.3.jsonl" and "3.jsonl" (pattern "{shard}.jsonl"), not "run3.jsonl". */
    if (d == ext || (d > base && d[-1] != '.') || ext - d > 9)
        return -1;
    int k = 0;
    for (const char *q = d; q < ext; q++)
        k = k * 10 + (*q - '0');
    return k;
}
