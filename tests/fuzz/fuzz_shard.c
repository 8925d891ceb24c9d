/* fuzz_shard.c — the shard parsers (launcher/jobs/shard.c) and the time
 * limit of submit (launcher/scaleout/submit.c): the shard spec of --shard
 * ("K/N", or "auto" inside a SLURM array task, from SLURM_ARRAY_TASK_ID,
 * _MIN, _MAX, _STEP, _COUNT and FITRUN_SHARD_COUNT), the time limit of
 * `fitrun submit --time` (SLURM's forms or a duration), the shard number
 * in a result file's name, and the {shard} placeholder. The input's first
 * line goes to each parser; the other lines are the environment
 * (NAME=value).
 *
 * Invariants:
 *  - a shard that parses has 0 <= K < N, selects exactly the lines L with
 *    (L-1) mod N == K, and "K/N" printed back parses to the same shard;
 *  - a SLURM array task gives a valid shard or says why;
 *  - a time limit is 1 s to 365 days and re-parses from "D-HH:MM:SS" and
 *    from "<seconds>s" to the same value;
 *  - {shard} expands to K everywhere (none left), and a name made from
 *    "results.{shard}.jsonl" gives K back. */
#include <inttypes.h>

#include "fitrun/scaleout.h"
#include "fitrun/shard.h"
#include "fitrun/common.h"
#include "fuzz.h"

#define MAX_VARS 32

static void check_shard(const struct fr_shard *s, const char *spec)
{
    FUZZ_CHECK(s->enabled && s->count >= 1 && s->index >= 0 && s->index < s->count, "'%s' -> %d/%d", spec, s->index,
               s->count);
    long lines = s->count < 1000 ? 3L * s->count : 3000;
    for (long l = 1; l <= lines; l++)
        FUZZ_CHECK(fr_shard_selects(s, l) == ((l - 1) % s->count == s->index), "shard %d/%d and line %ld", s->index,
                   s->count, l);
    FUZZ_CHECK(!fr_shard_selects(s, 0) && fr_shard_of_line(0, s->count) == -1, "line 0 belongs to no shard");
    long last = (long)s->count * 2 + s->index + 1;
    FUZZ_CHECK(fr_shard_selects(s, last), "line %ld of shard %d/%d", last, s->index, s->count);
    char buf[64], err[256];
    struct fr_shard again;
    snprintf(buf, sizeof buf, "%d/%d", s->index, s->count);
    FUZZ_CHECK(fr_shard_parse(buf, NULL, &again, err, sizeof err) == 0 && again.index == s->index &&
                   again.count == s->count,
               "'%s' does not re-parse: %s", buf, err);

    /* The placeholder and the file names it makes. */
    char name[128];
    FUZZ_CHECK(fr_shard_expand("out/results.{shard}.jsonl", s, name, sizeof name) == 0, "expand");
    FUZZ_CHECK(fr_shard_from_filename(name) == s->index, "'%s' does not name shard %d", name, s->index);
}

static void check_time(const char *t)
{
    uint64_t sec = 0, again = 0;
    if (fr_parse_time_limit(t, &sec) < 0)
        return;
    FUZZ_CHECK(sec >= 1 && sec <= FR_DURATION_MAX_MS / 1000, "--time '%s' -> %" PRIu64 " s", t, sec);
    char buf[64];
    snprintf(buf, sizeof buf, "%" PRIu64 "-%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64, sec / 86400, sec % 86400 / 3600,
             sec % 3600 / 60, sec % 60);
    FUZZ_CHECK(fr_parse_time_limit(buf, &again) == 0 && again == sec, "'%s' -> %" PRIu64 " s, but '%s' -> %" PRIu64, t,
               sec, buf, again);
    snprintf(buf, sizeof buf, "%" PRIu64 "s", sec);
    FUZZ_CHECK(fr_parse_time_limit(buf, &again) == 0 && again == sec, "'%s' -> %" PRIu64 " s, but '%s' -> %" PRIu64, t,
               sec, buf, again);
}

static void check_expand(const char *pattern, const struct fr_shard *s)
{
    size_t n = strlen(pattern) * 2 + 32;
    char *out = malloc(n);
    if (!out)
        abort();
    if (fr_shard_expand(pattern, s, out, n) == 0) {
        FUZZ_CHECK(strlen(out) < n && !strstr(out, "{shard}"), "'%s' expanded to '%s'", pattern, out);
        size_t count = 0;
        for (const char *p = pattern; (p = strstr(p, "{shard}")); p += 7)
            count++;
        char num[16];
        int numlen = snprintf(num, sizeof num, "%d", s && s->enabled ? s->index : 0);
        FUZZ_CHECK(strlen(out) == strlen(pattern) - count * 7 + count * (size_t)numlen, "'%s' -> '%s'", pattern, out);
    }
    char tiny[4];
    if (fr_shard_expand(pattern, s, tiny, sizeof tiny) == 0)
        FUZZ_CHECK(strlen(tiny) < sizeof tiny, "fits");
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16 * 1024)
        return 0;
    char *text = fuzz_cstr(data, size);
    char *nl = strchr(text, '\n');
    char *rest = nl ? nl + 1 : text + strlen(text);
    if (nl)
        *nl = '\0';
    const char *first = text;
    char *envp[MAX_VARS + 1];
    int n = 0;
    for (char *save = NULL, *v = strtok_r(rest, "\n", &save); v && n < MAX_VARS; v = strtok_r(NULL, "\n", &save))
        envp[n++] = v;
    envp[n] = NULL;

    struct fr_shard s = {0}, a = {0};
    char err[256] = "";
    if (fr_shard_parse(first, envp, &s, err, sizeof err) == 0)
        check_shard(&s, first);
    else
        FUZZ_CHECK(err[0], "a refused --shard '%s' says why", first);
    char err2[256] = "";
    int ra = fr_shard_auto(envp, &a, err2, sizeof err2);
    FUZZ_CHECK(ra >= -1 && ra <= 1, "auto returned %d", ra);
    if (ra == 1)
        check_shard(&a, "auto");
    if (ra == -1)
        FUZZ_CHECK(err2[0], "a refused SLURM array says why");

    check_time(first);
    int k = fr_shard_from_filename(first);
    FUZZ_CHECK(k >= -1 && k <= 999999999, "'%s' names shard %d", first, k);
    check_expand(first, NULL);
    check_expand(first, s.enabled ? &s : &a);
    free(text);
    return 0;
}
