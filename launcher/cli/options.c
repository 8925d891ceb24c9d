/* options.c — the options several commands share, applied through one
 * path: each is a profile key (`--cpus 2` is `--set resources.cpus=2`),
 * recorded in command-line order and applied over the loaded profile by
 * fr_profile_set(), whose rule checks it. So `fitrun detect`, `fitrun run`
 * and the wrapper accept the same values and refuse the others with the
 * same message. Also the one form of getopt's own errors. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "fitrun/common.h"
#include "internal.h"

/* The shared options and the profile key each one sets. */
static const struct {
    const char *name;
    const char *section, *key;
} keys[] = {
    {"cpus", "resources", "cpus"},         {"workers", "resources", "workers"},
    {"rounding", "resources", "rounding"}, {"memory-per-worker", "resources", "memory_per_worker"},
    {"cpu-time", "sandbox", "cpu_time"},   {"wall-time", "sandbox", "wall_time"},
    {"memory", "sandbox", "memory"},       {"output", "sandbox", "output"},
    {"preset", "sandbox", "preset"},
};

static int add(struct fr_cli_profile *c, const char *opt, const char *section, size_t slen, const char *key,
               size_t klen, const char *value)
{
    if (c->n == FR_CLI_MAX_SETTINGS) {
        fr_warn("%s: too many settings (at most %d)", opt, FR_CLI_MAX_SETTINGS);
        return -1;
    }
    struct fr_cli_setting *s = &c->set[c->n++];
    snprintf(s->opt, sizeof s->opt, "%s", opt);
    snprintf(s->section, sizeof s->section, "%.*s", (int)slen, section);
    snprintf(s->key, sizeof s->key, "%.*s", (int)klen, key);
    s->value = value;
    return 0;
}

int fr_cli_option(struct fr_cli_profile *c, const char *name, const char *value)
{
    if (!strcmp(name, "profile")) {
        c->path = value;
        return 0;
    }
    if (!strcmp(name, "set"))
        return fr_cli_set(c, value);
    char opt[48];
    snprintf(opt, sizeof opt, "--%s", name);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (!strcmp(name, keys[i].name))
            return add(c, opt, keys[i].section, strlen(keys[i].section), keys[i].key, strlen(keys[i].key), value);
    fr_warn("%s: not a profile option", opt);
    return -1;
}

int fr_cli_set(struct fr_cli_profile *c, const char *arg)
{
    const char *dot = strchr(arg, '.'), *eq = strchr(arg, '=');
    if (!dot || !eq || dot > eq || dot == arg || eq == dot + 1 || (size_t)(dot - arg) >= sizeof c->set[0].section ||
        (size_t)(eq - dot - 1) >= sizeof c->set[0].key) {
        fr_warn("--set '%s': expected SECTION.KEY=VALUE (e.g. sandbox.cpu_time=1s)", arg);
        return -1;
    }
    return add(c, "--set", arg, (size_t)(dot - arg), dot + 1, (size_t)(eq - dot - 1), eq + 1);
}

int fr_cli_load_profile(const struct fr_cli_profile *c, struct fr_profile *p)
{
    char err[1024] = "";
    fr_profile_defaults(p);
    if (c->path && fr_profile_load(p, c->path, err, sizeof err) < 0) {
        fr_warn("%s", err[0] ? err : "cannot load the profile");
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        const struct fr_cli_setting *s = &c->set[i];
        if (fr_profile_set(p, s->section, s->key, s->value, err, sizeof err) == 0)
            continue;
        if (!strcmp(s->opt, "--set"))
            fr_warn("--set %s.%s=%s: %s", s->section, s->key, s->value, err);
        else
            fr_warn("%s %s: %s", s->opt, s->value, err);
        return -1;
    }
    return 0;
}

int fr_cli_no_operands(const char *cmd, int argc, char **argv)
{
    if (optind >= argc)
        return -1;
    fr_warn("%s: unexpected argument '%s' (see fitrun %s --help)", cmd, argv[optind], cmd);
    return FR_EXIT_USAGE;
}

int fr_cli_getopt_error(const char *cmd, int c, char **argv)
{
    /* optopt is 0 for an unknown long option: name it from argv. */
    char opt[64];
    if (optopt && optopt < 256)
        snprintf(opt, sizeof opt, "-%c", optopt);
    else
        snprintf(opt, sizeof opt, "%.60s", argv[optind - 1]);
    char *eq = strchr(opt, '=');
    if (eq)
        *eq = '\0';
    const char *sp = cmd ? " " : "";
    if (c == ':')
        fr_warn("%s%soption '%s' needs a value (see fitrun%s%s --help)", cmd ? cmd : "", cmd ? ": " : "", opt, sp,
                cmd ? cmd : "");
    else
        fr_warn("%s%sunknown option '%s' (see fitrun%s%s --help)", cmd ? cmd : "", cmd ? ": " : "", opt, sp,
                cmd ? cmd : "");
    return FR_EXIT_USAGE;
}
