/* internal.h — shared by the commands of launcher/cli/ only. */
#ifndef FITRUN_CLI_INTERNAL_H
#define FITRUN_CLI_INTERNAL_H

#include "fitrun/profile.h"

/* The options that set profile keys, as getopt_long entries: every
 * command that takes one lists it with FR_CLI_PROFILE_OPT as its value
 * and hands it to fr_cli_option() by name. */
#define FR_CLI_PROFILE_OPT 0x1000
/* clang-format off */
#define FR_CLI_OPT(name) {name, required_argument, NULL, FR_CLI_PROFILE_OPT}
/* clang-format on */

/* The options of every command that plans (detect, run, the wrapper). */
#define FR_CLI_PLAN_OPTS                                                                                               \
    FR_CLI_OPT("profile"), FR_CLI_OPT("cpus"), FR_CLI_OPT("workers"), FR_CLI_OPT("rounding"),                          \
        FR_CLI_OPT("memory-per-worker")

#define FR_CLI_MAX_SETTINGS 64

/* One setting from the command line: --cpus 2, --set sandbox.memory=1G. */
struct fr_cli_setting {
    char opt[48]; /* how the user wrote it: "--cpus", "--set" */
    char section[32];
    char key[64];
    const char *value; /* points into argv */
};

/* The profile a command line asks for: --profile FILE (NULL = the
 * built-in profile) and the settings over it, in order. */
struct fr_cli_profile {
    const char *path;
    int n;
    struct fr_cli_setting set[FR_CLI_MAX_SETTINGS];
};

/* Record the shared option `name` (its long name: "cpus", "profile",
 * "set", ...) with its value. Nothing is checked yet: the profile's rule
 * checks every value when fr_cli_load_profile() applies it. Returns 0, or
 * -1 after a message (too many, a malformed --set). */
int fr_cli_option(struct fr_cli_profile *c, const char *name, const char *value);
/* --set SECTION.KEY=VALUE. 0 or -1 (message printed). */
int fr_cli_set(struct fr_cli_profile *c, const char *arg);
/* The built-in profile, or --profile FILE, then the settings over it in
 * command-line order. Returns 0, or -1 after the message, the same for
 * every command: "fitrun: --cpus 0: bad value '0' for cpus (...)" or
 * "fitrun: my.ini:3: ...". *p must be fr_profile_free()d either way. */
int fr_cli_load_profile(const struct fr_cli_profile *c, struct fr_profile *p);

/* After getopt_long: refuse operands (argv[optind] on) of a command that
 * takes none. Returns -1 when there are none, else FR_EXIT_USAGE after the
 * message. */
int fr_cli_no_operands(const char *cmd, int argc, char **argv);

/* getopt_long returned ':' (a value is missing) or '?' (unknown option):
 * say so, naming the option and the command's help ("detect"; NULL = the
 * wrapper). Returns FR_EXIT_USAGE. Needs opterr = 0. */
int fr_cli_getopt_error(const char *cmd, int c, char **argv);

#endif
