/* internal.h — what the profile's files share (not an API).
 *
 *   profile.c       INI reading, the [resources], [runtime] and [env]
 *                   sections, options for detection and the plan
 *   sandbox_keys.c  the [sandbox] keys: one table, the profile -> spec map
 *   values.c        the value types of profile keys (durations, sizes,
 *                   counts, booleans, lists) and what `none` means
 */
#ifndef FITRUN_PROFILE_INTERNAL_H
#define FITRUN_PROFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fitrun/sandbox_keys.h"

/* Each returns 0, or -1 with a message for `key` in msg. */
int prof_duration(const char *key, const char *v, enum fr_key_none none, uint64_t *out, char *msg, size_t n);
int prof_size(const char *key, const char *v, enum fr_key_none none, uint64_t *out, char *msg, size_t n);
int prof_count(const char *key, const char *v, enum fr_key_none none, uint64_t *out, char *msg, size_t n);
int prof_bool(const char *key, const char *v, bool *out, char *msg, size_t n);

/* What the entries of a list must be. */
enum prof_list {
    PROF_SYSCALLS, /* names libseccomp knows; separated by commas and/or spaces */
    PROF_CAPS,     /* names libcap knows ("cap_net_raw") */
    PROF_PATHS,    /* absolute paths; separated by commas only (a path may hold spaces) */
    PROF_ENV,      /* NAME or PREFIX* */
};
/* "a, b c,d" -> owned names, NULL-terminated, replacing those in names[]
 * (FR_PROFILE_MAX_NAMES + 1 entries). */
int prof_list(const char *key, const char *v, enum prof_list kind, char **names, char *msg, size_t n);
void prof_free_names(char **names);

#endif
