/* fitrun/sandbox_keys.h — the [sandbox] keys, in one table: each key's
 * type, default, what `none` means, where a profile keeps it and which
 * field of the sandbox's policy spec it becomes (or none: fitrun enforces
 * it itself). Everything that turns [sandbox] text into a policy goes
 * through it: a profile file and --set (fr_profile_set), the profile ->
 * spec map (fr_profile_policy_spec), and "key=value;..." text for tests
 * and tools (fr_sandbox_text_spec). The sandbox library itself parses no
 * text; the Python runtime hands its interpreter the spec fitrun built,
 * packed (fr_policy_spec_pack). profiles/README.md documents the keys. */
#ifndef FITRUN_SANDBOX_KEYS_H
#define FITRUN_SANDBOX_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "fitrun/profile.h"
#include "fitrun/sandbox.h"

enum fr_key_type {
    FR_KEY_PRESET,   /* none, exec, python */
    FR_KEY_DURATION, /* "2s", "500ms" -> ms (uint64_t) */
    FR_KEY_SIZE,     /* "512M" -> bytes (uint64_t) */
    FR_KEY_COUNT,    /* a whole number (uint64_t) */
    FR_KEY_BOOL,     /* true/false, yes/no, on/off, 1/0 */
    FR_KEY_USER,     /* slot, root (enum fr_user_mode; in the spec: slot_identity) */
    FR_KEY_UID,      /* the first per-slot uid (uint32_t) */
    FR_KEY_SYSCALLS, /* syscall names */
    FR_KEY_CAPS,     /* capability names */
    FR_KEY_PATHS,    /* absolute paths, comma-separated */
    FR_KEY_ENV,      /* NAME or PREFIX* patterns */
    FR_KEY_FS,       /* off, libs, system (enum fr_fs_base) */
    FR_KEY_SLOTS,    /* 1..65536 (int) */
};

/* What `none`, `unlimited` and `0` mean for a limit. */
enum fr_key_none {
    FR_NONE_NA = 0,   /* not a limit: the words are just bad values */
    FR_NONE_NO_LIMIT, /* no limit (the value 0) */
    FR_NONE_REFUSED,  /* refused: the cap bounds what fitrun itself holds */
};

#define FR_KEY_NOWHERE (-1)

struct fr_sandbox_key {
    const char *name;
    enum fr_key_type type;
    enum fr_key_none none;
    const char *dflt; /* a profile's default, as profiles/default.ini writes it */
    long profile;     /* offsetof(struct fr_profile, ...), or FR_KEY_NOWHERE: not a profile key
                           (the runtime or the pool decides it, or only the text form sets it) */
    long spec;        /* offsetof(struct fr_policy_spec, ...), or FR_KEY_NOWHERE: fitrun
                           enforces it (wall_time, output, result, pass_env) */
};

/* The table (every key, profile keys first in the order profiles/README.md
 * lists them) and a lookup by name (NULL = unknown). */
extern const struct fr_sandbox_key fr_sandbox_keys[];
extern const size_t fr_sandbox_nkeys;
const struct fr_sandbox_key *fr_sandbox_key(const char *name);

/* One [sandbox] key of a profile (a file's line, or --set sandbox.KEY=).
 * Returns 0, or -1 with the message (no location) in msg, e.g.
 * "unknown key 'cpu_tme' in [sandbox] (preset, cpu_time, ...)". */
int fr_sandbox_key_set(struct fr_profile *p, const char *key, const char *value, char *msg, size_t n);
/* Every [sandbox] default (the table's dflt) into *p. */
void fr_sandbox_keys_defaults(struct fr_profile *p);

/* "key=value;key=value" -> a spec, for tests and tools: the profile's keys
 * plus fs, slots and core, which only this form sets. Defaults are the
 * library's, not a profile's: preset python, no limits, no Landlock (fs
 * off), the caller's identity (user root). The spec's lists point into *t
 * (free with fr_sandbox_text_free). Returns 0 or -1 with
 * "sandbox text item 2: unknown key 'cpu_tme'" or the key's own message. */
struct fr_sandbox_text {
    struct fr_profile profile; /* holds the profile keys' values */
    struct fr_policy_spec spec;
};
int fr_sandbox_text_spec(const char *text, struct fr_sandbox_text *t, char *err, size_t errlen);
void fr_sandbox_text_free(struct fr_sandbox_text *t);
/* fr_sandbox_text_spec + fr_policy_build, with more_read (NULL-terminated,
 * may be NULL) added to the read paths. */
int fr_sandbox_text_build(const char *text, const char *const *more_read, struct fr_policy **out, char *err,
                          size_t errlen);

#endif
