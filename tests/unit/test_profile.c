/* test_profile.c — INI profiles: every key, units, lists, the built-in
 * defaults against profiles/default.ini, and errors that name file:line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/profile.h"

static void parse_ok(struct fr_profile *p, const char *text)
{
    char err[1024] = "";
    fr_profile_defaults(p);
    if (fr_profile_parse(p, text, "t.ini", err, sizeof err) != 0)
        fail_msg("refused: %s\n--- text:\n%s", err, text);
}

/* The message must be exactly "t.ini:<line>: ..." and contain `needle`. */
static void parse_bad(const char *text, int line, const char *needle)
{
    struct fr_profile p;
    char err[1024] = "", prefix[32];
    fr_profile_defaults(&p);
    assert_int_equal(fr_profile_parse(&p, text, "t.ini", err, sizeof err), -1);
    snprintf(prefix, sizeof prefix, "t.ini:%d: ", line);
    if (strncmp(err, prefix, strlen(prefix)) || !strstr(err, needle))
        fail_msg("message '%s' is not '%s...%s...'\n--- text:\n%s", err, prefix, needle, text);
    fr_profile_free(&p);
}

static void test_every_key(void **state)
{
    (void)state;
    struct fr_profile p;
    parse_ok(&p, "[resources]\n"
                 "cpus = 1.5\n"
                 "workers = 3\n"
                 "memory_per_worker = 1G\n"
                 "rounding = ceil\n"
                 "cgroups = require\n"
                 "[sandbox]\n"
                 "preset = python\n"
                 "cpu_time = 1500ms\n"
                 "wall_time = 2m\n"
                 "memory = 256M\n"
                 "output = 64k\n"
                 "processes = 8\n"
                 "fsize = 1M\n"
                 "nofile = 64\n"
                 "stack = 8M\n"
                 "allow = socket, connect bind\n"
                 "deny = mkdir\n"
                 "keep_caps = cap_net_raw\n"
                 "spec_allow = yes\n"
                 "[runtime]\n"
                 "kind = python\n"
                 "interpreter = /opt/venv/bin/python\n"
                 "prelude = /abs/prelude.py\n"
                 "entry = solve_it\n"
                 "[env]\n"
                 "FOO = bar baz\n"
                 "EMPTY =\n");
    assert_true(p.cpus == 1.5);
    assert_int_equal(p.workers, 3);
    assert_int_equal(p.memory_per_worker, 1ull << 30);
    assert_int_equal(p.rounding, FR_ROUND_CEIL);
    assert_int_equal(p.cgroups, FR_CGROUPS_REQUIRE);
    assert_int_equal(p.preset, FR_PRESET_PYTHON);
    assert_int_equal(p.cpu_time_ms, 1500);
    assert_int_equal(p.wall_time_ms, 120000);
    assert_int_equal(p.memory, 256ull << 20);
    assert_int_equal(p.output, 64ull << 10);
    assert_int_equal(p.processes, 8);
    assert_int_equal(p.fsize, 1ull << 20);
    assert_int_equal(p.nofile, 64);
    assert_int_equal(p.stack, 8ull << 20);
    assert_string_equal(p.allow[0], "socket");
    assert_string_equal(p.allow[1], "connect");
    assert_string_equal(p.allow[2], "bind");
    assert_null(p.allow[3]);
    assert_string_equal(p.deny[0], "mkdir");
    assert_null(p.deny[1]);
    assert_string_equal(p.keep_caps[0], "cap_net_raw");
    assert_true(p.spec_allow);
    assert_int_equal(p.kind, FR_RUNTIME_PYTHON);
    assert_string_equal(p.interpreter, "/opt/venv/bin/python");
    assert_string_equal(p.prelude, "/abs/prelude.py");
    assert_string_equal(p.entry, "solve_it");
    assert_int_equal(p.nenv, 2);
    assert_string_equal(p.env_name[0], "FOO");
    assert_string_equal(p.env_value[0], "bar baz");
    assert_string_equal(p.env_name[1], "EMPTY");
    assert_string_equal(p.env_value[1], "");

    /* the spec the sandbox gets */
    struct fr_policy_spec spec;
    fr_profile_policy_spec(&p, &spec);
    assert_int_equal(spec.preset, FR_PRESET_PYTHON);
    assert_int_equal(spec.cpu_ms, 1500);
    assert_int_equal(spec.as_bytes, 256ull << 20);
    assert_int_equal(spec.nproc, 8);
    assert_int_equal(spec.fsize_bytes, 1ull << 20);
    assert_int_equal(spec.nofile, 64);
    assert_int_equal(spec.stack_bytes, 8ull << 20);
    assert_string_equal(spec.allow[2], "bind");
    assert_string_equal(spec.keep_caps[0], "cap_net_raw");
    assert_true(spec.spec_allow);
    fr_profile_free(&p);
}

static void test_auto_none_and_empty(void **state)
{
    (void)state;
    struct fr_profile p;
    parse_ok(&p, "[resources]\ncpus = 2\nworkers = 2\n[resources]\n");
    assert_int_equal(p.workers, 2);
    char err[256];
    assert_int_equal(fr_profile_parse(&p, "[resources]\ncpus = auto\nworkers = auto\nmemory_per_worker = none\n",
                                      "u.ini", err, sizeof err),
                     0);
    assert_true(p.cpus == 0);
    assert_int_equal(p.workers, 0);
    assert_int_equal(p.memory_per_worker, 0);
    fr_profile_free(&p);

    parse_ok(&p, "; comment\n# another\n\n[sandbox]\ncpu_time = none ; inline\nwall_time = unlimited\n"
                 "memory = 0\nallow =\ndeny = ,  ,\nprocesses = none\n");
    assert_int_equal(p.cpu_time_ms, 0);
    assert_int_equal(p.wall_time_ms, 0);
    assert_int_equal(p.memory, 0);
    assert_int_equal(p.processes, 0);
    assert_null(p.allow[0]);
    assert_null(p.deny[0]);
    fr_profile_free(&p);

    /* The largest values accepted: 365 days and 1 EiB. */
    parse_ok(&p, "[sandbox]\ncpu_time = 8760h\nwall_time = 597h\nmemory = 1048576T\noutput = 1.5K\n");
    assert_true(p.cpu_time_ms == 365ull * 24 * 3600 * 1000);
    assert_true(p.wall_time_ms == 597ull * 3600 * 1000);
    assert_true(p.memory == 1ull << 60);
    assert_int_equal(p.output, 1536);
    fr_profile_free(&p);

    /* bare number = seconds; fractions; CRLF line ends */
    parse_ok(&p, "[sandbox]\r\ncpu_time = 3\r\nwall_time = 0.25\r\n");
    assert_int_equal(p.cpu_time_ms, 3000);
    assert_int_equal(p.wall_time_ms, 250);
    fr_profile_free(&p);
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    parse_bad("[sandbox]\npreset = exec\ncpu_tme = 2s\n", 3, "unknown key 'cpu_tme' in [sandbox]");
    parse_bad("[resources]\n\n\nthreads = 2\n", 4, "unknown key 'threads' in [resources]");
    parse_bad("[runtime]\nkind = exec\nprelud = x.py\n", 3, "unknown key 'prelud' in [runtime]");
    /* an unknown section is reported on its header, even when empty */
    parse_bad("[sandbox]\ncpu_time = 1s\n[sandbx]\n", 3, "unknown section [sandbx]");
    parse_bad("[Sandbox]\ncpu_time = 1s\n", 1, "unknown section [Sandbox]");
    parse_bad("cpu_time = 1s\n", 1, "outside any section");
    parse_bad("[sandbox]\ncpu_time = 2 seconds\n", 2, "bad duration '2 seconds' for cpu_time");
    parse_bad("[sandbox]\nwall_time = -1s\n", 2, "bad duration");
    parse_bad("[sandbox]\nmemory = 512Q\n", 2, "bad size '512Q' for memory");
    parse_bad("[sandbox]\noutput = none\n", 2, "bad size 'none' for output");
    parse_bad("[sandbox]\nprocesses = 1.5\n", 2, "bad number '1.5' for processes");
    /* Sizes are whole bytes: 0.5 is not "0 = no limit", 1.3K is not 1331. */
    parse_bad("[sandbox]\nmemory = 0.5\n", 2, "bad size '0.5' for memory: not a whole number of bytes");
    parse_bad("[resources]\nmemory_per_worker = 1.3K\n", 2, "bad size '1.3K' for memory_per_worker: not a whole");
    parse_bad("[sandbox]\nstack = 1048577T\n", 2, "bad size '1048577T' for stack: larger than the maximum, 1 EiB");
    /* Durations stop at 365 days: nothing can wrap into an instant timeout. */
    parse_bad("[sandbox]\ncpu_time = 18446744073710ms\n", 2, "for cpu_time: longer than the maximum, 365 days");
    parse_bad("[sandbox]\ncpu_time = 99999999999999s\n", 2, "longer than the maximum, 365 days");
    parse_bad("[sandbox]\nwall_time = 8761h\n", 2, "bad duration '8761h' for wall_time: longer");
    /* 0 means none; output and result cannot be switched off, so both refuse it. */
    parse_bad("[sandbox]\noutput = 0\n", 2, "bad size '0' for output: output cannot be switched off");
    parse_bad("[sandbox]\noutput = unlimited\n", 2, "output cannot be switched off");
    parse_bad("[sandbox]\nresult = 0K\n", 2, "bad size '0K' for result: result cannot be switched off");
    parse_bad("[sandbox]\nallow = socket, sockett\n", 2, "unknown syscall 'sockett' in allow");
    parse_bad("[sandbox]\n\ndeny = rm\n", 3, "unknown syscall 'rm' in deny");
    parse_bad("[sandbox]\nkeep_caps = cap_fly\n", 2, "unknown capability 'cap_fly'");
    parse_bad("[sandbox]\nspec_allow = maybe\n", 2, "bad value 'maybe' for spec_allow");
    parse_bad("[resources]\nworkers = 0\n", 2, "bad value '0' for workers");
    parse_bad("[resources]\nworkers = many\n", 2, "bad value 'many' for workers");
    parse_bad("[resources]\ncpus = -2\n", 2, "bad value '-2' for cpus");
    parse_bad("[resources]\ncpus = 8193\n", 2, "bad value '8193' for cpus (auto, or a number above 0 and at most 8192");
    parse_bad("[runtime]\nkind = ruby\n", 2, "bad value 'ruby' for kind");
    parse_bad("[runtime]\nentry = 9lives\n", 2, "bad value '9lives' for entry");
    parse_bad("[runtime]\ninterpreter =\n", 2, "bad value '' for interpreter");
    parse_bad("[env]\n1BAD = x\n", 2, "bad variable name '1BAD'");
    parse_bad("[sandbox]\ncpu_time = 1s\ncpu_time = 2s\n", 3, "duplicate key 'cpu_time' in [sandbox]");
    /* inih's own syntax errors get a line too */
    parse_bad("[sandbox]\ncpu_time 2s\n", 2, "syntax error");
    parse_bad("[sandbox\ncpu_time = 2s\n", 1, "syntax error");
    /* the first problem by line wins, whoever found it */
    parse_bad("[sandbox]\nbogus = 1\nno equals sign\n", 2, "unknown key 'bogus'");
    parse_bad("[sandbox]\nno equals sign\nbogus = 1\n", 2, "syntax error");
    parse_bad("[sandbx]\nbogus = 1\n", 1, "unknown section [sandbx]");
    /* values the parser of the plan/sandbox modules refuse */
    parse_bad("[resources]\nrounding = up\n", 2, "bad value 'up' for rounding");
    parse_bad("[resources]\ncgroups = yes\n", 2, "bad value 'yes' for cgroups (auto, require or off)");
    parse_bad("[sandbox]\npreset = strict\n", 2, "bad value 'strict' for preset");
}

static void test_long_lines(void **state)
{
    (void)state;
    /* a 3000-character value is fine ... */
    char *text = malloc(3100);
    strcpy(text, "[env]\nLONG = ");
    memset(text + strlen(text), 'v', 3000);
    strcpy(text + 13 + 3000, "\n");
    struct fr_profile p;
    parse_ok(&p, text);
    assert_int_equal(strlen(p.env_value[0]), 3000);
    fr_profile_free(&p);
    free(text);
    /* The limit profiles/README.md states: 4094 characters, line end not
     * counted (a '\r' before it is one of them). */
    text = malloc(4200);
    strcpy(text, "[env]\nA = ");
    memset(text + 10, 'w', 4090); /* "A = " + 4090 = 4094 */
    strcpy(text + 4100, "\n");
    parse_ok(&p, text);
    fr_profile_free(&p);
    strcpy(text + 4100, "w\n"); /* 4095 */
    parse_bad(text, 2, "line too long (more than 4094 characters)");
    free(text);
    /* ... a 10000-character line is an error on its own line */
    text = malloc(10100);
    strcpy(text, "[env]\nA = 1\nB = ");
    memset(text + strlen(text), 'x', 10000);
    strcpy(text + 16 + 10000, "\nC = 3\n");
    parse_bad(text, 3, "line too long");
    free(text);
}

static void test_prelude_relative_to_profile(void **state)
{
    (void)state;
    struct fr_profile p;
    char err[256];
    fr_profile_defaults(&p);
    assert_int_equal(
        fr_profile_parse(&p, "[runtime]\nprelude = lib/pre.py\n", "/srv/profiles/arc.ini", err, sizeof err), 0);
    assert_string_equal(p.prelude, "/srv/profiles/lib/pre.py");
    assert_int_equal(fr_profile_parse(&p, "[runtime]\nprelude = /abs.py\n", "/srv/profiles/arc.ini", err, sizeof err),
                     0);
    assert_string_equal(p.prelude, "/abs.py");
    assert_int_equal(fr_profile_parse(&p, "[runtime]\nprelude = x.py\n", "arc.ini", err, sizeof err), 0);
    assert_string_equal(p.prelude, "x.py");
    /* command line: relative to the working directory */
    assert_int_equal(fr_profile_set(&p, "runtime", "prelude", "here.py", err, sizeof err), 0);
    assert_string_equal(p.prelude, "here.py");
    fr_profile_free(&p);
}

static void test_set(void **state)
{
    (void)state;
    struct fr_profile p;
    char err[512];
    fr_profile_defaults(&p);
    assert_int_equal(fr_profile_set(&p, "sandbox", "cpu_time", "250ms", err, sizeof err), 0);
    assert_int_equal(p.cpu_time_ms, 250);
    assert_int_equal(fr_profile_set(&p, "sandbox", "allow", "socket", err, sizeof err), 0);
    assert_int_equal(fr_profile_set(&p, "sandbox", "allow", "bind connect", err, sizeof err), 0);
    assert_string_equal(p.allow[0], "bind"); /* replaced, not appended */
    assert_null(p.allow[2]);
    assert_int_equal(fr_profile_set(&p, "env", "X", "1", err, sizeof err), 0);
    assert_int_equal(fr_profile_set(&p, "env", "X", "2", err, sizeof err), 0);
    assert_int_equal(p.nenv, 1);
    assert_string_equal(p.env_value[0], "2");
    assert_int_equal(fr_profile_set(&p, "sandbox", "cpu_tme", "1s", err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown key 'cpu_tme' in [sandbox]"));
    assert_null(strstr(err, ".ini")); /* no file, no line */
    assert_int_equal(fr_profile_set(&p, "nope", "k", "v", err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown section [nope]"));
    fr_profile_free(&p);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_load_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/fitrun-test-profile-XXXXXX", path[128], err[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/my.ini", dir);
    write_file(path, "[sandbox]\npreset = exec\ncpu_tme = 2s\n");
    struct fr_profile p;
    fr_profile_defaults(&p);
    assert_int_equal(fr_profile_load(&p, path, err, sizeof err), -1);
    char want[256];
    snprintf(want, sizeof want, "%s:3: unknown key 'cpu_tme' in [sandbox]", path);
    if (strncmp(err, want, strlen(want)))
        fail_msg("got '%s', want '%s...'", err, want);
    fr_profile_free(&p);

    /* a relative prelude resolves against the file's directory */
    write_file(path, "[runtime]\nkind = python\nprelude = pre.py\n");
    fr_profile_defaults(&p);
    assert_int_equal(fr_profile_load(&p, path, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s/pre.py", dir);
    assert_string_equal(p.prelude, want);
    assert_string_equal(p.path, path);
    fr_profile_free(&p);

    /* a NUL byte: named with its line, like every other mistake */
    static const char nul[] = "[sandbox]\ncpu_time = 1\0s\n";
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(nul, 1, sizeof nul - 1, f), sizeof nul - 1);
    assert_int_equal(fclose(f), 0);
    fr_profile_defaults(&p);
    assert_int_equal(fr_profile_load(&p, path, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s:2: a NUL byte; not a text file", path);
    assert_string_equal(err, want);
    fr_profile_free(&p);
    unlink(path);

    assert_int_equal(fr_profile_load(&p, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot read profile"));
    assert_non_null(strstr(err, "No such file"));
    rmdir(dir);
}

/* profiles/default.ini says exactly what the built-in defaults are. */
static void test_default_ini_matches_defaults(void **state)
{
    (void)state;
    struct fr_profile builtin, file;
    char err[1024];
    fr_profile_defaults(&builtin);
    fr_profile_defaults(&file);
    assert_int_equal(fr_profile_load(&file, FITRUN_SRC "/profiles/default.ini", err, sizeof err), 0);
    file.path[0] = '\0';
    assert_true(builtin.cpus == file.cpus);
    assert_int_equal(builtin.workers, file.workers);
    assert_int_equal(builtin.memory_per_worker, file.memory_per_worker);
    assert_int_equal(builtin.rounding, file.rounding);
    assert_int_equal(builtin.cgroups, file.cgroups);
    assert_int_equal(builtin.preset, file.preset);
    assert_int_equal(builtin.cpu_time_ms, file.cpu_time_ms);
    assert_int_equal(builtin.wall_time_ms, file.wall_time_ms);
    assert_int_equal(builtin.memory, file.memory);
    assert_int_equal(builtin.output, file.output);
    assert_int_equal(builtin.processes, file.processes);
    assert_int_equal(builtin.spec_allow, file.spec_allow);
    assert_int_equal(builtin.kind, file.kind);
    assert_string_equal(builtin.interpreter, file.interpreter);
    assert_string_equal(builtin.entry, file.entry);
    assert_null(file.allow[0]);
    assert_int_equal(builtin.result, file.result);
    assert_int_equal(builtin.require_landlock, file.require_landlock);
    assert_int_equal(builtin.user, file.user);
    assert_int_equal(builtin.uid_base, file.uid_base);
    assert_false(file.preset_set);
    assert_null(file.read_paths[0]);
    assert_null(file.write_paths[0]);
    assert_null(file.pass_env[0]);
    assert_int_equal(file.nenv, 0);
    /* and the documented defaults */
    assert_int_equal(builtin.cpu_time_ms, 2000);
    assert_int_equal(builtin.wall_time_ms, 10000);
    assert_int_equal(builtin.output, 1u << 20);
    fr_profile_free(&file);
    fr_profile_free(&builtin);
}

/* A runtime's default preset is its own; an explicit preset wins in any order. */
static void test_preset_follows_runtime(void **state)
{
    (void)state;
    struct fr_profile p;
    char err[512];
    fr_profile_defaults(&p);
    assert_int_equal(p.preset, FR_PRESET_EXEC);
    assert_int_equal(fr_profile_parse(&p, "[runtime]\nkind = python\n", "a.ini", err, sizeof err), 0);
    assert_int_equal(p.preset, FR_PRESET_PYTHON);
    fr_profile_free(&p);

    fr_profile_defaults(&p);
    assert_int_equal(
        fr_profile_parse(&p, "[sandbox]\npreset = none\n[runtime]\nkind = python\n", "b.ini", err, sizeof err), 0);
    assert_int_equal(p.preset, FR_PRESET_NONE);
    fr_profile_free(&p);

    fr_profile_defaults(&p);
    assert_int_equal(fr_profile_set(&p, "runtime", "kind", "python", err, sizeof err), 0);
    assert_int_equal(fr_profile_set(&p, "sandbox", "preset", "exec", err, sizeof err), 0);
    assert_int_equal(p.preset, FR_PRESET_EXEC);
    fr_profile_free(&p);
}

/* The least-privilege keys: path lists, pass_env patterns, identity, result. */
static void test_least_privilege_keys(void **state)
{
    (void)state;
    struct fr_profile p;
    char err[512];
    fr_profile_defaults(&p);
    assert_int_equal(p.user, FR_USER_SLOT);
    assert_int_equal(p.uid_base, 60000);
    assert_int_equal(fr_profile_parse(&p,
                                      "[sandbox]\nread = /opt/my data, /srv/x\nwrite = /tmp/out\n"
                                      "pass_env = HF_TOKEN, MY_*\nuser = root\nuid_base = 70000\n"
                                      "require_landlock = yes\nresult = 64k\n",
                                      "c.ini", err, sizeof err),
                     0);
    assert_string_equal(p.read_paths[0], "/opt/my data");
    assert_string_equal(p.read_paths[1], "/srv/x");
    assert_null(p.read_paths[2]);
    assert_string_equal(p.write_paths[0], "/tmp/out");
    assert_string_equal(p.pass_env[0], "HF_TOKEN");
    assert_string_equal(p.pass_env[1], "MY_*");
    assert_int_equal(p.user, FR_USER_ROOT);
    assert_int_equal(p.uid_base, 70000);
    assert_true(p.require_landlock);
    assert_int_equal(p.result, 64 << 10);
    fr_profile_free(&p);

    static const struct {
        const char *text, *want;
    } bad[] = {
        {"[sandbox]\nread = relative/dir\n", "d.ini:2: path 'relative/dir' in read is not absolute"},
        {"[sandbox]\npass_env = 9X\n", "d.ini:2: bad name '9X' in pass_env"},
        {"[sandbox]\npass_env = *\n", "d.ini:2: bad name '*' in pass_env"},
        {"[sandbox]\nuser = nobody\n", "d.ini:2: bad value 'nobody' for user (slot or root)"},
        {"[sandbox]\nuid_base = 0\n", "d.ini:2: bad value '0' for uid_base"},
        {"[sandbox]\nuid_base = 4294967295\n", "d.ini:2: bad value '4294967295' for uid_base"},
        {"[sandbox]\nresult = none\n", "d.ini:2: bad size 'none' for result"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fr_profile_defaults(&p);
        assert_int_equal(fr_profile_parse(&p, bad[i].text, "d.ini", err, sizeof err), -1);
        if (strncmp(err, bad[i].want, strlen(bad[i].want)))
            fail_msg("'%s': got '%s', want '%s...'", bad[i].text, err, bad[i].want);
        fr_profile_free(&p);
    }
}

/* The one mapping from [resources] to detection and plan options that
 * detect, run and the wrapper share, and where cpus came from. */
static void test_plan_and_detect_opts(void **state)
{
    (void)state;
    struct fr_profile p;
    struct fr_plan_opts po;
    struct fr_detect_opts dopt;
    char err[512];

    /* Built-in defaults: 512M per worker, floor, no overrides. */
    fr_profile_defaults(&p);
    fr_profile_plan_opts(&p, &po);
    assert_int_equal(po.memory_per_worker, 512ull << 20);
    assert_int_equal(po.rounding, FR_ROUND_FLOOR);
    assert_int_equal(po.workers_override, 0);
    char *no_env[] = {NULL};
    fr_profile_detect_opts(&p, no_env, &dopt);
    assert_null(dopt.sysroot);
    assert_ptr_equal(dopt.envp, no_env);
    assert_true(dopt.cpus_override == 0 && dopt.cpus_profile == 0);
    assert_null(dopt.cpus_env);
    assert_null(dopt.cpus_outer);
    /* FITRUN_CPUS told apart: the user's is an override, an outer fitrun's a bound. */
    char *user_env[] = {"FITRUN_CPUS=3", NULL};
    char *outer_env[] = {"FITRUN_CPUS=3", "FITRUN_EXPORTED=FITRUN_CPUS=3", NULL};
    fr_profile_detect_opts(&p, user_env, &dopt);
    assert_string_equal(dopt.cpus_env, "3");
    assert_null(dopt.cpus_outer);
    fr_profile_detect_opts(&p, outer_env, &dopt);
    assert_null(dopt.cpus_env);
    assert_string_equal(dopt.cpus_outer, "3");
    assert_string_equal(p.cpus_origin, "");

    /* A file's cpus: ranked as the profile's (FITRUN_CPUS beats it), with file:line. */
    parse_ok(&p, "[resources]\nworkers = 3\n\ncpus = 1.5\nrounding = ceil\nmemory_per_worker = none\n");
    fr_profile_plan_opts(&p, &po);
    assert_int_equal(po.workers_override, 3);
    assert_int_equal(po.rounding, FR_ROUND_CEIL);
    assert_int_equal(po.memory_per_worker, 0);
    fr_profile_detect_opts(&p, no_env, &dopt);
    assert_true(dopt.cpus_override == 0);
    assert_true(dopt.cpus_profile == 1.5);
    assert_string_equal(dopt.cpus_profile_source, "profile t.ini:4");

    /* fr_profile_set (--cpus of every command) makes it the command line's;
     * the file's stays a (losing) candidate. */
    assert_int_equal(fr_profile_set(&p, "resources", "cpus", "2", err, sizeof err), 0);
    assert_true(p.cpus_cli);
    fr_profile_detect_opts(&p, no_env, &dopt);
    assert_true(dopt.cpus_override == 2);
    assert_string_equal(dopt.cpus_override_source, "--cpus");
    assert_true(dopt.cpus_profile == 1.5);
    assert_string_equal(dopt.cpus_profile_source, "profile t.ini:4");
    /* a second --cpus replaces the first; the file's is still the file's */
    assert_int_equal(fr_profile_set(&p, "resources", "cpus", "6", err, sizeof err), 0);
    fr_profile_detect_opts(&p, no_env, &dopt);
    assert_true(dopt.cpus_override == 6 && dopt.cpus_profile == 1.5);
    /* and auto clears the command line's */
    assert_int_equal(fr_profile_set(&p, "resources", "cpus", "auto", err, sizeof err), 0);
    assert_false(p.cpus_cli);
    assert_string_equal(p.cpus_origin, "");
    fr_profile_detect_opts(&p, no_env, &dopt);
    assert_true(dopt.cpus_override == 0);
    fr_profile_free(&p);
}

/* Threads one job may run: 1 under the python preset unless the profile
 * gives thread creation back; no cap from the profile otherwise. The plan
 * options carry it, so detect, run and --explain agree. */
/* One CPU-count rule for the profile key and every command's --cpus. */
static void test_parse_cpus(void **state)
{
    (void)state;
    double d = 0;
    assert_int_equal(fr_parse_cpus("1.5", &d), 0);
    assert_true(d == 1.5);
    assert_int_equal(fr_parse_cpus("8192", &d), 0);
    const char *bad[] = {"0", "-1", "8192.5", "99999", "nan", "inf", "x", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (fr_parse_cpus(bad[i], &d) != -1)
            fail_msg("cpus '%s' accepted", bad[i]);
}

static void test_job_threads(void **state)
{
    (void)state;
    struct fr_profile p;
    const char *why = NULL;
    struct fr_plan_opts po;
    parse_ok(&p, "[runtime]\nkind = python\n");
    assert_int_equal(fr_profile_job_threads(&p, &why), 1);
    assert_non_null(strstr(why, "python preset refuses thread creation"));
    fr_profile_plan_opts(&p, &po);
    assert_int_equal(po.job_threads_max, 1);
    assert_ptr_equal(po.job_threads_why, why);
    fr_profile_free(&p);
    parse_ok(&p, "[runtime]\nkind = python\n[sandbox]\nallow = clone, clone3\n");
    assert_int_equal(fr_profile_job_threads(&p, NULL), 1); /* processes = 1: RLIMIT_NPROC counts threads */
    fr_profile_free(&p);
    parse_ok(&p, "[runtime]\nkind = python\n[sandbox]\nallow = clone3\nprocesses = none\n");
    assert_int_equal(fr_profile_job_threads(&p, NULL), 0);
    fr_profile_free(&p);
    parse_ok(&p, "[runtime]\nkind = python\n[sandbox]\npreset = none\n");
    assert_int_equal(fr_profile_job_threads(&p, NULL), 0);
    fr_profile_free(&p);
    parse_ok(&p, "[sandbox]\nprocesses = 4\n");
    assert_int_equal(fr_profile_job_threads(&p, NULL), 0); /* exec: the preset and processes decide */
    fr_profile_free(&p);
}

/* isolation = reuse replaces a process whose resident size passed
 * max_memory: by default half the prediction's memory limit, so a limit
 * always leaves the next prediction room; set, it is taken as it is. */
static void test_reuse_max_memory(void **state)
{
    (void)state;
    struct fr_profile p;
    parse_ok(&p, "[runtime]\nkind = python\nisolation = reuse\n");
    assert_int_equal(fr_profile_max_memory(&p), 256ull << 20); /* memory 512M */
    fr_profile_free(&p);
    parse_ok(&p, "[runtime]\nkind = python\nisolation = reuse\n[sandbox]\nmemory = 200M\n");
    assert_int_equal(fr_profile_max_memory(&p), 100ull << 20);
    fr_profile_free(&p);
    parse_ok(&p, "[runtime]\nkind = python\nisolation = reuse\n[sandbox]\nmemory = none\n");
    assert_int_equal(fr_profile_max_memory(&p), 512ull << 20);
    fr_profile_free(&p);
    parse_ok(&p, "[sandbox]\nmemory = 1M\n[runtime]\nkind = python\n");
    assert_int_equal(fr_profile_max_memory(&p), 1u << 20); /* never below the key's own minimum */
    fr_profile_free(&p);
    parse_ok(&p, "[runtime]\nkind = python\nmax_memory = 900M\n[sandbox]\nmemory = 200M\n");
    assert_int_equal(fr_profile_max_memory(&p), 900ull << 20);
    fr_profile_free(&p);
}

/* Where a key got its value: the file's line, the command line, or the
 * default (the file, or the built-in profile). */
static void test_where(void **state)
{
    (void)state;
    struct fr_profile p;
    char err[256], w[PATH_MAX + 64];
    parse_ok(&p, "[sandbox]\ncpu_time = 1s\n\nallow = socket\n");
    snprintf(p.path, sizeof p.path, "/etc/x.ini");
    fr_profile_where(&p, "sandbox", "allow", w, sizeof w);
    assert_string_equal(w, "/etc/x.ini:4");
    fr_profile_where(&p, "sandbox", "cpu_time", w, sizeof w);
    assert_string_equal(w, "/etc/x.ini:2");
    fr_profile_where(&p, "sandbox", "deny", w, sizeof w);
    assert_string_equal(w, "/etc/x.ini");
    assert_int_equal(fr_profile_set(&p, "sandbox", "allow", "connect", err, sizeof err), 0);
    fr_profile_where(&p, "sandbox", "allow", w, sizeof w);
    assert_string_equal(w, "the command line");
    fr_profile_free(&p);
    fr_profile_defaults(&p);
    fr_profile_where(&p, "runtime", "isolation", w, sizeof w);
    assert_string_equal(w, "the built-in profile");
    fr_profile_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_key),
        cmocka_unit_test(test_auto_none_and_empty),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_long_lines),
        cmocka_unit_test(test_prelude_relative_to_profile),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_load_file),
        cmocka_unit_test(test_default_ini_matches_defaults),
        cmocka_unit_test(test_preset_follows_runtime),
        cmocka_unit_test(test_least_privilege_keys),
        cmocka_unit_test(test_plan_and_detect_opts),
        cmocka_unit_test(test_job_threads),
        cmocka_unit_test(test_parse_cpus),
        cmocka_unit_test(test_reuse_max_memory),
        cmocka_unit_test(test_where),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
