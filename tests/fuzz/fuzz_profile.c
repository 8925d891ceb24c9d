/* fuzz_profile.c — a whole INI profile through fr_profile_parse (inih plus
 * fitrun's own line reader and value checks), over the defaults, as
 * `fitrun run --profile` reads it. The input is the file.
 *
 * Invariants:
 *  - a profile that parses has every value within its documented range
 *    (profiles/README.md): cpus auto or above 0 and at most FR_CPU_BITS,
 *    workers auto or 1..FR_PROFILE_MAX_WORKERS, durations at most 365
 *    days, sizes at most 1 EiB, output and result never "no limit",
 *    uid_base in range, known enum values, lists of at most
 *    FR_PROFILE_MAX_NAMES non-empty names (absolute paths for read and
 *    write), [env] names that are identifiers, each once; a cpus set by the
 *    file says where ("profile NAME:LINE");
 *  - a profile that does not parse has a message that starts with
 *    "NAME:LINE: " with LINE a line of the file;
 *  - parsing the same text again over the result gives the same answer
 *    (no state leaks from one load into the next);
 *  - fr_profile_free releases everything (LeakSanitizer). */
#include <ctype.h>
#include <math.h>

#include "fitrun/detect.h"
#include "fitrun/profile.h"
#include "fitrun/common.h"
#include "fuzz.h"

#define NAME "etc/fuzz.ini"

static bool identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    return true;
}

static void check_list(char *const *names, const char *key)
{
    size_t n = 0;
    for (; names[n]; n++) {
        FUZZ_CHECK(n < FR_PROFILE_MAX_NAMES, "more than %d names in %s", FR_PROFILE_MAX_NAMES, key);
        FUZZ_CHECK(names[n][0], "an empty name in %s", key);
        if (!strcmp(key, "read") || !strcmp(key, "write"))
            FUZZ_CHECK(names[n][0] == '/' && strlen(names[n]) < PATH_MAX, "path '%s' in %s", names[n], key);
        else
            FUZZ_CHECK(!strpbrk(names[n], ", \t"), "name '%s' in %s holds a separator", names[n], key);
    }
}

static void check_profile(const struct fr_profile *p, int lines)
{
    FUZZ_CHECK(p->cpus == 0 || (isfinite(p->cpus) && p->cpus > 0 && p->cpus <= FR_CPU_BITS), "cpus %g", p->cpus);
    if (p->cpus > 0) {
        int line = 0;
        FUZZ_CHECK(sscanf(p->cpus_origin, "profile " NAME ":%d", &line) == 1 && line >= 1 && line <= lines,
                   "cpus origin '%s'", p->cpus_origin);
    }
    FUZZ_CHECK(!p->cpus_cli, "a file's cpus is not the command line's");
    FUZZ_CHECK(p->workers >= 0 && p->workers <= FR_PROFILE_MAX_WORKERS, "workers %d", p->workers);
    FUZZ_CHECK(p->rounding == FR_ROUND_FLOOR || p->rounding == FR_ROUND_CEIL || p->rounding == FR_ROUND_NEAREST,
               "rounding %d", (int)p->rounding);
    FUZZ_CHECK(p->preset == FR_PRESET_PYTHON || p->preset == FR_PRESET_EXEC || p->preset == FR_PRESET_NONE, "preset %d",
               (int)p->preset);
    FUZZ_CHECK(p->cpu_time_ms <= FR_DURATION_MAX_MS && p->wall_time_ms <= FR_DURATION_MAX_MS, "cpu %llu wall %llu ms",
               (unsigned long long)p->cpu_time_ms, (unsigned long long)p->wall_time_ms);
    const uint64_t sizes[] = {p->memory_per_worker, p->memory, p->output, p->fsize, p->stack, p->result};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        FUZZ_CHECK(sizes[i] <= FR_SIZE_MAX, "size %zu = %llu", i, (unsigned long long)sizes[i]);
    FUZZ_CHECK(p->output > 0 && p->result > 0, "output %llu, result %llu: these limits cannot be switched off",
               (unsigned long long)p->output, (unsigned long long)p->result);
    FUZZ_CHECK(p->user == FR_USER_SLOT || p->user == FR_USER_ROOT, "user %d", (int)p->user);
    FUZZ_CHECK(p->uid_base >= 1 && p->uid_base <= UINT32_MAX - 1 - FR_PROFILE_MAX_WORKERS, "uid_base %u",
               (unsigned)p->uid_base);
    FUZZ_CHECK(p->kind == FR_RUNTIME_EXEC || p->kind == FR_RUNTIME_PYTHON, "kind %d", (int)p->kind);
    FUZZ_CHECK(p->interpreter[0] && memchr(p->interpreter, '\0', sizeof p->interpreter), "interpreter");
    FUZZ_CHECK(identifier(p->entry), "entry '%s'", p->entry);
    FUZZ_CHECK(memchr(p->prelude, '\0', sizeof p->prelude), "prelude terminated");
    check_list(p->allow, "allow");
    check_list(p->deny, "deny");
    check_list(p->keep_caps, "keep_caps");
    check_list(p->read_paths, "read");
    check_list(p->write_paths, "write");
    check_list(p->pass_env, "pass_env");
    FUZZ_CHECK(p->nenv >= 0 && p->nenv <= FR_PROFILE_MAX_ENV, "%d [env] variables", p->nenv);
    for (int i = 0; i < p->nenv; i++) {
        FUZZ_CHECK(identifier(p->env_name[i]) && p->env_value[i], "[env] name '%s'", p->env_name[i]);
        for (int k = 0; k < i; k++)
            FUZZ_CHECK(strcmp(p->env_name[i], p->env_name[k]), "[env] %s twice", p->env_name[i]);
    }
    FUZZ_CHECK(!p->path[0], "parsing text sets no path");
    struct fr_policy_spec spec;
    fr_profile_policy_spec(p, &spec);
    FUZZ_CHECK(spec.cpu_ms == p->cpu_time_ms && spec.as_bytes == p->memory, "the sandbox request follows the profile");
}

static void check_error(const char *err, int lines)
{
    static const char prefix[] = NAME ":";
    FUZZ_CHECK(!strncmp(err, prefix, sizeof prefix - 1), "message '%s' does not start with '%s'", err, prefix);
    const char *p = err + sizeof prefix - 1;
    int line = 0;
    while (isdigit((unsigned char)*p) && line < 1000000)
        line = line * 10 + (*p++ - '0');
    FUZZ_CHECK(line >= 1 && line <= lines && p[0] == ':' && p[1] == ' ',
               "message '%s' is not '" NAME ":LINE: ...' "
               "with LINE in 1..%d",
               err, lines);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64 * 1024)
        return 0;
    char *text = fuzz_cstr(data, size);
    int lines = 1;
    for (const char *s = text; *s; s++)
        lines += *s == '\n';

    struct fr_profile *p = malloc(sizeof *p);
    if (!p)
        abort();
    fr_profile_defaults(p);
    char err[1024] = "", err2[1024] = "";
    int rc = fr_profile_parse(p, text, NAME, err, sizeof err);
    FUZZ_CHECK(rc == 0 || rc == -1, "returned %d", rc);
    if (rc == 0)
        check_profile(p, lines);
    else
        check_error(err, lines);
    int rc2 = fr_profile_parse(p, text, NAME, err2, sizeof err2);
    FUZZ_CHECK(rc2 == rc && (rc == 0 || !strcmp(err, err2)), "a second parse says %d '%s', the first %d '%s'", rc2,
               err2, rc, err);
    fr_profile_free(p);
    free(p);
    free(text);
    return 0;
}
