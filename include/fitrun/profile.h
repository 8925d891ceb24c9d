/* fitrun/profile.h — INI profiles (inih). One struct holds every setting a
 * run needs; defaults come from fr_profile_defaults(), a file overrides
 * them, command-line options override the file.
 *
 * Errors name the file and line: "my.ini:3: unknown key 'cpu_tme' in
 * [sandbox]". (Owner: launcher/profile/. Extend, do not rename.) */
#ifndef FITRUN_PROFILE_H
#define FITRUN_PROFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitrun/plan.h"
#include "fitrun/sandbox.h"

#define FR_PROFILE_MAX_ENV 64
#define FR_PROFILE_MAX_NAMES 64

enum fr_runtime_kind { FR_RUNTIME_EXEC = 0, FR_RUNTIME_PYTHON };

struct fr_profile {
    char path[PATH_MAX];            /* "" when no file was given */

    /* [resources] */
    double cpus;                    /* 0 = auto */
    int workers;                    /* 0 = auto */
    uint64_t memory_per_worker;     /* bytes, 0 = not configured */
    enum fr_rounding rounding;

    /* [sandbox] */
    enum fr_preset preset;
    uint64_t cpu_time_ms;
    uint64_t wall_time_ms;
    uint64_t memory;                /* bytes, per job (RLIMIT_AS) */
    uint64_t output;                /* bytes, cap on stdout and on stderr each */
    uint64_t processes;
    char *allow[FR_PROFILE_MAX_NAMES + 1];  /* NULL-terminated, owned */
    char *deny[FR_PROFILE_MAX_NAMES + 1];
    char *keep_caps[FR_PROFILE_MAX_NAMES + 1];
    bool spec_allow;

    /* [runtime] */
    enum fr_runtime_kind kind;
    char interpreter[PATH_MAX];     /* python: default /usr/bin/python3 */
    char prelude[PATH_MAX];         /* python: resolved relative to the profile */
    char entry[128];                /* python: default "transform" */

    /* [env]: exported to every job; forces over the user's environment */
    int nenv;
    char *env_name[FR_PROFILE_MAX_ENV];
    char *env_value[FR_PROFILE_MAX_ENV];
};

void fr_profile_defaults(struct fr_profile *p);
/* Load `path` over the current contents of *p. Returns 0, or -1 with
 * "path:line: message" in err. */
int fr_profile_load(struct fr_profile *p, const char *path, char *err, size_t errlen);
void fr_profile_free(struct fr_profile *p);

#endif
