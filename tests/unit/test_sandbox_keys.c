/* test_sandbox_keys.c — the [sandbox] key table (fitrun/sandbox_keys.h):
 * it is the one map from a profile to a policy spec (every key lands in
 * its field, fitrun's own keys in none), its defaults and key list are
 * what profiles/README.md documents, `none` means what the table says,
 * and the "key=value;..." text form reads the same table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/common.h"
#include "fitrun/profile.h"
#include "fitrun/sandbox_keys.h"

/* A value other than the default, for each type. */
static const char *other_value(const struct fr_sandbox_key *k)
{
    switch (k->type) {
    case FR_KEY_PRESET: return "python";
    case FR_KEY_DURATION: return "1500ms";
    case FR_KEY_SIZE: return "3M";
    case FR_KEY_COUNT: return "7";
    case FR_KEY_BOOL: return "true";
    case FR_KEY_USER: return "root";
    case FR_KEY_UID: return "61234";
    case FR_KEY_SYSCALLS: return "socket, connect";
    case FR_KEY_CAPS: return "cap_net_raw";
    case FR_KEY_PATHS: return "/usr/share, /usr/lib";
    case FR_KEY_ENV: return "HF_*, TOKEN";
    case FR_KEY_FS: return "system";
    case FR_KEY_SLOTS: return "3";
    }
    return "";
}

static const size_t list_fields[5] = {
    offsetof(struct fr_policy_spec, allow),       offsetof(struct fr_policy_spec, deny),
    offsetof(struct fr_policy_spec, keep_caps),   offsetof(struct fr_policy_spec, read_paths),
    offsetof(struct fr_policy_spec, write_paths),
};

static bool lists_equal(const char *const *a, const char *const *b)
{
    size_t i = 0;
    for (; a && b && a[i] && b[i]; i++)
        if (strcmp(a[i], b[i]))
            return false;
    return (!a || !a[i]) && (!b || !b[i]);
}

/* Every profile key reaches its spec field and nothing else; fitrun's own
 * keys (wall_time, output, result, pass_env) change no field of the spec. */
static void test_every_key_lands_in_its_field(void **state)
{
    (void)state;
    struct fr_profile base;
    struct fr_policy_spec want;
    fr_profile_defaults(&base);
    fr_profile_policy_spec(&base, &want);
    int mapped = 0, own = 0;
    for (size_t i = 0; i < fr_sandbox_nkeys; i++) {
        const struct fr_sandbox_key *k = &fr_sandbox_keys[i];
        if (k->profile == FR_KEY_NOWHERE)
            continue;
        struct fr_profile p;
        struct fr_policy_spec got;
        char msg[512];
        fr_profile_defaults(&p);
        if (fr_sandbox_key_set(&p, k->name, other_value(k), msg, sizeof msg) < 0)
            fail_msg("%s = %s: %s", k->name, other_value(k), msg);
        fr_profile_policy_spec(&p, &got);
        /* The lists point into each profile: compare their contents, then
         * the rest byte by byte with them cleared. */
        size_t lo = k->spec == FR_KEY_NOWHERE ? sizeof want : (size_t)k->spec;
        bool changed = false;
        for (int l = 0; l < 5; l++) {
            size_t off = list_fields[l];
            bool same = lists_equal(*(const char *const *const *)(const void *)((const char *)&want + off),
                                    *(const char *const *const *)(const void *)((const char *)&got + off));
            if (!same && off != lo)
                fail_msg("%s changed the list at %zu (its field is at %zu)", k->name, off, lo);
            changed |= !same && off == lo;
        }
        struct fr_policy_spec w = want, g = got;
        w.allow = w.deny = w.keep_caps = w.read_paths = w.write_paths = NULL;
        g.allow = g.deny = g.keep_caps = g.read_paths = g.write_paths = NULL;
        const unsigned char *a = (const unsigned char *)&w, *b = (const unsigned char *)&g;
        size_t width = k->type == FR_KEY_BOOL || k->type == FR_KEY_USER    ? sizeof(bool)
                       : k->type == FR_KEY_PRESET || k->type == FR_KEY_UID ? 4
                                                                           : 8;
        for (size_t off = 0; off < sizeof w; off++)
            if (a[off] != b[off] && (off < lo || off >= lo + width))
                fail_msg("%s changed the spec at byte %zu (its field is at %zu)", k->name, off, lo);
        if (k->spec == FR_KEY_NOWHERE) {
            own++;
        } else {
            if (!changed && !memcmp(a + lo, b + lo, width))
                fail_msg("%s = %s did not reach its spec field", k->name, other_value(k));
            mapped++;
        }
        fr_profile_free(&p);
    }
    assert_int_equal(own, 4);
    assert_int_equal(mapped, 16);
    fr_profile_free(&base);
}

/* Spot checks of the values themselves, and the runtime's base set. */
static void test_profile_to_spec(void **state)
{
    (void)state;
    struct fr_profile p;
    struct fr_policy_spec s;
    char msg[256];
    fr_profile_defaults(&p);
    fr_profile_policy_spec(&p, &s);
    assert_int_equal(s.preset, FR_PRESET_EXEC);
    assert_int_equal(s.cpu_ms, 2000);
    assert_int_equal(s.as_bytes, 512ull << 20);
    assert_int_equal(s.nproc, 1);
    assert_true(s.slot_identity);
    assert_int_equal(s.uid_base, 60000);
    assert_int_equal(s.fs, FR_FS_SYSTEM);
    assert_int_equal(s.slots, 0);
    assert_null(s.allow[0]);
    assert_int_equal(fr_sandbox_key_set(&p, "user", "root", msg, sizeof msg), 0);
    assert_int_equal(fr_sandbox_key_set(&p, "read", "/usr/share, /a path/with spaces", msg, sizeof msg), 0);
    assert_int_equal(fr_sandbox_key_set(&p, "memory", "none", msg, sizeof msg), 0);
    p.kind = FR_RUNTIME_PYTHON;
    fr_profile_policy_spec(&p, &s);
    assert_false(s.slot_identity);
    assert_int_equal(s.as_bytes, 0);
    assert_int_equal(s.fs, FR_FS_LIBS);
    assert_string_equal(s.read_paths[0], "/usr/share");
    assert_string_equal(s.read_paths[1], "/a path/with spaces");
    assert_null(s.read_paths[2]);
    fr_profile_free(&p);
}

/* `none`, `unlimited` and 0: no limit, or refused, as the table says. */
static void test_none(void **state)
{
    (void)state;
    int limits = 0;
    for (size_t i = 0; i < fr_sandbox_nkeys; i++) {
        const struct fr_sandbox_key *k = &fr_sandbox_keys[i];
        if (k->profile == FR_KEY_NOWHERE || k->none == FR_NONE_NA)
            continue;
        limits++;
        static const char *const words[] = {"none", "unlimited", "0"};
        for (int w = 0; w < 3; w++) {
            struct fr_profile p;
            char msg[512] = "";
            fr_profile_defaults(&p);
            int rc = fr_sandbox_key_set(&p, k->name, words[w], msg, sizeof msg);
            if (k->none == FR_NONE_NO_LIMIT) {
                assert_int_equal(rc, 0);
                uint64_t v;
                memcpy(&v, (const char *)&p + k->profile, sizeof v);
                assert_int_equal(v, 0);
            } else {
                assert_int_equal(rc, -1);
                assert_non_null(strstr(msg, "cannot be switched off"));
            }
            fr_profile_free(&p);
        }
    }
    assert_int_equal(limits, 9); /* cpu_time wall_time memory output result processes fsize nofile stack */
}

/* The keys only the text form sets are not profile keys. */
static void test_text_only_keys(void **state)
{
    (void)state;
    struct fr_profile p;
    char msg[512];
    fr_profile_defaults(&p);
    for (const char *const *k = (const char *const[]){"fs", "slots", "core", NULL}; *k; k++) {
        assert_int_equal(fr_sandbox_key_set(&p, *k, "1", msg, sizeof msg), -1);
        assert_non_null(strstr(msg, "unknown key"));
        /* and the message lists the profile's keys, not them */
        assert_non_null(strstr(msg, "(preset, cpu_time, wall_time, memory, output, result, processes, fsize, "
                                    "nofile, stack, allow, deny, keep_caps, spec_allow, read, write, "
                                    "require_landlock, user, uid_base, pass_env)"));
    }
    fr_profile_free(&p);
}

/* The README's [sandbox] table lists exactly the profile keys, with the
 * table's defaults. */
static void test_readme_table(void **state)
{
    (void)state;
    char *text = fr_read_file(FITRUN_SRC "/profiles/README.md", 1 << 20, NULL);
    assert_non_null(text);
    const char *sec = strstr(text, "## `[sandbox]`");
    assert_non_null(sec);
    const char *end = strstr(sec + 1, "\n## ");
    int rows = 0;
    for (const char *l = sec; l && (!end || l < end); l = strchr(l + 1, '\n')) {
        char key[64], dflt[64];
        if (sscanf(l, "\n| `%63[a-z_]` | %63[^|]|", key, dflt) != 2)
            continue;
        rows++;
        const struct fr_sandbox_key *k = fr_sandbox_key(key);
        if (!k || k->profile == FR_KEY_NOWHERE)
            fail_msg("profiles/README.md documents [sandbox] %s, which the table lacks", key);
        char *d = fr_trim(dflt);
        char want[80];
        snprintf(want, sizeof want, "`%s`", k->dflt);
        if (*k->dflt && strcmp(d, want) && strcmp(k->name, "preset"))
            fail_msg("profiles/README.md: default of %s is %s, the table's is %s", key, d, want);
        if (!*k->dflt && strcmp(d, "empty"))
            fail_msg("profiles/README.md: default of %s is %s, the table's is empty", key, d);
    }
    int profile_keys = 0;
    for (size_t i = 0; i < fr_sandbox_nkeys; i++)
        profile_keys += fr_sandbox_keys[i].profile != FR_KEY_NOWHERE;
    assert_int_equal(rows, profile_keys);
    free(text);
}

static void text_ok(const char *text, struct fr_sandbox_text *t)
{
    char err[512] = "";
    if (fr_sandbox_text_spec(text, t, err, sizeof err) != 0)
        fail_msg("\"%s\": %s", text, err);
}

static void text_fails(const char *text, const char *needle)
{
    struct fr_sandbox_text t;
    char err[512] = "";
    assert_int_equal(fr_sandbox_text_spec(text, &t, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("error for \"%s\" is \"%s\", expected it to mention \"%s\"", text, err, needle);
}

static void test_text(void **state)
{
    (void)state;
    struct fr_sandbox_text t;
    /* the library's defaults, not a profile's */
    text_ok("", &t);
    assert_int_equal(t.spec.preset, FR_PRESET_PYTHON);
    assert_int_equal(t.spec.cpu_ms, 0);
    assert_int_equal(t.spec.as_bytes, 0);
    assert_int_equal(t.spec.nproc, 0);
    assert_false(t.spec.slot_identity);
    assert_int_equal(t.spec.fs, FR_FS_OFF);
    fr_sandbox_text_free(&t);

    text_ok(" preset = exec ; cpu_time=250ms;memory=512M; fsize=1M ;nofile=32;processes=4;stack=8M;core=1M;"
            "spec_allow=yes;wall_time=10s;output=1M;deny=ptrace, mount;keep_caps=cap_net_raw cap_kill;"
            "fs=system;slots=3;user=slot;uid_base=61000",
            &t);
    assert_int_equal(t.spec.preset, FR_PRESET_EXEC);
    assert_int_equal(t.spec.cpu_ms, 250);
    assert_int_equal(t.spec.as_bytes, 512ull << 20);
    assert_int_equal(t.spec.fsize_bytes, 1 << 20);
    assert_int_equal(t.spec.nofile, 32);
    assert_int_equal(t.spec.nproc, 4);
    assert_int_equal(t.spec.stack_bytes, 8 << 20);
    assert_int_equal(t.spec.core_bytes, 1 << 20);
    assert_true(t.spec.spec_allow);
    assert_string_equal(t.spec.deny[1], "mount");
    assert_string_equal(t.spec.keep_caps[1], "cap_kill");
    assert_int_equal(t.spec.fs, FR_FS_SYSTEM);
    assert_int_equal(t.spec.slots, 3);
    assert_true(t.spec.slot_identity);
    assert_int_equal(t.spec.uid_base, 61000);
    fr_sandbox_text_free(&t);

    text_fails("preset=python;cpu_tme=1s", "sandbox text item 2: unknown key 'cpu_tme'");
    text_fails("preset=pyhton", "bad value 'pyhton' for preset (python, exec or none)");
    text_fails("memory=lots", "bad size 'lots' for memory");
    text_fails("preset=python;cpu_time=soon", "bad duration 'soon' for cpu_time");
    text_fails("preset=python;;nofile", "sandbox text item 2 'nofile': expected key=value");
    text_fails("spec_allow=maybe", "bad value 'maybe' for spec_allow");
    text_fails("fs=everything", "bad value 'everything' for fs (off, libs or system)");
    text_fails("user=nobody", "bad value 'nobody' for user (slot or root)");
    text_fails("slots=0", "bad value '0' for slots");
    text_fails("allow=sockett", "unknown syscall 'sockett' in allow");
    text_fails("write=relative/dir", "path 'relative/dir' in write is not absolute");
    text_fails("output=none", "output cannot be switched off");

    /* and it builds */
    char err[256];
    struct fr_policy *p = NULL;
    const char *more[] = {"/usr/share", NULL};
    assert_int_equal(fr_sandbox_text_build("preset=python;fs=libs;read=/usr/lib", more, &p, err, sizeof err), 0);
    struct fr_policy_info in;
    fr_policy_info(p, &in);
    if (in.landlock) {
        assert_true(fr_policy_may_read(p, "/usr/share/"));
        assert_true(fr_policy_may_read(p, "/usr/lib"));
        assert_false(fr_policy_may_read(p, "/usr/bin/env"));
    }
    fr_policy_free(p);
    assert_int_equal(fr_sandbox_text_build("allow=socket;deny=socket", NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "'socket' is in both allow and deny")); /* the library's own check */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key_lands_in_its_field),
        cmocka_unit_test(test_profile_to_spec),
        cmocka_unit_test(test_none),
        cmocka_unit_test(test_text_only_keys),
        cmocka_unit_test(test_readme_table),
        cmocka_unit_test(test_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
